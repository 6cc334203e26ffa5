package client

import (
	"errors"

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
	// (sync-protocol.md § Protocol version). It is fatal: the client
	// does not reconnect.
	ErrProtocolVersion = errors.New("client: relay speaks another protocol version")

	// ErrProtocol is returned when the relay breaks the protocol: a frame
	// that does not decode, a binary frame, a handshake_ack for another
	// database, a snapshot stream out of order. The session is closed
	// and the client reconnects (a handshake_ack for another database is
	// fatal instead).
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

	// ErrTooLarge is reported when a single local transaction encodes to
	// more than Options.MaxMessageSize: it cannot be pushed. The push is
	// retried with backoff (it will keep failing until the limit grows).
	ErrTooLarge = errors.New("client: transaction larger than the message size limit")
)

// RelayError returns the relay's error frame inside err, or nil.
func RelayError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return nil
}
