//go:build !js

// Package memshared is a relay.SharedStorage in memory, for tests and the
// simulator (internal/sim): several relay.Server values in one process
// share it as relay processes share PostgreSQL (relay/pgstore), with the
// same rules — one memkv store per database whatever relay opens it,
// serialized writers, the writer lock, the snapshot-stream guard, one
// maintainer at a time, notifications to every other relay.
//
// A Storage is shared by handing each relay its own View (Storage.Relay),
// which names the relay in notifications so that it does not hear its
// own. Every wait is on a channel, so the storage works inside a
// testing/synctest bubble. Its data lives until the Storage is dropped or
// Replace replaces it (a restore or a wipe, with every relay stopped):
// closing a database's store only ends that relay's use of it.
package memshared

import (
	"context"
	"errors"
	"sync"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
)

// Storage is the shared data and coordination of every relay on it.
type Storage struct {
	mu        sync.Mutex
	dbs       map[string]*memkv.Store
	locks     map[string]chan struct{} // writer lock: a one-slot semaphore
	maintain  map[string]chan struct{}
	streams   map[string]int           // snapshot streams per database
	holds     map[string]bool          // HoldStreams held
	streamsCh map[string]chan struct{} // closed when holds[id] is released
	listeners map[*View]chan note
	down      bool
}

type note struct {
	id   string
	head uint64
}

// New returns an empty Storage.
func New() *Storage {
	return &Storage{
		dbs:       map[string]*memkv.Store{},
		locks:     map[string]chan struct{}{},
		maintain:  map[string]chan struct{}{},
		streams:   map[string]int{},
		holds:     map[string]bool{},
		streamsCh: map[string]chan struct{}{},
		listeners: map[*View]chan note{},
	}
}

// ErrDown is returned while SetDown(true): the storage unreachable.
var ErrDown = errors.Join(kv.ErrUnavailable, errors.New("memshared: storage down"))

// SetDown makes the coordination (Open, the locks, notifications, Ping)
// fail with ErrDown (down), or work again. Transactions on stores already
// open go on: it models coordination lost, not the data.
func (s *Storage) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Relay returns a view of the storage for one relay.
func (s *Storage) Relay() *View { return &View{s: s} }

// Store returns database id's store (nil if never opened), to inspect it.
func (s *Storage) Store(id string) *memkv.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dbs[id]
}

// Replace puts st in place of database id's data: a restore from an older
// copy (st holding relay.StoreBuckets, as a copy of Store(id) does), or a
// wipe (st nil: the database is dropped, and the next Open creates it
// empty). It is meant for when no relay has the database open: a store
// Open returned before keeps the data it had, detached from the storage
// (what it writes afterwards is lost). Locks, streams and notifications
// are not touched.
func (s *Storage) Replace(id string, st *memkv.Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == nil {
		delete(s.dbs, id)
		return
	}
	s.dbs[id] = st
}

// View is one relay's handle on a Storage: a relay.SharedStorage.
type View struct{ s *Storage }

var _ relay.SharedStorage = (*View)(nil)

// Open returns database id's store (its Close leaves the data).
func (v *View) Open(id string) (kv.Store, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, ErrDown
	}
	st := s.dbs[id]
	if st == nil {
		st = memkv.New(relay.StoreBuckets()...)
		s.dbs[id] = st
	}
	return keep{st}, nil
}

// keep is a store whose Close does not drop the shared data.
type keep struct{ *memkv.Store }

func (keep) Close() error { return nil }

func (s *Storage) sem(m map[string]chan struct{}, id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := m[id]
	if c == nil {
		c = make(chan struct{}, 1)
		m[id] = c
	}
	return c
}

func (s *Storage) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// Lock takes database id's writer lock.
func (v *View) Lock(ctx context.Context, id string) (func(), error) {
	if v.s.isDown() {
		return nil, ErrDown
	}
	c := v.s.sem(v.s.locks, id)
	select {
	case c <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-c }) }, nil
}

// TryMaintain takes database id's maintenance right if free.
func (v *View) TryMaintain(ctx context.Context, id string) (func(), bool, error) {
	if v.s.isDown() {
		return nil, false, ErrDown
	}
	c := v.s.sem(v.s.maintain, id)
	select {
	case c <- struct{}{}:
	default:
		return nil, false, nil
	}
	var once sync.Once
	return func() { once.Do(func() { <-c }) }, true, nil
}

// StreamStarted registers a snapshot stream, waiting while HoldStreams is
// held.
func (v *View) StreamStarted(ctx context.Context, id string) (func(), error) {
	s := v.s
	for {
		s.mu.Lock()
		if s.down {
			s.mu.Unlock()
			return nil, ErrDown
		}
		if !s.holds[id] {
			s.streams[id]++
			s.mu.Unlock()
			break
		}
		wait := s.streamsCh[id]
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.streams[id]--
			s.mu.Unlock()
		})
	}, nil
}

// HoldStreams reports whether no stream runs, keeping new ones off.
func (v *View) HoldStreams(ctx context.Context, id string) (func(), bool, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, false, ErrDown
	}
	if s.streams[id] > 0 || s.holds[id] {
		return nil, false, nil
	}
	s.holds[id] = true
	s.streamsCh[id] = make(chan struct{})
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.holds, id)
			close(s.streamsCh[id])
			delete(s.streamsCh, id)
			s.mu.Unlock()
		})
	}, true, nil
}

// Notify tells every other relay's Listen.
func (v *View) Notify(ctx context.Context, id string, head uint64) error {
	s := v.s
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return ErrDown
	}
	var to []chan note
	for l, c := range s.listeners {
		if l != v {
			to = append(to, c)
		}
	}
	s.mu.Unlock()
	for _, c := range to {
		select {
		case c <- note{id, head}:
		default:
			// Full: the listener's periodic check catches up, as with
			// a notification lost in flight.
		}
	}
	return nil
}

// Listen delivers the other relays' notifications until ctx ends.
func (v *View) Listen(ctx context.Context, fn func(id string, head uint64)) error {
	s := v.s
	c := make(chan note, 256)
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return ErrDown
	}
	s.listeners[v] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, v)
		s.mu.Unlock()
	}()
	fn("", 0)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case n := <-c:
			fn(n.id, n.head)
		}
	}
}

// Ping fails while the storage is down.
func (v *View) Ping(context.Context) error {
	if v.s.isDown() {
		return ErrDown
	}
	return nil
}
