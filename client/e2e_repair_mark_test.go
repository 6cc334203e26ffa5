//go:build !js

package client_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/wire"
)

// repairCutSocket is a WebSocket that, while cut is set, drops the
// connection at the first apply_result it reads after it wrote a repair
// push carrying row pk and then another repair push (and clears cut).
type repairCutSocket struct {
	frameCutSocket
	pk    string
	stage int // 1: the row's repair push written; 2: a later one
}

func (s *repairCutSocket) Write(ctx context.Context, b []byte) error {
	if s.cut.Load() && bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"apply_changes"`)) && bytes.Contains(b, []byte(`"repair":true`)) {
		switch {
		case s.stage == 0 && pushesPK(b, s.pk):
			s.stage = 1
		case s.stage == 1:
			s.stage = 2
		}
	}
	return s.frameCutSocket.Write(ctx, b)
}

// pushesPK reports whether the apply_changes frame b carries a fact of the
// row whose one-column primary key has the wire JSON pk.
func pushesPK(b []byte, pk string) bool {
	m, err := wire.Decode(b)
	a, ok := m.(*wire.ApplyChanges)
	if err != nil || !ok {
		return false
	}
	for _, cs := range a.ChangeSets {
		for _, c := range cs.Changes {
			if v, err := wire.MarshalValue(c.PK[0]); err == nil && len(c.PK) == 1 && string(v) == pk {
				return true
			}
		}
	}
	return false
}

func (s *repairCutSocket) Read(ctx context.Context) (bool, []byte, error) {
	typ, b, err := s.c.Read(ctx)
	if err != nil || !wsframe.Fits(typ, b) {
		return false, nil, err
	}
	if s.stage == 2 && bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"apply_result"`)) && s.cut.CompareAndSwap(true, false) {
		_ = s.c.CloseNow()
		return false, nil, fmt.Errorf("test: connection cut at apply_result after the repair push of row %s", s.pk)
	}
	return true, b, nil
}

// repairCutDial dials sockets that cut as repairCutSocket says.
func repairCutDial(cut *atomic.Bool, pk string) client.DialFunc {
	return func(ctx context.Context, url string, _ []string, limit int64) (client.Socket, error) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(limit)
		return &repairCutSocket{frameCutSocket: frameCutSocket{c: c, cut: cut}, pk: pk}, nil
	}
}

// TestE2ERepairRestartsAtMark: the simulator's seed 7143 (every fault),
// natively. Row a of A is deleted by A and written late (dead, under
// delete-wins) by W; B holds the tombstone and W's cell, facts of other
// sites. The relay's data directory is wiped; A and W stay away. B
// reconnects and repair-pushes, one row a page: row a's page is
// acknowledged (the relay appends it: B pulls it, in that session), and
// the session is cut while the next page is in flight, the stored
// position after row a. The relay's maintenance makes a mark at its head
// that prunes row a's tombstone and, delete-wins, the whole row. B
// reconnects: in the new session it does not know it pulled row a's facts
// from the log, so the mark keeps them (the relay may not have held
// them), and the repair goes on from the stored position, after row a.
// Before, nothing pushed those facts again: B kept row a's tombstone and
// cell for good while the relay and a fresh device D had pruned the row.
// Now a mark that keeps facts of other sites during a repair starts the
// repair again from the beginning: the kept facts reach the relay after
// the mark, which appends them, and every replica holds them.
func TestE2ERepairRestartsAtMark(t *testing.T) {
	checkNoLeaks(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	url := "ws://" + addr + "/sync"
	const retention = 200 * time.Millisecond
	rl := startRelayAt(t, addr, dir, retention)

	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{})
	w := newReplica(t, "W", notesSchema(), engine.Options{}, client.Options{})
	var cut atomic.Bool
	b := newReplica(t, "B", notesSchema(), engine.Options{}, client.Options{
		Dial: repairCutDial(&cut, `"a"`), PushLimit: 1, BackoffBase: time.Hour, BackoffMax: time.Hour,
	})
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "title": "first", "n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*replica{a, w, b} {
		r.connect(t, url, "rmark", "")
	}
	synced := func(rs ...*replica) func() bool {
		return func() bool {
			for _, r := range rs {
				if r.c.State().State != client.Synced || pending(t, r) != 0 {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "A, W and B hold d", func() bool {
		_, okW := title(t, w.db, "d")
		_, okB := title(t, b.db, "d")
		return okW && okB && synced(a, w, b)()
	})

	// A deletes a; W, offline, writes it late.
	w.c.Disconnect()
	waitState(t, w, client.Disconnected)
	if ok, err := a.db.Delete("notes", engine.Key{"a"}); err != nil || !ok {
		t.Fatalf("A deletes a: %v %v", ok, err)
	}
	waitFor(t, "B lost a", func() bool {
		_, ok := title(t, b.db, "a")
		return !ok && synced(a, b)()
	})
	if _, err := w.db.Update("notes", engine.Key{"a"}, map[string]any{"title": "late"}); err != nil {
		t.Fatal(err)
	}
	w.connect(t, url, "rmark", "")
	convergedCRDT(t, a, w, b)
	for _, r := range []*replica{a, w, b} {
		r.c.Disconnect()
		waitState(t, r, client.Disconnected)
	}

	// The wipe. D, new, keeps the database open on the relay.
	rl.stop()
	replaceDir(t, dir, "")
	rl = startRelayAt(t, addr, dir, retention)
	d := newReplica(t, "D", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "rmark", "")
	waitFor(t, "D synced", synced(d))

	// B's repair: row a's page acknowledged, cut at the next one's answer.
	cut.Store(true)
	b.connect(t, url, "rmark", "")
	waitFor(t, "B cut during its repair", func() bool { return !cut.Load() })
	b.c.Disconnect()
	waitState(t, b, client.Disconnected)
	ns, err := b.db.State("sync:last#rmark")
	if err != nil || ns == nil {
		t.Fatalf("B's last log: %q %v", ns, err)
	}
	if pos, err := b.db.State(string(ns) + ":repair"); err != nil || len(pos) <= 1 {
		t.Fatalf("B's stored repair position %q (%v): want one past row a", pos, err)
	}

	// The mark at the head: A's deletion is older than the retention.
	time.Sleep(2 * retention)
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}

	b.connect(t, url, "rmark", "")
	waitFor(t, "B synced, its repair done", func() bool {
		pos, err := b.db.State(string(ns) + ":repair")
		return err == nil && pos == nil && synced(b, d)()
	})
	if _, err := d.db.Insert("notes", map[string]any{"id": "e", "title": "after", "n": 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B holds e", func() bool {
		_, ok := title(t, b.db, "e")
		return ok && synced(b, d)()
	})
	if _, ok := title(t, b.db, "a"); ok {
		t.Fatalf("B holds a live")
	}
	convergedCRDT(t, b, d)
}
