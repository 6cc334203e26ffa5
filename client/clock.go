package client

import "time"

// Clock is the client's source of time: every delay it waits (debounce
// window, max-wait, reconnect backoff, keepalive, handshake and snapshot
// stall timeouts) goes through it, so tests drive them with a fake clock
// instead of sleeping. Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once,
	// d after now (at once when d <= 0).
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine d after now; Stop on the
	// returned Timer prevents a call that has not started. The Timer's C
	// is not used and may be nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C returns the channel the timer sends on when it fires. The
	// channel has a buffer of one, so a fired timer never blocks the
	// clock.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It returns false when the
	// timer had already fired or been stopped. It does not drain C.
	Stop() bool
}

// SystemClock is the Clock of package time. It is the default.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer {
	return sysTimer{time.AfterFunc(d, f)}
}

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }

// stopTimer stops t if it is not nil.
func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}

// timerC returns t's channel, or nil (never ready in a select) for a nil t.
func timerC(t Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}
