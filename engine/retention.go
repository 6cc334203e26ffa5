package engine

import (
	"bytes"
	"encoding/binary"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// PruneResult counts what Prune or PruneTombstones removed.
type PruneResult struct {
	// Tombstones removed (PruneTombstones only; a shadow tombstone by
	// which a row lost its cells counts: PruneTombstonesOptions); Rows
	// counts the rows that disappeared with them (deleted rows of a delete-wins table, and
	// deleted rows with no cell written after the deletion).
	Tombstones, Rows int
	// Held counts held changes dropped.
	Held int
	// LogEntries counts own change-log entries dropped or rewritten
	// because later writes had superseded their facts.
	LogEntries int
}

// pruneBatch bounds the entries pruned per kv transaction.
const pruneBatch = 1000

// Prune removes the held changes kept longer than the retention
// horizon (Options.Retention, by the local clock) and tidies the
// change-log entries of local transactions older than it that list rows no
// longer holding their facts (docs/design.md § Retention). It does not
// remove tombstones: those go only through PruneTombstones, at a bound
// every replica shares (a replica that syncs calls it at its relay's
// horizon marks), since a replica pruning by its own clock decides a late
// change for a deleted row unlike its peers. A replica that never syncs
// keeps its tombstones unless the app calls PruneTombstones. Run it from a
// maintenance loop; it works in bounded transactions. Tombstones and Rows
// of the result are always 0.
func (e *Engine) Prune() (PruneResult, error) {
	var res PruneResult
	if err := e.checkOpen(); err != nil {
		return res, err
	}
	now := e.clock.Now()
	horizon := uint64(e.opts.Retention.Milliseconds())
	if now <= horizon {
		return res, nil
	}
	cutoff := now - horizon
	if err := e.pruneOwnLog(cutoff, &res); err != nil {
		return res, err
	}
	err := e.pruneHeld(cutoff, &res)
	return res, err
}

// PruneTombstones removes the tombstones whose deletion's wall time (the
// tombstone's HLC, ms since the Unix epoch) is before before, the rows
// that disappear with them (PruneResult.Rows), and nothing else: the same
// tombstones on every replica given the same before, whatever its clock.
// It is how a replica that syncs follows its relay's tombstone horizon
// (docs/design.md § Retention): the relay prunes at a point of its log and
// says so there, and each replica prunes with the same bound at the same
// point, so a late change for a deleted row is decided alike everywhere.
// After it a change older than before can revive a deleted row: a peer
// whose cursor is older than the relay's horizon re-bootstraps from a
// snapshot (the relay answers SNAPSHOT_REQUIRED) that replaces its rows
// (ApplySnapshotOptions.Replace). Idempotent; it works in bounded transactions, so a crash leaves a prefix
// pruned and a second call finishes it.
func (e *Engine) PruneTombstones(before uint64) (PruneResult, error) {
	return e.PruneTombstonesWith(before, PruneTombstonesOptions{})
}

// PruneTombstonesOptions choose what PruneTombstonesWith keeps.
type PruneTombstonesOptions struct {
	// KeepUnsent keeps this replica's own facts whose HLC is above Sent:
	// writes the relay did not hold when it pruned (the sync client passes
	// the mark's siteHlc, wire's "Tombstone horizon", or its sent
	// watermark). An own
	// tombstone above Sent stays: pruned, the delete would never be
	// pushed (a change set carries only the facts the replica still
	// holds, ChangesSince), so the row would stay alive everywhere else.
	// In a delete-wins row whose tombstone goes, the own cells above Sent
	// stay and the row keeps them alone: the relay applies them after its
	// pruning to a row it no longer holds, and so does every replica
	// that pulls them, which is that same row (the simulator's seed 72:
	// the device dropped its unsent write with the row, for good).
	// A kept own tombstone that superseded another (its shadow, below
	// before) stood, on the relay, in the place of that one, by which
	// the relay pruned the row: a delete-wins row then loses every cell
	// but the own ones above Sent (pruneShadow; the simulator's seed
	// 271).
	//
	// An own fact a later fact of another site removed from its row is
	// not kept (the row does not hold it), though the relay applies it
	// after its pruning when it was pushed before the mark and reached
	// the relay after it: the sync client asks the relay for those
	// ChangeSets and merges them back (ApplyOptions.MergeOwn;
	// TestPruneSupersededUnsentCell).
	KeepUnsent bool
	Sent       HLC
	// Held, when not nil, names own facts above Sent that the relay held
	// when it pruned all the same: they reached its log before the mark
	// in other ChangeSets than this replica's own pushes (a repair entry
	// of another replica carrying them, wire's "Repair pushes"), which
	// the mark's siteHlc does not count. They are pruned as the relay
	// pruned them (an own tombstone the relay held decides its row
	// alone: the simulator's seed 16 with wipes).
	Held func(HLC) bool
	// KeepOthers, when not nil, names facts of other sites to keep as
	// well: facts the relay did not hold when it pruned, which this
	// replica pushes to it afterwards (a replica catching up with a log
	// that lost history pushes the facts of other sites it holds once
	// caught up, wire's "Repair pushes": the relay applies them after
	// its pruning, as it does unsent own facts; the simulator's seed 55
	// with wipes). A delete-wins row whose tombstone is kept keeps its
	// cells; one whose tombstone goes keeps the cells named.
	KeepOthers func(HLC) bool
}

// PruneTombstonesWith is PruneTombstones keeping what o says. A kept
// tombstone is pruned by a later call once it no longer qualifies.
func (e *Engine) PruneTombstonesWith(before uint64, o PruneTombstonesOptions) (PruneResult, error) {
	var res PruneResult
	if err := e.checkOpen(); err != nil {
		return res, err
	}
	if before == 0 {
		return res, nil
	}
	var keep func(h HLC) bool
	if o.KeepUnsent || o.KeepOthers != nil {
		keep = func(h HLC) bool {
			if h.Site != e.site {
				return o.KeepOthers != nil && o.KeepOthers(h)
			}
			return o.KeepUnsent && o.Sent.Less(h) && (o.Held == nil || !o.Held(h))
		}
	}
	err := e.pruneTombstones(before, keep, &res)
	return res, err
}

// wallKey is the 8-byte big-endian key prefix of wall time ms: the end of
// a key range of the HLCs older than ms.
func wallKey(ms uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, ms)
}

// pruneTombstones removes the tombstones whose deletion's wall time is
// before cutoff, through their index (ordered by the deletion's HLC), in
// transactions of pruneBatch entries.
func (e *Engine) pruneTombstones(cutoff uint64, keep func(HLC) bool, res *PruneResult) error {
	wallEnd := wallKey(cutoff)
	start := []byte(nil)
	for {
		var n int
		var last []byte
		err := e.store.Update(func(tx kv.Tx) error {
			var err error
			n, last, err = e.pruneTombstoneBatch(tx, start, wallEnd, cutoff, keep, res)
			return err
		})
		if err != nil {
			return err
		}
		if n < pruneBatch {
			return nil
		}
		start = append(last, 0)
	}
}

// pruneTombstoneBatch prunes the tombstones of up to pruneBatch index
// entries from start (before wallEnd) in tx, and commits. It returns the
// entries read and the last one's key.
func (e *Engine) pruneTombstoneBatch(tx kv.Tx, start, wallEnd []byte, cutoff uint64, keep func(HLC) bool, res *PruneResult) (n int, last []byte, err error) {
	w, err := e.begin(tx)
	if err != nil {
		return 0, nil, err
	}
	type ent struct {
		base HLC
		rk   []byte
	}
	var ents []ent
	err = tx.Scan(layout.BucketTombs, kv.Range{Start: start, End: wallEnd, Limit: pruneBatch, KeysOnly: true}, func(k, _ []byte) bool {
		last = bytes.Clone(k)
		if len(k) > BaseSize {
			ents = append(ents, ent{baseFromBytes(k), bytes.Clone(k[BaseSize:])})
		}
		return true
	})
	if err != nil {
		return 0, last, err
	}
	for _, en := range ents {
		if err := w.pruneTombstone(en.base, en.rk, cutoff, keep, res); err != nil {
			return len(ents), last, err
		}
	}
	return len(ents), last, w.commit()
}

// pruneTombstone removes the tombstone of row rk, deleted at base, unless
// the row no longer holds it or it is not past cutoff: then the index
// entry is the row's shadow tombstone's (pruneShadow) or stale (it should
// not happen), and only it goes. keep (nil:
// none) names the cells of a delete-wins row that stay with it.
func (w *writeTx) pruneTombstone(base HLC, rk []byte, cutoff uint64, keep func(HLC) bool, res *PruneResult) error {
	name, pk, err := layout.SplitRowKey(rk)
	if err != nil {
		return err
	}
	t := w.effTable(name)
	if t == nil {
		t = &table{def: TableDef{Name: name}, key: layout.TableKey(name)}
	}
	r, err := w.load(t, pk)
	if err != nil {
		return err
	}
	if r.cur != nil && r.cur.HasTomb && r.cur.Tomb.Base() != base {
		// The entry of a shadow tombstone, or a stale one.
		if keep != nil && keep(base) {
			return nil // kept, with its entry, for a later call
		}
		if err := w.pruneShadow(t, r, base, rk, cutoff, keep, res); err != nil {
			return err
		}
		return w.kv.Delete(layout.BucketTombs, layout.TombKey(base, rk))
	}
	if r.cur == nil || !r.cur.HasTomb || r.cur.Tomb.Wall >= cutoff {
		return w.kv.Delete(layout.BucketTombs, layout.TombKey(base, rk))
	}
	if keep != nil && keep(r.cur.Tomb) {
		// Kept (by its full HLC: Held and KeepOthers name facts), with
		// its index entry, for a later call.
		return nil
	}
	r.cur.HasTomb, r.cur.Tomb, r.cur.PriorRow = false, HLC{}, nil
	if !t.resurrect {
		// Delete-wins: the cells written after the deletion
		// were kept but dead (rowrec.Record.Visible); without the
		// tombstone they would revive the row. The row goes, but
		// for the cells keep names (unsent own writes:
		// PruneTombstonesOptions.KeepUnsent).
		kept := r.cur.Cells[:0]
		if keep != nil {
			for _, c := range r.cur.Cells {
				if keep(c.HLC) {
					kept = append(kept, c)
				}
			}
		}
		r.cur.Cells = kept
	}
	r.dirty = true
	res.Tombstones++
	if len(r.cur.Cells) == 0 {
		res.Rows++
	}
	return nil
}

// pruneShadow prunes the shadow tombstone of base base of row r (rk), if
// it is the row's (putShadow): a tombstone deleted before cutoff that the
// row's own tombstone superseded before the relay held it. The relay's row
// carried the shadow when it made the mark, and pruned by it: under
// delete-wins, the row with every cell, the dead ones of other sites
// included; then it applies the own deletion (and the own writes after
// it) to a row it no longer holds. So when keep keeps the own tombstone
// (above the mark's siteHlc: PruneTombstonesOptions.KeepUnsent), the row
// keeps that tombstone and the cells keep names, and loses the rest, as
// the relay's does; otherwise the relay held the own tombstone at the
// mark, which decides alone. Either way the shadow goes.
func (w *writeTx) pruneShadow(t *table, r *txRow, base HLC, rk []byte, cutoff uint64, keep func(HLC) bool, res *PruneResult) error {
	s, err := w.shadowOf(r.cur.Tomb.Base(), rk)
	if err != nil || s.IsZero() || s.Base() != base || s.Wall >= cutoff {
		return err // a stale entry (past cutoff: not scanned)
	}
	if _, err := w.dropShadow(r.cur.Tomb.Base(), rk); err != nil {
		return err
	}
	if keep == nil || !keep(r.cur.Tomb) || keep(s) || t.resurrect {
		return nil
	}
	kept := r.cur.Cells[:0]
	for _, c := range r.cur.Cells {
		if keep(c.HLC) {
			kept = append(kept, c)
		}
	}
	clear(r.cur.Cells[len(kept):])
	r.cur.Cells = kept
	r.dirty = true
	res.Tombstones++
	return nil
}

// pruneOwnLog tidies the own change-log entries older than cutoff: each
// keeps only the rows that still hold its transaction's facts, and goes
// when none does. It works in transactions of pruneBatch/10 entries.
func (e *Engine) pruneOwnLog(cutoff uint64, res *PruneResult) error {
	ownEnd := append([]byte{layout.ClassOwn}, wallKey(cutoff)...)
	start := []byte{layout.ClassOwn}
	for {
		var n int
		var last []byte
		err := e.store.Update(func(tx kv.Tx) error {
			var err error
			n, last, err = pruneOwnLogBatch(tx, start, ownEnd, res)
			return err
		})
		if err != nil {
			return err
		}
		if n < pruneBatch/10 {
			return nil
		}
		start = append(last, 0)
	}
}

// ownLogEntry is a change-log entry read by pruneOwnLogBatch: its key, its
// transaction's base HLC and the row keys it lists.
type ownLogEntry struct {
	key  []byte
	base HLC
	rks  [][]byte
}

// pruneOwnLogBatch tidies up to pruneBatch/10 own change-log entries from
// start (before end) in tx. It returns the entries read and the last one's
// key.
func pruneOwnLogBatch(tx kv.Tx, start, end []byte, res *PruneResult) (n int, last []byte, err error) {
	var ents []ownLogEntry
	var derr error
	err = tx.Scan(layout.BucketLog, kv.Range{Start: start, End: end, Limit: pruneBatch / 10}, func(k, v []byte) bool {
		n++
		last = bytes.Clone(k)
		rks, err := layout.DecodeRowList(v)
		if err != nil {
			derr = err
			return false
		}
		for i := range rks {
			rks[i] = bytes.Clone(rks[i])
		}
		ents = append(ents, ownLogEntry{bytes.Clone(k), baseFromBytes(k[1:]), rks})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return n, last, err
	}
	for _, en := range ents {
		if err := tidyOwnLogEntry(tx, en, res); err != nil {
			return n, last, err
		}
	}
	return n, last, nil
}

// tidyOwnLogEntry rewrites en to list only the rows still holding facts of
// its transaction, or deletes it when none does.
func tidyOwnLogEntry(tx kv.Tx, en ownLogEntry, res *PruneResult) error {
	vals, err := tx.GetMany(layout.BucketRows, en.rks)
	if err != nil {
		return err
	}
	var keep []string
	for i, v := range vals {
		if v == nil {
			continue
		}
		table, pk, err := layout.SplitRowKey(en.rks[i])
		if err != nil {
			return err
		}
		rec, err := rowrec.Decode(v, pk)
		if err != nil {
			return err
		}
		if len(factsOf(rec, en.base, table, pk)) > 0 {
			keep = append(keep, string(en.rks[i]))
		}
	}
	switch {
	case len(keep) == len(en.rks):
		return nil
	case len(keep) == 0:
		res.LogEntries++
		return tx.Delete(layout.BucketLog, en.key)
	default:
		res.LogEntries++
		return tx.Put(layout.BucketLog, en.key, layout.EncodeRowList(keep))
	}
}

// pruneHeld drops the held changes received before cutoff, in one
// transaction.
func (e *Engine) pruneHeld(cutoff uint64, res *PruneResult) error {
	return e.store.Update(func(tx kv.Tx) error {
		var dead [][]byte
		var derr error
		err := tx.Scan(layout.BucketHeld, kv.Range{}, func(k, v []byte) bool {
			h, err := decodeHeld(v)
			if err != nil {
				derr = err
				return false
			}
			if h.receivedAt < cutoff {
				dead = append(dead, bytes.Clone(k))
			}
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
		for _, k := range dead {
			if err := tx.Delete(layout.BucketHeld, k); err != nil {
				return err
			}
		}
		res.Held = len(dead)
		return nil
	})
}
