//go:build !js

package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/relay"
)

// countedListener counts the TCP bytes of each connection it accepts.
type countedListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countedConn
}

type countedConn struct {
	net.Conn
	read, written atomic.Int64 // by the relay
}

func (l *countedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countedConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// TestSyncCompression: Chromium offers permessage-deflate on every
// WebSocket; a relay with its default Compression accepts it without
// context takeover (the page's WebSocket.extensions says so) and one with
// CompressionOff declines. Either way a page and a native device sync a
// 200-row transaction each way, and with deflate the page's sync
// connection carries fewer than a third of the TCP bytes it carries
// without, both ways.
func TestSyncCompression(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	const schemaJSON = `{"tables": {"notes": {"columns": {"id": "text", "title": "text", "n": "integer"}}}}`
	type traffic struct{ up, down int64 } // page → relay, relay → page
	got := map[relay.Compression]traffic{}
	for _, mode := range []struct {
		name       string
		c          relay.Compression
		extensions string
	}{
		{"default", relay.CompressionDefault, "permessage-deflate; client_no_context_takeover; server_no_context_takeover"},
		{"off", relay.CompressionOff, ""},
	} {
		t.Run("relay="+mode.name, func(t *testing.T) {
			rs, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, OriginPatterns: []string{"127.0.0.1:*"},
				Compression: mode.c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var offersMu sync.Mutex
			var offers []string // each upgrade's Sec-WebSocket-Extensions, as the client sent it
			h := rs.Handler()
			hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/sync" {
					offersMu.Lock()
					offers = append(offers, r.Header.Get("Sec-WebSocket-Extensions"))
					offersMu.Unlock()
				}
				h.ServeHTTP(w, r)
			}))
			ln := &countedListener{Listener: hs.Listener}
			hs.Listener = ln
			hs.Start()
			defer func() { rs.Close(); hs.Close() }()
			relayURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"
			dev, cl := nativeDevice(t, relayURL, "deflate-db", schemaJSON)
			for end := time.Now().Add(20 * time.Second); cl.State().State.String() != "synced"; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("the native device is %v", cl.State())
				}
			}
			tab, cancel := chromedp.NewContext(ctx)
			defer cancel()
			var ext string
			run(t, tab, srv.URL+"/two.html", `
				const ws = new WebSocket(`+fmt.Sprintf("%q", relayURL)+`);
				await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error("WebSocket failed")); });
				const ext = ws.extensions;
				ws.close();
				window.db = await Replica.open({name: "deflate-`+mode.name+`", schema: `+schemaJSON+`});
				await db.sync.connect(`+fmt.Sprintf("%q", relayURL)+`, {database: "deflate-db"});
				const end = Date.now() + 15000;
				while (db.sync.state.status !== "synced") { if (Date.now() > end) throw new Error(JSON.stringify(db.sync.state)); await new Promise((r) => setTimeout(r, 20)); }
				return ext;
			`, &ext)
			if ext != mode.extensions {
				t.Errorf("the page's WebSocket.extensions: %q, want %q", ext, mode.extensions)
			}
			offersMu.Lock()
			pageOffers := slices.Clone(offers[1:]) // the native device's first
			offersMu.Unlock()
			for _, o := range pageOffers {
				if !strings.HasPrefix(o, "permessage-deflate") {
					t.Errorf("Chromium offered %q, want permessage-deflate", o)
				}
			}
			t.Logf("Chromium offered %q", pageOffers)
			ln.mu.Lock()
			page := ln.conns[len(ln.conns)-1] // the page's sync connection, opened last
			ln.mu.Unlock()
			up0, down0 := page.read.Load(), page.written.Load()
			var n int
			if _, err := chromedp.Run(tab, chromedp.Evaluate[int](`(async () => {
				await db.transaction(async (tx) => { for (let i = 0; i < 200; i++) await tx.insert("notes", {id: "page-" + i, title: "a note written in the page, number " + i, n: i}); });
				await db.sync.pushed();
				return 200;
			})()`, chromedp.EvalAwaitPromise)); err != nil {
				t.Fatal(err)
			}
			_, err = dev.Transact(func(tx *engine.Tx) error {
				for i := range 200 {
					if _, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("dev-%d", i), "title": fmt.Sprintf("a note written on the device, number %d", i), "n": i}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			n, err = chromedp.Run(tab, chromedp.Evaluate[int](`(async () => {
				const end = Date.now() + 20000;
				while ((await db.query("notes", {})).length < 400) { if (Date.now() > end) break; await new Promise((r) => setTimeout(r, 20)); }
				return (await db.query("notes", {})).length;
			})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			if n != 400 {
				t.Fatalf("the page holds %d notes, want 400", n)
			}
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if c, err := dev.Count("notes", nil); err == nil && c == 400 {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the native device never held the page's notes")
				}
			}
			got[mode.c] = traffic{page.read.Load() - up0, page.written.Load() - down0}
			if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`db.close().then(() => true)`, chromedp.EvalAwaitPromise)); err != nil {
				t.Fatal(err)
			}
		})
	}
	on, off := got[relay.CompressionDefault], got[relay.CompressionOff]
	t.Logf("the page's sync connection, TCP bytes up/down: deflate %d/%d, off %d/%d", on.up, on.down, off.up, off.down)
	if on.up == 0 || off.up == 0 {
		t.Fatal("a mode did not run")
	}
	if on.up*3 > off.up || on.down*3 > off.down {
		t.Errorf("deflate did not save two thirds: up %d vs %d, down %d vs %d bytes", on.up, off.up, on.down, off.down)
	}
}
