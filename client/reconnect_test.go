//go:build !js

package client

import (
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/wire"
)

// quietOptions are the options of fake-clock tests: keepalive and
// handshake timeouts far away from the delays under test.
func quietOptions(clk *fakeClock) Options {
	return Options{Clock: clk, Rand: func() float64 { return 0 }, PingInterval: time.Hour, HandshakeTimeout: 2 * time.Hour}
}

// TestBackoffGrowsUntilHandshake: a relay that accepts the socket and then
// refuses (closes it, or answers the handshake with a transient error and
// closes) sees reconnects after 1 s, 2 s, 4 s, 8 s …: the backoff resets
// only after a handshake_ack, and then starts again from 1 s.
func TestBackoffGrowsUntilHandshake(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")

	refuse := func(i int) {
		p := relay.accept(t)
		if i%2 == 0 {
			p.c.CloseNow()
		} else {
			expect[*wire.Handshake](t, p)
			p.send(t, &wire.Error{Code: "OVERLOADED", Message: "try later"})
			p.c.CloseNow()
		}
	}
	wait := func(d time.Duration) {
		t.Helper()
		clk.waitTimer(t, d)
		if st := c.State(); st.State != Disconnected || st.Err == nil || !st.Retry.Equal(clk.Now().Add(d)) {
			t.Fatalf("waiting to reconnect: %+v (now %v)", st, clk.Now())
		}
		clk.Advance(d - time.Millisecond)
		relay.noConnection(t)
		clk.Advance(time.Millisecond)
	}
	for i, d := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60} {
		refuse(i)
		wait(d * time.Second)
	}
	// A completed handshake resets the backoff.
	p := relay.accept(t)
	p.syncUp(t, 0)
	ev.waitState(t, Synced)
	p.c.CloseNow()
	wait(1 * time.Second)
	refuse(0)
	wait(2 * time.Second)

	// Disconnect while waiting stops reconnecting.
	refuse(0)
	clk.waitTimer(t, 4*time.Second)
	c.Disconnect()
	if st := c.State(); st.State != Disconnected || st.Err != nil || !st.Retry.IsZero() {
		t.Fatalf("after Disconnect: %+v", st)
	}
	if d := clk.activeDurations(); len(d) != 0 {
		t.Fatalf("timers left after Disconnect: %v", d)
	}
	clk.Advance(time.Hour)
	relay.noConnection(t)
}

// TestBackoffJitter: Options.Rand scales the delay by up to BackoffJitter.
func TestBackoffJitter(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	opts := quietOptions(clk)
	opts.Rand = func() float64 { return 0.5 }
	c := newClient(t, db, opts)
	c.Connect(relay.url, "db1", "")
	relay.accept(t).c.CloseNow()
	clk.waitTimer(t, time.Second+time.Second/8)
}

// TestHandshakeTimeout: a relay that accepts and never answers the
// handshake is dropped after the handshake timeout, then retried.
func TestHandshakeTimeout(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	c := newClient(t, db, Options{Clock: clk, Rand: func() float64 { return 0 }, PingInterval: time.Hour})
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	expect[*wire.Handshake](t, p)
	clk.waitTimer(t, DefaultHandshakeTimeout)
	clk.Advance(DefaultHandshakeTimeout)
	p.waitClosed(t)
	clk.waitTimer(t, time.Second)
	if err := c.State().Err; !errors.Is(err, ErrTimeout) {
		t.Fatalf("state error %v, want ErrTimeout", err)
	}
	clk.Advance(time.Second)
	relay.accept(t)
}

// TestKeepalive: an idle synced session asks for the changes after its
// cursor every interval, where it would ping (the answer shows the relay
// is there and brings what a lost push_changes carried); one that
// receives nothing for two intervals is closed and reconnected.
func TestKeepalive(t *testing.T) {
	iv := 10 * time.Second
	c, p, clk, ev := syncedIdle(t, iv)

	// Traffic keeps it alive: answer each keepalive get_changes.
	for range 3 {
		clk.waitTimer(t, iv)
		clk.Advance(iv)
		if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
			t.Fatalf("keepalive get_changes since %d, want 0", g.Since)
		}
		p.send(t, &wire.Changes{Cursor: 0})
		p.barrier(t) // the answer was handled
	}
	// Receiving but not sending: the client pings after an interval of
	// its own silence (the relay's idle timeout counts what it receives).
	sets := peerSets(t, 2, "k")
	for i := range 2 {
		clk.Advance(iv / 2)
		p.send(t, &wire.PushChanges{Cursor: uint64(i + 1), ChangeSets: sets[i : i+1]})
		waitCond(t, "the push applied", func() bool { return ev.count(ChangesApplied) == i+1 })
	}
	// The keepalive came due between the two pushes: the relay answers
	// from where the client stood.
	switch g := expect[*wire.GetChanges](t, p); g.Since {
	case 1:
		p.send(t, &wire.Changes{Cursor: 2, ChangeSets: sets[1:2]})
	case 2:
		p.send(t, &wire.Changes{Cursor: 2})
	default:
		t.Fatalf("keepalive get_changes since %d, want 1 or 2 (the pushes' cursors)", g.Since)
	}
	p.barrier(t)

	// Silence: a ping after one interval, closed after the second.
	nextKeepalive := func() {
		clk.waitUntil(t, "the next keepalive timer", func() bool {
			for _, tm := range clk.active {
				if tm.d == iv && tm.when.After(clk.now) {
					return true
				}
			}
			return false
		})
	}
	nextKeepalive()
	clk.Advance(iv)
	expect[*wire.GetChanges](t, p)
	nextKeepalive()
	clk.Advance(iv)
	p.waitClosed(t)
	clk.waitTimer(t, time.Second)
	if err := c.State().Err; !errors.Is(err, ErrTimeout) {
		t.Fatalf("state error %v, want ErrTimeout", err)
	}
}

// TestRateLimitedBackoffGrows (issue 10 §10): a relay that closes the
// connection with RATE_LIMITED (then status 1008) after the handshake sees
// reconnects after 1 s, 2 s, 4 s: the handshake of a session that ended so
// does not reset the backoff, so a client that keeps exceeding the relay's
// rate waits longer each time instead of reconnecting within a second
// forever. The error is reported.
func TestRateLimitedBackoffGrows(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	for _, d := range []time.Duration{1, 2, 4} {
		p := relay.accept(t)
		p.syncUp(t, 0)
		p.send(t, &wire.Error{Code: wire.CodeRateLimited, Message: "slow down"})
		// In a goroutine: Close waits (up to 5 s) for the client's reply to
		// the close frame, which a client that already dropped the socket
		// never sends.
		go func(c *websocket.Conn) { _ = c.Close(websocket.StatusPolicyViolation, "rate limited") }(p.c)
		d *= time.Second
		clk.waitTimer(t, d)
		if st := c.State(); st.State != Disconnected || !st.Retry.Equal(clk.Now().Add(d)) {
			t.Fatalf("after RATE_LIMITED: %+v (now %v), want a retry in %v", st, clk.Now(), d)
		}
		clk.Advance(d)
	}
	ev.wait(t, "RATE_LIMITED reported", func(e Event) bool {
		var we *wire.Error
		return e.Type == ErrorReported && errors.As(e.Err, &we) && we.Code == wire.CodeRateLimited
	})
	c.Disconnect()
}

// TestKeepaliveCatchesUpLostPush: a push_changes lost on a live, quiet
// connection (the relay appended an entry; its frame never arrived) is
// not waited for until someone writes again: within one ping interval the
// synced client asks for what follows its cursor and applies it (the
// simulator's seed 81586: a device stayed Synced at cursor 110 below the
// relay's head 117 for good).
func TestKeepaliveCatchesUpLostPush(t *testing.T) {
	iv := 10 * time.Second
	_, p, clk, ev := syncedIdle(t, iv)
	// Entry 1 is appended on the relay; its push_changes is lost.
	sets := peerSets(t, 1, "k")
	clk.waitTimer(t, iv)
	clk.Advance(iv)
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 0 {
		t.Fatalf("get_changes since %d, want 0", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 1, ChangeSets: sets})
	waitCond(t, "the lost entry applied", func() bool { return ev.count(ChangesApplied) == 1 })
}

// syncedIdle connects a client with ping interval iv, on a fake clock, to
// a scripted relay and brings it to synced at cursor 0 with its one local
// write acknowledged: the start of the keepalive tests.
func syncedIdle(t *testing.T, iv time.Duration) (*Client, *peer, *fakeClock, *eventLog) {
	t.Helper()
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, Options{Clock: clk, Rand: func() float64 { return 0 }, PingInterval: iv, HandshakeTimeout: time.Hour})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.syncUp(t, 0)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	return c, p, clk, ev
}
