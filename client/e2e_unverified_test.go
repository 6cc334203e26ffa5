//go:build !js

package client_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/testdir"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/wire"
)

// frameCutSocket is a WebSocket that, while cut is set, drops the connection
// at the first frame of type at (and clears cut); with after set, only at
// one that follows a frame of type after.
type frameCutSocket struct {
	c         *websocket.Conn
	cut       *atomic.Bool
	at, after string
	seen      bool
}

func (s *frameCutSocket) Read(ctx context.Context) (bool, []byte, error) {
	typ, b, err := s.c.Read(ctx)
	if err != nil || !wsframe.Fits(typ, b) {
		return false, nil, err
	}
	if s.after == "" || bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"`+s.after+`"`)) {
		s.seen = true
	}
	if s.seen && bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"`+s.at+`"`)) && s.cut.CompareAndSwap(true, false) {
		_ = s.c.CloseNow()
		return false, nil, fmt.Errorf("test: connection cut at %s", s.at)
	}
	return true, b, nil
}

// cutDial dials sockets that cut as frameCutSocket says.
func cutDial(cut *atomic.Bool, at, after string) client.DialFunc {
	return func(ctx context.Context, url string, _ []string, limit int64) (client.Socket, error) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(limit)
		return &frameCutSocket{c: c, cut: cut, at: at, after: after}, nil
	}
}

func (s *frameCutSocket) Write(ctx context.Context, b []byte) error {
	return s.c.Write(ctx, wsframe.Type(b), b)
}
func (s *frameCutSocket) Close(code int, reason string) error {
	return s.c.Close(websocket.StatusCode(code), reason)
}
func (s *frameCutSocket) CloseNow() error { return s.c.CloseNow() }

// TestE2ERestoredRelayUnverifiedCursor: the simulator's seed 4297 (every
// fault), natively. Device A writes rows r and k through a relay; B syncs
// them and goes offline; the relay's store is copied (head H). A writes
// three more rows (cursors H+1…H+3). A new device D bootstraps from a
// snapshot at H+3, but its connection is cut at snapshot_complete, before
// any pull: D stores cursor H+3 without the log's chain value there. The
// relay is restored from the copy (head H, A's three rows lost; A stays
// away). B, back at H (its history continues), pushes its deletion of r
// (H+1) and four inserts (H+2…H+5): the log has grown past D's cursor with
// other entries. Before wire version 10, D's handshake presented H+3
// without a chain value, the relay said nothing, and D pulled from H+3:
// B's deletion at H+1 never reached it, and D kept r for good. Now the
// relay answers "unverified", D bootstraps again (merging: it keeps A's
// rows the relay lost, and repair-pushes them) and holds what B holds.
func TestE2ERestoredRelayUnverifiedCursor(t *testing.T) {
	checkNoLeaks(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	backup := filepath.Join(t.TempDir(), "backup")
	url := "ws://" + addr + "/sync"
	rl := startRelayAt(t, addr, dir, 0)

	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{})
	b := newReplica(t, "B", notesSchema(), engine.Options{}, client.Options{})
	for _, id := range []string{"r", "k"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "title": "first", "n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	a.connect(t, url, "unv", "")
	b.connect(t, url, "unv", "")
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
	waitFor(t, "A and B hold r", func() bool {
		_, ok := title(t, b.db, "r")
		return ok && synced(a, b)()
	})
	b.c.Disconnect()
	waitState(t, b, client.Disconnected)

	// The copy: the log up to A's rows.
	rl.stop()
	testdir.Copy(t, dir, backup)
	rl = startRelayAt(t, addr, dir, 0)

	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "title": "lost", "n": 2}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "A pushed its rows", synced(a))
	a.c.Disconnect()
	waitState(t, a, client.Disconnected)

	// D bootstraps at the head; its first pull is cut.
	var cut atomic.Bool
	cut.Store(true)
	dial := cutDial(&cut, "snapshot_complete", "")
	d := newReplica(t, "D", notesSchema(), engine.Options{}, client.Options{Dial: dial, BackoffBase: time.Hour})
	d.connect(t, url, "unv", "")
	waitFor(t, "D bootstrapped, cut at snapshot_complete", func() bool {
		_, ok := title(t, d.db, "a3")
		return ok && !cut.Load()
	})
	d.c.Disconnect()
	waitState(t, d, client.Disconnected)
	ns, err := d.db.State("sync:last#unv")
	if err != nil || ns == nil {
		t.Fatalf("D's last log: %q %v", ns, err)
	}
	if ch, err := d.db.State(string(ns) + ":chain"); err != nil || ch != nil {
		t.Fatalf("D holds a chain value %q (%v): the cut came too late", ch, err)
	}

	// The restore: head H again. B (offline, its cursor H) deletes r and
	// inserts four rows; back, its history continues and its pushes
	// grow the log past D's cursor.
	rl.stop()
	replaceDir(t, dir, backup)
	startRelayAt(t, addr, dir, 0)
	if ok, err := b.db.Delete("notes", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("B deletes r: %v %v", ok, err)
	}
	for i := range 4 {
		if _, err := b.db.Insert("notes", map[string]any{"id": fmt.Sprintf("b%d", i), "title": "after", "n": 3}); err != nil {
			t.Fatal(err)
		}
	}
	b.connect(t, url, "unv", "")
	waitFor(t, "B pushed its writes", synced(b))

	d.connect(t, url, "unv", "")
	waitReport(t, e2eWait, "D holds B's rows, synced", func() string {
		if _, ok := title(t, d.db, "b3"); !ok || d.c.State().State != client.Synced || pending(t, d) != 0 {
			return syncReport(t, d, "unv")
		}
		return ""
	})
	if _, ok := title(t, d.db, "r"); ok {
		t.Fatalf("D holds r: B's deletion, appended below D's cursor in the restored log, never reached it")
	}
	waitReport(t, e2eWait, "B holds A's rows from D's repair, synced", func() string {
		if _, ok := title(t, b.db, "a3"); !ok || b.c.State().State != client.Synced || pending(t, b) != 0 {
			return syncReport(t, b, "unv")
		}
		return ""
	})
	if got, want := notesRows(t, d.db), notesRows(t, b.db); !slices.Equal(got, want) {
		t.Errorf("D holds %q, B holds %q", got, want)
	}
	convergedCRDT(t, b, d)
	if n := reported(d, client.ErrRelayDiverged); n != 1 {
		t.Errorf("D reported ErrRelayDiverged %d times, want once", n)
	}
}

// TestE2ESnapshotCompleteStoresChain: the simulator's seed 4241. A device
// that bootstrapped and whose catch-up pull never answered (cut here; a
// page it could not apply yet, clock drift, in the simulator) kept the
// snapshot's cursor without the log's chain value, so the relay judged it
// "unverified" at the next handshake and the device bootstrapped again
// for nothing. snapshot_complete states the chain value at the cursor the
// client pulls from (wire version 10): the device stores it with its
// cursor, and the next handshake is answered "continues", with no second
// bootstrap and no RELAY_DIVERGED report.
func TestE2ESnapshotCompleteStoresChain(t *testing.T) {
	checkNoLeaks(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	url := "ws://" + addr + "/sync"
	startRelayAt(t, addr, dir, 0)
	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{})
	if _, err := a.db.Insert("notes", map[string]any{"id": "r", "title": "first", "n": 1}); err != nil {
		t.Fatal(err)
	}
	a.connect(t, url, "cc", "")
	waitFor(t, "A pushed r", func() bool { return a.c.State().State == client.Synced && pending(t, a) == 0 })

	var cut atomic.Bool
	cut.Store(true)
	d := newReplica(t, "D", notesSchema(), engine.Options{}, client.Options{Dial: cutDial(&cut, "changes", "snapshot_complete"), BackoffBase: time.Hour})
	d.connect(t, url, "cc", "")
	waitFor(t, "D bootstrapped, its first pull cut", func() bool {
		_, ok := title(t, d.db, "r")
		return ok && !cut.Load()
	})
	d.c.Disconnect()
	waitState(t, d, client.Disconnected)
	ns, err := d.db.State("sync:last#cc")
	if err != nil || ns == nil {
		t.Fatalf("D's last log: %q %v", ns, err)
	}
	if ch, err := d.db.State(string(ns) + ":chain"); err != nil || ch == nil {
		t.Fatalf("D stored no chain value with the snapshot's cursor (%v)", err)
	}
	d.connect(t, url, "cc", "")
	waitFor(t, "D synced", func() bool { return d.c.State().State == client.Synced })
	if n := reported(d, client.ErrRelayDiverged); n != 0 {
		t.Errorf("D reported ErrRelayDiverged %d times: its snapshot's cursor was judged without its chain value", n)
	}
}
