//go:build !js

package relay_test

import (
	"context"

	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/pgstore"
)

// The benchmarks' child relay (relay/bench_test.go) opens a PostgreSQL
// database it is given by URL with relay/pgstore, which the relay's
// internal tests cannot import.
func init() {
	relay.OpenURLStorage = func(url string) (relay.Storage, error) {
		return pgstore.Open(context.Background(), url)
	}
}
