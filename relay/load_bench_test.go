//go:build !js

package relay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// BenchmarkLoad is issue 14's load: databases of 10 writers and one
// subscriber, each writer committing 5 one-change transactions a second
// (its own row's "pos"), every one fanned out to the 9 other writers and
// the subscriber, on a relay in a child process (its CPU is its own):
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 1x ./relay
//
// Sub-benchmarks store=bolt|postgres (bbolt files with fsync; relay/pgstore
// on a private cluster, internal/pgtest, itself without fsync) ×
// clients=50|200 (writers: 5 or 20 databases; 250 or 1,000 transactions/s
// offered). A writer behaves as the sync client does: one apply_changes in
// flight, the transactions committed meanwhile pushed together once its
// apply_result arrives (a failed push is sent again with them).
//
// Figures (b.ReportMetric):
//
//   - p50-ms, p99-ms: commit-to-apply, from a writer's local commit (its
//     push leaves at once unless its previous one is unanswered) to each
//     other writer and the subscriber receiving it in a push_changes, in ms;
//     p50-steady-ms, p99-steady-ms: the same for the transactions committed
//     after the first 2 s of the window (loadRamp: the clients all start at
//     once, on a relay whose files and heap are still small);
//   - served-%: transactions committed in the window whose apply_result
//     arrived by its end plus the drain (up to 10 s), over those committed;
//   - delivered-%: receptions over served transactions × 10;
//   - cpu-ms/tx: the relay process's CPU (process_cpu_seconds_total) over
//     the window and drain, per served transaction;
//   - cpu-%: the same per second of wall time, in % of one core;
//   - applies: apply_changes handled (replica_relay_apply_duration_seconds);
//   - commits: storage transactions that merged them
//     (replica_relay_apply_commits_total: one per group commit; 0 on a
//     relay without the metric);
//   - push-frames/s: push_changes frames the relay wrote, per second.
//
// RELAY_LOAD_SECONDS sets the window (default 10); RELAY_LOAD_PROFILE=dir
// writes the child relay's CPU profile (its whole life) to
// dir/load-<store>-<clients>.pprof.
func BenchmarkLoad(b *testing.B) {
	for _, store := range []string{"bolt", "postgres"} {
		for _, clients := range []int{50, 200} {
			b.Run(fmt.Sprintf("store=%s/clients=%d", store, clients), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					runLoad(b, store, clients/loadWriters)
				}
			})
		}
	}
}

const (
	loadWriters = 10 // writers per database (plus one subscriber)
	loadRate    = 5  // transactions per writer per second
	// loadRamp is the start of the window the -steady percentiles leave
	// out: the 200 clients start at once on a relay just warmed up.
	loadRamp = 2 * time.Second
)

// OpenURLStorage opens the Storage a child relay of the benchmarks uses
// when given a database URL (RELAY_BENCH_STORE_URL): relay/pgstore's Open,
// set by load_pg_test.go (package relay_test: pgstore imports this
// package).
var OpenURLStorage func(url string) (Storage, error)

// loadStats are one run's measurements, shared by its goroutines.
type loadStats struct {
	commits  sync.Map // transactionId → time.Time of the local commit (window only)
	mu       sync.Mutex
	lat      []time.Duration
	steady   []time.Duration // of the transactions committed after rampEnd
	rampEnd  time.Time
	received atomic.Int64
	served   atomic.Int64 // window transactions acknowledged
	offered  atomic.Int64 // window transactions committed
	errors   atomic.Int64 // error frames answering a push
}

// loadWriter is one writing client: replica, connection, and what it has
// committed but not pushed.
type loadWriter struct {
	c       *client
	rep     *engine.Engine
	row     string
	acks    chan wire.Message // apply_result or error answering its push
	stats   *loadStats
	pending []model.ChangeSet
	inWin   []bool // pending[i] was committed in the window
	flight  []bool // the in-flight push's ChangeSets' inWin (nil: none in flight)
	fsets   []model.ChangeSet
}

// readLoad reads c's frames until it closes: push_changes are timed against
// the commits (stats), anything else goes to acks (nil: a subscriber).
func readLoad(c *client, stats *loadStats, acks chan<- wire.Message) {
	pushPrefix := []byte(`{"type":"push_changes"`)
	key := []byte(`"transactionId":"`)
	var lat, steady []time.Duration
	defer func() {
		stats.mu.Lock()
		stats.lat = append(stats.lat, lat...)
		stats.steady = append(stats.steady, steady...)
		stats.mu.Unlock()
	}()
	for {
		_, buf, err := c.ws.Read(context.Background())
		if err != nil {
			return
		}
		now := time.Now()
		if bytes.HasPrefix(buf, pushPrefix) {
			for rest := buf; ; {
				i := bytes.Index(rest, key)
				if i < 0 {
					break
				}
				rest = rest[i+len(key):]
				j := bytes.IndexByte(rest, '"')
				if j < 0 {
					break
				}
				if t, ok := stats.commits.Load(string(rest[:j])); ok {
					at := t.(time.Time)
					lat = append(lat, now.Sub(at))
					if !at.Before(stats.rampEnd) {
						steady = append(steady, now.Sub(at))
					}
					stats.received.Add(1)
				}
				rest = rest[j:]
			}
			continue
		}
		m, err := wire.Decode(buf)
		if err != nil || acks == nil {
			continue
		}
		switch m.(type) {
		case *wire.ApplyResult, *wire.Error:
			acks <- m
		}
	}
}

// push sends every pending ChangeSet in one apply_changes, when none is in
// flight.
func (w *loadWriter) push() error {
	if w.flight != nil || len(w.pending) == 0 {
		return nil
	}
	w.fsets, w.flight = w.pending, w.inWin
	w.pending, w.inWin = nil, nil
	frame, err := wire.Encode(&wire.ApplyChanges{RequestID: "load", ChangeSets: w.fsets})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.c.ws.Write(ctx, wsframe.Type(frame), frame)
}

// acked handles the answer to the push in flight: counted as served, or
// queued again in front of the pending ones.
func (w *loadWriter) acked(m wire.Message, counting bool) {
	if _, ok := m.(*wire.ApplyResult); ok {
		if counting {
			for _, in := range w.flight {
				if in {
					w.stats.served.Add(1)
				}
			}
		}
	} else {
		w.stats.errors.Add(1)
		w.pending = append(w.fsets, w.pending...)
		w.inWin = append(w.flight, w.inWin...)
	}
	w.fsets, w.flight = nil, nil
}

// commit commits the next update of the writer's row and queues it.
func (w *loadWriter) commit(n int, inWindow bool) error {
	cs, err := w.rep.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("stops", engine.Key{w.row}, map[string]any{"pos": n})
		return err
	})
	if err != nil {
		return err
	}
	if inWindow {
		w.stats.commits.Store(cs.TransactionID, time.Now())
		w.stats.offered.Add(1)
	}
	w.pending, w.inWin = append(w.pending, *cs), append(w.inWin, inWindow)
	return nil
}

func runLoad(b *testing.B, store string, dbs int) {
	window := 10 * time.Second
	if s := os.Getenv("RELAY_LOAD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		window = time.Duration(n) * time.Second
	}
	var env []string
	if store == "postgres" {
		env = append(env, "RELAY_BENCH_STORE_URL="+pgtest.NewDatabase(b))
	}
	if dir := os.Getenv("RELAY_LOAD_PROFILE"); dir != "" {
		env = append(env, "RELAY_BENCH_CPUPROFILE="+filepath.Join(dir, fmt.Sprintf("load-%s-%d.pprof", store, dbs*loadWriters)))
	}
	r := startChildRelay(b, false, env...)
	stats := &loadStats{}
	var writers []*loadWriter
	var readers sync.WaitGroup
	var conns []*client
	for d := 0; d < dbs; d++ {
		db := "load-" + strconv.Itoa(d)
		for k := 0; k < loadWriters; k++ {
			rep := newReplica(b, nil)
			w := &loadWriter{c: connectAs(b, &r.testRelay, db, rep), rep: rep, row: "w" + strconv.Itoa(k), acks: make(chan wire.Message, 1), stats: stats}
			writers = append(writers, w)
			conns = append(conns, w.c)
			readers.Add(1)
			go func() { defer readers.Done(); readLoad(w.c, stats, w.acks) }()
		}
		sub := connect(b, &r.testRelay, db)
		conns = append(conns, sub)
		readers.Add(1)
		go func() { defer readers.Done(); readLoad(sub, stats, nil) }()
	}
	// Warm up: each writer's schema and row, acknowledged.
	for _, w := range writers {
		if _, err := w.rep.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("stops", map[string]any{"id": w.row, "pos": 0})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		w.pending = localSets(b, w.rep)
		w.inWin = make([]bool, len(w.pending))
		if err := w.push(); err != nil {
			b.Fatal(err)
		}
		select {
		case m := <-w.acks:
			if _, ok := m.(*wire.ApplyResult); !ok {
				b.Fatalf("warm-up push answered %+v", describe(m))
			}
			w.acked(m, false)
		case <-time.After(30 * time.Second):
			b.Fatal("warm-up push unanswered")
		}
	}

	before := r.metrics(b)
	start := time.Now()
	stats.rampEnd = start.Add(loadRamp)
	end := start.Add(window)
	drainEnd := end.Add(10 * time.Second)
	var wg sync.WaitGroup
	for k, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Stagger the writers across the interval.
			time.Sleep(time.Duration(k) * time.Second / loadRate / time.Duration(len(writers)))
			tick := time.NewTicker(time.Second / loadRate)
			defer tick.Stop()
			drain := time.NewTimer(time.Until(drainEnd))
			defer drain.Stop()
			for n := 1; ; {
				select {
				case <-tick.C:
					if time.Now().After(end) {
						tick.Stop()
						if w.flight == nil && len(w.pending) == 0 {
							return
						}
						continue
					}
					if err := w.commit(n, true); err != nil {
						b.Error(err)
						return
					}
					n++
				case m := <-w.acks:
					w.acked(m, true)
					if time.Now().After(end) && w.flight == nil && len(w.pending) == 0 {
						return
					}
				case <-drain.C:
					return
				}
				if err := w.push(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The last pushes' fan-out.
	want := stats.served.Load() * loadWriters
	for time.Now().Before(drainEnd.Add(2*time.Second)) && stats.received.Load() < want {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	after := r.metrics(b)
	for _, c := range conns {
		_ = c.ws.CloseNow()
	}
	readers.Wait()

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, l := range []struct {
		lat    []time.Duration
		suffix string
	}{{stats.lat, ""}, {stats.steady, "-steady"}} {
		if len(l.lat) == 0 {
			continue
		}
		slices.Sort(l.lat)
		b.ReportMetric(ms(l.lat[len(l.lat)/2]), "p50"+l.suffix+"-ms")
		b.ReportMetric(ms(l.lat[min(len(l.lat)-1, len(l.lat)*99/100)]), "p99"+l.suffix+"-ms")
	}
	served, offered := stats.served.Load(), stats.offered.Load()
	b.ReportMetric(100*float64(served)/float64(max(offered, 1)), "served-%")
	b.ReportMetric(100*float64(stats.received.Load())/float64(max(served*loadWriters, 1)), "delivered-%")
	cpu := after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
	b.ReportMetric(cpu*1000/float64(max(served, 1)), "cpu-ms/tx")
	b.ReportMetric(cpu/elapsed.Seconds()*100, "cpu-%")
	b.ReportMetric(after["replica_relay_apply_duration_seconds_count"]-before["replica_relay_apply_duration_seconds_count"], "applies")
	// Absent before group commit (0): one per apply then.
	b.ReportMetric(after["replica_relay_apply_commits_total"]-before["replica_relay_apply_commits_total"], "commits")
	pf := `replica_relay_messages_sent_total{type="push_changes"}`
	b.ReportMetric((after[pf]-before[pf])/elapsed.Seconds(), "push-frames/s")
	b.ReportMetric(float64(stats.errors.Load()), "push-errors")
	b.ReportMetric(0, "ns/op")
}
