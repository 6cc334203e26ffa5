//go:build !js

package relay_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/replica-sync/replica/relay"
)

// ExampleNew runs a relay on a loopback port: one bbolt file per database
// under DataDir, every client allowed (relay.AllowAll, for development;
// relay.NewTokens checks a token per database). Clients sync at
// ws://ADDR/sync (client.Client.Connect); /healthz and /metrics serve
// operations. cmd/relay is this with flags.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "relay-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	srv, err := relay.New(relay.Config{
		DataDir: dir,
		Auth:    relay.AllowAll,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("healthz:", resp.StatusCode)

	stop() // Serve shuts the relay down (Close) and returns
	fmt.Println("served:", <-served)
	// Output:
	// healthz: 200
	// served: <nil>
}
