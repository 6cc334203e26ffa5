//go:build !js

package relay

import (
	"fmt"

	"github.com/coder/websocket"
)

// Compression is the permessage-deflate mode (RFC 7692) the relay accepts
// when a client offers the extension (Config.Compression). Browsers
// always offer it; the native client does unless told not to
// (client.Options.Compression). See "Compression" in the package
// documentation for what each mode saves and costs.
type Compression int

const (
	// CompressionDefault is CompressionNoContextTakeover.
	CompressionDefault Compression = iota
	// CompressionOff declines the extension: frames travel as written.
	CompressionOff
	// CompressionNoContextTakeover compresses every frame of 512 bytes or
	// more on its own, both ways (client_no_context_takeover and
	// server_no_context_takeover), with a compressor taken from a pool for
	// the frame: no memory kept per connection between frames.
	CompressionNoContextTakeover
	// CompressionContextTakeover compresses every frame of 128 bytes or
	// more against the previous 32 KiB of the connection's frames (unless
	// the client asks for no context takeover): denser for small frames,
	// but coder/websocket keeps a compressor per connection from its first
	// compressed frame until it closes, about 1.2 MB of heap each.
	CompressionContextTakeover
)

// String returns the mode's name, as ParseCompression reads it: off,
// nocontext or context.
func (c Compression) String() string {
	switch c {
	case CompressionDefault, CompressionNoContextTakeover:
		return "nocontext"
	case CompressionOff:
		return "off"
	case CompressionContextTakeover:
		return "context"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// ParseCompression reads a mode's name: off, nocontext or context.
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "off":
		return CompressionOff, nil
	case "nocontext":
		return CompressionNoContextTakeover, nil
	case "context":
		return CompressionContextTakeover, nil
	}
	return 0, fmt.Errorf("compression %q: want off, nocontext or context", s)
}

// Set reads a mode's name into c (flag.Value).
func (c *Compression) Set(s string) error {
	v, err := ParseCompression(s)
	if err == nil {
		*c = v
	}
	return err
}

// mode is coder/websocket's form of c.
func (c Compression) mode() websocket.CompressionMode {
	switch c {
	case CompressionOff:
		return websocket.CompressionDisabled
	case CompressionContextTakeover:
		return websocket.CompressionContextTakeover
	}
	return websocket.CompressionNoContextTakeover
}
