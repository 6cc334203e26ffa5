//go:build !js

package e2e

import (
	"github.com/coder/websocket"

	"github.com/replica-sync/replica/wire"
)

// wsType is the WebSocket message type a frame travels as (protocol
// version 14): binary for a binary frame, text for a JSON frame.
func wsType(frame []byte) websocket.MessageType {
	if wire.IsBinaryFrame(frame) {
		return websocket.MessageBinary
	}
	return websocket.MessageText
}
