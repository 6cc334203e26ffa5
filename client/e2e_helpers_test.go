//go:build !js

package client_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/internal/leaktest"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
)

// e2eWait bounds (real time) how long an end-to-end test waits for
// replicas to converge. Generous: a loaded machine is slow, and a bound
// that is hit means a failure anyway.
const e2eWait = 90 * time.Second

func quietLogger() *slog.Logger {
	if os.Getenv("CLIENT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// liveRelay is a real relay (relay.Server over bbolt files in a temporary
// directory) behind an httptest server on 127.0.0.1.
type liveRelay struct {
	srv   *relay.Server
	hs    *httptest.Server
	url   string
	dir   string
	conns atomic.Int64 // WebSocket connections opened
}

func startRelay(t testing.TB, dir string, auth relay.Authenticator) *liveRelay {
	t.Helper()
	if auth == nil {
		auth = relay.AllowAll
	}
	srv, err := relay.New(relay.Config{DataDir: dir, Auth: auth, NoSync: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := &liveRelay{srv: srv, dir: dir}
	h := srv.Handler()
	r.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/sync" {
			r.conns.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	r.url = "ws" + strings.TrimPrefix(r.hs.URL, "http") + "/sync"
	t.Cleanup(r.stop)
	return r
}

func (r *liveRelay) stop() {
	r.srv.Close()
	r.hs.Close()
}

// replica is an engine over memkv with its sync client.
type replica struct {
	name  string
	db    *engine.Engine
	store kv.Store
	c     *client.Client
	ev    *events
}

func notesSchema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{
		Name: "notes",
		Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText},
			{Name: "title", Type: model.KindText},
			{Name: "n", Type: model.KindInteger},
		},
	}}}
}

func newReplica(t testing.TB, name string, schema *model.Schema, eopts engine.Options, copts client.Options) *replica {
	t.Helper()
	st := memkv.New(engine.Buckets...)
	eopts.Schema = schema
	db, err := engine.Open(st, eopts)
	if err != nil {
		t.Fatal(err)
	}
	if copts.Logger == nil {
		copts.Logger = quietLogger()
	}
	c := client.New(db, copts)
	r := &replica{name: name, db: db, store: st, c: c, ev: record(c)}
	t.Cleanup(func() {
		c.Close()
		db.Close()
	})
	return r
}

func (r *replica) connect(t testing.TB, url, dbID, token string) {
	t.Helper()
	if err := r.c.Connect(url, dbID, token); err != nil {
		t.Fatal(err)
	}
}

// events records a client's events.
type events struct {
	mu  sync.Mutex
	all []client.Event
	at  []time.Time // when each was delivered
}

func record(c *client.Client) *events {
	e := &events{}
	c.Subscribe(func(ev client.Event) {
		e.mu.Lock()
		e.all = append(e.all, ev)
		e.at = append(e.at, time.Now())
		e.mu.Unlock()
	})
	return e
}

// delays returns the reconnect delays scheduled, in order: the Retry of
// each Disconnected state change minus when it was delivered.
func (e *events) delays() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []time.Duration
	for i, ev := range e.all {
		if ev.Type == client.StateChanged && ev.Status.State == client.Disconnected && !ev.Status.Retry.IsZero() {
			out = append(out, ev.Status.Retry.Sub(e.at[i]))
		}
	}
	return out
}

func (e *events) list() []client.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]client.Event(nil), e.all...)
}

// waitFor polls cond every few milliseconds until it holds or e2eWait
// passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, e2eWait, what, cond)
}

func waitWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitReport is waitWithin for a condition that explains itself: cond
// returns "" once it holds, else why not, and the failure message carries
// the last why.
func waitReport(t testing.TB, d time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s:\n%s", d, what, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncReport describes where r stands in the relay log of database dbID,
// for a failure message: its state, the cursor and tombstone horizon it
// stored (client's "Persisted state"), what it has left to push and the
// last error it reported.
func syncReport(t testing.TB, r *replica, dbID string) string {
	t.Helper()
	st := r.c.State()
	var cursor, horizon []byte
	ns, err := r.db.State("sync:last#" + dbID)
	if err == nil && ns != nil {
		if cursor, err = r.db.State(string(ns) + ":cursor"); err == nil {
			horizon, err = r.db.State(string(ns) + ":horizon")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	last := "none"
	for _, ev := range r.ev.list() {
		if ev.Type == client.ErrorReported {
			last = ev.Err.Error()
		}
	}
	return fmt.Sprintf("%s: %s (err %v), cursor %q, horizon %q, %d pending, last error reported: %s",
		r.name, st.State, st.Err, cursor, horizon, pending(t, r), last)
}

func waitState(t testing.TB, r *replica, s client.State) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s %s (is %+v)", r.name, s, r.c.State()), func() bool { return r.c.State().State == s })
}

func pending(t testing.TB, r *replica) int {
	t.Helper()
	n, err := r.c.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dataDump is the comparable data of a replica: rows, indexes, and the
// change log (class byte stripped), as lines "bucket key=value".
func dataDump(t testing.TB, st kv.Store) []string {
	d := enginetest.DumpStore(t, st)
	var out []string
	for _, name := range []string{"rows", "index", "log"} {
		for _, l := range d.Buckets[name] {
			out = append(out, name+" "+l)
		}
	}
	return out
}

// firstDiff describes the first difference of two dumps, or "".
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			j := 0
			for j < len(a[i]) && j < len(b[i]) && a[i][j] == b[i][j] {
				j++
			}
			return fmt.Sprintf("line %d, from byte %d:\n  %.300s\n  %.300s\n  %.300s", i, j, a[i], a[i][j:], b[i][j:])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d lines vs %d", len(a), len(b))
	}
	return ""
}

// crdtState is a replica's CRDT state as its snapshot carries it: every
// row's cells with their values and HLCs, and tombstones, one line per
// row, in key order. Unlike dataDump it leaves out before-images, which
// are best-effort (a replica bootstrapped from a snapshot has none).
func crdtState(t testing.TB, st kv.Store) []string {
	db, err := engine.Open(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	for c, err := range db.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			out = append(out, fmt.Sprintf("%s %v %v %v %v", c.Table, r.PK, r.Cells, r.HasTombstone, r.Tombstone))
		}
	}
	return out
}

// converged waits until every replica holds the same data as the first
// (dataDump: rows with before-images, indexes, change log) and has
// nothing left to push. It polls with growing pauses, so that large
// replicas are not dumped continuously.
func converged(t testing.TB, rs ...*replica) {
	t.Helper()
	convergedBy(t, dataDump, rs...)
}

// convergedCRDT is converged comparing crdtState.
func convergedCRDT(t testing.TB, rs ...*replica) {
	t.Helper()
	convergedBy(t, crdtState, rs...)
}

func convergedBy(t testing.TB, dump func(testing.TB, kv.Store) []string, rs ...*replica) {
	t.Helper()
	var last string
	pause := 5 * time.Millisecond
	deadline := time.Now().Add(e2eWait)
	for {
		last = ""
		want := dump(t, rs[0].store)
		for _, r := range rs {
			if n := pending(t, r); n != 0 {
				last = fmt.Sprintf("%s has %d pending changes", r.name, n)
				break
			}
			if r == rs[0] {
				continue
			}
			if d := firstDiff(want, dump(t, r.store)); d != "" {
				last = fmt.Sprintf("%s differs from %s: %s", r.name, rs[0].name, d)
				break
			}
		}
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			for _, r := range rs {
				t.Logf("%s: %+v", r.name, r.c.State())
			}
			t.Fatalf("not converged after %v: %s", e2eWait, last)
		}
		time.Sleep(pause)
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func count(t testing.TB, db *engine.Engine, table string) int {
	t.Helper()
	rows, err := db.Query(table, engine.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

func title(t testing.TB, db *engine.Engine, id string) (string, bool) {
	t.Helper()
	row, err := db.Get("notes", engine.Key{id})
	if errors.Is(err, engine.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return row["title"].Text(), true
}

var clientFrames = regexp.MustCompile(`replica/client\.(\(\*Client\)\.(run|session)|\(\*session\)\.(read|write|loop)|\(\*dispatcher\)\.run|New\.func)`)

// checkNoLeaks fails the test if a client goroutine is left once its
// cleanups have run. Call it first in a test, before creating replicas, so
// that it runs after every one of them closed.
func checkNoLeaks(t testing.TB) {
	leaktest.AtCleanup(t, clientFrames, 10*time.Second, "client goroutines left after Close")
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
