//go:build js

package client

import "github.com/coder/websocket"

// dialOptions returns the options of every dial. The browser ignores
// everything but Subprotocols.
func dialOptions() *websocket.DialOptions { return nil }

// closeSocket closes a session's socket. A browser only lets a page close
// with status 1000 or 3000–4999 (CloseNow's 1001 throws and leaves the
// socket open), so every close is a normal closure; it returns when the
// browser reports the socket closed, which it does after its own closing
// timeout when the relay is gone.
func closeSocket(c *websocket.Conn, graceful bool) {
	reason := "disconnect"
	if !graceful {
		reason = "reconnect"
	}
	_ = c.Close(websocket.StatusNormalClosure, reason)
}
