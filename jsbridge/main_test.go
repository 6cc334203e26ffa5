//go:build js && wasm

package jsbridge

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/replica-sync/replica/internal/leaktest"
)

// TestMain installs the API once, as cmd/wasm does, and fails the run when
// goroutines outlive the tests: every replica the tests open is closed, and
// a closed replica leaves no worker or refresher behind.
func TestMain(m *testing.M) {
	before := len(leaktest.Goroutines())
	uninstall, err := Install()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	uninstall()
	if code == 0 {
		code = leaktest.Check(before, 3*time.Second)
	}
	os.Exit(code)
}
