//go:build !js

package sim

import (
	"errors"
	"sync/atomic"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// errCrashed is what a crashed node's store answers from then on: the
// process is gone, nothing more reaches its disk.
var errCrashed = errors.New("sim: node crashed")

// diskStore is a node's view of its persisted memkv store: Close keeps the
// data (the disk outlives the process), and after crash every transaction
// fails, so that nothing of the dead process is written.
type diskStore struct {
	st   *memkv.Store
	dead atomic.Bool
}

func (d *diskStore) Update(fn func(kv.Tx) error) error {
	if d.dead.Load() {
		return errCrashed
	}
	return d.st.Update(fn)
}

func (d *diskStore) View(fn func(kv.Tx) error) error {
	if d.dead.Load() {
		return errCrashed
	}
	return d.st.View(fn)
}

func (d *diskStore) Close() error { return nil }

// copyStore returns a copy of src's buckets (an older copy of a disk).
func copyStore(src *memkv.Store, buckets []string) *memkv.Store {
	dst := memkv.New(buckets...)
	_ = src.View(func(rtx kv.Tx) error {
		return dst.Update(func(wtx kv.Tx) error {
			for _, b := range buckets {
				var err error
				scanErr := rtx.Scan(b, kv.Range{}, func(k, v []byte) bool {
					err = wtx.Put(b, append([]byte(nil), k...), append([]byte(nil), v...))
					return err == nil
				})
				if err = errors.Join(err, scanErr); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return dst
}
