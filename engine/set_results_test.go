package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// TestApplySetResults: ApplyOptions.SetResults splits the result by
// ChangeSet, summing to it: a peer's new ChangeSets count applied, one the
// replica holds already skipped, its own echo skipped and not as a
// transaction.
func TestApplySetResults(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	a := openReplace(t, memkv.New(Buckets...), clock)
	b := openReplace(t, memkv.New(Buckets...), clock)
	_, err := a.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	_, err = b.Insert("items", map[string]any{"id": 2, "name": "n2", "a": "a2"})
	mustDo(t, err)
	clock.ms++
	fromA, err := a.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	fromB, err := b.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	relay := openReplace(t, memkv.New(Buckets...), clock)
	_, err = relay.Apply(fromA, ApplyOptions{})
	mustDo(t, err)
	own, err := relay.Transact(func(tx *Tx) error {
		_, err := tx.Insert("items", map[string]any{"id": 3, "name": "n3", "a": "a3"})
		return err
	})
	mustDo(t, err)
	sets := append(append(append([]ChangeSet{}, fromA...), fromB...), *own)
	var per []ApplyResult
	res, err := relay.Apply(sets, ApplyOptions{SetResults: &per})
	mustDo(t, err)
	if len(per) != len(sets) {
		t.Fatalf("%d set results for %d ChangeSets", len(per), len(sets))
	}
	var sum ApplyResult
	for i, r := range per {
		n := len(sets[i].Changes) + len(sets[i].Migrations)
		switch {
		case i < len(fromA) || i == len(sets)-1: // held, own echo
			if r.Applied != 0 || r.Skipped != n {
				t.Errorf("ChangeSet %d (held or own): %+v, want %d skipped", i, r, n)
			}
		default:
			if r.Applied != n || r.Skipped != 0 || r.Transactions != 1 {
				t.Errorf("ChangeSet %d (new): %+v, want %d applied", i, r, n)
			}
		}
		sum.Applied += r.Applied
		sum.Skipped += r.Skipped
		sum.Conflicts += r.Conflicts
		sum.Held += r.Held
		sum.Transactions += r.Transactions
	}
	if sum != res {
		t.Errorf("set results sum to %+v, the result is %+v", sum, res)
	}
	if per[len(per)-1].Transactions != 0 {
		t.Errorf("own echo counted as a transaction: %+v", per[len(per)-1])
	}
}

// TestApplySetResultsKeep: with Keep, SetResults still has an entry per
// ChangeSet of the batch, by its index, the ones left out zero.
func TestApplySetResultsKeep(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	a := openReplace(t, memkv.New(Buckets...), clock)
	for i := 1; i <= 3; i++ {
		_, err := a.Insert("items", map[string]any{"id": i, "name": "n", "a": "a"})
		mustDo(t, err)
		clock.ms++
	}
	sets, err := a.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	if len(sets) < 2 {
		t.Fatalf("%d ChangeSets, want at least 2", len(sets))
	}
	relay := openReplace(t, memkv.New(Buckets...), clock)
	var per []ApplyResult
	keep := make([]bool, len(sets))
	keep[len(sets)-1] = true
	res, err := relay.Apply(sets, ApplyOptions{SetResults: &per, Keep: func(kv.Tx) ([]bool, error) { return keep, nil }})
	mustDo(t, err)
	if len(per) != len(sets) {
		t.Fatalf("%d set results for %d ChangeSets", len(per), len(sets))
	}
	for i, r := range per {
		switch {
		case i < len(sets)-1 && r != (ApplyResult{}):
			t.Errorf("ChangeSet %d (left out): %+v, want zero", i, r)
		case i == len(sets)-1 && r != res:
			t.Errorf("ChangeSet %d (the one kept): %+v, want the result %+v", i, r, res)
		}
	}
	if res.Transactions != 1 || res.Applied == 0 {
		t.Errorf("result %+v, want the kept ChangeSet's only", res)
	}
}
