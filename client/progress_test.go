//go:build !js

package client

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// getChangesIn returns the get_changes among msgs.
func getChangesIn(msgs []wire.Message) []*wire.GetChanges {
	var out []*wire.GetChanges
	for _, m := range msgs {
		if g, ok := m.(*wire.GetChanges); ok {
			out = append(out, g)
		}
	}
	return out
}

// TestPullWithoutProgressBacksOff: a changes reply that does not move the
// client forward the way the protocol says it must (more without
// advancing the cursor, more with an empty page, a cursor that moves back,
// more ChangeSets than the cursor advanced, or a caught-up answer below
// the cursor a push_changes announced) is a protocol error: reported
// (ErrProtocol), nothing of it applied, the cursor kept, and the pull
// retried after the backoff delay (1 s, then 2 s) instead of at once; the
// state is not Synced meanwhile. Before, the client sent the next
// get_changes at once, forever (issue 10 §7: 1,074 a second).
func TestPullWithoutProgressBacksOff(t *testing.T) {
	sets := peerSets(t, 4, "q")
	cases := []struct {
		name string
		// live: the bad answer comes after the session is Synced at
		// cursor 5 (a push_changes announces cursor 9 first); otherwise
		// it answers the second pull of the session, since 5.
		live bool
		bad  *wire.Changes
		want string // in the reported error
	}{
		{name: "more, cursor not advanced", bad: &wire.Changes{Cursor: 5, More: true, ChangeSets: sets[1:2]}, want: "does not advance"},
		{name: "more, empty page", bad: &wire.Changes{Cursor: 7, More: true}, want: "no ChangeSet"},
		{name: "cursor moves back", bad: &wire.Changes{Cursor: 3, More: true, ChangeSets: sets[1:2]}, want: "moves back"},
		{name: "more ChangeSets than sequences", bad: &wire.Changes{Cursor: 6, ChangeSets: sets[1:3]}, want: "2 ChangeSets"},
		{name: "below the announced cursor", live: true, bad: &wire.Changes{Cursor: 5}, want: "push_changes announced 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			relay := newScriptRelay(t)
			clk := newFakeClock()
			db, _ := newEngine(t)
			insert(t, db, "mine", "x")
			c := newClient(t, db, quietOptions(clk))
			ev := recordEvents(t, c)
			if err := c.Connect(relay.url, "db1", ""); err != nil {
				t.Fatal(err)
			}
			p := relay.accept(t)
			p.ack(t)
			expect[*wire.GetChanges](t, p)
			if tc.live {
				p.send(t, &wire.Changes{Cursor: 5, ChangeSets: sets[0:1]})
				ev.waitState(t, Synced)
				p.ackPush(t, expect[*wire.ApplyChanges](t, p))
				p.send(t, &wire.PushChanges{Cursor: 9, ChangeSets: sets[3:4]}) // 6..8 missing
			} else {
				p.send(t, &wire.Changes{Cursor: 5, More: true, ChangeSets: sets[0:1]})
			}
			if g := expect[*wire.GetChanges](t, p); g.Since != 5 {
				t.Fatalf("pulled since %d, want 5", g.Since)
			}
			for i, delay := range []time.Duration{time.Second, 2 * time.Second} {
				p.send(t, tc.bad)
				e := ev.wait(t, "the protocol error", func(e Event) bool { return e.Type == ErrorReported })
				if !errors.Is(e.Err, ErrProtocol) || !strings.Contains(e.Err.Error(), tc.want) {
					t.Fatalf("reported %v, want ErrProtocol saying %q", e.Err, tc.want)
				}
				// Everything the client sent up to handling a ping sent
				// after the bad answer: no get_changes.
				if got := getChangesIn(p.barrier(t)); len(got) != 0 {
					t.Fatalf("answer %d: %d get_changes sent at once (since %d), want a backoff delay", i, len(got), got[0].Since)
				}
				if st := c.State().State; st == Synced {
					t.Fatalf("state %s while the pull makes no progress", st)
				}
				if cur := stateOf(t, db, cursorKey(testNS)); cur != "5" || has(t, db, "qb") {
					t.Fatalf("the bad answer moved the cursor to %q or was applied", cur)
				}
				clk.waitTimer(t, delay)
				clk.Advance(delay - time.Millisecond)
				if got := getChangesIn(p.barrier(t)); len(got) != 0 {
					t.Fatalf("retried before the %v delay", delay)
				}
				clk.Advance(time.Millisecond)
				if g := expect[*wire.GetChanges](t, p); g.Since != 5 {
					t.Fatalf("retry since %d, want 5", g.Since)
				}
			}
			// A good answer: caught up.
			p.send(t, &wire.Changes{Cursor: 9, ChangeSets: sets[1:4]})
			waitCond(t, "synced", func() bool { return c.State().State == Synced })
			if cur := stateOf(t, db, cursorKey(testNS)); cur != "9" {
				t.Fatalf("cursor %q after the good answer, want 9", cur)
			}
		})
	}
}

// TestPullPageAfterOwnGapAnnounced: the legitimate case the "below the
// announced cursor" rule must not catch: a push_changes that reaches the
// client before the answer to a pull the relay read earlier. The answer
// is below the announced cursor, but that pull was sent before the
// announcement; the next pull catches up, with no error and no delay.
func TestPullPageAfterOwnGapAnnounced(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	sets := peerSets(t, 2, "r")
	c := newClient(t, db, Options{Logger: discardLogger()})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	p.send(t, &wire.PushChanges{Cursor: 7, ChangeSets: sets[1:2]}) // 6 missing
	if g := expect[*wire.GetChanges](t, p); g.Since != 5 {
		t.Fatalf("gap pulled since %d", g.Since)
	}
	p.send(t, &wire.PushChanges{Cursor: 9, ChangeSets: sets[0:1]}) // while the pull is in flight
	p.send(t, &wire.Changes{Cursor: 7, ChangeSets: sets[0:1]})     // read before 8, 9 were stored
	if g := expect[*wire.GetChanges](t, p); g.Since != 7 {
		t.Fatalf("second pull since %d, want 7", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 9, ChangeSets: sets[0:1]})
	p.barrier(t)
	for _, e := range ev.snapshot() {
		if e.Type == ErrorReported {
			t.Fatalf("reported %v", e.Err)
		}
	}
	if cur := stateOf(t, db, cursorKey(testNS)); cur != "9" {
		t.Fatalf("cursor %q, want 9", cur)
	}
}

// TestApplyResultForAnotherRequest: the relay answers requests in order,
// one frame each, so an apply_result whose requestId is not the push in
// flight answers that push wrongly: a protocol error, reported, and the
// push sent again after the backoff delay (under the next requestId)
// instead of waiting for an ack that will never come; the state is not
// Synced until a push is acknowledged. Before, the client ignored it and
// the push stayed in flight until the request timeout closed the session.
func TestApplyResultForAnotherRequest(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	a1 := expect[*wire.ApplyChanges](t, p)
	p.send(t, &wire.ApplyResult{RequestID: "apply-77", ApplyResult: model.ApplyResult{Applied: 1}})
	e := ev.wait(t, "the protocol error", func(e Event) bool { return e.Type == ErrorReported })
	if !errors.Is(e.Err, ErrProtocol) || !strings.Contains(e.Err.Error(), "apply-77") {
		t.Fatalf("reported %v, want ErrProtocol naming apply-77", e.Err)
	}
	if got := stateOf(t, db, sentKey(testNS)); got != "" || pending(t, c) != 2 {
		t.Fatalf("the wrong ack moved the watermark (stored %q)", got)
	}
	if e.Status.State != Syncing { // the state moved before the report
		t.Fatalf("the protocol error was reported in state %s, want syncing", e.Status.State)
	}
	clk.waitTimer(t, time.Second)
	clk.Advance(time.Second)
	a2 := expect[*wire.ApplyChanges](t, p)
	if a2.RequestID == a1.RequestID || fmt.Sprint(txIDs(a2)) != fmt.Sprint(txIDs(a1)) {
		t.Fatalf("resent %s %v, want the same ChangeSets as %s %v under a new id", a2.RequestID, txIDs(a2), a1.RequestID, txIDs(a1))
	}
	if st := c.State().State; st == Synced {
		t.Fatal("synced before a push was acknowledged")
	}
	p.ackPush(t, a2)
	ev.waitState(t, Synced)
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
}

// TestNotSyncedWhilePushesFail: while pushes are being refused (here
// CLOCK_DRIFT, the relay's answer to a device whose clock is ahead) the
// state is Syncing, not Synced, in this session and in the next one until
// a push is acknowledged; the refusal is reported as the relay's error,
// which matches model.ErrClockDrift.
func TestNotSyncedWhilePushesFail(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	drift := func(a *wire.ApplyChanges) {
		p.send(t, &wire.Error{Code: wire.ErrorCode("CLOCK_DRIFT"), RequestID: a.RequestID,
			Message: "clock drift: remote time 1764374861234 ms is 356341 ms ahead of local time 1764374504893 ms (limit 60000 ms)"})
	}
	drift(expect[*wire.ApplyChanges](t, p))
	e := ev.wait(t, "the refusal", func(e Event) bool { return e.Type == ErrorReported })
	if !errors.Is(e.Err, model.ErrClockDrift) || RelayError(e.Err) == nil || RelayError(e.Err).Code != "CLOCK_DRIFT" {
		t.Fatalf("reported %v, want the relay's CLOCK_DRIFT matching model.ErrClockDrift", e.Err)
	}
	if e.Status.State != Syncing { // the state moved before the report
		t.Fatalf("the refusal was reported in state %s, want syncing", e.Status.State)
	}
	clk.waitTimer(t, time.Second)
	clk.Advance(time.Second)
	drift(expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the second refusal", func(e Event) bool { return e.Type == ErrorReported })
	p.barrier(t)
	if st := c.State().State; st != Syncing {
		t.Fatalf("state %s while pushes are refused, want syncing", st)
	}

	// The next session: caught up, but the push is still refused: never
	// Synced in between.
	p.c.CloseNow()
	ev.waitState(t, Disconnected)
	clk.waitTimer(t, time.Second)
	clk.Advance(time.Second)
	p = relay.accept(t)
	p.syncUp(t, 0)
	a := expect[*wire.ApplyChanges](t, p)
	p.barrier(t)
	if st := c.State().State; st != Syncing {
		t.Fatalf("state %s after the pull of a session whose pushes were refused, want syncing until a push is acknowledged", st)
	}
	p.ackPush(t, a)
	ev.waitState(t, Synced)
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
	var sawSynced []int
	for i, e := range ev.snapshot() {
		if e.Type == StateChanged && e.Status.State == Synced {
			sawSynced = append(sawSynced, i)
		}
	}
	if len(sawSynced) != 2 {
		t.Fatalf("Synced %d times, want twice (the first session before its push, and after the ack): %s", len(sawSynced), describeEvents(ev.snapshot()))
	}
}

// TestProtocolViolationsGrowBackoff: a relay that accepts the handshake
// and then breaks the protocol in a way that ends the session (here a
// frame that does not decode, right after the ack) is reconnected to
// after 2 s, 4 s, 8 s …, not every second: a completed handshake resets
// the backoff only when the session did not end with ErrProtocol. A
// session ending otherwise resets it. Before, every such session reset
// it, and the client redialed and re-pulled once a second forever.
func TestProtocolViolationsGrowBackoff(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, quietOptions(clk))
	c.Connect(relay.url, "db1", "")
	wait := func(d time.Duration) {
		t.Helper()
		clk.waitTimer(t, d)
		if st := c.State(); st.State != Disconnected || !st.Retry.Equal(clk.Now().Add(d)) {
			t.Fatalf("waiting to reconnect: %+v, want a retry in %v", st, d)
		}
		clk.Advance(d - time.Millisecond)
		relay.noConnection(t)
		clk.Advance(time.Millisecond)
	}
	for _, d := range []time.Duration{2, 4, 8} {
		p := relay.accept(t)
		p.ack(t)
		p.sendRaw(t, []byte(`{"type":"changes","cursor":"not a number"}`))
		p.waitClosed(t)
		waitCond(t, "disconnected", func() bool { return c.State().State == Disconnected })
		if err := c.State().Err; !errors.Is(err, ErrProtocol) {
			t.Fatalf("session ended with %v, want ErrProtocol", err)
		}
		wait(d * time.Second)
	}
	// A session ending for another reason (the connection drops) resets it.
	p := relay.accept(t)
	p.syncUp(t, 0)
	waitCond(t, "synced", func() bool { return c.State().State == Synced })
	p.c.CloseNow()
	wait(time.Second)
	relay.accept(t)
}
