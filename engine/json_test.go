package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// json.go replaces encoding/json in the engine (for the browser build's
// size); these tests hold it to encoding/json's output and acceptance.

// jsonCorpus holds valid and invalid JSON texts.
var jsonCorpus = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`,
	`-12.5e+300`, `+1`, `1 2`, `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{ }`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	`{"a":[1,{"b":null}],"c":"x"}`, " \t\n\r{ \"a\" :\n[ 1 , 2.50 , \"x\" ] }\n ", `"\u00e9\ud83d\ude00"`,
	`"\ud800"`, `"\udc00x"`, `"\x"`, `"\u12"`, `"\u12G4"`, `"unterminated`, "\"ctl\x01\"", "\"tab\t\"", `"\/\b\f\n\r\t\"\\"`,
	"\"bad utf8 \xff\xfe\"", "\"\u2028 <&>\"", `[[[[[]]]]]`, `{"a":{"a":{"a":{}}}}`, `{"a":1}x`, "\x00", `[1]]`, `{"a":1}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func checkCompact(t *testing.T, src string) {
	t.Helper()
	var want bytes.Buffer
	werr := json.Compact(&want, []byte(src))
	valid := json.Valid([]byte(src))
	got, err := compactJSON([]byte("prefix:"), []byte(src))
	if (err == nil) != valid || (werr == nil) != valid {
		t.Errorf("compactJSON(%.60q): err %v; encoding/json: Valid %v, Compact %v", src, err, valid, werr)
		return
	}
	if valid && string(got) != "prefix:"+want.String() {
		t.Errorf("compactJSON(%.60q) = %.60q, want %.60q", src, got, "prefix:"+want.String())
	}
	if !valid && string(got) != "prefix:" {
		t.Errorf("compactJSON(%.60q) failed but changed dst: %q", src, got)
	}
}

func TestCompactJSON(t *testing.T) {
	for _, src := range jsonCorpus {
		checkCompact(t, src)
	}
}

func FuzzCompactJSON(f *testing.F) {
	for _, src := range jsonCorpus {
		if len(src) < 100 {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkCompact(t, src)
		if json.Valid([]byte(src)) {
			// The tree decoder accepts what compact accepts and reads strings
			// as encoding/json does.
			s := jsonScanner{src: []byte(src)}
			v, err := s.tree()
			if err == nil {
				err = s.end()
			}
			if err != nil {
				t.Fatalf("tree(%q): %v", src, err)
			}
			var want any
			dec := json.NewDecoder(strings.NewReader(src))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if got, wantText := treeString(v), treeString(want); got != wantText {
				t.Fatalf("tree(%q) = %s, encoding/json read %s", src, got, wantText)
			}
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

func TestUnquoteJSON(t *testing.T) {
	for _, q := range []string{`""`, `"abc"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\/\b\f\n\r\t\"\\"`, "\"bad \xff utf8\"", `"\u0000"`, "\"ok \u2028\""} {
		var want string
		if err := json.Unmarshal([]byte(q), &want); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := unquoteJSON([]byte(q)); got != want {
			t.Errorf("unquoteJSON(%s) = %q, want %q", q, got, want)
		}
	}
}

var jsonStrings = []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f", "html <a href='x'>&amp;</a>",
	"\u2028 and \u2029", "bad \xff\xfe utf8 \xe2\x80", "é 😀 \U0010FFFF", "\xed\xa0\x80 surrogate bytes"}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s, true); string(got) != string(want) {
			t.Errorf("appendJSONString(%q, html) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := appendJSONString(nil, s, false); string(got)+"\n" != buf.String() {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, buf.String())
		}
	}
}

type jsonTestStatus string
type jsonTestBytes []byte
type jsonTestKey int16
type jsonTestMarshaler struct{}

func (jsonTestMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"m" : 1}`), nil }

type jsonTestText int

func (t jsonTestText) MarshalText() ([]byte, error) { return []byte("text"), nil }

type jsonTestPtrMarshaler struct{ N int }

func (*jsonTestPtrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

// TestMarshalJSON: marshalJSON writes what an encoding/json Encoder with
// SetEscapeHTML(false) writes, for the values it handles itself and for
// those it leaves to encoding/json (natively).
func TestMarshalJSON(t *testing.T) {
	one := 1
	var nilMap map[string]any
	var nilSlice []int
	var nilPtr *int
	values := []any{
		nil, true, false, 0, -42, int8(-8), uint8(200), uint64(math.MaxUint64), uintptr(7), math.MaxInt64,
		0.0, math.Copysign(0, -1), 1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
		float32(0.1), float32(1e-7), float32(3.4e38), float32(16777216),
		"", "a <b> & \"c\"\n\u2028\xff",
		[]byte(nil), []byte{}, []byte{0, 1, 2, 255}, jsonTestBytes{1, 2},
		[3]byte{1, 2, 3}, [0]int{}, []int{1, 2}, nilSlice, []string{"x"}, []any{"x", nil, 1.5, []any{}},
		map[string]any{"b": 1, "a": []int{1, 2}, "": nil, "<": ">"}, nilMap, map[string]int{},
		map[int]string{10: "ten", -1: "m", 2: "two"}, map[uint8]bool{3: true}, map[jsonTestKey]int{5: 5},
		map[jsonTestStatus]jsonTestStatus{"k": "v"}, &one, nilPtr, &[]any{&one},
		jsonTestStatus("open"), json.Number("1.50"), json.Number("-0e+1"), json.Number(""), []any{json.Number("2")},
		json.RawMessage(` { "a" : [ 1 ] } `), map[string]any{"raw": json.RawMessage(`[1, 2]`)}, json.RawMessage(nil),
		// Left to encoding/json: methods, structs.
		jsonTestMarshaler{}, []any{jsonTestMarshaler{}}, jsonTestText(1), map[jsonTestText]int{1: 1},
		struct {
			A int `json:"a,omitempty"`
			B string
		}{B: "b"}, []jsonTestPtrMarshaler{{1}}, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), []any{time.Unix(0, 0).UTC()},
	}
	for _, v := range values {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encoding/json %T %v: %v", v, v, err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		got, err := marshalJSON(v)
		if err != nil || string(got) != want {
			t.Errorf("marshalJSON(%T %#v) = %s, %v; want %s", v, v, got, err, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(-1), float32(math.Inf(1)), []any{math.NaN()}, json.Number("01"), json.Number("+1"),
		json.Number(" 1"), json.RawMessage(`{`), json.RawMessage{}, map[string]any{"c": make(chan int)}, func() {}} {
		if _, jerr := json.Marshal(v); jerr == nil {
			t.Fatalf("encoding/json accepts %T %v", v, v)
		}
		if got, err := marshalJSON(v); err == nil {
			t.Errorf("marshalJSON(%T %v) = %s, want an error", v, v, got)
		}
	}
}

// TestStoredJSON: stored migrations and checkpoints have the bytes
// encoding/json wrote for them, and read back what encoding/json wrote.
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
	}
	for _, m := range migrations {
		got, err := encodeMigration(&m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(toStoredMigration(&m))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("encodeMigration:\n got %s\nwant %s", got, want)
		}
		key := append([]byte{'m'}, HLC{Wall: 1}.Bytes()...)
		back, err := decodeMigration(key, want)
		if err != nil {
			t.Fatalf("decodeMigration(%s): %v", want, err)
		}
		if !migrationsEqual(&back, &m) {
			again, _ := encodeMigration(&back)
			t.Errorf("decodeMigration(%s) re-encodes as %s", want, again)
		}
	}
	for _, bad := range []string{`{"type":5}`, `{"def":[]}`, `{"def":{"columns":[1]}}`, `{"column":{"default":"!"}}`, `[]`, `{`} {
		key := append([]byte{'m'}, HLC{Wall: 1}.Bytes()...)
		if _, err := decodeMigration(key, []byte(bad)); err == nil {
			t.Errorf("decodeMigration(%s) succeeded", bad)
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
		_ = store.View(func(tx kv.Tx) error { got, _ = tx.Get(bucketMeta, metaCheckpoint); return nil })
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
