package engine

import "time"

// Clock supplies physical time. The engine never reads the system clock
// directly; tests inject a manual clock.
type Clock interface {
	// Now returns the current time in milliseconds since the Unix epoch.
	Now() uint64
}

// SystemClock reads time.Now.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() uint64 { return uint64(time.Now().UnixMilli()) }

// ClockFunc adapts a function to Clock.
type ClockFunc func() uint64

// Now implements Clock.
func (f ClockFunc) Now() uint64 { return f() }

// clockState is the persisted part of the clock: the last issued or received
// (wall, counter). Site and opSeq are not part of it.
type clockState struct {
	Wall    uint64
	Counter uint16
}

// tick advances s for one local transaction at physical time now and returns
// the new base (one tick per commit: docs/design.md § Hybrid logical clock). The result is
// strictly greater than s, whatever now is: within a millisecond (or when the
// wall clock went backward) the counter advances, and past 0xFFFF it rolls
// into the next millisecond.
func (s clockState) tick(now uint64) clockState {
	if now > s.Wall {
		return clockState{Wall: now}
	}
	if s.Counter == 0xFFFF {
		return clockState{Wall: s.Wall + 1}
	}
	return clockState{Wall: s.Wall, Counter: s.Counter + 1}
}

// receive merges a remote HLC into s: the state becomes the maximum of the
// two, so the next tick is above everything seen. Drift is checked by the
// caller before anything is merged.
func (s clockState) receive(remote HLC) clockState {
	if remote.Wall > s.Wall || (remote.Wall == s.Wall && remote.Counter > s.Counter) {
		return clockState{Wall: remote.Wall, Counter: remote.Counter}
	}
	return s
}

// checkDrift returns ErrClockDrift if remote's wall time is more than
// MaxDrift ms ahead of now.
func checkDrift(remote HLC, now uint64) error {
	if remote.Wall > now && remote.Wall-now > MaxDrift {
		return &DriftError{Remote: remote, Now: now}
	}
	return nil
}
