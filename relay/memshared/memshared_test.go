//go:build !js

package memshared_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/memshared"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startRelay(t *testing.T, st relay.Storage) string {
	t.Helper()
	srv, err := relay.New(relay.Config{Storage: st, Auth: relay.AllowAll, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = hs.Close()
	})
	return "ws://" + ln.Addr().String() + "/sync"
}

func schema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{Name: "notes", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "n", Type: model.KindInteger}}}}}
}

// TestTwoRelaysOneStorage: devices on two relays sharing one storage see
// each other's writes within a fraction of the periodic check (so by
// notification), and each relay's connections get the log in cursor
// order (every device converges to the same rows).
func TestTwoRelaysOneStorage(t *testing.T) {
	st := memshared.New()
	urls := []string{startRelay(t, st.Relay()), startRelay(t, st.Relay())}
	type dev struct {
		db *engine.Engine
		c  *client.Client
	}
	var ds []dev
	for i := range 4 {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: schema()})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(db, client.Options{Logger: quiet})
		t.Cleanup(func() { c.Close(); db.Close() })
		if err := c.Connect(urls[i%2], "db", ""); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, dev{db, c})
	}
	rows := func(db *engine.Engine) string {
		rs, err := db.Query("notes", engine.Query{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r["id"].Text())
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	var want []string
	for round := range 5 {
		for i, d := range ds {
			id := fmt.Sprintf("r%d-d%d", round, i)
			if _, err := d.db.Insert("notes", map[string]any{"id": id, "n": round}); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		slices.Sort(want)
		// Well under the relays' 2 s check of their heads: delivered
		// by notification.
		deadline := time.Now().Add(1500 * time.Millisecond)
		for i, d := range ds {
			for rows(d.db) != strings.Join(want, ",") {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: device %d on relay %d holds %s, want %s (%+v)", round, i, i%2, rows(d.db), strings.Join(want, ","), d.c.State())
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}
