//go:build !js

package relay

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// TestServeConnOpenStore: ServeConn serves a connection upgraded by another
// HTTP server, and Config.OpenStore gives the database its store (memkv
// here): the handshake and a ping work, the store holds the relay's format
// key, and DataDir is neither created nor locked.
func TestServeConnOpenStore(t *testing.T) {
	store := memkv.New(StoreBuckets()...)
	dir := filepath.Join(t.TempDir(), "unused")
	var opened []string
	srv, err := New(Config{DataDir: dir, Auth: AllowAll, Logger: testLogger(t),
		OpenStore: func(id string) (kv.Store, error) { opened = append(opened, id); return store, nil }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		srv.ServeConn(ws, r.RemoteAddr, r.Header)
	}))
	defer hs.Close()
	c := dial(t, &testRelay{addr: strings.TrimPrefix(hs.URL, "http://")}, nil)
	c.handshake("db1", "")
	c.ping()
	if len(opened) != 1 || opened[0] != "db1" {
		t.Fatalf("OpenStore called for %v, want [db1]", opened)
	}
	err = store.View(func(tx kv.Tx) error {
		_, err := tx.Get(bucketRelay, keyFormat)
		return err
	})
	if err != nil {
		t.Fatalf("the relay's format key is not in the OpenStore store: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DataDir %s was touched: %v", dir, err)
	}
	// Read the close while Close waits for the closing handshake.
	closed := make(chan error, 1)
	go func() { _, _, err := c.ws.Read(t.Context()); closed <- err }()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if st := websocket.CloseStatus(<-closed); st != websocket.StatusGoingAway {
		t.Fatalf("closed with status %d, want %d", st, websocket.StatusGoingAway)
	}
}
