package leaktest

import (
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
