//go:build !js

package client

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// TestCloseEndsGoroutines: after Close, the process has no more goroutines
// than before New, whether the client was connected, waiting to reconnect
// or idle.
func TestCloseEndsGoroutines(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "ws://" + ln.Addr().String() + "/sync"
	ln.Close()

	settle := func() int {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	base := settle()
	for _, tc := range []struct {
		name string
		run  func(c *Client)
	}{
		{"idle", func(c *Client) {}},
		{"reconnecting", func(c *Client) {
			c.Connect(refused, "db1", "")
			waitCond(t, "a scheduled reconnect", func() bool { return !c.State().Retry.IsZero() })
		}},
		{"connected", func(c *Client) {
			ev := recordEvents(t, c)
			p := connectSynced(t, relay, c, ev, 0)
			expect[*wire.ApplyChanges](t, p)
		}},
	} {
		c := New(db, Options{Logger: discardLogger()})
		tc.run(c)
		c.Close()
		deadline := time.Now().Add(waitFor)
		for n := settle(); n > base; n = settle() {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: %d goroutines after Close, %d before New:\n%s", tc.name, n, base, buf[:runtime.Stack(buf, true)])
			}
		}
	}
}

// TestClosedEngine: a client whose engine was closed stops in the Error
// state instead of reconnecting forever.
func TestClosedEngine(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	db.Close()
	c.Connect(relay.url, "db1", "")
	relay.accept(t).ack(t)
	e := ev.waitState(t, Error)
	if !errors.Is(e.Status.Err, engine.ErrClosed) {
		t.Fatalf("error %v", e.Status.Err)
	}
}

// TestConnectArguments: Connect refuses what can never connect, and
// everything after Close.
func TestConnectArguments(t *testing.T) {
	db, _ := newEngine(t)
	c := newClient(t, db, Options{})
	for _, tc := range []struct{ url, db string }{
		{"", "db1"}, {"relay.example/sync", "db1"}, {"ftp://relay.example/sync", "db1"}, {"ws:///sync", "db1"},
		{"ws://relay.example/sync", ""}, {"ws://relay.example/sync", "no spaces"}, {"ws://relay.example/sync", strings.Repeat("x", 129)},
	} {
		if err := c.Connect(tc.url, tc.db, ""); err == nil {
			t.Errorf("Connect(%q, %q) accepted", tc.url, tc.db)
		}
	}
	if st := c.State(); st.State != Disconnected {
		t.Fatalf("state %s after refused Connects", st.State)
	}
	c.Close()
	if err := c.Connect("ws://relay.example/sync", "db1", ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Connect after Close: %v", err)
	}
}

// TestConnectSameTarget: Connect with the target of the running session is
// a no-op (no new connection, the state stays); another token, database or
// URL replaces it; after a fatal error the same target connects anew.
func TestConnectSameTarget(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	for i := 0; i < 3; i++ {
		if err := c.Connect(relay.url, "db1", ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("frames after repeated Connect: %v", got)
	}
	relay.noConnection(t)
	if st := c.State().State; st != Synced {
		t.Fatalf("state %v after repeated Connect", st)
	}
	// Another token is another target.
	if err := c.Connect(relay.url, "db1", "tok"); err != nil {
		t.Fatal(err)
	}
	p2 := relay.accept(t)
	expect[*wire.Handshake](t, p2)
	if err := c.Connect(relay.url, "db1", "tok"); err != nil {
		t.Fatal(err)
	}
	// A fatal error: the same target connects again.
	p2.send(t, &wire.Error{Code: wire.CodeAuthFailed, Message: "no", Fatal: true})
	ev.waitState(t, Error)
	if err := c.Connect(relay.url, "db1", "tok"); err != nil {
		t.Fatal(err)
	}
	relay.accept(t)
}
