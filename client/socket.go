package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Socket is one WebSocket connection as a session uses it: frames in and
// out (JSON text messages, and since protocol version 14 binary messages
// for the binary frames of package wire: wire.IsBinaryFrame), then a
// close. Options.Dial returns one; by default natively it
// is github.com/coder/websocket
// (socket_notjs.go); in the browser it is the page's own WebSocket through
// syscall/js (socket_js.go), because coder/websocket's browser build links
// net/http and crypto/tls into replica.wasm (see "The browser" in the
// package documentation). Each platform file also defines
//
//	// checkRelayURL returns badURL(url) unless url is an absolute ws,
//	// wss, http or https URL with a host, as the platform reads URLs.
//	func checkRelayURL(url string) error
//
//	// dialSocket opens a WebSocket to url (ws, wss, http or https),
//	// offering the subprotocols (none when empty), and returns it once
//	// open; ctx bounds the dial. A message larger than readLimit bytes
//	// makes Read fail.
//	func dialSocket(ctx context.Context, url string, subprotocols []string, readLimit int64) (socket, error)
//
//	// closeStatus returns the close status the peer sent, from an error of
//	// socket.Read, or -1 when err carries none.
//	func closeStatus(err error) int
//
// Read is called from one goroutine, Write from another; Close and CloseNow
// may be called from any goroutine, also while Read and Write wait.
//
// A Socket of Options.Dial reports the peer's close status by returning,
// from Read, an error that is or wraps a *CloseError.
type Socket interface {
	// Read returns the next message: ok reports a frame of the protocol
	// in b, a text message or a binary message holding a binary frame
	// (wire.IsBinaryFrame); any other binary message has ok false. It fails when ctx ends, when a
	// message exceeds the read limit given to dialSocket, and when the
	// connection closes (closeStatus reports the peer's close status);
	// messages that arrived before the close are returned first.
	Read(ctx context.Context) (ok bool, b []byte, err error)
	// Write sends b as one message: a binary message when b is a binary
	// frame (wire.IsBinaryFrame), else a text message (b is UTF-8 JSON).
	// It does not keep b.
	Write(ctx context.Context, b []byte) error
	// Close performs the closing handshake with the status code and the
	// reason (at most 123 bytes) and returns when the connection is
	// closed. A browser page may only use 1000 and 3000–4999.
	Close(code int, reason string) error
	// CloseNow ends the connection without waiting for the peer where the
	// platform allows it (natively the TCP connection is dropped); a
	// browser always performs the closing handshake, so there it is
	// Close(statusNormalClosure, "").
	CloseNow() error
}

// socket is the package's name for Socket.
type socket = Socket

// DialFunc opens a Socket to url, offering the subprotocols (none when
// empty), and returns it once open; ctx bounds the dial. A message larger
// than readLimit bytes makes the Socket's Read fail. Options.Dial takes
// one: a test or simulator connects the client to a relay without a
// network that way.
type DialFunc func(ctx context.Context, url string, subprotocols []string, readLimit int64) (Socket, error)

// CloseError is the error a Socket of Options.Dial returns from Read (as
// is or wrapped) once the peer closed the connection with status Code
// (RFC 6455 § 7.4) and Reason.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("client: connection closed with status %d: %q", e.Code, e.Reason)
}

// peerCloseStatus returns the close status carried by err, a Read error:
// a *CloseError's, else the platform socket's (closeStatus), else -1.
func peerCloseStatus(err error) int {
	var ce *CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return closeStatus(err)
}

// CheckRelayURL returns the error Connect returns for url, or nil when
// url is an absolute ws, wss, http or https URL with a host, as the
// platform reads URLs (the browser's URL parser in js/wasm).
func CheckRelayURL(url string) error { return checkRelayURL(url) }

// badURL is Connect's error for a URL that can never connect.
func badURL(url string) error {
	return fmt.Errorf("client: relay URL %q is not a ws://, wss://, http:// or https:// URL", url)
}

// hasAuthority reports whether url has "://" after its scheme and a
// non-empty authority after that. The browser's URL parser reads
// "ws:relay" and "ws:///relay" as ws://relay/; net/url finds no host in
// them, and the browser build refuses them too (socket_js.go).
func hasAuthority(url string) bool {
	_, rest, ok := strings.Cut(url, "://")
	return ok && rest != "" && rest[0] != '/' && rest[0] != '?' && rest[0] != '#'
}

// statusNormalClosure is WebSocket close status 1000 (RFC 6455 § 7.4.1).
const statusNormalClosure = 1000

// closeSocket closes a session's socket: a graceful close (Disconnect)
// performs the closing handshake with status 1000, which coder/websocket
// bounds at 5 s natively; any other end (an error, a dead or stalled relay)
// drops the connection at once where the platform allows. A browser only
// lets a page close with status 1000 or 3000–4999 (1001 throws and leaves
// the socket open), so there every close is a normal closure, returning
// when the browser reports the socket closed, which it does after its own
// closing timeout when the relay is gone.
func closeSocket(c socket, graceful bool) {
	if graceful {
		_ = c.Close(statusNormalClosure, "disconnect")
		return
	}
	_ = c.CloseNow()
}

// Compression is a permessage-deflate mode (RFC 7692) the native
// WebSocket offers the relay (Options.Compression); the relay decides
// whether to accept it (relay.Config.Compression). A browser's WebSocket
// offers permessage-deflate on its own, whatever the mode.
type Compression int

const (
	// CompressionDefault is CompressionNoContextTakeover, what a relay
	// accepts by default.
	CompressionDefault Compression = iota
	// CompressionOff offers no permessage-deflate: frames travel as
	// written.
	CompressionOff
	// CompressionNoContextTakeover offers permessage-deflate with
	// client_no_context_takeover and server_no_context_takeover: each
	// frame of 512 bytes or more is compressed on its own, with a
	// compressor taken from a pool for the frame.
	CompressionNoContextTakeover
	// CompressionContextTakeover offers permessage-deflate with context
	// takeover: each frame of 128 bytes or more is compressed against the
	// previous 32 KiB the connection sent, which keeps a compressor
	// (about 1.2 MB in coder/websocket) per connection. A relay accepting
	// no context takeover only makes it CompressionNoContextTakeover.
	CompressionContextTakeover
)
