// Package model is Replica's data model: the types every part of the system
// shares — the engine that stores them, the wire protocol that carries them,
// the client, the relay and the JavaScript bridge — with their validation,
// order, JSON forms and errors, and nothing else. Besides the standard
// library it imports only two internal packages without module imports of
// their own (internal/jsontext, the JSON tokenizer and writer, and
// internal/rawvalue, which hands the engine's storage codecs an unchecked
// Value constructor), so a package that encodes or forwards changes (the
// wire protocol, a relay backed by another database) does not link the
// storage engine. Package
// engine re-exports every name here (engine.HLC is model.HLC, …) for one
// release.
//
// # Lineage
//
// The model follows the replication design of quereus-sync (its documents
// sync.md and sync-protocol.md): column-level last-writer-wins merging of
// facts stamped with hybrid logical clocks, tombstones, one ChangeSet per
// transaction, schema migrations that replicate like data, and streaming
// snapshots. Where a rule comes from a section of that design, the section
// is named below; each rule is stated here in full, so the design documents
// are background, not prerequisites.
//
// # Sites and clocks
//
// A SiteID is 16 random bytes naming one replica, generated once when the
// replica is created; its text form is 22 characters of base64url without
// padding. An HLC (hybrid logical clock timestamp, the design's "Hybrid
// Logical Clock") is (Wall, Counter, Site, OpSeq):
//
//   - Wall: physical time, milliseconds since the Unix epoch (uint64);
//   - Counter: orders events within one millisecond (uint16, 0–65535);
//   - Site: the replica that minted it;
//   - OpSeq: the fact's position inside its transaction, from 0 (uint32).
//
// HLCs order lexicographically by those four fields: a later wall time is
// newer, equal wall times order by counter, ties break by site id, and the
// facts of one transaction order by opSeq. The zero HLC sorts first and
// means "none". One local transaction ticks the clock once; all its facts
// share (Wall, Counter, Site), the transaction's base, and its
// TransactionID, "wall:counter:site", is derived from the base, so every
// peer computes the same id from the same facts (the design's
// "Deterministic transaction id").
//
// The binary encoding, Bytes, is 30 bytes, big-endian:
//
//	bytes 0–7    Wall
//	bytes 8–9    Counter
//	bytes 10–25  Site
//	bytes 26–29  OpSeq
//
// so bytes.Compare of two encodings equals HLC.Compare. The first 26 bytes
// (BaseSize, PutBase) are the transaction's base. A remote HLC whose wall
// time is more than MaxDrift (60 000 ms) ahead of the local clock is refused
// with a *DriftError before anything is written (the design's "Clock-drift
// bound"): a peer with a wrong clock would otherwise mint winners that beat
// every later write.
//
// # Values
//
// A Value is one typed cell: null, boolean, integer (int64), real (float64,
// finite), timestamp (int64 milliseconds since the Unix epoch, UTC, within
// ±MaxTimestampMillis, a JavaScript Date's range), text (UTF-8), JSON
// (compact JSON text, nested at most MaxJSONDepth deep) or blob (bytes). The
// zero Value is null; Values are immutable. Compare is the total order of
// keys and indexes: kinds rank null < boolean < number < timestamp < text <
// json < blob, integers and reals compare numerically with each other, text,
// JSON and blobs bytewise.
//
// CoerceValue turns a Go value (from the Go API or the JavaScript bridge)
// into a column's Value, converting only what the column's Coerce flag
// allows; NormalizeRemote turns a peer's value into the form its origin
// stored, without ever failing. A Row is a row's values by column name.
//
// # Schemas
//
// A Schema is plain data: tables (TableDef) with columns (ColumnDef: name,
// Kind, NotNull, default, Coerce), a primary key (by default a text column
// "id"), secondary indexes (IndexDef) and a ResurrectionPolicy. Names match
// ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (ValidName). Schema.Validate checks a
// declaration and returns its normalized copy, or a *SchemaError. The
// resurrection policy (the design's "Resurrection Policy") decides whether a
// write newer than a row's tombstone revives it: DeleteWins (the default;
// allowResurrection: false in JavaScript) or ResurrectionAllowed.
//
// # Changes
//
// A Change is one fact: a ColumnChange sets (table, primary key, column) to
// a value at an HLC; a RowDeletion tombstones (table, primary key) at an HLC.
// Merging is column-level last-writer-wins: the greatest HLC wins per cell;
// a tombstone drops every cell write at or below it, and under DeleteWins
// keeps the row deleted whatever later writes say. A ChangeSet is
// every fact of one transaction of one site, never split and never merged
// with another (the design's "Transaction-Based Change Grouping"): its
// schema migrations (SchemaMigration: create_table, add_column, add_index,
// set_resurrection_policy) first, then its changes, in opSeq order; its HLC
// is the greatest fact HLC. ApplyResult counts what applying ChangeSets did.
//
// # Snapshots
//
// A snapshot is a replica's complete state as a stream of SnapshotChunks in
// one order:
//
//	header → schema → (table_start → rows* → table_end)* → footer
//
// The header carries the format version, SnapshotFormat (1), which a
// receiver checks before touching local state (the design's "Snapshot
// wire-format version"); each SnapshotRow carries a row's every live cell
// version and its tombstone. A SnapshotCheckpoint is the durable resume
// position of an interrupted apply.
//
// # JSON forms
//
// Values, HLCs, table definitions and schema migrations have one JSON form
// each, the one the sync protocol carries (wire/doc.go) and the engine
// stores migrations in: AppendValueJSON and ReadValueJSON (a blob as
// {"__bin":"<base64>"}, an integer beyond ±2^53 as {"__bigint":"<decimal>"},
// a json value bare or as {"__json":…}), AppendHLCJSON and ReadHLCJSON (40
// characters of standard base64), AppendTableDefJSON and ReadTableDefJSON,
// AppendMigrationJSON and ReadMigrationJSON ({"type","table","ddl","hlc"}:
// model/migration_json.go). They are built on internal/jsontext, so only
// this module's packages call the readers; their errors carry the JSON
// path of the offending member.
//
// # Errors
//
// Every error of invalid data matches one sentinel with errors.Is:
// ErrValidation (*ValidationError: a value that does not fit its column),
// ErrSchema (*SchemaError: an invalid declaration), ErrClockDrift
// (*DriftError), ErrMalformed (a structurally invalid ChangeSet, chunk or
// migration), ErrSnapshotFormat (a snapshot of another format) and
// ErrUnencodable (a value or migration the JSON form cannot carry).
package model
