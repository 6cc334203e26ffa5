//go:build js && wasm

package idbkv

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when goroutines outlive the tests: idbkv starts
// none, and nothing it calls may leave one behind (go-indexeddb's open
// listeners end with the open).
func TestMain(m *testing.M) {
	before := len(otherGoroutines())
	code := m.Run()
	if code == 0 {
		var left []string
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			left = otherGoroutines()
			if len(left) <= before || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > before {
			fmt.Fprintf(os.Stderr, "idbkv: goroutines leaked:\n%s\n", strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// otherGoroutines returns the stacks of all goroutines but the caller and
// the runtime's handlers of JS events (one exists while Go runs a callback).
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
