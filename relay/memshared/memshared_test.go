//go:build !js

package memshared_test

import (
	"errors"
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
	"github.com/replica-sync/replica/kv"
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

// TestReplace: Replace(id, copy) serves the copy's data to the next Open
// of any relay, Replace(id, nil) serves an empty database, and a store
// opened before a Replace no longer reaches the storage's data.
func TestReplace(t *testing.T) {
	st := memshared.New()
	a, b := st.Relay(), st.Relay()
	put := func(s kv.Store, k, v string) {
		t.Helper()
		if err := s.Update(func(tx kv.Tx) error { return tx.Put("relay", []byte(k), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s kv.Store, k string) string {
		t.Helper()
		var out string
		err := s.View(func(tx kv.Tx) error {
			v, err := tx.Get("relay", []byte(k))
			if errors.Is(err, kv.ErrNotFound) {
				out = "<none>"
				return nil
			}
			out = string(v)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	old, err := a.Open("db")
	if err != nil {
		t.Fatal(err)
	}
	put(old, "k", "1")
	// A copy of the data as it is now.
	backup := memkv.New(relay.StoreBuckets()...)
	if err := backup.Update(func(tx kv.Tx) error { return tx.Put("relay", []byte("k"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	put(old, "k", "2")

	st.Replace("db", backup)
	if st.Store("db") != backup {
		t.Fatal("Store does not return the replacing store")
	}
	restored, err := b.Open("db")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(restored, "k"); got != "1" {
		t.Fatalf("after Replace with the copy: k=%s, want 1", got)
	}
	// The handle opened before writes to the detached data only.
	put(old, "k", "3")
	if got := get(restored, "k"); got != "1" {
		t.Fatalf("a store opened before Replace reached the new data: k=%s", got)
	}

	st.Replace("db", nil)
	if st.Store("db") != nil {
		t.Fatal("Store after Replace(nil) is not nil")
	}
	wiped, err := a.Open("db")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(wiped, "k"); got != "<none>" {
		t.Fatalf("after Replace with nil: k=%s, want nothing", got)
	}
	if got := get(restored, "k"); got != "1" {
		t.Fatalf("the restored store's handle lost its data: k=%s", got)
	}
}
