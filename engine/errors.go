package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the engine returns for a caller's mistake or a
// peer's bad input matches one of these with errors.Is; the typed errors below
// add the details (table, column, reason). The JavaScript API maps them to
// stable codes (VALIDATION, NOT_FOUND, CONFLICT, CLOSED, CLOCK_DRIFT, …).
var (
	// ErrValidation is matched by a *ValidationError: a write whose value
	// does not fit its column, an unknown column, a missing NOT NULL value.
	ErrValidation = errors.New("validation failed")
	// ErrNotFound is returned when an update names a row that does not
	// exist (or is deleted).
	ErrNotFound = errors.New("row not found")
	// ErrConflict is returned when an insert names an existing primary
	// key, or re-creates a deleted row while resurrection is not allowed.
	ErrConflict = errors.New("conflict")
	// ErrUnknownTable is returned when a local read or write names a table
	// the schema does not have.
	ErrUnknownTable = errors.New("unknown table")
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
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("replica closed")
	// ErrSnapshotFormat is returned when a snapshot's format version is
	// missing or not SnapshotFormat. Nothing was written.
	ErrSnapshotFormat = errors.New("unsupported snapshot format")
	// ErrStorageFormat is returned by Open when the store was written by an
	// incompatible version of the engine.
	ErrStorageFormat = errors.New("unsupported storage format")
)

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

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
