package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SchemaError describes an invalid schema declaration or one that
// contradicts the stored schema. Table, Column and Index name the object
// (empty when not applicable); Reason says what is wrong. errors.Is(err,
// ErrSchema) is true for every *SchemaError.
type SchemaError struct {
	Table  string
	Column string
	Index  string
	Reason string
}

// Error returns "invalid schema: table "t" column "c": reason", naming only
// the objects that are set.
func (e *SchemaError) Error() string {
	var b strings.Builder
	b.WriteString("invalid schema")
	sep := ": "
	if e.Table != "" {
		fmt.Fprintf(&b, ": table %q", e.Table)
		sep = " "
	}
	if e.Column != "" {
		fmt.Fprintf(&b, "%scolumn %q", sep, e.Column)
		sep = " "
	}
	if e.Index != "" {
		fmt.Fprintf(&b, "%sindex %q", sep, e.Index)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// MaxNameLen is the longest table, column or index name, in bytes.
const MaxNameLen = 64

// ValidName reports whether s is a valid table, column or index name: an
// ASCII letter or underscore, then up to 63 ASCII letters, digits or
// underscores (^[A-Za-z_][A-Za-z0-9_]{0,63}$). Names are case-sensitive.
// The relay checks incoming table names with it.
//
//go:noinline
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Validate checks a declared schema and returns a normalized deep copy of
// it, sharing no slices with s. An invalid schema returns a *SchemaError
// (matching ErrSchema) naming the first offending table, column or index.
//
// Rules:
//   - At least one table. Table names are unique in the schema; column and
//     index names unique within their table (case-sensitively). Every name
//     passes ValidName.
//   - A column's Type is one of the seven column kinds (not KindNull).
//   - An empty PrimaryKey means the text key "id": when no column "id" is
//     declared, ColumnDef{Name: "id", Type: KindText, NotNull: true} is
//     prepended; PrimaryKey becomes ["id"].
//   - Key columns exist, appear once, are not json, and are made NotNull.
//   - An index lists at least one column, each existing and appearing once.
//   - Resurrection is ResurrectionUndeclared, DeleteWins or
//     ResurrectionAllowed.
//   - A default (HasDefault) must be a valid value of the column: it goes
//     through the same validation and coercion as a written value (so with
//     Coerce, Text("42") becomes Int(42) in the copy), and may not be null on
//     a NotNull column. A non-null Default without HasDefault is an error,
//     not silently ignored.
func (s Schema) Validate() (Schema, error) {
	if len(s.Tables) == 0 {
		return Schema{}, &SchemaError{Reason: "no tables declared"}
	}
	out := Schema{Tables: make([]TableDef, len(s.Tables))}
	for i := range s.Tables {
		t, err := validateTableDef(&s.Tables[i])
		if err != nil {
			return Schema{}, err
		}
		for j := range i {
			if out.Tables[j].Name == t.Name {
				return Schema{}, &SchemaError{Table: t.Name, Reason: "declared twice"}
			}
		}
		out.Tables[i] = t
	}
	return out, nil
}

// validateTableDef checks one table (the rules of Schema.Validate) and
// returns its normalized deep copy. The phases run in order: columns (names
// and types first, so defaults see the final NotNull), the primary key,
// defaults, indexes.
func validateTableDef(in *TableDef) (TableDef, error) {
	if !ValidName(in.Name) {
		return TableDef{}, &SchemaError{Table: in.Name, Reason: invalidNameReason("table", in.Name)}
	}
	if in.Resurrection > ResurrectionAllowed {
		return TableDef{}, tableError(in.Name, "", "", "invalid resurrection policy %s (want ResurrectionUndeclared, DeleteWins or ResurrectionAllowed)", in.Resurrection)
	}
	t := TableDef{
		Name:         in.Name,
		Columns:      make([]ColumnDef, 0, len(in.Columns)+1),
		PrimaryKey:   slices.Clone(in.PrimaryKey),
		Indexes:      make([]IndexDef, 0, len(in.Indexes)),
		Coerce:       in.Coerce,
		Resurrection: in.Resurrection,
	}
	for _, phase := range []func(t, in *TableDef) error{
		validateColumns, validatePrimaryKey, validateDefaults, validateIndexes,
	} {
		if err := phase(&t, in); err != nil {
			return TableDef{}, err
		}
	}
	return t, nil
}

// tableError returns the *SchemaError of table, naming col or idx when set.
//
//go:noinline
func tableError(table, col, idx, format string, args ...any) error {
	return &SchemaError{Table: table, Column: col, Index: idx, Reason: fmt.Sprintf(format, args...)}
}

// validateColumns checks in's column names and types and appends the
// columns to t.
func validateColumns(t, in *TableDef) error {
	for i := range in.Columns {
		c := in.Columns[i]
		if !ValidName(c.Name) {
			return tableError(in.Name, c.Name, "", "%s", invalidNameReason("column", c.Name))
		}
		if schemaColumnIndex(t.Columns, c.Name) >= 0 {
			return tableError(in.Name, c.Name, "", "declared twice")
		}
		if c.Type <= KindNull || c.Type > KindBlob {
			return tableError(in.Name, c.Name, "", "invalid type %s (want text, integer, real, boolean, blob, json or timestamp)", c.Type)
		}
		t.Columns = append(t.Columns, c)
	}
	return nil
}

// validatePrimaryKey fills in the default "id" key, checks the key columns
// and makes them NotNull.
func validatePrimaryKey(t, in *TableDef) error {
	if len(t.PrimaryKey) == 0 {
		if schemaColumnIndex(t.Columns, "id") < 0 {
			// Not slices.Insert: its instantiation for ColumnDef costs
			// about 5 KB of wasm code.
			t.Columns = append([]ColumnDef{{Name: "id", Type: KindText, NotNull: true}}, t.Columns...)
		}
		t.PrimaryKey = []string{"id"}
	}
	for i, name := range t.PrimaryKey {
		ci := schemaColumnIndex(t.Columns, name)
		if ci < 0 {
			return tableError(in.Name, name, "", "primary key column is not declared")
		}
		if slices.Index(t.PrimaryKey[:i], name) >= 0 {
			return tableError(in.Name, name, "", "listed twice in the primary key")
		}
		// JSON text is compacted but not canonical: {"a":1,"b":2} and
		// {"b":2,"a":1}, or 1 and 1.0, are one JSON value with two
		// encodings, so two replicas could address "the same" row by
		// different keys. Blobs and reals are exact and allowed (reals
		// compare -0 and +0 as distinct keys).
		if t.Columns[ci].Type == KindJSON {
			return tableError(in.Name, name, "", "a json column cannot be part of the primary key")
		}
		t.Columns[ci].NotNull = true
	}
	return nil
}

// validateDefaults checks each column's default and replaces it with its
// coerced form.
func validateDefaults(t, in *TableDef) error {
	for i := range t.Columns {
		c := &t.Columns[i]
		if !c.HasDefault {
			if !c.Default.IsNull() {
				return tableError(in.Name, c.Name, "", "Default is set but HasDefault is false")
			}
			continue
		}
		if c.Default.IsNull() {
			if c.NotNull {
				return tableError(in.Name, c.Name, "", "null default on a NOT NULL column")
			}
			continue
		}
		v, err := CoerceValue(t, c, c.Default)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				return tableError(in.Name, c.Name, "", "invalid default: %s", ve.Reason)
			}
			return tableError(in.Name, c.Name, "", "invalid default: %v", err)
		}
		c.Default = v
	}
	return nil
}

// validateIndexes checks in's indexes against t's columns and appends
// copies of them to t.
func validateIndexes(t, in *TableDef) error {
	for i := range in.Indexes {
		x := in.Indexes[i]
		if !ValidName(x.Name) {
			return tableError(in.Name, "", x.Name, "%s", invalidNameReason("index", x.Name))
		}
		for j := range t.Indexes {
			if t.Indexes[j].Name == x.Name {
				return tableError(in.Name, "", x.Name, "declared twice")
			}
		}
		if len(x.Columns) == 0 {
			return tableError(in.Name, "", x.Name, "no columns")
		}
		for k, col := range x.Columns {
			if schemaColumnIndex(t.Columns, col) < 0 {
				return tableError(in.Name, "", x.Name, "column %q is not declared", col)
			}
			if slices.Index(x.Columns[:k], col) >= 0 {
				return tableError(in.Name, "", x.Name, "column %q listed twice", col)
			}
		}
		t.Indexes = append(t.Indexes, IndexDef{Name: x.Name, Columns: slices.Clone(x.Columns)})
	}
	return nil
}

// invalidNameReason says why name is not a valid name of a what (out of
// line: it runs on failures only).
//
//go:noinline
func invalidNameReason(what, name string) string {
	if name == "" {
		return what + " name is empty"
	}
	return fmt.Sprintf("invalid %s name %q (want a letter or _, then up to %d letters, digits or _)", what, name, MaxNameLen-1)
}

// schemaColumnIndex returns the position of the column named name, or -1.
func schemaColumnIndex(cols []ColumnDef, name string) int {
	for i := range cols {
		if cols[i].Name == name {
			return i
		}
	}
	return -1
}

// Equal reports whether t and o declare the same table: same name, Coerce,
// columns (in order, by ColumnDef.Equal), primary key and indexes (in
// order). Compare normalized definitions (Schema.Validate): an omitted "id"
// key and a declared one differ before normalization. Two nils are equal.
func (t *TableDef) Equal(o *TableDef) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.Name == o.Name && t.Coerce == o.Coerce &&
		slices.Equal(t.PrimaryKey, o.PrimaryKey) &&
		slices.EqualFunc(t.Columns, o.Columns, func(a, b ColumnDef) bool { return a.Equal(&b) }) &&
		slices.EqualFunc(t.Indexes, o.Indexes, func(a, b IndexDef) bool { return a.Equal(&b) })
}

// Equal reports whether c and o declare the same column: name, type,
// NotNull, Coerce, and the default (HasDefault, and Default by Value.Equal
// when set). Two nils are equal.
func (c *ColumnDef) Equal(o *ColumnDef) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Name == o.Name && c.Type == o.Type && c.NotNull == o.NotNull &&
		c.Coerce == o.Coerce && c.HasDefault == o.HasDefault &&
		(!c.HasDefault || c.Default.Equal(o.Default))
}

// Equal reports whether x and o declare the same index: name and columns in
// order. Two nils are equal.
func (x *IndexDef) Equal(o *IndexDef) bool {
	if x == nil || o == nil {
		return x == o
	}
	return x.Name == o.Name && slices.Equal(x.Columns, o.Columns)
}
