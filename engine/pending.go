package engine

import (
	"bytes"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// CountLocalTransactions returns the number of this replica's own
// transactions above since (compared by base: a transaction whose HLC
// shares since's base is not counted), schema migrations included, counted
// once per transaction: what a sync client whose sent watermark is since
// has yet to push. It reads only keys — of the own part of the change log
// (one entry per local transaction) and of the own migrations — never a
// row, so its cost is a key scan proportional to the result; ChangesSince
// reads every row those transactions wrote.
//
// The count is an upper bound of len(ChangesSince(since, ...)) with
// OnlyLocal: it also counts a transaction all of whose facts were since
// superseded (ChangesSince skips those), until a later transaction is
// pushed past it.
func (e *Engine) CountLocalTransactions(since HLC) (int, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	base := since.Base()
	n := 0
	err := e.store.View(func(tx kv.Tx) error {
		n = 0
		// Migrations are few: collect their bases first.
		migs := map[HLC]bool{}
		start := make([]byte, 1+BaseSize, 1+BaseSize+1)
		start[0] = layout.ClassOwn
		base.PutBase(start[1:])
		var perr error
		err := tx.Scan(layout.BucketMigrations, kv.Range{Start: start, End: []byte{layout.ClassOwn + 1}, KeysOnly: true}, func(k, _ []byte) bool {
			if len(k) < 1+BaseSize {
				perr = malformed("own migration key of %d bytes", len(k))
				return false
			}
			if b := baseFromBytes(k[1:]); base.Less(b) {
				migs[b] = true
			}
			return true
		})
		if err == nil {
			err = perr
		}
		if err != nil {
			return err
		}
		// Log entries: one key per transaction, above since's base.
		logStart := append(bytes.Clone(start), 0)
		err = tx.Scan(layout.BucketLog, kv.Range{Start: logStart, End: []byte{layout.ClassOwn + 1}, KeysOnly: true}, func(k, _ []byte) bool {
			if len(k) != 1+BaseSize {
				perr = malformed("own change-log key of %d bytes", len(k))
				return false
			}
			n++
			if len(migs) > 0 {
				delete(migs, baseFromBytes(k[1:]))
			}
			return true
		})
		if err == nil {
			err = perr
		}
		n += len(migs)
		return err
	})
	return n, err
}

// LastLocalTransaction returns the base HLC (OpSeq 0: the transaction id's
// HLC) of the newest transaction this replica minted that it still holds
// in its change log or among its schema migrations; ok is false when it
// holds none. Like CountLocalTransactions it reads keys only: one from
// the end of each. A sync client has pushed everything this replica wrote
// up to now once its sent watermark passes this transaction.
func (e *Engine) LastLocalTransaction() (base HLC, ok bool, err error) {
	if err := e.checkOpen(); err != nil {
		return HLC{}, false, err
	}
	err = e.store.View(func(tx kv.Tx) error {
		base, ok = HLC{}, false
		for _, bucket := range []string{layout.BucketLog, layout.BucketMigrations} {
			var perr error
			err := tx.Scan(bucket, kv.Range{Start: []byte{layout.ClassOwn}, End: []byte{layout.ClassOwn + 1}, Reverse: true, Limit: 1, KeysOnly: true}, func(k, _ []byte) bool {
				if len(k) < 1+BaseSize {
					perr = malformed("own key of %d bytes in %s", len(k), bucket)
					return false
				}
				if b := baseFromBytes(k[1:]); !ok || base.Less(b) {
					base, ok = b, true
				}
				return false
			})
			if err == nil {
				err = perr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return base, ok, err
}
