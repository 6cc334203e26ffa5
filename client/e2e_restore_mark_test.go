//go:build !js

package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/testdir"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/wire"
)

// fixedRelay is a real relay over bbolt files in dir, served on a fixed
// loopback address, so that it can be stopped, its directory copied or
// replaced, and started again where its clients reconnect.
type fixedRelay struct {
	srv *relay.Server
	hs  *httptest.Server
}

func startRelayAt(t *testing.T, addr, dir string, retention time.Duration) *fixedRelay {
	t.Helper()
	srv, err := relay.New(relay.Config{DataDir: dir, Auth: relay.AllowAll, NoSync: true, Logger: quietLogger(), Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening on %s again: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	r := &fixedRelay{srv: srv, hs: hs}
	t.Cleanup(r.stop)
	return r
}

// stop closes the relay (its bbolt files) and its listener; connections
// are cut. Stopping twice is harmless.
func (r *fixedRelay) stop() {
	r.hs.CloseClientConnections()
	r.srv.Close()
	r.hs.Close()
}

// TestE2ERestoredRelayLostMarkAtHead: the simulator's seed 12 (with
// relay restores, no wipes), natively. Devices A, B and C sync row r
// through a relay whose retention is 200 ms; C goes offline; B deletes r.
// The relay's store is copied (its head is the deletion's cursor). The
// relay's maintenance then makes a tombstone horizon mark at that head
// and prunes the deletion; A and B reconnect, apply the mark at their
// cursor (the head) and prune it too. C, offline, updates r (after the
// deletion). The relay is restored from the copy: the same log up to the
// same head, the same chain value there, without the mark, its merged
// replica holding the tombstone. A and B reconnect at that head; C pushes
// its late update, which the relay keeps dead under the tombstone
// (delete-wins). Before wire version 8, A and B were told their history
// continues and revived r from the late cell, while the relay, C and a
// fresh device D kept r deleted, for good. Now the relay sees the horizon
// A and B applied above its marks, says "diverged", and A and B bootstrap
// again (merging the tombstone back) and repair-push: every replica holds
// the same CRDT state.
func TestE2ERestoredRelayLostMarkAtHead(t *testing.T) {
	checkNoLeaks(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	backup := filepath.Join(t.TempDir(), "backup")
	url := "ws://" + addr + "/sync"
	const retention = 200 * time.Millisecond
	rl := startRelayAt(t, addr, dir, retention)

	var rs []*replica
	for _, name := range []string{"A", "B", "C"} {
		rs = append(rs, newReplica(t, name, notesSchema(), engine.Options{}, client.Options{}))
	}
	a, b, c := rs[0], rs[1], rs[2]
	if _, err := a.db.Insert("notes", map[string]any{"id": "r", "title": "first", "n": 1}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		r.connect(t, url, "marks", "")
	}
	settled := func(rs ...*replica) func() bool {
		return func() bool {
			want := notesRows(t, rs[0].db)
			for _, r := range rs {
				if r.c.State().State != client.Synced || pending(t, r) != 0 || !slices.Equal(want, notesRows(t, r.db)) {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "A, B and C hold r", func() bool {
		_, ok := title(t, c.db, "r")
		return ok && settled(rs...)()
	})

	c.c.Disconnect()
	waitState(t, c, client.Disconnected)
	if ok, err := b.db.Delete("notes", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("B deletes r: %v %v", ok, err)
	}
	waitFor(t, "A and B lost r", func() bool {
		_, okA := title(t, a.db, "r")
		_, okB := title(t, b.db, "r")
		return !okA && !okB && settled(a, b)()
	})

	// The copy: the log up to the deletion, no mark.
	rl.stop()
	testdir.Copy(t, dir, backup)
	rl = startRelayAt(t, addr, dir, retention)

	// The mark at the head: the deletion is older than the retention. A
	// mark reaches a client with its next pull: A and B
	// reconnect and apply it at their cursor, the head.
	reconnect := func(rs ...*replica) {
		for _, r := range rs {
			r.c.Disconnect()
			waitState(t, r, client.Disconnected)
			r.connect(t, url, "marks", "")
		}
	}
	// Maintain passes over open databases: A and B open it.
	reconnect(a, b)
	waitFor(t, "A and B back", settled(a, b))
	time.Sleep(2 * retention)
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	reconnect(a, b)
	waitReport(t, e2eWait, "A and B applied the mark", func() string {
		var why []string
		for _, r := range []*replica{a, b} {
			ns, err := r.db.State("sync:last#marks")
			var h []byte
			if err == nil && ns != nil {
				h, err = r.db.State(string(ns) + ":horizon")
			}
			if err != nil {
				t.Fatal(err)
			}
			if h == nil || r.c.State().State != client.Synced {
				why = append(why, syncReport(t, r, "marks"))
			}
		}
		return strings.Join(why, "\n")
	})

	// C, offline since before the deletion, updates r: stamped after it,
	// so the cell stays dead where the tombstone is held (delete-wins)
	// and revives r where it was pruned.
	time.Sleep(5 * time.Millisecond)
	if _, err := c.db.Update("notes", engine.Key{"r"}, map[string]any{"title": "late"}); err != nil {
		t.Fatalf("C updates r offline: %v", err)
	}

	// The restore: the same head and chain value, the mark lost, the
	// tombstone held again.
	rl.stop()
	replaceDir(t, dir, backup)
	startRelayAt(t, addr, dir, retention)
	c.connect(t, url, "marks", "")
	all := []*replica{a, b, c}
	waitReport(t, e2eWait, "A, B and C synced with nothing pending", func() string {
		var why []string
		for _, r := range all {
			if r.c.State().State != client.Synced || pending(t, r) != 0 {
				why = append(why, syncReport(t, r, "marks"))
			}
		}
		return strings.Join(why, "\n")
	})
	// A write after C's, so every device has seen everything before it.
	if _, err := c.db.Insert("notes", map[string]any{"id": "z", "title": "last", "n": 9}); err != nil {
		t.Fatal(err)
	}
	d := newReplica(t, "D", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "marks", "")
	all = append(all, d)
	waitReport(t, e2eWait, "A, B, C and D hold z, synced", func() string {
		var why []string
		for _, r := range all {
			if _, ok := title(t, r.db, "z"); !ok || r.c.State().State != client.Synced || pending(t, r) != 0 {
				why = append(why, fmt.Sprintf("holds z: %v; %s", ok, syncReport(t, r, "marks")))
			}
		}
		return strings.Join(why, "\n")
	})
	want := notesRows(t, d.db)
	for _, r := range all {
		if got := notesRows(t, r.db); !slices.Equal(got, want) {
			t.Errorf("%s holds %q, D (bootstrapped from the relay) holds %q", r.name, got, want)
		}
	}
	if _, ok := title(t, d.db, "r"); ok {
		t.Errorf("D holds r: the late update revived it on the relay")
	}
	convergedCRDT(t, a, b, c, d)
	for _, r := range []*replica{a, b} {
		if n := reported(r, client.ErrRelayDiverged); n != 1 {
			t.Errorf("%s reported ErrRelayDiverged %d times, want once", r.name, n)
		}
	}
}

// snapshotCutSocket is a WebSocket that, while cut is set, drops the
// connection at the first snapshot chunk it reads (and clears cut): a
// bootstrap that fails before its header applies.
type snapshotCutSocket struct {
	c   *websocket.Conn
	cut *atomic.Bool
}

func (s *snapshotCutSocket) Read(ctx context.Context) (bool, []byte, error) {
	typ, b, err := s.c.Read(ctx)
	if err != nil || !wsframe.Fits(typ, b) {
		return false, nil, err
	}
	if bytes.HasPrefix(wire.FrameHead(b), []byte(`{"type":"snapshot_chunk"`)) && s.cut.CompareAndSwap(true, false) {
		_ = s.c.CloseNow()
		return false, nil, errors.New("test: connection cut at the snapshot's first chunk")
	}
	return true, b, nil
}

func (s *snapshotCutSocket) Write(ctx context.Context, b []byte) error {
	return s.c.Write(ctx, wsframe.Type(b), b)
}
func (s *snapshotCutSocket) Close(code int, reason string) error {
	return s.c.Close(websocket.StatusCode(code), reason)
}
func (s *snapshotCutSocket) CloseNow() error { return s.c.CloseNow() }

// TestE2ERestoredRelayLostMarkBootstrapFailed: the simulator's seed 3931
// (every fault), natively. Device A deletes its row r; the relay's store
// is copied (its head is the deletion's cursor); the relay makes a
// tombstone horizon mark at that head, and A applies it, pruning its own
// tombstone. C, offline since before the deletion, updates r. The relay
// is restored from the copy: its merged replica and its log hold A's
// deletion again, without the mark. A's handshake is answered diverged
// (the horizon it applied is above the relay's marks) and A bootstraps,
// but the transfer is cut at its first chunk; A holds facts of its own,
// so the next session pulls the log from 0 instead. The relay leaves a
// client's own ChangeSets out of a pull, so A never got its deletion
// back: C's late update (dead under the tombstone on the relay, on C and
// on a fresh device D: delete-wins) revived r on A alone, for good. Now a
// pull from 0 without a cursor of its own asks back A's own transactions
// (get_changes' ownAbove and ownUpTo), and A merges its deletion in its
// place in the log: every replica holds the same CRDT state.
func TestE2ERestoredRelayLostMarkBootstrapFailed(t *testing.T) {
	checkNoLeaks(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	backup := filepath.Join(t.TempDir(), "backup")
	url := "ws://" + addr + "/sync"
	const retention = 200 * time.Millisecond
	rl := startRelayAt(t, addr, dir, retention)

	var cut atomic.Bool
	dial := func(ctx context.Context, url string, _ []string, limit int64) (client.Socket, error) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(limit)
		return &snapshotCutSocket{c: c, cut: &cut}, nil
	}
	a := newReplica(t, "A", notesSchema(), engine.Options{}, client.Options{Dial: dial, BackoffBase: 50 * time.Millisecond})
	c := newReplica(t, "C", notesSchema(), engine.Options{}, client.Options{})
	// Row k keeps A holding facts of its own once its deletion of r is
	// pruned.
	for _, id := range []string{"r", "k"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "title": "first", "n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	a.connect(t, url, "marks", "")
	c.connect(t, url, "marks", "")
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
	waitFor(t, "A and C hold r", func() bool {
		_, ok := title(t, c.db, "r")
		return ok && synced(a, c)()
	})
	c.c.Disconnect()
	waitState(t, c, client.Disconnected)

	// A deletes its row; the copy holds the log up to the deletion.
	if ok, err := a.db.Delete("notes", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("A deletes r: %v %v", ok, err)
	}
	waitFor(t, "A pushed its deletion", synced(a))
	rl.stop()
	testdir.Copy(t, dir, backup)
	rl = startRelayAt(t, addr, dir, retention)

	// The mark at the head, past the deletion; A applies it with its
	// next pull and prunes its own tombstone.
	reconnect := func(r *replica) {
		r.c.Disconnect()
		waitState(t, r, client.Disconnected)
		r.connect(t, url, "marks", "")
	}
	reconnect(a) // Maintain passes over open databases
	waitFor(t, "A back", synced(a))
	time.Sleep(2 * retention)
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	reconnect(a)
	waitReport(t, e2eWait, "A applied the mark", func() string {
		ns, err := a.db.State("sync:last#marks")
		var h []byte
		if err == nil && ns != nil {
			h, err = a.db.State(string(ns) + ":horizon")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h == nil || a.c.State().State != client.Synced {
			return syncReport(t, a, "marks")
		}
		return ""
	})

	// C, offline since before the deletion, updates r: a cell after the
	// deletion, dead where the tombstone is held (delete-wins).
	time.Sleep(5 * time.Millisecond)
	if _, err := c.db.Update("notes", engine.Key{"r"}, map[string]any{"title": "late"}); err != nil {
		t.Fatalf("C updates r offline: %v", err)
	}

	// The restore; A's bootstrap after "diverged" is cut at its first
	// chunk, and A pulls the log from 0 in the next session.
	a.c.Disconnect()
	waitState(t, a, client.Disconnected)
	rl.stop()
	replaceDir(t, dir, backup)
	startRelayAt(t, addr, dir, retention)
	cut.Store(true)
	a.connect(t, url, "marks", "")
	waitFor(t, "A's bootstrap cut", func() bool { return !cut.Load() })
	c.connect(t, url, "marks", "")
	all := []*replica{a, c}
	waitReport(t, e2eWait, "A and C synced with nothing pending", func() string {
		var why []string
		for _, r := range all {
			if !synced(r)() {
				why = append(why, syncReport(t, r, "marks"))
			}
		}
		return strings.Join(why, "\n")
	})
	// A write after C's, so every device has seen everything before it.
	if _, err := c.db.Insert("notes", map[string]any{"id": "z", "title": "last", "n": 9}); err != nil {
		t.Fatal(err)
	}
	d := newReplica(t, "D", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "marks", "")
	all = append(all, d)
	waitReport(t, e2eWait, "A, C and D hold z, synced", func() string {
		var why []string
		for _, r := range all {
			if _, ok := title(t, r.db, "z"); !ok || !synced(r)() {
				why = append(why, fmt.Sprintf("holds z: %v; %s", ok, syncReport(t, r, "marks")))
			}
		}
		return strings.Join(why, "\n")
	})
	if n := reported(a, client.ErrRelayDiverged); n != 1 {
		t.Errorf("A reported ErrRelayDiverged %d times, want once", n)
	}
	for _, r := range all {
		if tl, ok := title(t, r.db, "r"); ok {
			t.Errorf("%s holds r (%q): C's late update revived it there", r.name, tl)
		}
	}
	convergedCRDT(t, all...)
}
