//go:build js

package client

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/wire"
)

// fakeWebSocket replaces the page's WebSocket for TestJSSocket: the test
// plays the browser's part (open, messages, close events) and reads back
// what the socket asked of it. Like a browser, close() with a status a page
// may not use throws, and close() fires the close event later, on the event
// loop.
const fakeWebSocket = `(() => {
	class FakeWebSocket extends EventTarget {
		constructor(url, protocols) {
			super();
			if (url.includes("refused.test")) throw new SyntaxError("refused URL " + url);
			this.url = url;
			this.protocols = protocols;
			this.readyState = 0;
			this.sent = [];
			this.closes = [];
			this.listeners = 0;
			FakeWebSocket.last = this;
		}
		addEventListener(t, f) { this.listeners++; super.addEventListener(t, f); }
		removeEventListener(t, f) { this.listeners--; super.removeEventListener(t, f); }
		send(d) {
			if (this.readyState === 0) throw new DOMException("still connecting", "InvalidStateError");
			this.sent.push(d);
		}
		close(code, reason) {
			if (code !== undefined && code !== 1000 && (code < 3000 || code > 4999)) throw new DOMException("code " + code, "InvalidAccessError");
			this.closes.push(code + " " + reason);
			if (this.readyState >= 2) return;
			this.readyState = 2;
			setTimeout(() => this.closed(code ?? 1005, reason ?? "", true), 0);
		}
		opened() { this.readyState = 1; this.dispatchEvent(new Event("open")); }
		message(data) { const e = new Event("message"); e.data = data; this.dispatchEvent(e); }
		closed(code, reason, wasClean) {
			this.readyState = 3;
			const e = new Event("close");
			Object.assign(e, {code, reason, wasClean});
			this.dispatchEvent(e);
		}
	}
	return FakeWebSocket;
})()`

// useFakeWebSocket installs fakeWebSocket as globalThis.WebSocket for the
// test and returns its class.
func useFakeWebSocket(t *testing.T) js.Value {
	t.Helper()
	g := js.Global()
	old := g.Get("WebSocket")
	fake := g.Call("eval", fakeWebSocket)
	g.Set("WebSocket", fake)
	t.Cleanup(func() { g.Set("WebSocket", old) })
	return fake
}

// dialFake dials through the fake and opens the connection.
func dialFake(t *testing.T, fake js.Value, url string, readLimit int64) (socket, js.Value) {
	t.Helper()
	type dialed struct {
		s   socket
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		s, err := dialSocket(context.Background(), url, []string{"replica"}, readLimit)
		ch <- dialed{s, err}
	}()
	ws := waitSocket(t, fake)
	ws.Call("opened")
	d := <-ch
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.s, ws
}

// waitSocket returns the WebSocket the fake constructed last, waiting for
// a dialing goroutine to construct it.
func waitSocket(t *testing.T, fake js.Value) js.Value {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ws := fake.Get("last"); !ws.IsUndefined() {
			fake.Set("last", js.Undefined())
			return ws
		}
		if time.Now().After(deadline) {
			t.Fatal("no WebSocket constructed")
		}
		time.Sleep(time.Millisecond)
	}
}

func readText(t *testing.T, s socket) string {
	t.Helper()
	text, b, err := s.Read(context.Background())
	if err != nil || !text {
		t.Fatalf("Read: text %v, %q, %v; want a text frame", text, b, err)
	}
	return string(b)
}

// TestJSSocket: the browser socket over a scripted WebSocket (the browser's
// semantics as the WHATWG spec gives them): dialing, frames in order, the
// peer's close status after the frames sent before it, the read limit,
// writes, Close's codes, context cancellation, and listeners removed (and
// their js.Funcs released) at the close event.
func TestJSSocket(t *testing.T) {
	fake := useFakeWebSocket(t)

	t.Run("frames then the peer's close", func(t *testing.T) {
		s, ws := dialFake(t, fake, "http://relay.test/sync", 1<<20)
		if got := ws.Get("url").String(); got != "ws://relay.test/sync" {
			t.Errorf("url %s", got)
		}
		if got := ws.Get("protocols").Index(0).String(); got != "replica" {
			t.Errorf("subprotocol %s", got)
		}
		if got := ws.Get("binaryType").String(); got != "arraybuffer" {
			t.Errorf("binaryType %s", got)
		}
		if err := s.Write(context.Background(), []byte(`{"type":"ping"}`)); err != nil {
			t.Fatal(err)
		}
		if got := ws.Get("sent").Index(0).String(); got != `{"type":"ping"}` {
			t.Errorf("sent %s", got)
		}
		frame := wire.BinaryFrame([]byte(`{"type":"push_changes","cursor":1,"changeSets":1}`), []byte{1, 2, 3})
		if err := s.Write(context.Background(), frame); err != nil {
			t.Fatal(err)
		}
		if sent := ws.Get("sent").Index(1); sent.Type() == js.TypeString || sent.Length() != len(frame) || sent.Index(0).Int() != wire.BinaryFrameTag {
			t.Errorf("binary frame sent as %v (%d)", sent.Type(), sent.Length())
		}
		u8 := js.Global().Get("Uint8Array").New(len(frame))
		js.CopyBytesToJS(u8, frame)
		ws.Call("message", "héllo")
		ws.Call("message", js.Global().Get("ArrayBuffer").New(3))
		ws.Call("message", u8.Get("buffer"))
		ws.Call("message", "second")
		ws.Call("closed", 4001, "auth failed", true)
		if got := readText(t, s); got != "héllo" {
			t.Errorf("first frame %q", got)
		}
		if text, _, err := s.Read(context.Background()); text || err != nil {
			t.Errorf("binary message that is no binary frame: %v %v", text, err)
		}
		if ok, b, err := s.Read(context.Background()); !ok || err != nil || !bytes.Equal(b, frame) {
			t.Errorf("binary frame: %v % x %v", ok, b, err)
		}
		if got := readText(t, s); got != "second" {
			t.Errorf("second frame %q", got)
		}
		_, _, err := s.Read(context.Background())
		if st := closeStatus(err); st != 4001 || !strings.Contains(err.Error(), "auth failed") {
			t.Errorf("after the close: %v (status %d)", err, st)
		}
		if err := s.Write(context.Background(), []byte("late")); err == nil {
			t.Error("Write after the close succeeded")
		}
		if n := ws.Get("listeners").Int(); n != 0 {
			t.Errorf("%d listeners left after the close", n)
		}
		if err := s.Close(statusNormalClosure, ""); err != nil {
			t.Errorf("Close after the close: %v", err)
		}
	})

	t.Run("read limit", func(t *testing.T) {
		s, ws := dialFake(t, fake, "ws://relay.test/sync", 4)
		ws.Call("message", "four")
		ws.Call("message", "fives")
		if got := readText(t, s); got != "four" {
			t.Errorf("frame %q", got)
		}
		if _, _, err := s.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "read limit") {
			t.Errorf("a frame beyond the limit: %v", err)
		}
		closeSocket(s, false)
	})

	t.Run("Close", func(t *testing.T) {
		s, ws := dialFake(t, fake, "wss://relay.test/sync", 1<<20)
		if err := s.Close(1001, "going away"); err == nil {
			t.Error("Close(1001) succeeded; a browser throws")
		}
		reading := make(chan error, 1)
		go func() { _, _, err := s.Read(context.Background()); reading <- err }()
		closeSocket(s, true) // returns after the close event
		if got := ws.Get("closes").Index(0).String(); got != "1000 disconnect" {
			t.Errorf("close(%s)", got)
		}
		if n := ws.Get("listeners").Int(); n != 0 {
			t.Errorf("%d listeners left after Close", n)
		}
		select {
		case err := <-reading:
			if err == nil || closeStatus(err) != -1 {
				t.Errorf("Read after our Close: %v (status %d)", err, closeStatus(err))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Read still waiting after Close")
		}
	})

	t.Run("Read ends with its context", func(t *testing.T) {
		s, _ := dialFake(t, fake, "ws://relay.test/sync", 1<<20)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Read: %v", err)
		}
		closeSocket(s, false)
	})

	t.Run("dial refused", func(t *testing.T) {
		ch := make(chan error, 1)
		go func() { _, err := dialSocket(context.Background(), "ws://relay.test/sync", nil, 1<<20); ch <- err }()
		ws := waitSocket(t, fake)
		ws.Call("closed", 1006, "", false)
		if err := <-ch; closeStatus(err) != 1006 {
			t.Errorf("dial: %v", err)
		}
		if n := ws.Get("listeners").Int(); n != 0 {
			t.Errorf("%d listeners left", n)
		}
		if _, err := dialSocket(context.Background(), "ws://refused.test/", nil, 1<<20); err == nil || !strings.Contains(err.Error(), "refused URL") {
			t.Errorf("dial of a URL the constructor refuses: %v", err)
		}
		if _, err := dialSocket(context.Background(), "ftp://relay.test/", nil, 1<<20); err == nil || !strings.Contains(err.Error(), "is not a ws://") {
			t.Errorf("dial of an ftp URL: %v", err)
		}
	})

	t.Run("dial cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan error, 1)
		go func() { _, err := dialSocket(ctx, "ws://relay.test/sync", nil, 1<<20); ch <- err }()
		ws := waitSocket(t, fake)
		cancel()
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Errorf("dial: %v", err)
		}
		if got := ws.Get("closes").Index(0).String(); !strings.HasPrefix(got, "1000 ") {
			t.Errorf("close(%s)", got)
		}
		for deadline := time.Now().Add(5 * time.Second); ws.Get("listeners").Int() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("listeners not removed after the close event")
			}
		}
	})
}

// TestJSRelayURL: in the browser, Connect reads relay URLs with the
// browser's URL parser; it refuses what the native build refuses
// (TestConnectArguments) and maps http(s) to ws(s).
func TestJSRelayURL(t *testing.T) {
	for _, url := range []string{"", "relay.example/sync", "ftp://relay.example/sync", "ws:///sync", "ws:relay.example/sync",
		"ws://", "ws://?q", "ws://relay.example:99999/", "javascript:alert(1)"} {
		if got, err := relayURL(url); err == nil {
			t.Errorf("relayURL(%q) = %q, want an error", url, got)
		}
	}
	for url, want := range map[string]string{
		"ws://relay.example/sync":         "ws://relay.example/sync",
		"wss://relay.example:8443/s?db=1": "wss://relay.example:8443/s?db=1",
		"http://127.0.0.1:8080/sync":      "ws://127.0.0.1:8080/sync",
		"HTTPS://Relay.Example/sync":      "wss://relay.example/sync",
		"https://relay.example:443/":      "wss://relay.example/",
		"ws://[::1]:9/sync":               "ws://[::1]:9/sync",
	} {
		if got, err := relayURL(url); err != nil || got != want {
			t.Errorf("relayURL(%q) = %q, %v; want %q", url, got, err, want)
		}
	}
}
