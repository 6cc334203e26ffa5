//go:build !js

package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Adversarial tests of sealed databases: a relay (here a real one, with a
// man in the middle on the client's socket standing for a malicious
// relay) that tries to make a sealed client apply content no key
// authenticated.

// forgingSocket is a client Socket over coder/websocket that replaces the
// plain snapshot the relay streams (snapshot_chunk frames) with forged
// frames, as a malicious relay of a sealed database could.
type forgingSocket struct {
	c       *websocket.Conn
	forged  [][]byte
	mu      sync.Mutex
	pending [][]byte
	swapped *atomic.Int32 // snapshots replaced
}

func (s *forgingSocket) Read(ctx context.Context) (bool, []byte, error) {
	s.mu.Lock()
	if len(s.pending) > 0 {
		b := s.pending[0]
		s.pending = s.pending[1:]
		s.mu.Unlock()
		return true, b, nil
	}
	s.mu.Unlock()
	for {
		typ, b, err := s.c.Read(ctx)
		if err != nil || !wsframe.Fits(typ, b) {
			return false, nil, err
		}
		if !bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"snapshot_chunk"`)) {
			return true, b, nil
		}
		if bytes.Contains(b, []byte(`"type":"header"`)) {
			s.swapped.Add(1)
			s.mu.Lock()
			s.pending = append([][]byte(nil), s.forged[1:]...)
			s.mu.Unlock()
			return true, s.forged[0], nil
		}
		// The relay's own schema and footer: dropped.
	}
}

func (s *forgingSocket) Write(ctx context.Context, b []byte) error {
	return s.c.Write(ctx, wsframe.Type(b), b)
}
func (s *forgingSocket) Close(code int, reason string) error {
	return s.c.Close(websocket.StatusCode(code), reason)
}
func (s *forgingSocket) CloseNow() error { return s.c.CloseNow() }

// forgedSnapshot returns the snapshot_chunk frames of a plain engine
// holding a row the attacker chose, stamped as the relay's empty snapshot
// would be (cursor 0, horizon 0).
func forgedSnapshot(t *testing.T) [][]byte {
	t.Helper()
	src := newReplica(t, "forger", vaultSchema(), engine.Options{}, client.Options{})
	if _, err := src.db.Upsert("vaultnotes", map[string]any{"id": "forged", "secretcaption": "written by the relay", "secretcount": 666}); err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for chunk, err := range src.db.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := wire.Encode(&wire.SnapshotChunk{Chunk: chunk})
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	return frames
}

// TestE2ESealedForgedPlainSnapshot: a relay of a sealed database cannot
// write into a sealed device's replica by streaming a plaintext snapshot
// (snapshot_chunk frames) in answer to get_snapshot: the only plaintext
// snapshot a sealed client takes is the empty one at cursor 0 a relay
// without a checkpoint streams. The forged row never lands, and the
// violation is reported.
func TestE2ESealedForgedPlainSnapshot(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key := seal.GenerateKey()
	forged := forgedSnapshot(t)
	var swapped atomic.Int32
	dial := func(ctx context.Context, url string, _ []string, limit int64) (client.Socket, error) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(limit)
		return &forgingSocket{c: c, forged: forged, swapped: &swapped}, nil
	}
	v := newReplica(t, "victim", vaultSchema(), engine.Options{}, client.Options{Sealer: keyring(t, key), BackoffBase: 50 * time.Millisecond, Dial: dial})
	v.c.RequestSnapshot()
	v.connect(t, rl.url, "vault", "")
	waitFor(t, "the forged snapshot streamed", func() bool { return swapped.Load() >= 1 })
	waitFor(t, "the forged row applied or the forgery reported", func() bool {
		_, err := v.db.Get("vaultnotes", engine.Key{"forged"})
		return err == nil || len(reportedErrs(v, client.ErrProtocol)) > 0
	})
	time.Sleep(200 * time.Millisecond)
	if _, err := v.db.Get("vaultnotes", engine.Key{"forged"}); err == nil {
		t.Fatal("a sealed client applied a row from a plaintext snapshot the relay forged")
	}
	if n := count(t, v.db, "vaultnotes"); n != 0 {
		t.Fatalf("the victim holds %d rows no key authenticated", n)
	}
	if len(reportedErrs(v, client.ErrProtocol)) == 0 {
		t.Fatal("the forged snapshot was not reported")
	}
}

// TestE2ESealedCheckpointFromAnotherDatabase: a relay that serves a
// bootstrapping device of database "vault" the sealed checkpoint of
// another database sealed with the same key ("vault2": its record and
// parts copied into vault's file) does not get its rows applied: the
// associated data binds each part to its database, so the device refuses
// the checkpoint (ENVELOPE_INVALID), falls back to vault's log, and ends
// with vault's rows only.
func TestE2ESealedCheckpointFromAnotherDatabase(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	clock := &msClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rl := startRelayClock(t, dir, clock, time.Hour)
	key := seal.GenerateKey()
	// Writers a and o; their databases' other devices ua and uo upload
	// checkpoints.
	a := checkpointReplica(t, "a", keyring(t, key), -1)
	o := checkpointReplica(t, "o", keyring(t, key), -1)
	ua := checkpointReplica(t, "ua", keyring(t, key), 4)
	uo := checkpointReplica(t, "uo", keyring(t, key), 4)
	for _, r := range []*replica{a, ua} {
		r.connect(t, rl.url, "vault", "")
	}
	for _, r := range []*replica{o, uo} {
		r.connect(t, rl.url, "vault2", "")
	}
	for _, r := range []*replica{a, o, ua, uo} {
		waitState(t, r, client.Synced)
	}
	for i := range 6 {
		writeNote(t, a, i)
		writeNote(t, o, 100+i)
		waitFor(t, "pushed", func() bool { return pending(t, a) == 0 && pending(t, o) == 0 })
	}
	converged(t, a, ua)
	converged(t, o, uo)
	waitFor(t, "both uploaded a checkpoint", func() bool {
		na, _ := uploaded(ua)
		no, _ := uploaded(uo)
		return na > 0 && no > 0
	})
	for _, r := range []*replica{a, o, ua, uo} {
		r.c.Disconnect()
	}
	rl.stop()

	// The malicious relay: vault2's checkpoint in vault's file.
	var meta []byte
	parts := map[string][]byte{}
	read := func(tx kv.Tx) error {
		v, err := tx.Get("relay", []byte("checkpoint"))
		if err != nil {
			return err
		}
		meta = append([]byte(nil), v...)
		return tx.Scan("checkpoint_parts", kv.Range{}, func(k, v []byte) bool {
			parts[string(k)] = append([]byte(nil), v...)
			return true
		})
	}
	write := func(tx kv.Tx) error {
		if err := tx.DeleteRange("checkpoint_parts", nil, nil); err != nil {
			return err
		}
		for k, v := range parts {
			if err := tx.Put("checkpoint_parts", []byte(k), v); err != nil {
				return err
			}
		}
		return tx.Put("relay", []byte("checkpoint"), meta)
	}
	for _, step := range []struct {
		file string
		fn   func(kv.Tx) error
	}{{"vault2.db", read}, {"vault.db", write}} {
		st, err := boltkv.Open(filepath.Join(dir, step.file), relay.StoreBuckets(), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = st.Update(step.fn)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: %v", step.file, err)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("vault2's checkpoint has %d parts", len(parts))
	}

	rl2 := startRelayClock(t, dir, clock, time.Hour)
	c := checkpointReplica(t, "c", keyring(t, key), -1)
	c.connect(t, rl2.url, "vault", "")
	waitFor(t, "c refused the checkpoint", func() bool { return len(reportedErrs(c, client.ErrCheckpointRefused)) > 0 })
	if err := reportedErrs(c, client.ErrCheckpointRefused)[0]; !errors.Is(err, client.ErrEnvelopeInvalid) {
		t.Fatalf("refused for %v, want ENVELOPE_INVALID", err)
	}
	waitFor(t, "c holds vault's notes from the log", func() bool { return count(t, c.db, "vaultnotes") >= 6 })
	waitState(t, c, client.Synced)
	if n := count(t, c.db, "vaultnotes"); n != 6 {
		t.Fatalf("c holds %d notes, want vault's 6 (none of vault2's)", n)
	}
	if _, err := c.db.Get("vaultnotes", engine.Key{"note100"}); err == nil {
		t.Fatal("c applied a row of another database's checkpoint")
	}
}

// lockedBuffer is a log sink safe for the relay's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// TestE2ESealedRelayLogsAndMetrics: the relay's logs at debug level and its
// /metrics, over a sealed sync with a checkpoint upload, a bootstrap from
// it, and a plain client of the sealed database refused at its handshake,
// show none of the plaintext (table and column names, values, blobs): a
// regression guard for what the relay logs, beside TestE2ESealedSync's
// for its files.
func TestE2ESealedRelayLogsAndMetrics(t *testing.T) {
	checkNoLeaks(t)
	logs := &lockedBuffer{}
	srv, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	rl := &liveRelay{srv: srv}
	rl.hs = httptest.NewServer(srv.Handler())
	rl.url = "ws" + strings.TrimPrefix(rl.hs.URL, "http") + "/sync"
	t.Cleanup(rl.stop)

	key := seal.GenerateKey()
	a := checkpointReplica(t, "a", keyring(t, key), -1)
	b := checkpointReplica(t, "b", keyring(t, key), 3)
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	waitState(t, b, client.Synced)
	for i := range 6 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	}
	converged(t, a, b)
	waitFor(t, "b uploaded a checkpoint", func() bool { n, _ := uploaded(b); return n > 0 })
	c := checkpointReplica(t, "c", keyring(t, key), -1)
	c.connect(t, rl.url, "vault", "")
	converged(t, a, b, c)
	// A plain client of the sealed database is refused at its handshake
	// (its rows never leave it).
	p := newReplica(t, "p", vaultSchema(), engine.Options{}, client.Options{})
	writeNote(t, p, 50)
	p.connect(t, rl.url, "vault", "")
	waitState(t, p, client.Error)

	resp, err := http.Get(rl.hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{a, b, c, p} {
		r.c.Disconnect()
	}
	rl.stop()
	out := logs.Bytes()
	if !bytes.Contains(out, []byte("sealed checkpoint stored")) {
		t.Fatalf("the relay's debug log is not the one expected (%d bytes)", len(out))
	}
	needles := [][]byte{[]byte("vaultnotes"), []byte("secretcaption"), []byte("secretphoto"), []byte("secretcount"),
		[]byte("Plaintext-Caption"), []byte("900003"), []byte("note003"), []byte("note050")}
	for i := range 6 {
		needles = append(needles, []byte(base64.StdEncoding.EncodeToString(photo(i))[:24]), photo(i)[:24])
	}
	for name, data := range map[string][]byte{"logs": out, "metrics": metrics} {
		for _, n := range needles {
			if bytes.Contains(data, n) {
				t.Errorf("the relay's %s contain the plaintext %q", name, n)
			}
		}
	}
}
