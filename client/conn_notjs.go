//go:build !js

package client

import "github.com/coder/websocket"

// dialOptions returns the options of every dial. Natively the defaults:
// http.DefaultClient, no compression.
func dialOptions() *websocket.DialOptions { return nil }

// closeSocket closes a session's socket. A graceful close (Disconnect)
// performs the closing handshake with status 1000, which coder/websocket
// bounds at 5 s; any other end (an error, a dead or stalled relay) drops
// the TCP connection at once.
func closeSocket(c *websocket.Conn, graceful bool) {
	if graceful {
		_ = c.Close(websocket.StatusNormalClosure, "disconnect")
		return
	}
	_ = c.CloseNow()
}
