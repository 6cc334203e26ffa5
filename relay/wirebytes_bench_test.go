//go:build !js

package relay

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	syncclient "github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// wireSchema is the cities table of `make bench` (bench/data.go), keyed by
// the engine's default id, a UUIDv7 (36 characters), as an app inserting
// cities without ids gets.
const wireSchema = `{"tables": {
	"cities": {"columns": {"id": "text", "name": {"type": "text", "notNull": true}, "lat": "real", "lng": "real",
		"country": "text", "admin1": "text", "admin2": "text"}, "indexes": {"by_name": ["name"]}}
}}`

// countingListener counts the bytes of every connection it accepts, as
// TCP carries them (HTTP upgrade, WebSocket framing and masks included).
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countingConn
}

// countingConn is one accepted connection: read is what the relay
// received from the client, written what it sent to it.
type countingConn struct {
	net.Conn
	read, written atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

// count returns the connections accepted so far.
func (l *countingListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// conn returns the i-th connection accepted.
func (l *countingListener) conn(i int) *countingConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[i]
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// startCountingRelay serves a relay with cfg (zero fields as
// startRelay's, but the discarding logger) on a loopback port through a
// countingListener, until the test ends, and returns its /sync URL and
// the listener.
func startCountingRelay(tb testing.TB, cfg Config) (string, *countingListener) {
	tb.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	cfg.Auth, cfg.NoSync, cfg.Logger = AllowAll, true, discardLogger
	srv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("Serve: %v", err)
		}
	})
	return "ws://" + inner.Addr().String() + "/sync", ln
}

// wireRow is one city as inserted: its columns but the id.
func wireRow(c cities.City) map[string]any {
	return map[string]any{"name": c.Name, "lat": c.Lat, "lng": c.Lng, "country": c.Country, "admin1": c.Admin1, "admin2": c.Admin2}
}

// wireBytes is one measurement of WireBytes: bytes per row, as TCP
// carried them on the relay's loopback connections.
type wireBytes struct {
	JSON     float64 // the rows' own compact JSON (json.Marshal of the row's map, id included)
	Push     float64 // device A → relay while A pushed its transactions (apply_changes)
	Ack      float64 // relay → A meanwhile (apply_result)
	Live     float64 // relay → device B, online meanwhile (push_changes)
	Pull     float64 // relay → device C, reconnecting afterwards (handshake_ack, changes)
	Snapshot float64 // relay → device D, new (handshake_ack, snapshot_chunk …, then changes)
}

// wireDevice is a native replica (engine over memkv, package client) of
// the measurement.
type wireDevice struct {
	db   *engine.Engine
	c    *syncclient.Client
	acks chan struct{}
}

func newWireDevice(tb testing.TB, comp syncclient.Compression) *wireDevice {
	tb.Helper()
	schema, err := wire.ParseSchema([]byte(wireSchema))
	if err != nil {
		tb.Fatal(err)
	}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema, Logger: discardLogger})
	if err != nil {
		tb.Fatal(err)
	}
	// Keepalives (30 s) would add frames of their own to a slow run; a 1 ms
	// debounce window pushes each awaited 1-row transaction at once (the
	// frames are the same with the default 50 ms, the run slower).
	c := syncclient.New(db, syncclient.Options{Logger: discardLogger, Compression: comp, PingInterval: time.Hour,
		DebounceWindow: time.Millisecond, MaxWait: 5 * time.Millisecond})
	d := &wireDevice{db: db, c: c, acks: make(chan struct{}, 1<<16)}
	c.Subscribe(func(ev syncclient.Event) {
		if ev.Type == syncclient.PushAcked {
			d.acks <- struct{}{}
		}
	})
	return d
}

// close ends d's session and closes its engine.
func (d *wireDevice) close() {
	_ = d.c.Close()
	_ = d.db.Close()
}

// waitFor polls cond every 2 ms until it holds, or fails after 2 minutes.
func waitFor(tb testing.TB, what string, cond func() (bool, error)) {
	tb.Helper()
	end := time.Now().Add(2 * time.Minute)
	for {
		ok, err := cond()
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			tb.Fatalf("%s: not after 2 minutes", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// synced waits until d is Synced holding rows cities and nothing to push.
func (d *wireDevice) synced(tb testing.TB, rows int) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("device synced with %d rows", rows), func() (bool, error) {
		st := d.c.State()
		if st.State == syncclient.Error {
			return false, st.Err
		}
		if st.State != syncclient.Synced {
			return false, nil
		}
		n, err := d.db.Count("cities", nil)
		if err != nil || n != rows {
			return false, err
		}
		p, err := d.c.Pending()
		return p == 0, err
	})
}

// connect connects d to the relay and returns its connection, the next
// one the listener accepts, once d is synced with rows rows.
func (d *wireDevice) connect(tb testing.TB, ln *countingListener, url string, rows int) *countingConn {
	tb.Helper()
	before := ln.count()
	if err := d.c.Connect(url, "wire", ""); err != nil {
		tb.Fatal(err)
	}
	d.synced(tb, rows)
	if n := ln.count(); n != before+1 {
		tb.Fatalf("%d connections accepted while one device connected (a reconnect?)", n-before)
	}
	return ln.conn(before)
}

// measureWire measures what rows cost on the wire: a relay (bbolt,
// NoSync) on a loopback port with comp, four devices offering comp.
// Device A writes the rows in transactions of txRows rows; with txRows 1
// it commits each after the relay acknowledged the previous one (each
// ChangeSet travels in its own apply_changes and push_changes frame),
// with more it commits them all, then connects. B is online throughout
// (push_changes), C synced the empty database, went offline and
// reconnects afterwards (get_changes), D is new (get_snapshot). The
// schema's migrations travel before the measurement.
func measureWire(tb testing.TB, rows []cities.City, txRows int, comp Compression) wireBytes {
	tb.Helper()
	cc := map[Compression]syncclient.Compression{
		CompressionOff:               syncclient.CompressionOff,
		CompressionNoContextTakeover: syncclient.CompressionNoContextTakeover,
		CompressionContextTakeover:   syncclient.CompressionContextTakeover,
	}[comp]
	url, ln := startCountingRelay(tb, Config{Compression: comp})

	a, b, c, d := newWireDevice(tb, cc), newWireDevice(tb, cc), newWireDevice(tb, cc), newWireDevice(tb, cc)
	for _, x := range []*wireDevice{a, b, c, d} {
		defer x.close() // before the relay stops
	}
	aConn := a.connect(tb, ln, url, 0) // pushes the schema's migrations
	bConn := b.connect(tb, ln, url, 0)
	c.connect(tb, ln, url, 0)
	c.c.Disconnect()

	var jsonBytes int
	a0, aw0, b0 := aConn.read.Load(), aConn.written.Load(), bConn.written.Load()
	insert := func(tx *engine.Tx, city cities.City) error {
		r, err := tx.Insert("cities", wireRow(city))
		if err != nil {
			return err
		}
		m := wireRow(city)
		m["id"] = r["id"].Text()
		j, err := json.Marshal(m)
		jsonBytes += len(j)
		return err
	}
	if txRows == 1 {
		for _, city := range rows {
			if _, err := a.db.Transact(func(tx *engine.Tx) error { return insert(tx, city) }); err != nil {
				tb.Fatal(err)
			}
			select {
			case <-a.acks:
			case <-time.After(time.Minute):
				tb.Fatal("no apply_result within a minute")
			}
		}
	} else {
		a.c.Disconnect()
		for i := 0; i < len(rows); i += txRows {
			_, err := a.db.Transact(func(tx *engine.Tx) error {
				for _, city := range rows[i:min(i+txRows, len(rows))] {
					if err := insert(tx, city); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				tb.Fatal(err)
			}
		}
		aConn = a.connect(tb, ln, url, len(rows))
		a0, aw0 = 0, 0
	}
	a.synced(tb, len(rows))
	b.synced(tb, len(rows))
	push, ack := aConn.read.Load()-a0, aConn.written.Load()-aw0
	live := bConn.written.Load() - b0
	cConn := c.connect(tb, ln, url, len(rows))
	dConn := d.connect(tb, ln, url, len(rows))
	n := float64(len(rows))
	return wireBytes{
		JSON: float64(jsonBytes) / n, Push: float64(push) / n, Ack: float64(ack) / n, Live: float64(live) / n,
		Pull: float64(cConn.written.Load()) / n, Snapshot: float64(dConn.written.Load()) / n,
	}
}

// wireModes are the permessage-deflate modes measured, by name.
var wireModes = []struct {
	name string
	mode Compression
}{
	{"off", CompressionOff},
	{"nocontext", CompressionNoContextTakeover},
	{"context", CompressionContextTakeover},
}

// BenchmarkWireBytes measures the bytes a GeoNames cities row costs on
// the wire (see measureWire), per row, for each permessage-deflate mode
// (deflate=off, nocontext: no context takeover, context: context
// takeover) and transaction size (tx=1: 300 rows, each its own
// transaction pushed on its own; tx=1000: 2,000 rows in 2 transactions).
// Metrics, bytes per row: json-B/row (the rows' compact JSON, the
// baseline), push-B/row (device → relay), ack-B/row (relay → the pushing
// device), live-B/row (push_changes to an online device), pull-B/row
// (get_changes of a device catching up), snapshot-B/row (a new device's
// bootstrap). ns/op is one whole measurement. bench/report.go puts them in
// bench/out/bench.md as W11.
func BenchmarkWireBytes(b *testing.B) {
	all, err := cities.Load(2000)
	if errors.Is(err, cities.ErrAbsent) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range wireModes {
		for _, sc := range []struct{ txRows, rows int }{{1, 300}, {1000, 2000}} {
			b.Run(fmt.Sprintf("deflate=%s/tx=%d", m.name, sc.txRows), func(b *testing.B) {
				var w wireBytes
				for b.Loop() {
					w = measureWire(b, all[:sc.rows], sc.txRows, m.mode)
				}
				b.ReportMetric(w.JSON, "json-B/row")
				b.ReportMetric(w.Push, "push-B/row")
				b.ReportMetric(w.Ack, "ack-B/row")
				b.ReportMetric(w.Live, "live-B/row")
				b.ReportMetric(w.Pull, "pull-B/row")
				b.ReportMetric(w.Snapshot, "snapshot-B/row")
			})
		}
	}
}

// BenchmarkConnectionMemoryDeflate measures what permessage-deflate costs
// the relay in memory per connection: a relay in a child process (as
// BenchmarkIdleConnections), 200 connections over 10 databases, each
// offering deflate=MODE (the relay accepting the same), each sent one
// push_changes of a 1-row cities ChangeSet (1.4 KB: compressed in both
// modes) after its handshake. Metrics as BenchmarkIdleConnections' (per
// connection, from the relay's own /metrics: resident memory, Go heap in
// use, before the connections and after). With context takeover
// coder/websocket keeps the connection's compressor (flate at
// BestSpeed) from its first compressed frame until its close.
func BenchmarkConnectionMemoryDeflate(b *testing.B) {
	const conns, dbs = 200, 10
	f := newWireFixture(b)
	for _, m := range wireModes {
		b.Run("deflate="+m.name, func(b *testing.B) {
			for b.Loop() {
				cfg, err := json.Marshal(Config{Compression: m.mode})
				if err != nil {
					b.Fatal(err)
				}
				r := startChildRelay(b, true, childConfigEnv+"="+string(cfg))
				dialc := func(db string, site model.SiteID) *client {
					ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
					defer cancel()
					ws, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/sync", &websocket.DialOptions{CompressionMode: m.mode.mode()})
					if err != nil {
						b.Fatal(err)
					}
					ws.SetReadLimit(-1)
					c := &client{t: b, ws: ws, site: site}
					if site.IsZero() {
						_, _ = crand.Read(c.site[:])
					}
					c.handshake(db, "")
					return c
				}
				// Every database open, and a writer in each, first: the
				// figures are the readers'.
				var writers, clients []*client
				for d := range dbs {
					writers = append(writers, dialc(fmt.Sprintf("mem-%d", d), f.single[d].SiteID))
				}
				runtime.GC()
				time.Sleep(200 * time.Millisecond)
				before := r.metrics(b)
				for c := range conns {
					clients = append(clients, dialc(fmt.Sprintf("mem-%d", c%dbs), model.SiteID{}))
				}
				for d, w := range writers {
					w.apply("mem", []model.ChangeSet{f.single[d]})
				}
				for _, c := range clients {
					recvType[*wire.PushChanges](c)
				}
				time.Sleep(500 * time.Millisecond)
				after := r.metrics(b)
				n := float64(conns)
				b.ReportMetric((after["process_resident_memory_bytes"]-before["process_resident_memory_bytes"])/n/1024, "rss-KiB/conn")
				b.ReportMetric((after["go_memstats_heap_inuse_bytes"]-before["go_memstats_heap_inuse_bytes"])/n/1024, "heap-KiB/conn")
				for _, c := range append(clients, writers...) {
					_ = c.ws.CloseNow()
				}
			}
		})
	}
}
