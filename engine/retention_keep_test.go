package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestPruneKeepsUnsentCells (the simulator's seed 72): under delete-wins,
// pruning a row's tombstone drops the row's cells with it, but
// KeepUnsent keeps this replica's own cells above Sent. The relay pruned
// without them (it did not hold them yet) and applies them afterwards to
// a row it no longer holds; dev must end as the relay does. Before, dev
// dropped its unsent write with the row and the relay kept it.
func TestPruneKeepsUnsentCells(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	relay := openReplace(t, memkv.New(Buckets...), clock)
	dev := openReplace(t, memkv.New(Buckets...), clock)
	push := func(dst, from *Engine, since HLC) HLC {
		t.Helper()
		sets, err := from.ChangesSince(since, 0, ChangesFilter{OnlyLocal: true})
		mustDo(t, err)
		_, err = dst.ApplyChanges(sets)
		mustDo(t, err)
		if len(sets) == 0 {
			return since
		}
		return sets[len(sets)-1].HLC
	}
	_, err := relay.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	push(dev, relay, HLC{})
	// dev's write the relay acknowledged (below Sent), then the relay's
	// deletion, then dev's unsent write, above the deletion: dead under
	// delete-wins.
	_, err = dev.Update("items", Key{1}, map[string]any{"b": "acked"})
	mustDo(t, err)
	clock.ms++
	sent := push(relay, dev, HLC{})
	_, err = relay.Delete("items", Key{1})
	mustDo(t, err)
	clock.ms++
	_, err = dev.Update("items", Key{1}, map[string]any{"name": "mine"})
	mustDo(t, err)
	clock.ms++
	push(dev, relay, HLC{})
	if _, err := dev.Get("items", Key{1}); err == nil {
		t.Fatal("row 1 is alive on dev before the pruning: the test does not reach the case")
	}

	cutoff := clock.ms + 1
	_, err = relay.PruneTombstones(cutoff)
	mustDo(t, err)
	res, err := dev.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: sent})
	mustDo(t, err)
	if res.Tombstones != 1 || res.Rows != 0 {
		t.Errorf("dev pruned %+v, want 1 tombstone and no row gone (its unsent cell stays)", res)
	}
	push(relay, dev, sent) // the unsent write reaches the relay after its pruning

	if got, want := crdtState(t, dev), crdtState(t, relay); got != want {
		t.Fatalf("dev and the relay differ after the pruning:\ndev:%s\nrelay:%s", got, want)
	}
	row, err := dev.Get("items", Key{1})
	if err != nil {
		t.Fatalf("row 1 on dev: %v (its unsent write was dropped with the row)", err)
	}
	if row["name"].Text() != "mine" || !row["a"].IsNull() || !row["b"].IsNull() {
		t.Errorf("row 1 on dev %v, want name mine alone", row)
	}
	rows, err := dev.Query("items", Query{Where: []Filter{{Column: "name", Op: Eq, Value: "mine"}}})
	mustDo(t, err)
	if len(rows) != 1 {
		t.Errorf("the by_name index finds %d rows named mine, want 1", len(rows))
	}
}
