// Package kvtest is the conformance suite every kv.Store implementation runs
// (memkv, boltkv natively; idbkv in headless Chromium).
package kvtest

import (
	"testing"

	"github.com/replica-sync/replica/kv"
)

// Opener opens a fresh, empty store holding exactly the given buckets. The
// suite closes every store it opens.
type Opener func(t testing.TB, buckets []string) kv.Store

// Run runs the whole conformance suite against stores from open.
func Run(t *testing.T, open Opener) {
	t.Skip("kvtest: suite not written yet")
}
