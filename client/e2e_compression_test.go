//go:build !js

package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/relay"
)

// TestCompressionModes: a native client offers the permessage-deflate
// mode of its Options.Compression (no context takeover by default, none
// when off), and syncs both ways, bulk and single-row transactions, with
// a relay accepting deflate (its default) and with one declining it.
func TestCompressionModes(t *testing.T) {
	offers := map[client.Compression]string{
		client.CompressionDefault:           "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
		client.CompressionOff:               "",
		client.CompressionNoContextTakeover: "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
		client.CompressionContextTakeover:   "permessage-deflate",
	}
	names := map[client.Compression]string{client.CompressionDefault: "default", client.CompressionOff: "off",
		client.CompressionNoContextTakeover: "nocontext", client.CompressionContextTakeover: "context"}
	for _, rm := range []relay.Compression{relay.CompressionDefault, relay.CompressionOff} {
		srv, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, Logger: quietLogger(), Compression: rm})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var seen []string // each upgrade's Sec-WebSocket-Extensions
		h := srv.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path == "/sync" {
				mu.Lock()
				seen = append(seen, req.Header.Get("Sec-WebSocket-Extensions"))
				mu.Unlock()
			}
			h.ServeHTTP(w, req)
		}))
		url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"
		for _, cm := range []client.Compression{client.CompressionDefault, client.CompressionOff, client.CompressionNoContextTakeover, client.CompressionContextTakeover} {
			t.Run(fmt.Sprintf("relay=%s/client=%s", map[relay.Compression]string{relay.CompressionDefault: "default", relay.CompressionOff: "off"}[rm], names[cm]), func(t *testing.T) {
				db := "deflate-" + names[cm]
				a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{Compression: cm})
				b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
				mu.Lock()
				seen = seen[:0]
				mu.Unlock()
				a.connect(t, url, db, "")
				waitState(t, a, client.Synced)
				mu.Lock()
				offer := seen[0]
				mu.Unlock()
				if offer != offers[cm] {
					t.Errorf("the client offered %q, want %q", offer, offers[cm])
				}
				b.connect(t, url, db, "")
				waitState(t, b, client.Synced)
				insertMany := func(r *replica, prefix string, n int) {
					t.Helper()
					_, err := r.db.Transact(func(tx *engine.Tx) error {
						for i := range n {
							if _, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("%s-%03d", prefix, i), "title": strings.Repeat("a note of some length ", 3), "n": i}); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				insertMany(a, "a-bulk", 100)
				for i := range 3 {
					insertMany(a, fmt.Sprintf("a-single-%d", i), 1)
				}
				insertMany(b, "b-bulk", 100)
				for _, r := range []*replica{a, b} {
					waitFor(t, r.name+" holds every note", func() bool { return count(t, r.db, "notes") == 203 })
				}
				// A device bootstrapping from the relay's snapshot, with a's mode.
				c := newReplica(t, "c", notesSchema(), engine.Options{}, client.Options{Compression: cm})
				c.connect(t, url, db, "")
				waitFor(t, "c holds every note", func() bool { return count(t, c.db, "notes") == 203 })
			})
		}
		srv.Close()
		hs.Close()
	}
}

// TestCompressionInvalid: an Options.Compression that is none of the
// constants is refused by Connect, naming the field, rather than falling
// back to the default without a word.
func TestCompressionInvalid(t *testing.T) {
	for _, m := range []client.Compression{-1, client.CompressionContextTakeover + 1, 99} {
		r := newReplica(t, "bad", notesSchema(), engine.Options{}, client.Options{Compression: m})
		err := r.c.Connect("ws://127.0.0.1:1/sync", "notes", "")
		if err == nil || !strings.Contains(err.Error(), "Options.Compression") {
			t.Errorf("Compression %d: Connect = %v, want an error naming Options.Compression", int(m), err)
		}
		if st := r.c.State(); st.State != client.Disconnected {
			t.Errorf("Compression %d: state %v after the refused Connect, want Disconnected", int(m), st.State)
		}
	}
	r := newReplica(t, "good", notesSchema(), engine.Options{}, client.Options{Compression: client.CompressionContextTakeover})
	if err := r.c.Connect("ws://127.0.0.1:1/sync", "notes", ""); err != nil {
		t.Errorf("CompressionContextTakeover: Connect = %v", err)
	}
}
