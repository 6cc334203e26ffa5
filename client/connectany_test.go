//go:build !js

package client

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestConnectAnyRotates: ConnectAny dials the next relay URL when one
// cannot be reached, and keeps what it stores per relay under the first
// URL whichever relay answered.
func TestConnectAnyRotates(t *testing.T) {
	// A port nothing listens on: the first URL refuses every dial.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "ws://" + ln.Addr().String() + "/sync"
	ln.Close()
	r := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "n1", "first")
	c := newClient(t, db, Options{BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if err := c.ConnectAny([]string{dead, r.url}, "notes", ""); err != nil {
		t.Fatal(err)
	}
	p := r.accept(t)
	p.syncUp(t, 0)
	waitCond(t, "synced", func() bool { return c.State().State == Synced })
	// The per-relay hint is kept under the first URL.
	if b, err := db.State(relayKey(dead, "notes")); err != nil || b == nil {
		t.Fatalf("no hint under the first URL (%v)", err)
	}
	if b, _ := db.State(relayKey(r.url, "notes")); b != nil {
		t.Fatalf("a hint under the dialed URL %q", r.url)
	}

	// Bad input is refused whole.
	for _, urls := range [][]string{nil, {}, {r.url, "ftp://x"}, {"ws://a/sync\nws://b/sync"}} {
		if err := c.ConnectAny(urls, "notes", ""); err == nil {
			t.Errorf("ConnectAny(%q) accepted", urls)
		} else if len(urls) > 0 && !strings.Contains(err.Error(), "URL") {
			t.Errorf("ConnectAny(%q): %v", urls, err)
		}
	}
}
