//go:build !js

package client_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/relay"
)

// stepClock is a wall clock (ms) shared by the relay and the replicas'
// engines: real time plus an offset the test moves forward.
type stepClock struct{ offset atomic.Int64 }

func (c *stepClock) Now() uint64 {
	return uint64(time.Now().UnixMilli() + c.offset.Load())
}

func noteIDs(t testing.TB, db *engine.Engine) []string {
	t.Helper()
	rows, err := db.Query("notes", engine.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r["id"].Text())
	}
	slices.Sort(ids)
	return ids
}

// TestOfflinePastHorizonDropsRowsDeletedMeanwhile is the simulator's
// finding (seed 4 without relay.restore_old,relay.wipe) end to end: B is
// offline longer than the relay's retention while A deletes a row; the
// relay prunes the tombstone and the arrival log, and answers B's cursor
// with SNAPSHOT_REQUIRED. The snapshot B bootstraps from must replace its
// rows, not merge into them: B loses the deleted row, keeps its unsent
// insert and pushes it, and A and B end with the same rows. Before, B
// kept the deleted row for good.
//
// With request, B calls RequestSnapshot while offline (the simulator's
// seed 48): the snapshot it asked for merged, so B kept n2 as well. It now
// pulls from its own cursor first and takes the SNAPSHOT_REQUIRED path.
func TestOfflinePastHorizonDropsRowsDeletedMeanwhile(t *testing.T) {
	for _, request := range []bool{false, true} {
		t.Run(map[bool]string{false: "reconnect", true: "RequestSnapshot"}[request], func(t *testing.T) {
			testOfflinePastHorizon(t, request)
		})
	}
}

func testOfflinePastHorizon(t *testing.T, request bool) {
	checkNoLeaks(t)
	clock := &stepClock{}
	const retention = time.Hour
	srv, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, Logger: quietLogger(),
		Clock: clock, Retention: retention, MaintenanceInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"

	eo := engine.Options{Clock: clock}
	a := newReplica(t, "A", notesSchema(), eo, client.Options{})
	b := newReplica(t, "B", notesSchema(), eo, client.Options{})
	for _, id := range []string{"n1", "n2", "n3"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "title": id}); err != nil {
			t.Fatal(err)
		}
	}
	a.connect(t, url, "db", "")
	b.connect(t, url, "db", "")
	waitFor(t, "B has A's rows", func() bool { return slices.Equal(noteIDs(t, b.db), []string{"n1", "n2", "n3"}) })
	waitState(t, b, client.Synced)

	b.c.Disconnect()
	waitState(t, b, client.Disconnected)
	if _, err := a.db.Delete("notes", engine.Key{"n2"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A pushed its deletion", func() bool { return pending(t, a) == 0 })
	if _, err := b.db.Insert("notes", map[string]any{"id": "n4", "title": "offline"}); err != nil {
		t.Fatal(err)
	}

	// Past the horizon: the relay forgets the deletion (its tombstone
	// and the arrival-log entries after B's cursor).
	clock.offset.Add(int64(2 * retention / time.Millisecond))
	if err := srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}

	if request {
		b.c.RequestSnapshot()
	}
	b.connect(t, url, "db", "")
	waitFor(t, "B bootstrapped and pushed n4", func() bool {
		return b.c.State().State == client.Synced && pending(t, b) == 0 && slices.Contains(noteIDs(t, a.db), "n4")
	})
	want := []string{"n1", "n3", "n4"}
	if got := noteIDs(t, b.db); !slices.Equal(got, want) {
		t.Errorf("B holds %v, want %v (n2 was deleted while it was offline; n4 is its own)", got, want)
	}
	if got := noteIDs(t, a.db); !slices.Equal(got, want) {
		t.Errorf("A holds %v, want %v", got, want)
	}
	sawRequired := false
	for _, ev := range b.ev.list() {
		if ev.Type == client.ErrorReported && ev.Err != nil && strings.Contains(ev.Err.Error(), "SNAPSHOT_REQUIRED") {
			sawRequired = true
		}
	}
	if !sawRequired {
		t.Fatal("the relay did not answer B's cursor with SNAPSHOT_REQUIRED: the test does not reach the case")
	}
}
