//go:build js && wasm

package jsbridge

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/idbkv"
	"github.com/replica-sync/replica/model"
)

// When a change wakes the refresher while the replica's worker is idle (a
// remote apply, a sibling tab's notice, a lone write that has returned), it
// re-runs the queries at once. While the worker still has calls to run (a
// burst of writes), it waits coalesce, then on until the worker drains, up
// to maxCoalesce (about one animation frame), so a burst of writes costs
// one re-run per subscription about once a frame, not one per commit.
// Changes that arrive while queries run are coalesced into the next round.
const (
	coalesce    = time.Millisecond
	maxCoalesce = 16 * time.Millisecond
)

// subscription is one db.subscribe: a query re-run when its table changes.
type subscription struct {
	id    int
	table string
	q     engine.Query
	// Touched only by the refresher goroutine.
	last []model.Row
	ran  bool
}

// subscriptions runs a replica's live queries on one refresher goroutine,
// which lives from open to close. Engine events and sibling-tab messages only
// mark tables dirty and wake it: no query runs inside an event callback.
type subscriptions struct {
	d     *db
	mu    sync.Mutex
	subs  map[int]*subscription
	fresh []*subscription // not run yet
	dirty map[string]bool // tables changed since the last round
	wake  chan struct{}   // capacity 1
	stopc chan struct{}   // closed by stop
	done  chan struct{}   // closed when the refresher returns

	queries atomic.Int64 // queries run (tests)
	rounds  atomic.Int64 // refresh rounds finished (tests)
	waited  atomic.Int64 // rounds that waited for a burst to settle (tests)
	idle    atomic.Bool  // the refresher waits for work (tests)
}

func newSubscriptions(d *db) *subscriptions {
	s := &subscriptions{d: d, subs: map[int]*subscription{}, dirty: map[string]bool{},
		wake: make(chan struct{}, 1), stopc: make(chan struct{}), done: make(chan struct{})}
	go s.refresher()
	return s
}

// subscribe serves db.subscribe: a = sid, b = table, c = query JSON,
// d = blobs. It has no promise: its errors go to the subscription's error
// callback.
func (s *subscriptions) subscribe(c *call) {
	sid, table := c.int(0), c.str(1)
	q, err := parseQuery(table, c.str(2), c.bytes(3), false)
	if err != nil {
		s.deliver(sid, fail(err, c.methodName(), table))
		return
	}
	sub := &subscription{id: sid, table: table, q: q}
	s.mu.Lock()
	s.subs[sid] = sub
	s.fresh = append(s.fresh, sub)
	s.mu.Unlock()
	s.signal()
}

// unsubscribe ends the subscription sid.
func (s *subscriptions) unsubscribe(sid int) {
	s.mu.Lock()
	delete(s.subs, sid)
	s.mu.Unlock()
}

// markDirty records that tables changed; only tables some subscription
// reads wake the refresher.
func (s *subscriptions) markDirty(tables []string) {
	s.mu.Lock()
	wake := false
	for _, t := range tables {
		for _, sub := range s.subs {
			if sub.table == t {
				s.dirty[t] = true
				wake = true
				break
			}
		}
	}
	s.mu.Unlock()
	if wake {
		s.signal()
	}
}

// markAll marks every subscribed table dirty (another tab made itself
// known: it may have committed before it told this one).
func (s *subscriptions) markAll() {
	s.mu.Lock()
	for _, sub := range s.subs {
		s.dirty[sub.table] = true
	}
	n := len(s.subs)
	s.mu.Unlock()
	if n > 0 {
		s.signal()
	}
}

// markSystem marks the tables of the subscriptions that read system
// columns ($pending changes when the relay acknowledges a push).
func (s *subscriptions) markSystem() {
	s.mu.Lock()
	n := 0
	for _, sub := range s.subs {
		if sub.q.System {
			s.dirty[sub.table] = true
			n++
		}
	}
	s.mu.Unlock()
	if n > 0 {
		s.signal()
	}
}

func (s *subscriptions) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop ends the refresher and waits for it.
func (s *subscriptions) stop() {
	close(s.stopc)
	<-s.done
	s.mu.Lock()
	s.subs = map[int]*subscription{}
	s.mu.Unlock()
}

func (s *subscriptions) refresher() {
	defer close(s.done)
	for {
		s.idle.Store(true)
		select {
		case <-s.wake:
		case <-s.stopc:
			return
		}
		s.idle.Store(false)
		s.mu.Lock()
		onlyFresh := len(s.dirty) == 0
		s.mu.Unlock()
		if !onlyFresh && !s.wait() {
			return
		}
		s.mu.Lock()
		dirty := s.dirty
		s.dirty = map[string]bool{}
		var run []*subscription
		run = append(run, s.fresh...)
		s.fresh = nil
		for _, sub := range s.subs {
			if sub.ran && dirty[sub.table] {
				run = append(run, sub)
			}
		}
		s.mu.Unlock()
		for _, sub := range run {
			select {
			case <-s.stopc:
				return
			default:
			}
			s.refresh(sub)
		}
		s.rounds.Add(1)
	}
}

// wait lets a burst of changes gather before a round. When the worker is
// idle there is no burst to wait for, and it returns at once (a remote
// change reaching a subscription pays no timer). Otherwise it waits
// coalesce, then, while the worker still has calls queued, until it drains
// or maxCoalesce has passed since the change. It returns false when
// stopped.
func (s *subscriptions) wait() bool {
	if !s.d.busy() {
		return true
	}
	s.waited.Add(1)
	t := time.NewTimer(coalesce)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stopc:
		return false
	}
	if !s.d.busy() {
		return true
	}
	select {
	case <-s.d.idle: // drop a stale signal
	default:
	}
	t.Reset(maxCoalesce - coalesce)
	for s.d.busy() {
		select {
		case <-s.d.idle:
		case <-t.C:
			return true
		case <-s.stopc:
			return false
		}
	}
	return true
}

// refresh re-runs sub and delivers its rows if they differ from the last
// delivered ones (compared in Go, values with model.Value.Equal: blobs
// byte-wise, reals by bits).
func (s *subscriptions) refresh(sub *subscription) {
	defer func() {
		if p := recover(); p != nil {
			s.deliver(sub.id, fail(panicError("db.subscribe", p), "db.subscribe", sub.table))
		}
	}()
	if testHook != nil {
		testHook("db.subscribe")
	}
	q, err := s.d.withPending(sub.q)
	var rows []model.Row
	if err == nil {
		rows, err = s.d.eng.Query(sub.table, q)
	}
	for errors.Is(err, idbkv.ErrSuspended) {
		// The page was frozen during the query (see db.suspend): query
		// again once it runs.
		select {
		case <-s.d.store.Resumed():
		case <-s.stopc:
			return
		}
		if q, err = s.d.withPending(sub.q); err == nil {
			rows, err = s.d.eng.Query(sub.table, q)
		}
	}
	s.queries.Add(1)
	s.mu.Lock()
	alive := s.subs[sub.id] == sub
	if alive && err != nil {
		delete(s.subs, sub.id)
	}
	s.mu.Unlock()
	if !alive {
		return
	}
	if err != nil {
		s.deliver(sub.id, fail(err, "db.subscribe", sub.table))
		return
	}
	if sub.ran && equalRows(sub.last, rows) {
		return
	}
	sub.last, sub.ran = rows, true
	s.deliver(sub.id, s.d.rowsResult(kindRows, sub.table, rows))
}

func (s *subscriptions) deliver(sid int, r result) {
	var blobs any
	if r.blobs != nil {
		a := jsUint8Array.New(len(r.blobs))
		js.CopyBytesToJS(a, r.blobs)
		blobs = a
	}
	s.d.b.deliverFn.Invoke(s.d.h, sid, r.kind, r.text, blobs)
}

// equalRows compares two query results structurally.
func equalRows(a, b []model.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for k, v := range a[i] {
			w, ok := b[i][k]
			if !ok || !v.Equal(w) {
				return false
			}
		}
	}
	return true
}

// parseTables reads a sibling tab's JSON array of table names.
func parseTables(text string) ([]string, error) {
	r := newReader([]byte(text), nil)
	var tables []string
	err := r.Elements(func(int) error {
		t, err := r.Str()
		tables = append(tables, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tables, r.End()
}
