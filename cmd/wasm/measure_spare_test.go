//go:build !js

package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/pagebench"
)

// TestMeasureSpare measures what worker mode's spare Worker (web/replica.js,
// prepareSpare: replica-worker.js, wasm_exec.js and a compiled
// replica.wasm, waiting for a restore) costs in memory: the proportional
// set size (PSS, /proc/PID/smaps_rollup) of every Chromium process, summed,
// with one replica open in worker mode, taken three times (each the median
// of five samples 300 ms apart): before the spare starts (1 s after the
// open; the spare starts 2 s after the Worker), 3 s after the spare
// reported itself prepared, and 3 s after the page terminated it. The
// first point is the noisy one (the Worker is still settling); the drop at
// termination is the spare's cost. Measured 2026-12-07, 3 runs: PSS fell
// by 33, 43 and 66 MiB when the spare ended, and by 30 and 31 MiB in two
// more runs alternated with a spare that only fetched replica.wasm's bytes
// without compiling them (24 and 24 MiB): so most of the cost is the
// Worker itself (its thread and V8 isolate) and the 7 MB of bytes, not
// compiled code (V8 compiles a function lazily, at its first call, and the
// spare calls none). Its JS heap was 0.3 MiB.
// It also logs the used JS heap of each Worker (internal/pagebench's
// WorkerHeaps: V8's figure after a full GC). It asserts nothing;
// run it alone:
//
//	REPLICA_CHROMIUM=/usr/bin/chromium REPLICA_MEASURE=1 go test -run TestMeasureSpare -v ./cmd/wasm
func TestMeasureSpare(t *testing.T) {
	if os.Getenv("REPLICA_MEASURE") == "" {
		t.Skip("set REPLICA_MEASURE=1 to measure")
	}
	ctx := browser(t, chromedp.Flag("js-flags", "--expose-gc"))
	srv := serve(t, "application/wasm")
	run(t, ctx, srv.URL+"/default.html", `
		const Real = Worker, made = [];
		self.Worker = function (url, o) {
			const w = new Real(url, o);
			w.prepared = new Promise((ok) => w.addEventListener("message", (e) => { if (e.data && e.data.prepared) ok(); }));
			made.push(w);
			return w;
		};
		self.Worker.prototype = Real.prototype;
		self.measureWorkers = made;
		self.measureDB = await Replica.open({name: "measure-spare", schema: {tables: {t: {columns: {v: "text"}}}}});
		await measureDB.insert("t", {v: "a"});
		await new Promise((r) => setTimeout(r, 1000));
		return {};
	`, &struct{}{})
	pid := chromedp.FromContext(ctx).Browser.Process().Pid
	before := settled(t, pid)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => {
		for (let i = 0; i < 200 && measureWorkers.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
		if (measureWorkers.length < 2) throw new Error("no spare Worker after 20 s");
		const late = (p, what) => Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error(what + " took over 30 s")), 30000))]);
		await late(measureWorkers[1].prepared, "the spare's prepared message");
		await new Promise((r) => setTimeout(r, 3000));
		return 0;
	})()`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	with := settled(t, pid)
	heaps, err := pagebench.WorkerHeaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => { measureWorkers[1].terminate(); if (typeof gc === "function") gc(); await new Promise((r) => setTimeout(r, 3000)); return 0; })()`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	after := settled(t, pid)
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("Chromium's PSS, all processes: before the spare %s, with it prepared %s (+%s), after terminating it %s (%s)",
		mib(before), mib(with), mib(with-before), mib(after), mib(after-with))
	for _, h := range heaps {
		t.Logf("a Worker's used JS heap after a full GC: %s", mib(h.Used))
	}
}

// settled is the median of five pss samples 300 ms apart.
func settled(t *testing.T, pid int) int64 {
	var v []int64
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		v = append(v, pss(t, pid))
	}
	slices.Sort(v)
	return v[2]
}

// pss sums the proportional set size of pid and its descendants, in bytes.
func pss(t *testing.T, pid int) int64 {
	t.Helper()
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	var total int64
	var walk func(int)
	walk = func(p int) {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == "Pss" {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					total += kb << 10
				}
			}
			f.Close()
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return total
}
