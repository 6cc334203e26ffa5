//go:build !js

package client_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
)

// behindClock is a device clock a fixed offset behind the real one.
type behindClock time.Duration

func (b behindClock) Now() uint64 {
	return uint64(time.Now().Add(-time.Duration(b)).UnixMilli())
}

// notesRows lists a replica's visible notes as "id title n", sorted.
func notesRows(t testing.TB, db *engine.Engine) []string {
	t.Helper()
	rows, err := db.Query("notes", engine.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%v %v %v", r["id"], r["title"], r["n"]))
	}
	slices.Sort(out)
	return out
}

// TestE2ETombstoneHorizon: the simulator's divergence (seed 4), natively.
// Devices A, B and C, whose clocks run 40 days behind the relay's, sync
// through a real relay. A inserts row r; C goes offline; B deletes r; C,
// offline, updates r (after the deletion, long ago by the relay's clock).
// The relay's
// maintenance then passes its tombstone horizon (the deletion is older
// than its clock minus the 30-day retention) while A and B still hold the
// tombstone. C comes back with its late update. Every replica — A, B, C,
// and D, a fresh device bootstrapping from the relay's merged replica —
// must end with the same rows. Before the horizon marks the relay pruned
// the tombstone by its own clock and the devices did not: the late update
// revived a partial r on the relay (and on D), while A, B and C kept r
// deleted, for good. Now the relay prunes at a mark of its log, and every
// device prunes there too before it applies what follows.
func TestE2ETombstoneHorizon(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	behind := engine.Options{Clock: behindClock(40 * 24 * time.Hour)}
	var rs []*replica
	for _, name := range []string{"A", "B", "C"} {
		r := newReplica(t, name, notesSchema(), behind, client.Options{})
		// A fact of its own, so the device pulls the log instead of
		// bootstrapping from a snapshot (whose header HLC, the relay's
		// clock, is 40 days ahead of this device's).
		if _, err := r.db.Insert("notes", map[string]any{"id": "own-" + name, "title": name, "n": 0}); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	a, b, c := rs[0], rs[1], rs[2]
	if _, err := a.db.Insert("notes", map[string]any{"id": "r", "title": "first", "n": 1}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		r.connect(t, rl.url, "trips", "")
	}
	same := func(rs ...*replica) func() bool {
		return func() bool {
			want := notesRows(t, rs[0].db)
			for _, r := range rs[1:] {
				if !slices.Equal(want, notesRows(t, r.db)) || pending(t, r) != 0 {
					return false
				}
			}
			return pending(t, rs[0]) == 0
		}
	}
	waitFor(t, "A, B and C hold r", func() bool {
		_, ok := title(t, c.db, "r")
		return ok && same(rs...)()
	})

	c.c.Disconnect()
	waitState(t, c, client.Disconnected)
	if ok, err := b.db.Delete("notes", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("B deletes r: %v %v", ok, err)
	}
	waitFor(t, "A and B lost r", func() bool {
		_, okA := title(t, a.db, "r")
		_, okB := title(t, b.db, "r")
		return !okA && !okB && pending(t, b) == 0
	})
	// C, offline since before the deletion, still shows r and updates it:
	// stamped after the deletion, so under delete-wins a replica holding
	// the tombstone keeps the cell dead, and one without it revives r.
	time.Sleep(5 * time.Millisecond)
	if _, err := c.db.Update("notes", engine.Key{"r"}, map[string]any{"title": "late"}); err != nil {
		t.Fatalf("C updates r offline: %v", err)
	}

	// The relay's maintenance: the deletion is 40 days old by its clock.
	if err := rl.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}

	c.connect(t, rl.url, "trips", "")
	waitFor(t, "C synced with nothing pending", func() bool {
		return c.c.State().State == client.Synced && pending(t, c) == 0
	})
	// A write after C's, so every device has seen everything before it.
	if _, err := a.db.Insert("notes", map[string]any{"id": "z", "title": "last", "n": 9}); err != nil {
		t.Fatal(err)
	}
	// D runs on the real clock, the relay's: 40 days behind, it would
	// refuse the snapshot (whose header HLC is the relay's clock). It
	// opens schema-less and takes the schema from the snapshot, so it
	// writes nothing: with the schema declared, its create_table is a
	// ChangeSet of D's own, stamped 40 days ahead of A, B and C's clocks,
	// which they refuse (clock drift). Each was then left Syncing,
	// retrying the pull that carries it, and one whose pull carried z in
	// the same page never held z.
	d := newReplica(t, "D", nil, engine.Options{}, client.Options{})
	d.connect(t, rl.url, "trips", "")
	all := []*replica{a, b, c, d}
	waitReport(t, 20*time.Second, "A, B, C and D hold z, synced", func() string {
		var why []string
		for _, r := range all {
			_, ok := title(t, r.db, "z")
			if !ok || r.c.State().State != client.Synced {
				why = append(why, fmt.Sprintf("holds z: %v; %s", ok, syncReport(t, r, "trips")))
			}
		}
		return strings.Join(why, "\n")
	})
	// Let anything in flight land, then compare.
	deadline := time.Now().Add(5 * time.Second)
	for !same(all...)() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	want := notesRows(t, a.db)
	for _, r := range all {
		if got := notesRows(t, r.db); !slices.Equal(got, want) {
			t.Errorf("%s holds %q, A holds %q", r.name, got, want)
		}
	}
}
