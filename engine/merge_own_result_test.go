package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestMergeOwnResultCounts: ApplyOptions.MergeOwn merges the changes of
// this replica's own ChangeSets, so each counts once, applied or skipped
// as a peer's would (model.ApplyResult), not also as an own echo: a
// client's ChangesApplied event reports them.
func TestMergeOwnResultCounts(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	dev := openReplace(t, memkv.New(Buckets...), clock)
	_, err := dev.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	clock.ms++
	mine, err := dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	n, m := 0, 0 // changes, schema migrations (own: always skipped)
	for _, cs := range mine {
		n += len(cs.Changes)
		m += len(cs.Migrations)
	}
	// The row holds every fact: each merges as a no-op.
	res, err := dev.Apply(mine, ApplyOptions{MergeOwn: true})
	mustDo(t, err)
	if res.Applied != 0 || res.Skipped != n+m {
		t.Errorf("merging own facts the row holds: applied %d, skipped %d; want 0 and %d", res.Applied, res.Skipped, n+m)
	}
	// The row gone (a peer's deletion pruned), the facts land again.
	_, err = dev.Delete("items", Key{1})
	mustDo(t, err)
	clock.ms++
	_, err = dev.PruneTombstones(clock.ms)
	mustDo(t, err)
	clock.ms++
	res, err = dev.Apply(mine, ApplyOptions{MergeOwn: true})
	mustDo(t, err)
	if res.Applied != n || res.Skipped != m {
		t.Errorf("merging own facts back into a pruned row: applied %d, skipped %d; want %d and %d", res.Applied, res.Skipped, n, m)
	}
	// Without MergeOwn they are the own echo, skipped.
	res, err = dev.Apply(mine, ApplyOptions{})
	mustDo(t, err)
	if res.Applied != 0 || res.Skipped != n+m {
		t.Errorf("own echo: applied %d, skipped %d; want 0 and %d", res.Applied, res.Skipped, n+m)
	}
}
