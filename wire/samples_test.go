package wire

import (
	"math"
	"strconv"
	"testing"

	"github.com/replica-sync/replica/model"
)

// tripsTable is the table of the samples.
func tripsTable() model.TableDef {
	return model.TableDef{
		Name: "trips",
		Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText, NotNull: true},
			{Name: "title", Type: model.KindText, NotNull: true},
			{Name: "budget", Type: model.KindReal, Default: model.Real(0), HasDefault: true},
			{Name: "starts", Type: model.KindTimestamp},
			{Name: "note", Type: model.KindText, Default: model.Null, HasDefault: true},
			{Name: "tags", Type: model.KindJSON, Coerce: true},
		},
		PrimaryKey: []string{"id"},
		Indexes:    []model.IndexDef{{Name: "by_title", Columns: []string{"title"}}},
	}
}

// sampleChangeSets returns two ChangeSets: one creating the table and
// writing a row, one updating and deleting.
func sampleChangeSets(t testing.TB) []model.ChangeSet {
	table := tripsTable()
	base1 := hlcAt(0, 0, 0)
	pk := []model.Value{model.Text("0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")}
	cs1 := model.ChangeSet{
		SiteID:        siteA,
		TransactionID: base1.TransactionID(),
		HLC:           hlcAt(0, 0, 4),
		Migrations: []model.SchemaMigration{
			{Type: model.CreateTable, TableName: "trips", Table: &table, HLC: hlcAt(0, 0, 0)},
		},
		Changes: []model.Change{
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "id", Value: pk[0], HLC: hlcAt(0, 0, 1)},
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "title", Value: model.Text("Lisboa 🚋"), HLC: hlcAt(0, 0, 2)},
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "budget", Value: model.Real(1200), HLC: hlcAt(0, 0, 3)},
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "tags", Value: mustJSON(t, `["sea","tram"]`), HLC: hlcAt(0, 0, 4)},
		},
	}
	base2 := hlcAt(5000, 2, 0)
	cs2 := model.ChangeSet{
		SiteID:        siteA,
		TransactionID: base2.TransactionID(),
		HLC:           hlcAt(5000, 2, 2),
		Changes: []model.Change{
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "budget", Value: model.Int(1350), HLC: hlcAt(5000, 2, 0),
				HasPrior: true, PriorValue: model.Real(1200), PriorHLC: hlcAt(0, 0, 3)},
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "note", Value: model.Null, HLC: hlcAt(5000, 2, 1),
				HasPrior: true, PriorValue: model.Null, PriorHLC: hlcAt(0, 0, 0)},
			{Type: model.RowDeletion, Table: "trips", PK: []model.Value{model.Text("old")}, HLC: hlcAt(5000, 2, 2),
				PriorRow: model.Row{"id": model.Text("old"), "title": model.Text("x"), "starts": model.Int(1764374400000), "tags": mustJSON(t, `"solo"`)}},
		},
	}
	// A ChangeSet of another site, as a relay forwards it.
	hb := model.HLC{Wall: 1764374406000, Counter: 0, Site: siteB}
	cs3 := model.ChangeSet{
		SiteID:        siteB,
		TransactionID: hb.TransactionID(),
		HLC:           hb,
		Changes: []model.Change{
			{Type: model.ColumnChange, Table: "trips", PK: pk, Column: "starts", Value: model.Int(1767225600000), HLC: hb},
		},
	}
	return []model.ChangeSet{cs1, cs2, cs3}
}

// sampleDrops is a ChangeSet of the three drop migrations (protocol
// version 11).
func sampleDrops() model.ChangeSet {
	h := model.HLC{Wall: 1764374407000, Site: siteB}
	at := func(op uint32) model.HLC { x := h; x.OpSeq = op; return x }
	return model.ChangeSet{SiteID: siteB, TransactionID: h.TransactionID(), HLC: at(2), Migrations: []model.SchemaMigration{
		{Type: model.DropIndex, TableName: "trips", Name: "by_title", HLC: at(0)},
		{Type: model.DropColumn, TableName: "trips", Name: "budget", HLC: at(1)},
		{Type: model.DropTable, TableName: "stops", HLC: at(2)},
	}}
}

// sampleAlters is a ChangeSet of alter_column migrations (protocol
// version 12).
func sampleAlters() model.ChangeSet {
	h := model.HLC{Wall: 1764374408000, Site: siteB}
	at := func(op uint32) model.HLC { x := h; x.OpSeq = op; return x }
	return model.ChangeSet{SiteID: siteB, TransactionID: h.TransactionID(), HLC: at(1), Migrations: []model.SchemaMigration{
		{Type: model.AlterColumn, TableName: "trips", Name: "days", HLC: at(0), Alter: &model.ColumnAlter{SetNotNull: true, NotNull: true, SetDefault: true, HasDefault: true, Default: model.Int(1)}},
		{Type: model.AlterColumn, TableName: "trips", Name: "budget", HLC: at(1), Alter: &model.ColumnAlter{SetDefault: true}},
	}}
}

// sampleRenames is a ChangeSet of rename_table migrations (protocol
// version 13).
func sampleRenames() model.ChangeSet {
	h := model.HLC{Wall: 1764374409000, Site: siteB}
	at := func(op uint32) model.HLC { x := h; x.OpSeq = op; return x }
	return model.ChangeSet{SiteID: siteB, TransactionID: h.TransactionID(), HLC: at(1), Migrations: []model.SchemaMigration{
		{Type: model.RenameTable, TableName: "trips", Name: "journeys", HLC: at(0)},
		{Type: model.RenameTable, TableName: "stops", Name: "halts", HLC: at(1)},
	}}
}

func sampleRows(t testing.TB) []model.SnapshotRow {
	pk1 := model.Text("0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")
	return []model.SnapshotRow{
		{PK: []model.Value{pk1}, Cells: []model.SnapshotCell{
			{Column: "id", Value: pk1, HLC: hlcAt(0, 0, 1)},
			{Column: "title", Value: model.Text("Lisboa 🚋"), HLC: hlcAt(0, 0, 2)},
			{Column: "budget", Value: model.Int(1350), HLC: hlcAt(5000, 2, 0)},
			{Column: "tags", Value: mustJSON(t, `["sea","tram"]`), HLC: hlcAt(0, 0, 4)},
		}},
		// A deleted row with no live cells.
		{PK: []model.Value{model.Text("old")}, HasTombstone: true, Tombstone: hlcAt(5000, 2, 2)},
		// A row of another site, with a cell at the end of the opSeq range.
		{PK: []model.Value{model.Text("b")}, Cells: []model.SnapshotCell{
			{Column: "id", Value: model.Text("b"), HLC: model.HLC{Wall: 1764374400001, Site: siteB, OpSeq: math.MaxUint32}},
			{Column: "title", Value: model.Text("Porto"), HLC: model.HLC{Wall: 1764374400001, Site: siteB, OpSeq: 0}},
			{Column: "note", Value: model.Blob([]byte("raw")), HLC: model.HLC{Wall: 1764374400001, Site: siteB, OpSeq: 1}},
		}, HasTombstone: true, Tombstone: hlcAt(1, 0, 0)},
	}
}

func sampleCheckpoint() model.SnapshotCheckpoint {
	return model.SnapshotCheckpoint{
		SnapshotID:      "snap-0193a1b2",
		SiteID:          siteB,
		HLC:             model.HLC{Wall: 1764374500000, Site: siteB},
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
	col := model.ColumnDef{Name: "country", Type: model.KindText, NotNull: true, Default: model.Text(""), HasDefault: true}
	return []namedMessage{
		{"handshake", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", SiteID: siteA, Token: "tok-3f9a",
			Log: siteB, Cursor: 41, Chain: sampleChain(41)}},
		{"handshake_no_token", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "trips", SiteID: siteA}},
		{"handshake_no_chain", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "trips", SiteID: siteA, Log: siteB, Cursor: 4211}},
		{"handshake_horizon", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", SiteID: siteA, Token: "tok-3f9a",
			Log: siteB, Cursor: 41, Chain: sampleChain(41), Horizon: 1764633600000}},
		{"handshake_ack", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", ServerSiteID: siteB, ConnectionID: "c-17",
			SiteHLC: css[0].HLC, SiteHLCStated: true, History: HistoryContinues}},
		{"handshake_ack_new", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "trips", ServerSiteID: siteB, ConnectionID: "c-18",
			SiteHLCStated: true}},
		{"handshake_ack_diverged", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", ServerSiteID: siteB, ConnectionID: "c-19",
			SiteHLC: css[0].HLC, SiteHLCStated: true, History: HistoryDiverged}},
		{"handshake_ack_unverified", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:trips", ServerSiteID: siteB, ConnectionID: "c-20",
			SiteHLC: css[0].HLC, SiteHLCStated: true, History: HistoryUnverified}},
		{"get_changes_initial", &GetChanges{}},
		{"get_changes", &GetChanges{Since: 41}},
		{"get_changes_own", &GetChanges{Since: 41, OwnAbove: css[0].HLC, OwnUpTo: css[1].HLC, OwnStated: true}},
		{"changes", &Changes{Cursor: 43, More: true, ChangeSets: css[:2], Chain: sampleChain(43)}},
		{"changes_caught_up", &Changes{Cursor: 43, Chain: sampleChain(43)}},
		{"apply_changes", &ApplyChanges{RequestID: "apply-3", ChangeSets: css[1:2]}},
		{"apply_changes_no_id", &ApplyChanges{ChangeSets: css[:1]}},
		{"apply_changes_drops", &ApplyChanges{RequestID: "apply-6", ChangeSets: []model.ChangeSet{sampleDrops()}}},
		{"apply_changes_alters", &ApplyChanges{RequestID: "apply-7", ChangeSets: []model.ChangeSet{sampleAlters()}}},
		{"apply_changes_renames", &ApplyChanges{RequestID: "apply-8", ChangeSets: []model.ChangeSet{sampleRenames()}}},
		{"apply_changes_repair", &ApplyChanges{RequestID: "apply-4", Repair: true, ChangeSets: css[2:]}},
		{"apply_result", &ApplyResult{RequestID: "apply-3", ApplyResult: model.ApplyResult{Applied: 2, Skipped: 1, Conflicts: 1, Transactions: 1}}},
		{"apply_result_unknown_table", &ApplyResult{ApplyResult: model.ApplyResult{Applied: 0, Transactions: 2, Held: 7}}},
		{"apply_result_cursor", &ApplyResult{RequestID: "apply-6", ApplyResult: model.ApplyResult{Applied: 3, Transactions: 2},
			First: 42, Cursor: 43, Chain: sampleChain(43)}},
		{"apply_result_horizon", &ApplyResult{RequestID: "apply-7", ApplyResult: model.ApplyResult{Applied: 1, Transactions: 1},
			First: 44, Cursor: 44, Chain: sampleChain(44),
			Horizons: []Horizon{{Cursor: 43, Wall: 1761955200000, Chain: sampleChain(43), SiteHLC: css[0].HLC, SiteHLCStated: true}}}},
		{"push_changes", &PushChanges{Cursor: 44, ChangeSets: css[2:], Chain: sampleChain(44)}},
		{"changes_horizons", &Changes{Cursor: 43, More: true, ChangeSets: css[:2], Chain: sampleChain(43),
			Horizons: []Horizon{{Cursor: 41, Wall: 1761782400000, Chain: sampleChain(41)}, {Cursor: 42, Wall: 1761868800000, Chain: sampleChain(42)}}}},
		{"push_changes_horizon", &PushChanges{Cursor: 44, ChangeSets: css[2:], Chain: sampleChain(44),
			Horizons: []Horizon{{Cursor: 43, Wall: 1761955200000, Chain: sampleChain(43)}}}},
		{"push_changes_horizon_only", &PushChanges{Cursor: 44, Chain: sampleChain(44),
			Horizons: []Horizon{{Cursor: 44, Wall: 1762041600000, Chain: sampleChain(44)}}}},
		{"get_snapshot", &GetSnapshot{}},
		{"resume_snapshot", &ResumeSnapshot{Checkpoint: sampleCheckpoint()}},
		{"snapshot_chunk_header", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
			Format: model.SnapshotFormat, SnapshotID: "snap-0193a1b2", SiteID: siteB, HLC: model.HLC{Wall: 1764374500000, Site: siteB},
			Tables: []string{"trips"}, Rows: 3, Cursor: 4211}}}},
		{"snapshot_chunk_header_horizon", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
			Format: model.SnapshotFormat, SnapshotID: "snap-0193a1b3", SiteID: siteB, HLC: model.HLC{Wall: 1764374500000, Site: siteB},
			Tables: []string{"trips"}, Rows: 3, Cursor: 4211, Horizon: 1761782400000}}}},
		{"snapshot_chunk_schema", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkSchema, Migrations: []model.SchemaMigration{
			{Type: model.CreateTable, TableName: "trips", Table: &table, HLC: hlcAt(0, 0, 0)},
			{Type: model.AddColumn, TableName: "trips", Column: &col, HLC: hlcAt(9000, 0, 0)},
			{Type: model.AddIndex, TableName: "trips", Index: &model.IndexDef{Name: "by_country", Columns: []string{"country", "title"}}, HLC: hlcAt(9000, 0, 1)},
		}}}},
		{"snapshot_chunk_table_start", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkTableStart, Table: "trips"}}},
		{"snapshot_chunk_rows", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "trips", Rows: sampleRows(t)}}},
		{"snapshot_chunk_table_end", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkTableEnd, Table: "trips"}}},
		{"snapshot_chunk_footer", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkFooter, Footer: &model.SnapshotFooter{Tables: 1, Rows: 3}}}},
		{"snapshot_complete", &SnapshotComplete{}},
		{"snapshot_complete_chain", &SnapshotComplete{Cursor: 41, Chain: sampleChain(41)}},
		{"ping", &Ping{}},
		{"pong", &Pong{}},
		{"error_fatal", NewError(CodeProtocolVersionMismatch, "client speaks version %d, relay speaks %d", ProtocolVersion+1, ProtocolVersion)},
		{"handshake_sealed", &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:vault", SiteID: siteA, Sealed: true}},
		{"handshake_ack_sealed", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:vault", ServerSiteID: siteB, ConnectionID: "c-20",
			SiteHLCStated: true, Sealed: true}},
		{"apply_changes_sealed", &ApplyChanges{RequestID: "apply-5", ChangeSets: []model.ChangeSet{sampleSealed(css[1])}}},
		{"push_changes_sealed", &PushChanges{Cursor: 45, ChangeSets: []model.ChangeSet{sampleSealed(css[2])}, Chain: sampleChain(45)}},
		{"handshake_ack_checkpoint", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "acme:vault", ServerSiteID: siteB, ConnectionID: "c-21",
			SiteHLCStated: true, Sealed: true, CheckpointCursor: 4211, CheckpointAt: 1764374501234}},
		{"put_checkpoint", &PutCheckpoint{sampleCheckpointPart(0, false)}},
		{"checkpoint_part_last", &CheckpointPartMessage{sampleCheckpointPart(7, true)}},
		{"get_snapshot_checkpoint", &GetSnapshot{CheckpointID: "c4211-5f0e", FromPart: 12}},
		{"checkpoint_result", &CheckpointResult{CheckpointID: "c4211-5f0e", Part: 0}},
		{"checkpoint_result_stored", &CheckpointResult{CheckpointID: "c4211-5f0e", Part: 7, Stored: true}},
		{"error_sealed_mismatch", NewError(CodeSealedMismatch, "database %q is sealed: connect with its key", "acme:vault")},
		{"error_transient", &Error{Code: CodeApplyChangesError, Message: "clock drift: remote time is 61000 ms ahead", RequestID: "apply-4"}},
	}
}

// sampleSealed returns cs as a sealed ChangeSet: its visible members and
// an envelope-shaped byte string (version 1, a key id, a nonce, 24 bytes
// standing for ciphertext and tag). Real envelopes, sealed and opened, are
// in testdata/envelopes.json (package seal's test).
func sampleSealed(cs model.ChangeSet) model.ChangeSet {
	env := []byte{EnvelopeVersion}
	for i := 0; i < EnvelopeHeaderSize-1+24; i++ {
		env = append(env, byte(i*37+11))
	}
	return model.ChangeSet{SiteID: cs.SiteID, TransactionID: cs.TransactionID, HLC: cs.HLC, Envelope: env}
}

// sampleCheckpointPart returns part n of a sample sealed checkpoint.
func sampleCheckpointPart(n uint32, last bool) CheckpointPart {
	env := sampleSealed(model.ChangeSet{}).Envelope
	return CheckpointPart{CheckpointID: "c4211-5f0e", SiteID: siteA, HLC: hlcAt(9000, 0, 0), Cursor: 4211, Part: n, Last: last, Envelope: env}
}

// sampleChain is a chain value standing for the one at cursor n of a
// sample log.
func sampleChain(n int) Chain {
	return GenesisChain.Next(siteB, "sample:"+strconv.Itoa(n))
}
