package engine

// Schema is the declared shape of a replica's data: its tables, given as
// plain data when the replica is opened (DESIGN.md § The data model).
type Schema struct {
	Tables []TableDef
}

// TableDef declares one table.
//
// PrimaryKey lists the key columns in key order. When it is empty the key is
// a text column "id" (added as the first column if not declared), which a
// write that omits it fills with a new UUIDv7. Composite keys are allowed;
// key values are never null.
type TableDef struct {
	Name       string
	Columns    []ColumnDef
	PrimaryKey []string
	Indexes    []IndexDef
	// Coerce allows lossy-but-obvious conversions for every column of the
	// table ("42" into an integer column, 1 into a boolean column); see
	// ColumnDef.Coerce.
	Coerce bool
}

// ColumnDef declares one column.
type ColumnDef struct {
	Name string
	// Type is the column's kind; KindNull is not a column type.
	Type Kind
	// NotNull rejects null (explicit, or an omitted column without a
	// default) on insert and update.
	NotNull bool
	// Default is used on insert when the column is omitted. HasDefault
	// distinguishes a null default from none.
	Default    Value
	HasDefault bool
	// Coerce allows conversions from other JSON-like types: numeric text
	// into integer and real, numbers and booleans into text, 0/1 and
	// "true"/"false" into boolean, ISO 8601 text into timestamp. Without
	// it such writes are validation errors. Conversions that lose nothing
	// (an integral float into an integer column, an integer into a real
	// column) never need it.
	Coerce bool
}

// IndexDef declares a secondary index over one or more columns, used by
// queries whose filters or order fit its leading columns.
type IndexDef struct {
	Name    string
	Columns []string
}
