//go:build !js

package client_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
)

var (
	relayBinOnce sync.Once
	relayBin     string
	relayBinErr  error
)

// buildRelay builds cmd/relay once per test binary.
func buildRelay(t *testing.T) string {
	t.Helper()
	relayBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "replica-relay-bin")
		if err != nil {
			relayBinErr = err
			return
		}
		relayBin = filepath.Join(dir, "relay")
		cmd := exec.Command("go", "build", "-o", relayBin, "./cmd/relay")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			relayBinErr = fmt.Errorf("go build ./cmd/relay: %v\n%s", err, out)
		}
	})
	if relayBinErr != nil {
		t.Fatal(relayBinErr)
	}
	return relayBin
}

// relayProcess is cmd/relay running as a child process, so that it can be
// killed for real (SIGKILL: no graceful shutdown, no flush).
type relayProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startRelayProcess(t *testing.T, bin, addr, dir string) *relayProcess {
	t.Helper()
	cmd := exec.Command(bin, "-addr", addr, "-data", dir, "-web", "", "-auth", "none", "-log-level", "error")
	cmd.Stderr = os.Stderr // errors only (-log-level error)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &relayProcess{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	waitFor(t, "the relay process to serve /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func (p *relayProcess) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestE2ERelayKilledMidPush: the relay process is killed (SIGKILL) while a
// replica pushes a stream of transactions, and restarted on the same data
// directory. The replicas reconnect with backoff and converge: every row
// once, with its last value, nothing pending.
func TestE2ERelayKilledMidPush(t *testing.T) {
	bin := buildRelay(t)
	checkNoLeaks(t)
	addr, dir := freeAddr(t), t.TempDir()
	url := "ws://" + addr + "/sync"
	proc := startRelayProcess(t, bin, addr, dir)

	small := client.Options{PushLimit: 30} // many small pushes: the kill lands mid-stream
	a := newReplica(t, "a", notesSchema(), engine.Options{}, small)
	b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
	c := newReplica(t, "c", notesSchema(), engine.Options{}, client.Options{})
	for _, r := range []*replica{a, b, c} {
		r.connect(t, url, "killme", "")
		waitState(t, r, client.Synced)
	}

	const n = 600
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := a.db.Upsert("notes", map[string]any{"id": fmt.Sprintf("k%04d", i), "title": fmt.Sprintf("v%d", i), "n": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, n/2)
	waitFor(t, "b to receive part of the stream", func() bool { return count(t, b.db, "notes") > 0 })
	proc.kill()
	killedAt := time.Now()
	if p := pending(t, a); p == 0 {
		t.Fatal("a had pushed everything before the kill; the test needs a push stream in progress")
	}
	write(n/2, n) // a keeps writing while the relay is down
	for _, r := range []*replica{a, b, c} {
		waitFor(t, r.name+" to notice", func() bool { st := r.c.State(); return st.State == client.Disconnected && !st.Retry.IsZero() })
	}
	time.Sleep(1500 * time.Millisecond) // down across at least one backoff step
	startRelayProcess(t, bin, addr, dir)
	converged(t, a, b, c)
	t.Logf("converged %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	if got := count(t, b.db, "notes"); got != n {
		t.Fatalf("b holds %d rows, want %d", got, n)
	}
	for i := range n {
		if got, ok := title(t, c.db, fmt.Sprintf("k%04d", i)); !ok || got != fmt.Sprintf("v%d", i) {
			t.Fatalf("c: row %d is %q (present %v)", i, got, ok)
		}
	}
	// Reconnects were paced with growing delays: about 1 s after the kill,
	// then about 2 s after the refused attempt.
	for _, r := range []*replica{a, b, c} {
		d := r.ev.delays()
		t.Logf("%s reconnect delays %v", r.name, d)
		if len(d) < 2 || d[0] < 900*time.Millisecond || d[0] > 1300*time.Millisecond || d[1] < 1900*time.Millisecond {
			t.Fatalf("%s: reconnect delays %v, want ~1 s then ~2 s", r.name, d)
		}
	}
}
