package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/internal/jsontext"
)

// readMigration reads one migration from text with a plain Reader whose
// errors are *jsontext.PathError.
func readMigration(text string) (SchemaMigration, error) {
	r := &jsontext.Reader{Data: []byte(text), Errors: jsontext.PathErrors{Sentinel: ErrMalformed}}
	if err := r.CheckUTF8(); err != nil {
		return SchemaMigration{}, err
	}
	m, err := ReadMigrationJSON(r)
	if err == nil {
		err = r.End()
	}
	return m, err
}

// TestMigrationJSONRoundTrip: each kind of migration is written in its
// one form and reads back as itself (defaults as ReadValueJSON reads them
// without a schema: a timestamp default as an Integer).
func TestMigrationJSONRoundTrip(t *testing.T) {
	h := HLC{Wall: 1714564800123, Counter: 3, Site: SiteID{1, 2}, OpSeq: 4}
	for _, c := range []struct {
		m    SchemaMigration
		want string
	}{
		{SchemaMigration{Type: CreateTable, TableName: "t", HLC: h, Table: &TableDef{Name: "t", PrimaryKey: []string{"id"}, Coerce: true,
			Columns: []ColumnDef{{Name: "id", Type: KindText, NotNull: true}, {Name: "b", Type: KindBlob, HasDefault: true, Default: Blob([]byte{1})},
				{Name: "n", Type: KindInteger, HasDefault: true, Default: Int(1 << 60)}, {Name: "x", Type: KindText, HasDefault: true, Default: Null}},
			Indexes: []IndexDef{{Name: "by_n", Columns: []string{"n"}}}}},
			`{"type":"create_table","table":"t","ddl":{"name":"t","columns":[{"name":"id","type":"text","notNull":true},{"name":"b","type":"blob","default":{"__bin":"AQ=="}},{"name":"n","type":"integer","default":{"__bigint":"1152921504606846976"}},{"name":"x","type":"text","default":null}],"primaryKey":["id"],"indexes":[{"name":"by_n","columns":["n"]}],"coerce":true},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AddColumn, TableName: "t", HLC: h, Column: &ColumnDef{Name: "j", Type: KindJSON, HasDefault: true, Default: rawJSON(`"s"`)}},
			`{"type":"add_column","table":"t","ddl":{"name":"j","type":"json","default":{"__json":"s"}},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AddColumn, TableName: "t", HLC: h, Column: &ColumnDef{Name: "r", Type: KindReal, HasDefault: true, Default: Real(2)}},
			`{"type":"add_column","table":"t","ddl":{"name":"r","type":"real","default":2.0},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AddIndex, TableName: "t", HLC: h, Index: &IndexDef{Name: "i", Columns: []string{"a", "b"}}},
			`{"type":"add_index","table":"t","ddl":{"name":"i","columns":["a","b"]},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: SetResurrectionPolicy, TableName: "t", HLC: h, Resurrection: DeleteWins},
			`{"type":"set_resurrection_policy","table":"t","ddl":{"policy":"delete-wins"},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: DropTable, TableName: "t", HLC: h},
			`{"type":"drop_table","table":"t","ddl":{},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: DropColumn, TableName: "t", HLC: h, Name: "c"},
			`{"type":"drop_column","table":"t","ddl":{"name":"c"},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: DropIndex, TableName: "t", HLC: h, Name: "by_n"},
			`{"type":"drop_index","table":"t","ddl":{"name":"by_n"},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AlterColumn, TableName: "t", HLC: h, Name: "c", Alter: &ColumnAlter{SetNotNull: true, NotNull: true, SetDefault: true, HasDefault: true, Default: Int(7)}},
			`{"type":"alter_column","table":"t","ddl":{"name":"c","notNull":true,"default":7},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AlterColumn, TableName: "t", HLC: h, Name: "c", Alter: &ColumnAlter{SetNotNull: true}},
			`{"type":"alter_column","table":"t","ddl":{"name":"c","notNull":false},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AlterColumn, TableName: "t", HLC: h, Name: "c", Alter: &ColumnAlter{SetDefault: true}},
			`{"type":"alter_column","table":"t","ddl":{"name":"c","dropDefault":true},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: AlterColumn, TableName: "t", HLC: h, Name: "c", Alter: &ColumnAlter{SetDefault: true, HasDefault: true}},
			`{"type":"alter_column","table":"t","ddl":{"name":"c","default":null},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
		{SchemaMigration{Type: RenameTable, TableName: "t", HLC: h, Name: "u"},
			`{"type":"rename_table","table":"t","ddl":{"name":"u"},"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"}`},
	} {
		b, err := AppendMigrationJSON(nil, &c.m)
		if err != nil || string(b) != c.want {
			t.Errorf("AppendMigrationJSON(%+v) =\n %s, %v\nwant\n %s", c.m, b, err, c.want)
			continue
		}
		back, err := readMigration(c.want)
		if err != nil {
			t.Fatalf("ReadMigrationJSON(%s): %v", c.want, err)
		}
		again, err := AppendMigrationJSON(nil, &back)
		if err != nil || string(again) != c.want || back.HLC != h {
			t.Errorf("ReadMigrationJSON(%s) = %+v, re-encoded %s, %v", c.want, back, again, err)
		}
	}
}

// TestMigrationJSONErrors: encode and decode errors match their sentinel
// and name the JSON path of the offending member.
func TestMigrationJSONErrors(t *testing.T) {
	for _, c := range []struct {
		m    SchemaMigration
		want string
	}{
		{SchemaMigration{Type: AddColumn, TableName: "t", Column: &ColumnDef{Name: "r", Type: KindReal, HasDefault: true, Default: Value{kind: KindReal, f: nan()}}}, "ddl.default: real NaN cannot be encoded"},
		{SchemaMigration{Type: AddIndex, TableName: "t", Index: &IndexDef{Name: "i", Columns: []string{"a", ""}}}, "ddl.columns[1]: must not be empty"},
		{SchemaMigration{Type: AddIndex, TableName: "t", Column: &ColumnDef{Name: "c", Type: KindText}}, `type: migration type "add_index" does not match`},
		{SchemaMigration{Type: CreateTable, TableName: "t", Table: &TableDef{Name: "t", Columns: []ColumnDef{{Name: "c", Type: KindText, HasDefault: true, Default: Text("\xff")}}}}, "ddl.columns[0].default: text is not valid UTF-8"},
		{SchemaMigration{Type: DropTable, TableName: "t", Name: "c"}, "ddl: a drop_table carries no definition or name"},
		{SchemaMigration{Type: DropColumn, TableName: "t"}, "want exactly one"},
		{SchemaMigration{Type: RenameTable, TableName: "t"}, "want exactly one"},
		{SchemaMigration{Type: RenameTable, TableName: "t", Index: &IndexDef{Name: "i", Columns: []string{"a"}}}, `type: migration type "rename_table" does not match`},
		{SchemaMigration{Type: DropIndex, TableName: "t", Index: &IndexDef{Name: "i", Columns: []string{"a"}}}, `type: migration type "drop_index" does not match`},
		{SchemaMigration{Type: AddColumn, TableName: "t", Column: &ColumnDef{Name: "c", Type: KindText}, Name: "c"}, "want exactly one"},
		{SchemaMigration{Type: AlterColumn, TableName: "t", Name: "c"}, "ddl: an alter_column carries a column name and an alteration only"},
		{SchemaMigration{Type: AlterColumn, TableName: "t", Alter: &ColumnAlter{SetNotNull: true}}, "ddl: an alter_column carries"},
		{SchemaMigration{Type: AlterColumn, TableName: "t", Name: "c", Alter: &ColumnAlter{}}, "ddl: an alter_column changes nothing"},
		{SchemaMigration{Type: AlterColumn, TableName: "t", Name: "c", Alter: &ColumnAlter{SetNotNull: true, Default: Int(1)}}, "ddl.default: a default value without"},
		{SchemaMigration{Type: AddColumn, TableName: "t", Column: &ColumnDef{Name: "c", Type: KindText}, Alter: &ColumnAlter{SetNotNull: true}}, "want exactly one"},
	} {
		_, err := AppendMigrationJSON(nil, &c.m)
		var pe *jsontext.PathError
		if !errors.Is(err, ErrUnencodable) || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AppendMigrationJSON(%+v) = %v; want ErrUnencodable with %q", c.m, err, c.want)
		}
	}
	h := `"hlc":"AAABjzQGnnsAAwECAAAAAAAAAAAAAAAAAAAAAAAE"`
	for _, c := range []struct{ text, want string }{
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"varchar"},` + h + `}`, `ddl.type: unknown column type "varchar"`},
		{`{"type":"create_table","table":"t","ddl":{"name":"u","columns":[],"primaryKey":[]},` + h + `}`, `ddl: table definition "u" differs from table "t"`},
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"text","default":{"__bin":"!"}},` + h + `}`, `ddl.default.__bin: not padded standard base64`},
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"text"},"hlc":"AAAA"}`, `hlc: HLC: want 40 base64 characters, got 4`},
		{`{"type":"retype_table","table":"t","ddl":{},` + h + `}`, `type: unknown migration type "retype_table"`},
		{`{"type":"alter_column","table":"t","ddl":{"name":"c"},` + h + `}`, `ddl: an alter_column changes notNull, default or dropDefault; this one changes nothing`},
		{`{"type":"alter_column","table":"t","ddl":{"notNull":true},` + h + `}`, `ddl: missing`},
		{`{"type":"alter_column","table":"t","ddl":{"name":"c","default":1,"dropDefault":true},` + h + `}`, `ddl: an alter_column sets default or dropDefault, not both`},
		{`{"type":"alter_column","table":"t","ddl":{"name":"c","dropDefault":false},` + h + `}`, `ddl.dropDefault: dropDefault is only ever true`},
		{`{"type":"alter_column","table":"t","ddl":{"name":"c","type":"text"},` + h + `}`, `ddl: unknown field "type"`},
		{`{"type":"drop_table","table":"t","ddl":{"name":"t"},` + h + `}`, `ddl: unknown field "name"`},
		{`{"type":"drop_column","table":"t","ddl":{},` + h + `}`, `ddl: missing`},
		{`{"type":"drop_index","table":"t","ddl":{"name":""},` + h + `}`, `ddl.name:`},
		{`{"type":"drop_column","table":"t","ddl":{"name":"c","type":"text"},` + h + `}`, `ddl: unknown field "type"`},
	} {
		_, err := readMigration(c.text)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "(at byte ") {
			t.Errorf("ReadMigrationJSON(%s) = %v; want ErrMalformed with %q and an offset", c.text, err, c.want)
		}
	}
}

func rawJSON(s string) Value { return Value{kind: KindJSON, s: s} }

func nan() float64 { var z float64; return z / z }
