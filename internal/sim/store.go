//go:build !js

package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

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
	n    *relayNode
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

// Notify sends the notification to the other relays through the
// simulator's event queue (Sim.notify), not memshared's channels: it
// arrives after a latency, or late, or never, as with PostgreSQL's
// NOTIFY, so a relay serves its connections between another's commit and
// its notification.
func (s *sharedView) Notify(ctx context.Context, id string, head uint64) error {
	if err := s.err(); err != nil {
		return err
	}
	if err := s.v.Ping(ctx); err != nil {
		return err // the storage is down
	}
	s.n.sim.notify(s.n, id, head)
	return nil
}

// Listen calls fn for every notification delivered to this view (see
// Notify), after fn("", 0), until ctx ends.
func (s *sharedView) Listen(ctx context.Context, fn func(id string, head uint64)) error {
	if err := s.err(); err != nil {
		return err
	}
	if err := s.v.Ping(ctx); err != nil {
		return err
	}
	c := make(chan note, 256)
	s.n.sim.mu.Lock()
	s.n.listen = c
	s.n.sim.mu.Unlock()
	defer func() {
		s.n.sim.mu.Lock()
		if s.n.listen == c {
			s.n.listen = nil
		}
		s.n.sim.mu.Unlock()
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

// note is a notification of a relay: database id's head is head.
type note struct {
	id   string
	head uint64
}

// notify delivers from's notification to every other relay's listener
// (relayNode.listen) after 1–20 ms, one queue per pair of relays, keyed
// and drawn by the pair; under network faults some are lost
// (shared.note_drop: the relays' periodic check of the heads catches up)
// or delayed by up to 5 s (shared.note_delay). A relay not listening at
// delivery (down, or retrying Listen while its storage is down) misses
// it.
func (s *Sim) notify(from *relayNode, id string, head uint64) {
	nf := s.netFaults()
	for _, to := range s.relays {
		if to == from {
			continue
		}
		p := s.notePair(from.idx, to.idx)
		p.mu.Lock()
		lat := time.Duration(1+p.rng.IntN(20)) * time.Millisecond
		r := p.rng.IntN(1000)
		switch {
		case r < nf.drop:
			p.mu.Unlock()
			s.count("shared.note_drop")
			continue
		case r < nf.drop+nf.delay:
			s.count("shared.note_delay")
			lat += time.Duration(p.rng.IntN(5000)) * time.Millisecond
		}
		p.seq++
		k := key{at: s.sched.Now() + lat, kind: kindNet, owner: 1<<48 | uint64(from.idx)<<16 | uint64(to.idx), seq: p.seq}
		p.mu.Unlock()
		s.sched.at(k, func() {
			s.mu.Lock()
			fmt.Fprintf(s.hash, "note %d>%d %s %d;", from.idx, to.idx, id, head)
			c := to.listen
			s.mu.Unlock()
			if c != nil {
				select {
				case c <- note{id, head}:
				default: // full: the periodic check catches up
				}
			}
		})
	}
}

// notePair is the queue of notifications from one relay to another: its
// sequence and random source.
type notePair struct {
	mu  sync.Mutex
	seq uint64
	rng *rand.Rand
}

func (s *Sim) notePair(from, to int) *notePair {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes == nil {
		s.notes = map[[2]int]*notePair{}
	}
	p := s.notes[[2]int{from, to}]
	if p == nil {
		p = &notePair{rng: rand.New(rand.NewPCG(s.seed, 1<<48|uint64(from)<<16|uint64(to)))}
		s.notes[[2]int{from, to}] = p
	}
	return p
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
