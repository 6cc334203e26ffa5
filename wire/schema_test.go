package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

func TestParseSchemaObjectForm(t *testing.T) {
	// Column order follows the object's key order, not the alphabet.
	src := `{"tables": {
	  "trips": {
	    "columns": {
	      "id": "text",
	      "title": {"type": "text", "notNull": true},
	      "budget": {"type": "real", "default": 0},
	      "note": {"type": "text", "default": null},
	      "attachment": {"type": "blob", "default": {"__bin": "AA=="}, "coerce": false},
	      "tags": {"type": "json", "default": ["a"]},
	      "alpha": "integer"
	    },
	    "primaryKey": "id",
	    "indexes": {"by_title": ["title"], "by_budget": {"columns": ["budget", "title"]}},
	    "coerce": true
	  },
	  "places": {"columns": {"name": "text", "lat": "real"}, "primaryKey": ["name", "lat"]},
	  "notes": {"columns": {"body": {"type": "text", "name": "body"}}}
	}}`
	got, err := ParseSchema([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Schema{Tables: []engine.TableDef{
		{
			Name: "trips",
			Columns: []engine.ColumnDef{
				{Name: "id", Type: engine.KindText},
				{Name: "title", Type: engine.KindText, NotNull: true},
				{Name: "budget", Type: engine.KindReal, Default: engine.Int(0), HasDefault: true}, // Validate coerces it
				{Name: "note", Type: engine.KindText, HasDefault: true},
				{Name: "attachment", Type: engine.KindBlob, Default: engine.Blob([]byte{0}), HasDefault: true},
				{Name: "tags", Type: engine.KindJSON, Default: mustJSON(t, `["a"]`), HasDefault: true},
				{Name: "alpha", Type: engine.KindInteger},
			},
			PrimaryKey: []string{"id"},
			Indexes:    []engine.IndexDef{{Name: "by_title", Columns: []string{"title"}}, {Name: "by_budget", Columns: []string{"budget", "title"}}},
			Coerce:     true,
		},
		{Name: "places", Columns: []engine.ColumnDef{{Name: "name", Type: engine.KindText}, {Name: "lat", Type: engine.KindReal}}, PrimaryKey: []string{"name", "lat"}},
		{Name: "notes", Columns: []engine.ColumnDef{{Name: "body", Type: engine.KindText}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseSchema:\n got %+v\nwant %+v", got, want)
	}
}

func TestSchemaCanonicalRoundTrip(t *testing.T) {
	s := engine.Schema{Tables: []engine.TableDef{tripsTable(), {
		Name:       "places",
		Columns:    []engine.ColumnDef{{Name: "name", Type: engine.KindText}, {Name: "at", Type: engine.KindTimestamp, Coerce: true}, {Name: "ok", Type: engine.KindBoolean, Default: engine.Bool(true), HasDefault: true}},
		PrimaryKey: []string{"name"},
		Coerce:     true,
	}}}
	b, err := MarshalSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tables":[{"name":"trips","columns":[{"name":"id","type":"text","notNull":true},{"name":"title","type":"text","notNull":true},` +
		`{"name":"budget","type":"real","default":0.0},{"name":"starts","type":"timestamp"},{"name":"note","type":"text","default":null},` +
		`{"name":"tags","type":"json","coerce":true}],"primaryKey":["id"],"indexes":[{"name":"by_title","columns":["title"]}]},` +
		`{"name":"places","columns":[{"name":"name","type":"text"},{"name":"at","type":"timestamp","coerce":true},{"name":"ok","type":"boolean","default":true}],"primaryKey":["name"],"coerce":true}]}`
	if string(b) != want {
		t.Fatalf("MarshalSchema:\n got %s\nwant %s", b, want)
	}
	back, err := ParseSchema(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("ParseSchema(MarshalSchema(s)):\n got %+v\nwant %+v", back, s)
	}
	if b, err := MarshalSchema(engine.Schema{}); err != nil || string(b) != `{"tables":[]}` {
		t.Fatalf("MarshalSchema(empty) = %s, %v", b, err)
	}
	if _, err := MarshalSchema(engine.Schema{Tables: []engine.TableDef{{Name: "t", Columns: []engine.ColumnDef{{Name: "c"}}}}}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("MarshalSchema of a column without type: %v", err)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct{ src, mention string }{
		{``, "want an object"},
		{`{}`, `missing required field "tables"`},
		{`{"tables":null}`, "tables: want an array, got null"},
		{`{"tables":{},"version":1}`, `unknown field "version"`},
		{`{"tables":{},"tables":{}}`, "duplicate"},
		{`{"tables":{"t":{"columns":{"a":"varchar"}}}}`, `tables["t"].columns["a"]`},
		{`{"tables":{"t":{"columns":{"a":"Text"}}}}`, `unknown column type "Text"`},
		{`{"tables":{"t":{"columns":{"a":"text","a":"real"}}}}`, `duplicate column "a"`},
		{`{"tables":{"t":{"columns":{"a":{"notNull":true}}}}}`, `tables["t"].columns["a"]: missing required field "type"`},
		{`{"tables":{"t":{"columns":{"a":{"type":"text","nullable":true}}}}}`, `unknown field "nullable"`},
		{`{"tables":{"t":{"columns":{"a":{"type":"text","name":"b"}}}}}`, `name "b" differs from its key "a"`},
		{`{"tables":{"t":{"columns":{"a":{"type":"text","notNull":"yes"}}}}}`, "notNull: want a boolean"},
		{`{"tables":{"t":{"columns":{"a":{"type":"real","default":NaN}}}}}`, "default"},
		{`{"tables":{"t":{"columns":{"a":1}}}}`, "want an object"},
		{`{"tables":{"t":{"columns":{"":"text"}}}}`, "empty column name"},
		{`{"tables":{"t":{"columns":{"a":"text"},"primaryKey":5}}}`, "primaryKey: want an array"},
		{`{"tables":{"t":{"columns":{"a":"text"},"primaryKey":[""]}}}`, "primaryKey[0]: must not be empty"},
		{`{"tables":{"t":{"columns":{"a":"text"},"indexes":{"i":"a"}}}}`, `indexes["i"]: want an array`},
		{`{"tables":{"t":{"columns":{"a":"text"},"indexes":{"i":["a"],"i":["a"]}}}}`, `duplicate index "i"`},
		{`{"tables":{"t":{"columns":{"a":"text"},"coerce":null}}}`, "coerce: want a boolean, got null"},
		{`{"tables":{"t":{"primaryKey":["a"]}}}`, `missing required field "columns"`},
		{`{"tables":{"t":{"columns":{}},"t":{"columns":{}}}}`, `duplicate table "t"`},
		{`{"tables":{"t":{"name":"u","columns":{}}}}`, `differs from its key`},
		{`{"tables":[{"columns":[]}]}`, `tables[0]: missing required field "name"`},
		{`{"tables":[{"name":"t","columns":[{"type":"text"}]}]}`, `tables[0].columns[0]: missing required field "name"`},
		{"{\"tables\":{\"\xff\":{}}}", "invalid UTF-8"},
		{`{"tables":{}} x`, "unexpected data"},
	}
	for _, tt := range tests {
		s, err := ParseSchema([]byte(tt.src))
		if err == nil {
			t.Errorf("ParseSchema(%s) = %+v, want an error", tt.src, s)
			continue
		}
		if !errors.Is(err, engine.ErrSchema) || errors.Is(err, ErrMalformed) {
			t.Errorf("ParseSchema(%s): %v should match engine.ErrSchema only", tt.src, err)
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseSchema(%s): %q does not mention %q", tt.src, err, tt.mention)
		}
	}
}
