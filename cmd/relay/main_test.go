//go:build !js

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/wire"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFlagsAndEnvironment(t *testing.T) {
	o, err := parseFlags(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:8080" || o.cfg.DataDir != "data" || o.cfg.WebDir != "web" || o.auth != "none" {
		t.Fatalf("defaults: addr %q data %q web %q auth %q", o.addr, o.cfg.DataDir, o.cfg.WebDir, o.auth)
	}
	o, err = parseFlags([]string{"-addr", ":9000", "-max-frame", "1MiB", "-retention", "7d"},
		env(map[string]string{
			"REPLICA_RELAY_ADDR":              ":1", // the flag wins
			"REPLICA_RELAY_DATA":              "/var/lib/replica",
			"REPLICA_RELAY_IDLE_TIMEOUT":      "2m",
			"REPLICA_RELAY_PAGE_CHANGES":      "500",
			"REPLICA_RELAY_TOKEN_FILE":        "t.json",
			"REPLICA_RELAY_AUTH":              "tokens",
			"REPLICA_RELAY_LOG_LEVEL":         "debug",
			"REPLICA_RELAY_MAX_APPLY_CHANGES": "10",
			"REPLICA_RELAY_COMPRESSION":       "context",
		}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case o.addr != ":9000", o.cfg.DataDir != "/var/lib/replica", o.cfg.IdleTimeout != 2*time.Minute,
		o.cfg.PageChanges != 500, o.tokenFile != "t.json", o.auth != "tokens", o.cfg.MaxMessageSize != 1<<20,
		o.cfg.Retention != 7*24*time.Hour, o.cfg.MaxChangesPerApply != 10, o.logLevel.String() != "DEBUG",
		o.cfg.Compression != relay.CompressionContextTakeover:
		t.Fatalf("parsed %+v", *o)
	}
	if _, err := parseFlags(nil, env(map[string]string{"REPLICA_RELAY_IDLE_TIMEOUT": "soon"}), io.Discard); err == nil || !strings.Contains(err.Error(), "REPLICA_RELAY_IDLE_TIMEOUT") {
		t.Fatalf("bad environment value: %v, want an error naming the variable", err)
	}
	// A bad flag: its error, then one line pointing at -h (not the whole
	// list, which buried the error).
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-compression", "bogus"}, env(nil), &out); err == nil || out.String() != "invalid value \"bogus\" for flag -compression: compression \"bogus\": want off, nocontext or context\nRun relay -h for the flags and their environment variables.\n" {
		t.Fatalf("bad flag: %v, printed %q", err, out.String())
	}
	if _, err := parseFlags(nil, env(map[string]string{"REPLICA_RELAY_INSPECT": "yes"}), io.Discard); err == nil || !strings.Contains(err.Error(), `REPLICA_RELAY_INSPECT="yes": not a boolean (want true, false, 1 or 0)`) {
		t.Fatalf("bad boolean environment value: %v, want an error saying what a boolean is", err)
	}
	if o, err := parseFlags([]string{"-compression", "off"}, env(nil), io.Discard); err != nil || o.cfg.Compression != relay.CompressionOff {
		t.Fatalf("-compression off: %v, %v", err, o.cfg.Compression)
	}
	for _, args := range [][]string{{"-max-frame", "-3"}, {"-retention", "forever"}, {"stray"}, {"-log-format", "xml"}, {"-compression", "gzip"}} {
		if _, err := parseFlags(args, env(nil), io.Discard); err == nil {
			t.Errorf("flags %q accepted", args)
		}
	}
	var help bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, env(nil), &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "REPLICA_RELAY_TOKEN_FILE") {
		t.Fatalf("-h: %v, usage without the environment variables:\n%s", err, help.String())
	}
}

func TestRunRefusesBadAuth(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-auth", "tokens"},
		{"-auth", "magic"},
		{"-auth", "none", "-token-file", "x.json"},
		{"-auth", "tokens", "-token-file", filepath.Join(dir, "missing.json")},
	} {
		if err := run(ctx, append(args, "-data", dir, "-addr", "127.0.0.1:0"), env(nil), io.Discard, io.Discard); err == nil {
			t.Errorf("run %q started", args)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"demo":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-web", "", "-auth", "tokens"}, env(map[string]string{
			"REPLICA_RELAY_DATA":       filepath.Join(dir, "data"),
			"REPLICA_RELAY_TOKEN_FILE": tokens,
		}), &stdout, &stderr)
	}()
	re := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/) \(sync endpoint (ws://127\.0\.0\.1:\d+/sync)\)`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; {
		if m = re.FindStringSubmatch(stdout.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	resp, err := http.Get(m[1] + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()

	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, m[2], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	hs, _ := wire.Encode(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "demo", SiteID: model.SiteID{1}, Token: "s3cret"})
	if err := ws.Write(dctx, websocket.MessageText, hs); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(dctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := wire.Decode(b); err != nil || msg.Type() != wire.TypeHandshakeAck {
		t.Fatalf("handshake answered %s (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "demo.db")); err != nil {
		t.Fatalf("database file: %v", err)
	}

	// SIGINT/SIGTERM cancel the context: the relay closes with 1001.
	closed := make(chan error, 1)
	go func() { _, _, err := ws.Read(context.Background()); closed <- err }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if err := <-closed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("client saw %v, want close 1001", err)
	}
	if !strings.Contains(stderr.String(), "relay: stopped") {
		t.Fatalf("no shutdown log:\n%s", stderr.String())
	}
}

func TestBrowseURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"[::]:8080":      "http://localhost:8080/",
		"0.0.0.0:80":     "http://localhost:80/",
		"[::1]:9":        "http://[::1]:9/",
	} {
		if got := browseURL(fakeAddr(addr)); got != want {
			t.Errorf("browseURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func TestConnectionLimitFlags(t *testing.T) {
	o, err := parseFlags(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.HandshakeTimeout != 10*time.Second || o.cfg.MaxConnections != 10000 {
		t.Fatalf("defaults: handshake timeout %v, max connections %d", o.cfg.HandshakeTimeout, o.cfg.MaxConnections)
	}
	o, err = parseFlags([]string{"-max-connections", "50"}, env(map[string]string{"REPLICA_RELAY_HANDSHAKE_TIMEOUT": "3s"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.HandshakeTimeout != 3*time.Second || o.cfg.MaxConnections != 50 {
		t.Fatalf("parsed handshake timeout %v, max connections %d", o.cfg.HandshakeTimeout, o.cfg.MaxConnections)
	}
}

// The per-connection rate limits (issue 10 §10) are flags and variables.
func TestRateLimitFlags(t *testing.T) {
	o, err := parseFlags(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg // byte sizes left unset take the relay's defaults
	if c.FrameRate != relay.DefaultFrameRate || c.FrameBurst != relay.DefaultFrameBurst || c.ByteRate != 0 ||
		c.ByteBurst != 0 || c.RateLimitGrace != relay.DefaultRateLimitGrace {
		t.Fatalf("defaults: %d/s burst %d, %d B/s burst %d, grace %v", c.FrameRate, c.FrameBurst, c.ByteRate, c.ByteBurst, c.RateLimitGrace)
	}
	o, err = parseFlags([]string{"-frame-rate", "50", "-byte-burst", "32MiB"},
		env(map[string]string{"REPLICA_RELAY_FRAME_BURST": "70", "REPLICA_RELAY_BYTE_RATE": "1MiB", "REPLICA_RELAY_RATE_LIMIT_GRACE": "3s"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c = o.cfg
	if c.FrameRate != 50 || c.FrameBurst != 70 || c.ByteRate != 1<<20 || c.ByteBurst != 32<<20 || c.RateLimitGrace != 3*time.Second {
		t.Fatalf("parsed: %d/s burst %d, %d B/s burst %d, grace %v", c.FrameRate, c.FrameBurst, c.ByteRate, c.ByteBurst, c.RateLimitGrace)
	}
}

// -h shows each flag's default once, in the form the flag takes.
func TestHelpDefaults(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, env(nil), &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	usage := map[string]string{} // flag → its help text
	var name string
	for _, line := range strings.Split(help.String(), "\n") {
		if f, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(f, " ")
			continue
		}
		if name != "" {
			usage[name] += line
		}
	}
	for f, u := range usage {
		if n := strings.Count(u, "(default"); n > 1 {
			t.Errorf("-%s shows %d defaults: %s", f, n, u)
		}
	}
	// Boolean flags: "-inspect" alone on its line (no trailing space), no
	// "(default false)".
	for _, line := range strings.Split(help.String(), "\n") {
		if strings.HasPrefix(line, "  -") && strings.HasSuffix(line, " ") {
			t.Errorf("flag line with a trailing space: %q", line)
		}
	}
	for _, f := range []string{"inspect", "check"} {
		if _, ok := usage[f]; !ok || strings.Contains(usage[f], "(default") {
			t.Errorf("-%s: %q (want listed, without a default)", f, usage[f])
		}
	}
	for f, want := range map[string]string{
		"max-frame":      "(default 16MiB)",
		"retention":      "(default 30d)",
		"log-level":      "(default info)",
		"addr":           `(default "127.0.0.1:8080")`,
		"send-queue":     "(default 64)",
		"max-checkpoint": "(default 1GiB)",
		"compression":    "(default nocontext)",
	} {
		if !strings.Contains(usage[f], want) {
			t.Errorf("-%s: %q lacks %s", f, usage[f], want)
		}
	}
	// The shown forms parse back to the defaults.
	o, err := parseFlags([]string{"-max-frame", "16MiB", "-retention", "30d", "-log-level", "info"}, env(nil), io.Discard)
	if err != nil || o.cfg.MaxMessageSize != 16<<20 || o.cfg.Retention != 30*24*time.Hour || o.logLevel != slog.LevelInfo {
		t.Fatalf("defaults as shown: %v, %+v", err, o)
	}
}

// TestStoreFlag: -store (or REPLICA_STORE) names a directory, which is
// -data, or a postgres:// URL; naming two places is an error.
func TestStoreFlag(t *testing.T) {
	o, err := parseFlags([]string{"-store", "/srv/replica"}, env(nil), io.Discard)
	if err != nil || o.cfg.DataDir != "/srv/replica" || isPostgresURL(o.store) {
		t.Fatalf("-store dir: %v, data %q", err, o.cfg.DataDir)
	}
	o, err = parseFlags(nil, env(map[string]string{"REPLICA_STORE": "postgres://u:secret@db/replica"}), io.Discard)
	if err != nil || !isPostgresURL(o.store) || o.cfg.DataDir != "data" {
		t.Fatalf("REPLICA_STORE postgres: %v, store %q", err, o.store)
	}
	if got := redactURL(o.store); strings.Contains(got, "secret") {
		t.Fatalf("redacted URL %q shows the password", got)
	}
	if _, err := parseFlags([]string{"-store", "/a", "-data", "/b"}, env(nil), io.Discard); err == nil {
		t.Fatal("-store /a -data /b accepted")
	}
	if _, err := parseFlags([]string{"-store", "/a", "-data", "/a"}, env(nil), io.Discard); err != nil {
		t.Fatalf("-store /a -data /a: %v", err)
	}
	// An unreachable PostgreSQL fails the start with the store named.
	err = run(context.Background(), []string{"-store", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "-addr", "127.0.0.1:0", "-web", ""}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-store") {
		t.Fatalf("unreachable store: %v", err)
	}
}
