package enginetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testHardening holds the fixes of a security review: values a replica
// accepts must be values it can sync, and values from peers must fit the
// schema.
func (s *suite) testHardening(t *testing.T) {
	t.Run("JSONDepth", s.testJSONDepth)
}

// A json value deeper than the wire's limit was accepted locally but could
// never be pushed (the client retried forever): it is refused at write
// time, naming table and column.
func (s *suite) testJSONDepth(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := nest(engine.MaxJSONDepth)
	must(a.Insert("trips", map[string]any{"id": "ok", "title": "t", "tags": json.RawMessage(ok)}))(t)
	if r := must(a.Get("trips", engine.Key{"ok"}))(t); string(r["tags"].JSON()) != ok {
		t.Fatalf("tags = %.40s…", r["tags"].JSON())
	}
	deep := nest(engine.MaxJSONDepth + 1)
	dv, err := engine.JSONValue([]byte(deep))
	if err != nil {
		t.Fatal(err)
	}
	var goDeep any = []any{}
	for i := 0; i < engine.MaxJSONDepth; i++ {
		goDeep = []any{goDeep}
	}
	before := DumpStore(t, a.store)
	for name, v := range map[string]any{"RawMessage": json.RawMessage(deep), "Value": dv, "Go value": goDeep} {
		_, err := a.Insert("trips", map[string]any{"id": "deep", "title": "t", "tags": v})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Table != "trips" || ve.Column != "tags" {
			t.Errorf("%s: insert of a json value %d deep: %v, want a ValidationError naming trips.tags", name, engine.MaxJSONDepth+1, err)
		}
		_, err = a.Update("trips", engine.Key{"ok"}, map[string]any{"tags": v})
		if !errors.As(err, &ve) || ve.Column != "tags" {
			t.Errorf("%s: update to a json value %d deep: %v, want a ValidationError", name, engine.MaxJSONDepth+1, err)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
}
