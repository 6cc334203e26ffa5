//go:build !js

package client_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/seal"
)

// storedCursor is the cursor r stored for the relay log of database dbID
// (client's "Persisted state"); 0 when none.
func storedCursor(t testing.TB, r *replica, dbID string) uint64 {
	t.Helper()
	ns, err := r.db.State("sync:last#" + dbID)
	if err != nil || ns == nil {
		return 0
	}
	b, err := r.db.State(string(ns) + ":cursor")
	if err != nil || b == nil {
		return 0
	}
	c, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		t.Fatalf("stored cursor %q: %v", b, err)
	}
	return c
}

// storedHorizon is the tombstone horizon r applied in the relay log of
// database dbID; 0 when none.
func storedHorizon(t testing.TB, r *replica, dbID string) uint64 {
	t.Helper()
	ns, err := r.db.State("sync:last#" + dbID)
	if err != nil || ns == nil {
		return 0
	}
	b, err := r.db.State(string(ns) + ":horizon")
	if err != nil || b == nil {
		return 0
	}
	c, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		t.Fatalf("stored horizon %q: %v", b, err)
	}
	return c
}

func snapshotsApplied(r *replica) int {
	n := 0
	for _, ev := range r.ev.list() {
		if ev.Type == client.SnapshotProgressed && ev.Progress.Done {
			n++
		}
	}
	return n
}

func insertNote(t testing.TB, r *replica, id string, n int) {
	t.Helper()
	if _, err := r.db.Upsert("notes", map[string]any{"id": id, "title": id, "n": n}); err != nil {
		t.Fatal(err)
	}
}

// TestE2ESoleWriterCursor (wire version 9, "Acknowledged position"): a
// device that only writes moves its cursor with its own pushes (the relay
// echoes none of them back; their apply_result tells their position), so
// after the relay's retention compaction passed every entry it wrote, it
// reconnects and pulls from its cursor: it is not answered
// SNAPSHOT_REQUIRED and downloads no snapshot of the database it wrote
// itself. A horizon mark the relay made between two of its pushes reaches
// it with the next push's apply_result and is applied (its horizon is
// stored). Before version 9 its cursor stayed where its first pull left it
// (0), and after the compaction it bootstrapped again.
func TestE2ESoleWriterCursor(t *testing.T) {
	checkNoLeaks(t)
	clock := &msClock{}
	start := uint64(time.Now().UnixMilli())
	clock.ms.Store(start)
	rl := startRelayClock(t, t.TempDir(), clock, time.Hour)
	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{BackoffBase: 50 * time.Millisecond})
	a.connect(t, rl.url, "trips", "")
	waitState(t, a, client.Synced)
	const n = 8
	for i := range n {
		insertNote(t, a, fmt.Sprintf("w%02d", i), i)
		waitFor(t, "A pushed", func() bool { return pending(t, a) == 0 })
	}
	// The schema's transaction and the n writes: cursors 1 … n+1.
	waitReport(t, 10*time.Second, "A's cursor follows its pushes", func() string {
		if c := storedCursor(t, a, "trips"); c != n+1 {
			return fmt.Sprintf("cursor %d, want %d; %s", c, n+1, syncReport(t, a, "trips"))
		}
		return ""
	})

	// A mark at the head (the relay's first maintenance: cutoff = now -
	// 1 h, nothing arrived before it, nothing pruned), then a push: its
	// apply_result carries the mark, which A applies.
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	insertNote(t, a, "after-mark", 100)
	waitReport(t, 10*time.Second, "A applied the mark and moved past its push", func() string {
		if c, h := storedCursor(t, a, "trips"), storedHorizon(t, a, "trips"); c != n+2 || h != start-uint64(time.Hour.Milliseconds()) || pending(t, a) != 0 {
			return fmt.Sprintf("cursor %d horizon %d, want %d %d; %s", c, h, n+2, start-uint64(time.Hour.Milliseconds()), syncReport(t, a, "trips"))
		}
		return ""
	})
	waitState(t, a, client.Synced)

	// Offline past the retention: the relay compacts every entry A wrote.
	a.c.Disconnect()
	waitState(t, a, client.Disconnected)
	clock.ms.Add(uint64((2 * time.Hour).Milliseconds()))
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pruned := metric(t, rl, "replica_relay_arrivals_pruned_total"); pruned < n+2 {
		t.Fatalf("the relay pruned %v arrivals, want all %d", pruned, n+2)
	}
	snaps := snapshotsApplied(a)
	a.connect(t, rl.url, "trips", "")
	waitState(t, a, client.Synced)
	insertNote(t, a, "back", 200)
	waitReport(t, 10*time.Second, "A pushed after the compaction", func() string {
		if c := storedCursor(t, a, "trips"); c != n+3 || pending(t, a) != 0 {
			return fmt.Sprintf("cursor %d, want %d; %s", c, n+3, syncReport(t, a, "trips"))
		}
		return ""
	})
	if got := snapshotsApplied(a); got != snaps {
		t.Fatalf("A downloaded %d snapshots after the compaction, want none: its cursor did not follow its pushes", got-snaps)
	}
	for _, ev := range a.ev.list() {
		if ev.Type == client.ErrorReported && strings.Contains(ev.Err.Error(), "SNAPSHOT_REQUIRED") {
			t.Fatalf("A was answered SNAPSHOT_REQUIRED: %v", ev.Err)
		}
	}
	if errs := reportedErrs(a, client.ErrProtocol); len(errs) != 0 {
		t.Fatalf("A reported protocol errors: %v", errs)
	}

	// A new device bootstraps from the relay and holds every row.
	b := newReplica(t, "B", nil, engine.Options{}, client.Options{})
	b.connect(t, rl.url, "trips", "")
	converged(t, a, b)
	if got := count(t, b.db, "notes"); got != n+2 {
		t.Fatalf("B holds %d notes, want %d", got, n+2)
	}
}

// TestE2EInterleavedWritersConverge (wire version 9): two devices writing
// at once, their pushes interleaved in the log. An apply_result whose
// entries do not continue the writer's cursor (the other's entries lie
// between, their push_changes not yet applied) leaves the cursor and
// pulls; both converge, and both end at the log's head.
func TestE2EInterleavedWritersConverge(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{})
	b := newReplica(t, "B", notesSchema(), engine.Options{}, client.Options{})
	a.connect(t, rl.url, "trips", "")
	b.connect(t, rl.url, "trips", "")
	waitState(t, a, client.Synced)
	waitState(t, b, client.Synced)
	const n = 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if _, err := b.db.Upsert("notes", map[string]any{"id": fmt.Sprintf("b%02d", i), "title": "b", "n": i}); err != nil {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for i := range n {
		insertNote(t, a, fmt.Sprintf("a%02d", i), i)
		if i%4 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	<-done
	converged(t, a, b)
	if got := count(t, a.db, "notes"); got != 2*n {
		t.Fatalf("A holds %d notes, want %d", got, 2*n)
	}
	waitReport(t, 10*time.Second, "A and B at the log's head", func() string {
		ca, cb := storedCursor(t, a, "trips"), storedCursor(t, b, "trips")
		if ca != cb || ca < 2*n {
			return fmt.Sprintf("cursors %d and %d, want equal, at least %d; %s; %s", ca, cb, 2*n, syncReport(t, a, "trips"), syncReport(t, b, "trips"))
		}
		return ""
	})
	if errs := append(reportedErrs(a, client.ErrProtocol), reportedErrs(b, client.ErrProtocol)...); len(errs) != 0 {
		t.Fatalf("protocol errors: %v", errs)
	}
}

// TestE2ESealedSoleWriterCheckpoint (wire version 9): the sole device of a
// sealed database uploads checkpoints as it writes: its cursor follows its
// own pushes, and the upload waits for the cursor to pass the newest
// checkpoint. Before version 9 its cursor never moved and it uploaded
// none.
func TestE2ESealedSoleWriterCheckpoint(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	a := checkpointReplica(t, "a", keyring(t, seal.GenerateKey()), 5)
	a.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	for i := range 12 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	}
	waitReport(t, 10*time.Second, "a uploaded a checkpoint", func() string {
		if n, c := uploaded(a); n == 0 || c < 10 {
			return fmt.Sprintf("%d uploads, the last at %d; %s", n, c, syncReport(t, a, "vault"))
		}
		return ""
	})
	if c := storedCursor(t, a, "vault"); c != 13 {
		t.Fatalf("a's cursor %d, want 13 (the schema's transaction and 12 writes)", c)
	}
}
