//go:build !js

package sim

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/replica-sync/replica/timing"
)

// epoch is simulated time zero as wall time.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// timers is one node's monotonic clock and timer source (timing.Clock, the
// client's Options.Clock and the relay's Config.Timers): its timers are
// events of the simulator, keyed by the node's owner id and its own timer
// count, given when the system settles after the event that armed them
// (sched.flush), so that they fire in one order whatever goroutine armed
// them.
type timers struct {
	s     *sched
	owner uint64
	mu    sync.Mutex
	seq   uint64
}

var _ timing.Clock = (*timers)(nil)

func (t *timers) Now() time.Time { return epoch.Add(t.s.Now()) }

func (t *timers) NewTimer(d time.Duration) timing.Timer { return t.arm(d, nil) }

func (t *timers) AfterFunc(d time.Duration, f func()) timing.Timer { return t.arm(d, f) }

func (t *timers) arm(d time.Duration, f func()) *simTimer {
	tm := &simTimer{t: t, fn: f, ch: make(chan time.Time, 1)}
	tm.schedule(d)
	return tm
}

func (t *timers) nextSeq() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	return t.seq
}

// simTimer is a timer of the simulated clock.
type simTimer struct {
	t  *timers
	fn func()
	ch chan time.Time

	mu sync.Mutex
	ev *event
}

func (tm *simTimer) schedule(d time.Duration) {
	k := key{at: tm.t.s.Now() + max(d, 0), kind: kindTimer, owner: tm.t.owner}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	var ev *event
	ev = tm.t.s.atTimer(k, tm.t, func() { tm.fire(ev) })
	tm.ev = ev
}

func (tm *simTimer) fire(ev *event) {
	tm.mu.Lock()
	if tm.ev != ev {
		tm.mu.Unlock()
		return
	}
	tm.ev = nil
	tm.mu.Unlock()
	if tm.fn != nil {
		go tm.fn()
		return
	}
	select {
	case tm.ch <- tm.t.Now():
	default:
	}
}

func (tm *simTimer) C() <-chan time.Time { return tm.ch }

func (tm *simTimer) Stop() bool {
	tm.mu.Lock()
	ev := tm.ev
	tm.ev = nil
	tm.mu.Unlock()
	return ev != nil && tm.t.s.cancel(ev)
}

func (tm *simTimer) Reset(d time.Duration) bool {
	was := tm.Stop()
	tm.schedule(d)
	return was
}

// wallClock is a node's wall clock in ms (engine.Clock), simulated time
// plus the node's skew, which faults set (ahead, behind, stepping back).
type wallClock struct {
	s    *sched
	skew atomic.Int64 // ms
}

func (w *wallClock) Now() uint64 {
	return uint64(epoch.Add(w.s.Now()).UnixMilli() + w.skew.Load())
}
