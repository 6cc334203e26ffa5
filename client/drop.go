package client

// DropConnection closes the current session's socket now, without waiting
// for the session to end (it may be waiting on the store): for a browser
// page about to be frozen, which runs nothing afterwards, so its socket
// would stay open, and counted by the relay, for the whole freeze. The
// close itself completes on a goroutine of its own (in the browser the
// socket's close() is called before the page's event handler returns to
// JavaScript). The session then ends as after a lost connection, and the
// client reconnects unless Disconnect or Close follow, as they should. It
// never blocks; without a session it does nothing.
func (c *Client) DropConnection() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		go func() { _ = conn.CloseNow() }()
	}
}
