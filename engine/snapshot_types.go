package engine

// SnapshotFormat is the snapshot wire-format version stamped into every
// snapshot header. ApplySnapshot refuses a stream whose header carries
// another value before touching any local state (sync.md § Snapshot
// wire-format version).
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
	Footer     *SnapshotFooter
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
