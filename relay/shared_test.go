//go:build !js

package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/wire"
)

// testShared is a SharedStorage in memory for this package's tests of
// several relays (relay/memshared, the full one, imports this package):
// one memkv store per database, the writer lock and the maintenance right
// as one-slot semaphores, snapshot streams counted; notifications are not
// delivered (the relays' periodic check of the heads catches up).
type testShared struct {
	mu      sync.Mutex
	dbs     map[string]*memkv.Store
	locks   map[string]chan struct{}
	maint   map[string]chan struct{}
	streams map[string]int
	holds   map[string]bool
}

func newTestShared() *testShared {
	return &testShared{dbs: map[string]*memkv.Store{}, locks: map[string]chan struct{}{},
		maint: map[string]chan struct{}{}, streams: map[string]int{}, holds: map[string]bool{}}
}

type keepStore struct{ *memkv.Store }

func (keepStore) Close() error { return nil }

func (s *testShared) Open(id string) (kv.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dbs[id] == nil {
		s.dbs[id] = memkv.New(StoreBuckets()...)
	}
	return keepStore{s.dbs[id]}, nil
}

func (s *testShared) sem(m map[string]chan struct{}, id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m[id] == nil {
		m[id] = make(chan struct{}, 1)
	}
	return m[id]
}

func (s *testShared) Lock(ctx context.Context, id string) (func(), error) {
	c := s.sem(s.locks, id)
	select {
	case c <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-c }) }, nil
}

func (s *testShared) TryMaintain(_ context.Context, id string) (func(), bool, error) {
	c := s.sem(s.maint, id)
	select {
	case c <- struct{}{}:
	default:
		return nil, false, nil
	}
	var once sync.Once
	return func() { once.Do(func() { <-c }) }, true, nil
}

func (s *testShared) StreamStarted(ctx context.Context, id string) (func(), error) {
	for {
		s.mu.Lock()
		if !s.holds[id] {
			s.streams[id]++
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
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

func (s *testShared) HoldStreams(_ context.Context, id string) (func(), bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[id] > 0 || s.holds[id] {
		return nil, false, nil
	}
	s.holds[id] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.holds, id)
			s.mu.Unlock()
		})
	}, true, nil
}

func (s *testShared) Notify(context.Context, string, uint64) error { return nil }

func (s *testShared) Listen(ctx context.Context, _ func(string, uint64)) error {
	<-ctx.Done()
	return ctx.Err()
}

func (s *testShared) Ping(context.Context) error { return nil }

// TestSharedPendingPruningFinishedBeforeAppend: another relay on the
// shared storage stored a horizon mark and stopped before its pruning
// completed ("horizonPending" left: a crash); this relay, running all
// along, then applies a late delete (its tombstone older than the mark's
// wall). The pruning pending is finished before that append, so the late
// delete's tombstone stays until the next mark, as on the clients that
// applied the mark before it (wire's "Tombstone horizon"). Before, the
// relay appended first and finished the pruning at its next maintenance
// pass (advanceHorizon's loadHorizon), which then pruned the late
// tombstone from its merged replica alone.
func TestSharedPendingPruningFinishedBeforeAppend(t *testing.T) {
	clock := newManualClock()
	st := newTestShared()
	r := startRelay(t, Config{Clock: clock, Storage: st})
	rep := newReplica(t, clock)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", insertStops(t, rep, "kept", 1))

	// What a relay that crashed between its mark and the pruning leaves.
	wall := clock.Now() - uint64(engine.DefaultRetention.Milliseconds())
	store, _ := st.Open("acme")
	err := store.Update(func(tx kv.Tx) error {
		cur, err := getCounter(tx, keyCursor)
		if err != nil {
			return err
		}
		ch, _, err := chainAt(tx, cur)
		if err != nil {
			return err
		}
		if err := tx.Put(bucketRelay, keyHorizonPending, binary.BigEndian.AppendUint64(nil, wall)); err != nil {
			return err
		}
		if err := tx.Put(bucketHorizons, cursorKey(cur), encodeMark(wire.Horizon{Cursor: cur, Wall: wall, Chain: ch})); err != nil {
			return err
		}
		return putMarkSites(tx, cur)
	})
	if err != nil {
		t.Fatal(err)
	}

	// A late delete: a device 40 days behind inserts and deletes a stop.
	late := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	b := connectAs(t, r, "acme", late)
	b.apply("late", deleteStop(t, late))

	// The relay's maintenance at the same clock makes no new mark.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := connect(t, r, "acme")
	s := collectSnapshot(t, c, &wire.GetSnapshot{})
	if s.header.Horizon != wall {
		t.Fatalf("snapshot header horizon %d, want the stored mark's %d", s.header.Horizon, wall)
	}
	if s.rows["stops"] != 2 {
		t.Fatalf("after the maintenance pass: %d stop rows, want 2 (the kept stop and the late delete's tombstone, appended after the mark)", s.rows["stops"])
	}
}

// failStore is a store whose read-write transactions fail from the
// (n+1)-th on after failAfter(n) (left 0: none fails), as a full disk's
// would.
type failStore struct {
	kv.Store
	left atomic.Int64
}

var errTestFull = errors.New("test: disk full")

func (f *failStore) failAfter(n int64) { f.left.Store(n + 1) }

func (f *failStore) Update(fn func(kv.Tx) error) error {
	if f.left.Load() > 0 && f.left.Add(-1) == 0 {
		f.left.Store(1) // every later one fails too, until reset
		return errTestFull
	}
	return f.Store.Update(fn)
}

// TestPendingPruningFinishedBeforeAppend: a relay alone stored a horizon
// mark and its pruning failed (a storage error: "horizonPending" left);
// its next apply, a late delete, finishes the pruning first, so a restart
// does not prune again and the late delete's tombstone, appended after
// the mark, stays, as on the clients that applied the mark before it.
// Before, the pruning stayed pending until the next open, which pruned
// the late tombstone from the merged replica alone.
func TestPendingPruningFinishedBeforeAppend(t *testing.T) {
	clock := newManualClock()
	fs := &failStore{Store: keepStore{memkv.New(StoreBuckets()...)}}
	cfg := Config{Clock: clock, OpenStore: func(string) (kv.Store, error) { return fs, nil }}
	r := startRelay(t, cfg)
	old := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", old)
	a.apply("apply-1", append(insertStops(t, old, "kept", 1), deleteStop(t, old)...))

	fs.failAfter(1) // the mark's transaction, then the pruning's fails
	if err := r.srv.Maintain(context.Background()); err == nil {
		t.Fatal("Maintain: no error, want the pruning's")
	}
	fs.left.Store(0)

	late := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	b := connectAs(t, r, "acme", late)
	b.apply("late", deleteStop(t, late))
	_ = a.ws.CloseNow()
	_ = b.ws.CloseNow()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	r2 := startRelay(t, cfg)
	c := connect(t, r2, "acme")
	s := collectSnapshot(t, c, &wire.GetSnapshot{})
	if s.rows["stops"] != 2 {
		t.Fatalf("after the restart: %d stop rows, want 2 (the kept stop and the late delete's tombstone; the old one pruned)", s.rows["stops"])
	}
}
