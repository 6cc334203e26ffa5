//go:build !js

package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestWriteNote: while a WriteNote is set, each local write stores it in
// its own transaction, given the row it returned (also a write that
// changed nothing), and deletes the notes in its drop range; a write that
// fails stores nothing, nor does a change applied from a peer.
func TestWriteNote(t *testing.T) {
	e, err := Open(memkv.New(Buckets...), Options{Schema: citySchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	peer, err := Open(memkv.New(Buckets...), Options{Schema: citySchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	state := func(name string) string {
		t.Helper()
		v, err := e.State(name)
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return "<none>"
		}
		return string(v)
	}
	note := func(name, from, to string) {
		e.SetWriteNote(&WriteNote{Name: name, DropFrom: from, DropTo: to, Value: func(row Row) []byte {
			if row == nil {
				return []byte("no row")
			}
			return []byte("row " + row["name"].Text())
		}})
	}

	note("n/1", "", "")
	if _, err := e.Insert("cities", map[string]any{"id": 1, "name": "Lyon"}); err != nil {
		t.Fatal(err)
	}
	note("n/2", "", "")
	if _, err := e.Insert("cities", map[string]any{"id": 1, "name": "Again"}); err == nil {
		t.Fatal("a second insert of id 1 succeeded")
	}
	note("n/3", "", "")
	if _, err := e.Update("cities", Key{1}, map[string]any{"name": "Lyon 2"}); err != nil {
		t.Fatal(err)
	}
	note("n/4", "", "")
	if _, err := e.Delete("cities", Key{99}); err != nil { // changes nothing
		t.Fatal(err)
	}
	if got := []string{state("n/1"), state("n/2"), state("n/3"), state("n/4")}; got[0] != "row Lyon" || got[1] != "<none>" || got[2] != "row Lyon 2" || got[3] != "no row" {
		t.Fatalf("notes after insert, failed insert, update, no-op delete: %q", got)
	}

	// A peer's change applied here stores no note.
	note("n/5", "", "")
	if _, err := peer.Insert("cities", map[string]any{"id": 2, "name": "Paris"}); err != nil {
		t.Fatal(err)
	}
	cs, err := peer.ChangesSince(HLC{}, 0, ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ApplyChanges(cs); err != nil {
		t.Fatal(err)
	}
	if got := state("n/5"); got != "<none>" {
		t.Fatalf("applying a peer's change stored the note: %q", got)
	}

	// A staged transaction's commit stores it, and drops [n/1, n/4).
	note("n/6", "n/1", "n/4")
	st := e.Stage()
	if _, err := st.Insert("cities", map[string]any{"id": 3, "name": "Nice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	e.SetWriteNote(nil)
	if _, err := e.Insert("cities", map[string]any{"id": 4, "name": "Metz"}); err != nil {
		t.Fatal(err)
	}
	if got := []string{state("n/1"), state("n/3"), state("n/4"), state("n/6")}; got[0] != "<none>" || got[1] != "<none>" || got[2] != "no row" || got[3] != "no row" {
		t.Fatalf("notes after a commit dropping [n/1, n/4): %q", got)
	}
}
