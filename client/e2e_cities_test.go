//go:build !js

package client_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/model"
)

// citiesSchema splits the cities in two tables (west and east of
// Greenwich), so that a snapshot has a finished table to skip on resume.
func citiesSchema() *model.Schema {
	cols := []model.ColumnDef{
		{Name: "id", Type: model.KindText},
		{Name: "name", Type: model.KindText},
		{Name: "lat", Type: model.KindReal},
		{Name: "lng", Type: model.KindReal},
		{Name: "country", Type: model.KindText},
		{Name: "admin1", Type: model.KindText},
		{Name: "admin2", Type: model.KindText},
	}
	return &model.Schema{Tables: []model.TableDef{{Name: "cities_w", Columns: cols}, {Name: "cities_e", Columns: cols}}}
}

func cityTable(c cities.City) string {
	if c.Lng < 0 {
		return "cities_w"
	}
	return "cities_e"
}

// TestE2ECitiesSnapshot: a relay holding the 171,075 GeoNames cities
// (pushed there by a seeding replica) bootstraps a fresh replica from a
// snapshot, which then catches up with deltas; a second fresh replica's
// transfer, interrupted in the second table, resumes without the finished
// table and ends identical.
func TestE2ECitiesSnapshot(t *testing.T) {
	n := 0 // all
	if raceEnabled {
		n = 20000 // the race detector makes the whole set take minutes
		t.Logf("race detector on: using the first %d cities", n)
	}
	all, err := cities.Load(n)
	if errors.Is(err, cities.ErrAbsent) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 && len(all) != 171075 {
		t.Fatalf("loaded %d cities, want 171,075", len(all))
	}
	checkNoLeaks(t)
	start := time.Now()
	lap := func(what string) {
		t.Logf("%-40s %v", what, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	rl := startRelay(t, t.TempDir(), nil)
	seed := newReplica(t, "seed", citiesSchema(), engine.Options{}, client.Options{PushLimit: 20000})
	west := 0
	for i := 0; i < len(all); i += 1000 {
		_, err := seed.db.Transact(func(tx *engine.Tx) error {
			for j, c := range all[i:min(i+1000, len(all))] {
				if cityTable(c) == "cities_w" {
					west++
				}
				if _, err := tx.Insert(cityTable(c), map[string]any{
					"id": fmt.Sprintf("c%06d", i+j), "name": c.Name, "lat": c.Lat, "lng": c.Lng,
					"country": c.Country, "admin1": c.Admin1, "admin2": c.Admin2,
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	lap("seed: insert locally")
	seed.connect(t, rl.url, "geo", "")
	waitWithin(t, 5*time.Minute, "the seed pushed everything", func() bool {
		time.Sleep(100 * time.Millisecond)
		acked := 0
		for _, ev := range seed.ev.list() {
			if ev.Type == client.PushAcked {
				acked += ev.Result.Transactions
			}
		}
		return acked >= (len(all)+999)/1000+1 // the transactions, and the schema migrations
	})
	lap("seed: push to the relay")

	// A fresh replica bootstraps from the snapshot, then takes deltas.
	fresh := newReplica(t, "fresh", citiesSchema(), engine.Options{}, client.Options{})
	fresh.connect(t, rl.url, "geo", "")
	waitState(t, fresh, client.Synced)
	lap("fresh: snapshot bootstrap")
	var last client.Event
	for _, ev := range fresh.ev.list() {
		if ev.Type == client.SnapshotProgressed {
			last = ev
		}
	}
	if !last.Progress.Done || last.Progress.RowsApplied != int64(len(all)) || last.Progress.TablesDone != 2 {
		t.Fatalf("last snapshot progress %+v, want all %d rows of 2 tables", last.Progress, len(all))
	}
	if nw, ne := count(t, fresh.db, "cities_w"), count(t, fresh.db, "cities_e"); nw != west || nw+ne != len(all) {
		t.Fatalf("fresh holds %d+%d cities, want %d+%d", nw, ne, west, len(all)-west)
	}
	for i := range 10 {
		if _, err := seed.db.Update(cityTable(all[i]), engine.Key{fmt.Sprintf("c%06d", i)}, map[string]any{"name": fmt.Sprintf("renamed %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := seed.db.Insert("cities_e", map[string]any{"id": "new", "name": "Nova"}); err != nil {
		t.Fatal(err)
	}
	converged(t, seed, fresh)
	lap("fresh: deltas")

	// Another fresh replica, interrupted inside the second table.
	second := "cities_e"
	firstRows := west
	resumed := newReplica(t, "resumed", citiesSchema(), engine.Options{}, client.Options{})
	var once sync.Once
	interrupted := make(chan struct{})
	resumed.c.Subscribe(func(ev client.Event) {
		p := ev.Progress
		if ev.Type == client.SnapshotProgressed && p.Table == second && p.RowsApplied > int64(firstRows)+int64(len(all)-firstRows)/2 {
			once.Do(func() {
				resumed.c.Disconnect()
				close(interrupted)
			})
		}
	})
	resumed.connect(t, rl.url, "geo", "")
	select {
	case <-interrupted:
	case <-time.After(e2eWait):
		t.Fatal("the transfer was not interrupted")
	}
	lap("resumed: first half")
	cp, err := resumed.db.SnapshotCheckpoint()
	if err != nil || cp == nil {
		t.Fatalf("no checkpoint after the interruption (%v)", err)
	}
	if len(cp.CompletedTables) != 1 || cp.CompletedTables[0] != "cities_w" {
		t.Fatalf("checkpoint completed %v, want [cities_w]", cp.CompletedTables)
	}
	before := len(resumed.ev.list())
	resumed.connect(t, rl.url, "geo", "")
	waitState(t, resumed, client.Synced)
	lap("resumed: second half")
	var resumedTables []string
	var resumedRows int64
	for _, ev := range resumed.ev.list()[before:] {
		if ev.Type == client.SnapshotProgressed && ev.Progress.TablesTotal > 0 {
			resumedRows = ev.Progress.RowsTotal
			if ev.Progress.Table != "" && (len(resumedTables) == 0 || resumedTables[len(resumedTables)-1] != ev.Progress.Table) {
				resumedTables = append(resumedTables, ev.Progress.Table)
			}
			if ev.Progress.TablesTotal != 1 {
				t.Fatalf("the resumed stream announces %d tables, want only the unfinished one", ev.Progress.TablesTotal)
			}
		}
	}
	if len(resumedTables) != 1 || resumedTables[0] != second || resumedRows != int64(len(all)-west+1) {
		t.Fatalf("the resumed stream carried tables %v and %d rows; want only %s (%d rows)", resumedTables, resumedRows, second, len(all)-west+1)
	}
	converged(t, seed, fresh) // fresh took the renames as changes, with before-images
	convergedCRDT(t, seed, resumed)
	lap("all converged")
}
