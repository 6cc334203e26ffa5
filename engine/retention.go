package engine

import (
	"bytes"
	"encoding/binary"

	"github.com/replica-sync/replica/kv"
)

// PruneResult counts what Prune removed.
type PruneResult struct {
	// Tombstones removed; Rows counts the rows that disappeared with them
	// (deleted rows with no cell written after the deletion).
	Tombstones, Rows int
	// Held counts quarantined changes dropped.
	Held int
	// LogEntries counts own change-log entries dropped or rewritten
	// because later writes had superseded their facts.
	LogEntries int
}

// pruneBatch bounds the entries pruned per kv transaction.
const pruneBatch = 1000

// Prune removes tombstones whose deletion is older than the retention
// horizon (Options.Retention, by the tombstone's HLC wall time), and
// quarantined changes held longer than it (sync.md § Tombstone TTL), and
// tidies the change-log entries of local transactions older than it that
// list rows no longer holding their facts. After that a change older than
// the horizon can revive a deleted row: peers offline longer than the
// horizon must re-bootstrap from a snapshot (the relay enforces this by
// answering SNAPSHOT_REQUIRED). Run it from a maintenance loop; it works in
// bounded transactions.
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
	var wallEnd [8]byte
	binary.BigEndian.PutUint64(wallEnd[:], cutoff)

	// Tombstones, through their index (ordered by the deletion's HLC).
	start := []byte(nil)
	for {
		var n int
		var last []byte
		err := e.store.Update(func(tx kv.Tx) error {
			n, last = 0, nil
			w, err := e.begin(tx)
			if err != nil {
				return err
			}
			type ent struct {
				base HLC
				rk   []byte
			}
			var ents []ent
			err = tx.Scan(bucketTombs, kv.Range{Start: start, End: wallEnd[:], Limit: pruneBatch, KeysOnly: true}, func(k, _ []byte) bool {
				last = bytes.Clone(k)
				if len(k) > BaseSize {
					ents = append(ents, ent{baseFromBytes(k), bytes.Clone(k[BaseSize:])})
				}
				return true
			})
			if err != nil {
				return err
			}
			n = len(ents)
			for _, en := range ents {
				name, pk, err := splitRowKey(en.rk)
				if err != nil {
					return err
				}
				t := w.effTable(name)
				if t == nil {
					t = &table{def: TableDef{Name: name}, key: tableKey(name)}
				}
				r, err := w.load(t, pk)
				if err != nil {
					return err
				}
				if r.cur == nil || !r.cur.hasTomb || r.cur.tomb.Base() != en.base || r.cur.tomb.Wall >= cutoff {
					// A stale index entry (should not happen): drop it.
					if err := tx.Delete(bucketTombs, tombKey(en.base, en.rk)); err != nil {
						return err
					}
					continue
				}
				r.cur.hasTomb, r.cur.tomb, r.cur.priorRow = false, HLC{}, nil
				r.dirty = true
				res.Tombstones++
				if len(r.cur.cells) == 0 {
					res.Rows++
				}
			}
			return w.commit()
		})
		if err != nil {
			return res, err
		}
		if n < pruneBatch {
			break
		}
		start = append(last, 0)
	}

	// Own change-log entries past the horizon: keep only the rows that
	// still hold the transaction's facts.
	ownEnd := append([]byte{classOwn}, wallEnd[:]...)
	start = []byte{classOwn}
	for {
		var n int
		var last []byte
		err := e.store.Update(func(tx kv.Tx) error {
			n, last = 0, nil
			type ent struct {
				key  []byte
				base HLC
				rks  [][]byte
			}
			var ents []ent
			var derr error
			err := tx.Scan(bucketLog, kv.Range{Start: start, End: ownEnd, Limit: pruneBatch / 10}, func(k, v []byte) bool {
				n++
				last = bytes.Clone(k)
				rks, err := decodeRowList(v)
				if err != nil {
					derr = err
					return false
				}
				for i := range rks {
					rks[i] = bytes.Clone(rks[i])
				}
				ents = append(ents, ent{bytes.Clone(k), baseFromBytes(k[1:]), rks})
				return true
			})
			if err == nil {
				err = derr
			}
			if err != nil {
				return err
			}
			for _, en := range ents {
				vals, err := tx.GetMany(bucketRows, en.rks)
				if err != nil {
					return err
				}
				var keep []string
				for i, v := range vals {
					if v == nil {
						continue
					}
					table, pk, err := splitRowKey(en.rks[i])
					if err != nil {
						return err
					}
					rec, err := decodeRecord(v, pk)
					if err != nil {
						return err
					}
					if len(factsOf(rec, en.base, table, pk)) > 0 {
						keep = append(keep, string(en.rks[i]))
					}
				}
				switch {
				case len(keep) == len(en.rks):
				case len(keep) == 0:
					res.LogEntries++
					if err := tx.Delete(bucketLog, en.key); err != nil {
						return err
					}
				default:
					res.LogEntries++
					if err := tx.Put(bucketLog, en.key, encodeRowList(keep)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		if n < pruneBatch/10 {
			break
		}
		start = append(last, 0)
	}

	err := e.store.Update(func(tx kv.Tx) error {
		var dead [][]byte
		var derr error
		err := tx.Scan(bucketQuarantine, kv.Range{}, func(k, v []byte) bool {
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
			if err := tx.Delete(bucketQuarantine, k); err != nil {
				return err
			}
		}
		res.Held = len(dead)
		return nil
	})
	return res, err
}
