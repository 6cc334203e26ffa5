package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// BenchmarkInspectCities: InspectRows and InspectCount over the 171,075
// GeoNames cities (the demo's table) in memory: the first page, a search
// that fills its page early, searches that read the whole table (one that
// only text can match, whose rows are skipped without decoding, and one
// of digits, which decodes every row), and a count.
//
//	go test ./engine -run '^$' -bench BenchmarkInspectCities -benchtime 5x
func BenchmarkInspectCities(b *testing.B) {
	all, err := cities.Load(0)
	if errors.Is(err, cities.ErrAbsent) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	sch := &model.Schema{Tables: []model.TableDef{{Name: "cities", Columns: []model.ColumnDef{
		{Name: "country", Type: model.KindText}, {Name: "admin1", Type: model.KindText}, {Name: "name", Type: model.KindText},
		{Name: "lat", Type: model.KindReal}, {Name: "lng", Type: model.KindReal}, {Name: "admin2", Type: model.KindText},
		{Name: "search", Type: model.KindText}}, PrimaryKey: []string{"country", "admin1", "name", "lat", "lng"}}}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < len(all); i += 5000 {
		st := db.Stage()
		for _, c := range all[i:min(i+5000, len(all))] {
			if _, err := st.Insert("cities", map[string]any{"country": c.Country, "admin1": c.Admin1, "name": c.Name, "lat": c.Lat, "lng": c.Lng, "admin2": c.Admin2, "search": strings.ToLower(c.Name)}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		o    engine.InspectOptions
	}{
		{"first-page", engine.InspectOptions{}},
		{"search-zürich", engine.InspectOptions{Search: "zürich"}},
		{"search-nomatch-text", engine.InspectOptions{Search: "zzzzqq"}},
		{"search-nomatch-digits", engine.InspectOptions{Search: "99999999"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				p, err := db.InspectRows("cities", bc.o)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(p.Scanned), "rows-read/op")
			}
		})
	}
	b.Run("count", func(b *testing.B) {
		for range b.N {
			if n, _, err := db.InspectCount("cities"); err != nil || n != len(all) {
				b.Fatal(n, err)
			}
		}
	})
}
