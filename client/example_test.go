//go:build !js

package client_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
)

// ExampleNew syncs two replicas through a relay started in the example: a
// row written on one arrives on the other. A Client syncs one engine with
// one relay database; Connect returns at once, and the client dials,
// syncs and reconnects in the background (watch State or Subscribe).
func ExampleNew() {
	dir, err := os.MkdirTemp("", "client-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := relay.New(relay.Config{DataDir: dir, Auth: relay.AllowAll, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	url := "ws" + web.URL[len("http"):] + "/sync"

	schema := model.Schema{Tables: []model.TableDef{{
		Name:    "notes",
		Columns: []model.ColumnDef{{Name: "text", Type: model.KindText}},
	}}}
	replica := func() (*engine.Engine, *client.Client) {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema})
		if err != nil {
			log.Fatal(err)
		}
		c := client.New(db, client.Options{Logger: quiet})
		if err := c.Connect(url, "example", ""); err != nil {
			log.Fatal(err)
		}
		return db, c
	}
	phone, phoneSync := replica()
	defer phone.Close()
	defer phoneSync.Close() // before its engine and the relay
	laptop, laptopSync := replica()
	defer laptop.Close()
	defer laptopSync.Close()

	if _, err := phone.Insert("notes", map[string]any{"id": "n1", "text": "hello"}); err != nil {
		log.Fatal(err)
	}
	// The phone pushes the change; the relay pushes it on to the laptop.
	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				log.Fatal("timed out waiting for ", what)
			}
		}
	}
	waitFor("the note on the laptop", func() bool {
		_, err := laptop.Get("notes", engine.Key{"n1"})
		return err == nil
	})
	row, err := laptop.Get("notes", engine.Key{"n1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("laptop:", row["text"].Text())
	waitFor("the phone's push acknowledged", func() bool {
		n, err := phoneSync.Pending()
		return err == nil && n == 0 && phoneSync.State().State == client.Synced
	})
	fmt.Println("phone:", phoneSync.State().State)
	// Output:
	// laptop: hello
	// phone: synced
}
