package engine

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/engine/internal/rowrec"
	"github.com/replica-sync/replica/model"
)

// Sentinel errors. Every error the engine returns for a caller's mistake or a
// peer's bad input matches one of these with errors.Is; the typed errors
// add the details (table, column, reason). The JavaScript API maps them to
// stable codes (VALIDATION, NOT_FOUND, CONFLICT, CLOSED, CLOCK_DRIFT, …).
//
// The errors of invalid data (ErrValidation, ErrClockDrift, ErrMalformed,
// ErrSchema, ErrSnapshotFormat) are package model's, re-exported here for a
// release: errors.Is matches either name.
var (
	// ErrValidation is model.ErrValidation.
	ErrValidation = model.ErrValidation
	// ErrNotFound is returned when an update names a row that does not
	// exist (or is deleted).
	ErrNotFound = errors.New("row not found")
	// ErrConflict is returned when an insert names an existing primary
	// key, or re-creates a deleted row while resurrection is not allowed.
	ErrConflict = errors.New("conflict")
	// ErrUnknownTable is returned when a local read or write names a table
	// the schema does not have.
	ErrUnknownTable = errors.New("unknown table")
	// ErrBadCursor is returned by the Inspect methods for an after
	// cursor that is not a page's next (of that table, for InspectRows).
	ErrBadCursor = errors.New("not a page cursor")
	// ErrClockDrift is model.ErrClockDrift.
	ErrClockDrift = model.ErrClockDrift
	// ErrMalformed is model.ErrMalformed.
	ErrMalformed = model.ErrMalformed
	// ErrSchema is model.ErrSchema.
	ErrSchema = model.ErrSchema
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("replica closed")
	// ErrSnapshotFormat is model.ErrSnapshotFormat.
	ErrSnapshotFormat = model.ErrSnapshotFormat
	// ErrStorageFormat is returned by Open when the store was written by an
	// incompatible version of the engine.
	ErrStorageFormat = rowrec.ErrStorageFormat
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
