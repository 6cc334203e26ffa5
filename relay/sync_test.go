//go:build !js

package relay

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

func TestApplyThenPagedGetChanges(t *testing.T) {
	r := startRelay(t, Config{PageChanges: 10})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	insertStops(t, rep, "t1", 25)
	// One transaction of 5 rows: 20 changes, above the page bound.
	if _, err := rep.Transact(func(tx *engine.Tx) error {
		for i := 0; i < 5; i++ {
			if _, err := tx.Insert("stops", map[string]any{"trip": "big", "pos": i, "name": "b"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	insertStops(t, rep, "t2", 2)
	sets := localSets(t, rep) // DDL (2 migrations), 25 × 4, 1 × 20, 2 × 4
	if len(sets) != 29 {
		t.Fatalf("replica has %d ChangeSets, want 29", len(sets))
	}
	changes := 0
	for i := range sets {
		changes += len(sets[i].Changes)
	}
	res := a.apply("apply-1", sets)
	if res.Transactions != 29 || res.Applied != changes+2 || res.Skipped != 0 {
		t.Fatalf("apply_result %+v, want 29 transactions, %d applied", res.ApplyResult, changes+2)
	}

	other := newReplica(t, nil)
	b := connectAs(t, r, "acme", other) // after the push: it gets no push_changes
	// b pages through the log: whole ChangeSets, at most 10 changes a page
	// unless one ChangeSet alone is larger, cursors gap-free.
	var got []model.ChangeSet
	since := uint64(0)
	for page := 0; ; page++ {
		ch := b.getChanges(since)
		n := 0
		for i := range ch.ChangeSets {
			n += facts(&ch.ChangeSets[i])
		}
		if len(ch.ChangeSets) == 0 || (n > 10 && len(ch.ChangeSets) > 1) {
			t.Fatalf("page %d after %d: %d ChangeSets with %d facts", page, since, len(ch.ChangeSets), n)
		}
		if ch.Cursor != since+uint64(len(ch.ChangeSets)) {
			t.Fatalf("page %d after %d carries %d ChangeSets but cursor %d: not gap-free", page, since, len(ch.ChangeSets), ch.Cursor)
		}
		got = append(got, ch.ChangeSets...)
		since = ch.Cursor
		if !ch.More {
			break
		}
	}
	if since != 29 || !slices.Equal(txIDs(got), txIDs(sets)) {
		t.Fatalf("pulled %d ChangeSets up to cursor %d, want the 29 pushed in order", len(got), since)
	}
	// The big transaction came alone and whole.
	for i := range got {
		if len(got[i].Changes) == 20 && facts(&got[i]) != 20 {
			t.Fatalf("the 20-change ChangeSet came back with %d facts", facts(&got[i]))
		}
	}
	// Caught up: empty page with the current cursor.
	if ch := b.getChanges(29); ch.Cursor != 29 || ch.More || len(ch.ChangeSets) != 0 {
		t.Fatalf("caught-up page: cursor %d more %v with %d ChangeSets", ch.Cursor, ch.More, len(ch.ChangeSets))
	}
	// The pusher is not sent its own ChangeSets back; its cursor still
	// covers them.
	if ch := a.getChanges(0); ch.Cursor != 29 || ch.More || len(ch.ChangeSets) != 0 {
		t.Fatalf("own ChangeSets: cursor %d more %v with %d ChangeSets, want an empty page at 29", ch.Cursor, ch.More, len(ch.ChangeSets))
	}
	theirs := insertStops(t, other, "t3", 1)
	b.apply("apply-1", theirs)
	recvType[*wire.PushChanges](a)
	if ch := a.getChanges(0); ch.Cursor != 30 || len(ch.ChangeSets) != 1 || ch.ChangeSets[0].TransactionID != theirs[0].TransactionID {
		t.Fatalf("a's pull after b's push: cursor %d, %d ChangeSets", ch.Cursor, len(ch.ChangeSets))
	}

	// The merged replica converged with the source.
	snap := collectSnapshot(t, a, &wire.GetSnapshot{})
	if snap.rows["stops"] != 25+5+2+1 {
		t.Fatalf("relay snapshot holds %d stops, want %d", snap.rows["stops"], 33)
	}
}

func TestPushReachesOtherConnectionsOnly(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	other := newReplica(t, nil)
	a1 := connectAs(t, r, "alpha", rep)
	a2 := connectAs(t, r, "alpha", rep) // another tab of the same replica
	a3 := connect(t, r, "alpha")
	b1 := connectAs(t, r, "beta", other)
	insertStops(t, rep, "t", 3)
	sets := localSets(t, rep)

	a1.apply("apply-7", sets)
	for _, c := range []*client{a2, a3} {
		p := recvType[*wire.PushChanges](c)
		if p.Cursor != uint64(len(sets)) || !slices.Equal(txIDs(p.ChangeSets), txIDs(sets)) {
			t.Fatalf("push_changes cursor %d with %v, want cursor %d with %v", p.Cursor, txIDs(p.ChangeSets), len(sets), txIDs(sets))
		}
	}
	// Nothing was queued for the sender or for the other database.
	a1.ping()
	b1.ping()
	if ch := b1.getChanges(0); ch.Cursor != 0 || len(ch.ChangeSets) != 0 {
		t.Fatalf("database beta sees cursor %d and %d ChangeSets of alpha", ch.Cursor, len(ch.ChangeSets))
	}
	if s := collectSnapshot(t, b1, &wire.GetSnapshot{}); s.rows["stops"] != 0 || len(s.tables) != 0 {
		t.Fatalf("a snapshot of beta holds alpha's data: %+v", s.rows)
	}

	// And the other way round.
	b1.apply("apply-1", localSets(t, other))
	a1.ping()
	a2.ping()
	if ch := a2.getChanges(uint64(len(sets))); ch.Cursor != uint64(len(sets)) || len(ch.ChangeSets) != 0 {
		t.Fatalf("alpha moved to cursor %d after a push to beta", ch.Cursor)
	}

	// A push of a connection that left reaches the rest.
	a3.ws.CloseNow()
	more := insertStops(t, rep, "t", 1)
	a2.apply("apply-2", more)
	p := recvType[*wire.PushChanges](a1)
	if p.Cursor != uint64(len(sets)+1) || len(p.ChangeSets) != 1 {
		t.Fatalf("push to a1: cursor %d, %d ChangeSets", p.Cursor, len(p.ChangeSets))
	}
}

func TestPushIsPaged(t *testing.T) {
	r := startRelay(t, Config{PageChanges: 8})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "acme")
	sets := insertStops(t, rep, "t", 5) // 4 changes each: 2 per frame
	a.apply("apply-1", sets)
	var got []model.ChangeSet
	for _, want := range []uint64{2, 4, 5} {
		p := recvType[*wire.PushChanges](b)
		if p.Cursor != want {
			t.Fatalf("push_changes cursor %d, want %d", p.Cursor, want)
		}
		got = append(got, p.ChangeSets...)
	}
	if !slices.Equal(txIDs(got), txIDs(sets)) {
		t.Fatal("pushes did not carry the ChangeSets in order")
	}
}

func TestClockDriftStoresNothing(t *testing.T) {
	r := startRelay(t, Config{})
	clock := newManualClock()
	rep := newReplica(t, clock)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "acme")
	insertStops(t, rep, "now", 2)
	good := localSets(t, rep) // the DDL and 2 stops
	clock.Advance(61 * time.Second)
	ahead := insertStops(t, rep, "future", 2)

	// A batch whose every ChangeSet is ahead, and one mixing good and
	// ahead ChangeSets: both rejected whole.
	for i, batch := range [][]model.ChangeSet{ahead, append(slices.Clone(good), ahead...)} {
		a.send(&wire.ApplyChanges{RequestID: "apply-9", ChangeSets: batch})
		e := a.expectError(wire.CodeClockDrift)
		if e.RequestID != "apply-9" || !strings.Contains(e.Message, "clock drift") || !strings.Contains(e.Message, "(limit 60000 ms)") {
			t.Fatalf("batch %d: error %+v, want CLOCK_DRIFT with requestId apply-9 and a message saying clock drift and the limit", i, *e)
		}
		if !errors.Is(e, model.ErrClockDrift) {
			t.Fatalf("batch %d: %v does not match model.ErrClockDrift", i, e)
		}
	}
	b.ping() // no push
	if ch := b.getChanges(0); ch.Cursor != 0 || len(ch.ChangeSets) != 0 {
		t.Fatalf("after rejected batches: cursor %d with %d ChangeSets, want nothing stored", ch.Cursor, len(ch.ChangeSets))
	}
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); len(s.tables) != 0 {
		t.Fatalf("the merged replica holds tables %v after rejected batches", s.tables)
	}
	// The connection is fine.
	a.apply("apply-10", good)
	recvType[*wire.PushChanges](b)
	if ch := b.getChanges(0); ch.Cursor != 3 {
		t.Fatalf("cursor %d after a good batch, want 3", ch.Cursor)
	}
}

func TestMalformedChangeSetRejected(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	sets := localSets(t, rep)
	bad := insertStops(t, rep, "t", 1)
	bad[0].TransactionID = "1:0:" + bad[0].SiteID.String() // not derived from its HLC
	a.send(&wire.ApplyChanges{RequestID: "apply-1", ChangeSets: append(sets, bad...)})
	if e := a.expectError(wire.CodeApplyChangesRefused); e.RequestID != "apply-1" {
		t.Fatalf("error without the request's id: %+v", *e)
	}
	if ch := a.getChanges(0); ch.Cursor != 0 {
		t.Fatalf("cursor %d after a malformed batch, want 0", ch.Cursor)
	}
}

func TestMaxChangesPerApply(t *testing.T) {
	r := startRelay(t, Config{MaxChangesPerApply: 10})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	sets := insertStops(t, rep, "t", 3) // 12 changes
	a.send(&wire.ApplyChanges{RequestID: "apply-3", ChangeSets: sets})
	e := a.expectError(wire.CodeApplyChangesRefused)
	if e.RequestID != "apply-3" || !strings.Contains(e.Message, "limit of 10") || !strings.Contains(e.Message, "12") {
		t.Fatalf("error %+v, want one naming 12 changes and the limit of 10", *e)
	}
	a.apply("apply-4", sets[:2])
	if ch := a.getChanges(0); ch.Cursor != 2 {
		t.Fatalf("cursor %d, want 2", ch.Cursor)
	}
	// An empty apply is acknowledged and stores nothing.
	if res := a.apply("apply-5", nil); res.Transactions != 0 {
		t.Fatalf("empty apply: %+v", res.ApplyResult)
	}
}

func TestDuplicateResendDoesNotGrowLog(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "acme")
	insertStops(t, rep, "t", 4)
	sets := localSets(t, rep)
	a.apply("apply-1", sets)
	recvType[*wire.PushChanges](b)

	// The ack was "lost": the client reconnects and sends the batch again.
	a.ws.CloseNow()
	a = connectAs(t, r, "acme", rep)
	res := a.apply("apply-1", sets)
	if res.Applied != 0 || res.Skipped == 0 {
		t.Fatalf("resend: %+v, want everything skipped", res.ApplyResult)
	}
	b.ping() // nothing new was pushed
	all, cur, _ := b.pullAll(0)
	if cur != uint64(len(sets)) || len(all) != len(sets) {
		t.Fatalf("log after resend: cursor %d, %d ChangeSets, want %d", cur, len(all), len(sets))
	}

	// A resend carrying fewer facts (a cell overwritten since) adds
	// nothing either; a duplicate inside one batch is stored once.
	if _, err := rep.Update("stops", engine.Key{sets[1].Changes[0].PK[0].Text()}, map[string]any{"name": "renamed"}); err != nil {
		t.Fatal(err)
	}
	now := localSets(t, rep)
	last := now[len(now)-1]
	a.apply("apply-2", append(now, last))
	if p := recvType[*wire.PushChanges](b); len(p.ChangeSets) != 1 || p.Cursor != uint64(len(sets)+1) {
		t.Fatalf("push after the second batch: cursor %d with %d ChangeSets, want only the new one", p.Cursor, len(p.ChangeSets))
	}
	all, cur, _ = b.pullAll(0)
	if cur != uint64(len(sets)+1) || len(all) != len(sets)+1 || all[len(all)-1].TransactionID != last.TransactionID {
		t.Fatalf("after a batch of old transactions and one new twice: cursor %d, %d ChangeSets", cur, len(all))
	}
}

func TestCursorAheadOfLog(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", localSets(t, rep))
	a.send(&wire.GetChanges{Since: 2})
	e := a.expectError(wire.CodeSnapshotRequired)
	if !strings.Contains(e.Message, "another log") {
		t.Fatalf("message %q does not say the cursor comes from another log", e.Message)
	}
	a.ping()
}
