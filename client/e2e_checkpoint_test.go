//go:build !js

package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
)

// metric reads a counter of the relay's /metrics.
func metric(t testing.TB, r *liveRelay, name string) float64 {
	t.Helper()
	resp, err := http.Get(r.hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// msClock is a relay clock tests move by hand (ms since the epoch).
type msClock struct{ ms atomic.Uint64 }

func (c *msClock) Now() uint64 { return c.ms.Load() }

// startRelayClock is startRelay with a relay clock and retention.
func startRelayClock(t testing.TB, dir string, clock *msClock, retention time.Duration) *liveRelay {
	t.Helper()
	srv, err := relay.New(relay.Config{DataDir: dir, Auth: relay.AllowAll, NoSync: true, Logger: quietLogger(),
		Clock: clock, Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	r := &liveRelay{srv: srv, dir: dir}
	r.hs = httptest.NewServer(srv.Handler())
	r.url = "ws" + strings.TrimPrefix(r.hs.URL, "http") + "/sync"
	t.Cleanup(r.stop)
	return r
}

func checkpointReplica(t testing.TB, name string, s seal.Sealer, every int) *replica {
	t.Helper()
	return newReplica(t, name, vaultSchema(), engine.Options{}, client.Options{Sealer: s, BackoffBase: 50 * time.Millisecond, CheckpointChanges: every})
}

func uploaded(r *replica) (n int, cursor uint64) {
	for _, ev := range r.ev.list() {
		if ev.Type == client.CheckpointUploaded {
			n, cursor = n+1, ev.Cursor
		}
	}
	return n, cursor
}

// snapshotRows is the RowsTotal of the last snapshot r applied (0: none,
// or an empty one).
func snapshotRows(r *replica) int64 {
	var rows int64
	for _, ev := range r.ev.list() {
		if ev.Type == client.SnapshotProgressed {
			rows = ev.Progress.RowsTotal
		}
	}
	return rows
}

// TestE2ESealedCheckpointBootstrap: a device of a sealed database uploads
// sealed checkpoints as the log grows (every 5 ChangeSets here); the relay
// prunes the sealed log below the newest after the retention horizon; a
// new device then bootstraps from that checkpoint (rows from the sealed
// snapshot) plus the log after it, and holds every row.
func TestE2ESealedCheckpointBootstrap(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	clock := &msClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rl := startRelayClock(t, dir, clock, time.Hour)
	key := seal.GenerateKey()
	a := checkpointReplica(t, "a", keyring(t, key), -1) // uploads none
	b := checkpointReplica(t, "b", keyring(t, key), 5)
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	waitState(t, b, client.Synced)
	for i := range 12 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	}
	converged(t, a, b)
	waitFor(t, "b uploaded a checkpoint", func() bool { n, c := uploaded(b); return n > 0 && c >= 10 })
	if n, _ := uploaded(a); n != 0 {
		t.Fatalf("a uploaded %d checkpoints with uploads off", n)
	}
	_, ckCursor := uploaded(b)

	// Past the retention: the log below the checkpoint goes.
	clock.ms.Add(uint64(2 * time.Hour / time.Millisecond))
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := metric(t, rl, "replica_relay_arrivals_pruned_total"); n < 5 {
		t.Fatalf("the relay pruned %v arrivals below the checkpoint at %d", n, ckCursor)
	}
	for i := 12; i < 15; i++ { // the log after the checkpoint
		writeNote(t, a, i)
	}
	waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })

	c := checkpointReplica(t, "c", keyring(t, key), -1)
	c.connect(t, rl.url, "vault", "")
	converged(t, a, b, c)
	if n := count(t, c.db, "vaultnotes"); n != 15 {
		t.Fatalf("c holds %d notes, want 15", n)
	}
	if rows := snapshotRows(c); rows < int64(ckCursor)-2 {
		t.Fatalf("c's snapshot carried %d rows: it did not bootstrap from the checkpoint at cursor %d", rows, ckCursor)
	}
	// A device that pulls the log from 0 cannot any more: it was pruned.
	if errs := reportedErrs(c, client.ErrCheckpointRefused); len(errs) != 0 {
		t.Fatalf("c refused a checkpoint: %v", errs)
	}
}

// TestE2ESealedCheckpointTampered: a part of the relay's sealed checkpoint
// altered on its disk is refused (ErrCheckpointRefused wrapping
// ErrEnvelopeInvalid) by a bootstrapping device, which falls back to the
// log and ends with every row; with the log pruned below the checkpoint it
// reports that it cannot bootstrap and stops pulling, without a loop.
func TestE2ESealedCheckpointTampered(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	clock := &msClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rl := startRelayClock(t, dir, clock, time.Hour)
	key := seal.GenerateKey()
	a := checkpointReplica(t, "a", keyring(t, key), -1)
	b := checkpointReplica(t, "b", keyring(t, key), 5)
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	waitState(t, b, client.Synced)
	for i := range 8 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	}
	converged(t, a, b)
	waitFor(t, "b uploaded a checkpoint", func() bool { n, _ := uploaded(b); return n > 0 })
	for _, r := range []*replica{a, b} {
		r.c.Disconnect()
	}
	rl.stop()

	// Flip a bit in the middle of one part's envelope.
	st, err := boltkv.Open(filepath.Join(dir, "vault.db"), relay.StoreBuckets(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx kv.Tx) error {
		var key, val []byte
		n := 0
		if err := tx.Scan("checkpoint_parts", kv.Range{}, func(k, v []byte) bool {
			n++
			if n == 3 { // a part after the header and the schema
				key, val = append([]byte(nil), k...), append([]byte(nil), v...)
			}
			return true
		}); err != nil {
			return err
		}
		if key == nil {
			return fmt.Errorf("the relay holds %d checkpoint parts", n)
		}
		val[len(val)/2] ^= 0x10
		return tx.Put("checkpoint_parts", key, val)
	})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	rl2 := startRelayClock(t, dir, clock, time.Hour)
	c := checkpointReplica(t, "c", keyring(t, key), -1)
	c.connect(t, rl2.url, "vault", "")
	waitFor(t, "c refused the checkpoint", func() bool { return len(reportedErrs(c, client.ErrCheckpointRefused)) > 0 })
	if err := reportedErrs(c, client.ErrCheckpointRefused)[0]; !errors.Is(err, client.ErrEnvelopeInvalid) {
		t.Fatalf("refused for %v, want ENVELOPE_INVALID", err)
	}
	waitFor(t, "c holds every note from the log", func() bool { return count(t, c.db, "vaultnotes") == 8 })
	waitState(t, c, client.Synced)
	row, err := c.db.Get("vaultnotes", engine.Key{"note005"})
	if err != nil || !bytes.Equal(row["secretphoto"].Blob(), photo(5)) {
		t.Fatalf("note005 on c: %v, %v", row, err)
	}

	// Pruned below the checkpoint: the fallback has no log to pull.
	clock.ms.Add(uint64(2 * time.Hour / time.Millisecond))
	if err := rl2.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := checkpointReplica(t, "d", keyring(t, key), -1)
	d.connect(t, rl2.url, "vault", "")
	waitFor(t, "d reports it cannot bootstrap", func() bool { return len(reportedErrs(d, client.ErrCheckpointRefused)) >= 2 })
	time.Sleep(300 * time.Millisecond)
	if n := len(reportedErrs(d, client.ErrCheckpointRefused)); n != 2 {
		t.Fatalf("d reported %d checkpoint refusals in one session, want 2 (no loop)", n)
	}
	if st := d.c.State().State; st == client.Synced {
		t.Fatal("d reads Synced without the data")
	}
}
