package engine

import (
	"os"
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
// alone lacks the row, for good.
//
// Not fixed yet; the test fails: run it with REPLICA_KNOWN_FAILURES=1.
func TestPruneSupersededUnsentCell(t *testing.T) {
	if os.Getenv("REPLICA_KNOWN_FAILURES") == "" {
		t.Skip("not fixed (2026-12-02): the writer alone loses its own write superseded locally before a pruning; " +
			"a fix is for the relay to send a site its own ChangeSets that arrived after a mark above the mark's siteHlc, " +
			"for the client to apply after pruning as the relay did. REPLICA_KNOWN_FAILURES=1 runs it")
	}
	clock := &manualClock{ms: replaceT0}
	relay := openReplace(t, memkv.New(Buckets...), clock)
	dev := openReplace(t, memkv.New(Buckets...), clock)
	other := openReplace(t, memkv.New(Buckets...), clock)
	own := func(from *Engine, since HLC) []ChangeSet {
		t.Helper()
		sets, err := from.ChangesSince(since, 0, ChangesFilter{OnlyLocal: true})
		mustDo(t, err)
		return sets
	}
	apply := func(dst *Engine, sets []ChangeSet) {
		t.Helper()
		_, err := dst.ApplyChanges(sets)
		mustDo(t, err)
	}
	_, err := relay.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	ins := own(relay, HLC{})
	apply(dev, ins)
	apply(other, ins)
	// The relay's deletion; then dev's write (its push in flight) and
	// other's later write of the same column, neither having seen the
	// deletion.
	_, err = relay.Delete("items", Key{1})
	mustDo(t, err)
	del := own(relay, ins[len(ins)-1].HLC)
	clock.ms++
	_, err = dev.Update("items", Key{1}, map[string]any{"name": "mine"})
	mustDo(t, err)
	inFlight := own(dev, HLC{})
	clock.ms++
	_, err = other.Update("items", Key{1}, map[string]any{"name": "theirs"})
	mustDo(t, err)
	theirs := own(other, HLC{})
	clock.ms++
	// The relay's log: the deletion, other's write, then the mark (dev's
	// write not yet arrived: its siteHlc is below it), then dev's write.
	apply(relay, theirs)
	cutoff := clock.ms + 1
	_, err = relay.PruneTombstones(cutoff)
	mustDo(t, err)
	apply(relay, inFlight)
	// dev pulls the deletion and other's write, then prunes at the mark
	// keeping its own facts above the mark's siteHlc (none held).
	apply(dev, del)
	apply(dev, theirs)
	_, err = dev.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
	mustDo(t, err)
	// other, pulling the same log, ends as the relay does.
	apply(other, del)
	_, err = other.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
	mustDo(t, err)
	apply(other, inFlight)
	if _, err := relay.Get("items", Key{1}); err != nil {
		t.Fatalf("the relay lacks row 1 (%v): the test does not reach the case", err)
	}
	if _, err := other.Get("items", Key{1}); err != nil {
		t.Fatalf("other lacks row 1 (%v): the test does not reach the case", err)
	}
	if got, want := crdtState(t, dev), crdtState(t, relay); got != want {
		t.Fatalf("dev and the relay differ for good after the pruning (dev's write is never pulled back):\ndev:%s\nrelay:%s", got, want)
	}
}
