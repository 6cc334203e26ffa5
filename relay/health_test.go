//go:build !js

package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// mountTmpfs mounts a tmpfs of size (mount's syntax, "4m") on a new
// directory, unmounted at the end of the test; it skips the test where
// mounting is not permitted (not root, no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	needFiles(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("this test needs a small file system of its own and cannot mount one here (run as root): mount -t tmpfs: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for len(chunk) > 0 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	return path
}

func health(t *testing.T, r *testRelay) (int, string) {
	t.Helper()
	resp, err := http.Get(r.url("/healthz"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAllBody(t, resp.Body)
}

// Issue 10 §11: /healthz answered 200 while every write failed on a full
// disk. A relay whose data directory is on a full file system (a real
// tmpfs, real bbolt files) now answers 503 naming the database and the
// error while its writes fail, and 200 again after its next successful
// write, with /metrics counting the failures.
func TestHealthReportsStorageFailure(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	r := startRelay(t, Config{DataDir: dir})
	rep := newReplica(t, nil)
	c := connectAs(t, r, "acme", rep)
	c.apply("apply-1", localSets(t, rep))
	if code, body := health(t, r); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz before the disk filled: %d %q", code, body)
	}

	filler := fill(t, dir)
	big := strings.Repeat("x", 512<<10)
	cs, err := rep.Transact(func(tx *engine.Tx) error {
		_, err := tx.Insert("stops", map[string]any{"trip": "t1", "name": big})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.send(&wire.ApplyChanges{RequestID: "apply-2", ChangeSets: []model.ChangeSet{*cs}})
	if e := c.expectError(wire.CodeApplyChangesError); e.RequestID != "apply-2" {
		t.Fatalf("error for %q, want apply-2", e.RequestID)
	}
	code, body := health(t, r)
	t.Logf("/healthz on a full disk: %d %q", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `storage failing: database "acme": write failed 1 times`) || !strings.Contains(body, "quota exceeded") {
		t.Fatalf("/healthz while writes fail: %d %q; want 503 naming the database and the error", code, body)
	}
	m := metricsText(t, r)
	for _, want := range []string{`replica_relay_storage_errors_total{op="write"} 1`, "replica_relay_storage_failing 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A retention pass with nothing to remove succeeds on the full disk;
	// it proves nothing of writes, so /healthz still reports them.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Logf("Maintain on the full disk: %v", err)
	}
	if code, body := health(t, r); code != http.StatusServiceUnavailable || !strings.Contains(body, "write failed") {
		t.Fatalf("/healthz after a retention pass on the full disk: %d %q; want 503 (writes still fail)", code, body)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.send(&wire.ApplyChanges{RequestID: "apply-3", ChangeSets: []model.ChangeSet{*cs}})
	if res := recvType[*wire.ApplyResult](c); res.RequestID != "apply-3" {
		t.Fatalf("apply_result for %q", res.RequestID)
	}
	if code, body := health(t, r); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz after a successful write: %d %q", code, body)
	}
	if !strings.Contains(metricsText(t, r), "replica_relay_storage_failing 0") {
		t.Errorf("/metrics: storage_failing not back to 0")
	}
}

// syncBuffer is a bytes.Buffer safe for the relay's goroutines.
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

// Issue 10 §11: JSON logs printed the site id as a byte array
// ("site":[155,58,...]). Every id in the relay's JSON log lines is text:
// the client's site id, the database's serverSiteId, the database and
// connection ids.
func TestJSONLogIDsAreText(t *testing.T) {
	var buf syncBuffer
	r := startRelay(t, Config{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := dial(t, r, nil)
	ack := c.handshake("acme", "")
	c.ping()
	var started, opened map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		switch rec["msg"] {
		case "relay: session started":
			started = rec
		case "relay: database opened":
			opened = rec
		}
		for k, v := range rec {
			if _, isArray := v.([]any); isArray {
				t.Errorf("log line %q: %s is an array: %s", rec["msg"], k, line)
			}
		}
	}
	if started == nil || opened == nil {
		t.Fatalf("log lacks the session start or the database open:\n%s", buf.String())
	}
	if started["site"] != c.site.String() || started["database"] != "acme" || started["conn"] != ack.ConnectionID {
		t.Errorf("session started: site %v database %v conn %v; want %s acme %s", started["site"], started["database"], started["conn"], c.site, ack.ConnectionID)
	}
	if opened["serverSiteId"] != ack.ServerSiteID.String() {
		t.Errorf("database opened: serverSiteId %v, want %s", opened["serverSiteId"], ack.ServerSiteID)
	}
}
