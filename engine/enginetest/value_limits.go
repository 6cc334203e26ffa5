package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// testValueLimits: values a replica accepts must be values it can sync
// (json depth, row size, timestamp range).
func (s *suite) testValueLimits(t *testing.T) {
	t.Run("JSONDepth", s.testJSONDepth)
	t.Run("UnsyncableJSON", s.testUnsyncableJSON)
	t.Run("LocalRowLimit", s.testLocalRowLimit)
	t.Run("TimestampRange", s.testTimestampRange)
}

func filesSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{Name: "files", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "a", Type: engine.KindBlob}, {Name: "b", Type: engine.KindBlob}, {Name: "n", Type: engine.KindInteger}}}}}
}

func jsonNest(n int) engine.Value {
	v, err := engine.JSONValue([]byte(strings.Repeat("[", n) + strings.Repeat("]", n)))
	if err != nil {
		panic(err)
	}
	return v
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

// A row over the storage limit (8 MiB) is refused on every path, so two
// devices that each set a different 5 MiB column of one row offline could
// never exchange them: the relay and the peer both refused the merged
// row, cutting sync in both directions. Local writes are therefore held to
// a quarter of it (engine.MaxLocalRowSize); applies keep the storage limit,
// so the merge of concurrent writes lands.
func (s *suite) testLocalRowLimit(t *testing.T) {
	blob := func(n int, b byte) []byte {
		p := make([]byte, n)
		p[0] = b
		return p
	}
	const mib = 1 << 20
	a := s.newReplica(t, "a", filesSchema(), nil)
	b := s.newReplica(t, "b", filesSchema(), nil)
	before := DumpStore(t, a.store)
	_, err := a.Insert("files", map[string]any{"id": "big", "a": blob(engine.MaxLocalRowSize, 1)})
	var ve *engine.ValidationError
	if !errors.As(err, &ve) || ve.Table != "files" {
		t.Fatalf("local insert of a row over %d bytes: %v, want a ValidationError", engine.MaxLocalRowSize, err)
	}
	must(a.Insert("files", map[string]any{"id": "r"}))(t)
	pull(t, b, a)
	// Offline, a and b each set another column of the row.
	must(a.Update("files", engine.Key{"r"}, map[string]any{"a": blob(3*mib/2, 2)}))(t)
	if _, err := a.Update("files", engine.Key{"r"}, map[string]any{"b": blob(mib, 3)}); !errors.As(err, &ve) {
		t.Fatalf("local update growing a row past the local limit: %v, want a ValidationError", err)
	}
	if d := diffStore(before, DumpStore(t, a.store)); !strings.Contains(d, "rows") {
		t.Fatalf("the fitting insert did not land: %s", d)
	}
	must(b.Update("files", engine.Key{"r"}, map[string]any{"b": blob(3*mib/2, 4)}))(t)
	// Both directions merge into a 3 MiB row: over the local limit, under
	// the storage limit.
	pull(t, a, b)
	pull(t, b, a)
	for _, r := range []*replica{a, b} {
		row := must(r.Get("files", engine.Key{"r"}))(t)
		if len(row["a"].Blob()) != 3*mib/2 || len(row["b"].Blob()) != 3*mib/2 {
			t.Fatalf("%s: merged row has a %d, b %d bytes", r.name, len(row["a"].Blob()), len(row["b"].Blob()))
		}
	}
	sameVisible(t, a, b, "files")
	// A peer's single fact may grow a row past the local limit too.
	peer := engine.SiteID{7}
	h := engine.HLC{Wall: a.clock.Now(), Site: peer}
	cs := engine.ChangeSet{SiteID: peer, HLC: h, TransactionID: h.TransactionID(), Changes: []engine.Change{{Type: engine.ColumnChange, Table: "files",
		PK: []engine.Value{engine.Text("p")}, Column: "a", Value: engine.Blob(blob(5*mib, 5)), HLC: h}}}
	must(a.ApplyChanges([]engine.ChangeSet{cs}))(t)
	if len(must(a.Get("files", engine.Key{"p"}))(t)["a"].Blob()) != 5*mib {
		t.Fatal("a peer's 5 MiB value did not land")
	}
	// A local write that does not grow a merged row above the limit is
	// allowed: clearing a column, deleting the row.
	must(a.Update("files", engine.Key{"r"}, map[string]any{"b": nil}))(t)
	must(a.Delete("files", engine.Key{"p"}))(t)
	pull(t, b, a)
	sameVisible(t, a, b, "files")
}

// A timestamp column holds a JavaScript Date's range, ±8.64e15 ms: beyond
// it a browser reads back an Invalid Date. A local write outside it is a
// ValidationError whatever its spelling; a peer's value outside it is held
// as a wrong type (RemoteDoesNotFit, SchemaLessRefusesWrongTypes).
func (s *suite) testTimestampRange(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	const max = engine.MaxTimestampMillis
	for i, v := range []any{int64(max), int64(-max), float64(max), engine.TimestampMillis(-max)} {
		id := fmt.Sprintf("ok%d", i)
		must(a.Insert("trips", map[string]any{"id": id, "title": "t", "starts": v}))(t)
		if got := must(a.Get("trips", engine.Key{id}))(t)["starts"]; got.Int() != max && got.Int() != -max {
			t.Errorf("%T %v stored as %s", v, v, got)
		}
	}
	before := DumpStore(t, a.store)
	for _, v := range []any{int64(max + 1), int64(-max - 1), float64(max + 1), 8.64e15 + 2, engine.TimestampMillis(max + 1),
		time.UnixMilli(max + 1), json.Number("8640000000000001")} {
		_, err := a.Insert("trips", map[string]any{"id": "bad", "title": "t", "starts": v})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Column != "starts" {
			t.Errorf("%T %v: %v, want a ValidationError for starts", v, v, err)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
}
