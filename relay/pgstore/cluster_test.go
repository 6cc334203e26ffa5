//go:build !js

package pgstore_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// relayBinary builds cmd/relay once per test binary.
var relayBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pgstore-relay-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "relay")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/replica-sync/replica/cmd/relay")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/relay: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is one relay process (cmd/relay -store postgres://…).
type proc struct {
	cmd  *exec.Cmd
	url  string // its sync endpoint, ws://127.0.0.1:port/sync
	addr string
	done chan struct{}
	mu   sync.Mutex
	log  strings.Builder
}

var listening = regexp.MustCompile(`sync endpoint (ws://[^ )]+)`)

// startProc starts a relay process on store at addr ("127.0.0.1:0": a free
// port) and waits until it listens.
func startProc(t *testing.T, store, addr string) *proc {
	t.Helper()
	bin, err := relayBinary()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, "-store", store, "-addr", addr, "-web", "", "-log-level", "warn", "-maintenance-interval", "1s")
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedWriter{p: p}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatalf("relay exited before listening:\n%s", p.logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("relay did not listen within 60 s:\n%s", p.logs())
	}
	p.addr = strings.TrimSuffix(strings.TrimPrefix(p.url, "ws://"), "/sync")
	return p
}

type lockedWriter struct{ p *proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.log.Write(b)
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill sends SIGKILL (kill -9) and waits for the process to end.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// device is a native replica (engine over memkv) with its sync client.
type device struct {
	name string
	db   *engine.Engine
	c    *client.Client
}

func schema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{
		Name: "notes",
		Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText},
			{Name: "by", Type: model.KindText},
			{Name: "n", Type: model.KindInteger},
		},
	}}}
}

func newDevice(t *testing.T, name string, urls []string) *device {
	t.Helper()
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: schema()})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(db, client.Options{BackoffBase: 20 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() {
		c.Close()
		db.Close()
	})
	if err := c.ConnectAny(urls, "trips", ""); err != nil {
		t.Fatal(err)
	}
	return &device{name: name, db: db, c: c}
}

// rows returns the device's notes as "id by n", sorted.
func (d *device) rows(t *testing.T) []string {
	t.Helper()
	rs, err := d.db.Query("notes", engine.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %d", r["id"].Text(), r["by"].Text(), r["n"].Int()))
	}
	slices.Sort(out)
	return out
}

// converge waits until every device has pushed everything and holds want.
func converge(t *testing.T, within time.Duration, want []string, ds []*device, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		last = ""
		for _, d := range ds {
			n, err := d.c.Pending()
			if err != nil {
				t.Fatal(err)
			}
			got := d.rows(t)
			switch {
			case n > 0:
				last = fmt.Sprintf("%s: %d pending (%+v)", d.name, n, d.c.State())
			case !slices.Equal(got, want):
				last = fmt.Sprintf("%s holds %d rows, want %d (%+v)", d.name, len(got), len(want), d.c.State())
			}
			if last != "" {
				break
			}
		}
		if last == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range procs {
		t.Logf("relay %s log:\n%s", p.url, p.logs())
	}
	t.Fatalf("not converged within %v: %s", within, last)
}

// TestThreeRelaysKillAndRestart: three relay processes on one PostgreSQL
// database serve six devices spread over them (each lists every relay,
// starting at another). Under load, one relay is killed (kill -9): its
// devices reconnect to the others, and every write converges, once.
// Then PostgreSQL itself is restarted under load: relays answer with
// transient errors meanwhile and lose nothing acknowledged. A device
// joining afterwards bootstraps what the others wrote.
func TestThreeRelaysKillAndRestart(t *testing.T) {
	store := pgtest.NewDatabase(t)
	ps := []*proc{startProc(t, store, "127.0.0.1:0"), startProc(t, store, "127.0.0.1:0"), startProc(t, store, "127.0.0.1:0")}
	urls := func(first int) []string {
		var us []string
		for i := range ps {
			us = append(us, ps[(first+i)%len(ps)].url)
		}
		return us
	}
	var ds []*device
	for i := range 6 {
		ds = append(ds, newDevice(t, fmt.Sprintf("d%d", i), urls(i%len(ps))))
	}
	var want []string
	write := func(round, per int) {
		t.Helper()
		for _, d := range ds {
			for k := range per {
				id := fmt.Sprintf("%s-%d-%d", d.name, round, k)
				if _, err := d.db.Insert("notes", map[string]any{"id": id, "by": d.name, "n": round}); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprintf("%s %s %d", id, d.name, round))
			}
		}
		slices.Sort(want)
	}

	write(0, 10)
	converge(t, 60*time.Second, want, ds, ps...)

	// kill -9 one relay while writes are in flight.
	write(1, 10)
	ps[0].kill()
	write(2, 10)
	converge(t, 90*time.Second, want, ds, ps[1:]...)

	// PostgreSQL restarted under load: writes made while it is down wait
	// on the devices and land once it is back.
	write(3, 5)
	if err := pgtest.Stop(); err != nil {
		t.Fatal(err)
	}
	write(4, 5)
	if code, body := healthz(t, ps[1]); code != http.StatusServiceUnavailable || !strings.Contains(body, "storage unreachable") {
		t.Errorf("/healthz with PostgreSQL down: %d %q, want 503 storage unreachable", code, body)
	}
	if err := pgtest.Start(); err != nil {
		t.Fatal(err)
	}

	write(5, 5)
	converge(t, 120*time.Second, want, ds, ps[1:]...)
	// Healthy again once writes and a maintenance pass (every second
	// here) succeed again.
	for _, p := range ps[1:] {
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, body := healthz(t, p)
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("/healthz of %s with PostgreSQL back and writes done: %d %q, want 200", p.addr, code, body)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// A device joining through the relays left bootstraps everything.
	late := newDevice(t, "late", urls(1))
	converge(t, 90*time.Second, want, append(ds, late), ps[1:]...)

	// The killed relay restarts and serves again.
	ps[0] = startProc(t, store, "127.0.0.1:0")
	d := newDevice(t, "again", []string{ps[0].url})
	write(6, 3)
	converge(t, 90*time.Second, want, append(ds, late, d), ps...)

	// Every transaction is in the log once, at cursors 1 … n without a
	// gap, whichever relay took it and however often it was resent.
	// (Each device's schema declaration is one more transaction.)
	checkLog(t, store, "trips", len(want)+len(ds)+2)
}

// healthz returns the status and body of p's GET /healthz.
func healthz(t *testing.T, p *proc) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkLog checks database id's arrival log in PostgreSQL: n entries (one
// per transaction), keyed 1 … n, and n dedup entries.
func checkLog(t *testing.T, store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var entries, dedup int
	var lo, hi []byte
	err = conn.QueryRow(ctx, `SELECT count(*), (SELECT k FROM replica_kv WHERE ns = $1 AND bucket = 'arrivals' ORDER BY k LIMIT 1), (SELECT k FROM replica_kv WHERE ns = $1 AND bucket = 'arrivals' ORDER BY k DESC LIMIT 1) FROM replica_kv WHERE ns = $1 AND bucket = 'arrivals'`, id).Scan(&entries, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM replica_kv WHERE ns = $1 AND bucket = 'arrivals_tx'`, id).Scan(&dedup); err != nil {
		t.Fatal(err)
	}
	first, last := binary.BigEndian.Uint64(lo), binary.BigEndian.Uint64(hi)
	if entries != n || dedup != n || first != 1 || last != uint64(n) {
		t.Fatalf("arrival log: %d entries at cursors %d … %d, %d dedup entries; want %d at 1 … %d", entries, first, last, dedup, n, n)
	}
}

// TestRestoredPostgres: the relays' PostgreSQL database is restored from
// a copy taken before the devices' last writes (as from a backup): the
// devices, ahead of the restored log, are told their history diverged,
// bootstrap again and push back what the relays lost (repair pushes), so
// every write survives, on every device, and in the relays' log.
func TestRestoredPostgres(t *testing.T) {
	store := pgtest.NewDatabase(t)
	ps := []*proc{startProc(t, store, "127.0.0.1:0"), startProc(t, store, "127.0.0.1:0")}
	var ds []*device
	for i := range 4 {
		ds = append(ds, newDevice(t, fmt.Sprintf("d%d", i), []string{ps[i%2].url, ps[(i+1)%2].url}))
	}
	var want []string
	write := func(round, per int) {
		t.Helper()
		for _, d := range ds {
			for k := range per {
				id := fmt.Sprintf("%s-%d-%d", d.name, round, k)
				if _, err := d.db.Insert("notes", map[string]any{"id": id, "by": d.name, "n": round}); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprintf("%s %s %d", id, d.name, round))
			}
		}
		slices.Sort(want)
	}
	sql := func(stmt string) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	write(0, 5)
	converge(t, 60*time.Second, want, ds, ps...)
	sql(`CREATE TABLE backup AS SELECT * FROM replica_kv`)
	write(1, 5)
	converge(t, 60*time.Second, want, ds, ps...)

	// Restore: the relays stop, the copy replaces the store, they start.
	for _, p := range ps {
		p.kill()
	}
	sql(`BEGIN; TRUNCATE replica_kv; INSERT INTO replica_kv SELECT * FROM backup; COMMIT`)
	ps = []*proc{startProc(t, store, ps[0].addr), startProc(t, store, ps[1].addr)}
	write(2, 5)
	converge(t, 120*time.Second, want, ds, ps...)

	// What the relays lost is back in their log: a new device gets it.
	late := newDevice(t, "late", []string{ps[1].url})
	converge(t, 90*time.Second, want, append(ds, late), ps...)
}
