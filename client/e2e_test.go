//go:build !js

package client_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestE2EConverge: three replicas edit the same rows concurrently through
// a real relay (bbolt) over real sockets, including while one of them is
// disconnected, and end byte-identical with nothing left to push.
func TestE2EConverge(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	var rs []*replica
	for i := range 3 {
		r := newReplica(t, fmt.Sprintf("r%d", i), notesSchema(), engine.Options{}, client.Options{})
		r.connect(t, rl.url, "trips", "")
		rs = append(rs, r)
	}
	for _, r := range rs {
		waitState(t, r, client.Synced)
	}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for j := range 150 {
				id := fmt.Sprintf("row%02d", rng.IntN(40))
				var err error
				switch rng.IntN(6) {
				case 0:
					_, err = r.db.Delete("notes", engine.Key{id})
				default:
					_, err = r.db.Upsert("notes", map[string]any{"id": id, "title": fmt.Sprintf("%s-%d", r.name, j), "n": j})
				}
				if err != nil && !expected(err) {
					t.Error(err)
					return
				}
				if j == 50 && i == 2 {
					r.c.Disconnect() // offline for a while, still editing
				}
				if j == 120 && i == 2 {
					r.connect(t, rl.url, "trips", "")
				}
				if rng.IntN(10) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	converged(t, rs...)
	if n := count(t, rs[0].db, "notes"); n == 0 {
		t.Fatal("no rows survived")
	}
}

// expected reports the errors random edits run into: deleting a missing
// row, writing a deleted one (delete wins).
func expected(err error) bool {
	return errorsIs(err, engine.ErrNotFound) || errorsIs(err, engine.ErrConflict)
}

// TestE2EOfflineOldHLC is the case an HLC watermark loses: a replica
// offline for a while makes edits stamped with HLCs older than what the
// others have already synced, reconnects and pushes them; a replica that
// stayed online receives them live, and one that synced in between and
// was offline at that moment receives them through get_changes on
// reconnect, because delivery follows the relay's arrival cursor.
func TestE2EOfflineOldHLC(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	var skew atomic.Int64 // ms added to the clocks of a and b
	fast := engine.ClockFunc(func() uint64 { return uint64(time.Now().UnixMilli() + skew.Load()) })
	a := newReplica(t, "a", notesSchema(), engine.Options{Clock: fast}, client.Options{})
	b := newReplica(t, "b", notesSchema(), engine.Options{Clock: fast}, client.Options{})
	c := newReplica(t, "c", notesSchema(), engine.Options{}, client.Options{}) // real time
	for _, r := range []*replica{a, b, c} {
		r.connect(t, rl.url, "db", "")
	}
	if _, err := a.db.Upsert("notes", map[string]any{"id": "start", "title": "a"}); err != nil {
		t.Fatal(err)
	}
	converged(t, a, b, c)

	c.c.Disconnect()
	skew.Store(20_000) // a and b move 20 s ahead (within the 60 s drift bound)
	for i := range 5 {
		if _, err := a.db.Upsert("notes", map[string]any{"id": fmt.Sprintf("a%d", i), "title": "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Upsert("notes", map[string]any{"id": fmt.Sprintf("b%d", i), "title": "b"}); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, a, b)
	newest, err := b.db.Now()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.db.Upsert("notes", map[string]any{"id": fmt.Sprintf("c%d", i), "title": "c"}); err != nil {
			t.Fatal(err)
		}
	}
	// The scenario: every edit c made offline is older than what a and b
	// already hold.
	for _, cs := range dataSetsOf(t, c.db) {
		if !cs.HLC.Less(newest) {
			t.Fatalf("c's edit %s is not older than b's clock %s", cs.HLC, newest)
		}
	}
	b.c.Disconnect() // b synced in between; it is away when c pushes
	c.connect(t, rl.url, "db", "")
	waitFor(t, "c's edits pushed", func() bool { return pending(t, c) == 0 })
	waitFor(t, "a (online) has c's edits", func() bool { _, ok := title(t, a.db, "c4"); return ok })
	b.connect(t, rl.url, "db", "")
	converged(t, a, b, c)
	for i := range 5 {
		for _, r := range []*replica{a, b} {
			if got, ok := title(t, r.db, fmt.Sprintf("c%d", i)); !ok || got != "c" {
				t.Fatalf("%s lacks c%d", r.name, i)
			}
		}
	}
	if n := count(t, c.db, "notes"); n != 16 {
		t.Fatalf("%d rows, want 16", n)
	}
}

func dataSetsOf(t testing.TB, db *engine.Engine) []model.ChangeSet {
	t.Helper()
	sets, err := db.ChangesSince(model.HLC{}, 1<<20, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []model.ChangeSet
	for _, cs := range sets {
		if len(cs.Changes) > 0 {
			out = append(out, cs)
		}
	}
	return out
}

var _ = wire.ProtocolVersion
