package client

import (
	"time"

	"github.com/replica-sync/replica/timing"
)

// Clock is the client's source of time: every delay it waits (debounce
// window, max-wait, reconnect backoff, keepalive, handshake and snapshot
// stall timeouts) goes through it, so tests drive them with a fake clock
// instead of sleeping. It is timing.Clock, shared with the relay
// (relay.Config.Timers); implementations must be safe for concurrent use.
type Clock = timing.Clock

// Timer is a one-shot timer of a Clock (timing.Timer).
type Timer = timing.Timer

// SystemClock is the Clock of package time, the default (timing.System).
type SystemClock = timing.System

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
