package model

// ChangeType says what a Change records.
type ChangeType uint8

const (
	// ColumnChange sets one cell: (table, pk, column) = value at hlc.
	ColumnChange ChangeType = iota + 1
	// RowDeletion tombstones a row: (table, pk) deleted at hlc.
	RowDeletion
)

func (t ChangeType) String() string {
	switch t {
	case ColumnChange:
		return "column"
	case RowDeletion:
		return "delete"
	}
	return "invalid"
}

// Change is one fact of a transaction: a column change or a row deletion
// (docs/design.md § Changes and ChangeSets).
//
// The primary key is the row's address: its values in the table's
// primary-key column order. For a ColumnChange, Column names the cell and
// Value is its new value; writing a row also writes its primary-key columns
// as cells, so a row with only key columns still travels.
//
// Before-images are best-effort and never affect merging by default LWW:
// HasPrior, PriorValue and PriorHLC carry the cell version this write
// replaced at its origin (absent on a cell's first write); PriorRow carries
// the last row image a deletion removed (nil when unknown). Text, JSON and
// blob values longer than 4 KiB are never kept as before-images (a prior
// value is dropped, a row image omits the column), so a row that fits the
// store can always be rewritten. A custom ConflictResolver sees them.
type Change struct {
	Type   ChangeType
	Table  string
	PK     []Value
	Column string // ColumnChange only
	Value  Value  // ColumnChange only
	HLC    HLC

	HasPrior   bool  // ColumnChange: PriorValue and PriorHLC are set
	PriorValue Value // ColumnChange: the value this write replaced
	PriorHLC   HLC   // ColumnChange: the HLC of the replaced version
	PriorRow   Row   // RowDeletion: the row image before deletion, or nil
}

// ChangeSet is every fact of one transaction of one site, never split and
// never merged with another (docs/design.md § Changes and ChangeSets).
//
//   - SiteID is the origin replica; every fact's HLC carries it.
//   - TransactionID is HLC.TransactionID() of the base, the same on every
//     peer.
//   - HLC is the maximum fact HLC (the last opSeq): the commit boundary a
//     watermark may rest on.
//   - Migrations come first (lowest opSeqs), then Changes, each in opSeq
//     order.
//   - Envelope, when not nil, is a sealed ChangeSet (docs/design.md §
//     Sealed databases; wire's "Envelopes"): the AES-GCM envelope of the
//     ChangeSet's wire form, sealed under a key the relay never sees, and
//     Migrations and Changes are empty. SiteID, TransactionID and HLC stay
//     visible (the envelope's associated data binds them). The engine
//     never applies a sealed ChangeSet: a client opens it first.
type ChangeSet struct {
	SiteID        SiteID
	TransactionID string
	HLC           HLC
	Migrations    []SchemaMigration
	Changes       []Change
	Envelope      []byte
}

// Sealed reports whether cs is a sealed ChangeSet (Envelope set).
func (cs *ChangeSet) Sealed() bool { return cs.Envelope != nil }

// MigrationType names a schema migration.
type MigrationType string

// The migrations Replica records and replicates. Altering a column's type
// is not supported.
const (
	CreateTable MigrationType = "create_table"
	AddColumn   MigrationType = "add_column"
	AddIndex    MigrationType = "add_index"
	// DropTable, DropColumn and DropIndex retire a table, a column of a
	// table or an index of a table for good (docs/design.md § Schema
	// migrations, "most destructive wins"): a drop wins over every
	// definition of the same name, whatever their HLCs and arrival
	// order, and a dropped name is never defined again. DropColumn and
	// DropIndex carry the name in SchemaMigration.Name; a key column is
	// never dropped (such a drop has no effect).
	DropTable  MigrationType = "drop_table"
	DropColumn MigrationType = "drop_column"
	DropIndex  MigrationType = "drop_index"
	// AlterColumn changes a column's notNull or default (SchemaMigration.Name
	// names the column, SchemaMigration.Alter says what changes): per
	// attribute, the alter_column with the highest HLC wins. A column's
	// type is never altered, nor a key column.
	AlterColumn MigrationType = "alter_column"
	// RenameTable gives a table a new name (SchemaMigration.Name), the
	// table named in TableName by its identity: the name it was created
	// with, which rows, changes and migrations keep naming (docs/design.md
	// § Schema migrations, "Renaming tables"). Per table, the rename with
	// the highest HLC names it; a drop wins over every rename; a name,
	// once a table's, stays that table's (a create_table or a rename of
	// another table that takes it joins the two tables).
	RenameTable MigrationType = "rename_table"
	// SetResurrectionPolicy declares a table's resurrection policy
	// (TableDef.Resurrection). The first declaration of a table (lowest
	// HLC) is its policy for good; a later, contradicting one is kept but
	// has no effect, as for a column declared twice with two types.
	SetResurrectionPolicy MigrationType = "set_resurrection_policy"
)

// SchemaMigration is one schema change, stamped with an HLC and carried in
// the ChangeSet of the transaction that made it, before its data
// (docs/design.md § Schema migrations). Exactly one of Table (CreateTable),
// Column (AddColumn), Index (AddIndex), Resurrection
// (SetResurrectionPolicy) and Name (DropColumn, DropIndex) is set, and
// none for DropTable; an AlterColumn sets Name and Alter. TableName names
// the table in every case (a RenameTable's: by its identity, the name it
// was created with; Name is its new name). A
// CreateTable's Table carries no Resurrection: the policy travels in its
// own migration.
type SchemaMigration struct {
	Type         MigrationType
	TableName    string
	Table        *TableDef          // CreateTable: the whole definition
	Column       *ColumnDef         // AddColumn
	Index        *IndexDef          // AddIndex
	Resurrection ResurrectionPolicy // SetResurrectionPolicy: DeleteWins or ResurrectionAllowed
	Name         string             // DropColumn, DropIndex: the column or index dropped; AlterColumn: the column altered; RenameTable: the new name
	Alter        *ColumnAlter       // AlterColumn: what changes
	HLC          HLC
}

// ColumnAlter is what an alter_column migration changes: the attributes it
// sets (SetNotNull, SetDefault); the others are left as they are. With
// SetDefault, HasDefault false removes the column's default, and
// HasDefault true makes Default (null allowed when the column is not
// notNull) the default.
type ColumnAlter struct {
	SetNotNull bool
	NotNull    bool
	SetDefault bool
	HasDefault bool
	Default    Value
}

// ApplyResult counts what ApplyChanges did (docs/design.md § Applying changes).
type ApplyResult struct {
	// Applied counts changes that changed local state (migrations
	// included). A cell written after its row's tombstone is stored and
	// counted here under either resurrection policy (under delete-wins the
	// row stays deleted: see ResurrectionPolicy).
	Applied int
	// Skipped counts changes that did not: older than the local version,
	// equal to it, at or below the row's tombstone, or this replica's own
	// echo.
	Skipped int
	// Conflicts counts column changes that met a concurrent local version
	// of the same cell with a different value, whichever won. Not
	// concurrent: the same fact again, a version minted by the same site
	// (its later write superseded its earlier one, in whichever order they
	// arrive), or one whose before-image is the other.
	Conflicts int
	// Held counts the changes held instead of applied (or, under the
	// engine's Drop policy, dropped): for tables outside the local
	// schema, for columns not defined yet, and those whose key or value
	// does not fit their table (engine.HeldReason). The wire's
	// apply_result carries it as "unknownTable", the field's name before
	// (a wire format name: it stays).
	Held int
	// Transactions counts ChangeSets processed (own echoes excluded).
	Transactions int
}
