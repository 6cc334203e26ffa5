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
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newRelay makes the in-process relay the pages sync with: bbolt files
// under dir, with fsync (as in production), every database open to every
// client, and web (the library files: libFiles) served at / by the relay's
// own static handler, as `make run` and cmd/relay serve web/.
func newRelay(dir, web string) (*relay.Server, error) {
	return relay.New(relay.Config{DataDir: dir, WebDir: web, Auth: relay.AllowAll, Logger: quiet})
}

// seedRelay pushes rows into database db of the relay at url from a native
// replica (in transactions of 1,000 rows), and returns when the relay has
// acknowledged all of them: the relay's merged replica then holds every
// row, ready to be served as a snapshot. With a non-nil sealer the
// database is sealed: the replica pushes envelopes, and a second native
// device then pulls them and uploads a sealed checkpoint of every row
// (uploadCheckpoint), which the relay serves to a new device as plain
// databases' snapshots.
func seedRelay(url, db string, rows []row, sealer seal.Sealer) (time.Duration, error) {
	start := time.Now()
	e, err := benchEngine()
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
	c := client.New(e, client.Options{Logger: quiet, PushLimit: 50000, Sealer: sealer, CheckpointChanges: -1})
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
				break
			}
		}
		if st.State == client.Error {
			return 0, fmt.Errorf("seeding the relay: %v", st.Err)
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("seeding the relay: still %v after 10 minutes", st.State)
		}
	}
	if sealer != nil {
		if err := uploadCheckpoint(url, db, sealer); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// benchEngine opens an engine over memkv with the bench's schema.
func benchEngine() (*engine.Engine, error) {
	schema, err := wire.ParseSchema([]byte(schemaJSON))
	if err != nil {
		return nil, err
	}
	return engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema, Logger: quiet})
}

// uploadCheckpoint syncs sealed database db with a new native device and
// returns once it uploaded a sealed checkpoint at the relay's head. (The
// seeding device does not: a device's cursor moves only when it pulls,
// and the relay does not send it its own pushes back.) CheckpointChanges
// 1 uploads as soon as the device caught up with the log.
func uploadCheckpoint(url, db string, sealer seal.Sealer) error {
	e, err := benchEngine()
	if err != nil {
		return err
	}
	defer e.Close()
	c := client.New(e, client.Options{Logger: quiet, Sealer: sealer, CheckpointChanges: 1})
	defer c.Close()
	done := make(chan uint64, 1)
	c.Subscribe(func(ev client.Event) {
		if ev.Type == client.CheckpointUploaded {
			select {
			case done <- ev.Cursor:
			default:
			}
		}
	})
	if err := c.Connect(url, db, ""); err != nil {
		return err
	}
	select {
	case <-done:
		c.Disconnect()
		return nil
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("no sealed checkpoint uploaded after 10 minutes (%v)", c.State())
	}
}
