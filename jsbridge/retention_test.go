//go:build js && wasm

package jsbridge

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// TestRetentionLeader: the leader tab runs engine.Prune (here after 20 ms,
// then every 50 ms, with a 300 ms retention horizon), which leaves an
// expired tombstone alone (tombstones go only through PruneTombstones,
// docs/design.md § Retention), so its key still cannot be inserted again;
// the other tab never prunes until it becomes leader; a closed replica's
// loop is gone, and a Prune that fails is reported, not a panic.
func TestRetentionLeader(t *testing.T) {
	var mu sync.Mutex
	runs := map[*db][]engine.PruneResult{}
	var errs []error
	oldFirst, oldEvery := pruneFirst, pruneEvery
	pruneFirst, pruneEvery = 20*time.Millisecond, 50*time.Millisecond
	engineOptionsHook = func(o *engine.Options) { o.Retention = 300 * time.Millisecond }
	pruneHook = func(d *db, res engine.PruneResult, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		runs[d] = append(runs[d], res)
	}
	t.Cleanup(func() {
		pruneFirst, pruneEvery = oldFirst, oldEvery
		engineOptionsHook, pruneHook = nil, nil
	})
	tombstones := func(d *db) (n, calls int) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range runs[d] {
			n += r.Tombstones
		}
		return n, len(runs[d])
	}

	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "a leads", func() bool { return a.Get("isLeader").Bool() })
	b := openDB(t, name, testSchema)
	da, dbb := dbOf(t, a), dbOf(t, b)

	must(t, a.Call("insert", "other", jsv(`{id: "gone", v: 1}`)))
	must(t, a.Call("delete", "other", "gone"))
	// The tombstone holds (delete wins), past the horizon too: Prune
	// does not remove tombstones.
	mustReject(t, a.Call("insert", "other", jsv(`{id: "gone", v: 2}`)), "CONFLICT")
	start := time.Now()
	waitFor(t, "the leader to run retention past the horizon", func() bool {
		_, calls := tombstones(da)
		return calls >= 2 && time.Since(start) > 400*time.Millisecond
	})
	if n, _ := tombstones(da); n != 0 {
		t.Errorf("the leader's Prune removed %d tombstones, want none", n)
	}
	mustReject(t, a.Call("insert", "other", jsv(`{id: "gone", v: 3}`)), "CONFLICT")
	if n, calls := tombstones(dbb); calls != 0 {
		t.Errorf("the tab that does not lead pruned %d times (%d tombstones)", calls, n)
	}

	// b takes over when a closes, and prunes in turn; a's loop is gone.
	must(t, a.Call("close"))
	_, aCalls := tombstones(da)
	waitFor(t, "b leads", func() bool { return b.Get("isLeader").Bool() })
	waitFor(t, "b to run retention", func() bool { _, calls := tombstones(dbb); return calls >= 1 })
	if _, calls := tombstones(da); calls != aCalls {
		t.Errorf("the closed replica pruned %d more times", calls-aCalls)
	}
	da.pr.mu.Lock()
	running := da.pr.stop != nil
	da.pr.mu.Unlock()
	if running {
		t.Error("the closed replica's retention loop still runs")
	}

	// A failing Prune (here: on the closed engine) is logged and reported.
	da.pruneOnce()
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], engine.ErrClosed) {
		t.Errorf("errors reported: %v", errs)
	}
}
