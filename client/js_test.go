//go:build js

package client

import (
	"os"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestJSSync runs the client over the JavaScript WebSocket (socket_js.go)
// against a relay given by REPLICA_TEST_RELAY (a ws://
// URL of a running cmd/relay with -auth none); it is skipped without one.
// Under Node 20 run it with NODE_OPTIONS=--experimental-websocket:
//
//	go run ./cmd/relay -addr 127.0.0.1:8099 -data /tmp/r -web '' &
//	REPLICA_TEST_RELAY=ws://127.0.0.1:8099/sync NODE_OPTIONS=--experimental-websocket \
//	  GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec" -run TestJSSync ./client/
//
// Two replicas in the page sync through the relay: a write on one arrives
// on the other; Disconnect closes the sockets (status 1000, the only one a
// page may use) and Close leaves no goroutine behind.
func TestJSSync(t *testing.T) {
	url := os.Getenv("REPLICA_TEST_RELAY")
	if url == "" {
		t.Skip("REPLICA_TEST_RELAY not set")
	}
	open := func() *engine.Engine {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &model.Schema{Tables: []model.TableDef{{
			Name: "notes", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}, {Name: "title", Type: model.KindText}},
		}}}})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dbID := "js-" + time.Now().Format("150405.000000")
	a, b := open(), open()
	ca, cb := New(a, Options{}), New(b, Options{})
	for _, c := range []*Client{ca, cb} {
		if err := c.Connect(url, dbID, ""); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (a: %+v, b: %+v)", what, ca.State(), cb.State())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t0 := time.Now()
	wait("both synced", func() bool { return ca.State().State == Synced && cb.State().State == Synced })
	t.Logf("both synced after %v", time.Since(t0))
	if _, err := a.Insert("notes", map[string]any{"id": "from-a", "title": "hello"}); err != nil {
		t.Fatal(err)
	}
	wait("the row on b", func() bool { _, err := b.Get("notes", engine.Key{"from-a"}); return err == nil })
	wait("a's push acknowledged", func() bool { n, err := ca.Pending(); return err == nil && n == 0 })
	t0 = time.Now()
	ca.Disconnect()
	t.Logf("Disconnect took %v", time.Since(t0))
	if st := ca.State(); st.State != Disconnected || st.Err != nil {
		t.Fatalf("after Disconnect: %+v", st)
	}
	ca.Close()
	cb.Close()
}
