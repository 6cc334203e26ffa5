//go:build !js

package client

import (
	"context"
	neturl "net/url"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/internal/wsframe"
)

// wsSocket is the native socket: a coder/websocket connection.
type wsSocket struct{ c *websocket.Conn }

var _ socket = wsSocket{}

func dialSocket(ctx context.Context, url string, subprotocols []string, readLimit int64) (socket, error) {
	return dialCompressed(ctx, url, subprotocols, readLimit, CompressionDefault)
}

// dialer returns the native DialFunc offering compression mode m.
func dialer(m Compression) DialFunc {
	if m == CompressionDefault {
		return dialSocket
	}
	return func(ctx context.Context, url string, subprotocols []string, readLimit int64) (socket, error) {
		return dialCompressed(ctx, url, subprotocols, readLimit, m)
	}
}

// wsCompression maps m to coder/websocket's mode.
func wsCompression(m Compression) websocket.CompressionMode {
	switch m {
	case CompressionOff:
		return websocket.CompressionDisabled
	case CompressionContextTakeover:
		return websocket.CompressionContextTakeover
	}
	return websocket.CompressionNoContextTakeover
}

func dialCompressed(ctx context.Context, url string, subprotocols []string, readLimit int64, m Compression) (socket, error) {
	// Natively the defaults otherwise: http.DefaultClient.
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: subprotocols, CompressionMode: wsCompression(m)})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(readLimit)
	return wsSocket{c}, nil
}

// checkRelayURL reads url with net/url, as coder/websocket's Dial does.
func checkRelayURL(url string) error {
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" || (u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https") {
		return badURL(url)
	}
	return nil
}

func closeStatus(err error) int { return int(websocket.CloseStatus(err)) }

func (s wsSocket) Read(ctx context.Context) (bool, []byte, error) {
	typ, b, err := s.c.Read(ctx)
	// Version 14: a binary message holds a binary frame; anything else
	// binary is not a frame of the protocol.
	if err != nil || !wsframe.Fits(typ, b) {
		return false, nil, err
	}
	return true, b, nil
}

// Write sends a binary frame (wire.IsBinaryFrame) as a binary message,
// any other as a text message.
func (s wsSocket) Write(ctx context.Context, b []byte) error {
	return s.c.Write(ctx, wsframe.Type(b), b)
}

func (s wsSocket) Close(code int, reason string) error {
	return s.c.Close(websocket.StatusCode(code), reason)
}

func (s wsSocket) CloseNow() error { return s.c.CloseNow() }
