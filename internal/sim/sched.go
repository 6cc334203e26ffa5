//go:build !js

package sim

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"
)

// Event kinds, the second field of an event's key: at one instant,
// deliveries come before timers, timers before the driver's next step.
const (
	kindNet = iota
	kindTimer
	kindDriver
)

// key orders events: simulated time, kind, owner (a link direction, a
// clock, the driver) and the owner's own sequence number. Every field is
// fixed by the owner alone, never by which goroutine got to the queue
// first, so the run does not depend on scheduling.
type key struct {
	at    time.Duration
	kind  int
	owner uint64
	seq   uint64
}

func (a key) less(b key) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.owner != b.owner {
		return a.owner < b.owner
	}
	return a.seq < b.seq
}

// event is one scheduled happening; fn runs on the simulator's goroutine.
// A timer's event is pending (tm set, not yet in the heap) until the
// system settles after the event that armed it (see flush).
type event struct {
	key       key
	fn        func()
	cancelled bool
	index     int
	tm        *timers // a pending timer's clock, which numbers it at flush
}

type eventHeap []*event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].key.less(h[j].key) }
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *eventHeap) Push(x any) { e := x.(*event); e.index = len(*h); *h = append(*h, e) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// sched is the simulator's event queue and its clock: simulated time moves
// only when the simulator takes the next event. Goroutines of the system
// under test add events (timers, frames) under mu.
type sched struct {
	mu      sync.Mutex
	now     time.Duration
	q       eventHeap
	pending []*event // timers armed since the last flush
}

// at schedules fn at k (k.at is clamped to now).
func (s *sched) at(k key, fn func()) *event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.at < s.now {
		k.at = s.now
	}
	e := &event{key: k, fn: fn}
	heap.Push(&s.q, e)
	return e
}

// atTimer schedules fn at k.at for the timers t (k.at is clamped to now),
// numbered by t at the next flush.
func (s *sched) atTimer(k key, t *timers, fn func()) *event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.at < s.now {
		k.at = s.now
	}
	e := &event{key: k, fn: fn, tm: t, index: -1}
	s.pending = append(s.pending, e)
	return e
}

// flush numbers the timers armed since the last flush and queues them
// (under mu). It runs when the system has settled after an event, so the
// timers every goroutine armed in that event are all there; they are
// numbered per clock in the order of their firing time, so that two
// goroutines of one node arming timers of different durations in one
// event (a relay's maintenance loop and its loop of the other relays'
// commits) number them alike whichever ran first. Timers of one clock
// due at the same instant keep the order they were armed in.
func (s *sched) flush() {
	if len(s.pending) == 0 {
		return
	}
	slices.SortStableFunc(s.pending, func(a, b *event) int {
		return cmp.Or(cmp.Compare(a.key.owner, b.key.owner), cmp.Compare(a.key.at, b.key.at))
	})
	for _, e := range s.pending {
		if !e.cancelled {
			e.key.seq = e.tm.nextSeq()
			e.tm = nil
			heap.Push(&s.q, e)
		}
	}
	clear(s.pending)
	s.pending = s.pending[:0]
}

// cancel marks e cancelled; it reports whether e was still pending.
func (s *sched) cancel(e *event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.cancelled {
		return false
	}
	if e.tm != nil { // armed in this event, not queued yet
		e.cancelled = true
		return true
	}
	if e.index < 0 {
		return false
	}
	e.cancelled = true
	heap.Remove(&s.q, e.index)
	e.index = -1
	return true
}

// next removes the earliest event whose kind passes ok, moves the clock to
// it and returns it; nil when there is none.
func (s *sched) next(ok func(kind int) bool) *event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush()
	for i := 0; len(s.q) > 0; i++ {
		e := s.q[0]
		if !ok(e.key.kind) {
			return s.nextSlow(ok)
		}
		heap.Pop(&s.q)
		e.index = -1
		s.now = e.key.at
		return e
	}
	return nil
}

// nextSlow finds the earliest event of an accepted kind by scanning (the
// driver's events are few: at most one pending).
func (s *sched) nextSlow(ok func(kind int) bool) *event {
	var best *event
	for _, e := range s.q {
		if ok(e.key.kind) && (best == nil || e.key.less(best.key)) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	heap.Remove(&s.q, best.index)
	best.index = -1
	s.now = best.key.at
	return best
}

// Now returns the simulated time.
func (s *sched) Now() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}
