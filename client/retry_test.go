//go:build !js

package client

import (
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestPullApplyFails: changes the engine refuses (an HLC more than 60 s
// ahead) leave the cursor and the data untouched; the failure is reported
// and the pull retried after a backoff delay.
func TestPullApplyFails(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	ahead, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: notesSchema(),
		Clock: engine.ClockFunc(func() uint64 { return uint64(time.Now().Add(2 * time.Minute).UnixMilli()) })})
	if err != nil {
		t.Fatal(err)
	}
	defer ahead.Close()
	insert(t, ahead, "future", "x")
	bad := dataSets(t, ahead)
	good := peerSets(t, 1, "g")

	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.GetChanges](t, p)
	p.send(t, &wire.Changes{Cursor: 2, ChangeSets: append(good, bad...)})
	e := ev.wait(t, "the failure", func(e Event) bool { return e.Type == ErrorReported })
	if !isErr(e.Err, model.ErrClockDrift) {
		t.Fatalf("reported %v", e.Err)
	}
	if has(t, db, "ga") || stateOf(t, db, cursorKey(testNS)) != "" {
		t.Fatal("a refused batch moved the cursor or landed in part")
	}
	clk.waitTimer(t, time.Second)
	clk.Advance(time.Second)
	if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
		t.Fatalf("retried since %d", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 2, ChangeSets: good})
	ev.waitState(t, Synced)
	if !has(t, db, "ga") || stateOf(t, db, cursorKey(testNS)) != "2" {
		t.Fatal("the retried pull did not land")
	}
}

// TestPushRejectedRetried: an error answering the push in flight (by its
// requestId) leaves the watermark, and the same changes go out again after
// a backoff delay, under the next requestId.
func TestPushRejectedRetried(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	a1 := expect[*wire.ApplyChanges](t, p)
	p.send(t, &wire.Error{Code: wire.CodeApplyChangesError, Message: "clock drift", RequestID: a1.RequestID})
	ev.wait(t, "the rejection", func(e Event) bool { return e.Type == ErrorReported })
	insert(t, db, "later", "y") // held: the retry is pending
	for i, d := range []time.Duration{time.Second, 2 * time.Second} {
		clk.waitTimer(t, d)
		clk.Advance(d - time.Millisecond)
		if got := p.barrier(t); len(got) != 0 {
			t.Fatalf("pushed before the retry delay: %v", got)
		}
		clk.Advance(time.Millisecond)
		a := expect[*wire.ApplyChanges](t, p)
		if a.RequestID != "apply-"+string(rune('2'+i)) || len(a.ChangeSets) != 3 {
			t.Fatalf("retry %d: %s with %d sets", i, a.RequestID, len(a.ChangeSets))
		}
		if i == 0 {
			p.send(t, &wire.Error{Code: wire.CodeApplyChangesError, Message: "again", RequestID: a.RequestID})
		} else {
			p.ackPush(t, a)
		}
	}
	waitCond(t, "pending 0", func() bool { return pending(t, c) == 0 })
}
