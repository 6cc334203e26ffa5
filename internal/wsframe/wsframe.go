//go:build !js

// Package wsframe maps the frames of package wire to WebSocket message
// types for coder/websocket (protocol version 14, wire's package doc
// § "Binary frames"): a binary frame (wire.IsBinaryFrame: its first byte
// wire.BinaryFrameTag) travels as a binary message, any other frame (a
// JSON object) as a text message. The relay, the native client, the
// simulator and the tests that write frames by hand use it; the browser
// socket (client/socket_js.go) applies the same rule to the JavaScript
// WebSocket.
package wsframe

import (
	"github.com/coder/websocket"

	"github.com/replica-sync/replica/wire"
)

// Type is the message type frame travels as.
func Type(frame []byte) websocket.MessageType {
	if wire.IsBinaryFrame(frame) {
		return websocket.MessageBinary
	}
	return websocket.MessageText
}

// Fits reports whether a message of type typ may carry frame: a binary
// message holds a binary frame, a text message anything else. A frame
// that does not fit its message is not a frame of the protocol.
func Fits(typ websocket.MessageType, frame []byte) bool {
	return (typ == websocket.MessageBinary) == wire.IsBinaryFrame(frame)
}
