package engine

import (
	"strings"
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// TestPruneShadowTombstone (the simulator's seed 271): dev deleted a
// delete-wins row, offline, without having seen an older deletion of
// another site; then it pulled that deletion (which lost to its own,
// newer one) and another site's later, dead, cells, and applied a horizon
// mark above the older deletion before its own reached the relay. The
// relay pruned the row by the older deletion, dead cells included, and
// then applied dev's deletion to a row it no longer held: a bare
// tombstone. dev's row carried its own deletion instead, so it pruned
// nothing and kept the dead cells: CRDT states that differed, though no
// replica showed a row. dev now keeps the superseded deletion as the
// row's shadow and prunes by it as the relay does.
//
// The variants check the shadow decides only what the relay's row
// decided: no older deletion at all (the cells were live on the relay
// until dev's deletion came), and two older deletions, the newer one not
// past the mark.
func TestPruneShadowTombstone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deletes lists the older deletions, by whom (1: the relay,
		// 2: other), each at the next millisecond.
		deletes []int
		// cutoffAfter is how many of them the mark's bound is after.
		cutoffAfter int
		wantBare    bool
		// snapshot: dev gets the deletions and other's write in a
		// snapshot of the relay (merged) instead of as changes.
		snapshot bool
	}{
		{"pruned", []int{1}, 1, true, false},
		{"pruned_snapshot", []int{1}, 1, true, true},
		{"none", nil, 0, false, false},
		{"newest_not_past_mark", []int{1, 2}, 1, false, false},
		{"both_past_mark", []int{1, 2}, 2, true, false},
		{"both_past_mark_snapshot", []int{1, 2}, 2, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			third := openReplace(t, memkv.New(Buckets...), clock)
			applySets(t, third, ins)
			// The older deletions: of the relay, and of a third site.
			var dels []ChangeSet
			var cutoff uint64
			for i, who := range tc.deletes {
				e := relay
				if who == 2 {
					e = third
				}
				_, err := e.Delete("items", Key{1})
				mustDo(t, err)
				sets := ownSets(t, e, ins[len(ins)-1].HLC)
				dels = append(dels, sets[len(sets)-1])
				clock.ms++
				if i+1 == tc.cutoffAfter {
					cutoff = clock.ms
					clock.ms++
				}
			}
			// dev's deletion (it saw none of them), unsent; then
			// other's later write, made before other saw any deletion.
			_, err = dev.Delete("items", Key{1})
			mustDo(t, err)
			mine := ownSets(t, dev, ins[len(ins)-1].HLC)
			clock.ms++
			_, err = other.Update("items", Key{1}, map[string]any{"b": "theirs", "c": "theirs"})
			mustDo(t, err)
			theirs := ownSets(t, other, ins[len(ins)-1].HLC)
			clock.ms++
			// The relay's log: the older deletions, other's write, the
			// mark (dev's deletion not arrived: its siteHlc is zero),
			// then dev's deletion.
			applySets(t, relay, dels)
			applySets(t, relay, theirs)
			if tc.snapshot {
				applyAll(t, dev, relay, SnapshotOptions{}, ApplySnapshotOptions{})
			}
			if cutoff != 0 {
				_, err = relay.PruneTombstones(cutoff)
				mustDo(t, err)
			}
			applySets(t, relay, mine)
			// dev pulls the log to the mark and prunes there, keeping its
			// own facts the relay did not hold.
			if !tc.snapshot {
				for _, cs := range dels {
					applySets(t, dev, []ChangeSet{cs})
				}
				applySets(t, dev, theirs)
			}
			if cutoff != 0 {
				_, err = dev.PruneTombstonesWith(cutoff, PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}})
				mustDo(t, err)
			}
			if _, err := dev.Get("items", Key{1}); err == nil {
				t.Fatal("row 1 is alive on dev: the test does not reach the case")
			}
			got, want := crdtState(t, dev), crdtState(t, relay)
			if got != want {
				t.Fatalf("dev and the relay differ after the pruning:\ndev:%s\nrelay:%s", got, want)
			}
			if bare := !strings.Contains(want, "="); bare != tc.wantBare {
				t.Errorf("the relay's row:%s; want a bare tombstone: %v", want, tc.wantBare)
			}
			// A later mark past dev's deletion, once the relay holds it,
			// drops the row everywhere and leaves no index entry.
			clock.ms += 10
			_, err = relay.PruneTombstones(clock.ms)
			mustDo(t, err)
			_, err = dev.PruneTombstonesWith(clock.ms, PruneTombstonesOptions{KeepUnsent: true, Sent: mine[0].HLC})
			mustDo(t, err)
			if got, want := crdtState(t, dev), crdtState(t, relay); got != "" || want != "" {
				t.Fatalf("after the last mark: dev:%s\nrelay:%s\nwant both empty", got, want)
			}
			if n := countTombEntries(t, dev); n != 0 {
				t.Errorf("dev holds %d prune index entries after the last mark, want 0", n)
			}
		})
	}
}

// countTombEntries counts e's prune index entries.
func countTombEntries(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	mustDo(t, e.store.View(func(tx kv.Tx) error {
		return tx.Scan(layout.BucketTombs, kv.Range{}, func(_, _ []byte) bool { n++; return true })
	}))
	return n
}

// TestNoShadowUnderResurrection: a shadow tombstone decides only the cells
// of a delete-wins row (pruneShadow), so a table allowing resurrection
// records none: re-deleting a resurrected row, or receiving a deletion its
// own newer one supersedes, writes the prune index entry of its tombstone
// alone, not a shadow's entry and value too (a read and two writes more
// per such delete, for nothing).
func TestNoShadowUnderResurrection(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	schema := replaceSchema()
	for i := range schema.Tables {
		schema.Tables[i].Resurrection = ResurrectionAllowed
	}
	open := func() *Engine {
		e, err := Open(memkv.New(Buckets...), Options{Schema: schema, Clock: clock})
		mustDo(t, err)
		return e
	}
	dev, other := open(), open()
	_, err := dev.Insert("items", map[string]any{"id": 1, "name": "n1"})
	mustDo(t, err)
	clock.ms++
	ins, err := dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	_, err = other.ApplyChanges(ins)
	mustDo(t, err)
	// other's deletion, which dev has not seen yet.
	_, err = other.Delete("items", Key{1})
	mustDo(t, err)
	clock.ms++
	theirs, err := other.ChangesSince(ins[len(ins)-1].HLC, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	// dev deletes, resurrects and deletes again: its first deletion is
	// superseded by its second.
	_, err = dev.Delete("items", Key{1})
	mustDo(t, err)
	clock.ms++
	_, err = dev.Insert("items", map[string]any{"id": 1, "name": "n2"})
	mustDo(t, err)
	clock.ms++
	_, err = dev.Delete("items", Key{1})
	mustDo(t, err)
	clock.ms++
	if n := countTombEntries(t, dev); n != 1 {
		t.Errorf("after re-deleting a resurrected row: %d prune index entries, want 1", n)
	}
	// other's older deletion loses to dev's.
	_, err = dev.ApplyChanges(theirs)
	mustDo(t, err)
	if n := countTombEntries(t, dev); n != 1 {
		t.Errorf("after a deletion superseded by the own one: %d prune index entries, want 1", n)
	}
}

// TestPruneHeldOwnTombstone (the simulator's seed 16 with relay wipes):
// as in TestPruneShadowTombstone's "pruned" case, dev deleted a
// delete-wins row without having seen an older deletion of the relay's,
// and other wrote cells after both; but the relay lost its log and got
// dev's deletion back before the mark from another replica's repair push
// (wire's "Repair pushes"), which the mark's siteHlc for dev (zero) does
// not count. The relay's row carried dev's deletion at the mark, past
// it: it pruned only the older deletion and kept other's cells. dev,
// told by PruneTombstonesOptions.Held that the relay holds its deletion,
// does the same; without Held it would prune by the shadow as if the
// relay had, dropping other's cells for good.
func TestPruneHeldOwnTombstone(t *testing.T) {
	for _, held := range []bool{true, false} {
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
		// The relay's older deletion, then the mark's bound.
		_, err = relay.Delete("items", Key{1})
		mustDo(t, err)
		sets := ownSets(t, relay, ins[len(ins)-1].HLC)
		del := sets[len(sets)-1]
		clock.ms++
		cutoff := clock.ms
		clock.ms++
		// dev's deletion (it saw none), then other's later write.
		_, err = dev.Delete("items", Key{1})
		mustDo(t, err)
		mine := ownSets(t, dev, ins[len(ins)-1].HLC)
		clock.ms++
		_, err = other.Update("items", Key{1}, map[string]any{"b": "theirs", "c": "theirs"})
		mustDo(t, err)
		theirs := ownSets(t, other, ins[len(ins)-1].HLC)
		clock.ms++
		// The relay holds dev's deletion before the mark (a repair
		// entry), the older deletion and other's write; it prunes at
		// the mark.
		applySets(t, relay, []ChangeSet{del})
		applySets(t, relay, mine)
		applySets(t, relay, theirs)
		_, err = relay.PruneTombstones(cutoff)
		mustDo(t, err)
		// dev pulls the log (its own deletion comes back in the repair
		// entry, merged as a no-op) and prunes at the mark, whose
		// siteHlc for dev is zero.
		applySets(t, dev, []ChangeSet{del})
		applySets(t, dev, theirs)
		o := PruneTombstonesOptions{KeepUnsent: true, Sent: HLC{}}
		if held {
			heldFacts := map[HLC]bool{}
			for _, cs := range mine {
				for _, c := range cs.Changes {
					heldFacts[c.HLC] = true
				}
			}
			o.Held = func(h HLC) bool { return heldFacts[h] }
		}
		_, err = dev.PruneTombstonesWith(cutoff, o)
		mustDo(t, err)
		got, want := crdtState(t, dev), crdtState(t, relay)
		if !strings.Contains(want, "theirs") {
			t.Fatalf("the relay's row lost other's cells:%s: the test does not reach the case", want)
		}
		if held && got != want {
			t.Fatalf("dev and the relay differ after the pruning (Held names dev's deletion):\ndev:%s\nrelay:%s", got, want)
		}
		if !held && got == want {
			t.Fatalf("without Held, dev and the relay agree:%s: the test does not reach the case", got)
		}
	}
}

// TestPruneKeepOthers (the simulator's seed 55 with relay wipes): the
// relay lost its log; dev, behind, still holds site X's old deletion of a
// delete-wins row, which every other replica pruned long ago, and pulls
// the new log: other's later cells of the row, then a mark past the
// deletion. The relay never held the deletion: it prunes nothing of the
// row. dev keeps the deletion (PruneTombstonesOptions.KeepOthers: it
// did not come from the log) and its repair push gives it to the relay
// after the mark, so both hold the deletion and the cells. Pruned at the
// mark, the deletion took the cells with it on dev alone.
func TestPruneKeepOthers(t *testing.T) {
	for _, keepOthers := range []bool{true, false} {
		clock := &manualClock{ms: replaceT0}
		relay := openReplace(t, memkv.New(Buckets...), clock)
		dev := openReplace(t, memkv.New(Buckets...), clock)
		x := openReplace(t, memkv.New(Buckets...), clock)
		other := openReplace(t, memkv.New(Buckets...), clock)
		_, err := x.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
		mustDo(t, err)
		clock.ms++
		ins := ownSets(t, x, HLC{})
		applySets(t, dev, ins)
		applySets(t, other, ins)
		_, err = x.Delete("items", Key{1})
		mustDo(t, err)
		del := ownSets(t, x, ins[len(ins)-1].HLC)
		clock.ms++
		cutoff := clock.ms
		clock.ms++
		applySets(t, dev, del)
		// other never saw the deletion (pruned before it came): it
		// writes the row again, and pushes that to the new log.
		_, err = other.Update("items", Key{1}, map[string]any{"b": "theirs"})
		mustDo(t, err)
		theirs := ownSets(t, other, ins[len(ins)-1].HLC)
		applySets(t, relay, theirs)
		_, err = relay.PruneTombstones(cutoff)
		mustDo(t, err)
		// dev pulls other's write, then applies the mark.
		inLog := map[HLC]bool{}
		for _, cs := range theirs {
			for _, c := range cs.Changes {
				inLog[c.HLC] = true
			}
		}
		applySets(t, dev, theirs)
		o := PruneTombstonesOptions{KeepUnsent: true}
		if keepOthers {
			o.KeepOthers = func(h HLC) bool { return !inLog[h] }
		}
		_, err = dev.PruneTombstonesWith(cutoff, o)
		mustDo(t, err)
		// dev's repair push: the facts of other sites it holds.
		var facts []ChangeSet
		var pos []byte
		for {
			page, next, err := dev.PeerFacts(pos, 0)
			mustDo(t, err)
			facts = append(facts, page...)
			if next == nil {
				break
			}
			pos = next
		}
		applySets(t, relay, facts)
		got, want := crdtState(t, dev), crdtState(t, relay)
		if keepOthers && got != want {
			t.Fatalf("dev and the relay differ after the mark and the repair push (KeepOthers):\ndev:%s\nrelay:%s", got, want)
		}
		if !keepOthers && got == want {
			t.Fatalf("without KeepOthers, dev and the relay agree:%s: the test does not reach the case", got)
		}
	}
}
