//go:build !js

package sim

import (
	"container/heap"
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
// A cancelled event stays in the heap and is skipped.
type event struct {
	key       key
	fn        func()
	cancelled bool
	index     int
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
	mu  sync.Mutex
	now time.Duration
	q   eventHeap
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

// cancel marks e cancelled; it reports whether e was still pending.
func (s *sched) cancel(e *event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.cancelled || e.index < 0 {
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
