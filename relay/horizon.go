//go:build !js

package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Tombstone horizon marks (wire's "Tombstone horizon", docs/design.md §
// Retention). The relay prunes its merged replica's tombstones only at a
// mark of its log, and its clients prune the same tombstones at the same
// point of the log, so a late change for a deleted row is decided alike
// everywhere.
//
//	arrivals_horizon  8-byte big-endian cursor → wall (8-byte big-endian,
//	                  ms since the Unix epoch) ‖ the chain value at cursor
//	                  (16 bytes)
//
// One mark per cursor: a later mark at the same cursor (no ChangeSet
// appended between two passes) replaces the earlier one, whose pruning
// the later one's includes.
const bucketHorizons = "arrivals_horizon"

// bucketHorizonSites holds, per mark, what each site's connections are told
// the log held of their own transactions when the mark was made (the mark's
// siteHlc, wire version 4):
//
//	arrivals_horizon_site  8-byte big-endian cursor of a mark ‖ site id
//	                       (16 bytes) → 30 bytes (model.HLC.Bytes): that
//	                       site's arrivals_site entry when the mark was
//	                       made; the all-zero site id (never a replica's)
//	                       → empty: the mark has these entries
//
// A site without an entry had no ChangeSet in the log then (siteHlc is the
// zero HLC). A mark without the all-zero entry was made before version 4:
// it is sent without siteHlc. The entries go with their mark.
const bucketHorizonSites = "arrivals_horizon_site"

// putMarkSites records arrivals_site as the site table of the mark at cur
// (replacing any earlier mark's at cur), in the mark's transaction.
func putMarkSites(tx kv.Tx, cur uint64) error {
	if err := deleteMarkSites(tx, cur); err != nil {
		return err
	}
	type entry struct{ k, v []byte }
	var es []entry
	err := tx.Scan(bucketSites, kv.Range{}, func(k, v []byte) bool {
		es = append(es, entry{append(cursorKey(cur), k...), bytes.Clone(v)})
		return true
	})
	if err != nil {
		return err
	}
	var zero model.SiteID
	if err := tx.Put(bucketHorizonSites, append(cursorKey(cur), zero[:]...), []byte{}); err != nil {
		return err
	}
	for _, e := range es {
		if err := tx.Put(bucketHorizonSites, e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// deleteMarkSites removes the site table of the mark at cur.
func deleteMarkSites(tx kv.Tx, cur uint64) error {
	var dead [][]byte
	err := tx.Scan(bucketHorizonSites, kv.Range{Start: cursorKey(cur), End: cursorKey(cur + 1), KeysOnly: true}, func(k, _ []byte) bool {
		dead = append(dead, bytes.Clone(k))
		return true
	})
	if err != nil {
		return err
	}
	for _, k := range dead {
		if err := tx.Delete(bucketHorizonSites, k); err != nil {
			return err
		}
	}
	return nil
}

// markSiteHLC fills h's siteHlc for site from the mark's site table; a mark
// without one (made before version 4) is left without.
func markSiteHLC(tx kv.Tx, h *wire.Horizon, site model.SiteID) error {
	var zero model.SiteID
	base := cursorKey(h.Cursor)
	if _, err := tx.Get(bucketHorizonSites, append(base, zero[:]...)); errors.Is(err, kv.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	h.SiteHLCStated = true
	v, err := tx.Get(bucketHorizonSites, append(base, site[:]...))
	if errors.Is(err, kv.ErrNotFound) {
		return nil // the log held none of the site's
	}
	if err != nil {
		return err
	}
	if h.SiteHLC, err = model.HLCFromBytes(v); err != nil {
		return fmt.Errorf("%w: mark at cursor %d, site %s: %w", errCorrupt, h.Cursor, site, err)
	}
	return nil
}

// marksFor returns marksIn(tx, lo, hi) as sent to a connection of site:
// each with its siteHlc.
func marksFor(tx kv.Tx, lo, hi uint64, site model.SiteID) ([]wire.Horizon, error) {
	ms, err := marksIn(tx, lo, hi)
	if err == nil {
		err = fillSiteHLC(tx, ms, site)
	}
	return ms, err
}

// fillSiteHLC fills each of ms's siteHlc for site (markSiteHLC).
func fillSiteHLC(tx kv.Tx, ms []wire.Horizon, site model.SiteID) error {
	for i := range ms {
		if err := markSiteHLC(tx, &ms[i], site); err != nil {
			return err
		}
	}
	return nil
}

const markSize = 8 + wire.ChainSize

func encodeMark(h wire.Horizon) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, markSize), h.Wall)
	return append(b, h.Chain[:]...)
}

func decodeMark(k, v []byte) (wire.Horizon, error) {
	var h wire.Horizon
	c, err := parseUint64(k)
	if err != nil {
		return h, err
	}
	if len(v) != markSize {
		return h, fmt.Errorf("%w: %d-byte horizon mark at cursor %d", errCorrupt, len(v), c)
	}
	h.Cursor, h.Wall = c, binary.BigEndian.Uint64(v)
	copy(h.Chain[:], v[8:])
	if h.Wall == 0 || h.Chain.IsZero() {
		return h, fmt.Errorf("%w: horizon mark at cursor %d without wall or chain", errCorrupt, c)
	}
	return h, nil
}

// latestMark returns the newest horizon mark (zero Wall: none).
func latestMark(tx kv.Tx) (wire.Horizon, error) {
	var h wire.Horizon
	var derr error
	err := tx.Scan(bucketHorizons, kv.Range{Reverse: true, Limit: 1}, func(k, v []byte) bool {
		h, derr = decodeMark(k, v)
		return false
	})
	if err == nil {
		err = derr
	}
	return h, err
}

// lostMark reports whether a client at cursor (at most the head) that
// applied the tombstone horizon horizon (0: none) pruned at a mark this log
// does not hold: the newest mark at or below cursor has a lower wall, or
// there is none. The chain does not cover marks, so a copy of the store
// taken before a mark made at its head, restored, holds the same chain
// value there (wire's "Verifying the relay's log", version 8). A cursor
// below the compaction point is not judged (get_changes answers it
// SNAPSHOT_REQUIRED); from the compaction point up the newest mark at or
// below it is kept (pruneMarks).
func lostMark(tx kv.Tx, cursor, horizon uint64) (bool, error) {
	if horizon == 0 {
		return false, nil
	}
	pruned, err := getCounter(tx, keyPruned)
	if err != nil || cursor < pruned {
		return false, err
	}
	var h wire.Horizon
	var derr error
	err = tx.Scan(bucketHorizons, kv.Range{End: cursorKey(cursor + 1), Reverse: true, Limit: 1}, func(k, v []byte) bool {
		h, derr = decodeMark(k, v)
		return false
	})
	if err == nil {
		err = derr
	}
	return err == nil && h.Wall < horizon, err
}

// markAt returns the horizon mark at cursor c, and false when there is
// none: marksIn(tx, c, c) with a point read, which a prefetch answers.
func markAt(tx kv.Tx, c uint64) (wire.Horizon, bool, error) {
	k := cursorKey(c)
	v, err := tx.Get(bucketHorizons, k)
	if errors.Is(err, kv.ErrNotFound) {
		return wire.Horizon{}, false, nil
	}
	if err != nil {
		return wire.Horizon{}, false, err
	}
	h, err := decodeMark(k, v)
	return h, err == nil, err
}

// marksAt is marksIn by point reads of every cursor lo … hi, for a short
// range whose keys were prefetched (kv.Prefetcher).
func marksAt(tx kv.Tx, lo, hi uint64) ([]wire.Horizon, error) {
	if lo > hi {
		return nil, nil
	}
	keys := make([][]byte, 0, hi-lo+1)
	for c := lo; c <= hi; c++ {
		keys = append(keys, cursorKey(c))
	}
	vs, err := tx.GetMany(bucketHorizons, keys)
	if err != nil {
		return nil, err
	}
	var out []wire.Horizon
	for i, v := range vs {
		if v == nil {
			continue
		}
		h, err := decodeMark(keys[i], v)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// marksIn returns the horizon marks with lo ≤ cursor ≤ hi, ascending.
func marksIn(tx kv.Tx, lo, hi uint64) ([]wire.Horizon, error) {
	if lo > hi {
		return nil, nil
	}
	var out []wire.Horizon
	var derr error
	err := tx.Scan(bucketHorizons, kv.Range{Start: cursorKey(lo), End: cursorKey(hi + 1)}, func(k, v []byte) bool {
		var h wire.Horizon
		if h, derr = decodeMark(k, v); derr != nil {
			return false
		}
		out = append(out, h)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// loadHorizon reads the newest mark at open and, if its pruning did not
// complete (the relay stopped between storing the mark and the end of the
// pruning, which works in bounded transactions: "horizonPending" is still
// stored), finishes it. Only then: pruning again at every open would drop
// the tombstones of late deletes (deleted before the mark's wall) that the
// relay applied after the mark and that its clients, which applied the
// mark before them, keep.
func (d *database) loadHorizon() error {
	var h wire.Horizon
	var pending uint64
	err := d.store.View(func(tx kv.Tx) error {
		var err error
		if h, err = latestMark(tx); err != nil {
			return err
		}
		pending, err = getCounter(tx, keyHorizonPending)
		return err
	})
	if err != nil {
		return err
	}
	d.horizon = h
	if pending == 0 {
		return nil
	}
	res, err := d.prunePending(pending)
	if err != nil {
		return fmt.Errorf("pruning at the tombstone horizon %d: %w", pending, err)
	}
	if res.Tombstones > 0 {
		d.log.Info("relay: finished pruning at the tombstone horizon (interrupted before)", "horizon", pending, "cursor", h.Cursor, "tombstones", res.Tombstones, "rows", res.Rows)
	}
	return nil
}

// prunePending prunes the merged replica at a stored mark's wall, then
// clears "horizonPending".
func (d *database) prunePending(wall uint64) (engine.PruneResult, error) {
	res, err := d.eng.PruneTombstones(wall)
	if err != nil {
		return res, err
	}
	return res, d.store.Update(func(tx kv.Tx) error { return tx.Delete(bucketRelay, keyHorizonPending) })
}

// errSnapshotStreaming says a horizon mark was not made because a snapshot
// of the database is streaming; the next maintenance pass tries again.
var errSnapshotStreaming = errors.New("relay: a snapshot is streaming")

// advanceHorizon moves the database's tombstone horizon to cutoff when it
// is above the newest mark's wall: holding applyMu (no ChangeSet is
// appended meanwhile) and only while no snapshot of the database streams
// (errSnapshotStreaming otherwise), it stores the mark {head cursor,
// cutoff, chain at head} durably, then prunes the merged replica's
// tombstones deleted before cutoff, then runs then (the rest of the
// engine's Prune) in the same critical section. made reports whether a
// mark was stored.
func (d *database) advanceHorizon(cutoff uint64, then func() error) (made bool, res engine.PruneResult, err error) {
	unlock, err := d.lock()
	if err != nil {
		return false, res, err
	}
	defer unlock()
	if d.shared != nil {
		// Another relay may have made marks, or stopped while pruning
		// at one (horizonPending): read them again, finish that.
		if err := d.loadHorizon(); err != nil {
			return false, res, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		release, ok, err := d.shared.HoldStreams(ctx, d.id)
		cancel()
		if err != nil {
			return false, res, err
		}
		if !ok {
			return false, res, errSnapshotStreaming
		}
		defer release()
	}
	d.horizonMu.Lock()
	if d.snapshots > 0 {
		d.horizonMu.Unlock()
		return false, res, errSnapshotStreaming
	}
	if cutoff > d.horizon.Wall {
		var h wire.Horizon
		err = d.store.Update(func(tx kv.Tx) error {
			cur, err := getCounter(tx, keyCursor)
			if err != nil {
				return err
			}
			ch, ok, err := chainAt(tx, cur)
			if err == nil && !ok {
				err = fmt.Errorf("%w: no chain value at the head %d", errCorrupt, cur)
			}
			if err != nil {
				return err
			}
			h = wire.Horizon{Cursor: cur, Wall: cutoff, Chain: ch}
			if err := tx.Put(bucketRelay, keyHorizonPending, binary.BigEndian.AppendUint64(nil, cutoff)); err != nil {
				return err
			}
			if err := tx.Put(bucketHorizons, cursorKey(cur), encodeMark(h)); err != nil {
				return err
			}
			// What the log holds of each site's transactions now: the
			// relay prunes those and no later one (applyMu is held).
			return putMarkSites(tx, cur)
		})
		if err != nil {
			d.horizonMu.Unlock()
			return false, res, err
		}
		d.horizon, made = h, true
	}
	wall := d.horizon.Wall
	// A snapshot starting from here on reads the head (applyMu is held)
	// with the new horizon in its header: its data is read before or
	// after each row's pruning, and the client prunes at the header's
	// horizon once it is applied, so both give the same rows.
	d.horizonMu.Unlock()
	if made {
		if res, err = d.prunePending(wall); err != nil {
			d.pruneLeft = true // the next apply finishes it first
			return made, res, err
		}
	}
	if then != nil {
		err = then()
	}
	return made, res, err
}

// snapshotStarted counts a snapshot stream of the database (horizon marks
// wait while one streams) and returns the cursor and horizon its header
// carries: the head and the newest mark's wall, read together.
//
// With shared storage the stream is registered with it too (no relay
// makes a mark while it streams) and the head and newest mark are read
// from the store, in one transaction; ended must be called even when err
// (a storage error) is returned.
func (d *database) snapshotStarted() (cursor, horizon uint64, markCursor uint64, ended func(), err error) {
	if d.shared == nil {
		d.horizonMu.Lock()
		defer d.horizonMu.Unlock()
		d.snapshots++
		return d.cursor.Load(), d.horizon.Wall, d.horizon.Cursor, d.snapshotEnded, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	end, err := d.shared.StreamStarted(ctx, d.id)
	if err != nil {
		return 0, 0, 0, func() {}, err
	}
	d.horizonMu.Lock()
	d.snapshots++
	d.horizonMu.Unlock()
	ended = func() {
		d.snapshotEnded()
		end()
	}
	var h wire.Horizon
	err = d.store.View(func(tx kv.Tx) error {
		var err error
		if cursor, err = getCounter(tx, keyCursor); err != nil {
			return err
		}
		h, err = latestMark(tx)
		return err
	})
	return cursor, h.Wall, h.Cursor, ended, err
}

// snapshotEnded ends the count of snapshotStarted.
func (d *database) snapshotEnded() {
	d.horizonMu.Lock()
	d.snapshots--
	d.horizonMu.Unlock()
}

// pruneMarks drops the horizon marks below the arrival log's compaction
// point (no get_changes can ask for them: since below it is answered
// SNAPSHOT_REQUIRED), always keeping the newest, and the newest below the
// compaction point unless a mark at the compaction point follows it: the
// one a client at a cursor with no retained mark at or below it applied
// last, which lostMark compares its horizon with. It returns how many.
func (d *database) pruneMarks() (int, error) {
	n := 0
	err := d.store.Update(func(tx kv.Tx) error {
		pruned, err := getCounter(tx, keyPruned)
		if err != nil || pruned == 0 {
			return err
		}
		newest, err := latestMark(tx)
		if err != nil {
			return err
		}
		var dead [][]byte
		err = tx.Scan(bucketHorizons, kv.Range{End: cursorKey(pruned), KeysOnly: true}, func(k, _ []byte) bool {
			dead = append(dead, bytes.Clone(k))
			return true
		})
		if err != nil {
			return err
		}
		if len(dead) > 0 {
			// The newest below the compaction point stays unless a
			// mark at the compaction point follows it.
			_, err := tx.Get(bucketHorizons, cursorKey(pruned))
			switch {
			case errors.Is(err, kv.ErrNotFound):
				dead = dead[:len(dead)-1]
			case err != nil:
				return err
			}
		}
		for _, k := range dead {
			if bytes.Equal(k, cursorKey(newest.Cursor)) && newest.Wall != 0 {
				continue
			}
			if err := tx.Delete(bucketHorizons, k); err != nil {
				return err
			}
			c, err := parseUint64(k)
			if err != nil {
				return err
			}
			if err := deleteMarkSites(tx, c); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// horizonWall returns the newest mark's wall (0: none).
func (d *database) horizonWall() uint64 {
	d.horizonMu.Lock()
	defer d.horizonMu.Unlock()
	return d.horizon.Wall
}
