//go:build !js

package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// floodEnv makes the test binary a flood child (see floodChild): its value
// is the relay's address.
const floodEnv = "RELAY_FLOOD_ADDR"

// floodResult is what the flood child reports of one connection.
type floodResult struct {
	Pongs  int            `json:"pongs"`
	TookMs int64          `json:"tookMs"` // from the first ping to the connection's end
	Code   wire.ErrorCode `json:"code"`   // the error frame received, if any
	Msg    string         `json:"msg"`
	Status int            `json:"status"` // the close status, -1 for none
}

// floodChild is the abusive tenant, in a process of its own as real clients
// are (in the relay's process its goroutines would share the relay's
// scheduler instead of competing for the CPU): RELAY_FLOOD_CONNS
// connections to database "noisy" each send RELAY_FLOOD_FRAMES ping frames
// as fast as the connection takes them. It prints "READY" once every
// handshake is done, then, when every connection has ended or got all its
// pongs, one JSON floodResult per connection.
func floodChild(addr string) int {
	conns, _ := strconv.Atoi(os.Getenv("RELAY_FLOOD_CONNS"))
	frames, _ := strconv.Atoi(os.Getenv("RELAY_FLOOD_FRAMES"))
	wss := make([]*websocket.Conn, conns)
	for i := range wss {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/sync", nil)
		if err != nil {
			cancel()
			fmt.Fprintln(os.Stderr, "flood child: dial:", err)
			return 1
		}
		var site model.SiteID
		_, _ = rand.Read(site[:])
		hs, _ := wire.Encode(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "noisy", SiteID: site})
		err = ws.Write(ctx, websocket.MessageText, hs)
		if err == nil {
			_, _, err = ws.Read(ctx)
		}
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "flood child: handshake:", err)
			return 1
		}
		wss[i] = ws
	}
	fmt.Println("READY")
	ping := []byte(`{"type":"ping"}`)
	res := make([]floodResult, conns)
	var wg sync.WaitGroup
	for i, ws := range wss {
		start := time.Now()
		wg.Go(func() {
			for range frames {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := ws.Write(ctx, websocket.MessageText, ping)
				cancel()
				if err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			r := &res[i]
			r.Status = -1
			defer func() { r.TookMs = time.Since(start).Milliseconds() }()
			for r.Pongs < frames {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, b, err := ws.Read(ctx)
				cancel()
				if err != nil {
					r.Status = int(websocket.CloseStatus(err))
					return
				}
				switch m, _ := wire.Decode(b); m := m.(type) {
				case *wire.Pong:
					r.Pongs++
				case *wire.Error:
					r.Code, r.Msg = m.Code, m.Message
				}
			}
		})
	}
	wg.Wait()
	for _, r := range res {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	return 0
}

// startFlood starts the flood child against r and returns once its
// connections are open and flooding; wait returns their results.
func startFlood(t *testing.T, r *childRelay, conns, frames int) (wait func() []floodResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+r.addr, "RELAY_FLOOD_CONNS="+strconv.Itoa(conns), "RELAY_FLOOD_FRAMES="+strconv.Itoa(frames))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "READY" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("flood child did not start: %q %v", sc.Text(), sc.Err())
	}
	return func() []floodResult {
		t.Helper()
		var res []floodResult
		for sc.Scan() {
			var fr floodResult
			if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
				t.Fatalf("flood child printed %q: %v", sc.Text(), err)
			}
			res = append(res, fr)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("flood child: %v", err)
		}
		if len(res) != conns {
			t.Fatalf("flood child reported %d connections, want %d", len(res), conns)
		}
		return res
	}
}

// pingRTTs measures n ping round trips of c, one every 10 ms (100 frames/s,
// below the test's rate limit), sorted.
func pingRTTs(t *testing.T, c *client, n int) []time.Duration {
	t.Helper()
	d := make([]time.Duration, n)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := range d {
		<-tick.C
		start := time.Now()
		c.ping()
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	return d
}

func pct(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

func rtts(d []time.Duration) string {
	return fmt.Sprintf("p50 %v p90 %v p99 %v (n=%d)", pct(d, 50), pct(d, 90), pct(d, 99), len(d))
}

// Issue 10 §10: 8 connections of one database flooding tiny frames (from a
// process of their own) must not slow another database's connection. Each
// connection's frames are rate-limited (FrameRate with FrameBurst): the
// relay stops reading a connection over its rate (TCP pushes back on the
// sender), and closes one that stays over it for RateLimitGrace with
// RATE_LIMITED and status 1008. The quiet database's median ping round trip
// during the flood is compared with its median alone (before and after the
// flood), in the same test;
// the flood's answered frames are bounded by the configured rate.
func TestTenantFloodRateLimited(t *testing.T) {
	const (
		flooders = 8
		frames   = 20_000
		rate     = 200
		burst    = 200
		samples  = 250 // 2.5 s at 100/s
	)
	grace := 6 * time.Second
	// The relay, the quiet tenant (this process) and the flood run in
	// three processes, as they do in production.
	cfg, _ := json.Marshal(Config{FrameRate: rate, FrameBurst: burst, RateLimitGrace: grace})
	r := startChildRelay(t, true, childConfigEnv+"="+string(cfg))

	quiet := connect(t, &r.testRelay, "quiet")
	pingRTTs(t, quiet, 20) // warm up
	before := pingRTTs(t, quiet, samples)
	t.Logf("quiet database alone: %s", rtts(before))

	wait := startFlood(t, r, flooders, frames)
	floodAt := time.Now()
	time.Sleep(300 * time.Millisecond) // the bursts pass: measure the sustained flood
	during := pingRTTs(t, quiet, samples)
	sampled := time.Since(floodAt)
	t.Logf("quiet database during the flood: %s", rtts(during))

	res := wait()
	for i, fr := range res {
		took := time.Duration(fr.TookMs) * time.Millisecond
		bound := burst + int(rate*took.Seconds()*1.1) + 20
		t.Logf("flooder %d: %d pongs in %v (bound %d), then %s (%q), close status %d", i, fr.Pongs, took, bound, fr.Code, fr.Msg, fr.Status)
		if fr.Pongs > bound {
			t.Errorf("flooder %d: %d frames answered in %v, above the configured %d/s with a burst of %d", i, fr.Pongs, took, rate, burst)
		}
		if fr.Code != wire.CodeRateLimited || fr.Status != int(websocket.StatusPolicyViolation) {
			t.Errorf("flooder %d ended with error %q and status %d, want %s and %d", i, fr.Code, fr.Status, wire.CodeRateLimited, websocket.StatusPolicyViolation)
		}
		if took < grace {
			t.Errorf("flooder %d closed after %v, before the %v grace: it must be slowed first", i, took, grace)
		}
		if took < sampled {
			t.Errorf("flooder %d ended after %v, before the quiet database's samples were taken (%v): they were not measured under load", i, took, sampled)
		}
	}
	// The quiet round trip alone, before and after the flood: the larger
	// median is the baseline (the machine's load drifts; the flood's
	// effect without limits was 8x).
	after := pingRTTs(t, quiet, samples)
	t.Logf("quiet database after the flood: %s", rtts(after))
	if base, p50d := max(pct(before, 50), pct(after, 50)), pct(during, 50); p50d > 2*base {
		t.Errorf("quiet database's ping p50 %v during the flood, above twice its %v alone", p50d, base)
	}
	if !strings.Contains(metricsText(t, &r.testRelay), `replica_relay_rate_limited_total{action="closed"} 8`) {
		t.Errorf("/metrics does not count the 8 connections closed for their rate")
	}
}

// The rate limits' defaults, and a byte burst that could never admit a
// frame of MaxMessageSize is refused.
func TestRateLimitConfig(t *testing.T) {
	c, err := Config{Auth: AllowAll}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.FrameRate != 500 || c.FrameBurst != 1000 || c.ByteRate != 64<<20 || c.ByteBurst != 128<<20 || c.RateLimitGrace != 10*time.Second {
		t.Fatalf("defaults: %d/s burst %d, %d B/s burst %d, grace %v", c.FrameRate, c.FrameBurst, c.ByteRate, c.ByteBurst, c.RateLimitGrace)
	}
	if c, _ = (Config{Auth: AllowAll, MaxMessageSize: 256 << 20}).withDefaults(); c.ByteBurst != 512<<20 {
		t.Fatalf("default ByteBurst with a 256 MiB frame limit: %d, want twice the limit", c.ByteBurst)
	}
	if _, err := (Config{Auth: AllowAll, MaxMessageSize: 1 << 20, ByteBurst: 1<<20 - 1}).withDefaults(); err == nil || !strings.Contains(err.Error(), "ByteBurst") {
		t.Fatalf("ByteBurst below MaxMessageSize: %v", err)
	}
	if _, err := (Config{Auth: AllowAll, FrameRate: -1}).withDefaults(); err == nil {
		t.Fatal("negative FrameRate accepted")
	}
}
