//go:build js

package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/replica-sync/replica/wire"
)

// jsSocket is the browser's socket: the page's own WebSocket object
// (https://websockets.spec.whatwg.org/), driven through syscall/js.
//
// The browser delivers events on its event loop; the listeners only record
// them (a message is appended to a queue, the close is noted) and signal
// one-slot channels, never waiting on Go, and Read, Write and Close wait on
// those channels from goroutines. The browser gives a page no flow
// control: messages are queued as they arrive until Read takes them, and
// Write hands each frame to the browser's own send buffer at once. Every
// js.Func is released when the close event comes, which the browser always
// sends after close() (also while connecting).
type jsSocket struct {
	ws        js.Value
	readLimit int64
	listeners []listener // released at the close event

	mu      sync.Mutex
	queue   []jsMessage // received, not yet read
	closing bool        // Close was called: the close was ours
	err     error       // why the socket closed; set before closed is

	msg    chan struct{} // cap 1: the queue is not empty
	opened chan struct{} // closed by the open event
	closed chan struct{} // closed by the close event
}

var _ socket = (*jsSocket)(nil)

type listener struct {
	event string
	fn    js.Func
}

// jsMessage is one received message: a text message's string or a binary
// message's ArrayBuffer (version 14's binary frames), left in the browser
// until Read takes it. The text stays a JavaScript string
// until Read takes it: a relay streams a snapshot much faster than the
// replica applies it, and queued as Go strings the whole snapshot sat in
// the Go heap, whose WebAssembly memory never shrinks.
type jsMessage struct {
	data   js.Value
	binary bool
}

// wsCloseError is the close status and reason of a connection the peer (or
// the browser, e.g. 1006 for a lost connection) closed.
type wsCloseError struct {
	code     int
	reason   string
	wasClean bool
}

func (e *wsCloseError) Error() string {
	s := fmt.Sprintf("WebSocket closed with status %d", e.code)
	if e.reason != "" {
		s += fmt.Sprintf(" (%q)", e.reason)
	}
	if !e.wasClean {
		s += ", not cleanly"
	}
	return s
}

// errSocketClosed is Read's and Write's error after Close.
var errSocketClosed = errors.New("client: WebSocket closed")

// checkRelayURL reads url with the browser's URL parser (the WHATWG URL
// Standard, which the WebSocket constructor applies too); net/url would add
// about 190 KB to replica.wasm.
func checkRelayURL(url string) error {
	_, err := relayURL(url)
	return err
}

// relayURL returns url as the WebSocket constructor takes it, http and
// https mapped to ws and wss (Connect accepts them, as coder/websocket does
// natively), or badURL(url).
func relayURL(url string) (string, error) {
	var u js.Value
	if !hasAuthority(url) || catch(func() { u = js.Global().Get("URL").New(url) }) != nil {
		return "", badURL(url)
	}
	switch u.Get("protocol").String() {
	case "ws:", "wss:":
	case "http:":
		u.Set("protocol", "ws:")
	case "https:":
		u.Set("protocol", "wss:")
	default:
		return "", badURL(url)
	}
	if u.Get("host").String() == "" {
		return "", badURL(url)
	}
	return u.Get("href").String(), nil
}

// dialer returns dialSocket: the browser's WebSocket negotiates
// permessage-deflate on its own, whatever m says.
func dialer(Compression) DialFunc { return dialSocket }

func dialSocket(ctx context.Context, url string, subprotocols []string, readLimit int64) (socket, error) {
	url, err := relayURL(url)
	if err != nil {
		return nil, err
	}
	s := &jsSocket{
		readLimit: readLimit,
		msg:       make(chan struct{}, 1),
		opened:    make(chan struct{}),
		closed:    make(chan struct{}),
	}
	protocols := make([]any, len(subprotocols))
	for i, p := range subprotocols {
		protocols[i] = p
	}
	if err := catch(func() { s.ws = js.Global().Get("WebSocket").New(url, protocols) }); err != nil {
		return nil, fmt.Errorf("client: dialing %s: %w", url, err) // SyntaxError: a URL the browser refuses
	}
	s.ws.Set("binaryType", "arraybuffer")
	s.listen("open", s.onOpen)
	s.listen("message", s.onMessage)
	s.listen("close", s.onClose)
	// No "error" listener: the browser tells nothing in it and always
	// follows it with the close event, whose status (1006) says enough.

	select {
	case <-s.opened:
		return s, nil
	case <-s.closed:
		return nil, fmt.Errorf("client: dialing %s: %w", url, s.closeErr())
	case <-ctx.Done():
		_ = catch(func() { s.ws.Call("close", statusNormalClosure, "dial cancelled") })
		return nil, ctx.Err()
	}
}

func closeStatus(err error) int {
	var ce *wsCloseError
	if errors.As(err, &ce) {
		return ce.code
	}
	return -1
}

// listen adds fn as the listener of event; a panic in fn is recovered (it
// would stop the Go program) and closes the socket.
func (s *jsSocket) listen(event string, fn func(e js.Value)) {
	f := js.FuncOf(func(this js.Value, args []js.Value) any {
		defer func() {
			if p := recover(); p != nil {
				s.setErr(fmt.Errorf("client: panic in the WebSocket %s listener: %v", event, p))
				_ = catch(func() { s.ws.Call("close", statusNormalClosure, "internal error") })
			}
		}()
		fn(args[0])
		return nil
	})
	s.ws.Call("addEventListener", event, f)
	s.listeners = append(s.listeners, listener{event, f})
}

func (s *jsSocket) onOpen(js.Value) { close(s.opened) }

func (s *jsSocket) onMessage(e js.Value) {
	data := e.Get("data")
	var m jsMessage
	switch {
	case data.Type() != js.TypeString:
		m.binary = true // an ArrayBuffer (binaryType "arraybuffer")
		m.data = data
	default:
		m.data = data
	}
	s.mu.Lock()
	s.queue = append(s.queue, m)
	s.mu.Unlock()
	select {
	case s.msg <- struct{}{}:
	default:
	}
}

func (s *jsSocket) onClose(e js.Value) {
	s.mu.Lock()
	if s.err == nil {
		if s.closing {
			s.err = errSocketClosed
		} else {
			s.err = &wsCloseError{code: e.Get("code").Int(), reason: e.Get("reason").String(), wasClean: e.Get("wasClean").Bool()}
		}
	}
	s.mu.Unlock()
	close(s.closed)
	for _, l := range s.listeners {
		s.ws.Call("removeEventListener", l.event, l.fn)
		l.fn.Release() // this running listener stays valid until it returns
	}
}

func (s *jsSocket) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *jsSocket) closeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *jsSocket) Read(ctx context.Context) (bool, []byte, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			m := s.queue[0]
			s.queue[0] = jsMessage{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			if m.binary {
				// Version 14: a binary message holds a binary frame;
				// anything else binary is not a frame of the protocol.
				b, err := jsBufferBytes(m.data, s.readLimit)
				return err == nil && wire.IsBinaryFrame(b), b, err
			}
			b, err := jsStringBytes(m.data, s.readLimit)
			return err == nil, b, err
		}
		s.mu.Unlock()
		select {
		case <-s.msg:
		case <-s.closed:
			// Deliver what arrived before the close first.
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n == 0 {
				return false, nil, s.closeErr()
			}
		case <-ctx.Done():
			return false, nil, ctx.Err()
		}
	}
}

// textEncoder encodes JavaScript strings as UTF-8.
var textEncoder = sync.OnceValue(func() js.Value { return js.Global().Get("TextEncoder").New() })

// jsStringBytes returns the UTF-8 of the JavaScript string v in one Go
// allocation (js.Value.String and a conversion to []byte made two more
// copies of every frame), or an error if it is longer than limit bytes.
func jsStringBytes(v js.Value, limit int64) ([]byte, error) {
	return u8Bytes(textEncoder().Call("encode", v), limit)
}

// uint8Array is the JavaScript Uint8Array constructor.
var uint8Array = sync.OnceValue(func() js.Value { return js.Global().Get("Uint8Array") })

// jsBufferBytes copies the ArrayBuffer v into Go, or returns an error if it
// is longer than limit bytes.
func jsBufferBytes(v js.Value, limit int64) ([]byte, error) {
	return u8Bytes(uint8Array().New(v), limit)
}

// u8Bytes copies the Uint8Array u8 into Go, or returns an error if it is
// longer than limit bytes.
func u8Bytes(u8 js.Value, limit int64) ([]byte, error) {
	n := u8.Length()
	if int64(n) > limit {
		return nil, fmt.Errorf("client: a message of more than %d bytes, the read limit", limit)
	}
	b := make([]byte, n)
	js.CopyBytesToGo(b, u8)
	return b, nil
}

// Write sends a binary frame (wire.IsBinaryFrame) as a binary message, any
// other frame as a text message.
func (s *jsSocket) Write(ctx context.Context, b []byte) error {
	select {
	case <-s.closed:
		return s.closeErr()
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// send never blocks; on a socket already closing the browser drops
	// the frame, and Read reports the close.
	if wire.IsBinaryFrame(b) {
		u8 := uint8Array().New(len(b))
		js.CopyBytesToJS(u8, b)
		return catch(func() { s.ws.Call("send", u8) })
	}
	return catch(func() { s.ws.Call("send", string(b)) })
}

func (s *jsSocket) Close(code int, reason string) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	if err := catch(func() { s.ws.Call("close", code, reason) }); err != nil {
		return err // InvalidAccessError (code), SyntaxError (reason > 123 bytes)
	}
	<-s.closed
	return nil
}

func (s *jsSocket) CloseNow() error { return s.Close(statusNormalClosure, "") }

// catch runs fn and returns the JavaScript exception it threw, if any.
func catch(fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			jerr, ok := p.(js.Error)
			if !ok {
				panic(p)
			}
			err = jerr
		}
	}()
	fn()
	return nil
}
