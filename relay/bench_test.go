//go:build !js

package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// The benchmarks run with `go test -run XXX -bench . ./relay`. They report
// their figures with b.ReportMetric:
//
//   - BenchmarkPushThrough: changes/s from one client through the relay
//     into a second client (apply_changes of 100 one-row ChangeSets, one in
//     flight, as the sync client pushes), with and without fsync.
//   - BenchmarkPushLatency: p50 and p99 ms from sending apply_changes (one
//     ChangeSet) on one connection to the push_changes arriving on another.
//   - BenchmarkIdleConnections: the relay's resident memory, heap and
//     goroutines per idle connection, with 1000 connections; the relay runs
//     in a child process (this test binary) so the figures are its own.
//   - BenchmarkSteadyLoad: the relay's CPU and memory with 100 clients (10
//     databases of 10) each pushing 10 changes a second.

const childEnv = "RELAY_BENCH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(benchChild(dir))
	}
	if addr := os.Getenv(floodEnv); addr != "" {
		os.Exit(floodChild(addr))
	}
	os.Exit(m.Run())
}

// childConfigEnv passes the child relay Config fields as JSON (numbers,
// durations in ns).
const childConfigEnv = "RELAY_BENCH_CONFIG"

// benchChild runs a relay on a loopback port for a parent benchmark or
// test: it prints "ADDR host:port" and serves until its stdin closes.
func benchChild(dir string) int {
	var cfg Config
	if js := os.Getenv(childConfigEnv); js != "" {
		if err := json.Unmarshal([]byte(js), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, childConfigEnv, err)
			return 1
		}
	}
	cfg.DataDir, cfg.Auth, cfg.NoSync = dir, AllowAll, os.Getenv("RELAY_BENCH_NOSYNC") != ""
	cfg.Logger, cfg.IdleTimeout = discardLogger, time.Hour
	if url := os.Getenv("RELAY_BENCH_STORE_URL"); url != "" {
		// A PostgreSQL database (BenchmarkLoad's store=postgres).
		if OpenURLStorage == nil {
			fmt.Fprintln(os.Stderr, "RELAY_BENCH_STORE_URL: no OpenURLStorage in this binary")
			return 1
		}
		st, err := OpenURLStorage(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg.Storage = st
	}
	if path := os.Getenv("RELAY_BENCH_CPUPROFILE"); path != "" {
		// The relay's CPU profile over the child's life.
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	srv, err := New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	err = srv.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { fmt.Printf("ADDR %s\n", a) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childRelay is a relay in a child process.
type childRelay struct {
	testRelay
	cmd   *exec.Cmd
	stdin io.Closer
}

func startChildRelay(b testing.TB, nosync bool, env ...string) *childRelay {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+dir), env...)
	if nosync {
		cmd.Env = append(cmd.Env, "RELAY_BENCH_NOSYNC=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		b.Fatalf("child relay: %q, %v", line, err)
	}
	c := &childRelay{cmd: cmd, stdin: stdin}
	c.t, c.addr, c.dir = b, strings.TrimSpace(strings.TrimPrefix(line, "ADDR ")), dir
	b.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return c
}

// metric reads one unlabelled sample of the child's /metrics.
func (c *childRelay) metrics(b *testing.B) map[string]float64 {
	b.Helper()
	resp, err := http.Get("http://" + c.addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func BenchmarkPushThrough(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync"
		if !fsync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) { benchPushThrough(b, fsync) })
	}
}

// benchConfig is the in-process benchmarks' relay: the per-connection rate
// limits are lifted, so that the figures are the relay's own cost, not the
// limits (a single connection pushing one-ChangeSet frames back to back
// would pass FrameRate).
var benchConfig = Config{Logger: discardLogger, FrameRate: 1 << 30, FrameBurst: 1 << 30}

func benchPushThrough(b *testing.B, fsync bool) {
	const perBatch = 100 // one-row ChangeSets (4 changes each) per apply_changes
	r := startRelaySync(b, benchConfig, fsync)
	db := "bench"
	rep := newReplica(b, nil)
	pusher := connectAs(b, r, db, rep)
	recv := connect(b, r, db)
	pusher.apply("apply-0", localSets(b, rep))
	recvType[*wire.PushChanges](recv)

	batches := make([][]model.ChangeSet, b.N)
	for i := range batches {
		batches[i] = insertStops(b, rep, "t", perBatch)
	}
	want := uint64(1 + b.N*perBatch)
	got := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() {
		for {
			buf, err := recv.read(time.Minute)
			if err != nil {
				got <- err
				return
			}
			m, err := wire.Decode(buf)
			if err != nil {
				got <- err
				return
			}
			if p, ok := m.(*wire.PushChanges); ok && p.Cursor == want {
				got <- nil
				return
			}
		}
	}()
	for i, batch := range batches {
		pusher.apply("apply-"+strconv.Itoa(i+1), batch)
	}
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N*perBatch*4)/elapsed.Seconds(), "changes/s")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkPushLatency(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync"
		if !fsync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			r := startRelaySync(b, benchConfig, fsync)
			rep := newReplica(b, nil)
			db := "latency"
			pusher := connectAs(b, r, db, rep)
			recv := connect(b, r, db)
			pusher.apply("apply-0", localSets(b, rep))
			recvType[*wire.PushChanges](recv)
			sets := make([][]model.ChangeSet, b.N)
			for i := range sets {
				sets[i] = insertStops(b, rep, "t", 1)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range sets {
				start := time.Now()
				pusher.send(&wire.ApplyChanges{RequestID: "apply", ChangeSets: sets[i]})
				recvType[*wire.PushChanges](recv)
				lat = append(lat, time.Since(start))
				recvType[*wire.ApplyResult](pusher)
			}
			b.StopTimer()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
		})
	}
}

func BenchmarkIdleConnections(b *testing.B) {
	const conns = 1000
	for i := 0; i < b.N; i++ {
		r := startChildRelay(b, true)
		// Open every database once first, so the per-connection figure
		// excludes the database files.
		var warm []*client
		for d := 0; d < 10; d++ {
			warm = append(warm, connect(b, &r.testRelay, "idle-"+strconv.Itoa(d)))
		}
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
		before := r.metrics(b)
		clients := make([]*client, 0, conns)
		for c := 0; c < conns; c++ {
			clients = append(clients, connect(b, &r.testRelay, "idle-"+strconv.Itoa(c%10)))
		}
		// Let the relay settle, then read its own figures.
		time.Sleep(500 * time.Millisecond)
		after := r.metrics(b)
		n := float64(conns)
		b.ReportMetric(after["replica_relay_connections"], "conns")
		b.ReportMetric(after["process_resident_memory_bytes"]/(1<<20), "rss-MiB")
		b.ReportMetric((after["process_resident_memory_bytes"]-before["process_resident_memory_bytes"])/n/1024, "rss-KiB/conn")
		b.ReportMetric((after["go_memstats_heap_inuse_bytes"]-before["go_memstats_heap_inuse_bytes"])/n/1024, "heap-KiB/conn")
		b.ReportMetric((after["go_memstats_sys_bytes"]-before["go_memstats_sys_bytes"])/n/1024, "gosys-KiB/conn")
		b.ReportMetric((after["go_goroutines"]-before["go_goroutines"])/n, "goroutines/conn")
		b.ReportMetric(0, "ns/op")
		for _, c := range append(clients, warm...) {
			_ = c.ws.CloseNow()
		}
	}
}

func BenchmarkSteadyLoad(b *testing.B) {
	const (
		dbs      = 10
		perDB    = 10
		rate     = 10 // ChangeSets of one change per client per second
		duration = 5 * time.Second
	)
	for i := 0; i < b.N; i++ {
		r := startChildRelay(b, false)
		type pusher struct {
			c   *client
			rep *engine.Engine
		}
		var ps []pusher
		for d := 0; d < dbs; d++ {
			for k := 0; k < perDB; k++ {
				rep := newReplica(b, nil)
				c := connectAs(b, &r.testRelay, "load-"+strconv.Itoa(d), rep)
				ps = append(ps, pusher{c, rep})
			}
		}
		// Every client reads everything it gets, as a client does.
		var received sync.WaitGroup
		for _, p := range ps {
			received.Add(1)
			go func() {
				defer received.Done()
				for {
					if _, err := p.c.read(time.Minute); err != nil {
						return
					}
				}
			}()
		}
		before := r.metrics(b)
		start := time.Now()
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), duration)
		for k, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(time.Second / rate)
				defer tick.Stop()
				// Stagger the clients across the interval.
				time.Sleep(time.Duration(k) * time.Second / rate / time.Duration(len(ps)))
				for n := 0; ; n++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					cs, err := p.rep.Transact(func(tx *engine.Tx) error {
						_, err := tx.Update("stops", engine.Key{"s"}, map[string]any{"pos": n})
						if err != nil {
							_, err = tx.Insert("stops", map[string]any{"id": "s", "pos": n})
						}
						return err
					})
					if err != nil {
						b.Error(err)
						return
					}
					wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
					frame, _ := wire.Encode(&wire.ApplyChanges{RequestID: "apply", ChangeSets: []model.ChangeSet{*cs}})
					err = p.c.ws.Write(wctx, wsframe.Type(frame), frame)
					wcancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		pushed := time.Since(start)
		time.Sleep(300 * time.Millisecond) // let the relay finish what was sent
		elapsed := time.Since(start)
		after := r.metrics(b)
		b.ReportMetric((after["process_cpu_seconds_total"]-before["process_cpu_seconds_total"])/elapsed.Seconds()*100, "cpu-%")
		b.ReportMetric(after["process_resident_memory_bytes"]/(1<<20), "rss-MiB")
		b.ReportMetric((after["replica_relay_changesets_stored_total"]-before["replica_relay_changesets_stored_total"])/pushed.Seconds(), "stored/s")
		b.ReportMetric((after["replica_relay_sent_bytes_total"]-before["replica_relay_sent_bytes_total"])/pushed.Seconds()/1024, "sent-KiB/s")
		b.ReportMetric(float64(after["replica_relay_apply_duration_seconds_count"]-before["replica_relay_apply_duration_seconds_count"]), "applies")
		b.ReportMetric(0, "ns/op")
		for _, p := range ps {
			_ = p.c.ws.CloseNow()
		}
		received.Wait()
	}
}
