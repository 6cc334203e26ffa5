//go:build !js

package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// chromiumOffer is the Sec-WebSocket-Extensions header Chromium sends with
// every WebSocket upgrade.
const chromiumOffer = "permessage-deflate; client_max_window_bits"

// upgradeExtensions sends a WebSocket upgrade to url (ws://…/sync)
// offering offer as Chromium does, and returns the status and the
// Sec-WebSocket-Extensions the relay answered.
func upgradeExtensions(t *testing.T, url, offer string) (int, string) {
	t.Helper()
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req, err := http.NewRequest("GET", "http"+strings.TrimPrefix(url, "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	req.Header.Set("Sec-WebSocket-Extensions", offer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Sec-WebSocket-Extensions")
}

// TestCompressionNegotiation: for each Config.Compression, what the relay
// answers a Chromium upgrade and a coder/websocket client offering each
// mode, and that a push and its push_changes travel through the
// connection compressed exactly when the extension was agreed (fewer TCP
// bytes than the frame carried) and arrive whole.
func TestCompressionNegotiation(t *testing.T) {
	e := newReplica(t, nil)
	insertStops(t, e, "lisbon", 40)
	sets := localSets(t, e) // the schema's transaction and 40 stops
	frame, err := wire.Encode(&wire.ApplyChanges{RequestID: "z", ChangeSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	offers := []struct {
		name string
		mode websocket.CompressionMode
	}{{"none", websocket.CompressionDisabled}, {"nocontext", websocket.CompressionNoContextTakeover}, {"context", websocket.CompressionContextTakeover}}
	for _, rc := range []struct {
		name     string
		mode     Compression
		chromium string // the relay's answer to Chromium's offer
	}{
		{"default", CompressionDefault, "permessage-deflate; client_no_context_takeover; server_no_context_takeover"},
		{"off", CompressionOff, ""},
		{"nocontext", CompressionNoContextTakeover, "permessage-deflate; client_no_context_takeover; server_no_context_takeover"},
		{"context", CompressionContextTakeover, "permessage-deflate"},
	} {
		t.Run("relay="+rc.name, func(t *testing.T) {
			url, ln := startCountingRelay(t, Config{Compression: rc.mode})
			if st, ext := upgradeExtensions(t, url, chromiumOffer); st != http.StatusSwitchingProtocols || ext != rc.chromium {
				t.Errorf("Chromium's offer: HTTP %d, extensions %q; want 101, %q", st, ext, rc.chromium)
			}
			for _, o := range offers {
				dialc := func(site model.SiteID) (*client, string) {
					ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
					defer cancel()
					ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: o.mode})
					if err != nil {
						t.Fatalf("offer %s: %v", o.name, err)
					}
					ws.SetReadLimit(-1)
					t.Cleanup(func() { _ = ws.CloseNow() })
					c := &client{t: t, ws: ws, site: site}
					if site.IsZero() {
						_, _ = rand.Read(c.site[:])
					}
					c.handshake("db-"+o.name, "")
					return c, resp.Header.Get("Sec-WebSocket-Extensions")
				}
				reader, _ := dialc(model.SiteID{})
				readerConn := ln.conn(ln.count() - 1)
				writer, ext := dialc(e.SiteID())
				writerConn := ln.conn(ln.count() - 1)
				agreed := rc.mode != CompressionOff && o.mode != websocket.CompressionDisabled
				noContext := rc.mode != CompressionContextTakeover || o.mode == websocket.CompressionNoContextTakeover
				switch {
				case !agreed && ext != "":
					t.Errorf("offer %s: extensions %q, want none", o.name, ext)
				case agreed && !strings.HasPrefix(ext, "permessage-deflate"):
					t.Errorf("offer %s: extensions %q, want permessage-deflate", o.name, ext)
				case agreed && strings.Contains(ext, "server_no_context_takeover") != noContext:
					t.Errorf("offer %s: extensions %q; server_no_context_takeover expected %v", o.name, ext, noContext)
				}
				read0, written0 := writerConn.read.Load(), readerConn.written.Load()
				writer.sendRaw(frame)
				if res := recvType[*wire.ApplyResult](writer); res.Transactions != len(sets) {
					t.Fatalf("offer %s: apply_result %+v", o.name, res)
				}
				push := recvType[*wire.PushChanges](reader)
				if got, want := txIDs(push.ChangeSets), txIDs(sets); !slices.Equal(got, want) {
					t.Fatalf("offer %s: push_changes carried %d ChangeSets, want the %d pushed", o.name, len(got), len(want))
				}
				// The relay answers the ping after the push_changes: its
				// write, all of it, is counted by then.
				reader.ping()
				in, out := writerConn.read.Load()-read0, readerConn.written.Load()-written0
				pushOut, err := wire.Encode(push)
				if err != nil {
					t.Fatal(err)
				}
				if compressed := in < int64(len(frame)); compressed != agreed {
					t.Errorf("offer %s: the %d-byte apply_changes took %d TCP bytes (compressed: %v, want %v)", o.name, len(frame), in, compressed, agreed)
				}
				if compressed := out < int64(len(pushOut)); compressed != agreed {
					t.Errorf("offer %s: the %d-byte push_changes took %d TCP bytes (compressed: %v, want %v)", o.name, len(pushOut), out, compressed, agreed)
				}
			}
		})
	}
}

// TestMessageTooLargeCompressed is TestMessageTooLarge through
// permessage-deflate: the relay judges a frame by the size it inflates
// to, not by the bytes that carried it, so a frame of 3× the limit that
// deflates to a few hundred bytes (a small "deflate bomb") is answered
// with MESSAGE_TOO_LARGE and closes the connection with 1009 as
// uncompressed, and one just over the limit is refused without ending
// the session.
func TestMessageTooLargeCompressed(t *testing.T) {
	const limit = 64 << 10
	url, ln := startCountingRelay(t, Config{MaxMessageSize: limit})
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: websocket.CompressionNoContextTakeover})
	if err != nil {
		t.Fatal(err)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
		t.Fatalf("extensions %q: deflate not agreed", ext)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	c := &client{t: t, ws: ws}
	_, _ = rand.Read(c.site[:])
	c.handshake("acme", "")
	conn := ln.conn(ln.count() - 1)
	c.sendRaw(bytes.Repeat([]byte("y"), limit+1))
	c.expectError(wire.CodeMessageTooLarge)
	c.ping()
	before := conn.read.Load()
	c.sendRaw(bytes.Repeat([]byte("z"), 3*limit))
	c.expectError(wire.CodeMessageTooLarge)
	c.expectClose(websocket.StatusMessageTooBig)
	if n := conn.read.Load() - before; n > 4<<10 {
		t.Errorf("the %d-byte frame took %d TCP bytes: not compressed?", 3*limit, n)
	}
}

// TestCompressionConfig: the modes' names, as -compression reads them,
// and a Config.Compression that names no mode refused by New.
func TestCompressionConfig(t *testing.T) {
	for s, want := range map[string]Compression{"off": CompressionOff, "nocontext": CompressionNoContextTakeover, "context": CompressionContextTakeover} {
		c, err := ParseCompression(s)
		if err != nil || c != want || c.String() != s {
			t.Errorf("ParseCompression(%q) = %v, %v", s, c, err)
		}
	}
	if CompressionDefault.String() != "nocontext" || CompressionDefault.mode() != websocket.CompressionNoContextTakeover {
		t.Errorf("the default is %s", CompressionDefault)
	}
	if _, err := ParseCompression("gzip"); err == nil {
		t.Error("ParseCompression(gzip) accepted")
	}
	if _, err := New(Config{DataDir: t.TempDir(), Auth: AllowAll, Compression: CompressionContextTakeover + 1}); err == nil || !strings.Contains(err.Error(), "Compression") {
		t.Errorf("New with compression mode 4: %v, want an error naming Compression", err)
	}
}
