//go:build !js

package relay

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Group commit. The applies of one database are serialized (applyMu, and
// the shared storage's lock), and each costs one storage commit: an fsync
// of the database's bbolt file, a COMMIT round trip on PostgreSQL. Under
// load most of an apply's time is that commit, so pushes of a database's
// other connections queue behind it one by one. Instead, while one apply
// of a database runs, the apply_changes of its other connections wait in
// the database's queue (groupQ); the next leader takes the whole queue
// and merges it in one kv transaction: one engine.Apply over every
// queued ChangeSet (the merge is the same for any order and grouping),
// which decides inside its transaction which of them the log holds
// already (Keep) and whose Extra appends each request's other ChangeSets
// to the arrival log in queue order, so each request's entries are
// consecutive (mergeGroup; a request that came alone is a group of one:
// on PostgreSQL the same four round trips either way). Each sender is
// then answered with its own counts (engine.ApplyOptions.SetResults) and
// position, in cursor order with the pushes: request i's apply_result is
// queued to its sender before request i+1's entries are pushed to it, so a
// sender does not see the next entries before its own position (and pull
// for the gap); and the group's entries reach each connection in as few
// push_changes as its own entries allow, encoded once for the connections
// that sent none of them (fanOutGroup). What a request refuses is its
// own: a request whose ChangeSets a check refuses (a sealed ChangeSet's
// hlc before the transaction, a resend with other facts in it) fails
// alone, left out of the merge; when the group's merge
// fails (a ChangeSet the engine refuses, clock drift, a storage error),
// nothing of it was stored and its requests are applied again one by one,
// each answered as if it had come alone. A commit whose outcome is unknown
// (kv.ErrCommitUnknown) answers every request of the group so: a resend
// is deduplicated.

// errRegroup aborts a group's transaction before it writes when two of
// its requests carry one transaction (mergeGroup), or whose append did not
// go as its checks predicted: its requests are applied one by one
// instead.
var errRegroup = errors.New("relay: group append differs from its checks; applying one by one")

// applyReq is one apply_changes of a database's group (not a repair push:
// those are merged alone, under the lock).
type applyReq struct {
	sender    *conn
	requestID string
	sets      []model.ChangeSet // prepared (prepareBatch)
	pend      []pendingSet
	facts     int // changes and migrations of sets

	// done is closed when the request was served (res, st, err,
	// answered set) or when its goroutine is to lead the next group
	// (lead).
	done chan struct{}
	lead bool

	res      model.ApplyResult
	st       stored
	err      error
	answered bool // the apply_result was queued to sender in cursor order

	// The leader's working state (mergeGroup).
	held      model.ApplyResult // the counts of its ChangeSets the log holds
	kept      int               // its ChangeSets the log does not hold
	refusedIn error             // refused in the group's transaction
	added     []arrival
	marks     []wire.Horizon
	failed    bool // refused before or in the merge: err is its own
}

// applyGrouped serves r (prepared, plain or sealed, not a repair push) as
// part of a group, and returns when it is served: its results are in r.
func (d *database) applyGrouped(r *applyReq) {
	r.done = make(chan struct{})
	d.groupMu.Lock()
	d.groupQ = append(d.groupQ, r)
	lead := !d.leading
	d.leading = true
	d.groupMu.Unlock()
	if !lead {
		<-r.done
		if !r.lead {
			return
		}
	}
	d.leadGroup(r)
}

// leadGroup takes the writer lock and then the queue (self first: a
// leader's request heads the queue) up to MaxChangesPerApply changes (at
// least one request), serves it as one group, hands the leadership to the
// first request left in the queue (or gives it up), and wakes the group's
// other requests.
func (d *database) leadGroup(self *applyReq) {
	unlock, err := d.lock()
	d.groupMu.Lock()
	n, k := 0, 0
	for ; k < len(d.groupQ); k++ {
		if f := d.groupQ[k].facts; k == 0 || n+f <= d.s.cfg.MaxChangesPerApply {
			n += f
			continue
		}
		break
	}
	group := d.groupQ[:k:k]
	d.groupQ = append([]*applyReq(nil), d.groupQ[k:]...)
	d.groupMu.Unlock()
	defer d.finishGroup(self, group)
	if err != nil {
		for _, r := range group {
			r.err = err
		}
		return
	}
	defer unlock()
	defer func() {
		// A panic (a relay bug) fails the requests not answered yet,
		// and the lock, the queue and the waiters are released
		// (above) as it unwinds.
		if p := recover(); p != nil {
			for _, r := range group {
				if r.err == nil && !r.answered {
					r.err = fmt.Errorf("relay: applying a group failed: %v", p)
				}
			}
			panic(p)
		}
	}()
	d.applyGroupLocked(group, d.s.cfg.Clock.Now())
}

// finishGroup hands the leadership to the first request left in the queue
// (or gives it up) and wakes group's requests but self.
func (d *database) finishGroup(self *applyReq, group []*applyReq) {
	d.groupMu.Lock()
	if len(d.groupQ) > 0 {
		next := d.groupQ[0]
		next.lead = true
		close(next.done)
	} else {
		d.leading = false
	}
	d.groupMu.Unlock()
	for _, r := range group {
		if r != self {
			close(r.done)
		}
	}
}

// applyGroupLocked serves group under the writer lock (see "Group commit"
// above), arrived at nowMs.
func (d *database) applyGroupLocked(group []*applyReq, nowMs uint64) {
	_, err := d.mergeGroup(group, nowMs)
	var todo []*applyReq // the requests not refused alone
	for _, r := range group {
		if !r.failed {
			todo = append(todo, r)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errAllHeld):
		// Resends only (res: their counts as held), or refused: each
		// answered by its own goroutine.
		return
	case errors.Is(err, errRegroup):
		d.applyOneByOne(todo, nowMs)
		return
	case len(todo) <= 1 || errors.Is(err, kv.ErrCommitUnknown):
		// Its own failure (or, unknown, everyone's): answered as if
		// alone.
		for _, r := range todo {
			r.err = err
		}
		return
	default:
		// Which request's content failed the merge is not known:
		// each again, alone.
		d.applyOneByOne(todo, nowMs)
		return
	}
	d.s.metrics.applyCommits.Inc()
	var appended []*applyReq
	for _, r := range todo {
		if len(r.added) > 0 {
			r.st = d.storedOf(r.sender, r.added, r.marks)
			appended = append(appended, r)
		}
	}
	d.publishGroup(appended)
}

// mergeGroup merges (sealed: stores) the ChangeSets of the requests of
// group (one or more, prepared) that the log does not hold yet and appends
// them, in one kv transaction under the writer lock, arrived at nowMs: the
// engine's first read carries every key the rest reads (appendKeys), and
// inside the transaction, before anything is written (engine
// ApplyOptions.Keep), it finds a pruning left pending (pendingIn: the
// transaction is abandoned, the pruning finished, and the group runs
// again), then the transactions the log holds, per request (heldIn), then
// a transaction in two requests (errRegroup: two connections of one site
// resending it; applied one by one, the second is found held and compared
// with the first, checkResend, as when they come apart). The group's
// ChangeSets kept are appended by one appendArrivals (one read of the
// head, its chain value and marks), each request's consecutively, in
// queue order.
//
// A request refused for itself (checkSealed before the transaction,
// checkResend in it) is failed (err) whatever the outcome and left out.
// On success (nil) each other request holds its counts (res: its held
// ones, and its share of the merge, engine.ApplyOptions.SetResults), its
// entries (added) and the marks at the cursor before them (marks, on the
// first request that appended), and last is the log's head after the
// commit. errAllHeld says nothing was left to append (res: the held
// counts); otherwise the error is the merge's (a ChangeSet the engine
// refuses, clock drift, a storage error, errRegroup): nothing of the
// group was stored.
func (d *database) mergeGroup(group []*applyReq, nowMs uint64) (last uint64, err error) {
	var live []*applyReq
	for _, r := range group {
		if r.failed {
			continue
		}
		if d.sealed {
			if err := checkSealed(r.sets, nowMs); err != nil {
				r.err, r.failed = err, true
				continue
			}
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return 0, errAllHeld
	}
	var all []model.ChangeSet
	var pendAll []pendingSet
	for _, r := range live {
		all = append(all, r.sets...)
		pendAll = append(pendAll, r.pend...)
	}
	prefetch := d.appendKeys(pendAll)
	var kept []pendingSet
	keep := func(tx kv.Tx) ([]bool, error) {
		if err := d.pendingIn(tx); err != nil {
			return nil, err
		}
		flags := make([]bool, 0, len(pendAll))
		kept = kept[:0]
		var seen map[string]bool
		if len(live) > 1 {
			seen = make(map[string]bool, len(pendAll))
		}
		for _, r := range live {
			r.refusedIn, r.kept, r.held = nil, 0, model.ApplyResult{}
			k, h, err := d.heldIn(tx, r.sets, r.pend)
			switch {
			case err != nil && refused(err):
				r.refusedIn = err
				flags = append(flags, make([]bool, len(r.pend))...)
				continue
			case err != nil:
				return nil, err
			}
			r.held = h
			for i, f := range k {
				if !f {
					continue
				}
				p := r.pend[i] // a copy: r.pend stays as it is
				if seen != nil {
					if seen[string(p.key)] {
						return nil, errRegroup
					}
					seen[string(p.key)] = true
				}
				// Found not held under the lock, in this
				// transaction: appendArrivals does not look it
				// up again.
				p.fresh = true
				kept = append(kept, p)
				r.kept++
			}
			flags = append(flags, k...)
		}
		if len(kept) == 0 {
			return nil, errAllHeld
		}
		return flags, nil
	}
	appendAll := func(tx kv.Tx) error {
		added, marks, cur, err := d.appendArrivals(tx, kept, nowMs)
		if err != nil {
			return err
		}
		if len(added) != len(kept) {
			return errRegroup
		}
		last = cur
		for _, r := range live {
			r.added, added = added[:r.kept:r.kept], added[r.kept:]
			r.marks = nil
			if r.kept > 0 && marks != nil {
				r.marks, marks = marks, nil // at the head, before the first entry
			}
		}
		return nil
	}
	var per []model.ApplyResult
	for attempt := 0; ; attempt++ {
		if d.sealed {
			err = d.store.Update(func(tx kv.Tx) error {
				if p, ok := tx.(kv.Prefetcher); ok {
					if err := p.Prefetch(prefetch); err != nil {
						return err
					}
				}
				if _, err := keep(tx); err != nil {
					return err
				}
				return appendAll(tx)
			})
		} else {
			_, err = d.eng.Apply(all, engine.ApplyOptions{
				Prefetch:   prefetch,
				Keep:       keep,
				SetResults: &per,
				Extra:      func(tx kv.Tx, _ model.ApplyResult) error { return appendAll(tx) },
			})
		}
		var pp *errPrunePending
		if attempt == 0 && errors.As(err, &pp) {
			// Nothing written: finish the pruning first (nothing is
			// appended between a mark and the end of its pruning),
			// then run again.
			if err = d.finishPending(pp.wall); err != nil {
				break
			}
			continue
		}
		break
	}
	for _, r := range live {
		if r.refusedIn != nil {
			r.err, r.failed = r.refusedIn, true
		}
	}
	if errors.Is(err, errAllHeld) {
		for _, r := range live {
			if !r.failed {
				r.res = r.held
			}
		}
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	off := 0
	for _, r := range live {
		n := len(r.sets)
		switch {
		case r.failed:
		case d.sealed:
			r.res = model.ApplyResult{Applied: len(r.added), Skipped: r.held.Skipped, Transactions: r.held.Transactions + r.kept}
		default:
			r.res = r.held
			for _, p := range per[off : off+n] {
				r.res.Applied += p.Applied
				r.res.Skipped += p.Skipped
				r.res.Conflicts += p.Conflicts
				r.res.Held += p.Held
				r.res.Transactions += p.Transactions
			}
		}
		off += n
	}
	return last, nil
}

// applyOneByOne applies each request of group alone (under the writer
// lock), as applyLocked does for a request that came alone, and answers
// each that succeeds before the next one's entries are pushed.
func (d *database) applyOneByOne(group []*applyReq, nowMs uint64) {
	for _, r := range group {
		if r.failed {
			continue
		}
		r.res, r.st, r.err = d.applyLocked(r.sender, r.sets, r.pend, nowMs)
		if r.err == nil {
			// Before the next request's entries are pushed.
			d.answer(r)
		}
	}
}

// publishGroup fans out the entries of the requests of a group (served,
// in cursor order: each request's added follow the previous one's) as
// publish does, and answers each request in cursor order with them
// (fanOutGroup), then tells the other relays once.
func (d *database) publishGroup(group []*applyReq) {
	var first *applyReq
	head := d.cursor.Load()
	marks := false
	for _, r := range group {
		if len(r.added) > 0 {
			if first == nil {
				first = r
			}
			head = r.added[len(r.added)-1].cursor
		}
		marks = marks || len(r.marks) > 0
	}
	if first == nil {
		// Nothing appended (every ChangeSet held meanwhile).
		for _, r := range group {
			d.answer(r)
		}
		return
	}
	if d.shared != nil && d.cursor.Load() < first.added[0].cursor-1 {
		d.catchUpLocked(first.added[0].cursor - 1)
	}
	if head > d.cursor.Load() {
		d.cursor.Store(head)
	}
	if marks {
		// A horizon mark (rare: one per retention step) carries each
		// site its siteHlc: request by request, as broadcast does.
		for _, r := range group {
			d.answer(r)
			d.broadcast(r.sender, r.added, r.marks)
		}
	} else {
		d.fanOutGroup(group)
	}
	d.notify(head)
}

// fanOutGroup pushes the entries a group appended (without horizon marks)
// to every connection of the database: a connection that sent none of the
// group's requests gets them all in as few push_changes as the page limits
// allow, encoded once for all such connections; the sender of request i
// gets the entries of the requests before it, then its apply_result
// (answer), then those after it, so that each frame carries consecutive
// cursors and none of its own. Never blocks (conn.push).
func (d *database) fanOutGroup(group []*applyReq) {
	sent := make(map[*conn]int, len(group))
	var all []arrival
	for i, r := range group {
		sent[r.sender] = i
		all = append(all, r.added...)
	}
	d.connsMu.Lock()
	targets := make([]*conn, 0, len(d.conns))
	for c := range d.conns {
		targets = append(targets, c)
	}
	d.connsMu.Unlock()
	// First the connections that sent nothing (as before group commit,
	// every push is queued before the senders are answered), then the
	// senders.
	var frames [][]byte // all's, for the connections that sent nothing
	for _, c := range targets {
		if _, sender := sent[c]; !sender {
			if frames == nil {
				frames = d.pushFrames(all, nil)
			}
			pushAll(c, frames)
		}
	}
	answered := make([]bool, len(group))
	for _, c := range targets {
		i, sender := sent[c]
		if !sender {
			continue
		}
		var before, after []arrival
		for j, r := range group {
			switch {
			case j < i:
				before = append(before, r.added...)
			case j > i:
				after = append(after, r.added...)
			}
		}
		ok := len(before) == 0 || pushAll(c, d.pushFrames(before, nil))
		d.answer(group[i])
		answered[i] = true
		if ok && len(after) > 0 {
			pushAll(c, d.pushFrames(after, nil))
		}
	}
	for i, r := range group {
		if !answered[i] {
			d.answer(r) // its connection has left the database
		}
	}
}

// pushAll pushes frames to c in order, stopping at the first that c does
// not take (conn.push), and reports whether it took them all.
func pushAll(c *conn, frames [][]byte) bool {
	for _, f := range frames {
		if !c.push(f) {
			return false
		}
	}
	return true
}

// answer queues r's apply_result to its sender when its send queue has
// room (r.answered); otherwise the sender's goroutine sends it, waiting
// for room, once r is done.
func (d *database) answer(r *applyReq) {
	ar := &wire.ApplyResult{RequestID: r.requestID, ApplyResult: r.res}
	r.st.position(ar)
	data, err := wire.Encode(ar)
	if err != nil {
		return // the sender's goroutine reports it
	}
	select {
	case r.sender.out <- outFrame{data: data, typ: wire.TypeApplyResult}:
		r.answered = true
	default:
	}
}
