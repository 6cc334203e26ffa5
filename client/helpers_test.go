//go:build !js

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/internal/leaktest"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// waitFor is how long (real time) a test waits for something the code
// under test is expected to do promptly before failing.
const waitFor = 10 * time.Second

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

// newEngine opens a replica over memkv with the notes schema.
func newEngine(t testing.TB) (*engine.Engine, kv.Store) {
	t.Helper()
	st := memkv.New(engine.Buckets...)
	db, err := engine.Open(st, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, st
}

func insert(t testing.TB, db *engine.Engine, id, title string) {
	t.Helper()
	if _, err := db.Insert("notes", map[string]any{"id": id, "title": title}); err != nil {
		t.Fatal(err)
	}
}

// ownSets returns db's own ChangeSets above since.
func ownSets(t testing.TB, db *engine.Engine, since model.HLC) []model.ChangeSet {
	t.Helper()
	sets, err := db.ChangesSince(since, 1<<20, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// dataSets returns db's own ChangeSets that carry row changes (not the
// schema migrations of Open).
func dataSets(t testing.TB, db *engine.Engine) []model.ChangeSet {
	t.Helper()
	var out []model.ChangeSet
	for _, cs := range ownSets(t, db, model.HLC{}) {
		if len(cs.Changes) > 0 {
			out = append(out, cs)
		}
	}
	return out
}

func getTitle(t testing.TB, db *engine.Engine, id string) (string, bool) {
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

// eventLog records a client's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	next   int // where the next wait starts looking
	signal chan struct{}
}

func recordEvents(t testing.TB, c *Client) *eventLog {
	l := &eventLog{signal: make(chan struct{}, 1)}
	unsub := c.Subscribe(func(ev Event) {
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.mu.Unlock()
		select {
		case l.signal <- struct{}{}:
		default:
		}
	})
	t.Cleanup(unsub)
	return l
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// wait waits until an event after the one the previous wait returned
// satisfies match, and returns it.
func (l *eventLog) wait(t testing.TB, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		evs := l.snapshot()
		l.mu.Lock()
		from := l.next
		l.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				l.mu.Lock()
				l.next = i + 1
				l.mu.Unlock()
				return evs[i]
			}
		}
		select {
		case <-l.signal:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; events: %s", what, describeEvents(evs))
		}
	}
}

// count returns the number of events of type typ so far.
func (l *eventLog) count(typ EventType) int {
	n := 0
	for _, ev := range l.snapshot() {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (l *eventLog) waitState(t testing.TB, s State) Event {
	t.Helper()
	return l.wait(t, "state "+s.String(), func(ev Event) bool { return ev.Type == StateChanged && ev.Status.State == s })
}

func describeEvents(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s", ev.Type, ev.Status.State)
		if ev.Err != nil {
			fmt.Fprintf(&b, " err=%v", ev.Err)
		}
		if ev.Status.Err != nil {
			fmt.Fprintf(&b, " status.err=%v", ev.Status.Err)
		}
	}
	return b.String()
}

// waitCond polls cond (real time) until it holds.
func waitCond(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// clientFrames matches stack frames of goroutines the client starts.
var clientFrames = regexp.MustCompile(`replica/client\.(\(\*Client\)\.(run|session)|\(\*session\)\.(read|write|loop)|\(\*dispatcher\)\.run|New\.func)`)

// checkNoLeaks fails the test if, once its cleanups (Close among them)
// have run, any goroutine of the client is left.
func checkNoLeaks(t testing.TB) {
	leaktest.AtCleanup(t, clientFrames, waitFor, "client goroutines left after Close")
}

// newClient returns a client of db; Close runs at cleanup, after which
// no client goroutine may remain.
func newClient(t testing.TB, db *engine.Engine, opts Options) *Client {
	t.Helper()
	checkNoLeaks(t)
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	c := New(db, opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// ---- a scripted relay: real WebSocket frames, behaviour written by the test ----

var testServerSite = model.SiteID{0xAA, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

type scriptRelay struct {
	url   string
	srv   *httptest.Server
	conns chan *peer
	quit  chan struct{}

	mu    sync.Mutex
	peers []*peer
}

func newScriptRelay(t testing.TB) *scriptRelay {
	t.Helper()
	r := &scriptRelay{conns: make(chan *peer, 64), quit: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(wire.DefaultMaxMessageSize)
		p := &peer{c: c, in: make(chan any, 256), done: make(chan struct{}), quit: r.quit}
		r.mu.Lock()
		r.peers = append(r.peers, p)
		r.mu.Unlock()
		go p.read()
		r.conns <- p
		select {
		case <-p.done:
		case <-r.quit:
		}
	}))
	r.url = "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/sync"
	t.Cleanup(r.close)
	return r
}

func (r *scriptRelay) close() {
	close(r.quit)
	r.mu.Lock()
	for _, p := range r.peers {
		p.c.CloseNow()
	}
	r.mu.Unlock()
	r.srv.Close()
}

// accept returns the next connection the client opens.
func (r *scriptRelay) accept(t testing.TB) *peer {
	t.Helper()
	select {
	case p := <-r.conns:
		return p
	case <-time.After(waitFor):
		t.Fatal("timed out waiting for the client to connect")
		return nil
	}
}

// noConnection fails if the client opened a connection.
func (r *scriptRelay) noConnection(t testing.TB) {
	t.Helper()
	select {
	case <-r.conns:
		t.Fatal("the client connected again")
	default:
	}
}

// peer is the relay's end of one connection.
type peer struct {
	c    *websocket.Conn
	in   chan any // wire.Message or the error that ended the reader
	done chan struct{}
	quit chan struct{}
}

func (p *peer) read() {
	defer close(p.done)
	for {
		_, b, err := p.c.Read(context.Background())
		var v any
		if err != nil {
			v = err
		} else if m, derr := wire.Decode(b); derr != nil {
			v = derr
		} else {
			v = m
		}
		select {
		case p.in <- v:
		case <-p.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// recv returns the next message from the client.
func (p *peer) recv(t testing.TB) wire.Message {
	t.Helper()
	select {
	case v := <-p.in:
		if m, ok := v.(wire.Message); ok {
			return m
		}
		t.Fatalf("relay read: %v", v)
	case <-time.After(waitFor):
		t.Fatal("timed out waiting for a frame from the client")
	}
	return nil
}

// expect receives the next message and checks its type.
func expect[T wire.Message](t testing.TB, p *peer) T {
	t.Helper()
	m := p.recv(t)
	v, ok := m.(T)
	if !ok {
		var want T
		t.Fatalf("client sent %s %+v, want %T", m.Type(), m, want)
	}
	return v
}

func (p *peer) send(t testing.TB, m wire.Message) {
	t.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	p.sendRaw(t, b)
}

func (p *peer) sendRaw(t testing.TB, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := p.c.Write(ctx, wsframe.Type(b), b); err != nil {
		t.Fatalf("relay write: %v", err)
	}
}

// waitClosed waits until the client closed the connection (or it broke)
// and returns the read error.
func (p *peer) waitClosed(t testing.TB) error {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case v := <-p.in:
			if err, ok := v.(error); ok && !errors.Is(err, wire.ErrMalformed) {
				return err
			}
		case <-deadline:
			t.Fatal("timed out waiting for the client to close the connection")
			return nil
		}
	}
}

// ack answers the client's handshake; it returns the handshake.
func (p *peer) ack(t testing.TB) *wire.Handshake {
	t.Helper()
	h := expect[*wire.Handshake](t, p)
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: h.DatabaseID, ServerSiteID: testServerSite, ConnectionID: "c-test"})
	return h
}

// barrier sends ping and returns every frame the client sent before its
// pong: whatever the client had sent up to handling the ping.
func (p *peer) barrier(t testing.TB) []wire.Message {
	t.Helper()
	p.send(t, &wire.Ping{})
	var out []wire.Message
	for {
		m := p.recv(t)
		if _, ok := m.(*wire.Pong); ok {
			return out
		}
		out = append(out, m)
	}
}

// syncUp plays the relay's side of a session start for a replica that
// will not bootstrap: handshake, one empty get_changes answered with
// cursor. It returns the get_changes.
func (p *peer) syncUp(t testing.TB, cursor uint64) *wire.GetChanges {
	t.Helper()
	p.ack(t)
	g := expect[*wire.GetChanges](t, p)
	p.send(t, &wire.Changes{Cursor: cursor})
	return g
}

// ackPush answers an apply_changes with a matching apply_result.
func (p *peer) ackPush(t testing.TB, a *wire.ApplyChanges) {
	t.Helper()
	p.send(t, &wire.ApplyResult{RequestID: a.RequestID, ApplyResult: model.ApplyResult{Applied: len(a.ChangeSets), Transactions: len(a.ChangeSets)}})
}

// snapshotChunks returns src's snapshot stream, stamped with cursor.
func snapshotChunks(t testing.TB, src *engine.Engine, opts engine.SnapshotOptions) []model.SnapshotChunk {
	t.Helper()
	var out []model.SnapshotChunk
	for c, err := range src.Snapshot(opts) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// streamSnapshot answers a get_snapshot with src's snapshot at cursor.
func (p *peer) streamSnapshot(t testing.TB, src *engine.Engine, cursor uint64) {
	t.Helper()
	p.sendSnapshot(t, snapshotChunks(t, src, engine.SnapshotOptions{Cursor: cursor}))
}

// sendSnapshot sends chunks, then snapshot_complete.
func (p *peer) sendSnapshot(t testing.TB, chunks []model.SnapshotChunk) {
	t.Helper()
	for _, c := range chunks {
		p.send(t, &wire.SnapshotChunk{Chunk: c})
	}
	p.send(t, &wire.SnapshotComplete{})
}

// withHorizon sets the header's tombstone horizon of a stream (its first
// chunk) to wall, on a copy of the header, and returns chunks.
func withHorizon(chunks []model.SnapshotChunk, wall uint64) []model.SnapshotChunk {
	h := *chunks[0].Header
	h.Horizon = wall
	chunks[0].Header = &h
	return chunks
}

// stateOf reads a persisted client key of db.
func stateOf(t testing.TB, db *engine.Engine, key string) string {
	t.Helper()
	b, err := db.State(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var testNS = namespace(testServerSite, "db1")

func isErr(err, target error) bool { return errors.Is(err, target) }

// sameData fails unless two stores hold the same rows and indexes.
func sameData(t testing.TB, a, b kv.Store) {
	t.Helper()
	da, db := enginetest.DumpStore(t, a), enginetest.DumpStore(t, b)
	for _, bucket := range []string{"rows", "index"} {
		x, y := da.Buckets[bucket], db.Buckets[bucket]
		if len(x) != len(y) {
			t.Fatalf("bucket %s: %d entries vs %d", bucket, len(x), len(y))
		}
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("bucket %s entry %d differs:\n%s\n%s", bucket, i, x[i], y[i])
			}
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
