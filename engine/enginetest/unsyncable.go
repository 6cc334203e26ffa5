package enginetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// A json value with a string the wire refuses (invalid UTF-8, or an
// unpaired surrogate escape as JavaScript's JSON.stringify writes for a
// lone surrogate) was acknowledged locally and never synced (the client
// skipped its ChangeSet): it is refused at write time with a
// *ValidationError naming table and column, and engine.JSONValue refuses
// it too.
func (s *suite) testUnsyncableJSON(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "ok", "title": "t", "tags": json.RawMessage(`["\ud83d\ude00"]`)}))(t)
	before := DumpStore(t, a.store)
	for _, text := range []string{"{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `["\udc00"]`, "\"\xed\xa0\x80\""} {
		if v, err := engine.JSONValue([]byte(text)); err == nil {
			t.Errorf("JSONValue(%q) = %v, want an error", text, v)
		}
		_, err := a.Insert("trips", map[string]any{"id": "bad", "title": "t", "tags": json.RawMessage(text)})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, engine.ErrValidation) || ve.Table != "trips" || ve.Column != "tags" {
			t.Errorf("insert of json %q: %v, want a ValidationError naming trips.tags", text, err)
		}
		if _, err = a.Update("trips", engine.Key{"ok"}, map[string]any{"tags": json.RawMessage(text)}); !errors.As(err, &ve) {
			t.Errorf("update to json %q: %v, want a ValidationError", text, err)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
}
