//go:build !js

package client_test

import (
	"testing"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestE2EPushed: client.Pushed with engine.LastLocalTransaction says
// whether everything a replica wrote up to a moment reached a real relay:
// false offline, true once the pushes are acknowledged (also for a second
// engine reading the same store, as another browser tab does), false
// again for a later write until it is pushed, while the earlier one stays
// pushed; and a transaction whose facts a later write replaced does not
// hold it back.
func TestE2EPushed(t *testing.T) {
	checkNoLeaks(t)
	r := startRelay(t, t.TempDir(), nil)
	a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
	pushed := func(upTo model.HLC) bool {
		t.Helper()
		ok, err := client.Pushed(a.db, r.url, "notes", upTo)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	last := func() model.HLC {
		t.Helper()
		h, ok, err := a.db.LastLocalTransaction()
		if err != nil || !ok {
			t.Fatalf("LastLocalTransaction: %v, %v", ok, err)
		}
		return h
	}
	schemaTx := last() // the schema's create_table, the replica's first transaction
	for i, id := range []string{"n1", "n2", "n3"} {
		if _, err := a.db.Insert("notes", map[string]any{"id": id, "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	first := last()
	if first == schemaTx || first.OpSeq != 0 {
		t.Fatalf("LastLocalTransaction %v after three inserts: not a new base", first)
	}
	if pushed(schemaTx) || pushed(first) {
		t.Fatal("pushed before any connection")
	}
	a.connect(t, r.url, "notes", "")
	waitFor(t, "the first writes acknowledged", func() bool { return pushed(first) })
	if !pushed(schemaTx) {
		t.Fatal("the schema's transaction is not pushed while a later one is")
	}

	// Another engine over the same store (another tab) sees the same.
	other, err := engine.Open(a.store, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := client.Pushed(other, r.url, "notes", first); err != nil || !ok {
		t.Fatalf("through another engine on the store: %v, %v", ok, err)
	}
	_ = other.Close()

	// Offline again: a new write is not pushed, the earlier ones stay so.
	a.c.Disconnect()
	if _, err := a.db.Update("notes", engine.Key{"n1"}, map[string]any{"n": 10}); err != nil {
		t.Fatal(err)
	}
	second := last()
	// This one replaces every fact of the one before it (n2's n) and
	// writes one of its own after: the replaced one holds nothing back.
	if _, err := a.db.Update("notes", engine.Key{"n2"}, map[string]any{"n": 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.Update("notes", engine.Key{"n2"}, map[string]any{"n": 21}); err != nil {
		t.Fatal(err)
	}
	third := last()
	if pushed(second) || pushed(third) || !pushed(first) {
		t.Fatalf("offline after three updates: pushed(second) %v, pushed(third) %v, pushed(first) %v; want false, false, true", pushed(second), pushed(third), pushed(first))
	}
	a.connect(t, r.url, "notes", "")
	waitFor(t, "the updates acknowledged", func() bool { return pushed(third) })
	if !pushed(second) {
		t.Fatal("second not pushed while third is")
	}
	if ok, err := client.Pushed(a.db, r.url, "elsewhere", first); err != nil || ok {
		t.Fatalf("pushed to a database never synced with: %v, %v", ok, err)
	}
}
