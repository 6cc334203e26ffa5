package wire

import (
	"math"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// tripsTable is the table of the samples.
func tripsTable() engine.TableDef {
	return engine.TableDef{
		Name: "trips",
		Columns: []engine.ColumnDef{
			{Name: "id", Type: engine.KindText, NotNull: true},
			{Name: "title", Type: engine.KindText, NotNull: true},
			{Name: "budget", Type: engine.KindReal, Default: engine.Real(0), HasDefault: true},
			{Name: "starts", Type: engine.KindTimestamp},
			{Name: "note", Type: engine.KindText, Default: engine.Null, HasDefault: true},
			{Name: "tags", Type: engine.KindJSON, Coerce: true},
		},
		PrimaryKey: []string{"id"},
		Indexes:    []engine.IndexDef{{Name: "by_title", Columns: []string{"title"}}},
	}
}

// sampleChangeSets returns two ChangeSets: one creating the table and
// writing a row, one updating and deleting.
func sampleChangeSets(t testing.TB) []engine.ChangeSet {
	table := tripsTable()
	base1 := hlcAt(0, 0, 0)
	pk := []engine.Value{engine.Text("0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")}
	cs1 := engine.ChangeSet{
		SiteID:        siteA,
		TransactionID: base1.TransactionID(),
		HLC:           hlcAt(0, 0, 4),
		Migrations: []engine.SchemaMigration{
			{Type: engine.CreateTable, TableName: "trips", Table: &table, HLC: hlcAt(0, 0, 0)},
		},
		Changes: []engine.Change{
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "id", Value: pk[0], HLC: hlcAt(0, 0, 1)},
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "title", Value: engine.Text("Lisboa 🚋"), HLC: hlcAt(0, 0, 2)},
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "budget", Value: engine.Real(1200), HLC: hlcAt(0, 0, 3)},
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "tags", Value: mustJSON(t, `["sea","tram"]`), HLC: hlcAt(0, 0, 4)},
		},
	}
	base2 := hlcAt(5000, 2, 0)
	cs2 := engine.ChangeSet{
		SiteID:        siteA,
		TransactionID: base2.TransactionID(),
		HLC:           hlcAt(5000, 2, 2),
		Changes: []engine.Change{
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "budget", Value: engine.Int(1350), HLC: hlcAt(5000, 2, 0),
				HasPrior: true, PriorValue: engine.Real(1200), PriorHLC: hlcAt(0, 0, 3)},
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "note", Value: engine.Null, HLC: hlcAt(5000, 2, 1),
				HasPrior: true, PriorValue: engine.Null, PriorHLC: hlcAt(0, 0, 0)},
			{Type: engine.RowDeletion, Table: "trips", PK: []engine.Value{engine.Text("old")}, HLC: hlcAt(5000, 2, 2),
				PriorRow: engine.Row{"id": engine.Text("old"), "title": engine.Text("x"), "starts": engine.Int(1764374400000), "tags": mustJSON(t, `"solo"`)}},
		},
	}
	// A ChangeSet of another site, as a relay forwards it.
	hb := engine.HLC{Wall: 1764374406000, Counter: 0, Site: siteB}
	cs3 := engine.ChangeSet{
		SiteID:        siteB,
		TransactionID: hb.TransactionID(),
		HLC:           hb,
		Changes: []engine.Change{
			{Type: engine.ColumnChange, Table: "trips", PK: pk, Column: "starts", Value: engine.Int(1767225600000), HLC: hb},
		},
	}
	return []engine.ChangeSet{cs1, cs2, cs3}
}

func sampleRows(t testing.TB) []engine.SnapshotRow {
	pk1 := engine.Text("0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")
	return []engine.SnapshotRow{
		{PK: []engine.Value{pk1}, Cells: []engine.SnapshotCell{
			{Column: "id", Value: pk1, HLC: hlcAt(0, 0, 1)},
			{Column: "title", Value: engine.Text("Lisboa 🚋"), HLC: hlcAt(0, 0, 2)},
			{Column: "budget", Value: engine.Int(1350), HLC: hlcAt(5000, 2, 0)},
			{Column: "tags", Value: mustJSON(t, `["sea","tram"]`), HLC: hlcAt(0, 0, 4)},
		}},
		// A deleted row with no live cells.
		{PK: []engine.Value{engine.Text("old")}, HasTombstone: true, Tombstone: hlcAt(5000, 2, 2)},
		// A row of another site, with a cell at the end of the opSeq range.
		{PK: []engine.Value{engine.Text("b")}, Cells: []engine.SnapshotCell{
			{Column: "id", Value: engine.Text("b"), HLC: engine.HLC{Wall: 1764374400001, Site: siteB, OpSeq: math.MaxUint32}},
			{Column: "title", Value: engine.Text("Porto"), HLC: engine.HLC{Wall: 1764374400001, Site: siteB, OpSeq: 0}},
			{Column: "note", Value: engine.Blob([]byte("raw")), HLC: engine.HLC{Wall: 1764374400001, Site: siteB, OpSeq: 1}},
		}, HasTombstone: true, Tombstone: hlcAt(1, 0, 0)},
	}
}

func sampleCheckpoint() engine.SnapshotCheckpoint {
	return engine.SnapshotCheckpoint{
		SnapshotID:      "snap-0193a1b2",
		SiteID:          siteB,
		HLC:             engine.HLC{Wall: 1764374500000, Site: siteB},
		Cursor:          4211,
		CompletedTables: []string{"trips"},
		RowsApplied:     1200,
		CreatedAt:       1764374501234,
	}
}

type namedMessage struct {
	name string
	m    Message
}

// sampleMessages returns one or more instances of every message type; the
// golden files under testdata/golden are their frames.
func sampleMessages(t testing.TB) []namedMessage {
	css := sampleChangeSets(t)
	table := tripsTable()
	col := engine.ColumnDef{Name: "country", Type: engine.KindText, NotNull: true, Default: engine.Text(""), HasDefault: true}
	return []namedMessage{
		{"handshake", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", SiteID: siteA, Token: "tok-3f9a"}},
		{"handshake_no_token", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "trips", SiteID: siteA}},
		{"handshake_ack", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", ServerSiteID: siteB, ConnectionID: "c-17"}},
		{"get_changes_initial", &GetChanges{}},
		{"get_changes", &GetChanges{Since: 41}},
		{"changes", &Changes{Cursor: 43, More: true, ChangeSets: css[:2]}},
		{"changes_caught_up", &Changes{Cursor: 43}},
		{"apply_changes", &ApplyChanges{RequestID: "apply-3", ChangeSets: css[1:2]}},
		{"apply_changes_no_id", &ApplyChanges{ChangeSets: css[:1]}},
		{"apply_result", &ApplyResult{RequestID: "apply-3", ApplyResult: engine.ApplyResult{Applied: 2, Skipped: 1, Conflicts: 1, Transactions: 1}}},
		{"apply_result_unknown_table", &ApplyResult{ApplyResult: engine.ApplyResult{Applied: 0, Transactions: 2, UnknownTable: 7}}},
		{"push_changes", &PushChanges{Cursor: 44, ChangeSets: css[2:]}},
		{"get_snapshot", &GetSnapshot{}},
		{"resume_snapshot", &ResumeSnapshot{Checkpoint: sampleCheckpoint()}},
		{"snapshot_chunk_header", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkHeader, Header: &engine.SnapshotHeader{
			Format: engine.SnapshotFormat, SnapshotID: "snap-0193a1b2", SiteID: siteB, HLC: engine.HLC{Wall: 1764374500000, Site: siteB},
			Tables: []string{"trips"}, Rows: 3, Cursor: 4211}}}},
		{"snapshot_chunk_schema", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkSchema, Migrations: []engine.SchemaMigration{
			{Type: engine.CreateTable, TableName: "trips", Table: &table, HLC: hlcAt(0, 0, 0)},
			{Type: engine.AddColumn, TableName: "trips", Column: &col, HLC: hlcAt(9000, 0, 0)},
			{Type: engine.AddIndex, TableName: "trips", Index: &engine.IndexDef{Name: "by_country", Columns: []string{"country", "title"}}, HLC: hlcAt(9000, 0, 1)},
		}}}},
		{"snapshot_chunk_table_start", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkTableStart, Table: "trips"}}},
		{"snapshot_chunk_rows", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkRows, Table: "trips", Rows: sampleRows(t)}}},
		{"snapshot_chunk_table_end", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkTableEnd, Table: "trips"}}},
		{"snapshot_chunk_footer", &SnapshotChunk{Chunk: engine.SnapshotChunk{Type: engine.ChunkFooter, Footer: &engine.SnapshotFooter{Tables: 1, Rows: 3}}}},
		{"snapshot_complete", &SnapshotComplete{}},
		{"ping", &Ping{}},
		{"pong", &Pong{}},
		{"error_fatal", NewError(CodeProtocolVersionMismatch, "client speaks version %d, relay speaks %d", 2, ProtocolVersion)},
		{"error_transient", &Error{Code: CodeApplyChangesError, Message: "clock drift: remote time is 61000 ms ahead", RequestID: "apply-4"}},
	}
}
