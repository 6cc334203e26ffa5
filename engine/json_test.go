package engine

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// The engine's stored JSON (json.go) against encoding/json: the bytes it
// wrote for stored migrations and checkpoints, and how it read them.

// storedCorpus holds JSON texts for the stored-record reader.
var storedCorpus = []string{`{"a":[1,{"b":null}],"c":"x"}`, " \t\n\r{ \"a\" :\n[ 1 , 2.50 , \"x\" ] }\n ", `"\u00e9\ud83d\ude00"`,
	`"\ud800"`, `"\udc00x"`, `"\/\b\f\n\r\t\"\\"`, "\"bad utf8 \xff\xfe\"", `{"a":1,"a":2}`, `[[[[[]]]]]`}

// FuzzJSONTree: the stored-record reader reads what encoding/json reads.
func FuzzJSONTree(f *testing.F) {
	for _, src := range storedCorpus {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if !json.Valid([]byte(src)) {
			return
		}
		s := jsontext.Reader{Data: []byte(src), Surrogates: engineSurrogates}
		v, err := jsonTree(&s)
		if err == nil {
			err = s.End()
		}
		if err != nil {
			t.Fatalf("jsonTree(%q): %v", src, err)
		}
		var want any
		dec := json.NewDecoder(strings.NewReader(src))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got, wantText := treeString(v), treeString(want); got != wantText {
			t.Fatalf("jsonTree(%q) = %s, encoding/json read %s", src, got, wantText)
		}
	})
}

// treeString prints a decoded tree, the tree decoder's or encoding/json's
// (numbers as "#": float64 and number text do not compare).
func treeString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return "s" + strconv.Quote(x)
	case jsonNumber, json.Number:
		return "#"
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for _, e := range x {
			b.WriteString(treeString(e) + ",")
		}
		return b.String() + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(strconv.Quote(k) + ":" + treeString(x[k]) + ",")
		}
		return b.String() + "}"
	}
	return "?"
}

func TestJSONTreeStrings(t *testing.T) {
	for _, q := range []string{`""`, `"abc"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\/\b\f\n\r\t\"\\"`, "\"bad \xff utf8\"", `"\u0000"`, "\"ok \u2028\""} {
		var want string
		if err := json.Unmarshal([]byte(q), &want); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		r := jsontext.Reader{Data: []byte(q), Surrogates: engineSurrogates}
		if got, err := jsonTree(&r); err != nil || got != want {
			t.Errorf("jsonTree(%s) = %q, %v; want %q", q, got, err, want)
		}
	}
}

// TestStoredJSON: legacy (format 1) stored migrations read back what
// encoding/json wrote for their shape, and checkpoints have the bytes
// encoding/json wrote for them.
func TestStoredJSON(t *testing.T) {
	def := &TableDef{Name: "trips <&>", PrimaryKey: []string{"id"}, Coerce: true,
		Columns: []ColumnDef{{Name: "id", Type: KindText}, {Name: "n", Type: KindInteger, NotNull: true, HasDefault: true, Default: Int(7), Coerce: true},
			{Name: "s", Type: KindText, HasDefault: true, Default: Null}},
		Indexes: []IndexDef{{Name: "by_n", Columns: []string{"n", "id"}}}}
	migrations := []SchemaMigration{
		{Type: CreateTable, TableName: def.Name, Table: def},
		{Type: CreateTable, TableName: "bare", Table: &TableDef{Name: "bare", Columns: []ColumnDef{}, Indexes: []IndexDef{}}},
		{Type: CreateTable, TableName: "nils", Table: &TableDef{Name: "nils"}},
		{Type: AddColumn, TableName: "t", Column: &ColumnDef{Name: "c", Type: KindJSON, HasDefault: true, Default: jsonV(`{"a":1}`)}},
		{Type: AddIndex, TableName: "t", Index: &IndexDef{Name: "i", Columns: nil}},
		{Type: SetResurrectionPolicy, TableName: "t", Resurrection: ResurrectionAllowed},
		{Type: SetResurrectionPolicy, TableName: "t", Resurrection: DeleteWins},
	}
	for _, m := range migrations {
		legacy, err := json.Marshal(toStoredMigration(&m))
		if err != nil {
			t.Fatal(err)
		}
		key := append([]byte{'m'}, HLC{Wall: 1}.Bytes()...)
		back, err := decodeLegacyMigration(key, legacy)
		if err != nil {
			t.Fatalf("decodeLegacyMigration(%s): %v", legacy, err)
		}
		if again, _ := json.Marshal(toStoredMigration(&back)); string(again) != string(legacy) {
			t.Errorf("decodeLegacyMigration(%s) re-encodes as %s", legacy, again)
		}
	}
	for _, bad := range []string{`{"type":5}`, `{"def":[]}`, `{"def":{"columns":[1]}}`, `{"column":{"default":"!"}}`, `{"type":"set_resurrection_policy","policy":"revive"}`, `{"policy":true}`, `[]`, `{`} {
		key := append([]byte{'m'}, HLC{Wall: 1}.Bytes()...)
		if _, err := decodeLegacyMigration(key, []byte(bad)); err == nil {
			t.Errorf("decodeLegacyMigration(%s) succeeded", bad)
		}
	}

	type storedCheckpoint struct { // the documented shape, with encoding/json's tags
		SnapshotID      string   `json:"id"`
		SiteID          []byte   `json:"site"`
		HLC             []byte   `json:"hlc"`
		Cursor          uint64   `json:"cursor"`
		CompletedTables []string `json:"completed"`
		RowsApplied     int64    `json:"rows"`
		CreatedAt       uint64   `json:"createdAt"`
	}
	for _, cp := range []SnapshotCheckpoint{
		{SnapshotID: "snap <1>", SiteID: SiteID{1, 2, 3}, HLC: HLC{Wall: 99, Counter: 3, Site: SiteID{9}, OpSeq: 4}, Cursor: 1 << 53,
			CompletedTables: []string{"a", "b"}, RowsApplied: 12345, CreatedAt: 1714564800000},
		{CompletedTables: []string{}},
		{},
	} {
		store := memkv.New(Buckets...)
		if err := store.Update(func(tx kv.Tx) error { return writeCheckpoint(tx, &cp) }); err != nil {
			t.Fatal(err)
		}
		var got []byte
		_ = store.View(func(tx kv.Tx) error { got, _ = tx.Get(layout.BucketMeta, layout.MetaCheckpoint); return nil })
		want, _ := json.Marshal(storedCheckpoint{cp.SnapshotID, cp.SiteID[:], cp.HLC.Bytes(), cp.Cursor, cp.CompletedTables, cp.RowsApplied, cp.CreatedAt})
		if string(got) != string(want) {
			t.Errorf("writeCheckpoint:\n got %s\nwant %s", got, want)
		}
		back, err := decodeCheckpoint(want)
		if err != nil {
			t.Fatalf("decodeCheckpoint(%s): %v", want, err)
		}
		if back.SnapshotID != cp.SnapshotID || back.SiteID != cp.SiteID || back.HLC != cp.HLC || back.Cursor != cp.Cursor ||
			strings.Join(back.CompletedTables, ",") != strings.Join(cp.CompletedTables, ",") || (back.CompletedTables == nil) != (cp.CompletedTables == nil) ||
			back.RowsApplied != cp.RowsApplied || back.CreatedAt != cp.CreatedAt {
			t.Errorf("decodeCheckpoint(%s) = %+v, want %+v", want, *back, cp)
		}
	}
	for _, bad := range []string{`{"site":"AQID"}`, `{"site":"AAAAAAAAAAAAAAAAAAAAAA==","hlc":"x"}`, `{"cursor":-1}`, `{"rows":1.5}`, `null`} {
		if _, err := decodeCheckpoint([]byte(bad)); err == nil {
			t.Errorf("decodeCheckpoint(%s) succeeded", bad)
		}
	}
}

// toStoredMigration is m in the legacy stored form (storage format 1), as
// format-1 engines wrote it with encoding/json.
func toStoredMigration(m *SchemaMigration) storedMigration {
	sm := storedMigration{Type: m.Type, Table: m.TableName}
	if m.Resurrection != ResurrectionUndeclared {
		sm.Policy = m.Resurrection.String()
	}
	if m.Index != nil {
		sm.Index = &storedIndex{m.Index.Name, m.Index.Columns}
	}
	if m.Table != nil {
		st := &storedTable{Name: m.Table.Name, PrimaryKey: m.Table.PrimaryKey, Coerce: m.Table.Coerce}
		for _, x := range m.Table.Indexes {
			st.Indexes = append(st.Indexes, storedIndex{x.Name, x.Columns})
		}
		for _, c := range m.Table.Columns {
			st.Columns = append(st.Columns, toStoredColumn(c))
		}
		sm.Def = st
	}
	if m.Column != nil {
		sc := toStoredColumn(*m.Column)
		sm.Column = &sc
	}
	return sm
}

func toStoredColumn(c ColumnDef) storedColumn {
	sc := storedColumn{Name: c.Name, Type: c.Type.String(), NotNull: c.NotNull, HasDefault: c.HasDefault, Coerce: c.Coerce}
	if c.HasDefault {
		sc.Default = rowrec.AppendValue(nil, c.Default)
	}
	return sc
}
