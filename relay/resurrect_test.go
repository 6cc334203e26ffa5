//go:build !js

package relay

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/wire"
)

// TestRemergeRebuildsResurrectedRow (issue 10 § 4): the relay's merged
// replica applies the database's resurrection policy in its snapshots,
// and one built by an earlier version (which dropped the cells written
// after a tombstone) is merged again from the arrival log at open. Clients
// with allowResurrection push an insert of r, its deletion and a
// re-insert; the relay's snapshot bootstraps a fresh device that shows r
// with the new cells. Then the merged replica is stripped of its rows (as
// an earlier version left them, worse) and its merge marker, and the relay
// restarted: a fresh device bootstrapping from it again shows r.
func TestRemergeRebuildsResurrectedRow(t *testing.T) {
	needFiles(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir})
	clock := newManualClock()
	open := func(allow bool) *engine.Engine {
		e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: testSchema(), Clock: clock, AllowResurrection: allow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := open(true), open(true)
	if _, err := a.Insert("trips", map[string]any{"id": "r", "title": "first", "budget": 1.0}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplyChanges(localSets(t, a)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10)
	if ok, err := b.Delete("trips", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if _, err := a.ApplyChanges(localSets(t, b)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10)
	if _, err := a.Insert("trips", map[string]any{"id": "r", "title": "second"}); err != nil {
		t.Fatalf("re-insert: %v", err)
	}
	// Pushed in the order the relay saw them in the issue: the insert,
	// the deletion, the re-insert.
	aSets := localSets(t, a)
	connectAs(t, r, "db", a).apply("a1", aSets[:len(aSets)-1])
	connectAs(t, r, "db", b).apply("b1", localSets(t, b))
	connectAs(t, r, "db", a).apply("a2", aSets[len(aSets)-1:])

	bootstrap := func(c *client, what string) {
		t.Helper()
		f := open(false) // declares nothing: follows the database
		for _, ch := range collectSnapshot(t, c, &wire.GetSnapshot{}).chunks {
			if _, err := f.ApplySnapshotChunk(ch); err != nil {
				t.Fatal(err)
			}
		}
		row, err := f.Get("trips", engine.Key{"r"})
		if err != nil {
			t.Fatalf("%s: a device bootstrapped from the relay's snapshot: r: %v", what, err)
		}
		if row["title"].Text() != "second" || !row["budget"].IsNull() {
			t.Fatalf("%s: r is %v, want the re-inserted cells (title second, budget null)", what, row)
		}
	}
	bootstrap(connect(t, r, "db"), "live relay")

	// The merged replica as an earlier version could leave it.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	st, err := boltkv.Open(r.dbFiles()[0], storeBuckets, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx kv.Tx) error {
		for _, bk := range []string{"rows", "tombs", "index", "log"} {
			if err := tx.DeleteRange(bk, nil, nil); err != nil {
				return err
			}
		}
		return tx.Delete(bucketRelay, keyMerged)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := startRelay(t, Config{DataDir: dir})
	bootstrap(connect(t, r2, "db"), "restarted relay")
}
