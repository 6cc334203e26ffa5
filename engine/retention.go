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
}

// pruneBatch bounds the entries pruned per kv transaction.
const pruneBatch = 1000

// Prune removes tombstones whose deletion is older than the retention
// horizon (Options.Retention, by the tombstone's HLC wall time), and
// quarantined changes held longer than it (sync.md § Tombstone TTL). After
// that a change older than the horizon can revive a deleted row: peers
// offline longer than the horizon must re-bootstrap from a snapshot (the
// relay enforces this by answering SNAPSHOT_REQUIRED). Run it from a
// maintenance loop; it works in bounded transactions.
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
	for _, class := range []byte{classOwn, classRemote} {
		start := []byte{class}
		end := make([]byte, 9)
		end[0] = class
		binary.BigEndian.PutUint64(end[1:], cutoff)
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
				var perr error
				err = tx.Scan(bucketLog, kv.Range{Start: start, End: end, Limit: pruneBatch, KeysOnly: true}, func(k, _ []byte) bool {
					_, base, rk, err := parseLogKey(k)
					if err != nil {
						perr = err
						return false
					}
					last = bytes.Clone(k)
					ents = append(ents, ent{base, bytes.Clone(rk)})
					return true
				})
				if err == nil {
					err = perr
				}
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
					if r.cur == nil || !r.cur.hasTomb || !r.cur.tomb.SameTransaction(en.base) || r.cur.tomb.Wall >= cutoff {
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
