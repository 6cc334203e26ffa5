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

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
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
	if errs := reportedErrs(c, client.ErrCheckpointRefused); len(errs) != 0 {
		t.Fatalf("c refused a checkpoint: %v", errs)
	}

	// A device with a wrong key: the checkpoint does not open (the log
	// below it is gone), so it holds it (DECRYPT_FAILED), applies
	// nothing, and bootstraps once given the right key.
	e := checkpointReplica(t, "e", keyring(t, seal.GenerateKey()), -1)
	e.connect(t, rl.url, "vault", "")
	waitFor(t, "DECRYPT_FAILED on e", func() bool { return len(reportedErrs(e, client.ErrDecryptFailed)) > 0 })
	time.Sleep(300 * time.Millisecond)
	if n := len(reportedErrs(e, client.ErrDecryptFailed)); n != 1 || count(t, e.db, "vaultnotes") != 0 {
		t.Fatalf("e: DECRYPT_FAILED reported %d times, %d notes applied; want once, none", n, count(t, e.db, "vaultnotes"))
	}
	if errs := reportedErrs(e, client.ErrCheckpointRefused); len(errs) != 0 {
		t.Fatalf("e refused the checkpoint for a key it lacks: %v", errs)
	}
	if err := e.c.SetSealer(keyring(t, key)); err != nil {
		t.Fatal(err)
	}
	converged(t, a, e)
}

// TestE2ESealedCheckpointKeepsOwnAfter: a device whose cursor the relay
// pruned while its own later transactions were acknowledged bootstraps
// again from the newest sealed checkpoint, replacing (SNAPSHOT_REQUIRED at
// its own cursor). That checkpoint stands for the log up to its cursor
// only; the device's own transactions the relay acknowledged after it
// must survive: the replacing apply drops own facts the snapshot lacks up
// to the sent watermark, and the relay leaves a device's own ChangeSets
// out of what it sends it, unless asked back. (TestE2ESealedCheckpointBootstrap
// lost them about one run in four under load, when a's reconnect raced b's
// next upload.) Since wire version 9 an acknowledgment moves a sole
// writer's cursor, so a's cursor lags only when its acknowledged entries
// did not continue it (another device's entries between, not pulled yet)
// as its connection ended: the test stands for that by putting back the
// cursor and chain value a stored after its first write.
func TestE2ESealedCheckpointKeepsOwnAfter(t *testing.T) {
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
	waitState(t, a, client.Synced)
	waitState(t, b, client.Synced)
	var ns, early, earlyChain []byte
	for i := range 10 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
		if i == 0 {
			ns = state(t, a, "sync:last#vault")
			early, earlyChain = state(t, a, string(ns)+":cursor"), state(t, a, string(ns)+":chain")
		}
	}
	converged(t, a, b)
	waitFor(t, "b uploaded a checkpoint", func() bool { n, c := uploaded(b); return n > 0 && c >= 10 })
	b.c.Disconnect() // uploads no newer checkpoint

	clock.ms.Add(uint64(2 * time.Hour / time.Millisecond))
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 13; i++ { // after the checkpoint's cursor
		writeNote(t, a, i)
	}
	waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	a.c.Disconnect()
	waitState(t, a, client.Disconnected)
	for k, v := range map[string][]byte{":cursor": early, ":chain": earlyChain} {
		if err := a.db.SetState(string(ns)+k, v); err != nil {
			t.Fatal(err)
		}
	}
	a.connect(t, rl.url, "vault", "") // pulls from its pruned cursor: SNAPSHOT_REQUIRED
	waitFor(t, "a bootstrapped again", func() bool { return snapshotRows(a) > 0 })
	waitState(t, a, client.Synced)
	b.connect(t, rl.url, "vault", "")
	converged(t, a, b)
	if n := count(t, a.db, "vaultnotes"); n != 13 {
		t.Fatalf("a holds %d notes, want 13", n)
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

// cutSocket is a client Socket over coder/websocket that drops the
// connection after it has delivered cut checkpoint_part frames (cut 0:
// never).
type cutSocket struct {
	c     *websocket.Conn
	cut   int32
	parts atomic.Int32
}

func (s *cutSocket) Read(ctx context.Context) (bool, []byte, error) {
	typ, b, err := s.c.Read(ctx)
	if err != nil || !wsframe.Fits(typ, b) {
		return false, nil, err
	}
	if bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"checkpoint_part"`)) {
		if n := s.parts.Add(1); s.cut > 0 && n > s.cut {
			_ = s.c.CloseNow()
			return false, nil, errors.New("test: connection cut during the checkpoint")
		}
	}
	return true, b, nil
}

func (s *cutSocket) Write(ctx context.Context, b []byte) error {
	return s.c.Write(ctx, wsframe.Type(b), b)
}
func (s *cutSocket) Close(code int, reason string) error {
	return s.c.Close(websocket.StatusCode(code), reason)
}
func (s *cutSocket) CloseNow() error { return s.c.CloseNow() }

// TestE2ESealedCheckpointResume: a bootstrap from a sealed checkpoint cut
// after its first table resumes at the next session from the part after
// that table (the relay sends the header, the schema and the parts from
// there, not the parts already applied), and the device ends with every
// row, its progress reported.
func TestE2ESealedCheckpointResume(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	clock := &msClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rl := startRelayClock(t, dir, clock, time.Hour)
	key := seal.GenerateKey()
	schema := &model.Schema{}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		schema.Tables = append(schema.Tables, model.TableDef{Name: name, Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText}, {Name: "body", Type: model.KindText}}})
	}
	open := func(name string, every int, dial client.DialFunc) *replica {
		return newReplica(t, name, schema, engine.Options{}, client.Options{Sealer: keyring(t, key), BackoffBase: 50 * time.Millisecond,
			CheckpointChanges: every, Dial: dial})
	}
	a := open("a", -1, nil)
	a.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	for _, table := range []string{"alpha", "beta", "gamma"} {
		for k := range 5 { // 5 transactions of 500 rows a table: 3 rows chunks each
			if _, err := a.db.Transact(func(tx *engine.Tx) error {
				for i := range 500 {
					if _, err := tx.Insert(table, map[string]any{"id": fmt.Sprintf("%s-%d-%03d", table, k, i), "body": "sealed row body"}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	b := open("b", 16, nil) // schema + 15: one checkpoint of everything
	b.connect(t, rl.url, "vault", "")
	// At 16 or after: b's own schema transactions follow a's in the log,
	// and b's cursor follows its acknowledged pushes (wire version 9).
	waitFor(t, "b uploaded the checkpoint", func() bool { _, c := uploaded(b); return c >= 16 })
	puts := metric(t, rl, `replica_relay_messages_received_total{type="put_checkpoint"}`)

	var dials atomic.Int32
	var second atomic.Pointer[cutSocket]
	dial := func(ctx context.Context, url string, _ []string, limit int64) (client.Socket, error) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(limit)
		s := &cutSocket{c: c}
		switch dials.Add(1) {
		case 1:
			s.cut = 8 // header, schema, alpha's start, 3 rows chunks, end; then into beta
		case 2:
			second.Store(s)
		}
		return s, nil
	}
	c := open("c", -1, dial)
	c.connect(t, rl.url, "vault", "")
	converged(t, a, c)
	if n := count(t, c.db, "gamma"); n != 2500 {
		t.Fatalf("c holds %d gamma rows, want 2500", n)
	}
	if dials.Load() < 2 {
		t.Fatal("the connection was never cut")
	}
	// The resumed transfer carried the header, the schema and the parts
	// after alpha's table_end (part 6): puts − 7 + 2 of them.
	if got, want := second.Load().parts.Load(), int32(puts)-7+2; got != want {
		t.Fatalf("the resumed transfer carried %d checkpoint parts of %v, want %d", got, puts, want)
	}
}

// state is r's engine state name, which must be set.
func state(t testing.TB, r *replica, name string) []byte {
	t.Helper()
	b, err := r.db.State(name)
	if err != nil || b == nil {
		t.Fatalf("%s: state %s: %q, %v", r.name, name, b, err)
	}
	return b
}
