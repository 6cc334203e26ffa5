package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
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
	want := model.Schema{Tables: []model.TableDef{
		{
			Name: "trips",
			Columns: []model.ColumnDef{
				{Name: "id", Type: model.KindText},
				{Name: "title", Type: model.KindText, NotNull: true},
				{Name: "budget", Type: model.KindReal, Default: model.Int(0), HasDefault: true}, // Validate coerces it
				{Name: "note", Type: model.KindText, HasDefault: true},
				{Name: "attachment", Type: model.KindBlob, Default: model.Blob([]byte{0}), HasDefault: true},
				{Name: "tags", Type: model.KindJSON, Default: mustJSON(t, `["a"]`), HasDefault: true},
				{Name: "alpha", Type: model.KindInteger},
			},
			PrimaryKey: []string{"id"},
			Indexes:    []model.IndexDef{{Name: "by_title", Columns: []string{"title"}}, {Name: "by_budget", Columns: []string{"budget", "title"}}},
			Coerce:     true,
		},
		{Name: "places", Columns: []model.ColumnDef{{Name: "name", Type: model.KindText}, {Name: "lat", Type: model.KindReal}}, PrimaryKey: []string{"name", "lat"}},
		{Name: "notes", Columns: []model.ColumnDef{{Name: "body", Type: model.KindText}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseSchema:\n got %+v\nwant %+v", got, want)
	}
}

func TestSchemaCanonicalRoundTrip(t *testing.T) {
	s := model.Schema{Tables: []model.TableDef{tripsTable(), {
		Name:       "places",
		Columns:    []model.ColumnDef{{Name: "name", Type: model.KindText}, {Name: "at", Type: model.KindTimestamp, Coerce: true}, {Name: "ok", Type: model.KindBoolean, Default: model.Bool(true), HasDefault: true}},
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
	if b, err := MarshalSchema(model.Schema{}); err != nil || string(b) != `{"tables":[]}` {
		t.Fatalf("MarshalSchema(empty) = %s, %v", b, err)
	}
	if _, err := MarshalSchema(model.Schema{Tables: []model.TableDef{{Name: "t", Columns: []model.ColumnDef{{Name: "c"}}}}}); !errors.Is(err, ErrInvalidMessage) {
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
		if !errors.Is(err, model.ErrSchema) || errors.Is(err, ErrMalformed) {
			t.Errorf("ParseSchema(%s): %v should match model.ErrSchema only", tt.src, err)
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseSchema(%s): %q does not mention %q", tt.src, err, tt.mention)
		}
	}
}

// The resurrection policy: declared per table in a schema, carried as a
// set_resurrection_policy migration (wire/doc.go § Schema migrations).
func TestResurrectionPolicyWire(t *testing.T) {
	s, err := ParseSchema([]byte(`{"tables":{"a":{"columns":{"id":"text"},"allowResurrection":true},"b":{"columns":{"id":"text"},"allowResurrection":false},"c":{"columns":{"id":"text"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []model.ResurrectionPolicy{model.ResurrectionAllowed, model.DeleteWins, model.ResurrectionUndeclared} {
		if got := s.Tables[i].Resurrection; got != want {
			t.Errorf("table %s: policy %s, want %s", s.Tables[i].Name, got, want)
		}
	}
	b, err := MarshalSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseSchema(b)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("MarshalSchema %s read back as %+v, %v", b, back, err)
	}
	if _, err := ParseSchema([]byte(`{"tables":{"a":{"columns":{"id":"text"},"allowResurrection":"yes"}}}`)); !errors.Is(err, model.ErrSchema) || !strings.Contains(err.Error(), "allowResurrection") {
		t.Errorf("allowResurrection: \"yes\": %v", err)
	}

	site := model.SiteID{1}
	h := model.HLC{Wall: 1795910400000, Site: site}
	cs := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h,
		Migrations: []model.SchemaMigration{{Type: model.SetResurrectionPolicy, TableName: "trips", Resurrection: model.ResurrectionAllowed, HLC: h}}}
	enc, err := MarshalChangeSet(&cs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(enc), `{"type":"set_resurrection_policy","table":"trips","ddl":{"policy":"allow-resurrection"},"hlc":`) {
		t.Errorf("encoded as %s", enc)
	}
	dec, err := UnmarshalChangeSet(enc)
	if err != nil || !reflect.DeepEqual(dec.Migrations, cs.Migrations) {
		t.Fatalf("decoded %s as %+v, %v", enc, dec.Migrations, err)
	}
	for _, bad := range []string{
		`{"policy":"revive"}`,
		`{}`,
		`{"policy":"delete-wins","extra":1}`,
		`{"policy":true}`,
	} {
		frame := strings.Replace(string(enc), `{"policy":"allow-resurrection"}`, bad, 1)
		if _, err := UnmarshalChangeSet([]byte(frame)); err == nil {
			t.Errorf("ddl %s decoded", bad)
		}
	}
	// A create_table's ddl carries no policy.
	ct := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h,
		Migrations: []model.SchemaMigration{{Type: model.CreateTable, TableName: "t", HLC: h,
			Table: &model.TableDef{Name: "t", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}}, PrimaryKey: []string{"id"}, Resurrection: model.ResurrectionAllowed}}}}
	if _, err := MarshalChangeSet(&ct); err == nil {
		t.Error("create_table with a policy encoded")
	}
	ct.Migrations[0].Table.Resurrection = model.ResurrectionUndeclared
	enc, err = MarshalChangeSet(&ct)
	if err != nil {
		t.Fatal(err)
	}
	frame := strings.Replace(string(enc), `"primaryKey":["id"]`, `"primaryKey":["id"],"allowResurrection":true`, 1)
	if _, err := UnmarshalChangeSet([]byte(frame)); err == nil {
		t.Errorf("create_table ddl with allowResurrection decoded: %s", frame)
	}
	// Exactly one definition: a policy on another kind is refused.
	bad := cs
	bad.Migrations = []model.SchemaMigration{{Type: model.AddIndex, TableName: "trips", Index: &model.IndexDef{Name: "i", Columns: []string{"x"}}, Resurrection: model.DeleteWins, HLC: h}}
	if _, err := MarshalChangeSet(&bad); err == nil {
		t.Error("add_index with a policy encoded")
	}
}

// TestDropMigrationsWire: drop_table, drop_column and drop_index travel in
// a ChangeSet in their one form and decode as themselves; a ddl of another
// shape is refused (wire/doc.go § Schema migrations).
func TestDropMigrationsWire(t *testing.T) {
	site := model.SiteID{1}
	h := model.HLC{Wall: 1795910400000, Site: site}
	at := func(op uint32) model.HLC { x := h; x.OpSeq = op; return x }
	cs := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: at(2), Migrations: []model.SchemaMigration{
		{Type: model.DropIndex, TableName: "trips", Name: "by_title", HLC: at(0)},
		{Type: model.DropColumn, TableName: "trips", Name: "budget", HLC: at(1)},
		{Type: model.DropTable, TableName: "stops", HLC: at(2)},
	}}
	enc, err := MarshalChangeSet(&cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"type":"drop_index","table":"trips","ddl":{"name":"by_title"},"hlc":`,
		`{"type":"drop_column","table":"trips","ddl":{"name":"budget"},"hlc":`,
		`{"type":"drop_table","table":"stops","ddl":{},"hlc":`,
	} {
		if !strings.Contains(string(enc), want) {
			t.Errorf("encoded as %s, want %s", enc, want)
		}
	}
	dec, err := UnmarshalChangeSet(enc)
	if err != nil || !reflect.DeepEqual(dec.Migrations, cs.Migrations) {
		t.Fatalf("decoded %s as %+v, %v", enc, dec.Migrations, err)
	}
	for _, c := range []struct{ from, to string }{
		{`{"name":"by_title"}`, `{}`},
		{`{"name":"by_title"}`, `{"name":"by_title","columns":["title"]}`},
		{`{"name":"budget"}`, `{"name":7}`},
		{`"ddl":{},`, `"ddl":{"name":"stops"},`},
	} {
		frame := strings.Replace(string(enc), c.from, c.to, 1)
		if _, err := UnmarshalChangeSet([]byte(frame)); err == nil {
			t.Errorf("ddl %s decoded", c.to)
		}
	}
}

// TestAlterMigrationsWire: alter_column travels in a ChangeSet in its one
// form and decodes as itself; a ddl of another shape is refused
// (wire/doc.go § Schema migrations).
func TestAlterMigrationsWire(t *testing.T) {
	site := model.SiteID{1}
	h := model.HLC{Wall: 1795910400000, Site: site}
	at := func(op uint32) model.HLC { x := h; x.OpSeq = op; return x }
	cs := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: at(2), Migrations: []model.SchemaMigration{
		{Type: model.AlterColumn, TableName: "trips", Name: "days", HLC: at(0), Alter: &model.ColumnAlter{SetNotNull: true, NotNull: true, SetDefault: true, HasDefault: true, Default: model.Int(2)}},
		{Type: model.AlterColumn, TableName: "trips", Name: "budget", HLC: at(1), Alter: &model.ColumnAlter{SetDefault: true}},
		{Type: model.AlterColumn, TableName: "trips", Name: "title", HLC: at(2), Alter: &model.ColumnAlter{SetNotNull: true}},
	}}
	enc, err := MarshalChangeSet(&cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"type":"alter_column","table":"trips","ddl":{"name":"days","notNull":true,"default":2},"hlc":`,
		`{"type":"alter_column","table":"trips","ddl":{"name":"budget","dropDefault":true},"hlc":`,
		`{"type":"alter_column","table":"trips","ddl":{"name":"title","notNull":false},"hlc":`,
	} {
		if !strings.Contains(string(enc), want) {
			t.Errorf("encoded as %s, want %s", enc, want)
		}
	}
	dec, err := UnmarshalChangeSet(enc)
	if err != nil || !reflect.DeepEqual(dec.Migrations, cs.Migrations) {
		t.Fatalf("decoded %s as %+v, %v", enc, dec.Migrations, err)
	}
	for _, c := range []struct{ from, to string }{
		{`{"name":"title","notNull":false}`, `{"name":"title"}`},
		{`{"name":"title","notNull":false}`, `{"name":"title","type":"text"}`},
		{`{"name":"budget","dropDefault":true}`, `{"name":"budget","dropDefault":false}`},
		{`{"name":"budget","dropDefault":true}`, `{"name":"budget","dropDefault":true,"default":1}`},
		{`"name":"days",`, ``},
	} {
		frame := strings.Replace(string(enc), c.from, c.to, 1)
		if _, err := UnmarshalChangeSet([]byte(frame)); err == nil {
			t.Errorf("ddl %s decoded", c.to)
		}
	}
}

// TestRenameMigrationsWire: rename_table travels in a ChangeSet in its one
// form ({"name": the new name}, the table by its identity) and decodes as
// itself; a ddl of another shape is refused (wire/doc.go § Schema
// migrations).
func TestRenameMigrationsWire(t *testing.T) {
	cs := sampleRenames()
	enc, err := MarshalChangeSet(&cs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"rename_table","table":"trips","ddl":{"name":"journeys"},"hlc":`
	if !strings.Contains(string(enc), want) {
		t.Errorf("encoded as %s, want %s", enc, want)
	}
	dec, err := UnmarshalChangeSet(enc)
	if err != nil || !reflect.DeepEqual(dec.Migrations, cs.Migrations) {
		t.Fatalf("decoded %s as %+v, %v", enc, dec.Migrations, err)
	}
	for _, to := range []string{`{}`, `{"name":""}`, `{"name":"journeys","from":"trips"}`, `{"name":7}`} {
		frame := strings.Replace(string(enc), `{"name":"journeys"}`, to, 1)
		if _, err := UnmarshalChangeSet([]byte(frame)); err == nil {
			t.Errorf("ddl %s decoded", to)
		}
	}
}
