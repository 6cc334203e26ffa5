package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestPruneSupersededUnsentCell (review): KeepUnsent keeps this replica's
// own cells above Sent in a delete-wins row whose tombstone goes, so that
// the device ends as the relay does once the relay applies them after its
// pruning. But the cells kept are those the row still holds: an own cell
// a later cell of another site superseded (last writer wins) before the
// pruning is gone from the row, while the relay, which pruned before the
// own write arrived and had dropped the other site's cell with the row,
// revives the row from the own write alone. Every replica pulling the own
// write does the same; the writer never pulls its own write back, so it
// alone lacked the row, for good. Now the relay sends the writer its own
// ChangeSets above the mark's siteHlc that it had pushed when it applied
// the mark (wire's "Own ChangeSets after a mark"), and the writer merges
// them in their place (ApplyOptions.MergeOwn), as every replica does:
// without MergeOwn, Apply skips them as the writer's own echo and the test
// fails.
func TestPruneSupersededUnsentCell(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	relay := openReplace(t, memkv.New(Buckets...), clock)
	dev := openReplace(t, memkv.New(Buckets...), clock)
	other := openReplace(t, memkv.New(Buckets...), clock)
	_, err := relay.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	ins := ownSets(t, relay, HLC{})
	applySets(t, dev, ins)
	applySets(t, other, ins)
	// The relay's deletion; then dev's write (its push in flight) and
	// other's later write of the same column, neither having seen the
	// deletion.
	_, err = relay.Delete("items", Key{1})
	mustDo(t, err)
	del := ownSets(t, relay, ins[len(ins)-1].HLC)
	clock.ms++
	_, err = dev.Update("items", Key{1}, map[string]any{"name": "mine"})
	mustDo(t, err)
	inFlight := ownSets(t, dev, HLC{})
	clock.ms++
	_, err = other.Update("items", Key{1}, map[string]any{"name": "theirs"})
	mustDo(t, err)
	theirs := ownSets(t, other, HLC{})
	clock.ms++
	// The relay's log: the deletion, other's write, then the mark (dev's
	// write not yet arrived: its siteHlc is below it), then dev's write.
	applySets(t, relay, theirs)
	cutoff := clock.ms + 1
	_, err = relay.PruneTombstones(cutoff)
	mustDo(t, err)
	applySets(t, relay, inFlight)
	// dev pulls the deletion and other's write, then prunes at the mark
	// keeping its own facts above the mark's siteHlc (none held).
	applySets(t, dev, del)
	applySets(t, dev, theirs)
	_, err = dev.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
	mustDo(t, err)
	// other, pulling the same log, ends as the relay does.
	applySets(t, other, del)
	_, err = other.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
	mustDo(t, err)
	applySets(t, other, inFlight)
	// dev gets its write back after the mark, in its place in the log.
	_, err = dev.Apply(inFlight, ApplyOptions{MergeOwn: true})
	mustDo(t, err)
	if _, err := relay.Get("items", Key{1}); err != nil {
		t.Fatalf("the relay lacks row 1 (%v): the test does not reach the case", err)
	}
	if _, err := other.Get("items", Key{1}); err != nil {
		t.Fatalf("other lacks row 1 (%v): the test does not reach the case", err)
	}
	if got, want := crdtState(t, dev), crdtState(t, relay); got != want {
		t.Fatalf("dev and the relay differ for good after the pruning (dev did not merge its write back):\ndev:%s\nrelay:%s", got, want)
	}
}

// TestPruneKilledUnsentCell is TestPruneSupersededUnsentCell's other
// form: dev's own write, pushed before the mark and arriving after it, is
// gone from dev's row because another site's later deletion killed it
// (no later cell at all). The relay pruned that deletion at the mark, so
// the write revives the row there and on every replica pulling the log;
// dev, which never pulled its own write back, lacked the row; now it pulls
// it back as in TestPruneSupersededUnsentCell.
func TestPruneKilledUnsentCell(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	relay := openReplace(t, memkv.New(Buckets...), clock)
	dev := openReplace(t, memkv.New(Buckets...), clock)
	_, err := relay.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	ins := ownSets(t, relay, HLC{})
	applySets(t, dev, ins)
	// dev's write (its push in flight), then the relay's deletion, later.
	_, err = dev.Update("items", Key{1}, map[string]any{"name": "mine"})
	mustDo(t, err)
	inFlight := ownSets(t, dev, HLC{})
	clock.ms++
	_, err = relay.Delete("items", Key{1})
	mustDo(t, err)
	del := ownSets(t, relay, ins[len(ins)-1].HLC)
	clock.ms++
	cutoff := clock.ms
	_, err = relay.PruneTombstones(cutoff)
	mustDo(t, err)
	applySets(t, relay, inFlight)
	applySets(t, dev, del)
	_, err = dev.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
	mustDo(t, err)
	_, err = dev.Apply(inFlight, ApplyOptions{MergeOwn: true})
	mustDo(t, err)
	if _, err := relay.Get("items", Key{1}); err != nil {
		t.Fatalf("the relay lacks row 1 (%v): the test does not reach the case", err)
	}
	if got, want := crdtState(t, dev), crdtState(t, relay); got != want {
		t.Fatalf("dev and the relay differ for good after the pruning (dev did not merge its write back):\ndev:%s\nrelay:%s", got, want)
	}
}

// ownSets returns from's own ChangeSets above since.
func ownSets(t *testing.T, from *Engine, since HLC) []ChangeSet {
	t.Helper()
	sets, err := from.ChangesSince(since, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	return sets
}

// applySets applies sets to dst.
func applySets(t *testing.T, dst *Engine, sets []ChangeSet) {
	t.Helper()
	_, err := dst.ApplyChanges(sets)
	mustDo(t, err)
}
