//go:build !js

package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// holdWriter takes database id's writer lock, so that the apply_changes
// sent meanwhile queue in one group (group.go), and returns a function
// that waits until n are queued and one that releases the lock.
func holdWriter(t *testing.T, r *testRelay, id string) (wait func(n int), release func()) {
	t.Helper()
	r.srv.dbMu.Lock()
	d := r.srv.dbs[id]
	r.srv.dbMu.Unlock()
	unlock, err := d.lock()
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(unlock) }
	t.Cleanup(release)
	return func(n int) {
		t.Helper()
		deadline := time.Now().Add(recvTimeout)
		for {
			d.groupMu.Lock()
			q := len(d.groupQ)
			d.groupMu.Unlock()
			if q == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d apply_changes queued, want %d", q, n)
			}
			time.Sleep(time.Millisecond)
		}
	}, release
}

// followLog reads c's frames until its apply_result or error answering
// requestID (ack or refusal) and its pushes up to cursor head, checking
// that each push continues exactly where the previous frame (push or
// position) left it, from cursor from: the order group commit promises.
// It returns the apply_result (nil after an error), the error frame (nil
// after an apply_result) and the push frames. A requestID "" waits for no
// answer (a connection that sent nothing).
func followLog(t *testing.T, c *client, requestID string, from, head uint64) (*wire.ApplyResult, *wire.Error, []*wire.PushChanges) {
	t.Helper()
	var ack *wire.ApplyResult
	var refusal *wire.Error
	var pushes []*wire.PushChanges
	at := from
	for at < head || (requestID != "" && ack == nil && refusal == nil) {
		switch m := c.recv().(type) {
		case *wire.PushChanges:
			if m.Cursor-uint64(len(m.ChangeSets)) != at {
				t.Fatalf("push_changes to cursor %d with %d ChangeSets after cursor %d: not consecutive", m.Cursor, len(m.ChangeSets), at)
			}
			at = m.Cursor
			pushes = append(pushes, m)
		case *wire.ApplyResult:
			if m.RequestID != requestID || ack != nil || refusal != nil {
				t.Fatalf("apply_result %+v, want one for %s", m, requestID)
			}
			ack = m
			if m.First != 0 {
				if m.First-1 != at {
					t.Fatalf("apply_result at %d…%d after cursor %d: out of cursor order", m.First, m.Cursor, at)
				}
				at = m.Cursor
			}
		case *wire.Error:
			if m.RequestID != requestID || ack != nil || refusal != nil {
				t.Fatalf("error %+v, want one answer for %s", *m, requestID)
			}
			refusal = m
		default:
			t.Fatalf("unexpected %s", m.Type())
		}
	}
	return ack, refusal, pushes
}

// checkLog pulls the whole log with a new connection and checks that the
// ChangeSets acknowledged by acks (request → its transactions) sit where
// their apply_result put them, with its chain value.
func checkLog(t *testing.T, r *testRelay, id string, acks map[*wire.ApplyResult][]string, head uint64) {
	t.Helper()
	all, cur, _ := connect(t, r, id).pullAll(0)
	if cur != head || uint64(len(all)) != head {
		t.Fatalf("the log holds %d entries up to cursor %d, want %d", len(all), cur, head)
	}
	chains := make([]wire.Chain, len(all)+1)
	chains[0] = wire.GenesisChain
	for i := range all {
		chains[i+1] = nextChain(chains[i], dedupKey(&all[i]))
	}
	for ack, txs := range acks {
		if ack.Cursor-ack.First+1 != uint64(len(txs)) {
			t.Fatalf("%s: position %d…%d for %d ChangeSets", ack.RequestID, ack.First, ack.Cursor, len(txs))
		}
		for i, tx := range txs {
			if got := all[ack.First-1+uint64(i)].TransactionID; got != tx {
				t.Fatalf("%s: cursor %d holds %s, want %s", ack.RequestID, ack.First+uint64(i), got, tx)
			}
		}
		if ack.Chain != chains[ack.Cursor] {
			t.Fatalf("%s: chain %s at cursor %d, the log's is %s", ack.RequestID, ack.Chain, ack.Cursor, chains[ack.Cursor])
		}
	}
}

// TestGroupCommitAnswersEachSender: apply_changes of several connections
// queued behind one apply are merged in one group, and each sender gets
// its own apply_result (its counts, its consecutive cursors, the chain
// value there) in cursor order with the pushes of the others' entries; a
// connection that sent nothing gets the whole group in one push_changes.
func TestGroupCommitAnswersEachSender(t *testing.T) {
	const writers, perPush = 8, 2
	r := startRelay(t, Config{})
	reps := make([]*engine.Engine, writers)
	cs := make([]*client, writers)
	for k := range reps {
		reps[k] = newReplica(t, nil)
		cs[k] = connectAs(t, r, "acme", reps[k])
	}
	sub := connect(t, r, "acme")
	wait, release := holdWriter(t, r, "acme")
	sent := make([][]model.ChangeSet, writers)
	for k := range cs {
		sent[k] = insertStops(t, reps[k], fmt.Sprint("w", k), perPush)
		cs[k].send(&wire.ApplyChanges{RequestID: fmt.Sprint("g-", k), ChangeSets: sent[k]})
	}
	wait(writers)
	release()
	head := uint64(writers * perPush)
	acks := map[*wire.ApplyResult][]string{}
	seen := map[uint64]bool{}
	for k, c := range cs {
		ack, e, _ := followLog(t, c, fmt.Sprint("g-", k), 0, head)
		if e != nil {
			t.Fatalf("writer %d: %+v", k, *e)
		}
		if ack.Applied != perPush*4 || ack.Skipped != 0 || ack.Transactions != perPush {
			t.Fatalf("writer %d: counts %+v, want %d applied in %d transactions", k, ack.ApplyResult, perPush*4, perPush)
		}
		if seen[ack.First] {
			t.Fatalf("writer %d: position %d told twice", k, ack.First)
		}
		seen[ack.First] = true
		acks[ack] = txIDs(sent[k])
	}
	_, _, pushes := followLog(t, sub, "", 0, head)
	if len(pushes) != 1 {
		t.Errorf("the subscriber got the group in %d push_changes, want 1", len(pushes))
	}
	checkLog(t, r, "acme", acks, head)
}

// TestGroupCommitRefusesAlone: in a group, a request the relay refuses
// (before the merge: a resend with other facts; in it: a value that does
// not fit its declared column, clock drift) is refused alone with its own
// error, and the others are stored and acknowledged with gap-free
// cursors.
func TestGroupCommitRefusesAlone(t *testing.T) {
	r := startRelay(t, Config{})
	ddl := newReplica(t, nil)
	w0 := connectAs(t, r, "acme", ddl)
	w0.apply("ddl", localSets(t, ddl)) // declares stops.pos integer: cursor 1
	resender := newReplica(t, nil)
	rs := connectAs(t, r, "acme", resender)
	held := insertStops(t, resender, "r", 1)
	rs.apply("held", held) // cursor 2
	recvType[*wire.PushChanges](w0)

	good := []*engine.Engine{newReplica(t, nil), newReplica(t, nil), newReplica(t, nil)}
	var goodC []*client
	for _, e := range good {
		goodC = append(goodC, connectAs(t, r, "acme", e))
	}
	badRep := newReplica(t, nil)
	bad := connectAs(t, r, "acme", badRep)
	clock := newManualClock()
	aheadRep := newReplica(t, clock)
	ahead := connectAs(t, r, "acme", aheadRep)
	sub := connect(t, r, "acme")

	wait, release := holdWriter(t, r, "acme")
	sent := make([][]model.ChangeSet, len(good))
	for k, c := range goodC {
		sent[k] = insertStops(t, good[k], fmt.Sprint("g", k), 1)
		c.send(&wire.ApplyChanges{RequestID: fmt.Sprint("good-", k), ChangeSets: sent[k]})
	}
	unfit := insertStops(t, badRep, "b", 1)
	for i := range unfit[0].Changes {
		if c := &unfit[0].Changes[i]; c.Column == "pos" {
			c.Value = model.Text("not an integer")
		}
	}
	bad.send(&wire.ApplyChanges{RequestID: "bad", ChangeSets: unfit})
	clock.Advance(61 * time.Second)
	ahead.send(&wire.ApplyChanges{RequestID: "ahead", ChangeSets: insertStops(t, aheadRep, "a", 1)})
	forged := held[0]
	forged.Changes = append([]model.Change(nil), forged.Changes...)
	for i := range forged.Changes {
		if c := &forged.Changes[i]; c.Column == "name" {
			c.Value = model.Text("forged")
		}
	}
	rs.send(&wire.ApplyChanges{RequestID: "forged", ChangeSets: []model.ChangeSet{forged}})
	wait(len(good) + 3)
	release()

	const from, head = 2, 2 + 3
	acks := map[*wire.ApplyResult][]string{}
	for k, c := range goodC {
		ack, e, _ := followLog(t, c, fmt.Sprint("good-", k), from, head)
		if e != nil {
			t.Fatalf("good request %d refused with the bad ones: %+v", k, *e)
		}
		acks[ack] = txIDs(sent[k])
	}
	for _, want := range []struct {
		c    *client
		id   string
		code wire.ErrorCode
		text string
	}{{bad, "bad", wire.CodeApplyChangesRefused, ""}, {ahead, "ahead", wire.CodeClockDrift, "clock drift"}, {rs, "forged", wire.CodeApplyChangesRefused, "other facts"}} {
		start := uint64(from)
		if want.c == rs {
			start = 2 // its own entry
		}
		_, e, _ := followLog(t, want.c, want.id, start, head)
		if e == nil || e.Code != want.code || !strings.Contains(e.Message, want.text) {
			t.Fatalf("%s: answered %+v, want %s saying %q", want.id, e, want.code, want.text)
		}
	}
	followLog(t, sub, "", from, head)
	checkLog(t, r, "acme", acks, head)
}

// TestGroupCommitConcurrentSenders: many connections pushing at once, each
// waiting for its apply_result before the next push (as the sync client
// does), get every acknowledgement with a position of their own; the
// positions cover the log without gaps or overlaps, in cursor order with
// the pushes each connection receives.
func TestGroupCommitConcurrentSenders(t *testing.T) {
	const writers, pushes = 8, 12
	r := startRelay(t, Config{})
	reps := make([]*engine.Engine, writers)
	cs := make([]*client, writers)
	for k := range reps {
		reps[k] = newReplica(t, nil)
		cs[k] = connectAs(t, r, "acme", reps[k])
	}
	sub := connect(t, r, "acme")
	head := uint64(writers * pushes)
	var mu sync.Mutex
	acks := map[*wire.ApplyResult][]string{}
	var wg sync.WaitGroup
	errs := make(chan string, writers)
	for k, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var at uint64
			for n := 0; n < pushes; n++ {
				sets := insertStops(t, reps[k], fmt.Sprint("w", k), 1)
				id := fmt.Sprint("w", k, "-", n)
				c.send(&wire.ApplyChanges{RequestID: id, ChangeSets: sets})
				for {
					b, err := c.read(recvTimeout)
					if err != nil {
						errs <- fmt.Sprintf("writer %d: %v", k, err)
						return
					}
					m, err := wire.Decode(b)
					if err != nil {
						errs <- err.Error()
						return
					}
					if p, ok := m.(*wire.PushChanges); ok {
						// Its own entries come as apply_results, in
						// cursor order with the others' pushes.
						if p.Cursor-uint64(len(p.ChangeSets)) != at {
							errs <- fmt.Sprintf("writer %d: push to %d with %d sets after cursor %d", k, p.Cursor, len(p.ChangeSets), at)
							return
						}
						at = p.Cursor
						continue
					}
					ack, ok := m.(*wire.ApplyResult)
					if !ok || ack.RequestID != id || ack.First == 0 || ack.First != ack.Cursor || ack.Applied != 4 {
						errs <- fmt.Sprintf("writer %d: %s answered %+v", k, id, describe(m))
						return
					}
					if ack.First-1 != at {
						errs <- fmt.Sprintf("writer %d: apply_result at %d after cursor %d", k, ack.First, at)
						return
					}
					at = ack.Cursor
					mu.Lock()
					acks[ack] = txIDs(sets)
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	_, _, ps := followLog(t, sub, "", 0, head)
	t.Logf("%d pushes of %d entries to the subscriber", len(ps), head)
	checkLog(t, r, "acme", acks, head)
}

// TestGroupCommitBoundedAndDuplicates: a group takes at most
// MaxChangesPerApply changes of the queue (the rest waits for the next
// group, in order), and a transaction two connections of one site send in
// one group is stored once, the second copy acknowledged as held (no
// position), as if they had come apart.
func TestGroupCommitBoundedAndDuplicates(t *testing.T) {
	r := startRelay(t, Config{MaxChangesPerApply: 8})
	reps := []*engine.Engine{newReplica(t, nil), newReplica(t, nil), newReplica(t, nil), newReplica(t, nil)}
	var cs []*client
	for _, e := range reps {
		cs = append(cs, connectAs(t, r, "acme", e))
	}
	twin := connectAs(t, r, "acme", reps[0]) // a second connection of site 0
	commits := func() float64 {
		resp, err := http.Get(r.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		for _, line := range strings.Split(readAllBody(t, resp.Body), "\n") {
			if v, ok := strings.CutPrefix(line, "replica_relay_apply_commits_total "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatal("no replica_relay_apply_commits_total in /metrics")
		return 0
	}
	before := commits()
	wait, release := holdWriter(t, r, "acme")
	sent := make([][]model.ChangeSet, len(cs))
	queued := 0
	for k, c := range cs {
		sent[k] = insertStops(t, reps[k], fmt.Sprint("w", k), 1) // 4 changes
		c.send(&wire.ApplyChanges{RequestID: fmt.Sprint("b-", k), ChangeSets: sent[k]})
		queued++
		wait(queued) // queued in this order
		if k == 0 {
			twin.send(&wire.ApplyChanges{RequestID: "twin", ChangeSets: sent[0]})
			queued++
			wait(queued)
		}
	}
	release()
	const head = 4
	acks := map[*wire.ApplyResult][]string{}
	for k, c := range cs {
		ack, e, _ := followLog(t, c, fmt.Sprint("b-", k), 0, head)
		if e != nil {
			t.Fatalf("request %d: %+v", k, *e)
		}
		if ack.First != uint64(k+1) {
			t.Fatalf("request %d stored at %d, want %d (queue order): %+v", k, ack.First, k+1, ack)
		}
		acks[ack] = txIDs(sent[k])
	}
	var twinAck *wire.ApplyResult
	for twinAck == nil {
		switch m := twin.recv().(type) {
		case *wire.ApplyResult:
			twinAck = m
		case *wire.PushChanges:
		default:
			t.Fatalf("twin: unexpected %s", m.Type())
		}
	}
	if twinAck.RequestID != "twin" || twinAck.First != 0 || twinAck.Applied != 0 || twinAck.Skipped != 4 {
		t.Fatalf("the second copy: %+v, want 4 skipped and no position", twinAck)
	}
	// 20 changes queued in requests of 4 and a limit of 8: groups {b-0,
	// twin}, {b-1, b-2}, {b-3}. The first, holding one transaction
	// twice, is applied one by one: b-0's commit, then twin's copy held.
	if got := commits() - before; got != 3 {
		t.Errorf("%v commits, want 3 (groups of at most 8 changes; b-0 and twin one by one)", got)
	}
	checkLog(t, r, "acme", acks, head)
}

// TestGroupCommitSealed: a sealed database's envelopes are grouped too:
// each sender acknowledged with its own position, a ChangeSet whose
// visible hlc does not name its transaction refused alone, an envelope
// too far ahead refused alone (CLOCK_DRIFT).
func TestGroupCommitSealed(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	kr := testKeyring(t, 5)
	reps := []*engine.Engine{newReplica(t, clock), newReplica(t, clock), newReplica(t, clock), newReplica(t, clock), newReplica(t, clock)}
	var cs []*client
	for _, e := range reps {
		c := dial(t, r, nil)
		c.site = e.SiteID()
		c.sealedHandshake("vault")
		cs = append(cs, c)
	}
	wait, release := holdWriter(t, r, "vault")
	sent := make([][]model.ChangeSet, len(cs))
	for k, c := range cs {
		sent[k] = sealAll(t, kr, "vault", insertStops(t, reps[k], fmt.Sprint("w", k), 2))
		switch k {
		case 3: // names another transaction
			sent[k][1].TransactionID = sent[k][0].TransactionID + "x"
		case 4:
			sent[k][0].HLC.Wall = clock.Now() + 2*model.MaxDrift
			sent[k][0].TransactionID = sent[k][0].HLC.TransactionID()
		}
		c.send(&wire.ApplyChanges{RequestID: fmt.Sprint("s-", k), ChangeSets: sent[k]})
	}
	wait(len(cs))
	release()
	const head = 6
	acks := map[*wire.ApplyResult][]string{}
	for k, c := range cs {
		ack, e, _ := followLog(t, c, fmt.Sprint("s-", k), 0, head)
		switch {
		case k == 3 && (e == nil || e.Code != wire.CodeApplyChangesRefused),
			k == 4 && (e == nil || e.Code != wire.CodeClockDrift):
			t.Fatalf("request %d answered %+v %+v, want it refused", k, ack, e)
		case k < 3 && e != nil:
			t.Fatalf("request %d refused with the bad ones: %+v", k, *e)
		case k < 3:
			if ack.Applied != 2 || ack.Transactions != 2 {
				t.Fatalf("request %d: %+v, want 2 envelopes applied", k, ack.ApplyResult)
			}
			acks[ack] = txIDs(sent[k])
		}
	}
	puller := dial(t, r, nil)
	puller.sealedHandshake("vault")
	all, cur, _ := puller.pullAll(0)
	if cur != head || len(all) != head {
		t.Fatalf("the log holds %d entries up to %d, want %d", len(all), cur, head)
	}
	for ack, txs := range acks {
		for i, tx := range txs {
			if got := all[ack.First-1+uint64(i)].TransactionID; got != tx {
				t.Fatalf("%s: cursor %d holds %s, want %s", ack.RequestID, ack.First+uint64(i), got, tx)
			}
		}
	}
}

// TestGroupCommitFinishesPendingPruning: a group queued while a pruning
// another relay left pending ("horizonPending") waits on shared storage
// finds it inside its transaction, before it writes, finishes it, and is
// applied again, still as one group (one commit): the late delete among
// its requests keeps its tombstone, appended after the mark, as in
// TestSharedPendingPruningFinishedBeforeAppend.
func TestGroupCommitFinishesPendingPruning(t *testing.T) {
	clock := newManualClock()
	st := newTestShared()
	r := startRelay(t, Config{Clock: clock, Storage: st})
	rep := newReplica(t, clock)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", insertStops(t, rep, "kept", 1))

	wall := clock.Now() - uint64(engine.DefaultRetention.Milliseconds())
	store, _ := st.Open("acme")
	err := store.Update(func(tx kv.Tx) error {
		cur, err := getCounter(tx, keyCursor)
		if err != nil {
			return err
		}
		ch, _, err := chainAt(tx, cur)
		if err != nil {
			return err
		}
		if err := tx.Put(bucketRelay, keyHorizonPending, binary.BigEndian.AppendUint64(nil, wall)); err != nil {
			return err
		}
		if err := tx.Put(bucketHorizons, cursorKey(cur), encodeMark(wire.Horizon{Cursor: cur, Wall: wall, Chain: ch})); err != nil {
			return err
		}
		return putMarkSites(tx, cur)
	})
	if err != nil {
		t.Fatal(err)
	}

	late := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	lc := connectAs(t, r, "acme", late)
	others := []*engine.Engine{newReplica(t, clock), newReplica(t, clock)}
	var oc []*client
	for _, e := range others {
		oc = append(oc, connectAs(t, r, "acme", e))
	}
	before := metricValue(t, r, "replica_relay_apply_commits_total")
	wait, release := holdWriter(t, r, "acme")
	lc.send(&wire.ApplyChanges{RequestID: "late", ChangeSets: deleteStop(t, late)})
	for k, c := range oc {
		c.send(&wire.ApplyChanges{RequestID: fmt.Sprint("o-", k), ChangeSets: insertStops(t, others[k], fmt.Sprint("o", k), 1)})
	}
	wait(3)
	release()
	const head = 1 + 2 + 2
	for k, c := range append([]*client{lc}, oc...) {
		id := "late"
		if k > 0 {
			id = fmt.Sprint("o-", k-1)
		}
		if _, e, _ := followLog(t, c, id, 1, head); e != nil {
			t.Fatalf("%s: %+v", id, *e)
		}
	}
	if got := metricValue(t, r, "replica_relay_apply_commits_total") - before; got != 1 {
		t.Errorf("%v commits, want 1 (one group, applied again after the pruning)", got)
	}
	if err := store.View(func(tx kv.Tx) error {
		_, err := tx.Get(bucketRelay, keyHorizonPending)
		if !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("horizonPending after the group: %v, want none", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := collectSnapshot(t, connect(t, r, "acme"), &wire.GetSnapshot{})
	if s.header.Horizon != wall {
		t.Fatalf("snapshot header horizon %d, want the stored mark's %d", s.header.Horizon, wall)
	}
	if s.rows["stops"] != 4 {
		t.Fatalf("%d stop rows, want 4 (the kept stop, the late delete's tombstone appended after the mark, the two others' stops)", s.rows["stops"])
	}
}

// metricValue reads a metric without labels from r's /metrics.
func metricValue(t *testing.T, r *testRelay, name string) float64 {
	t.Helper()
	resp, err := http.Get(r.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, line := range strings.Split(readAllBody(t, resp.Body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}
