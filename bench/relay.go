//go:build !js

package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/wire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newRelay makes the in-process relay the pages sync with: bbolt files
// under dir, with fsync (as in production), every database open to every
// client.
func newRelay(dir string) (*relay.Server, error) {
	return relay.New(relay.Config{DataDir: dir, Auth: relay.AllowAll, Logger: quiet})
}

// seedRelay pushes rows into database db of the relay at url from a native
// replica (in transactions of 1,000 rows), and returns when the relay has
// acknowledged all of them: the relay's merged replica then holds every
// row, ready to be served as a snapshot.
func seedRelay(url, db string, rows []row) (time.Duration, error) {
	start := time.Now()
	schema, err := wire.ParseSchema([]byte(schemaJSON))
	if err != nil {
		return 0, err
	}
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema, Logger: quiet})
	if err != nil {
		return 0, err
	}
	defer e.Close()
	for i := 0; i < len(rows); i += 1000 {
		_, err := e.Transact(func(tx *engine.Tx) error {
			for _, r := range rows[i:min(i+1000, len(rows))] {
				if _, err := tx.Insert("cities", r.values()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("seed: %w", err)
		}
	}
	c := client.New(e, client.Options{Logger: quiet, PushLimit: 50000})
	defer c.Close()
	if err := c.Connect(url, db, ""); err != nil {
		return 0, err
	}
	for end := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st := c.State()
		if st.State == client.Synced {
			n, err := c.Pending()
			if err != nil {
				return 0, err
			}
			if n == 0 {
				return time.Since(start), nil
			}
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("seeding the relay: still %v after 10 minutes", st.State)
		}
	}
}
