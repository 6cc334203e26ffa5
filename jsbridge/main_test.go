//go:build js && wasm

package jsbridge

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain installs the API once, as cmd/wasm does, and fails the run when
// goroutines outlive the tests: every replica the tests open is closed, and
// a closed replica leaves no worker or refresher behind.
func TestMain(m *testing.M) {
	before := len(otherGoroutines())
	uninstall, err := Install()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	uninstall()
	if code == 0 {
		var left []string
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			left = otherGoroutines()
			if len(left) <= before || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > before {
			fmt.Fprintf(os.Stderr, "jsbridge: goroutines leaked:\n%s\n", strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// otherGoroutines returns the stacks of all goroutines but the caller and
// the runtime's handlers of JS events.
func otherGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[running]") || strings.Contains(g, "runtime.handleEvent()") {
			continue
		}
		out = append(out, g)
	}
	return out
}
