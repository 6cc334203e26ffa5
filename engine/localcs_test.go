//go:build !js

package engine

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestLocalChangeSetOrder runs random local transactions (inserts, updates
// of rows written earlier in the same transaction, deletes, upserts) and
// checks the ChangeSet each returns (built by placeFacts, without a sort)
// is the one ChangesSince reads back for it: facts in HLC order, the
// superseded ones left out.
func TestLocalChangeSetOrder(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	e, err := Open(memkv.New(Buckets...), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}, AllowResurrection: true})
	if err != nil {
		t.Fatal(err)
	}
	next := 1
	for round := 0; round < 60; round++ {
		var live []int
		cs, err := e.Transact(func(tx *Tx) error {
			for op := 0; op < 1+rng.IntN(40); op++ {
				switch k := rng.IntN(10); {
				case k < 5 || len(live) == 0:
					id := next
					next++
					if _, err := tx.Insert("cities", map[string]any{"id": id, "name": "n", "lat": rng.Float64(), "country": "X"}); err != nil {
						return err
					}
					live = append(live, id)
				case k < 8:
					id := live[rng.IntN(len(live))]
					if _, err := tx.Update("cities", Key{id}, map[string]any{"name": "m", "lng": rng.Float64()}); err != nil {
						return err
					}
				case k < 9:
					i := rng.IntN(len(live))
					if _, err := tx.Delete("cities", Key{live[i]}); err != nil {
						return err
					}
					live = append(live[:i], live[i+1:]...)
				default:
					id := live[rng.IntN(len(live))]
					if _, err := tx.Upsert("cities", map[string]any{"id": id, "name": "u", "admin1": "a"}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if cs == nil {
			continue
		}
		for i := 1; i < len(cs.Changes); i++ {
			if !cs.Changes[i-1].HLC.Less(cs.Changes[i].HLC) {
				t.Fatalf("round %d: changes %d and %d out of order: %s, %s", round, i-1, i, cs.Changes[i-1].HLC, cs.Changes[i].HLC)
			}
		}
		all, err := e.ChangesSince(HLC{}, 1<<30, ChangesFilter{OnlyLocal: true})
		if err != nil {
			t.Fatal(err)
		}
		var got *ChangeSet
		for i := range all {
			if all[i].TransactionID == cs.TransactionID {
				got = &all[i]
			}
		}
		if got == nil {
			t.Fatalf("round %d: ChangesSince lacks transaction %s", round, cs.TransactionID)
		}
		if !reflect.DeepEqual(got.Changes, cs.Changes) || got.HLC != cs.HLC {
			t.Fatalf("round %d: Transact returned\n%+v\nChangesSince reads\n%+v", round, cs.Changes, got.Changes)
		}
	}
}

// TestInsertStampsDeclarationOrder checks that an insert numbers its facts
// in the table's column declaration order (cells are stored by name), in
// a transaction and staged.
func TestInsertStampsDeclarationOrder(t *testing.T) {
	e, err := Open(memkv.New(Buckets...), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range citySchema().Tables[0].Columns {
		want = append(want, c.Name)
	}
	check := func(how string, cs *ChangeSet) {
		t.Helper()
		var got []string
		for i, c := range cs.Changes {
			if c.HLC.OpSeq != uint32(i) {
				t.Fatalf("%s: fact %d has opSeq %d", how, i, c.HLC.OpSeq)
			}
			got = append(got, c.Column)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: facts stamped in the order %v, want %v", how, got, want)
		}
	}
	row := map[string]any{"id": 1, "name": "a", "lat": 1.5, "lng": 2.5, "country": "X", "admin1": "1", "admin2": "2"}
	cs, err := e.Transact(func(tx *Tx) error { _, err := tx.Insert("cities", row); return err })
	if err != nil {
		t.Fatal(err)
	}
	check("Transact", cs)
	s := e.Stage()
	row["id"] = 2
	if _, err := s.Insert("cities", row); err != nil {
		t.Fatal(err)
	}
	if cs, err = s.Commit(); err != nil {
		t.Fatal(err)
	}
	check("Staged", cs)
}

// TestOmitLocalChanges runs the same random transactions on two replicas,
// one with OmitLocalChanges, and checks the lean ChangeSets and events
// equal the full ones without their Changes, and both replicas hold the
// same change log.
func TestOmitLocalChanges(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	open := func(omit bool) (*Engine, *[]Event) {
		e, err := Open(memkv.New(Buckets...), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8},
			Rand: rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}), OmitLocalChanges: omit})
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		e.Subscribe(func(ev Event) {
			if ev.Type == LocalChange {
				evs = append(evs, ev)
			}
		})
		return e, &evs
	}
	full, fullEvs := open(false)
	lean, leanEvs := open(true)
	for _, e := range []*Engine{full, lean} {
		rng := rand.New(rand.NewPCG(seed, 4))
		next := 1
		var live []int
		for round := 0; round < 40; round++ {
			s := e.Stage()
			for op := 0; op < 1+rng.IntN(20); op++ {
				if len(live) == 0 || rng.IntN(3) > 0 {
					if _, err := s.Insert("cities", map[string]any{"id": next, "name": "n", "lat": rng.Float64()}); err != nil {
						t.Fatal(err)
					}
					live = append(live, next)
					next++
				} else if rng.IntN(2) == 0 {
					if _, err := s.Update("cities", Key{live[rng.IntN(len(live))]}, map[string]any{"name": "m"}); err != nil {
						t.Fatal(err)
					}
				} else {
					i := rng.IntN(len(live))
					if _, err := s.Delete("cities", Key{live[i]}); err != nil {
						t.Fatal(err)
					}
					live = append(live[:i], live[i+1:]...)
				}
			}
			cs, err := s.Commit()
			if err != nil {
				t.Fatal(err)
			}
			if e == lean && cs != nil && cs.Changes != nil {
				t.Fatalf("round %d: OmitLocalChanges returned %d changes", round, len(cs.Changes))
			}
		}
	}
	if len(*fullEvs) != len(*leanEvs) || len(*fullEvs) < 20 {
		t.Fatalf("%d events with changes, %d without", len(*fullEvs), len(*leanEvs))
	}
	for i, f := range *fullEvs {
		l := (*leanEvs)[i]
		want := *f.ChangeSet
		want.Changes = nil
		if !reflect.DeepEqual(l.Tables, f.Tables) || !reflect.DeepEqual(*l.ChangeSet, want) {
			t.Fatalf("event %d: lean %+v %v, full without changes %+v %v", i, *l.ChangeSet, l.Tables, want, f.Tables)
		}
	}
	a, err := full.ChangesSince(HLC{}, 1<<30, ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := lean.ChangesSince(HLC{}, 1<<30, ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) || len(a) < 20 {
		t.Fatalf("change logs of %d and %d transactions", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Changes, b[i].Changes) || a[i].HLC != b[i].HLC {
			t.Fatalf("transaction %d differs in the change log", i)
		}
	}
}
