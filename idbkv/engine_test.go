//go:build js && wasm

package idbkv

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv"
)

// TestEngine runs the engine's behavioural suite — merge rules, bad
// input, snapshots, queries, and the convergence property test (fewer cases
// than natively; the seed is printed) — over real IndexedDB.
func TestEngine(t *testing.T) {
	enginetest.Run(t, func(t testing.TB) kv.Store {
		s, _ := openT(t, openOptions{}, engine.Buckets...)
		t.Cleanup(func() { s.Close() })
		return s
	}, enginetest.Options{Short: true, SkipConcurrency: true})
}
