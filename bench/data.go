//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/replica-sync/replica/internal/cities"
)

// schemaJSON is the schema of every replica in the benchmark: the browser
// pages' Replica.open and the native replica that seeds the relay. pings is
// W8's table, indexed on n as an app would index the column its live query
// orders by (B subscribes to orderBy -n, limit 1: without the index every
// refresh reads and sorts the whole table, 6 ms at 500 rows and growing).
const schemaJSON = `{"tables": {
	"cities": {"columns": {"id": "text", "name": {"type": "text", "notNull": true}, "lat": "real", "lng": "real",
		"country": "text", "admin1": "text", "admin2": "text"}, "indexes": {"by_name": ["name"]}},
	"pings": {"columns": {"id": "text", "n": "integer", "at": "real"}, "indexes": {"by_n": ["n"]}}
}}`

// row is one city as every system stores it.
type row struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Lat     float64 `json:"lat"`
	Lng     float64 `json:"lng"`
	Country string  `json:"country"`
	Admin1  string  `json:"admin1"`
	Admin2  string  `json:"admin2"`
}

func (r row) values() map[string]any {
	return map[string]any{"id": r.ID, "name": r.Name, "lat": r.Lat, "lng": r.Lng, "country": r.Country, "admin1": r.Admin1, "admin2": r.Admin2}
}

// dataset is the rows and the W4 prefixes, with their JSON as served.
type dataset struct {
	rows         []row
	prefixes     []string
	rowsJSON     []byte
	prefixesJSON []byte
}

// loadData reads every city (cities.ErrAbsent when the file is missing).
func loadData() (*dataset, error) {
	cs, err := cities.Load(0)
	if err != nil {
		return nil, err
	}
	d := &dataset{rows: make([]row, len(cs))}
	for i, c := range cs {
		d.rows[i] = row{ID: fmt.Sprintf("c%06d", i), Name: c.Name, Lat: c.Lat, Lng: c.Lng, Country: c.Country, Admin1: c.Admin1, Admin2: c.Admin2}
	}
	d.prefixes = prefixes(d.rows, 100)
	if d.rowsJSON, err = json.Marshal(d.rows); err != nil {
		return nil, err
	}
	if d.prefixesJSON, err = json.Marshal(d.prefixes); err != nil {
		return nil, err
	}
	return d, nil
}

// prefixes returns n different name prefixes for W4: the first three
// characters of the names of rows spread evenly over the data set (a
// deterministic choice; common and rare prefixes alike).
func prefixes(rows []row, n int) []string {
	seen := map[string]bool{}
	var out []string
	for k := 0; len(out) < n && k < len(rows); k++ {
		name := rows[(k*7919+13)%len(rows)].Name
		if utf8.RuneCountInString(name) < 3 {
			continue
		}
		i := 0
		for range 3 {
			_, size := utf8.DecodeRuneInString(name[i:])
			i += size
		}
		p := name[:i]
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
