// Package leaktest fails a test binary whose goroutines outlive its tests.
// A package's TestMain calls Main (or Goroutines before its setup and Check
// after its teardown):
//
//	func TestMain(m *testing.M) { os.Exit(leaktest.Main(m, 2*time.Second)) }
//
// It compares counts of goroutines, so a goroutine that ends late (a
// connection closing) is waited for up to the grace period, and one started
// before the tests (by package initialization or the TestMain's setup) is
// not counted. It works natively and under GOOS=js (where the runtime's
// handlers of JavaScript events are not counted).
//
// A test checks its own goroutines with AtCleanup: those whose stacks match
// a package's frames must be gone once the test's cleanups have run.
package leaktest

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests of m and, if they pass, Checks that the goroutines
// they started end within grace. It returns the exit code for os.Exit:
// m.Run's, or 1 when goroutines leaked (their stacks are printed on
// standard error).
func Main(m *testing.M, grace time.Duration) int {
	before := len(Goroutines())
	code := m.Run()
	if code == 0 {
		code = Check(before, grace)
	}
	return code
}

// Check waits up to grace for at most before goroutines (a count of
// Goroutines) to remain. It returns 0 when they do, else 1 after printing
// the stacks of the remaining ones on standard error.
func Check(before int, grace time.Duration) int {
	var left []string
	for deadline := time.Now().Add(grace); ; time.Sleep(10 * time.Millisecond) {
		left = Goroutines()
		if len(left) <= before || time.Now().After(deadline) {
			break
		}
	}
	if len(left) <= before {
		return 0
	}
	fmt.Fprintf(os.Stderr, "leaktest: %d goroutines at the start, %d after the tests:\n%s\n", before, len(left), strings.Join(left, "\n\n"))
	return 1
}

// Goroutines returns the stacks of every goroutine but the caller and the
// runtime's handlers of JS events (one exists while Go runs a JavaScript
// callback).
func Goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[running]") || strings.Contains(g, "runtime.handleEvent()") {
			continue
		}
		out = append(out, g)
	}
	return out
}

// AtCleanup registers a cleanup of t that fails it (Errorf) when, once the
// cleanups registered after it have run (Close among them: call AtCleanup
// before creating what they close), a goroutine whose stack matches frames
// is still there after grace. The message is "N what:" and their stacks.
func AtCleanup(t testing.TB, frames *regexp.Regexp, grace time.Duration, what string) {
	t.Cleanup(func() {
		deadline := time.Now().Add(grace)
		for {
			var leaked []string
			for _, g := range Goroutines() {
				if frames.MatchString(g) {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d %s:\n%s", len(leaked), what, strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
