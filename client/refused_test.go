//go:build !js

package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// txIDs lists the transaction ids of a push.
func txIDs(a *wire.ApplyChanges) []string {
	var out []string
	for _, cs := range a.ChangeSets {
		out = append(out, cs.TransactionID)
	}
	return out
}

// TestPushRefusedSplit: APPLY_CHANGES_REFUSED for a batch of several
// transactions splits it (first half, then the rest) until the refused
// transaction goes alone; that one is reported as a *RefusedError and
// skipped: the sent watermark passes it, stored, the others are acked,
// later pushes are not held, and no backoff delay is waited.
func TestPushRefusedSplit(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	insert(t, db, "b", "2")
	insert(t, db, "c", "3")
	all := ownSets(t, db, model.HLC{}) // migrations, a, b, c
	if len(all) != 4 {
		t.Fatalf("%d local sets", len(all))
	}
	mig, a, b, c := all[0].TransactionID, all[1].TransactionID, all[2].TransactionID, all[3].TransactionID
	cl := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, cl)
	p := connectSynced(t, relay, cl, ev, 0)

	refuse := func(x *wire.ApplyChanges) {
		p.send(t, &wire.Error{Code: wire.CodeApplyChangesRefused, RequestID: x.RequestID,
			Message: "ChangeSet " + b + ": row too large"})
	}
	want := []struct {
		ids    []string
		refuse bool
	}{
		{[]string{mig, a, b, c}, true},
		{[]string{mig, a}, false},
		{[]string{b, c}, true},
		{[]string{b}, true},
		{[]string{c}, false},
	}
	for i, w := range want {
		x := expect[*wire.ApplyChanges](t, p)
		if got := txIDs(x); strings.Join(got, ",") != strings.Join(w.ids, ",") {
			t.Fatalf("push %d carries %v, want %v", i+1, got, w.ids)
		}
		if x.RequestID != "apply-"+string(rune('1'+i)) {
			t.Fatalf("push %d has requestId %s", i+1, x.RequestID)
		}
		if w.refuse {
			refuse(x)
		} else {
			p.ackPush(t, x)
		}
	}
	waitCond(t, "pending 0", func() bool { return pending(t, cl) == 0 })
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(all[3].HLC) {
		t.Fatalf("stored sent watermark %q, want c's %s", got, wire.FormatHLC(all[3].HLC))
	}
	e := ev.wait(t, "the refusal", func(e Event) bool { return e.Type == ErrorReported })
	var re *RefusedError
	if !errors.As(e.Err, &re) || !errors.Is(e.Err, ErrRefused) {
		t.Fatalf("reported %v, want a *RefusedError", e.Err)
	}
	if re.TransactionID != b || re.HLC != all[2].HLC || re.Code != wire.CodeApplyChangesRefused || !strings.Contains(re.Message, "row too large") {
		t.Fatalf("RefusedError %+v", re)
	}
	if we := RelayError(e.Err); we == nil || we.Code != wire.CodeApplyChangesRefused {
		t.Fatalf("RelayError(%v) = %v", e.Err, we)
	}
	if n := ev.count(ErrorReported); n != 1 {
		t.Fatalf("%d errors reported, want the isolated refusal only: %s", n, describeEvents(ev.snapshot()))
	}
	// The refused transaction stays in the replica.
	if !has(t, db, "b") {
		t.Fatal("b is gone")
	}
	// No backoff: the client never waited.
	for _, d := range clk.activeDurations() {
		if d >= time.Second && d < time.Hour {
			t.Fatalf("a retry timer of %v is armed", d)
		}
	}
	// Later changes go out at once.
	insert(t, db, "d", "4")
	x := expect[*wire.ApplyChanges](t, p)
	if len(x.ChangeSets) != 1 || x.ChangeSets[0].Changes[0].PK[0].Text() != "d" {
		t.Fatalf("push after the skip %+v", x)
	}
}

// TestPushRefusedWithoutRequestID: APPLY_CHANGES_REFUSED without a
// requestId while a push is in flight counts as a failed push (it may not
// be this push's answer): retried after a backoff delay, nothing skipped.
func TestPushRefusedWithoutRequestID(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	cl := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, cl)
	p := connectSynced(t, relay, cl, ev, 0)
	x := expect[*wire.ApplyChanges](t, p)
	p.send(t, &wire.Error{Code: wire.CodeApplyChangesRefused, Message: "no id"})
	ev.wait(t, "the error", func(e Event) bool { return e.Type == ErrorReported })
	clk.waitTimer(t, time.Second)
	clk.Advance(time.Second)
	y := expect[*wire.ApplyChanges](t, p)
	if strings.Join(txIDs(y), ",") != strings.Join(txIDs(x), ",") {
		t.Fatalf("retry carries %v, want %v", txIDs(y), txIDs(x))
	}
}

// TestPushMessageTooLargeSplit: a relay whose frame limit is below the
// client's MaxMessageSize answers a push with MESSAGE_TOO_LARGE, without a
// requestId (it could not read the frame). The client splits the push like
// a refusal; a transaction too large alone is skipped and reported as
// ErrTooLarge, and the rest is pushed, with no backoff. (It used to retry
// the same frame with backoff, forever.)
func TestPushMessageTooLargeSplit(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	insert(t, db, "b", "2")
	all := ownSets(t, db, model.HLC{}) // migrations, a, b
	if len(all) != 3 {
		t.Fatalf("%d local sets", len(all))
	}
	mig, a, b := all[0].TransactionID, all[1].TransactionID, all[2].TransactionID
	cl := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, cl)
	p := connectSynced(t, relay, cl, ev, 0)

	tooLarge := func() { p.send(t, &wire.Error{Code: wire.CodeMessageTooLarge, Message: "frame exceeds 1 KiB"}) }
	want := []struct {
		ids      []string
		tooLarge bool
	}{
		{[]string{mig, a, b}, true},
		{[]string{mig}, false},
		{[]string{a, b}, true},
		{[]string{a}, true},
		{[]string{b}, false},
	}
	for i, w := range want {
		x := expect[*wire.ApplyChanges](t, p)
		if got := txIDs(x); strings.Join(got, ",") != strings.Join(w.ids, ",") {
			t.Fatalf("push %d carries %v, want %v", i+1, got, w.ids)
		}
		if w.tooLarge {
			tooLarge()
		} else {
			p.ackPush(t, x)
		}
	}
	waitCond(t, "pending 0", func() bool { return pending(t, cl) == 0 })
	if got := stateOf(t, db, sentKey(testNS)); got != wire.FormatHLC(all[2].HLC) {
		t.Fatalf("stored sent watermark %q, want b's %s", got, wire.FormatHLC(all[2].HLC))
	}
	e := ev.wait(t, "the skip", func(e Event) bool {
		return e.Type == ErrorReported && errors.Is(e.Err, ErrRefused)
	})
	var re *RefusedError
	if !errors.As(e.Err, &re) || !errors.Is(e.Err, ErrTooLarge) || re.TransactionID != a || re.Code != wire.CodeMessageTooLarge {
		t.Fatalf("reported %v (%+v), want a's transaction refused as too large", e.Err, re)
	}
	if we := RelayError(e.Err); we == nil || we.Code != wire.CodeMessageTooLarge {
		t.Fatalf("RelayError(%v) = %v", e.Err, we)
	}
	for _, d := range clk.activeDurations() {
		if d >= time.Second && d < time.Hour {
			t.Fatalf("a retry timer of %v is armed", d)
		}
	}
	if !has(t, db, "a") {
		t.Fatal("a is gone")
	}
}
