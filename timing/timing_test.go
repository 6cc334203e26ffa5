package timing

import (
	"testing"
	"time"
)

func TestSystemTimerFiresStopsAndResets(t *testing.T) {
	var c Clock = System{}
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("timer did not fire")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer returned true")
	}
	tm.Reset(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("reset timer did not fire")
	}
	done := make(chan struct{})
	af := c.AfterFunc(time.Hour, func() { close(done) })
	if !af.Stop() {
		t.Fatal("Stop of a pending AfterFunc returned false")
	}
	af.Reset(time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reset AfterFunc did not run")
	}
}
