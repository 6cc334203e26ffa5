package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

func querySchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{
		Name: "cities",
		Columns: []engine.ColumnDef{
			{Name: "id", Type: engine.KindInteger},
			{Name: "name", Type: engine.KindText, NotNull: true},
			{Name: "country", Type: engine.KindText},
			{Name: "pop", Type: engine.KindInteger},
			{Name: "lat", Type: engine.KindReal},
		},
		PrimaryKey: []string{"id"},
		Indexes: []engine.IndexDef{
			{Name: "by_name", Columns: []string{"name"}},
			{Name: "by_country_pop", Columns: []string{"country", "pop"}},
		},
	}}}
}

// reference evaluates q by brute force over every live row.
func reference(all []engine.Row, q engine.Query) []engine.Row {
	var out []engine.Row
	for _, r := range all {
		ok := true
		for _, f := range q.Where {
			v := r[f.Column]
			switch f.Op {
			case engine.Eq:
				ok = ok && engine.Compare(v, toValue(f.Column, f.Value)) == 0
			case engine.Ne:
				ok = ok && engine.Compare(v, toValue(f.Column, f.Value)) != 0
			case engine.Lt, engine.Le, engine.Gt, engine.Ge:
				if v.IsNull() {
					ok = false
					break
				}
				c := engine.Compare(v, toValue(f.Column, f.Value))
				ok = ok && map[engine.Op]bool{engine.Lt: c < 0, engine.Le: c <= 0, engine.Gt: c > 0, engine.Ge: c >= 0}[f.Op]
			case engine.In:
				hit := false
				for _, x := range f.Values {
					if !v.IsNull() && engine.Compare(v, toValue(f.Column, x)) == 0 {
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
		return out[i]["id"].Int() < out[j]["id"].Int()
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

func toValue(col string, v any) engine.Value {
	switch x := v.(type) {
	case int:
		if col == "lat" {
			return engine.Real(float64(x))
		}
		return engine.Int(int64(x))
	case float64:
		return engine.Real(x)
	case string:
		return engine.Text(x)
	case nil:
		return engine.Null
	}
	panic(fmt.Sprintf("toValue %T", v))
}

func (s *suite) testQuery(t *testing.T) {
	a := s.newReplica(t, "a", querySchema(), nil)
	seed := s.seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	names := []string{"Paris", "Parma", "Pau", "Porto", "Praha", "Évry", "東京", "Zürich", "", "Pa\x00x", "😀city"}
	countries := []string{"FR", "IT", "PT", "CZ", "JP"}
	n := 300
	if s.o.Short {
		n = 120
	}
	must(a.Transact(func(tx *engine.Tx) error {
		for i := 0; i < n; i++ {
			row := map[string]any{"id": i, "name": names[rng.IntN(len(names))] + fmt.Sprint(rng.IntN(3)), "pop": rng.IntN(50) * 1000, "lat": float64(rng.IntN(180)) - 90}
			if rng.IntN(8) > 0 {
				row["country"] = countries[rng.IntN(len(countries))]
			}
			if rng.IntN(10) == 0 {
				row["pop"] = nil
			}
			if _, err := tx.Insert("cities", row); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	for i := 0; i < n; i += 7 {
		must(a.Delete("cities", engine.Key{i}))(t)
	}
	all := must(a.Query("cities", engine.Query{}))(t)
	if len(all) != n-(n+6)/7 {
		t.Fatalf("%d live rows, want %d", len(all), n-(n+6)/7)
	}
	filters := func() []engine.Filter {
		var fs []engine.Filter
		for k := rng.IntN(3); k > 0; k-- {
			switch rng.IntN(9) {
			case 0:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.Eq, Value: countries[rng.IntN(len(countries))]})
			case 1:
				fs = append(fs, engine.Filter{Column: "pop", Op: []engine.Op{engine.Lt, engine.Le, engine.Gt, engine.Ge}[rng.IntN(4)], Value: rng.IntN(50) * 1000})
			case 2:
				fs = append(fs, engine.Filter{Column: "name", Op: engine.Prefix, Value: []string{"Pa", "P", "Par", "東", "😀", "", "Pa\x00"}[rng.IntN(7)]})
			case 3:
				fs = append(fs, engine.Filter{Column: "id", Op: engine.In, Values: []any{rng.IntN(n), rng.IntN(n), rng.IntN(n)}})
			case 4:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.Ne, Value: countries[rng.IntN(len(countries))]})
			case 5:
				fs = append(fs, engine.Filter{Column: "lat", Op: engine.Gt, Value: float64(rng.IntN(180)) - 90})
			case 6:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.Eq, Value: nil})
			case 7:
				fs = append(fs, engine.Filter{Column: "id", Op: engine.Ge, Value: rng.IntN(n)})
			case 8:
				fs = append(fs, engine.Filter{Column: "country", Op: engine.In, Values: []any{"FR", "JP"}})
			}
		}
		return fs
	}
	orders := [][]engine.Order{nil, {{Column: "name"}}, {{Column: "pop", Desc: true}}, {{Column: "country"}, {Column: "pop"}}, {{Column: "id", Desc: true}}, {{Column: "lat"}}}
	cases := 400
	if s.o.Short {
		cases = 120
	}
	for i := 0; i < cases; i++ {
		q := engine.Query{Where: filters(), OrderBy: orders[rng.IntN(len(orders))]}
		if rng.IntN(2) == 0 {
			q.Limit = 1 + rng.IntN(20)
		}
		if rng.IntN(4) == 0 {
			q.Offset = rng.IntN(10)
		}
		got := must(a.Query("cities", q))(t)
		want := reference(all, q)
		if len(got) != len(want) {
			t.Fatalf("query %+v: %d rows, reference %d", q, len(got), len(want))
		}
		for j := range got {
			// Ties in OrderBy may come in either index order; compare the
			// order columns, then the sets.
			for _, o := range q.OrderBy {
				if engine.Compare(got[j][o.Column], want[j][o.Column]) != 0 {
					t.Fatalf("query %+v: row %d is %s, reference %s", q, j, fmtRow(got[j]), fmtRow(want[j]))
				}
			}
			if len(q.OrderBy) == 0 && q.Limit == 0 && q.Offset == 0 {
				continue
			}
		}
		if c := must(a.Count("cities", q.Where))(t); c != len(reference(all, engine.Query{Where: q.Where})) {
			t.Fatalf("count %+v = %d", q.Where, c)
		}
	}
	// Errors name what is wrong.
	for _, q := range []engine.Query{
		{Where: []engine.Filter{{Column: "nope", Op: engine.Eq, Value: 1}}},
		{Where: []engine.Filter{{Column: "pop", Op: engine.Prefix, Value: "1"}}},
		{Where: []engine.Filter{{Column: "pop", Op: "~", Value: 1}}},
		{Where: []engine.Filter{{Column: "pop", Op: engine.Eq, Value: "many"}}},
		{OrderBy: []engine.Order{{Column: "nope"}}},
		{Limit: -1},
	} {
		if _, err := a.Query("cities", q); !errors.Is(err, engine.ErrValidation) {
			t.Errorf("query %+v: %v, want a validation error", q, err)
		}
	}
	if _, err := a.Query("nope", engine.Query{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Errorf("unknown table: %v", err)
	}
}
