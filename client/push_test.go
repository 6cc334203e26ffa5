//go:build !js

package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// connectSynced connects c to a fresh connection of relay as a replica
// that does not bootstrap, answers its pull with cursor, and returns the
// connection.
func connectSynced(t *testing.T, relay *scriptRelay, c *Client, ev *eventLog, cursor uint64) *peer {
	t.Helper()
	if err := c.Connect(relay.url, "db1", ""); err != nil {
		t.Fatal(err)
	}
	p := relay.accept(t)
	p.syncUp(t, cursor)
	ev.waitState(t, Synced)
	return p
}

// pending returns c.Pending(), checking that PendingCount agrees (the
// tests never supersede a transaction wholly).
func pending(t testing.TB, c *Client) int {
	t.Helper()
	for {
		n, err := c.Pending()
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.PendingCount()
		if err != nil {
			t.Fatal(err)
		}
		if again, err := c.Pending(); err != nil || again != n {
			continue // an ack landed in between (waitCond polls)
		}
		if m != n {
			t.Fatalf("PendingCount() = %d, Pending() = %d", m, n)
		}
		return n
	}
}

// TestPushAcks: the sent watermark moves only on the apply_result whose
// requestId matches the push in flight, only forward, and is persisted;
// stale, unknown and duplicate acks arriving while no push is in flight
// change nothing; requestIds count up. (One for another requestId while a
// push is in flight answers that push wrongly: TestApplyResultForAnotherRequest.)
func TestPushAcks(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	insert(t, db, "b", "2")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	if n := pending(t, c); n != 3 { // migrations + two inserts
		t.Fatalf("pending before connecting %d", n)
	}
	p := connectSynced(t, relay, c, ev, 0)
	a1 := expect[*wire.ApplyChanges](t, p)
	if a1.RequestID != "apply-1" || len(a1.ChangeSets) != 3 {
		t.Fatalf("push %s with %d sets", a1.RequestID, len(a1.ChangeSets))
	}
	p.ackPush(t, a1)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	top := a1.ChangeSets[2].HLC
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(top) {
		t.Fatalf("stored sent watermark %q, want %s", got, wire.FormatHLC(top))
	}
	if n := pending(t, c); n != 0 {
		t.Fatalf("pending %d after the ack", n)
	}
	// Acks that answer nothing in flight are inert.
	for _, id := range []string{"apply-0", "apply-1", "apply-2", "", "bogus"} {
		p.send(t, &wire.ApplyResult{RequestID: id, ApplyResult: model.ApplyResult{Applied: 99}})
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("frames after stale acks: %v", got)
	}
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(top) {
		t.Fatalf("stale acks moved the watermark to %q", got)
	}
	for _, e := range ev.snapshot() {
		if e.Type == ErrorReported {
			t.Fatalf("a stale ack reported %v", e.Err)
		}
	}

	// A second push.
	insert(t, db, "c", "3")
	a2 := expect[*wire.ApplyChanges](t, p)
	if a2.RequestID != "apply-2" || len(a2.ChangeSets) != 1 {
		t.Fatalf("second push %s with %d sets", a2.RequestID, len(a2.ChangeSets))
	}
	if n := pending(t, c); n != 1 {
		t.Fatalf("pending %d with the second push in flight", n)
	}
	p.ackPush(t, a2)
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
	p.ackPush(t, a2) // duplicate of the current one
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("frames after a duplicate ack: %v", got)
	}
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(a2.ChangeSets[0].HLC) {
		t.Fatalf("stored sent watermark %q", got)
	}

	// Kept across Disconnect and a new Client (a restart): nothing is
	// pushed again, the next push starts after the watermark.
	c.Close()
	c2 := newClient(t, db, Options{})
	if n := pending(t, c2); n != 1+2+1 {
		t.Fatalf("a new client before its first Connect counts %d pending (no target yet)", n)
	}
	ev2 := recordEvents(t, c2)
	p = connectSynced(t, relay, c2, ev2, 4)
	if n := pending(t, c2); n != 0 {
		t.Fatalf("pending %d after restart", n)
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("restarted client sent %v", got)
	}
	insert(t, db, "d", "4")
	a3 := expect[*wire.ApplyChanges](t, p)
	if a3.RequestID != "apply-1" || len(a3.ChangeSets) != 1 || a3.ChangeSets[0].Changes[0].PK[0].Text() != "d" {
		t.Fatalf("push after restart %+v", a3)
	}
	c2.Disconnect()
	// The URL hint lets Pending find the watermark while disconnected.
	if n := pending(t, c2); n != 1 {
		t.Fatalf("pending %d while disconnected", n)
	}
	// So does PendingCount without a client.
	if n, err := PendingCount(db, relay.url, "db1"); err != nil || n != 1 {
		t.Fatalf("PendingCount(db, url, db1) = %d, %v; want 1", n, err)
	}
	if n, err := PendingCount(db, "", ""); err != nil || n != 1+2+1+1 {
		t.Fatalf("PendingCount(db, no target) = %d, %v; want every local transaction, 5", n, err)
	}
	if n, err := PendingCount(db, relay.url, "other"); err != nil || n != 5 {
		t.Fatalf("PendingCount(db, url, other) = %d, %v; want 5", n, err)
	}
}

// TestOnePushInFlight: while a push is unanswered, local changes wait;
// the ack releases them as one push.
func TestOnePushInFlight(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	a1 := expect[*wire.ApplyChanges](t, p)
	for _, id := range []string{"b", "c", "d"} {
		insert(t, db, id, "x")
	}
	clk.Advance(time.Second) // any debounce is long over
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("pushed while a push was in flight: %v", got)
	}
	p.ackPush(t, a1)
	a2 := expect[*wire.ApplyChanges](t, p)
	if len(a2.ChangeSets) != 3 {
		t.Fatalf("deferred push carries %d sets, want 3", len(a2.ChangeSets))
	}
}

// TestPushPaging: more local work than PushLimit goes out in several
// pushes, one at a time, each after the previous ack.
func TestPushPaging(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	for i := range 10 {
		insert(t, db, string(rune('a'+i)), "x") // 3 facts each (id, title, n)
	}
	c := newClient(t, db, Options{PushLimit: 7})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	var got int
	for i := 0; got < 11; i++ {
		a := expect[*wire.ApplyChanges](t, p)
		got += len(a.ChangeSets)
		if got < 11 {
			if more := p.barrier(t); len(more) != 0 {
				t.Fatalf("a second push before the ack: %v", more)
			}
		}
		p.ackPush(t, a)
	}
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
}

// TestPushTooLarge: a batch above MaxMessageSize is split; a single
// transaction above it is reported (a *RefusedError caused by
// ErrTooLarge) and skipped: the sent watermark passes it and the
// transactions after it go out, without a backoff delay.
func TestPushTooLarge(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	// Rows of 4,500 bytes: one fits a 5,000-byte frame alone, not with
	// the migrations (the binary frames of version 14 spend little
	// beside the values).
	insert(t, db, "a", strings.Repeat("x", 4500))
	insert(t, db, "b", strings.Repeat("x", 4500))
	opts := quietOptions(clk)
	opts.MaxMessageSize = 5000
	c := newClient(t, db, opts)
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	a := expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 1 { // the migrations; the rows do not fit with them
		t.Fatalf("first push has %d sets", len(a.ChangeSets))
	}
	p.ackPush(t, a)
	a = expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 1 || a.ChangeSets[0].Changes[0].PK[0].Text() != "a" {
		t.Fatalf("second push %+v", a)
	}
	p.ackPush(t, a)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the acks", func(e Event) bool { return e.Type == PushAcked && pending(t, c) == 0 })
	clk.Advance(time.Second)
	// Written while a push is in flight, so that the three go out as one
	// batch: the first alone, then big alone, skipped, then the last.
	insert(t, db, "before", "x")
	first := expect[*wire.ApplyChanges](t, p)
	insert(t, db, "big", strings.Repeat("x", 6000))
	insert(t, db, "after", "x")
	clk.Advance(time.Second) // any debounce is over
	bigSet := ownSets(t, db, first.ChangeSets[0].HLC)[0]
	p.ackPush(t, first)
	e := ev.wait(t, "ErrTooLarge", func(e Event) bool { return e.Type == ErrorReported })
	var re *RefusedError
	if !isErr(e.Err, ErrTooLarge) || !isErr(e.Err, ErrRefused) || !errors.As(e.Err, &re) || re.TransactionID != bigSet.TransactionID || re.Code != "" {
		t.Fatalf("reported %v", e.Err)
	}
	a = expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 1 || a.ChangeSets[0].Changes[0].PK[0].Text() != "after" {
		t.Fatalf("push after the skipped transaction %+v", a)
	}
	p.ackPush(t, a)
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(a.ChangeSets[0].HLC) {
		t.Fatalf("stored sent watermark %q", got)
	}
	for _, d := range clk.activeDurations() {
		if d >= time.Second && d < time.Hour {
			t.Fatalf("a retry timer of %v is armed", d)
		}
	}
}

// TestNotify: a change written by another engine over the same store
// (another tab) is pushed when Notify is called, not before.
func TestNotify(t *testing.T) {
	relay := newScriptRelay(t)
	st := memkv.New(engine.Buckets...)
	db, err := engine.Open(st, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tab, err := engine.Open(st, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	insert(t, db, "a", "1")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	insert(t, tab, "from-tab", "x")
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("pushed without a notification: %v", got)
	}
	c.Notify()
	a := expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 1 || a.ChangeSets[0].Changes[0].PK[0].Text() != "from-tab" {
		t.Fatalf("push %+v", a)
	}
}

// TestDebounce drives the debounce with the fake clock over a real
// session: the first change goes at once, changes within the window
// coalesce into one push when it passes quietly, and a steady stream is
// pushed every MaxWait.
func TestDebounce(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "seed", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	clk.Advance(time.Second) // quiet

	window := DefaultDebounceWindow
	// change writes one row and waits until the session has armed the
	// debounce timer it causes.
	n := 0
	change := func() {
		t.Helper()
		clk.mu.Lock()
		before := len(clk.created)
		clk.mu.Unlock()
		n++
		insert(t, db, string(rune('A'+n)), "x")
		clk.waitUntil(t, "the change handled", func() bool {
			for _, d := range clk.created[before:] {
				if d > 0 && d <= window {
					return true
				}
			}
			return false
		})
	}
	ids := func(a *wire.ApplyChanges) string {
		var s string
		for _, cs := range a.ChangeSets {
			s += cs.Changes[0].PK[0].Text()
		}
		return s
	}

	// Leading edge: at once, no time passes.
	change()
	a := expect[*wire.ApplyChanges](t, p)
	if ids(a) != "B" {
		t.Fatalf("leading push %q", ids(a))
	}
	p.ackPush(t, a)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	// Three changes 10 ms apart: held until 50 ms after the last.
	for range 3 {
		clk.Advance(10 * time.Millisecond)
		change()
	}
	clk.Advance(window - time.Millisecond)
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("pushed inside the window: %v", got)
	}
	clk.Advance(time.Millisecond)
	a = expect[*wire.ApplyChanges](t, p)
	if ids(a) != "CDE" {
		t.Fatalf("coalesced push %q, want CDE", ids(a))
	}
	p.ackPush(t, a)

	// A steady stream, a change every 40 ms: pushed every 250 ms.
	clk.Advance(time.Second)
	change() // leading
	if a = expect[*wire.ApplyChanges](t, p); ids(a) != "F" {
		t.Fatalf("leading push %q", ids(a))
	}
	p.ackPush(t, a)
	var held string
	for elapsed := 40 * time.Millisecond; elapsed < DefaultMaxWait; elapsed += 40 * time.Millisecond {
		clk.Advance(40 * time.Millisecond)
		change()
		held += string(rune('A' + n))
	}
	// The first held change came 40 ms after the leading one; max-wait
	// runs out 250 ms after it, at 290 ms. Now is 240 ms.
	clk.Advance(49 * time.Millisecond)
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("pushed before max-wait: %v", got)
	}
	clk.Advance(time.Millisecond)
	a = expect[*wire.ApplyChanges](t, p)
	if ids(a) != held {
		t.Fatalf("max-wait push %q, want %q", ids(a), held)
	}
}
