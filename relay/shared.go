//go:build !js

package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/wire"
)

// Several relay processes on one SharedStorage (storage.go). A database's
// state lives in its store; what a relay keeps in memory of it is a cache
// it revalidates:
//
//   - the head: d.cursor is what this process has fanned out; other
//     relays append after it. A commit here (publish) or a notification
//     (remoteHead) first sends this process's connections the entries
//     other relays appended since (catchUpLocked), so every connection
//     receives the log in cursor order, without gaps;
//   - the newest horizon mark (d.horizon): read again under the lock
//     before a mark is made, and whenever a catch-up passes a mark;
//   - applyMu orders this process's goroutines; SharedStorage.Lock, taken
//     after it, orders the processes.

// sharedTimeout bounds a wait on the shared storage's locks and
// notifications.
const sharedTimeout = 30 * time.Second

// lock takes the database's writer lock: applyMu, and with shared storage
// the storage's lock too. The error is a storage error (applyMu is not
// held then).
func (d *database) lock() (unlock func(), err error) {
	d.applyMu.Lock()
	if d.shared == nil {
		return d.applyMu.Unlock, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	release, err := d.shared.Lock(ctx, d.id)
	if err != nil {
		d.applyMu.Unlock()
		return nil, fmt.Errorf("relay: taking the writer lock of database %q: %w", d.id, err)
	}
	return func() {
		release()
		d.applyMu.Unlock()
	}, nil
}

// publish ends an apply (under lock): it fans out, in cursor order, the
// entries other relays appended since this process's last fan-out, then
// added (the marks at the cursor before the first: marks) to every
// connection but sender, records head (the log's head after the commit)
// as fanned out, and tells the other relays.
func (d *database) publish(sender *conn, added []arrival, marks []wire.Horizon, head uint64) {
	if d.shared != nil {
		before := head
		if len(added) > 0 {
			before = added[0].cursor - 1
		}
		if d.cursor.Load() < before {
			d.catchUpLocked(before)
		}
	}
	if head > d.cursor.Load() {
		d.cursor.Store(head)
	}
	d.broadcast(sender, added, marks)
	if len(added) > 0 {
		d.notify(head)
	}
}

// notify tells the other relays on shared storage (none: nothing) that the
// log's head is now head, unless the transaction that moved the head there
// carried the notification already (d.notified, TxNotifier).
func (d *database) notify(head uint64) {
	if d.shared == nil || d.notified == head {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := d.shared.Notify(ctx, d.id, head); err != nil {
		// The other relays' periodic check finds the new head.
		d.log.Warn("relay: notifying the other relays of a new head failed", "cursor", head, "err", err)
	}
}

// remoteHead handles a notification of another relay: database d's head
// is at least head (0: unknown, read it). The connections of this process
// get what follows their last push. A notification is sent once its
// transaction committed, so the log holds head: no read of the head.
func (d *database) remoteHead(head uint64) {
	if head != 0 && head <= d.cursor.Load() {
		return
	}
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if head == 0 {
		h, err := d.head()
		if err != nil {
			d.log.Warn("relay: reading the head after a notification failed; the next check retries", "err", err)
			return
		}
		head = h
	}
	d.catchUpLocked(head)
}

// notifyIn queues, in the transaction tx moving the head to head, the
// other relays' notification of it when the storage can (TxNotifier),
// and records whether it did for publish.
func (d *database) notifyIn(tx kv.Tx, head uint64) {
	d.notified = 0
	if n, ok := d.shared.(TxNotifier); ok && n.NotifyTx(tx, d.id, head) {
		d.notified = head
	}
}

// finishPruning finishes, under the writer lock and before an apply
// appends, the pruning of a horizon mark that did not complete
// ("horizonPending": another relay on the shared storage stopped between
// the mark and the end of the pruning, or this process's pruning failed
// with a storage error), so that nothing is appended between a mark and
// the end of its pruning, as when a relay finishes it at open
// (loadHorizon): a late delete appended after the mark (its tombstone
// older than the mark's wall) keeps its tombstone until the next mark, as
// on the clients that applied the mark before it. Finished later (the
// next maintenance pass with shared storage, the next open alone), the
// pruning took those tombstones from the merged replica alone.
//
// An apply_changes checks it inside its merge's transaction, before
// anything is written (pendingIn, with the transaction's first read:
// appendKeys), and finishes the pruning it finds (finishPending) before
// running again; a repair push reads it first (finishPruning, a
// transaction of its own). Either reads the store only when checksPending
// says so. The error is a storage error.
func (d *database) finishPruning() error {
	if !d.checksPending() {
		return nil
	}
	var pending uint64
	err := d.store.View(func(tx kv.Tx) error {
		var err error
		pending, err = getCounter(tx, keyHorizonPending)
		return err
	})
	if err != nil {
		return err
	}
	if pending == 0 {
		d.pruneLeft = false
		return nil
	}
	return d.finishPending(pending)
}

// checksPending tells whether an apply reads "horizonPending" (under the
// writer lock): with shared storage always (another relay may have left
// one), alone only after this process's pruning failed (pruneLeft).
func (d *database) checksPending() bool {
	return d.shared != nil || d.pruneLeft
}

// errPrunePending aborts an apply's transaction that found a pruning
// left pending (pendingIn) at the mark's wall, before it wrote anything:
// the pruning is finished (finishPending), then the apply runs again.
type errPrunePending struct{ wall uint64 }

func (e *errPrunePending) Error() string {
	return fmt.Sprintf("relay: the pruning at the tombstone horizon %d is pending", e.wall)
}

// pendingIn reads "horizonPending" in tx (an apply's, under the writer
// lock, before it writes) when checksPending says so, and returns an
// *errPrunePending when a pruning is pending.
func (d *database) pendingIn(tx kv.Tx) error {
	if !d.checksPending() {
		return nil
	}
	pending, err := getCounter(tx, keyHorizonPending)
	if err != nil {
		return err
	}
	if pending != 0 {
		return &errPrunePending{wall: pending}
	}
	d.pruneLeft = false
	return nil
}

// finishPending finishes the pruning pending at wall (under the writer
// lock; see finishPruning).
func (d *database) finishPending(wall uint64) error {
	res, err := d.prunePending(wall)
	if err != nil {
		return fmt.Errorf("relay: finishing the pruning at the tombstone horizon %d: %w", wall, err)
	}
	d.pruneLeft = false
	d.log.Info("relay: finished a pruning at a tombstone horizon left pending", "horizon", wall, "tombstones", res.Tombstones, "rows", res.Rows)
	return nil
}

// head reads the log's head from the store.
func (d *database) head() (uint64, error) {
	var cur uint64
	err := d.store.View(func(tx kv.Tx) error {
		var err error
		cur, err = getCounter(tx, keyCursor)
		return err
	})
	return cur, err
}

// catchUpBatch bounds the entries a catch-up reads per kv transaction.
const catchUpBatch = 512

// catchUpLocked sends every connection the entries from d.cursor to to
// (appended by other relays; under applyMu) and the horizon marks at
// d.cursor … to−1 (a mark at to travels with the next push, whose range
// starts there, as on a single relay), then records to as fanned out. A
// failed read leaves d.cursor where the read stopped: the next commit or
// notification continues from there, and a client that sees a gap pulls it
// (wire's push_changes).
func (d *database) catchUpLocked(to uint64) {
	for from := d.cursor.Load(); from < to; from = d.cursor.Load() {
		hi := min(to, from+catchUpBatch)
		var added []arrival
		var marks []wire.Horizon
		err := d.store.View(func(tx kv.Tx) error {
			// What the chain values and marks below read travels
			// with the Scan's first page (kv.Prefetcher).
			p, prefetch := tx.(kv.Prefetcher)
			if prefetch {
				if err := p.Prefetch(catchUpKeys(from, hi)); err != nil {
					return err
				}
			}
			var derr error
			err := tx.Scan(bucketArrivals, kv.Range{Start: cursorKey(from + 1), End: cursorKey(hi + 1)}, func(k, v []byte) bool {
				c, err := parseUint64(k)
				if err != nil {
					derr = err
					return false
				}
				r, err := decodeRecord(v)
				if err != nil {
					derr = err
					return false
				}
				added = append(added, arrival{cursor: c, facts: r.facts, json: append([]byte(nil), r.json...)})
				return true
			})
			if err == nil {
				err = derr
			}
			if err != nil {
				return err
			}
			for i := range added {
				ch, ok, err := chainAt(tx, added[i].cursor)
				if err == nil && !ok {
					err = fmt.Errorf("%w: no chain value at cursor %d", errCorrupt, added[i].cursor)
				}
				if err != nil {
					return err
				}
				added[i].chain = ch
			}
			var ms []wire.Horizon
			if prefetch {
				ms, err = marksAt(tx, from, hi)
			} else {
				ms, err = marksIn(tx, from, hi)
			}
			for _, m := range ms {
				if m.Cursor < hi {
					marks = append(marks, m)
				}
			}
			return err
		})
		if err != nil {
			d.log.Warn("relay: reading the entries other relays appended failed; the next commit or notification retries", "from", from, "to", to, "err", err)
			return
		}
		if len(added) == 0 || added[0].cursor != from+1 || added[len(added)-1].cursor != hi {
			// Pruned meanwhile (a connection this far behind pulls
			// or bootstraps), or not contiguous: nothing is pushed,
			// the connections pull what follows their cursors when
			// the next push shows them a gap.
			d.cursor.Store(hi)
			continue
		}
		d.noteMarks(marks)
		d.broadcast(nil, added, marks)
		d.cursor.Store(hi)
	}
}

// catchUpKeys returns the keys a catch-up of the entries from+1 … hi
// reads besides the entries: the head and compaction point with their
// chain values (chainAt), each entry's chain value and the horizon marks
// at from … hi.
func catchUpKeys(from, hi uint64) []kv.BucketKey {
	keys := []kv.BucketKey{
		{Bucket: bucketRelay, Key: keyCursor}, {Bucket: bucketRelay, Key: keyPruned},
		{Bucket: bucketRelay, Key: keyChain}, {Bucket: bucketRelay, Key: keyPrunedChain},
	}
	for c := from; c <= hi; c++ {
		if c > from {
			keys = append(keys, kv.BucketKey{Bucket: bucketChain, Key: cursorKey(c)})
		}
		keys = append(keys, kv.BucketKey{Bucket: bucketHorizons, Key: cursorKey(c)})
	}
	return keys
}

// noteMarks keeps the newest of marks (read from the log) as d.horizon
// when it is newer than the one held.
func (d *database) noteMarks(marks []wire.Horizon) {
	if len(marks) == 0 {
		return
	}
	d.horizonMu.Lock()
	if m := marks[len(marks)-1]; m.Cursor >= d.horizon.Cursor && m.Wall > d.horizon.Wall {
		d.horizon = m
	}
	d.horizonMu.Unlock()
}

// listen runs the fan-out of the other relays' commits (shared storage
// only) until ctx ends: each notification catches up the open database
// it names, a lost connection catches up every open database, and so does
// a check every sharedCheckEvery (a notification lost in flight costs at
// most that).
func (s *Server) listen(ctx context.Context, st SharedStorage) {
	notes := make(chan struct {
		id   string
		head uint64
	}, 1024)
	go func() {
		for ctx.Err() == nil {
			err := st.Listen(ctx, func(id string, head uint64) {
				select {
				case notes <- struct {
					id   string
					head uint64
				}{id, head}:
				default:
					// Full: the periodic check catches up.
				}
			})
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("relay: listening for the other relays' commits failed; retrying", "err", err)
			t := s.cfg.Timers.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
	}()
	tick := s.cfg.Timers.NewTimer(sharedCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-notes:
			s.catchUp(n.id, n.head)
		case <-tick.C():
			s.catchUp("", 0)
			tick.Reset(sharedCheckEvery)
		}
	}
}

// sharedCheckEvery is how often a relay on shared storage reads the heads
// of its open databases, in case a notification was lost.
const sharedCheckEvery = 2 * time.Second

// catchUp catches up open database id to head, or every open database
// when id is "".
func (s *Server) catchUp(id string, head uint64) {
	s.dbMu.Lock()
	var dbs []*database
	for _, d := range s.dbs {
		if !d.closing && (id == "" || d.id == id) {
			d.refs++
			dbs = append(dbs, d)
		}
	}
	s.dbMu.Unlock()
	for _, d := range dbs {
		<-d.ready
		if d.openErr == nil {
			d.remoteHead(head)
			s.release(d)
		}
	}
}
