//go:build !js

package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestE2EResurrectionFreshDevice (issue 10 § 4): three devices open with
// allowResurrection and sync through a real relay (bbolt, loopback
// WebSockets). A inserts r, B deletes it, A inserts it again with new
// cells; the live devices show r. A fresh device bootstrapping from the
// relay's snapshot must show it too, with the new cells: the relay's
// merged replica once dropped the cells above the tombstone (it had no
// resurrection setting), so the snapshot carried only the tombstone, for
// good. The policy is now the database's (a set_resurrection_policy
// migration the devices' option declared): a device that opens without the
// option follows it, and one declaring delete-wins gets a schema error
// naming both policies.
func TestE2EResurrectionFreshDevice(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	allow := engine.Options{AllowResurrection: true}
	var rs []*replica
	for _, name := range []string{"A", "B", "C"} {
		r := newReplica(t, name, notesSchema(), allow, client.Options{})
		r.connect(t, rl.url, "trips", "")
		rs = append(rs, r)
	}
	a, b := rs[0], rs[1]
	for _, r := range rs {
		waitState(t, r, client.Synced)
	}
	shows := func(r *replica, want string) func() bool {
		return func() bool {
			got, ok := title(t, r.db, "r")
			return ok == (want != "") && got == want
		}
	}
	if _, err := a.db.Insert("notes", map[string]any{"id": "r", "title": "first", "n": 1}); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		waitFor(t, r.name+" has r", shows(r, "first"))
	}
	if ok, err := b.db.Delete("notes", engine.Key{"r"}); err != nil || !ok {
		t.Fatalf("B deletes r: %v %v", ok, err)
	}
	for _, r := range rs {
		waitFor(t, r.name+" lost r", shows(r, ""))
	}
	if _, err := a.db.Insert("notes", map[string]any{"id": "r", "title": "second", "n": 2}); err != nil {
		t.Fatalf("A re-inserts r: %v", err)
	}
	for _, r := range rs {
		waitFor(t, r.name+" has r again", shows(r, "second"))
	}
	for _, r := range rs {
		waitFor(t, r.name+" pushed everything", func() bool { return pending(t, r) == 0 })
	}

	// Fresh devices bootstrap from the relay's snapshot: one with the
	// option, as the issue had it, and one without (it follows the
	// database's policy).
	for _, fo := range []struct {
		name string
		opts engine.Options
	}{{"fresh", allow}, {"fresh-undeclared", engine.Options{}}} {
		f := newReplica(t, fo.name, notesSchema(), fo.opts, client.Options{})
		f.connect(t, rl.url, "trips", "")
		waitState(t, f, client.Synced)
		snap := false
		for _, ev := range f.ev.list() {
			if ev.Type == client.SnapshotProgressed && ev.Progress.Done {
				snap = true
			}
		}
		if !snap {
			t.Fatalf("%s did not bootstrap from a snapshot", f.name)
		}
		row, err := f.db.Get("notes", engine.Key{"r"})
		if err != nil {
			t.Fatalf("%s bootstrapped from the relay's snapshot: r: %v (the live devices show it)", f.name, err)
		}
		if row["title"].Text() != "second" || !row["n"].Equal(model.Int(2)) {
			t.Fatalf("%s: r is %v, want the re-inserted cells (second, 2)", f.name, row)
		}
	}

	// A device declaring delete-wins for this database is refused at
	// open, after it learned the database's policy.
	d := newReplica(t, "delete-wins", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, rl.url, "trips", "")
	waitState(t, d, client.Synced)
	d.c.Close()
	d.db.Close()
	sc := notesSchema()
	sc.Tables[0].Resurrection = model.DeleteWins
	_, err := engine.Open(d.store, engine.Options{Schema: sc})
	if !errors.Is(err, model.ErrSchema) {
		t.Fatalf("open declaring delete-wins over an allow-resurrection database: %v, want ErrSchema", err)
	}
	for _, want := range []string{"delete-wins", "allow-resurrection", `"notes"`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %s", err, want)
		}
	}
	t.Logf("refused: %v", err)
}
