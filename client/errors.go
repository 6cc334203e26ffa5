package client

import (
	"errors"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Sentinel errors. Errors the relay sends arrive as *wire.Error (use
// errors.As, or RelayError); a fatal one (Fatal set, or a known-fatal code)
// stops the client in the Error state.
var (
	// ErrClosed is returned by Connect after Close.
	ErrClosed = errors.New("client: closed")

	// ErrProtocolVersion is the lasting error of a client whose relay
	// answered the handshake with another protocolVersion, or none
	// (docs/design.md § Client behaviour). It is fatal: the client
	// does not reconnect.
	ErrProtocolVersion = errors.New("client: relay speaks another protocol version")

	// ErrProtocol is returned when the relay breaks the protocol: a frame
	// that does not decode, a binary message that is not a binary frame
	// (wire.IsBinaryFrame), a handshake_ack for another
	// database, a snapshot stream out of order. The session is closed
	// and the client reconnects (a handshake_ack for another database is
	// fatal instead). An answer that breaks the protocol without making
	// the session unusable — a changes reply that makes no progress (more
	// without advancing the cursor, more with no ChangeSet, a cursor that
	// moves back, more ChangeSets than the cursor advanced, caught up
	// below a cursor a push_changes announced), an apply_result for
	// another requestId than the push in flight — is reported
	// (ErrorReported, wrapping ErrProtocol) and its request retried after
	// a backoff delay; the session goes on, and the state is Syncing until
	// the request succeeds.
	ErrProtocol = errors.New("client: protocol violation by the relay")

	// ErrTimeout is returned when the relay stops answering: no frame for
	// two keepalive intervals, no handshake_ack within the handshake
	// timeout, or a request unanswered for the request timeout. The
	// session is closed and the client reconnects.
	ErrTimeout = errors.New("client: relay not responding")

	// ErrSnapshotStalled is returned when a snapshot transfer received no
	// chunk for the stall timeout. The session is closed; the reconnect
	// resumes the transfer from the engine's checkpoint.
	ErrSnapshotStalled = errors.New("client: snapshot transfer stalled")

	// ErrTooLarge is the cause of the *RefusedError reported when a single
	// local transaction encodes to more than Options.MaxMessageSize: it
	// cannot be pushed, and is skipped (see RefusedError).
	ErrTooLarge = errors.New("client: transaction larger than the message size limit")

	// ErrRefused matches (errors.Is) every *RefusedError: a local
	// transaction that will not be synced.
	ErrRefused = errors.New("client: transaction not synced")

	// ErrSyncStateReset is reported (ErrorReported, once per value) when
	// a stored cursor, chain value or sent watermark of this replica does
	// not decode (a stray write, a partial upgrade, a bug of an older
	// version). The value is deleted and rebuilt: a lost cursor by a
	// snapshot bootstrap, a lost sent watermark from the relay's
	// handshake_ack.siteHlc (every local transaction above it is pushed
	// again). The session goes on. See "Persisted state".
	ErrSyncStateReset = errors.New("client: stored sync state does not decode; discarded and rebuilt")

	// ErrRelayDiverged is reported (ErrorReported, once per session that
	// finds it) when the relay's log is not a continuation of the one
	// this replica synced with: handshake_ack.history is "diverged" (the
	// relay was restored from an older copy of its data, its log was
	// truncated or replaced), or the relay no longer holds transactions
	// of this replica it had acknowledged (siteHlc below them). The client
	// repairs it: it bootstraps again and pushes its transactions the
	// relay lacks. See "Verifying the relay".
	ErrRelayDiverged = errors.New("client: the relay's log is not a continuation of the one this replica synced with")
)

// RefusedError is reported (ErrorReported) for a local transaction the
// client gave up pushing, because sending it again unchanged would fail
// the same way: the relay refused it (APPLY_CHANGES_REFUSED: malformed, a
// row or value too large, more changes than the relay takes in one
// apply_changes, …), it encodes above Options.MaxMessageSize, or it does
// not encode at all. The client skips it: the sent watermark moves past
// it, as for an acknowledged push, and the transactions after it are
// pushed. The transaction stays in this replica (nothing is deleted or
// rolled back) but no other replica will receive it.
//
// errors.Is(err, ErrRefused) holds for every RefusedError; Unwrap returns
// the cause: the relay's *wire.Error (RelayError finds it), ErrTooLarge,
// or the encoding error.
type RefusedError struct {
	TransactionID string    // the ChangeSet's transactionId
	HLC           model.HLC // the ChangeSet's hlc
	// Code is the relay's error code (wire.CodeApplyChangesRefused), or
	// "" when the client refused to send the transaction itself.
	Code    wire.ErrorCode
	Message string // why, for humans: the relay's message, or the client's
	Err     error  // the cause
}

func (e *RefusedError) Error() string {
	by := "the client"
	if e.Code != "" {
		by = "the relay (" + string(e.Code) + ")"
	}
	return "client: transaction " + e.TransactionID + " not synced, refused by " + by + ": " + e.Message
}

// Unwrap returns the cause.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// RelayError returns the relay's error frame inside err, or nil.
func RelayError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return nil
}
