//go:build js && wasm

package idbkv

import (
	"os"
	"testing"
	"time"

	"github.com/replica-sync/replica/internal/leaktest"
)

// TestMain fails the run when goroutines outlive the tests: idbkv starts
// none, and nothing it calls may leave one behind (go-indexeddb's open
// listeners end with the open).
func TestMain(m *testing.M) { os.Exit(leaktest.Main(m, 2*time.Second)) }
