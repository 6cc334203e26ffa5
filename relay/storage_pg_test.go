//go:build !js

package relay_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/pgstore"
)

// With REPLICA_RELAY_STORE=postgres the relay's tests run on PostgreSQL
// (relay/pgstore on a private cluster: internal/pgtest): every relay they
// start without a storage of its own gets a pgstore.Store on a database
// of its data directory's, which a relay restarted on that directory finds
// again. make test runs them so, after the run on bbolt files: the
// relay's storage contract, on both backends.
func init() {
	if os.Getenv("REPLICA_RELAY_STORE") != "postgres" {
		return
	}
	var mu sync.Mutex
	dbs := map[string]string{} // data directory → database URL
	relay.TestStorage = func(t testing.TB, dir string) relay.Storage {
		t.Helper()
		mu.Lock()
		url, ok := dbs[dir]
		if !ok {
			url = pgtest.NewDatabase(t)
			dbs[dir] = url
		}
		mu.Unlock()
		st, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
}
