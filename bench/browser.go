//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/pagebench"
)

// flowOptions is the o of the flows in bench/js/common.js.
type flowOptions struct {
	N           int      `json:"n"`
	CapMs       int      `json:"capMs"`
	Total       int      `json:"total"`
	RelayDB     string   `json:"relayDB"`
	SyncDB      string   `json:"syncDB,omitempty"`
	TinybaseURL string   `json:"tinybaseURL,omitempty"`
	Skip        []string `json:"skip,omitempty"`
}

// timing is one timed workload's result.
type timing struct {
	Ms     float64            `json:"ms"`
	N      int                `json:"n"`
	Capped bool               `json:"capped"`
	Rows   int                `json:"rows"`
	Counts map[string]float64 `json:"counts"`
	// W10: the longest main-thread task that started during the run and
	// the total blocking time (the sum over long tasks of their time
	// beyond 50 ms), in ms.
	LongestTaskMs float64 `json:"longestTaskMs"`
	BlockingMs    float64 `json:"blockingMs"`
}

// memory is W7, in bytes: the used JS heap after gc() (the page's, plus
// every Worker's: WorkerJSHeap, read through CDP after the page's flow,
// since Workers have no performance.memory) and the WebAssembly memory of
// replica.wasm, wherever it runs.
type memory struct {
	JSHeap       float64 `json:"jsHeap"`
	Wasm         float64 `json:"wasm"`
	WorkerJSHeap float64 `json:"workerJSHeap"`
	// WorkerURLs are the script URLs of the page's Workers
	// (workermem.js), to pick them out of the browser's Worker targets.
	WorkerURLs []string `json:"workerURLs"`
}

// session is what one repetition measured for one system.
type session struct {
	Basic struct {
		OpenMs float64 `json:"openMs"`
		W1     timing  `json:"w1"`
		W2     timing  `json:"w2"`
		W3     timing  `json:"w3"`
	} `json:"basic"`
	Big struct {
		W5       timing  `json:"w5"`
		W7       memory  `json:"w7"`
		W4       timing  `json:"w4"`
		W4getAll *timing `json:"w4getAll"`
	} `json:"big"`
	Warm struct {
		OpenMs float64 `json:"openMs"`
	} `json:"warm"`
}

// runner drives Chromium against the bench server at base.
type runner struct {
	base string
	opts flowOptions
	// sealedDB is the sealed database holding the rows and a sealed
	// checkpoint of them (W5 of "Replica sealed"); sealedOff says why
	// that system was left out ("" while it runs).
	sealedDB, sealedOff string
	profile             bool
	log                 io.Writer
}

// eval evaluates the promise expression expr in ctx's page and decodes its
// JSON value into out.
func eval(ctx context.Context, expr string, out any) error {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("(async () => JSON.stringify(await ("+expr+")) ?? \"null\")()", chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(s), out)
}

func (r *runner) url(sys, db string) string {
	u := r.base + "/p/" + sys + ".html?db=" + db
	if r.profile {
		u += "&profile=1"
	}
	return u
}

// session runs the three pages of one repetition of sys in a fresh
// Chromium (empty profile and HTTP cache) and returns their results.
func (r *runner) session(sys *system, tag string, which map[string]bool, skip []string) (*session, error) {
	ctx, cancel, err := pagebench.Start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("starting Chromium: %w", err)
	}
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 20*time.Minute)
	defer cancelT()
	fo := r.opts
	fo.Skip = skip
	if sys.sealed {
		// Only W5 syncs (W7 comes with it): the rest is Replica's.
		which = map[string]bool{"w5": which["w5"]}
		fo.RelayDB = r.sealedDB
		fo.Skip = append(fo.Skip, "w4")
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		if !which[w] && !slices.Contains(fo.Skip, w) {
			fo.Skip = append(fo.Skip, w)
		}
	}
	o, _ := json.Marshal(fo)
	var s session
	step := func(what, db, expr string, out any) error {
		start := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(r.url(sys.name, db))); err != nil {
			return fmt.Errorf("%s %s: %w", sys.name, what, err)
		}
		if err := eval(ctx, expr, out); err != nil {
			return fmt.Errorf("%s %s: %w", sys.name, what, err)
		}
		fmt.Fprintf(r.log, "    %-8s %-28s %6.1fs\n", sys.name, what, time.Since(start).Seconds())
		return nil
	}
	if which["w1"] || which["w2"] || which["w3"] || which["w6"] {
		if err := step("W6 cold, W1, W2, W3", tag+"-main", "B.flowBasic("+string(o)+")", &s.Basic); err != nil {
			return nil, err
		}
	}
	if which["w4"] || which["w5"] || which["w6"] || which["w7"] {
		if err := step("W5, W7, W4", tag+"-big", "B.flowBig("+string(o)+")", &s.Big); err != nil {
			return nil, err
		}
		// A Worker has no performance.memory: its JS heap comes from V8
		// through CDP, once the page's flow ended (after W4's queries).
		heaps, err := pagebench.WorkerHeaps(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s W7: %w", sys.name, err)
		}
		for _, h := range heaps {
			if !slices.Contains(s.Big.W7.WorkerURLs, h.URL) {
				continue // not this page's (a Worker of the page before, ending)
			}
			s.Big.W7.WorkerJSHeap += float64(h.Used)
			s.Big.W7.JSHeap += float64(h.Used)
		}
		var closed int
		if err := eval(ctx, "B.closeBig()", &closed); err != nil {
			return nil, fmt.Errorf("%s closing W5's database: %w", sys.name, err)
		}
		if sys.sealed {
			return &s, nil
		}
		if err := step("W6 warm", tag+"-big", "B.flowWarm()", &s.Warm); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// w8Result is one W8 run's latencies in ms: each write's commit on A to
// B's subscription (lat) and, where the system reports it, to B's commit
// of the change (applied) and to the relay's acknowledgment on A
// (pushed); the bursts' last writes to B's subscription.
type w8Result struct{ lat, pushed, applied, burst []float64 }

// W8's burst: burstReps times, device A writes burstWrites updates back to
// back (issue 17: B's subscription should see the last within 100 ms of
// its write).
const (
	burstWrites = 200
	burstReps   = 3
)

// w8 measures commit-to-subscription latency between two devices (browser
// contexts) of one Chromium, writes times: device A commits ping i, then
// device B's subscription sees it; the next write follows 60 ms after.
// Then the burst: A inserts a ping and updates it burstWrites-1 times back
// to back; the latency is from the start of the last update on A to B's
// subscription seeing it.
func (r *runner) w8(sys *system, tag string, writes int) (res w8Result, err error) {
	ctx, cancel, err := pagebench.Start(context.Background())
	if err != nil {
		return res, fmt.Errorf("starting Chromium: %w", err)
	}
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 10*time.Minute)
	defer cancelT()
	o := r.opts
	o.SyncDB = "w8-" + tag
	oj, _ := json.Marshal(o)
	var devs [2]context.Context
	for i := range devs {
		c, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		defer cancel()
		if err := chromedp.Do(c, chromedp.Navigate(r.url(sys.name, fmt.Sprintf("%s-w8-%d", tag, i)))); err != nil {
			return res, err
		}
		if err := eval(c, "B.w8Connect("+string(oj)+")", nil); err != nil {
			return res, fmt.Errorf("%s W8 device %d: %w", sys.name, i, err)
		}
		devs[i] = c
	}
	lat := make([]float64, 0, writes)
	var applied, pushed, burst []float64
	for i := 1; i <= writes; i++ {
		var t0, t1 float64
		if err := eval(devs[0], fmt.Sprintf("B.w8Write(%d)", i), &t0); err != nil {
			return res, fmt.Errorf("%s W8 write %d: %w", sys.name, i, err)
		}
		if err := eval(devs[1], fmt.Sprintf("B.w8Seen(%d, 30000)", i), &t1); err != nil {
			return res, fmt.Errorf("%s W8: %w", sys.name, err)
		}
		lat = append(lat, t1-t0)
		var ta *float64
		if err := eval(devs[1], fmt.Sprintf("B.w8Applied(%d)", i), &ta); err == nil && ta != nil {
			applied = append(applied, *ta-t0)
		}
		if err := eval(devs[0], fmt.Sprintf("B.w8PushedAt(%d)", i), &ta); err == nil && ta != nil {
			pushed = append(pushed, *ta-t0)
		}
		time.Sleep(60 * time.Millisecond)
	}
	for rep := range burstReps {
		time.Sleep(500 * time.Millisecond)
		var last struct {
			Last int
			T    float64
		}
		first := writes + 1 + rep*burstWrites
		if err := eval(devs[0], fmt.Sprintf("B.w8Burst(%d, %d)", first, burstWrites), &last); err != nil {
			return res, fmt.Errorf("%s W8 burst: %w", sys.name, err)
		}
		var t1 float64
		if err := eval(devs[1], fmt.Sprintf("B.w8Seen(%d, 60000)", last.Last), &t1); err != nil {
			return res, fmt.Errorf("%s W8 burst: %w", sys.name, err)
		}
		burst = append(burst, t1-last.T)
	}
	return w8Result{lat: lat, applied: applied, pushed: pushed, burst: burst}, nil
}

// startTinybaseServer starts bench/tinybase-ws-server.mjs with node and
// returns its ws:// URL and a function that stops it.
func startTinybaseServer(root string) (string, func(), error) {
	cmd := exec.Command("node", "tinybase-ws-server.mjs")
	cmd.Dir = filepath.Join(root, "bench")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PORT ") {
		stop()
		return "", nil, fmt.Errorf("node tinybase-ws-server.mjs: %q %v %s", line, err, stderr.String())
	}
	return "ws://127.0.0.1:" + strings.TrimSpace(strings.TrimPrefix(line, "PORT ")), stop, nil
}

// percentile returns the p-th percentile (0..100, nearest rank) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
