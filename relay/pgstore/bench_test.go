//go:build !js

package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/pgstore"
	"github.com/replica-sync/replica/wire"
)

// The benchmarks of issue 14: push throughput and cross-relay latency, in
// one run, for these setups (sub-benchmarks; the issue asks for bolt1, pg1
// and pg3):
//
//   - bolt1: one relay on bbolt files (fsync on, the default);
//   - bolt1nosync: the same with Config.NoSync, closer to the test
//     PostgreSQL, which does not sync its WAL either;
//   - pg1: one relay on PostgreSQL (internal/pgtest's cluster: loopback,
//     fsync=off, synchronous_commit=off);
//   - pg3: three relays, each with its own pgstore.Store (own pools, own
//     LISTEN), on one PostgreSQL database, as three processes would be.
//
// The relays run in the benchmark's process, so their cost and the
// benchmark's share its cores. Run with
//
//	go test -run '^$' -bench . ./relay/pgstore
//
// BenchmarkPushThroughput: one connection to relay 1 pushes apply_changes
// of one one-row ChangeSet, one in flight (waiting for its apply_result, as
// the sync client does), while one connection to every relay (relay 1's
// own second connection on one relay) receives the push_changes; tx/s is
// ChangeSets pushed per second until every receiver holds the last one.
// rt/apply is the round trips to PostgreSQL per apply_changes of the relay
// that applies it (queries and pipelined batches, locks and NOTIFY
// included), rt-all/apply those of every relay (the others' catch-ups
// after the notification included).
//
// REPLICA_BENCH_TRACE=1 prints every round trip's statements (and
// arguments) to stderr.
//
// BenchmarkCrossRelayLatency: p50 and p99 ms from sending apply_changes
// (one ChangeSet) to relay 1 until a client connected to relay 2 (on one
// relay: a second connection to it) received the push_changes and applied
// it to its replica (engine over memkv), one at a time, over at least
// latencySamples samples (ns/op times the first b.N).

// benchSetup is a set of relays on one storage serving one database id per
// benchmark run.
type benchSetup struct {
	urls  []string        // the relays' sync endpoints, relay 1 first
	trips []*atomic.Int64 // per relay: round trips to PostgreSQL (nil on bbolt)
}

// tripCounter counts pgx round trips: queries (Query, Exec, QueryRow) and
// batches (a pgx.Batch is one pipeline, one round trip). With
// REPLICA_BENCH_TRACE=1 it also prints each one's statements to stderr.
type tripCounter struct{ n atomic.Int64 }

var traceTrips = os.Getenv("REPLICA_BENCH_TRACE") != ""

func oneLine(sql string) string { return strings.Join(strings.Fields(sql), " ") }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	if traceTrips {
		fmt.Fprintf(os.Stderr, "trip %p: %s\n", c, oneLine(d.SQL))
	}
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	if traceTrips {
		fmt.Fprintf(os.Stderr, "trip %p: batch\n", c)
	}
	return ctx
}

func (c *tripCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if traceTrips {
		fmt.Fprintf(os.Stderr, "\t%s %v\n", oneLine(d.SQL), d.Args)
	}
}

func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// benchConfig lifts the per-connection rate limits: one connection pushing
// one-ChangeSet frames back to back would pass FrameRate.
func benchConfig() relay.Config {
	return relay.Config{
		Auth: relay.AllowAll, Logger: slog.New(slog.DiscardHandler),
		FrameRate: 1 << 30, FrameBurst: 1 << 30, IdleTimeout: time.Hour,
	}
}

// serve runs a relay with cfg on a loopback port until b's cleanup and
// returns its sync endpoint.
func serve(b testing.TB, cfg relay.Config) string {
	b.Helper()
	srv, err := relay.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Error("relay did not stop within 30 s")
		}
	})
	return "ws://" + ln.Addr().String() + "/sync"
}

// newSetup starts the relays of setup name (setupNames), which
// stop at b's cleanup.
func newSetup(b testing.TB, name string) *benchSetup {
	b.Helper()
	s := &benchSetup{}
	if name == "bolt1" || name == "bolt1nosync" {
		cfg := benchConfig()
		cfg.DataDir, cfg.NoSync = b.TempDir(), name == "bolt1nosync"
		s.urls = []string{serve(b, cfg)}
		s.trips = []*atomic.Int64{nil}
		return s
	}
	n, _ := strconv.Atoi(name[len("pg"):])
	url := pgtest.NewDatabase(b)
	for range n {
		ctr := &tripCounter{}
		pool := newPool(b, url, ctr)
		locks := newPool(b, url, ctr)
		st, err := pgstore.New(context.Background(), pool, locks)
		if err != nil {
			b.Fatal(err)
		}
		cfg := benchConfig()
		cfg.Storage = st
		s.urls = append(s.urls, serve(b, cfg))
		s.trips = append(s.trips, &ctr.n)
	}
	return s
}

// newPool opens a pool of pgstore.DefaultMaxConns connections to url whose
// round trips ctr counts; it closes at b's cleanup (after the relays,
// registered later, stopped).
func newPool(b testing.TB, url string, ctr *tripCounter) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = pgstore.DefaultMaxConns
	cfg.ConnConfig.Tracer = ctr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// setups caches the setups per parent benchmark run (b.Run's subs share
// their parent's cleanup).
type setups struct {
	b  testing.TB
	mu sync.Mutex
	m  map[string]*benchSetup
}

func (s *setups) get(name string) *benchSetup {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*benchSetup{}
	}
	if st := s.m[name]; st != nil {
		return st
	}
	st := newSetup(s.b, name)
	s.m[name] = st
	return st
}

var setupNames = []string{"bolt1", "bolt1nosync", "pg1", "pg3"}

// dbSeq names each benchmark run's database.
var dbSeq atomic.Int64

// benchConn is a raw WebSocket connection speaking wire frames.
type benchConn struct {
	b  testing.TB
	ws *websocket.Conn
}

// dialBench connects to url and handshakes for db as site.
func dialBench(b testing.TB, url, db string, site model.SiteID) *benchConn {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	ws.SetReadLimit(-1)
	b.Cleanup(func() { _ = ws.CloseNow() })
	c := &benchConn{b: b, ws: ws}
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: db, SiteID: site})
	if m, err := c.recv(); err != nil {
		b.Fatal(err)
	} else if _, ok := m.(*wire.HandshakeAck); !ok {
		b.Fatalf("handshake answered %s", m.Type())
	}
	return c
}

func (c *benchConn) send(m wire.Message) {
	buf, err := wire.Encode(m)
	if err != nil {
		c.b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, wsframe.Type(buf), buf); err != nil {
		c.b.Fatal(err)
	}
}

// recv returns the next message (not safe to call b.Fatal from: it may
// run on another goroutine).
func (c *benchConn) recv() (wire.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, buf, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	return wire.Decode(buf)
}

// applied waits for the apply_result of the request in flight.
func (c *benchConn) applied() *wire.ApplyResult {
	for {
		m, err := c.recv()
		if err != nil {
			c.b.Fatal(err)
		}
		switch m := m.(type) {
		case *wire.ApplyResult:
			return m
		case *wire.Error:
			c.b.Fatalf("apply_changes answered %s: %s", m.Code, m.Message)
		}
	}
}

// writer is the pushing device: a replica whose transactions are pushed
// by hand.
type writer struct {
	e  *engine.Engine
	id int
}

func newWriter(b testing.TB) *writer {
	b.Helper()
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: schema()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return &writer{e: e}
}

// sets returns every ChangeSet the writer minted so far (the schema's
// first).
func (w *writer) sets(b testing.TB) []model.ChangeSet {
	sets, err := w.e.ChangesSince(model.HLC{}, 1<<30, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		b.Fatal(err)
	}
	return sets
}

// tx inserts one row, one transaction, and returns its ChangeSet.
func (w *writer) tx(b testing.TB) model.ChangeSet {
	w.id++
	cs, err := w.e.Transact(func(tx *engine.Tx) error {
		_, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("n%08d", w.id), "by": "bench", "n": w.id})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return *cs
}

func randomSite(b testing.TB) model.SiteID {
	var s model.SiteID
	if _, err := rand.Read(s[:]); err != nil {
		b.Fatal(err)
	}
	return s
}

// tripsNow sums the round trips of relays (all when only is -1).
func (s *benchSetup) tripsNow(only int) int64 {
	var n int64
	for i, t := range s.trips {
		if t != nil && (only < 0 || only == i) {
			n += t.Load()
		}
	}
	return n
}

func BenchmarkPushThroughput(b *testing.B) {
	ss := &setups{b: b}
	for _, name := range setupNames {
		b.Run(name, func(b *testing.B) { benchThroughput(b, ss.get(name)) })
	}
}

func benchThroughput(b *testing.B, s *benchSetup) {
	db := "tput-" + strconv.FormatInt(dbSeq.Add(1), 10)
	w := newWriter(b)
	pusher := dialBench(b, s.urls[0], db, w.e.SiteID())
	var readers []*benchConn
	for _, u := range s.urls {
		readers = append(readers, dialBench(b, u, db, randomSite(b)))
	}
	// Warm up: the schema, and the database opened on every relay.
	pusher.send(&wire.ApplyChanges{RequestID: "warm", ChangeSets: w.sets(b)})
	warm := pusher.applied().Cursor
	sets := make([]model.ChangeSet, b.N)
	for i := range sets {
		sets[i] = w.tx(b)
	}
	want := warm + uint64(b.N)
	errs := make(chan error, len(readers))
	waitFor := func(c *benchConn, cursor uint64) {
		for {
			m, err := c.recv()
			if err != nil {
				errs <- err
				return
			}
			if p, ok := m.(*wire.PushChanges); ok && p.Cursor >= cursor {
				errs <- nil
				return
			}
		}
	}
	for _, r := range readers {
		waitFor(r, warm)
	}
	for range readers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range readers {
		go waitFor(r, want)
	}
	own, all := s.tripsNow(0), s.tripsNow(-1)
	b.ResetTimer()
	start := time.Now()
	for i := range sets {
		pusher.send(&wire.ApplyChanges{RequestID: strconv.Itoa(i), ChangeSets: sets[i : i+1]})
		pusher.applied()
	}
	for range readers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tx/s")
	if s.trips[0] != nil {
		b.ReportMetric(float64(s.tripsNow(0)-own)/float64(b.N), "rt/apply")
		b.ReportMetric(float64(s.tripsNow(-1)-all)/float64(b.N), "rt-all/apply")
	}
}

func BenchmarkCrossRelayLatency(b *testing.B) {
	ss := &setups{b: b}
	for _, name := range setupNames {
		b.Run(name, func(b *testing.B) { benchLatency(b, ss.get(name)) })
	}
}

// latencySamples is the fewest samples BenchmarkCrossRelayLatency's
// quantiles are taken over.
const latencySamples = 1000

func benchLatency(b *testing.B, s *benchSetup) {
	db := "lat-" + strconv.FormatInt(dbSeq.Add(1), 10)
	w := newWriter(b)
	pusher := dialBench(b, s.urls[0], db, w.e.SiteID())
	r, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: schema()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	recv := dialBench(b, s.urls[min(1, len(s.urls)-1)], db, r.SiteID())
	// arrive waits for the push of cursor and applies it to r.
	arrive := func(cursor uint64) {
		for {
			m, err := recv.recv()
			if err != nil {
				b.Fatal(err)
			}
			p, ok := m.(*wire.PushChanges)
			if !ok {
				continue
			}
			if _, err := r.ApplyChanges(p.ChangeSets); err != nil {
				b.Fatal(err)
			}
			if p.Cursor >= cursor {
				return
			}
		}
	}
	pusher.send(&wire.ApplyChanges{RequestID: "warm", ChangeSets: w.sets(b)})
	warm := pusher.applied().Cursor
	arrive(warm)
	// At least latencySamples samples, the ones past b.N untimed: the p99
	// of the hundred samples a short -benchtime gives is their second
	// largest, one stall of a loaded machine.
	sets := make([]model.ChangeSet, max(b.N, latencySamples))
	for i := range sets {
		sets[i] = w.tx(b)
	}
	lat := make([]time.Duration, 0, len(sets))
	b.ResetTimer()
	for i := range sets {
		if i == b.N {
			b.StopTimer()
		}
		start := time.Now()
		pusher.send(&wire.ApplyChanges{RequestID: strconv.Itoa(i), ChangeSets: sets[i : i+1]})
		arrive(warm + uint64(i) + 1)
		lat = append(lat, time.Since(start))
		pusher.applied()
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
}
