package client

import "time"

// Timing constants. Options can override each for one Client; zero there
// means the value here.
const (
	// DefaultDebounceWindow is the push debounce window: the first local
	// change after a quiet period is pushed at once, and the changes that
	// follow within this window of each other are coalesced into one
	// apply_changes (docs/design.md § Client behaviour).
	DefaultDebounceWindow = 50 * time.Millisecond
	// DefaultMaxWait bounds the debounce under a steady stream of
	// changes: a change waits at most this long before it is pushed
	// (unless a push is already in flight, see "Pushing").
	DefaultMaxWait = 250 * time.Millisecond
	// BackoffBase and BackoffMax shape the reconnect delay: before the
	// n-th consecutive reconnect attempt (n from 0) the client waits
	// min(BackoffBase·2^n, BackoffMax) plus up to BackoffJitter of that
	// (docs/design.md § Client behaviour).
	BackoffBase = time.Second
	// BackoffMax caps the reconnect delay before jitter.
	BackoffMax = 60 * time.Second
	// BackoffJitter is the largest jitter as a fraction of the delay:
	// the delay is multiplied by 1 + BackoffJitter·r, r from Options.Rand
	// in [0, 1).
	BackoffJitter = 0.25
	// DefaultPingInterval is the keepalive period: a session that has
	// received nothing for this long sends ping, and one that has
	// received nothing for twice this long is considered dead and
	// closed (then reconnected).
	DefaultPingInterval = 30 * time.Second
	// DefaultHandshakeTimeout bounds dialing plus waiting for
	// handshake_ack.
	DefaultHandshakeTimeout = 30 * time.Second
	// DefaultSnapshotStallTimeout is how long a snapshot transfer may go
	// without a chunk before the client closes the socket; the reconnect
	// resumes the transfer from the engine's checkpoint.
	DefaultSnapshotStallTimeout = 60 * time.Second
	// DefaultRequestTimeout is how long a get_changes or apply_changes may
	// stay unanswered before the session is considered broken and
	// closed.
	DefaultRequestTimeout = 60 * time.Second
)

// backoff returns the delay before reconnect attempt n (0 for the first
// after a session that completed its handshake): min(base·2^n, max) times
// 1 + BackoffJitter·r, with r in [0, 1).
func backoff(n int, base, max time.Duration, r float64) time.Duration {
	d := max
	if n < 62 && base<<n > 0 && base<<n < max {
		d = base << n
	}
	if r < 0 || r >= 1 {
		r = 0
	}
	return d + time.Duration(float64(d)*BackoffJitter*r)
}

// debouncer decides when local changes are pushed. It is a pure state
// machine over the times it is given; the session arms a timer for the
// deadline each call returns.
//
// A change when the debouncer is idle (no change or flush within window)
// flushes at once and opens a window. A change inside a window waits;
// every waiting change extends the window to window after it, and the waiting
// changes flush when the window passes quietly or when the oldest of them
// has waited maxWait, whichever comes first. A flush opens a new window.
type debouncer struct {
	window, maxWait time.Duration

	quietAt time.Time // the open window ends here; zero: idle
	firstAt time.Time // the oldest waiting change; zero: none waiting
}

// change records a local change at now. It returns whether to flush now,
// and the time at which fire must be called next (zero: no timer needed).
func (d *debouncer) change(now time.Time) (flush bool, next time.Time) {
	switch {
	case !d.firstAt.IsZero() && !now.Before(d.deadline()):
		// Waiting changes were due (their timer is not handled yet): this
		// one goes with them.
	case d.firstAt.IsZero() && (d.quietAt.IsZero() || !now.Before(d.quietAt)):
		// Idle: the leading edge.
	default:
		if d.firstAt.IsZero() {
			d.firstAt = now
		}
		d.quietAt = now.Add(d.window)
		return false, d.deadline()
	}
	d.firstAt = time.Time{}
	d.quietAt = now.Add(d.window)
	return true, d.quietAt
}

// fire is called when the time returned by the last change or fire call
// has come (or later). It returns whether to flush now and the next
// deadline (zero: the debouncer went idle).
func (d *debouncer) fire(now time.Time) (flush bool, next time.Time) {
	if d.firstAt.IsZero() {
		if d.quietAt.IsZero() || !now.Before(d.quietAt) {
			d.quietAt = time.Time{}
			return false, time.Time{}
		}
		return false, d.quietAt
	}
	if !now.Before(d.deadline()) {
		d.firstAt = time.Time{}
		d.quietAt = now.Add(d.window)
		return true, d.quietAt
	}
	return false, d.deadline()
}

// deadline is when the waiting changes flush: the end of the quiet window,
// or firstAt+maxWait if earlier.
func (d *debouncer) deadline() time.Time {
	if m := d.firstAt.Add(d.maxWait); m.Before(d.quietAt) {
		return m
	}
	return d.quietAt
}

// reset forgets waiting changes and the window (a new session pushes
// everything pending anyway).
func (d *debouncer) reset() { d.quietAt, d.firstAt = time.Time{}, time.Time{} }
