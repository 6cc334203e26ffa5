package model

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"_", true},
		{"todos", true},
		{"Todo_Items2", true},
		{"_private", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"1abc", false},
		{"a-b", false},
		{"a b", false},
		{"a.b", false},
		{"é", false},
		{"a\x00", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestSchemaValidateNormalizes(t *testing.T) {
	in := Schema{Tables: []TableDef{
		{
			Name: "todos",
			Columns: []ColumnDef{
				{Name: "title", Type: KindText, NotNull: true},
				{Name: "done", Type: KindBoolean, HasDefault: true, Default: Bool(false)},
				{Name: "rank", Type: KindInteger, HasDefault: true, Default: Text("7"), Coerce: true},
			},
			Indexes: []IndexDef{{Name: "by_done", Columns: []string{"done", "rank"}}},
		},
		{
			Name:    "items",
			Columns: []ColumnDef{{Name: "id", Type: KindInteger}, {Name: "x", Type: KindReal}},
		},
		{
			Name:       "cells",
			Columns:    []ColumnDef{{Name: "sheet", Type: KindText}, {Name: "row", Type: KindInteger}, {Name: "data", Type: KindBlob}},
			PrimaryKey: []string{"sheet", "row"},
		},
	}}
	out, err := in.Validate()
	if err != nil {
		t.Fatal(err)
	}
	todos := &out.Tables[0]
	if len(todos.Columns) != 4 || !todos.Columns[0].Equal(&ColumnDef{Name: "id", Type: KindText, NotNull: true}) {
		t.Errorf("todos columns = %+v, want the text id prepended", todos.Columns)
	}
	if len(todos.PrimaryKey) != 1 || todos.PrimaryKey[0] != "id" {
		t.Errorf("todos key = %v, want [id]", todos.PrimaryKey)
	}
	if d := todos.Columns[3].Default; !d.Equal(Int(7)) {
		t.Errorf("coerced default = %v %v, want integer 7", d.Kind(), d)
	}
	items := &out.Tables[1]
	if len(items.Columns) != 2 || items.Columns[0].Type != KindInteger || !items.Columns[0].NotNull {
		t.Errorf("items columns = %+v, want the declared integer id, made NOT NULL", items.Columns)
	}
	cells := &out.Tables[2]
	if !cells.Columns[0].NotNull || !cells.Columns[1].NotNull || cells.Columns[2].NotNull {
		t.Errorf("cells columns = %+v, want key columns NOT NULL and only them", cells.Columns)
	}

	// The input is untouched and shares nothing with the output.
	if len(in.Tables[0].Columns) != 3 || len(in.Tables[0].PrimaryKey) != 0 || in.Tables[1].Columns[0].NotNull {
		t.Errorf("input modified: %+v", in.Tables)
	}
	out.Tables[0].Indexes[0].Columns[0] = "changed"
	out.Tables[2].PrimaryKey[0] = "changed"
	if in.Tables[0].Indexes[0].Columns[0] != "done" || in.Tables[2].PrimaryKey[0] != "sheet" {
		t.Error("output shares slices with the input")
	}

	// Validating the output again changes nothing.
	out, _ = in.Validate()
	for i := range out.Tables {
		if !mustValidateTable(t, out.Tables[i]).Equal(&out.Tables[i]) {
			t.Errorf("table %s: not a fixed point of Validate", out.Tables[i].Name)
		}
	}
}

func mustValidateTable(t *testing.T, td TableDef) *TableDef {
	t.Helper()
	s, err := Schema{Tables: []TableDef{td}}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	return &s.Tables[0]
}

func TestSchemaValidateErrors(t *testing.T) {
	col := func(name string, k Kind) ColumnDef { return ColumnDef{Name: name, Type: k} }
	tbl := func(cols ...ColumnDef) TableDef { return TableDef{Name: "t", Columns: cols} }
	for _, tc := range []struct {
		name    string
		schema  Schema
		want    SchemaError // Reason: a substring
		message string      // a substring of Error()
	}{
		{"no tables", Schema{}, SchemaError{Reason: "no tables"}, "invalid schema: no tables"},
		{"bad table name", Schema{Tables: []TableDef{{Name: "my-table"}}},
			SchemaError{Table: "my-table", Reason: "invalid table name"}, `table "my-table": invalid table name`},
		{"empty table name", Schema{Tables: []TableDef{{Name: ""}}},
			SchemaError{Reason: "table name is empty"}, ""},
		{"duplicate table", Schema{Tables: []TableDef{tbl(), tbl()}},
			SchemaError{Table: "t", Reason: "declared twice"}, `table "t": declared twice`},
		{"bad column name", Schema{Tables: []TableDef{tbl(col("2x", KindText))}},
			SchemaError{Table: "t", Column: "2x", Reason: "invalid column name"}, `table "t" column "2x"`},
		{"duplicate column", Schema{Tables: []TableDef{tbl(col("a", KindText), col("a", KindInteger))}},
			SchemaError{Table: "t", Column: "a", Reason: "declared twice"}, ""},
		{"null type", Schema{Tables: []TableDef{tbl(col("a", KindNull))}},
			SchemaError{Table: "t", Column: "a", Reason: "invalid type null"}, ""},
		{"unknown type", Schema{Tables: []TableDef{tbl(col("a", Kind(42)))}},
			SchemaError{Table: "t", Column: "a", Reason: "invalid type kind(42)"}, ""},
		{"key column missing", Schema{Tables: []TableDef{{Name: "t", Columns: []ColumnDef{col("a", KindText)}, PrimaryKey: []string{"b"}}}},
			SchemaError{Table: "t", Column: "b", Reason: "primary key column is not declared"}, ""},
		{"key column twice", Schema{Tables: []TableDef{{Name: "t", Columns: []ColumnDef{col("a", KindText)}, PrimaryKey: []string{"a", "a"}}}},
			SchemaError{Table: "t", Column: "a", Reason: "twice in the primary key"}, ""},
		{"json key", Schema{Tables: []TableDef{{Name: "t", Columns: []ColumnDef{col("a", KindJSON)}, PrimaryKey: []string{"a"}}}},
			SchemaError{Table: "t", Column: "a", Reason: "json column cannot be part of the primary key"}, ""},
		{"json id", Schema{Tables: []TableDef{tbl(col("id", KindJSON))}},
			SchemaError{Table: "t", Column: "id", Reason: "json column"}, ""},
		{"bad index name", Schema{Tables: []TableDef{{Name: "t", Indexes: []IndexDef{{Name: "by id", Columns: []string{"id"}}}}}},
			SchemaError{Table: "t", Index: "by id", Reason: "invalid index name"}, `table "t" index "by id"`},
		{"duplicate index", Schema{Tables: []TableDef{{Name: "t", Indexes: []IndexDef{{Name: "x", Columns: []string{"id"}}, {Name: "x", Columns: []string{"id"}}}}}},
			SchemaError{Table: "t", Index: "x", Reason: "declared twice"}, ""},
		{"empty index", Schema{Tables: []TableDef{{Name: "t", Indexes: []IndexDef{{Name: "x"}}}}},
			SchemaError{Table: "t", Index: "x", Reason: "no columns"}, ""},
		{"index column missing", Schema{Tables: []TableDef{{Name: "t", Indexes: []IndexDef{{Name: "x", Columns: []string{"nope"}}}}}},
			SchemaError{Table: "t", Index: "x", Reason: `column "nope" is not declared`}, ""},
		{"index column twice", Schema{Tables: []TableDef{{Name: "t", Indexes: []IndexDef{{Name: "x", Columns: []string{"id", "id"}}}}}},
			SchemaError{Table: "t", Index: "x", Reason: `column "id" listed twice`}, ""},
		{"default of the wrong type", Schema{Tables: []TableDef{tbl(ColumnDef{Name: "n", Type: KindInteger, HasDefault: true, Default: Text("42")})}},
			SchemaError{Table: "t", Column: "n", Reason: `invalid default: expected integer, got text "42" (set coerce to convert)`}, ""},
		{"NaN default", Schema{Tables: []TableDef{tbl(ColumnDef{Name: "x", Type: KindReal, HasDefault: true, Default: Real(math.NaN())})}},
			SchemaError{Table: "t", Column: "x", Reason: "not a finite number"}, ""},
		{"null default on NOT NULL", Schema{Tables: []TableDef{tbl(ColumnDef{Name: "x", Type: KindText, NotNull: true, HasDefault: true})}},
			SchemaError{Table: "t", Column: "x", Reason: "null default on a NOT NULL column"}, ""},
		{"null default on a key column", Schema{Tables: []TableDef{tbl(ColumnDef{Name: "id", Type: KindText, HasDefault: true})}},
			SchemaError{Table: "t", Column: "id", Reason: "null default on a NOT NULL column"}, ""},
		{"Default without HasDefault", Schema{Tables: []TableDef{tbl(ColumnDef{Name: "x", Type: KindText, Default: Text("a")})}},
			SchemaError{Table: "t", Column: "x", Reason: "HasDefault is false"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.schema.Validate()
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("Validate() error = %v, want one matching ErrSchema", err)
			}
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("Validate() error %T is not a *SchemaError", err)
			}
			if se.Table != tc.want.Table || se.Column != tc.want.Column || se.Index != tc.want.Index || !strings.Contains(se.Reason, tc.want.Reason) {
				t.Errorf("Validate() = %#v, want %#v (Reason as a substring)", *se, tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tc.message)
			}
		})
	}
}

func TestSchemaValidateAllowedKeysAndDefaults(t *testing.T) {
	// Every kind but json may be a key column; every kind may be indexed
	// and take a default.
	defaults := map[Kind]Value{
		KindText: Text("x"), KindInteger: Int(1), KindReal: Real(0.5), KindBoolean: Bool(true),
		KindBlob: Blob([]byte{1}), KindJSON: jsonV(`{"a":1}`), KindTimestamp: TimestampMillis(1),
	}
	for k := KindBoolean; k <= KindBlob; k++ {
		td := TableDef{Name: "t", Columns: []ColumnDef{{Name: "k", Type: KindText}, {Name: "c", Type: k, HasDefault: true, Default: defaults[k]}},
			PrimaryKey: []string{"k", "c"}, Indexes: []IndexDef{{Name: "by_c", Columns: []string{"c"}}}}
		_, err := Schema{Tables: []TableDef{td}}.Validate()
		if (err == nil) != (k != KindJSON) {
			t.Errorf("%s key column: Validate() error = %v", k, err)
		}
		td.PrimaryKey = []string{"k"}
		if _, err := (Schema{Tables: []TableDef{td}}).Validate(); err != nil {
			t.Errorf("%s column with default and index: %v", k, err)
		}
	}
}

func TestTableDefEqual(t *testing.T) {
	base := func() *TableDef {
		return &TableDef{
			Name: "t",
			Columns: []ColumnDef{
				{Name: "id", Type: KindText, NotNull: true},
				{Name: "n", Type: KindInteger, HasDefault: true, Default: Int(0)},
			},
			PrimaryKey: []string{"id"},
			Indexes:    []IndexDef{{Name: "by_n", Columns: []string{"n"}}},
		}
	}
	if !base().Equal(base()) {
		t.Error("equal tables compare unequal")
	}
	var nilT *TableDef
	if !nilT.Equal(nil) || nilT.Equal(base()) || base().Equal(nil) {
		t.Error("nil handling")
	}
	for name, change := range map[string]func(*TableDef){
		"name":          func(d *TableDef) { d.Name = "u" },
		"coerce":        func(d *TableDef) { d.Coerce = true },
		"column type":   func(d *TableDef) { d.Columns[1].Type = KindReal },
		"not null":      func(d *TableDef) { d.Columns[1].NotNull = true },
		"column coerce": func(d *TableDef) { d.Columns[1].Coerce = true },
		"default":       func(d *TableDef) { d.Columns[1].Default = Int(1) },
		"default kind":  func(d *TableDef) { d.Columns[1].Default = Real(0) },
		"no default":    func(d *TableDef) { d.Columns[1].HasDefault, d.Columns[1].Default = false, Null },
		"column order":  func(d *TableDef) { d.Columns[0], d.Columns[1] = d.Columns[1], d.Columns[0] },
		"extra column":  func(d *TableDef) { d.Columns = append(d.Columns, ColumnDef{Name: "x", Type: KindText}) },
		"key":           func(d *TableDef) { d.PrimaryKey = []string{"id", "n"} },
		"index columns": func(d *TableDef) { d.Indexes[0].Columns = []string{"n", "id"} },
		"index name":    func(d *TableDef) { d.Indexes[0].Name = "by_m" },
		"no index":      func(d *TableDef) { d.Indexes = nil },
	} {
		d := base()
		change(d)
		if base().Equal(d) || d.Equal(base()) {
			t.Errorf("%s: changed table compares equal", name)
		}
	}
	// Reals in defaults compare by bits (Value.Equal).
	a, b := base(), base()
	a.Columns[1] = ColumnDef{Name: "n", Type: KindReal, HasDefault: true, Default: Real(0)}
	b.Columns[1] = ColumnDef{Name: "n", Type: KindReal, HasDefault: true, Default: Real(math.Copysign(0, -1))}
	if a.Equal(b) {
		t.Error("defaults 0.0 and -0.0 compare equal")
	}
}
