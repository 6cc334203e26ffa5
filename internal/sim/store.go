//go:build !js

package sim

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/memshared"
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

// sharedView is one relay process's handle on the shared storage of
// several relays (Config.Relays > 1): a memshared view that, once the
// process crashed, refuses everything (errCrashed) — its stores'
// transactions, the locks, its notifications — so that nothing of the
// dead process reaches the storage the other relays go on using. What it
// holds (a lock, a stream) it releases as its goroutines end.
type sharedView struct {
	v    *memshared.View
	dead atomic.Bool
	// writes, when > 0, counts down the read-write transactions the
	// process has left: it crashes at the one that brings it to 0, which
	// fails (crash.mid_prune: a crash in the middle of an operation of
	// several transactions).
	writes atomic.Int64
}

var _ relay.SharedStorage = (*sharedView)(nil)

func (s *sharedView) err() error {
	if s.dead.Load() {
		return errCrashed
	}
	return nil
}

func (s *sharedView) Open(id string) (kv.Store, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	st, err := s.v.Open(id)
	if err != nil {
		return nil, err
	}
	return viewStore{st, s}, nil
}

func (s *sharedView) Lock(ctx context.Context, id string) (func(), error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.v.Lock(ctx, id)
}

func (s *sharedView) TryMaintain(ctx context.Context, id string) (func(), bool, error) {
	if err := s.err(); err != nil {
		return nil, false, err
	}
	return s.v.TryMaintain(ctx, id)
}

func (s *sharedView) StreamStarted(ctx context.Context, id string) (func(), error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.v.StreamStarted(ctx, id)
}

func (s *sharedView) HoldStreams(ctx context.Context, id string) (func(), bool, error) {
	if err := s.err(); err != nil {
		return nil, false, err
	}
	return s.v.HoldStreams(ctx, id)
}

func (s *sharedView) Notify(ctx context.Context, id string, head uint64) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.v.Notify(ctx, id, head)
}

func (s *sharedView) Listen(ctx context.Context, fn func(id string, head uint64)) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.v.Listen(ctx, fn)
}

func (s *sharedView) Ping(ctx context.Context) error {
	if err := s.err(); err != nil {
		return err
	}
	return s.v.Ping(ctx)
}

// viewStore is a store of the shared storage as one relay process sees
// it: every transaction fails once the process crashed.
type viewStore struct {
	st kv.Store
	v  *sharedView
}

func (d viewStore) Update(fn func(kv.Tx) error) error {
	if d.v.writes.Load() > 0 && d.v.writes.Add(-1) == 0 {
		d.v.dead.Store(true)
	}
	if err := d.v.err(); err != nil {
		return err
	}
	return d.st.Update(fn)
}

func (d viewStore) View(fn func(kv.Tx) error) error {
	if err := d.v.err(); err != nil {
		return err
	}
	return d.st.View(fn)
}

func (d viewStore) Close() error { return d.st.Close() }
