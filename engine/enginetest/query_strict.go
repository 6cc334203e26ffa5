package enginetest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

func strictSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{
		Name: "places",
		Columns: []engine.ColumnDef{
			{Name: "k1", Type: engine.KindInteger},
			{Name: "k2", Type: engine.KindText},
			{Name: "name", Type: engine.KindText},
			{Name: "country", Type: engine.KindText},
			{Name: "pop", Type: engine.KindInteger},
			{Name: "lat", Type: engine.KindReal},
			{Name: "open", Type: engine.KindBoolean},
			{Name: "seen", Type: engine.KindTimestamp},
		},
		PrimaryKey: []string{"k1", "k2"},
		Indexes: []engine.IndexDef{
			{Name: "by_name", Columns: []string{"name"}},
			{Name: "by_country_pop", Columns: []string{"country", "pop"}},
			{Name: "by_open_seen_lat", Columns: []string{"open", "seen", "lat"}},
			{Name: "by_pop", Columns: []string{"pop"}},
		},
	}}}
}

// strictReference evaluates q by brute force: filters with Compare, then
// the documented order — OrderBy, then the primary key (ascending) — then
// offset and limit.
func strictReference(all []engine.Row, q engine.Query, pk []string) []engine.Row {
	var out []engine.Row
	for _, r := range all {
		ok := true
		for _, f := range q.Where {
			v := r[f.Column]
			val := func(x any) engine.Value {
				switch y := x.(type) {
				case nil:
					return engine.Null
				case engine.Value:
					return y
				case int:
					if f.Column == "lat" {
						return engine.Real(float64(y))
					}
					return engine.Int(int64(y))
				case float64:
					return engine.Real(y)
				case string:
					return engine.Text(y)
				case bool:
					return engine.Bool(y)
				}
				panic(fmt.Sprintf("%T", x))
			}
			switch f.Op {
			case engine.Eq:
				ok = ok && engine.Compare(v, val(f.Value)) == 0
			case engine.Ne:
				ok = ok && engine.Compare(v, val(f.Value)) != 0
			case engine.Lt, engine.Le, engine.Gt, engine.Ge:
				if v.IsNull() {
					ok = false
					break
				}
				c := engine.Compare(v, val(f.Value))
				ok = ok && map[engine.Op]bool{engine.Lt: c < 0, engine.Le: c <= 0, engine.Gt: c > 0, engine.Ge: c >= 0}[f.Op]
			case engine.In:
				hit := false
				for _, x := range f.Values {
					if !v.IsNull() && engine.Compare(v, val(x)) == 0 {
						hit = true
					}
				}
				ok = ok && hit
			case engine.Prefix:
				ok = ok && v.Kind() == engine.KindText && strings.HasPrefix(v.Text(), f.Value.(string))
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		for _, o := range q.OrderBy {
			if c := engine.Compare(out[i][o.Column], out[j][o.Column]); c != 0 {
				return (c < 0) != o.Desc
			}
		}
		for _, n := range pk {
			if c := engine.Compare(out[i][n], out[j][n]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	if q.Offset >= len(out) {
		return nil
	}
	out = out[q.Offset:]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// testQueryStrict compares queries with a brute-force reference row by
// row: with an OrderBy, rows tied on it come in primary-key order whatever
// access path the planner picks (forward or reverse, index or key), so a
// limit cuts the same rows. It covers every operator, nulls, In with
// duplicates and nulls, prefixes with 0x00, 0xFF and non-BMP characters,
// composite keys and indexes, and queries inside a transaction that see its
// own uncommitted writes.
func (s *suite) testQueryStrict(t *testing.T) {
	a := s.newReplica(t, "a", strictSchema(), nil)
	seed := s.seed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"Pa", "Paris", "Pa\x00", "Pa\x00b", "Pa\u00ff", "Pa\U0001F600", "\U0001F600", "", "b", "Zürich", "東京"}
	countries := []string{"FR", "IT", "PT"}
	row := func(i int) map[string]any {
		m := map[string]any{"k1": i % 7, "k2": fmt.Sprintf("k%03d", i), "name": names[rng.IntN(len(names))], "pop": rng.IntN(4) * 10}
		if rng.IntN(5) > 0 {
			m["country"] = countries[rng.IntN(len(countries))]
		}
		if rng.IntN(6) == 0 {
			m["pop"] = nil
		}
		if rng.IntN(4) > 0 {
			m["lat"] = float64(rng.IntN(5)) - 2
		}
		if rng.IntN(4) > 0 {
			m["open"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) > 0 {
			m["seen"] = int64(T0 + rng.IntN(3))
		}
		return m
	}
	n := 150
	if s.o.Short {
		n = 80
	}
	must(a.Transact(func(tx *engine.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := tx.Insert("places", row(i)); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	for i := 0; i < n; i += 5 {
		must(a.Delete("places", engine.Key{i % 7, fmt.Sprintf("k%03d", i)}))(t)
	}
	pk := []string{"k1", "k2"}
	filters := func() []engine.Filter {
		var fs []engine.Filter
		for k := rng.IntN(3); k > 0; k-- {
			switch rng.IntN(12) {
			case 0:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.Eq, Value: []any{"FR", "IT", nil}[rng.IntN(3)]})
			case 1:
				fs = append(fs, engine.Filter{Column: "pop", Op: []engine.Op{engine.Lt, engine.Le, engine.Gt, engine.Ge, engine.Ne}[rng.IntN(5)], Value: rng.IntN(4) * 10})
			case 2:
				fs = append(fs, engine.Filter{Column: "name", Op: engine.Prefix, Value: []string{"Pa", "Pa\x00", "Pa\xff", "\xff", "\U0001F600", "", "Pa\u00ff", "Z"}[rng.IntN(8)]})
			case 3:
				fs = append(fs, engine.Filter{Column: "k1", Op: engine.In, Values: []any{rng.IntN(7), rng.IntN(7), rng.IntN(7)}})
			case 4:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.In, Values: []any{"FR", "FR", nil, "PT"}})
			case 5:
				fs = append(fs, engine.Filter{Column: "lat", Op: []engine.Op{engine.Gt, engine.Le}[rng.IntN(2)], Value: float64(rng.IntN(5)) - 2})
			case 6:
				fs = append(fs, engine.Filter{Column: "open", Op: engine.Eq, Value: []any{true, false, nil}[rng.IntN(3)]})
			case 7:
				fs = append(fs, engine.Filter{Column: "seen", Op: []engine.Op{engine.Ge, engine.Lt, engine.Eq}[rng.IntN(3)], Value: engine.TimestampMillis(T0 + int64(rng.IntN(3)))})
			case 8:
				fs = append(fs, engine.Filter{Column: "k1", Op: engine.Eq, Value: rng.IntN(7)})
			case 9:
				fs = append(fs, engine.Filter{Column: "k2", Op: engine.Ge, Value: fmt.Sprintf("k%03d", rng.IntN(n))})
			case 10:
				fs = append(fs, engine.Filter{Column: "pop", Op: engine.Eq, Value: nil})
			case 11:
				fs = append(fs, engine.Filter{Column: "name", Op: engine.In, Values: []any{names[rng.IntN(len(names))], names[rng.IntN(len(names))]}})
			}
		}
		return fs
	}
	orders := [][]engine.Order{nil,
		{{Column: "name"}}, {{Column: "name", Desc: true}},
		{{Column: "pop"}}, {{Column: "pop", Desc: true}},
		{{Column: "country"}}, {{Column: "country", Desc: true}},
		{{Column: "country"}, {Column: "pop"}}, {{Column: "country", Desc: true}, {Column: "pop", Desc: true}},
		{{Column: "k1"}}, {{Column: "k1", Desc: true}}, {{Column: "k1", Desc: true}, {Column: "k2", Desc: true}},
		{{Column: "open"}, {Column: "seen", Desc: true}}, {{Column: "open", Desc: true}, {Column: "seen", Desc: true}},
		{{Column: "lat"}},
	}
	check := func(what string, got, want []engine.Row, q engine.Query) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s %+v: %d rows, reference %d", what, q, len(got), len(want))
		}
		if len(q.OrderBy) == 0 && (q.Limit > 0 || q.Offset > 0) {
			return // the access path's order: any subset of that size
		}
		if len(q.OrderBy) == 0 {
			sort.Slice(got, func(i, j int) bool { return strictLess(got[i], got[j], pk) })
		}
		for j := range got {
			if !rowsEqual(got[j], want[j]) {
				t.Fatalf("%s %+v: row %d is %s, reference %s", what, q, j, fmtRow(got[j]), fmtRow(want[j]))
			}
		}
	}
	cases := 600
	if s.o.Short {
		cases = 150
	}
	all := must(a.Query("places", engine.Query{}))(t)
	for i := 0; i < cases; i++ {
		q := engine.Query{Where: filters(), OrderBy: orders[rng.IntN(len(orders))]}
		if rng.IntN(2) == 0 {
			q.Limit = 1 + rng.IntN(12)
		}
		if rng.IntN(3) == 0 {
			q.Offset = rng.IntN(8)
		}
		check("query", must(a.Query("places", q))(t), strictReference(all, q, pk), q)
	}
	// Inside a transaction, queries see its own writes (inserts, updates
	// that move index entries, deletes, key moves), before commit.
	for round := 0; round < 5; round++ {
		_, err := a.Transact(func(tx *engine.Tx) error {
			for j := 0; j < 10; j++ {
				i := rng.IntN(n + 40)
				key := engine.Key{i % 7, fmt.Sprintf("k%03d", i)}
				switch rng.IntN(4) {
				case 0:
					tx.Insert("places", row(i))
				case 1:
					tx.Update("places", key, map[string]any{"pop": rng.IntN(4) * 10, "name": names[rng.IntN(len(names))]})
				case 2:
					tx.Delete("places", key)
				case 3:
					tx.Update("places", key, map[string]any{"k2": fmt.Sprintf("m%03d", rng.IntN(n))})
				}
			}
			view, err := tx.Query("places", engine.Query{})
			if err != nil {
				return err
			}
			for c := 0; c < 40; c++ {
				q := engine.Query{Where: filters(), OrderBy: orders[rng.IntN(len(orders))]}
				if rng.IntN(2) == 0 {
					q.Limit = 1 + rng.IntN(12)
				}
				got, err := tx.Query("places", q)
				if err != nil {
					return err
				}
				check("tx query", got, strictReference(view, q, pk), q)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		all = must(a.Query("places", engine.Query{}))(t)
	}
}

func strictLess(a, b engine.Row, pk []string) bool {
	for _, n := range pk {
		if c := engine.Compare(a[n], b[n]); c != 0 {
			return c < 0
		}
	}
	return false
}
