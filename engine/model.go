package engine

import (
	"time"

	"github.com/replica-sync/replica/internal/rawvalue"
	"github.com/replica-sync/replica/model"
)

// The data model lives in package model (github.com/replica-sync/replica/model),
// which the wire protocol, the client, the relay and the JavaScript bridge
// import without the engine. The names below re-export it so that code
// written against engine.HLC, engine.Value, engine.ChangeSet, … keeps
// compiling. They stay for one release; new code imports model.

// Clocks and site ids.
type (
	// SiteID is model.SiteID.
	SiteID = model.SiteID
	// HLC is model.HLC.
	HLC = model.HLC
)

// Values.
type (
	// Kind is model.Kind.
	Kind = model.Kind
	// Value is model.Value.
	Value = model.Value
	// Row is model.Row.
	Row = model.Row
)

// Schemas.
type (
	// Schema is model.Schema.
	Schema = model.Schema
	// TableDef is model.TableDef.
	TableDef = model.TableDef
	// ColumnDef is model.ColumnDef.
	ColumnDef = model.ColumnDef
	// IndexDef is model.IndexDef.
	IndexDef = model.IndexDef
	// ResurrectionPolicy is model.ResurrectionPolicy.
	ResurrectionPolicy = model.ResurrectionPolicy
	// SchemaError is model.SchemaError.
	SchemaError = model.SchemaError
)

// Changes.
type (
	// ChangeType is model.ChangeType.
	ChangeType = model.ChangeType
	// Change is model.Change.
	Change = model.Change
	// ChangeSet is model.ChangeSet.
	ChangeSet = model.ChangeSet
	// MigrationType is model.MigrationType.
	MigrationType = model.MigrationType
	// SchemaMigration is model.SchemaMigration.
	SchemaMigration = model.SchemaMigration
	// ColumnAlter is model.ColumnAlter.
	ColumnAlter = model.ColumnAlter
	// ApplyResult is model.ApplyResult.
	ApplyResult = model.ApplyResult
)

// Snapshots.
type (
	// ChunkType is model.ChunkType.
	ChunkType = model.ChunkType
	// SnapshotChunk is model.SnapshotChunk.
	SnapshotChunk = model.SnapshotChunk
	// SnapshotHeader is model.SnapshotHeader.
	SnapshotHeader = model.SnapshotHeader
	// SnapshotRow is model.SnapshotRow.
	SnapshotRow = model.SnapshotRow
	// SnapshotCell is model.SnapshotCell.
	SnapshotCell = model.SnapshotCell
	// SnapshotFooter is model.SnapshotFooter.
	SnapshotFooter = model.SnapshotFooter
	// SnapshotCheckpoint is model.SnapshotCheckpoint.
	SnapshotCheckpoint = model.SnapshotCheckpoint
)

// Errors of invalid data (the sentinels are in errors.go).
type (
	// ValidationError is model.ValidationError.
	ValidationError = model.ValidationError
	// DriftError is model.DriftError.
	DriftError = model.DriftError
)

// Constants of the data model.
const (
	HLCSize            = model.HLCSize
	BaseSize           = model.BaseSize
	MaxDrift           = model.MaxDrift
	MaxNameLen         = model.MaxNameLen
	MaxTimestampMillis = model.MaxTimestampMillis
	SnapshotFormat     = model.SnapshotFormat

	KindNull      = model.KindNull
	KindBoolean   = model.KindBoolean
	KindInteger   = model.KindInteger
	KindReal      = model.KindReal
	KindTimestamp = model.KindTimestamp
	KindText      = model.KindText
	KindJSON      = model.KindJSON
	KindBlob      = model.KindBlob

	ResurrectionUndeclared = model.ResurrectionUndeclared
	DeleteWins             = model.DeleteWins
	ResurrectionAllowed    = model.ResurrectionAllowed

	ColumnChange = model.ColumnChange
	RowDeletion  = model.RowDeletion

	CreateTable           = model.CreateTable
	AddColumn             = model.AddColumn
	AddIndex              = model.AddIndex
	SetResurrectionPolicy = model.SetResurrectionPolicy
	DropTable             = model.DropTable
	DropColumn            = model.DropColumn
	DropIndex             = model.DropIndex
	AlterColumn           = model.AlterColumn
	RenameTable           = model.RenameTable

	ChunkHeader     = model.ChunkHeader
	ChunkSchema     = model.ChunkSchema
	ChunkTableStart = model.ChunkTableStart
	ChunkRows       = model.ChunkRows
	ChunkTableEnd   = model.ChunkTableEnd
	ChunkFooter     = model.ChunkFooter
)

// Null is model.Null, the null Value.
var Null = model.Null

// ParseSiteID is model.ParseSiteID.
func ParseSiteID(text string) (SiteID, error) { return model.ParseSiteID(text) }

// HLCFromBytes is model.HLCFromBytes.
func HLCFromBytes(b []byte) (HLC, error) { return model.HLCFromBytes(b) }

// ParseKind is model.ParseKind.
func ParseKind(name string) (Kind, error) { return model.ParseKind(name) }

// ParseResurrectionPolicy is model.ParseResurrectionPolicy.
func ParseResurrectionPolicy(s string) (ResurrectionPolicy, error) {
	return model.ParseResurrectionPolicy(s)
}

// ValidName is model.ValidName.
func ValidName(s string) bool { return model.ValidName(s) }

// Compare is model.Compare: the order of keys and indexes.
func Compare(a, b Value) int { return model.Compare(a, b) }

// Int is model.Int.
func Int(v int64) Value { return model.Int(v) }

// Real is model.Real.
func Real(v float64) Value { return model.Real(v) }

// Text is model.Text.
func Text(v string) Value { return model.Text(v) }

// Bool is model.Bool.
func Bool(v bool) Value { return model.Bool(v) }

// Blob is model.Blob.
func Blob(v []byte) Value { return model.Blob(v) }

// Timestamp is model.Timestamp.
func Timestamp(t time.Time) Value { return model.Timestamp(t) }

// TimestampMillis is model.TimestampMillis.
func TimestampMillis(ms int64) Value { return model.TimestampMillis(ms) }

// JSONValue is model.JSONValue.
func JSONValue(raw []byte) (Value, error) { return model.JSONValue(raw) }

// JSONOf is model.JSONOf.
func JSONOf(v any) (Value, error) { return model.JSONOf(v) }

// The engine's own uses of the model.

var (
	// rawValue rebuilds a text, JSON or blob Value from bytes the engine
	// encoded itself, unchecked (see package rawvalue).
	rawValue = rawvalue.Make.(func(Kind, string) Value)
	// rawString returns a text, JSON or blob Value's bytes, uncopied.
	rawString = rawvalue.String.(func(Value) string)
)

func coerceValue(t *TableDef, c *ColumnDef, in any) (Value, error) {
	return model.CoerceValue(t, c, in)
}

func normalizeRemote(c *ColumnDef, v Value) Value { return model.NormalizeRemote(c, v) }

func baseFromBytes(b []byte) HLC { return model.BaseFromBytes(b) }

// describePolicy names p for an error message with the JavaScript option
// that declares it.
func describePolicy(p ResurrectionPolicy) string {
	switch p {
	case DeleteWins:
		return "delete-wins (allowResurrection: false)"
	case ResurrectionAllowed:
		return "allow-resurrection (allowResurrection: true)"
	}
	return p.String()
}
