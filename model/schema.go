package model

import "fmt"

// Schema is the declared shape of a replica's data: its tables, given as
// plain data when the replica is opened (docs/design.md § Data model).
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
	// Resurrection declares the table's resurrection policy, a property of
	// the database replicated as a set_resurrection_policy migration:
	// ResurrectionUndeclared (the zero value) follows whatever the
	// database holds (delete-wins when nothing was ever declared). A
	// declaration contradicting the database's policy makes Open fail
	// with a *SchemaError naming both. Engine.Schema reports the
	// effective policy.
	Resurrection ResurrectionPolicy
}

// ResurrectionPolicy says whether a write newer than a row's tombstone
// revives the row (docs/design.md § Tombstones and resurrection). It is a property of a
// table of the database, not of a replica: declared in the schema and
// carried by a set_resurrection_policy migration, so every device, the
// relay's merged replica and its snapshots apply the same rule.
//
// Merged state does not depend on it: every replica keeps the cells written
// after a row's tombstone (cells at or below it are dropped) whatever the
// policy; the policy decides whether such a row is live. So replicas that
// learned the policy at different times, or learned two concurrent
// declarations in different orders, still hold the same bytes and show the
// same rows.
type ResurrectionPolicy uint8

const (
	// ResurrectionUndeclared: the table declares no policy. A table whose
	// database holds no declaration is delete-wins.
	ResurrectionUndeclared ResurrectionPolicy = iota
	// DeleteWins: a deleted row stays deleted, whatever later writes say,
	// until its tombstone is pruned at the retention horizon (the default).
	DeleteWins
	// ResurrectionAllowed: a write with an HLC above the tombstone revives
	// the row with the cells written after the deletion; writes at or
	// below it stay blocked (JavaScript: allowResurrection: true).
	ResurrectionAllowed
)

// String returns "delete-wins", "allow-resurrection" or "undeclared": the
// names the wire form (package wire) and errors use.
func (p ResurrectionPolicy) String() string {
	switch p {
	case ResurrectionUndeclared:
		return "undeclared"
	case DeleteWins:
		return "delete-wins"
	case ResurrectionAllowed:
		return "allow-resurrection"
	}
	return fmt.Sprintf("ResurrectionPolicy(%d)", uint8(p))
}

// ParseResurrectionPolicy parses "delete-wins" or "allow-resurrection"
// (the names String returns for a declared policy).
func ParseResurrectionPolicy(s string) (ResurrectionPolicy, error) {
	switch s {
	case "delete-wins":
		return DeleteWins, nil
	case "allow-resurrection":
		return ResurrectionAllowed, nil
	}
	return 0, fmt.Errorf("unknown resurrection policy %q (want delete-wins or allow-resurrection)", s)
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
