// Package timing is the source of time and timers the sync client and the
// relay wait on: every delay either waits (debounce window, reconnect
// backoff, keepalive, handshake and request timeouts, a connection's idle
// timeout, rate-limit waits, the relay's maintenance loop) goes through a
// Clock, so tests and the deterministic simulator (internal/sim) drive
// them with a clock of their own instead of sleeping.
//
// It is not the engine's clock: engine.Clock gives wall time in ms for
// hybrid logical clocks (HLCs) and drift checks; a Clock here gives the
// monotonic time delays are measured from. client.Options.Clock and
// relay.Config.Timers take a Clock; System is the default of both.
package timing

import "time"

// Clock is a source of time and one-shot timers. Implementations must be
// safe for concurrent use.
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
	// Reset makes the timer fire d after now, as time.Timer.Reset does:
	// it returns false when the timer had already fired or been stopped.
	Reset(d time.Duration) bool
}

// System is the Clock of package time: the default.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (System) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

// AfterFunc wraps time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) Timer { return sysTimer{time.AfterFunc(d, f)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
