//go:build !js

package client

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose time moves only when the test calls Advance.
// Timers fire in deadline order inside Advance; AfterFunc callbacks run
// there too. Every timer ever created is recorded, so a test can wait for
// the code under test to arm one ("the client is now waiting 2 s").
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	active  []*fakeTimer
	created []time.Duration // durations of every timer, in creation order
	changed chan struct{}   // closed and replaced on every change
}

type fakeTimer struct {
	c    *fakeClock
	when time.Time
	d    time.Duration
	ch   chan time.Time
	f    func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer { return c.add(d, nil) }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer { return c.add(d, f) }

func (c *fakeClock) add(d time.Duration, f func()) *fakeTimer {
	t := &fakeTimer{c: c, f: f, ch: make(chan time.Time, 1)}
	c.arm(t, d)
	return t
}

// arm schedules t d after now (firing it at once when d <= 0) and records
// the duration for waitTimer.
func (c *fakeClock) arm(t *fakeTimer, d time.Duration) {
	c.mu.Lock()
	t.d, t.when = d, c.now.Add(d)
	c.created = append(c.created, d)
	if d > 0 {
		c.active = append(c.active, t)
	}
	c.notifyLocked()
	c.mu.Unlock()
	if d <= 0 {
		t.fire()
	}
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.active, t)
	if i < 0 {
		return false
	}
	c.active = slices.Delete(c.active, i, i+1)
	c.notifyLocked()
	return true
}

// Reset re-arms t d after now (recorded as a new timer of duration d, so
// waitTimer sees it); false when it had already fired or been stopped.
func (t *fakeTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	t.c.arm(t, d)
	return active
}

func (t *fakeTimer) fire() {
	if t.f != nil {
		t.f()
		return
	}
	select {
	case t.ch <- t.when:
	default:
	}
}

// Advance moves time forward by d, firing every timer that comes due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.active[:0]
	for _, t := range c.active {
		if !t.when.After(c.now) {
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	c.active = keep
	c.notifyLocked()
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.when.Compare(b.when) })
	for _, t := range due {
		t.fire()
	}
}

// waitTimer waits (up to 5 s of real time) until an active timer of
// duration d exists, and returns how long until it fires.
func (c *fakeClock) waitTimer(t testing.TB, d time.Duration) {
	t.Helper()
	c.waitUntil(t, fmt.Sprintf("a %v timer", d), func() bool {
		for _, tm := range c.active {
			if tm.d == d {
				return true
			}
		}
		return false
	})
}

// waitUntil waits (up to 5 s of real time) until cond, evaluated under the
// clock's lock, holds.
func (c *fakeClock) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			c.mu.Lock()
			var act []string
			for _, tm := range c.active {
				act = append(act, tm.d.String())
			}
			c.mu.Unlock()
			t.Fatalf("timed out waiting for %s; active timers %v", what, act)
		}
	}
}

// activeDurations lists the durations of the active timers.
func (c *fakeClock) activeDurations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.active {
		out = append(out, t.d)
	}
	return out
}
