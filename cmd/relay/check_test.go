//go:build !js

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/replica-sync/replica/relay"
)

// TestCheck: -check tells, without touching anything, whether a relay
// could start: not when another relay holds the data directory (named by
// its process), nor when the address is taken; and errors are reported
// with one "relay: " prefix.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	check := func(args ...string) error {
		var out, errb bytes.Buffer
		return run(context.Background(), append([]string{"-check"}, args...), env(nil), &out, &errb)
	}

	// Free: a directory that does not exist yet is not created.
	if err := check("-data", data, "-addr", "127.0.0.1:0"); err != nil {
		t.Fatalf("-check on a free directory: %v", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("-check created the data directory (%v)", err)
	}

	srv, err := relay.New(relay.Config{DataDir: data, Auth: relay.AllowAll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	lock := filepath.Join(data, "relay.lock")
	before, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	err = check("-data", data, "-addr", "127.0.0.1:0")
	if !errors.Is(err, relay.ErrDataDirInUse) {
		t.Fatalf("-check beside a running relay: %v, want ErrDataDirInUse", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if line := errorLine(err); line != "relay: data directory "+data+" is in use by another relay (process "+pid+")" {
		t.Errorf("reported as %q", line)
	}
	if after, _ := os.ReadFile(lock); !bytes.Equal(after, before) {
		t.Errorf("-check changed the running relay's lock file: %q, was %q", after, before)
	}
	// A second relay on the directory fails the same way, prefixed once.
	if _, err := relay.New(relay.Config{DataDir: data, Auth: relay.AllowAll}); !errors.Is(err, relay.ErrDataDirInUse) || strings.Count(errorLine(err), "relay:") != 1 {
		t.Errorf("second relay: %v", err)
	}

	// The address taken.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = check("-data", filepath.Join(dir, "other"), "-addr", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "address "+ln.Addr().String()+" is in use") {
		t.Errorf("-check on a taken address: %v", err)
	}
	if line := errorLine(errors.New("x")); line != "relay: x" {
		t.Errorf("errorLine of an unprefixed error: %q", line)
	}
}
