package model

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/internal/jsontext"
)

// Sentinel errors of the data model. Every error this package returns for
// invalid data matches one of these with errors.Is; the typed errors add the
// details (table, column, reason). The engine returns them too, and the
// JavaScript API maps them to stable codes (VALIDATION, CLOCK_DRIFT, …).
var (
	// ErrValidation is matched by a *ValidationError: a write whose value
	// does not fit its column, an unknown column, a missing NOT NULL value.
	ErrValidation = errors.New("validation failed")
	// ErrClockDrift is matched by a *DriftError: a remote HLC more than
	// MaxDrift ms ahead of the local wall clock. Nothing was written.
	ErrClockDrift = errors.New("clock drift")
	// ErrMalformed is returned for a structurally invalid ChangeSet,
	// snapshot chunk or migration (empty primary key, facts of several
	// transactions in one ChangeSet, a wrong snapshot format). Nothing was
	// written.
	ErrMalformed = errors.New("malformed input")
	// ErrSchema is returned for an invalid schema declaration, or one that
	// contradicts the stored schema (a column's type changed).
	ErrSchema = errors.New("invalid schema")
	// ErrSnapshotFormat is returned when a snapshot's format version is
	// missing or not SnapshotFormat. Nothing was written.
	ErrSnapshotFormat = errors.New("unsupported snapshot format")
	// ErrUnencodable is matched by the errors of the JSON codec's Append
	// functions (AppendValueJSON, AppendMigrationJSON, …): a value the
	// sync protocol's JSON form cannot represent (a NaN or infinite real,
	// text that is not valid UTF-8, an empty name, a migration whose type
	// does not match its definition). wire.ErrInvalidMessage is this
	// error. Nothing is written.
	ErrUnencodable = errors.New("message cannot be encoded")
	// ErrUnknownMigrationType is matched by the error of reading a
	// migration whose type this version does not know: one a newer
	// version of Replica wrote (rename_table, say, read by version 12).
	// The error is the reader's as well (its message and JSON path).
	ErrUnknownMigrationType = errors.New("unknown migration type")
)

// unknownTypeError is a reader's error for an unknown migration type that
// also matches ErrUnknownMigrationType.
type unknownTypeError struct{ error }

func (e unknownTypeError) Unwrap() error        { return e.error }
func (e unknownTypeError) Is(target error) bool { return target == ErrUnknownMigrationType }

// PrependPath passes the JSON path on to the reader's error
// (jsontext.PathPrepender).
func (e unknownTypeError) PrependPath(segment string) {
	if p, ok := e.error.(jsontext.PathPrepender); ok {
		p.PrependPath(segment)
	}
}

// ValidationError describes a rejected write. Table and Column name where
// the problem is (Column may be empty for row-level problems); Reason says
// what is wrong.
type ValidationError struct {
	Table  string
	Column string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s: %s", e.Table, e.Reason)
	}
	return fmt.Sprintf("%s.%s: %s", e.Table, e.Column, e.Reason)
}

// Is makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

// DriftError is a remote HLC too far ahead of local time.
type DriftError struct {
	Remote HLC    // the offending HLC
	Now    uint64 // local wall time, ms
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("clock drift: remote time %d ms is %d ms ahead of local time %d ms (limit %d ms)",
		e.Remote.Wall, e.Remote.Wall-e.Now, e.Now, MaxDrift)
}

// Is makes errors.Is(err, ErrClockDrift) true.
func (e *DriftError) Is(target error) bool { return target == ErrClockDrift }
