//go:build !js

package client

import (
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/wire"
)

// A transaction committed while a push is in flight (flushDeferred) is
// pushed even when the batch's rest, pushed next, holds only transactions
// too large to send: sendPush skips them and then reads the log again.
// (It returned without looking at flushDeferred, and nothing else
// triggered a flush until the next local write.)
func TestDeferredFlushAfterSkip(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "a", "x")
	opts := quietOptions(clk)
	opts.MaxMessageSize = 5000
	c := newClient(t, db, opts)
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	for pending(t, c) > 0 {
		p.ackPush(t, expect[*wire.ApplyChanges](t, p))
		ev.wait(t, "ack", func(e Event) bool { return e.Type == PushAcked })
	}
	clk.Advance(time.Second)

	insert(t, db, "before", "x")
	p0 := expect[*wire.ApplyChanges](t, p)
	insert(t, db, "small", "x")
	insert(t, db, "big", strings.Repeat("x", 6000))
	clk.Advance(time.Second)
	p.ackPush(t, p0)
	p1 := expect[*wire.ApplyChanges](t, p) // [small]; [big] kept as the rest
	if len(p1.ChangeSets) != 1 || p1.ChangeSets[0].Changes[0].PK[0].Text() != "small" {
		t.Fatalf("p1 %+v", p1)
	}
	insert(t, db, "late", "x") // while p1 is in flight
	clk.Advance(time.Second)
	p.barrier(t)
	p.ackPush(t, p1)
	ev.wait(t, "big skipped", func(e Event) bool { return e.Type == ErrorReported && isErr(e.Err, ErrTooLarge) })
	for i := 0; i < 5; i++ {
		clk.Advance(time.Minute)
		for _, m := range p.barrier(t) {
			if a, ok := m.(*wire.ApplyChanges); ok {
				t.Logf("pushed %s", a.ChangeSets[0].Changes[0].PK[0].Text())
				return
			}
		}
	}
	t.Fatalf("'late' (committed while a push was in flight) was never pushed; pending %d", pending(t, c))
}
