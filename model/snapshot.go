package model

// SnapshotFormat is the snapshot wire-format version stamped into every
// snapshot header. The engine's ApplySnapshot refuses a stream whose header
// carries another value before touching any local state: stored snapshots
// outlive their sender, and an old one must be refused rather than mis-read
// (docs/design.md § Snapshots).
const SnapshotFormat = 1

// ChunkType names the kind of a SnapshotChunk.
type ChunkType string

// The chunk types, in the only order a stream may carry them:
//
//	header → schema → (table_start → rows* → table_end)* → footer
//
// Schema precedes all table data so every table exists before its rows
// arrive.
const (
	ChunkHeader     ChunkType = "header"
	ChunkSchema     ChunkType = "schema"
	ChunkTableStart ChunkType = "table_start"
	ChunkRows       ChunkType = "rows"
	ChunkTableEnd   ChunkType = "table_end"
	ChunkFooter     ChunkType = "footer"
)

// SnapshotChunk is one piece of a streaming snapshot. Type says which fields
// are set: Header (header), Migrations (schema), Table (table_start, rows,
// table_end), Rows (rows), Footer (footer).
type SnapshotChunk struct {
	Type       ChunkType
	Header     *SnapshotHeader
	Migrations []SchemaMigration
	Table      string
	Rows       []SnapshotRow
	// Offset (rows, table_end) is the number of the table's row entries
	// the stream carried before this chunk (its table_start restarts the
	// count; at table_end, all of them). A receiver refuses a chunk whose
	// offset is not the count it applied, before applying anything of it:
	// a lost or repeated rows chunk would otherwise go unnoticed until the
	// footer, after a replacing apply dropped the local rows the lost
	// chunk carried (engine.ApplySnapshotOptions.Replace) and the table
	// was recorded as complete.
	Offset int64
	Footer *SnapshotFooter
}

// SnapshotHeader opens a snapshot.
type SnapshotHeader struct {
	// Format must equal SnapshotFormat.
	Format int
	// SnapshotID identifies this transfer; a resumed transfer keeps it.
	SnapshotID string
	// SiteID is the sender's site.
	SiteID SiteID
	// HLC is the sender's clock when the snapshot began; it is
	// drift-checked before anything is written.
	HLC HLC
	// Tables lists the tables the stream will carry, in order. A resumed
	// stream lists only the tables still to come.
	Tables []string
	// Rows is the number of row entries the stream will carry (live and
	// tombstoned), for progress; 0 if unknown.
	Rows int64
	// Cursor is the relay's delivery cursor taken before the snapshot's
	// data was read (docs/design.md § Delivery by cursor): everything up to it is in the
	// snapshot, so a client resumes pulling changes after it. 0 when the
	// sender is not a relay.
	Cursor uint64
	// Horizon is the sender's tombstone horizon when the snapshot's data
	// was read: tombstones deleted before this wall time (ms since the
	// Unix epoch) are pruned from it (engine.PruneTombstones), and the
	// receiver prunes its own below it too; 0 for none. A relay's horizon
	// moves only at its horizon marks (wire's "Tombstone horizon").
	Horizon uint64
}

// SnapshotRow is one row's complete CRDT state: every live cell with its
// version, and the tombstone if the row is deleted. A deleted row with no
// live cells still travels, so a bootstrapped replica keeps rejecting stale
// writes for it.
type SnapshotRow struct {
	PK           []Value
	Cells        []SnapshotCell
	HasTombstone bool
	Tombstone    HLC
}

// SnapshotCell is one cell version of a SnapshotRow.
type SnapshotCell struct {
	Column string
	Value  Value
	HLC    HLC
}

// SnapshotFooter closes a snapshot with the counts the receiver checks.
type SnapshotFooter struct {
	Tables int   // tables carried by this stream
	Rows   int64 // row entries carried by this stream
}

// SnapshotCheckpoint is the durable resume position of an interrupted
// snapshot apply (docs/design.md § Snapshots).
// While one exists the replica's data is partial. A client sends it back to
// the relay in resume_snapshot; the relay then streams only the tables not in
// CompletedTables.
type SnapshotCheckpoint struct {
	SnapshotID string
	// SiteID and HLC are the sender's, from the original header.
	SiteID SiteID
	HLC    HLC
	// Cursor is the original header's cursor: the resumed stream reads
	// data live, at or after it, so the original is the safe one to resume
	// pulling from.
	Cursor uint64
	// CompletedTables lists tables whose every row has been applied, in
	// stream order.
	CompletedTables []string
	// RowsApplied counts row entries applied so far, for progress.
	RowsApplied int64
	// CreatedAt is the local wall time (ms) the apply began.
	CreatedAt uint64
	// Replace and KeepOwnAfter are the apply's mode, decided at its
	// header (engine.ApplySnapshotOptions) and kept by a resume, so an
	// interrupted replacing transfer goes on replacing. They are the
	// applying replica's own: resume_snapshot does not carry them, and a
	// checkpoint stored before they existed reads as a merge.
	Replace      bool
	KeepOwnAfter HLC
}
