package enginetest

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

func (s *suite) testChangesSince(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	var hlcs []engine.HLC
	for i := 0; i < 30; i++ {
		a.clock.Advance(1)
		cs := must(a.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("stops", map[string]any{"trip": "t", "pos": i, "name": "s"})
			return err
		}))(t)
		hlcs = append(hlcs, cs.HLC)
	}
	all := must(a.ChangesSince(engine.HLC{}, 1_000_000, engine.ChangesFilter{}))(t)
	// The schema's own DDL-only transaction comes first.
	if len(all) != 31 || len(all[0].Migrations) != 2 || len(all[0].Changes) != 0 {
		t.Fatalf("got %d sets (first: %d migrations, %d changes), want 31 with the DDL first", len(all), len(all[0].Migrations), len(all[0].Changes))
	}
	for i, cs := range all[1:] {
		if cs.HLC != hlcs[i] || len(cs.Changes) != 3 {
			t.Fatalf("set %d: hlc %s with %d changes, want %s with 3", i, cs.HLC, len(cs.Changes), hlcs[i])
		}
	}
	// Paging: exclusive lower bound, bounded at transaction granularity.
	page := must(a.ChangesSince(hlcs[4], 7, engine.ChangesFilter{}))(t)
	if len(page) != 3 || page[0].HLC != hlcs[5] {
		t.Fatalf("page after set 4 with limit 7: %d sets starting %v, want 3 starting %s", len(page), page, hlcs[5])
	}
	// A transaction larger than the limit comes whole.
	big := must(a.Transact(func(tx *engine.Tx) error {
		for i := 100; i < 150; i++ {
			if _, err := tx.Insert("stops", map[string]any{"trip": "u", "pos": i}); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	one := must(a.ChangesSince(hlcs[29], 10, engine.ChangesFilter{}))(t)
	if len(one) != 1 || len(one[0].Changes) != 150 || one[0].HLC != big.HLC {
		t.Fatalf("oversized transaction: %d sets, %d changes", len(one), len(one[0].Changes))
	}
	// Superseded facts leave the log: overwrite a cell, the old
	// transaction loses that fact; delete a row, its cells go.
	must(a.Update("stops", engine.Key{"t", 0}, map[string]any{"name": "renamed"}))(t)
	must(a.Delete("stops", engine.Key{"t", 1}))(t)
	all = must(a.ChangesSince(engine.HLC{}, 1_000_000, engine.ChangesFilter{}))(t)
	if len(all[1].Changes) != 2 {
		t.Fatalf("first data transaction after its name was overwritten has %d facts, want 2", len(all[1].Changes))
	}
	if len(all[2].Changes) != 0 && all[2].HLC == hlcs[1] {
		t.Fatalf("transaction of a deleted row still returned: %+v", all[2])
	}
	for _, cs := range all {
		if cs.HLC == hlcs[1] {
			t.Fatalf("transaction whose only row was deleted still in the log")
		}
	}
	// Filters.
	if own := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t); len(own) == 0 {
		t.Fatal("OnlyLocal returned nothing")
	}
	if ex := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{ExcludeSite: a.SiteID()}))(t); len(ex) != 0 {
		t.Fatalf("ExcludeSite of the only origin returned %d sets", len(ex))
	}
}

func (s *suite) testHooks(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	if own := must(a.HasOwnFacts())(t); own {
		t.Fatal("a replica with only its schema reports own facts")
	}
	must(a.Insert("trips", map[string]any{"title": "x"}))(t)
	if own := must(a.HasOwnFacts())(t); !own {
		t.Fatal("HasOwnFacts false after a local insert")
	}
	sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	// State and Extra commit with the batch, or not at all.
	boom := errors.New("boom")
	_, err := b.Apply(sets, engine.ApplyOptions{State: map[string][]byte{"cursor": []byte("7")},
		Extra: func(tx kv.Tx, res engine.ApplyResult) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Extra error: %v", err)
	}
	if v := must(b.State("cursor"))(t); v != nil {
		t.Fatal("state written by an aborted batch")
	}
	if n := must(b.Count("trips", nil))(t); n != 0 {
		t.Fatal("rows written by an aborted batch")
	}
	var seen engine.ApplyResult
	must(b.Apply(sets, engine.ApplyOptions{State: map[string][]byte{"cursor": []byte("7")},
		Extra: func(tx kv.Tx, res engine.ApplyResult) error { seen = res; return nil }}))(t)
	if string(must(b.State("cursor"))(t)) != "7" || seen.Applied == 0 {
		t.Fatalf("state/extra after a good batch: %+v", seen)
	}
	if own := must(b.HasOwnFacts())(t); own {
		t.Fatal("remote facts counted as own")
	}
}
