//go:build !js

package relay

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestStorage, when set (REPLICA_RELAY_STORE=postgres: storage_pg_test.go),
// gives every relay the tests start without a storage of their own the
// Storage it returns for the data directory dir (the same one for the same
// dir, so a relay restarted on dir finds its data): the relay's tests then
// run its storage contract on that backend. Tests of one backend's files
// skip themselves (needFiles).
var TestStorage func(t testing.TB, dir string) Storage

// needFiles skips a test of the bbolt files (their names, their bytes, a
// full disk) while the tests run on another storage (TestStorage).
func needFiles(t testing.TB) {
	t.Helper()
	if TestStorage != nil {
		t.Skip("tests the bbolt data directory; the relay tests run on another storage (REPLICA_RELAY_STORE)")
	}
}

// manualClock is an engine.Clock tests move by hand.
type manualClock struct{ ms atomic.Uint64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ms.Store(uint64(time.Now().UnixMilli()))
	return c
}

func (c *manualClock) Now() uint64             { return c.ms.Load() }
func (c *manualClock) Advance(d time.Duration) { c.ms.Add(uint64(d.Milliseconds())) }

// testLogger logs warnings and errors to the test log (set RELAY_TEST_LOG=1
// for everything).
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("RELAY_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

// discardLogger drops everything (benchmarks).
var discardLogger = slog.New(slog.DiscardHandler)

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testRelay is a relay serving on a loopback port.
type testRelay struct {
	t    testing.TB
	srv  *Server
	addr string
	dir  string

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan error
	stopErr  error
}

// startRelay starts a relay with cfg; zero fields get test defaults (a
// temporary data directory, AllowAll, NoSync, the test logger). It stops
// at the end of the test.
func startRelay(t testing.TB, cfg Config) *testRelay {
	t.Helper()
	return startRelaySync(t, cfg, false)
}

// startRelaySync is startRelay with a choice of fsync on commits (the
// benchmarks measure both).
func startRelaySync(t testing.TB, cfg Config, fsync bool) *testRelay {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if TestStorage != nil && cfg.Storage == nil && cfg.OpenStore == nil {
		cfg.Storage = TestStorage(t, cfg.DataDir)
	}
	if cfg.Auth == nil {
		cfg.Auth = AllowAll
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	cfg.NoSync = !fsync
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &testRelay{t: t, srv: srv, addr: ln.Addr().String(), dir: cfg.DataDir, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// stop cancels Serve's context and returns what Serve returned.
func (r *testRelay) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case r.stopErr = <-r.done:
		case <-time.After(30 * time.Second):
			r.stopErr = errors.New("Serve did not return within 30 s of its context ending")
		}
	})
	return r.stopErr
}

func (r *testRelay) url(path string) string { return "http://" + r.addr + path }

// dbFiles lists the database files in the relay's data directory.
func (r *testRelay) dbFiles() []string {
	m, _ := filepath.Glob(filepath.Join(r.dir, "*.db"))
	return m
}

// client is a raw WebSocket client speaking wire frames.
type client struct {
	t    testing.TB
	ws   *websocket.Conn
	site model.SiteID
	ack  *wire.HandshakeAck // the handshake's answer
}

const recvTimeout = 10 * time.Second

// dial opens a WebSocket to the relay's /sync with a random site id.
func dial(t testing.TB, r *testRelay, header http.Header) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/sync", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(-1)
	c := &client{t: t, ws: ws}
	if _, err := rand.Read(c.site[:]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c
}

func (c *client) sendRaw(frame []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, wsframe.Type(frame), frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) send(m wire.Message) {
	c.t.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		c.t.Fatalf("encode %s: %v", m.Type(), err)
	}
	c.sendRaw(b)
}

// read returns the next frame or the read error. A timeout closes the
// connection (coder/websocket does that on a cancelled read).
func (c *client) read(timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	typ, b, err := c.ws.Read(ctx)
	if err == nil && !wsframe.Fits(typ, b) {
		return nil, fmt.Errorf("got a %v frame, want text", typ)
	}
	return b, err
}

// frameOrErr is one result of readAll.
type frameOrErr struct {
	frame []byte
	err   error
}

// readAll reads frames in the background, as a real client does (so that
// it answers the relay's close handshake at once), until the connection
// ends; the last element carries the error.
func (c *client) readAll() <-chan frameOrErr {
	ch := make(chan frameOrErr, 1024)
	go func() {
		defer close(ch)
		for {
			b, err := c.read(time.Minute)
			ch <- frameOrErr{b, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// recv returns the next message, failing the test on anything else.
func (c *client) recv() wire.Message {
	c.t.Helper()
	b, err := c.read(recvTimeout)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	m, err := wire.Decode(b)
	if err != nil {
		c.t.Fatalf("relay sent a frame that does not decode: %v\n%s", err, b)
	}
	return m
}

// recvType receives a message that must be a T.
func recvType[T wire.Message](c *client) T {
	c.t.Helper()
	m := c.recv()
	v, ok := m.(T)
	if !ok {
		var zero T
		c.t.Fatalf("got %s (%+v), want %T", m.Type(), describe(m), zero)
	}
	return v
}

func describe(m wire.Message) any {
	if e, ok := m.(*wire.Error); ok {
		return *e
	}
	return m
}

// expectError receives an error frame of code with the matching fatal flag.
func (c *client) expectError(code wire.ErrorCode) *wire.Error {
	c.t.Helper()
	e := recvType[*wire.Error](c)
	if e.Code != code {
		c.t.Fatalf("error %s (%q), want %s", e.Code, e.Message, code)
	}
	if e.Fatal != code.Fatal() {
		c.t.Fatalf("error %s has fatal=%v, want %v", e.Code, e.Fatal, code.Fatal())
	}
	return e
}

// expectClose reads until the connection ends and checks its close status.
func (c *client) expectClose(status websocket.StatusCode) {
	c.t.Helper()
	for {
		b, err := c.read(recvTimeout)
		if err == nil {
			m, _ := wire.Decode(b)
			c.t.Fatalf("got %s before the close, want close status %d: %s", typeOf(m), status, b)
		}
		if got := websocket.CloseStatus(err); got != status {
			c.t.Fatalf("connection ended with %v (status %d), want status %d", err, got, status)
		}
		return
	}
}

func typeOf(m wire.Message) wire.MessageType {
	if m == nil {
		return "undecodable"
	}
	return m.Type()
}

// ping sends ping and expects pong as the very next frame: nothing was
// queued for this connection before.
func (c *client) ping() {
	c.t.Helper()
	c.send(&wire.Ping{})
	recvType[*wire.Pong](c)
}

// handshake completes a handshake for database db.
func (c *client) handshake(db, token string) *wire.HandshakeAck {
	c.t.Helper()
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: db, SiteID: c.site, Token: token})
	ack := recvType[*wire.HandshakeAck](c)
	if ack.DatabaseID != db || ack.ProtocolVersion != wire.ProtocolVersion || ack.ConnectionID == "" || ack.ServerSiteID.IsZero() {
		c.t.Fatalf("bad handshake_ack %+v", ack)
	}
	c.ack = ack
	return ack
}

// connect dials and handshakes.
func connect(t testing.TB, r *testRelay, db string) *client {
	t.Helper()
	c := dial(t, r, nil)
	c.handshake(db, "")
	return c
}

// connectAs dials and handshakes with the site id of replica e, as a sync
// client of that replica does.
func connectAs(t testing.TB, r *testRelay, db string, e *engine.Engine) *client {
	t.Helper()
	c := dial(t, r, nil)
	c.site = e.SiteID()
	c.handshake(db, "")
	return c
}

// apply pushes sets and returns the apply_result.
func (c *client) apply(requestID string, sets []model.ChangeSet) *wire.ApplyResult {
	c.t.Helper()
	c.send(&wire.ApplyChanges{RequestID: requestID, ChangeSets: sets})
	res := recvType[*wire.ApplyResult](c)
	if res.RequestID != requestID {
		c.t.Fatalf("apply_result requestId %q, want %q", res.RequestID, requestID)
	}
	return res
}

// getChanges asks for one page.
func (c *client) getChanges(since uint64) *wire.Changes {
	c.t.Helper()
	c.send(&wire.GetChanges{Since: since})
	return recvType[*wire.Changes](c)
}

// pullAll pages from since until more is false, checking that each page's
// cursor moves forward, and returns the ChangeSets and the final cursor.
func (c *client) pullAll(since uint64) ([]model.ChangeSet, uint64, int) {
	c.t.Helper()
	var all []model.ChangeSet
	pages := 0
	for {
		ch := c.getChanges(since)
		pages++
		if ch.Cursor < since || (ch.Cursor == since && ch.More) {
			c.t.Fatalf("page after %d: cursor %d, more %v", since, ch.Cursor, ch.More)
		}
		all = append(all, ch.ChangeSets...)
		since = ch.Cursor
		if !ch.More {
			return all, since, pages
		}
	}
}

// The schema of the test replicas.
func testSchema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{
		{Name: "trips", Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText, NotNull: true},
			{Name: "title", Type: model.KindText, NotNull: true},
			{Name: "budget", Type: model.KindReal},
		}},
		{Name: "stops", Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText, NotNull: true},
			{Name: "trip", Type: model.KindText},
			{Name: "pos", Type: model.KindInteger},
			{Name: "name", Type: model.KindText},
		}},
	}}
}

// newReplica opens a client replica over memkv with the test schema.
func newReplica(t testing.TB, clock engine.Clock) *engine.Engine {
	t.Helper()
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: testSchema(), Clock: clock})
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	return e
}

// insertStops inserts n stops, one transaction each, and returns their
// ChangeSets (4 changes each).
func insertStops(t testing.TB, e *engine.Engine, trip string, n int) []model.ChangeSet {
	t.Helper()
	out := make([]model.ChangeSet, 0, n)
	for i := 0; i < n; i++ {
		cs, err := e.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("stops", map[string]any{"trip": trip, "pos": i, "name": fmt.Sprintf("stop %d", i)})
			return err
		})
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
		out = append(out, *cs)
	}
	return out
}

// localSets returns every ChangeSet the replica minted, in HLC order (the
// schema's DDL transaction first).
func localSets(t testing.TB, e *engine.Engine) []model.ChangeSet {
	t.Helper()
	sets, err := e.ChangesSince(model.HLC{}, 1<<30, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// txIDs lists the transactionIds of sets.
func txIDs(sets []model.ChangeSet) []string {
	out := make([]string, len(sets))
	for i := range sets {
		out[i] = sets[i].TransactionID
	}
	return out
}

// readAllBody is io.ReadAll that fails the test.
func readAllBody(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
