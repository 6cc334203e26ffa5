//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The loader tests load web/replica.js and the built web/replica.wasm into
// headless Chromium from a local HTTP server, as a web page would, and run
// the API through the global Replica the loader installs. They need the
// browser named by REPLICA_CHROMIUM (`make test-browser` sets it); without
// it they are skipped.

// page serves dir's files; wasmType is the Content-Type of .wasm files.
func serve(t *testing.T, wasmType string) *httptest.Server {
	t.Helper()
	buildWasm(t)
	dir := t.TempDir()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	for dst, src := range map[string]string{
		"replica.js":        replicaJS,
		"replica-worker.js": workerJS,
		"replica.wasm":      wasmPath,
		"wasm_exec.js":      filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"),
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The pages of page mode say so (data-worker="false"): worker mode is
	// the default (/default.html).
	pages := map[string]string{
		"/default.html": `<!doctype html><script src="lib/replica.js"></script>`,
		"/two.html":     `<!doctype html><script src="lib/wasm_exec.js"></script><script src="lib/replica.js" data-worker="false"></script>`,
		"/one.html":     `<!doctype html><script src="lib/replica.js" data-worker="false"></script>`,
		// The script tag asking for worker mode (worker_test.go).
		"/worker.html": `<!doctype html><script src="lib/replica.js" data-worker></script>`,
		// A page loaded 31 days ago (Date.now set back while the loader
		// loads), whose write tokens' journal names are recorded
		// (worker_test.go TestWorkerJournalAge).
		"/old-worker.html": `<!doctype html><script>
			const realNow = Date.now; Date.now = () => realNow.call(Date) - 31 * 864e5;
			window.journals = [];
			const post = Worker.prototype.postMessage;
			Worker.prototype.postMessage = function (m, ...rest) {
				if (m && Array.isArray(m.c)) for (const c of m.c) if (c.length === 11 && typeof c[10] === "string") journals.push(c[10]);
				return post.call(this, m, ...rest);
			};
			</script><script src="lib/replica.js" data-worker></script><script>Date.now = realNow;</script>`,
		// Worker mode whose Worker's messages the test can hold back
		// (window.holdAnswers): as if the Worker answered but the page
		// had not read its messages when it froze (worker_test.go).
		"/hold-worker.html": `<!doctype html><script>
			window.holdAnswers = false;
			// bufferAnswers: kept in buffered, for deliver(data) to hand
			// to the loader's handler of the last Worker later. live: the
			// Workers started and not terminated.
			window.bufferAnswers = false; window.buffered = []; window.live = 0;
			let last = null;
			window.deliver = (data) => last(data);
			const W = Worker;
			window.Worker = class extends W { constructor(...a) { super(...a); live++; } terminate() { live--; return super.terminate(); } };
			Object.defineProperty(Worker.prototype, "onmessage", {configurable: true, set(fn) {
				last = (data) => fn.call(this, {data});
				this.addEventListener("message", (ev) => {
					if (window.bufferAnswers) buffered.push(ev.data);
					else if (!window.holdAnswers) fn.call(this, ev);
				});
			}});
			</script><script src="lib/replica.js"></script>`,
		"/missing.html": `<!doctype html><script src="nowhere/replica.js" data-worker="false"></script>`,
		// No 'unsafe-eval': new Function throws. spy.js counts the uses of
		// the loader's copy of idbkv's helper.js.
		"/csp.html": `<!doctype html><meta http-equiv="Content-Security-Policy" content="script-src 'self' 'wasm-unsafe-eval'">` +
			`<script src="lib/replica.js" data-worker="false"></script><script src="spy.js"></script>`,
		"/spy.js": cspSpy,
		// The strictest policy the README gives: nothing but the page's
		// own scripts, WebAssembly compilation, and connections to its own
		// origin (replica.wasm's fetch) and the relay.
		"/strict.html": `<!doctype html><meta http-equiv="Content-Security-Policy" content="` + strictCSP + `">` +
			`<script src="lib/replica.js" data-worker="false"></script><script src="spy.js"></script>`,
		// The same policy in worker mode (worker_test.go).
		"/strict-worker.html": `<!doctype html><meta http-equiv="Content-Security-Policy" content="` + strictCSP + `">` +
			`<script src="lib/replica.js" data-worker></script><script src="spy.js"></script>`,
	}
	files := http.StripPrefix("/lib/", http.FileServer(http.Dir(dir)))
	mux := http.NewServeMux()
	// /offline makes /lib/ answer 503 from then on, as a network that
	// went away would fail; /wasm-fetches counts replica.wasm's fetches.
	var offline atomic.Bool
	var wasmFetches atomic.Int64
	mux.HandleFunc("/offline", func(w http.ResponseWriter, r *http.Request) { offline.Store(true) })
	mux.HandleFunc("/wasm-fetches", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, wasmFetches.Load()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if offline.Load() && strings.HasPrefix(r.URL.Path, "/lib/") {
			http.Error(w, "offline", http.StatusServiceUnavailable)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/replica.wasm") {
			wasmFetches.Add(1)
		}
		if p, ok := pages[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "text/html")
			if strings.HasSuffix(r.URL.Path, ".js") {
				w.Header().Set("Content-Type", "text/javascript")
			}
			_, _ = w.Write([]byte(p))
			return
		}
		if r.URL.Path == "/nowhere/replica.js" || r.URL.Path == "/nowhere/wasm_exec.js" { // no replica.wasm there
			http.ServeFile(w, r, filepath.Join(dir, filepath.Base(r.URL.Path)))
			return
		}
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			w.Header().Set("Content-Type", wasmType)
		}
		files.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// browser starts headless Chromium and returns a context for it.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := os.Getenv("REPLICA_CHROMIUM")
	if path == "" {
		t.Skip("REPLICA_CHROMIUM is not set (make test-browser sets it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
	)
	opts = append(opts, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel3)
	return ctx
}

// run navigates to url and evaluates the async function body js (with
// `api`, the .d.ts member list, in scope) and decodes its result into out.
func run(t *testing.T, ctx context.Context, url, js string, out any) {
	t.Helper()
	api := map[string][]member{}
	ifaces := parseDTS(readFile(t, replicaDTS))
	for n := range apiObjects {
		api[n] = flatten(ifaces, n)
	}
	type m struct {
		Name   string `json:"name"`
		Method bool   `json:"method"`
	}
	list := map[string][]m{}
	for n, ms := range api {
		for _, x := range ms {
			list[n] = append(list[n], m{x.name, x.method})
		}
	}
	apiJSON, _ := json.Marshal(list)
	expr := "(async () => { const api = " + string(apiJSON) + ";\n" + js + "\n})()"
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: result %s: %v", url, raw, err)
	}
}

// checkAPI (page JavaScript) compares the members of the real objects with
// the .d.ts: every declared member exists (methods are functions), and no
// other public member does. It returns a list of problems.
const checkAPI = `
async function checkAPI(objs) {
	const problems = [];
	for (const [iface, obj] of Object.entries(objs)) {
		const declared = new Map(api[iface].map((m) => [m.name, m.method]));
		for (const [name, method] of declared) {
			if (!(name in obj)) problems.push(iface + "." + name + " is declared but missing");
			else if (method && typeof obj[name] !== "function") problems.push(iface + "." + name + " is not a function");
		}
		const seen = new Set();
		for (let o = obj; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
			for (const name of Object.getOwnPropertyNames(o)) {
				if (name === "constructor" || seen.has(name)) continue;
				seen.add(name);
				if (!declared.has(name)) problems.push(iface + "." + name + " exists but is not declared in replica.d.ts");
			}
		}
	}
	return problems;
}
`

func TestLoaderTwoScriptTags(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	var res struct {
		Problems []string `json:"problems"`
		Rows     string   `json:"rows"`
		Events   []string `json:"events"`
		Errors   []string `json:"errors"`
	}
	run(t, ctx, srv.URL+"/two.html", checkAPI+`
		await Replica.ready;
		const db = await Replica.open({name: "loader-two", schema: {tables: {t: {columns: {title: "text", n: "integer", at: "timestamp"}}}}});
		let tx, ev;
		const off = db.on("change", (e) => { ev = e; });
		await db.transaction(async (t) => { tx = t; await t.insert("t", {title: "a", n: 2n ** 60n, at: new Date(5)}); });
		while (!ev) await new Promise((r) => setTimeout(r, 10));
		off();
		const problems = await checkAPI({Static: Replica, Database: db, Transaction: tx, Sync: db.sync, Inspector: db.inspect, ChangeEvent: ev});
		if (ev.siteId !== db.siteId) problems.push("change event siteId " + ev.siteId + ", db.siteId " + db.siteId);
		const rows = await db.query("t");
		const errors = [];
		for (const ev of ["change", "remoteChange", "conflict", "held", "unknownTable", "syncState", "leaderChange"]) db.on(ev, () => {})();
		try { db.on("nope", () => {}); } catch (e) { errors.push(e.code); }
		try { await db.insert("t", {n: "x"}); } catch (e) { errors.push((e instanceof Replica.ReplicaError) + " " + e.code + " " + e.column); }
		await db.close();
		return {problems, rows: rows.map((r) => r.title + ":" + r.n + ":" + r.at.getTime()).join(","), events: [], errors};
	`, &res)
	for _, p := range res.Problems {
		t.Error(p)
	}
	if res.Rows != "a:1152921504606846976:5" {
		t.Errorf("rows %q", res.Rows)
	}
	if strings.Join(res.Errors, "|") != "INVALID_ARGUMENT|true VALIDATION n" {
		t.Errorf("errors %q", res.Errors)
	}
}

// TestLoaderOneTagWrongMIME: replica.js alone loads wasm_exec.js from its
// own directory, and falls back from instantiateStreaming when the server
// sends replica.wasm as application/octet-stream.
func TestLoaderOneTagWrongMIME(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/octet-stream")
	var got string
	run(t, ctx, srv.URL+"/one.html", `
		const early = Replica.open({name: "loader-one", schema: {tables: {t: {columns: {v: "text"}}}}});
		const db = await early;
		await db.insert("t", {v: "x"});
		const n = await db.count("t");
		await db.close();
		return typeof Go + " " + n;
	`, &got)
	if got != "function 1" {
		t.Errorf("got %q", got)
	}
}

// TestLoaderMissingWasm: when replica.wasm cannot be fetched, Replica.ready
// and Replica.open reject with a clear INTERNAL error.
func TestLoaderMissingWasm(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	var got string
	run(t, ctx, srv.URL+"/missing.html", `
		const out = [];
		try { await Replica.ready; out.push("ready resolved"); } catch (e) { out.push(e.code + ": " + e.message); }
		try { await Replica.open({name: "x", schema: {tables: {}}}); out.push("open resolved"); } catch (e) { out.push(e.code); }
		return out.join(" | ");
	`, &got)
	if !strings.HasPrefix(got, "INTERNAL: replica.js:") || !strings.Contains(got, "404") || !strings.HasSuffix(got, "| INTERNAL") {
		t.Errorf("got %q", got)
	}
}

// strictCSP is the README's Content-Security-Policy, with the test relay's
// origin (any loopback port) in connect-src.
const strictCSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' ws://127.0.0.1:*"

// cspSpy (spy.js of csp.html) records whether the page may compile strings
// (spy.eval: "EvalError" under its Content-Security-Policy) and wraps the
// loader's copy of idbkv/helper.js to count the Stores built on it and the
// commits they run through it.
const cspSpy = `
window.spy = {eval: "allowed", helpers: 0, commits: 0};
try { new Function("return 1"); } catch (e) { spy.eval = e.name; }
const helper = Replica._idbHelper;
Replica._idbHelper = function (cb, opts) {
	spy.helpers++;
	const h = helper(cb, opts);
	const commit = h.commit;
	h.commit = function () { spy.commits++; return commit.apply(this, arguments); };
	return h;
};
`

// TestLoaderCSPWithoutEval: on a page whose Content-Security-Policy forbids
// 'unsafe-eval', replica.js's copies of facade.js and idbkv/helper.js are
// used: the API works, and its IndexedDB transactions run through the
// helper (the batched driver), not a fallback.
func TestLoaderCSPWithoutEval(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	var got struct {
		Eval    string `json:"eval"`
		Helpers int    `json:"helpers"`
		Commits int    `json:"commits"`
		Rows    string `json:"rows"`
		Left    bool   `json:"left"` // Replica._idbHelper still set after ready
	}
	run(t, ctx, srv.URL+"/csp.html", `
		const db = await Replica.open({name: "loader-csp", schema: {tables: {t: {columns: {v: "text"}}}}});
		await db.insert("t", {v: "a"});
		await db.transaction(async (tx) => { await tx.insert("t", {v: "b"}); });
		const rows = (await db.query("t", {orderBy: "v"})).map((r) => r.v).join(",");
		await db.close();
		return {eval: spy.eval, helpers: spy.helpers, commits: spy.commits, rows, left: "_idbHelper" in Replica};
	`, &got)
	if got.Eval != "EvalError" {
		t.Fatalf("new Function on the CSP page: %q, want EvalError (is the policy applied?)", got.Eval)
	}
	if got.Rows != "a,b" {
		t.Errorf("rows %q, want a,b", got.Rows)
	}
	if got.Helpers != 1 || got.Commits < 2 {
		t.Errorf("the page's helper built %d Stores and ran %d commits, want 1 and at least 2", got.Helpers, got.Commits)
	}
	if got.Left {
		t.Error("Replica._idbHelper is still set after the API was installed")
	}
}
