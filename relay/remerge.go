//go:build !js

package relay

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// keyMerged ("merged" in the relay bucket) names the merge rules the merged
// replica was built under: mergedGen once every arrival it holds was
// merged under this version's rules. A relay before it kept no cells
// written after a tombstone (it merged delete-wins whatever the database's
// policy), so its snapshots revived nothing; at the first open by this
// version the arrival log is merged into the replica again (merging is
// idempotent: what it held stays, what it dropped comes back), so its
// snapshots carry the cells under the database's resurrection policy
// (model.ResurrectionPolicy). Arrivals already pruned by retention cannot
// be merged again.
var keyMerged = []byte("merged")

const mergedGen = "2"

// remergeBatch bounds the arrivals merged per engine transaction.
const remergeBatch = 256

// remerge merges the arrival log into the merged replica again when it was
// built by an earlier version (keyMerged), then records mergedGen.
func (d *database) remerge() error {
	var gen []byte
	err := d.store.View(func(tx kv.Tx) error {
		v, err := tx.Get(bucketRelay, keyMerged)
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		gen = append(gen, v...)
		return err
	})
	if err != nil || string(gen) == mergedGen {
		return err
	}
	var start uint64
	merged, skipped := 0, 0
	for {
		var sets []model.ChangeSet
		var last uint64
		err := d.store.View(func(tx kv.Tx) error {
			var derr error
			err := tx.Scan(bucketArrivals, kv.Range{Start: cursorKey(start + 1), Limit: remergeBatch}, func(k, v []byte) bool {
				c, err := parseUint64(k)
				if err == nil {
					var r record
					if r, err = decodeRecord(v); err == nil {
						var cs model.ChangeSet
						if cs, err = wire.UnmarshalChangeSet(r.json); err == nil {
							sets = append(sets, cs)
							last = c
							return true
						}
					}
				}
				derr = err
				return false
			})
			if err == nil {
				err = derr
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("merge the arrival log again: %w", err)
		}
		if len(sets) == 0 {
			break
		}
		if _, err := d.eng.ApplyChanges(sets); err != nil {
			if !refused(err) {
				// A storage failure: the merge is not done; the next
				// open runs it again (no marker is written).
				return fmt.Errorf("merge the arrival log again: %w", err)
			}
			// One arrival the engine now refuses (its checks grew
			// stricter) must not keep the others out: merge one by one.
			for i := range sets {
				if _, err := d.eng.ApplyChanges(sets[i : i+1]); err != nil {
					if !refused(err) {
						return fmt.Errorf("merge the arrival log again: %w", err)
					}
					skipped++
					d.log.Warn("relay: an arrival could not be merged again; the merged replica keeps what it had", "transaction", sets[i].TransactionID, "err", err)
				}
			}
		}
		merged += len(sets)
		start = last
		if len(sets) < remergeBatch {
			break
		}
	}
	if merged > 0 {
		d.log.Info("relay: merged the arrival log into the merged replica again under this version's merge rules", "arrivals", merged, "skipped", skipped)
	}
	return d.store.Update(func(tx kv.Tx) error { return tx.Put(bucketRelay, keyMerged, []byte(mergedGen)) })
}
