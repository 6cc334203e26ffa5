//go:build !js

package client_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
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
		if err != nil || typ != websocket.MessageText {
			return false, nil, err
		}
		if !bytes.HasPrefix(b, []byte(`{"type":"snapshot_chunk"`)) {
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
	return s.c.Write(ctx, websocket.MessageText, b)
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
