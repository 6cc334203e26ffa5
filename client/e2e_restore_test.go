//go:build !js

package client_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/testdir"
	"github.com/replica-sync/replica/kv"
)

// stop ends the relay process gracefully (SIGTERM: it closes its bbolt
// files), so its data directory can be copied.
func (p *relayProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// replaceDir empties dir and copies backup into it.
func replaceDir(t *testing.T, dir, backup string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if backup != "" {
		testdir.Copy(t, backup, dir)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// writeNotes inserts one transaction per row: ids prefix-0000 … .
func writeNotes(t *testing.T, r *replica, prefix string, from, to int) []string {
	t.Helper()
	var ids []string
	for i := from; i < to; i++ {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		if _, err := r.db.Upsert("notes", map[string]any{"id": id, "title": id, "n": i}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// missing returns the ids of want that r does not hold.
func missing(t *testing.T, r *replica, want []string) []string {
	t.Helper()
	var out []string
	for _, id := range want {
		if _, ok := title(t, r.db, id); !ok {
			out = append(out, id)
		}
	}
	return out
}

// holdEvery waits until every replica holds every row of want, and no
// other, with nothing pending and synced; it fails naming what is missing
// (and goes on, so that a failure shows every replica's figure).
func holdEvery(t *testing.T, want []string, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		deadline := time.Now().Add(e2eWait)
		for {
			m := missing(t, r, want)
			n, p := count(t, r.db, "notes"), pending(t, r)
			last := fmt.Sprintf("%s holds %d rows of %d (missing %d, e.g. %v), %d pending, %v", r.name, n, len(want), len(m), first(m), p, r.c.State().State)
			if len(m) == 0 && n == len(want) && p == 0 && r.c.State().State == client.Synced {
				t.Log(last)
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("after %v: %s", e2eWait, last)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// reported counts the ErrorReported events of r matching target.
func reported(r *replica, target error) int {
	n := 0
	for _, ev := range r.ev.list() {
		if ev.Type == client.ErrorReported && errors.Is(ev.Err, target) {
			n++
		}
	}
	return n
}

// TestE2ERelayRestoredFromCopy (issue 10 §5): a and b sync 100 rows; the
// relay's data directory is copied (relay stopped); 100 more rows sync (a's
// 50, then b's 50), c with them; a and c go offline, c writes 10 rows; the
// relay is stopped, the copy restored and the relay restarted on the same
// directory and port. b finds its cursor ahead of the restored log,
// bootstraps again and pushes its 50 later rows again, then writes 120
// more: the restored log hands out again the cursors a and c hold, for
// other entries. a and c reconnect, find the chain value at their cursor
// changed, and bootstrap instead of skipping those rows; a pushes its 50
// later rows again, c its 10. Every device, and a fresh one, ends with all
// 330 rows.
func TestE2ERelayRestoredFromCopy(t *testing.T) {
	bin := buildRelay(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	backup := filepath.Join(t.TempDir(), "backup")
	url := "ws://" + addr + "/sync"
	proc := startRelayProcess(t, bin, addr, dir)

	a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
	b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
	c := newReplica(t, "c", notesSchema(), engine.Options{}, client.Options{})
	for _, r := range []*replica{a, b, c} {
		r.connect(t, url, "restore", "")
		waitState(t, r, client.Synced)
	}
	var want []string
	want = append(want, writeNotes(t, a, "a", 0, 50)...)
	want = append(want, writeNotes(t, b, "b", 0, 50)...)
	holdEvery(t, want, a, b, c)

	proc.stop(t)
	testdir.Copy(t, dir, backup)
	proc = startRelayProcess(t, bin, addr, dir)
	want = append(want, writeNotes(t, a, "a", 50, 100)...)
	holdEvery(t, want, b) // a's rows are in the log before b's
	want = append(want, writeNotes(t, b, "b", 50, 100)...)
	holdEvery(t, want, a, b, c)

	a.c.Disconnect()
	c.c.Disconnect()
	want = append(want, writeNotes(t, c, "c", 0, 10)...) // offline, never sent

	proc.stop(t)
	replaceDir(t, dir, backup)
	startRelayProcess(t, bin, addr, dir)

	// b reconnects on its own (backoff) and pushes its rows again (it
	// holds all but c's offline rows).
	var ofB []string
	for _, id := range want {
		if id[0] != 'c' {
			ofB = append(ofB, id)
		}
	}
	holdEvery(t, ofB, b)
	fresh := writeNotes(t, b, "b", 100, 220)
	want = append(want, fresh...)
	holdEvery(t, append(ofB, fresh...), b)

	a.connect(t, url, "restore", "")
	c.connect(t, url, "restore", "")
	sort.Strings(want)
	holdEvery(t, want, c, a, b)

	d := newReplica(t, "d", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "restore", "")
	holdEvery(t, want, d)

	for _, r := range []*replica{a, b, c} {
		if n := reported(r, client.ErrRelayDiverged); n != 1 {
			t.Errorf("%s reported ErrRelayDiverged %d times, want once", r.name, n)
		}
	}
	if n := reported(d, client.ErrRelayDiverged); n != 0 {
		t.Errorf("the fresh device reported ErrRelayDiverged %d times", n)
	}
}

// TestE2ERelayDataDirWiped: the relay's data directory is deleted while it
// is stopped; restarted, it is a new log (a new serverSiteId). a and b push
// everything again and a fresh device gets every row.
func TestE2ERelayDataDirWiped(t *testing.T) {
	bin := buildRelay(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	url := "ws://" + addr + "/sync"
	proc := startRelayProcess(t, bin, addr, dir)

	a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
	b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
	for _, r := range []*replica{a, b} {
		r.connect(t, url, "wiped", "")
		waitState(t, r, client.Synced)
	}
	var want []string
	want = append(want, writeNotes(t, a, "a", 0, 50)...)
	want = append(want, writeNotes(t, b, "b", 0, 50)...)
	holdEvery(t, want, a, b)

	proc.stop(t)
	replaceDir(t, dir, "")
	startRelayProcess(t, bin, addr, dir)
	want = append(want, writeNotes(t, a, "a", 50, 60)...)
	holdEvery(t, want, a, b)

	d := newReplica(t, "d", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "wiped", "")
	holdEvery(t, want, d)
}

// TestE2ECorruptSyncState (issue 10 §6): a stored cursor, chain value, sent
// watermark or snapshot checkpoint that does not decode is discarded,
// reported once (ErrSyncStateReset) and rebuilt: a is offline while b
// writes 5 rows and a writes 5, garbage is written over one of a's keys,
// and a reconnects: it pulls b's rows, pushes its own, and a fresh device
// gets all 15. A second reconnect reports nothing more.
func TestE2ECorruptSyncState(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string // appended to the namespace; "" for the checkpoint
		val  string
	}{
		{"cursor", ":cursor", "12x"},
		{"chain", ":chain", "7 not-a-chain"},
		{"sent", ":sent", "not an HLC"},
		{"acked", ":acked", "\xff\xfe"},
		{"checkpoint", "", "\x00garbage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRelay(t, t.TempDir(), nil)
			db := "corrupt-" + tc.name
			a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
			b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
			for _, x := range []*replica{a, b} {
				x.connect(t, r.url, db, "")
				waitState(t, x, client.Synced)
			}
			want := writeNotes(t, a, "a", 0, 5)
			holdEvery(t, want, a, b)

			a.c.Disconnect()
			want = append(want, writeNotes(t, b, "b", 0, 5)...)
			want = append(want, writeNotes(t, a, "a", 5, 10)...)
			ns, err := a.db.State("sync:relay:" + r.url + "#" + db)
			if err != nil || ns == nil {
				t.Fatalf("no relay hint: %q, %v", ns, err)
			}
			if tc.key != "" {
				if err := a.db.SetState(string(ns)+tc.key, []byte(tc.val)); err != nil {
					t.Fatal(err)
				}
			} else if err := a.store.Update(func(tx kv.Tx) error { return tx.Put("meta", []byte("checkpoint"), []byte(tc.val)) }); err != nil {
				t.Fatal(err)
			}

			a.connect(t, r.url, db, "")
			holdEvery(t, want, a, b)
			if n := reported(a, client.ErrSyncStateReset); n != 1 {
				t.Errorf("ErrSyncStateReset reported %d times, want once", n)
			}
			a.c.Disconnect()
			a.connect(t, r.url, db, "")
			waitState(t, a, client.Synced)
			if n := reported(a, client.ErrSyncStateReset); n != 1 {
				t.Errorf("after a second reconnect ErrSyncStateReset reported %d times, want once", n)
			}
			d := newReplica(t, "d", notesSchema(), engine.Options{}, client.Options{})
			d.connect(t, r.url, db, "")
			holdEvery(t, want, d)
		})
	}
}
