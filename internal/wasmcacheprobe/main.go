//go:build !js

// Command wasmcacheprobe shows whether Chromium's wasm code cache (V8's
// compiled code of replica.wasm, kept beside the HTTP cache in the
// profile's "Code Cache/wasm") engages for Replica's loader, under a given
// way of serving replica.wasm. It starts headless Chromium (the bench's
// flags, internal/pagebench) on a fresh profile and visits a page that
// opens a replica through web/replica.js (worker or page mode), inserts
// -work rows, stays -linger, and leaves for about:blank; then the next
// visits, and two pages that only compileStreaming replica.wasm (in the
// page, in a Worker). After each visit it prints the page's figures, the
// requests for replica.wasm (status, conditional headers) and the size of
// the profile's wasm code cache. With -trace FILE Chromium also records a
// JSON trace (categories v8.wasm and devtools.timeline) whose
// v8.wasm.moduleCacheHit, v8.wasm.cachedModule and
// wasm.CompilationChunkFinished events say when V8 cached and when a load
// used the cache; -js-flags passes V8 flags (--wasm-caching-timeout-ms=0
// makes V8 cache at its first optimized code).
//
//	go run ./internal/wasmcacheprobe -wasm bench/out/replica.wasm -serve relay -mode worker -work 2000 -linger 4s
//
// -serve: relay (cmd/relay's static handler: no-cache, Last-Modified),
// lm (Last-Modified only), nostore, immutable (max-age=31536000,
// immutable). Figures and conclusions: bench/doc.go, "The wasm code cache".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/pagebench"
	"github.com/replica-sync/replica/relay"
)

var (
	wasmFlag  = flag.String("wasm", "bench/out/replica.wasm", "the replica.wasm to serve (with web/replica.js, web/replica-worker.js and GOROOT's wasm_exec.js)")
	serveFlag = flag.String("serve", "relay", "how replica.wasm is served: relay | lm | nostore | immutable")
	modeFlag  = flag.String("mode", "worker", "the loader's mode: worker | page")
	linger    = flag.Duration("linger", 3*time.Second, "how long the first visit stays after its work")
	work      = flag.Int("work", 0, "rows the first visit inserts after the open (100 a transaction)")
	visits    = flag.Int("visits", 3, "visits of the page")
	every     = flag.Bool("every", false, "every visit works and lingers, not only the first")
	traceFile = flag.String("trace", "", "write Chromium's JSON trace of the run to this file, and summarize its wasm caching events")
	jsFlags   = flag.String("js-flags", "", "extra V8 flags")
	traceSecs = flag.Int("trace-seconds", 25, "how long -trace records from Chromium's start (the run should end within it; Chromium wrote no file for 40 s or more)")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	must(err)
	dir, err := os.MkdirTemp("", "wasmcacheprobe-web-")
	must(err)
	defer os.RemoveAll(dir)
	for dst, src := range map[string]string{
		"replica.js":        "web/replica.js",
		"replica-worker.js": "web/replica-worker.js",
		"replica.wasm":      *wasmFlag,
		"wasm_exec.js":      filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"),
	} {
		b, err := os.ReadFile(src)
		must(err)
		must(os.WriteFile(filepath.Join(dir, dst), b, 0o644))
	}

	var static http.Handler
	switch *serveFlag {
	case "relay":
		data, err := os.MkdirTemp("", "wasmcacheprobe-data-")
		must(err)
		defer os.RemoveAll(data)
		srv, err := relay.New(relay.Config{WebDir: dir, DataDir: data, Auth: relay.AllowAll})
		must(err)
		defer srv.Close()
		static = srv.Handler()
	case "lm", "nostore", "immutable":
		static = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch *serveFlag {
			case "nostore":
				w.Header().Set("Cache-Control", "no-store")
			case "immutable":
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			name := filepath.Join(dir, filepath.Base(r.URL.Path))
			if strings.HasSuffix(name, ".wasm") {
				w.Header().Set("Content-Type", "application/wasm")
			}
			http.ServeFile(w, r, name)
		})
	default:
		log.Fatalf("-serve %q: relay, lm, nostore or immutable", *serveFlag)
	}

	var mu sync.Mutex
	var requests []string
	takeRequests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		x := requests
		requests = nil
		return x
	}
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte(body))
		}
	}
	worker := "true"
	if *modeFlag == "page" {
		worker = "false"
	}
	mux.HandleFunc("/open.html", html(strings.ReplaceAll(openPage, "MODE", worker)))
	mux.HandleFunc("/compile.html", html(compilePage))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: 200}
		static.ServeHTTP(sw, r)
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			mu.Lock()
			requests = append(requests, fmt.Sprintf("%d(If-Modified-Since %t)", sw.code, r.Header.Get("If-Modified-Since") != ""))
			mu.Unlock()
		}
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()

	prof, err := os.MkdirTemp("", "wasmcacheprobe-profile-")
	must(err)
	defer os.RemoveAll(prof)
	extra := []chromedp.ExecAllocatorOption{chromedp.UserDataDir(prof), chromedp.Flag("js-flags", strings.TrimSpace("--expose-gc "+*jsFlags))}
	if *traceFile != "" {
		extra = append(extra, chromedp.Flag("trace-startup", "v8.wasm,disabled-by-default-devtools.timeline"),
			chromedp.Flag("trace-startup-file", *traceFile), chromedp.Flag("trace-startup-format", "json"),
			chromedp.Flag("trace-startup-duration", fmt.Sprint(*traceSecs)))
	}
	started := time.Now()
	ctx, cancel, err := pagebench.Start(context.Background(), extra...)
	must(err)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 10*time.Minute)
	defer cancelT()

	fmt.Printf("serve=%s mode=%s work=%d linger=%s every=%t js-flags=%q\n", *serveFlag, *modeFlag, *work, *linger, *every, *jsFlags)
	for v := 1; v <= *visits; v++ {
		w := 0
		if v == 1 || *every {
			w = *work
		}
		must(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/open.html?work=%d", ts.URL, w))))
		res, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.result.then(JSON.stringify)`, chromedp.EvalAwaitPromise))
		must(err)
		if v == 1 || *every {
			time.Sleep(*linger)
		}
		must(chromedp.Do(ctx, chromedp.Navigate("about:blank")))
		time.Sleep(time.Second) // the browser writes the code cache after the renderer sends it
		fmt.Printf("visit %d: %s; replica.wasm %v; code cache %s\n", v, res, takeRequests(), codeCache(prof))
	}
	for _, in := range []string{"page", "worker"} {
		must(chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/compile.html?in="+in)))
		res, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.result.then(JSON.stringify)`, chromedp.EvalAwaitPromise))
		must(err)
		must(chromedp.Do(ctx, chromedp.Navigate("about:blank")))
		fmt.Printf("compileStreaming in the %s: %s ms; replica.wasm %v\n", in, res, takeRequests())
	}
	if *traceFile != "" {
		// Chromium writes the trace when its duration is over.
		time.Sleep(time.Until(started.Add(time.Duration(*traceSecs+10) * time.Second)))
		summarize(*traceFile)
	}
}

// openPage: T0, the loader (data-worker="MODE"), then an open of a replica
// and a read; result resolves to the page's figures (ms from T0 to the
// read's answer, the work's ms, the page's resource entry of replica.wasm
// in page mode: transferSize 0 from the HTTP cache, ~300 revalidated).
const openPage = `<!doctype html><script>const T0 = performance.now();</script>
<script src="/replica.js" data-worker="MODE"></script>
<script>
window.result = (async () => {
	const db = await Replica.open({name: "probe", schema: {tables: {t: {columns: {title: "text", n: "integer"}}}}});
	await db.get("t", "nope");
	const openMs = performance.now() - T0;
	const work = +new URLSearchParams(location.search).get("work");
	const t1 = performance.now();
	for (let i = 0; i < work; i += 100) {
		await db.transaction(async (tx) => { const ps = []; for (let j = 0; j < 100; j++) ps.push(tx.insert("t", {title: "r" + i + "-" + j, n: i + j})); await Promise.all(ps); });
	}
	const e = performance.getEntriesByName(new URL("/replica.wasm", location.href).href)[0];
	return {openMs: Math.round(openMs), workMs: Math.round(performance.now() - t1), transferSize: e ? e.transferSize : null};
})();
</script>`

// compilePage times WebAssembly.compileStreaming(fetch("/replica.wasm"))
// in the page or (?in=worker) in a Worker.
const compilePage = `<!doctype html><script>
window.result = (async () => {
	const url = new URL("/replica.wasm", location.href).href;
	if (new URLSearchParams(location.search).get("in") !== "worker") {
		const t0 = performance.now();
		await WebAssembly.compileStreaming(fetch(url));
		return Math.round(performance.now() - t0);
	}
	const src = "const t0 = performance.now(); WebAssembly.compileStreaming(fetch(" + JSON.stringify(url) + ")).then(() => postMessage(Math.round(performance.now() - t0)), (e) => postMessage(String(e)));";
	const w = new Worker(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
	return await new Promise((resolve) => { w.onmessage = (ev) => resolve(ev.data); });
})();
</script>`

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(c int) { w.code = c; w.ResponseWriter.WriteHeader(c) }

// codeCache sums the files of the profile's wasm code cache, its index
// aside.
func codeCache(prof string) string {
	var n int
	var size int64
	_ = filepath.WalkDir(filepath.Join(prof, "Default", "Code Cache", "wasm"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "index" || d.Name() == "the-real-index" {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n++
			size += info.Size()
		}
		return nil
	})
	return fmt.Sprintf("%d files, %d KiB", n, size>>10)
}

// summarize prints the trace's wasm caching events in time order: each
// streaming compile (and whether it used the code cache), each caching
// event, each entry written.
func summarize(file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		log.Printf("trace: %v", err)
		return
	}
	var t struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			TS   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			PID  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	must(json.Unmarshal(b, &t))
	keep := map[string]bool{
		"v8.wasm.streamFromResponseCallback": true, "v8.wasm.moduleCacheHit": true, "v8.wasm.moduleCacheInvalid": true,
		"v8.wasm.moduleCacheInvalidDigest": true, "wasm.CompilationChunkFinished": true, "v8.wasm.cachedModule": true,
		"wasm.FinishAsyncCompile": true, "wasm.TopTierCompilation": true,
	}
	evs := t.TraceEvents[:0]
	for _, e := range t.TraceEvents {
		if keep[e.Name] {
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].TS < evs[j].TS })
	if len(evs) == 0 {
		fmt.Println("trace: no wasm events")
		return
	}
	t0 := evs[0].TS
	tiers := 0
	for _, e := range evs {
		if e.Name == "wasm.TopTierCompilation" {
			tiers++
			continue
		}
		extra := ""
		if e.Name == "v8.wasm.moduleCacheHit" || e.Name == "v8.wasm.cachedModule" {
			a, _ := json.Marshal(e.Args)
			extra = string(a)
		}
		if e.Dur > 0 {
			extra += fmt.Sprintf(" %.0f ms", e.Dur/1000)
		}
		fmt.Printf("  %7.0f ms  pid %d  %s %s\n", (e.TS-t0)/1000, e.PID, e.Name, extra)
	}
	fmt.Printf("  (%d TurboFan compilations)\n", tiers)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
