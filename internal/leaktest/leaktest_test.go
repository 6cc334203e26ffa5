package leaktest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCheck: a goroutine started after the count is reported while it
// runs, and not once it ends within the grace period.
func TestCheck(t *testing.T) {
	before := len(Goroutines())
	stop := make(chan struct{})
	go func() { <-stop }()
	if code := Check(before, 20*time.Millisecond); code != 1 {
		t.Errorf("Check with a goroutine left = %d, want 1", code)
	}
	go func() { time.Sleep(20 * time.Millisecond); close(stop) }()
	if code := Check(before, 5*time.Second); code != 0 {
		t.Errorf("Check after the goroutine ends = %d, want 0", code)
	}
}

// cleanupTB records what AtCleanup does with a test: its cleanup and its
// errors.
type cleanupTB struct {
	testing.TB
	cleanup func()
	errors  []string
}

func (c *cleanupTB) Cleanup(f func()) { c.cleanup = f }
func (c *cleanupTB) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

// parkedHere is a goroutine AtCleanup's test looks for by name: it says it
// started, then waits for stop.
//
//go:noinline
func parkedHere(started chan<- struct{}, stop <-chan struct{}) {
	close(started)
	<-stop
}

// TestAtCleanup: a goroutine matching the frames and still running after
// the grace period fails the test, naming it; one that ends within it, or
// that does not match, does not.
func TestAtCleanup(t *testing.T) {
	frames := regexp.MustCompile(`leaktest\.parkedHere`)
	started, stop := make(chan struct{}), make(chan struct{})
	go parkedHere(started, stop)
	<-started // a goroutine not yet run shows its go statement's wrapper, not parkedHere
	c := &cleanupTB{}
	AtCleanup(c, frames, 20*time.Millisecond, "parked goroutines left")
	c.cleanup()
	if len(c.errors) != 1 || !strings.HasPrefix(c.errors[0], "1 parked goroutines left:\n") || !strings.Contains(c.errors[0], "parkedHere") {
		t.Errorf("with a goroutine left: errors %q", c.errors)
	}

	c = &cleanupTB{}
	AtCleanup(c, regexp.MustCompile(`leaktest\.notRunning`), 20*time.Millisecond, "none")
	c.cleanup()
	if len(c.errors) != 0 {
		t.Errorf("with no goroutine matching: errors %q", c.errors)
	}

	c = &cleanupTB{}
	AtCleanup(c, frames, 5*time.Second, "parked goroutines left")
	go func() { time.Sleep(20 * time.Millisecond); close(stop) }()
	c.cleanup()
	if len(c.errors) != 0 {
		t.Errorf("with the goroutine ending in time: errors %q", c.errors)
	}
}
