//go:build !js

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestLoaderPackage uses the npm package as an app would: `make package`
// builds it into a temporary DIST (installing npm if missing, as make
// typecheck does), npm installs the tarball (--offline: the package has no
// dependencies) into an app directory, which is served over loopback, and
// headless Chromium imports the ES module from it: through an import map by
// the package's name, by a relative path with the files placed elsewhere by
// Replica.configure, under a Content-Security-Policy without 'unsafe-eval',
// from a module Worker, and the script-tag build the package also carries.
// Each opens a replica, writes and reads rows.
func TestLoaderPackage(t *testing.T) {
	ctx := browser(t) // skips without REPLICA_CHROMIUM
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")
	const version = "0.0.0-test"
	mk := exec.Command("make", "-C", "../..", "package", "DIST="+dist, "PACKAGE_VERSION="+version)
	mk.Env = withoutMake(os.Environ())
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make package: %v\n%s", err, out)
	}
	tgz := filepath.Join(dist, "replica-sync-replica-"+version+".tgz")
	checkTarball(t, tgz, version)
	if _, err := exec.LookPath("npm"); err != nil { // make package installs it where it can
		t.Fatal(err)
	}

	app := filepath.Join(tmp, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "app", "private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	npm := exec.Command("npm", "install", "--offline", "--no-audit", "--no-fund", "--no-update-notifier", tgz)
	npm.Dir = app
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", tgz, err, out)
	}
	pkg := filepath.Join(app, "node_modules", "@replica-sync", "replica")
	// Elsewhere, for Replica.configure: the same two files under other names.
	if err := os.MkdirAll(filepath.Join(app, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{"replica.wasm": "r.wasm", "wasm_exec.js": "go.js"} {
		b, err := os.ReadFile(filepath.Join(pkg, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, "assets", dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pages := map[string]string{
		// By name, through an import map, as a bundler resolves it.
		"/map.html": `<!doctype html>
<script type="importmap">{"imports": {"@replica-sync/replica": "/node_modules/@replica-sync/replica/index.js"}}</script>
<script type="module">
import { Replica } from "@replica-sync/replica";
import ReplicaDefault from "@replica-sync/replica";
window.pkg = {Replica, same: Replica === ReplicaDefault, global: typeof globalThis.Replica};
</script>`,
		// By path, with the files somewhere else.
		"/path.html": `<!doctype html>
<script type="module">
import { Replica } from "./node_modules/@replica-sync/replica/index.js";
Replica.configure({wasmURL: "/assets/r.wasm", wasmExecURL: new URL("/assets/go.js", location.href)});
window.pkg = {Replica};
</script>`,
		// No 'unsafe-eval': the module carries facade.js and helper.js as
		// replica.js does, so nothing is compiled from strings.
		"/csp.html": `<!doctype html>
<meta http-equiv="Content-Security-Policy" content="script-src 'self' 'wasm-unsafe-eval'">
<script type="module" src="/csp.js"></script>`,
		"/csp.js": `
import { Replica } from "./node_modules/@replica-sync/replica/index.js";
let evalAllowed = true;
try { new Function("return 1"); } catch (e) { evalAllowed = false; }
window.pkg = {Replica, evalAllowed};
`,
		"/worker.html": `<!doctype html><title>worker</title>`,
		"/worker.js": `
import { Replica } from "./node_modules/@replica-sync/replica/index.js";
(async () => {
	try {
		const db = await Replica.open({name: "pkg-worker", schema: {tables: {t: {columns: {v: "text"}}}}});
		await db.insert("t", {v: "from a worker"});
		const rows = await db.query("t");
		await db.close();
		postMessage(rows.map((r) => r.v).join(",") + " " + typeof Go + " " + typeof globalThis.Replica);
	} catch (e) {
		postMessage("error " + e.code + ": " + e.message);
	}
})();`,
		// Worker mode from a module Worker: the engine in a Worker of
		// the Worker.
		"/worker-nested.js": `
import { Replica } from "./node_modules/@replica-sync/replica/index.js";
(async () => {
	try {
		const db = await Replica.open({name: "pkg-worker-nested", worker: true, schema: {tables: {t: {columns: {v: "text"}}}}});
		await db.insert("t", {v: "nested"});
		const rows = await db.query("t");
		await db.close();
		postMessage(rows.map((r) => r.v).join(",") + " " + typeof Go);
	} catch (e) {
		postMessage("error " + e.code + ": " + e.message);
	}
})();`,
		// Page mode: the tag loads replica.wasm at once (configure refuses).
		"/script.html": `<!doctype html><script src="/node_modules/@replica-sync/replica/replica.js" data-worker="false"></script>`,
	}
	var mu sync.Mutex
	var fetched []string
	files := http.FileServer(http.Dir(app))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched = append(fetched, r.URL.Path)
		mu.Unlock()
		if p, ok := pages[r.URL.Path]; ok {
			if strings.HasSuffix(r.URL.Path, ".js") {
				w.Header().Set("Content-Type", "text/javascript")
			} else {
				w.Header().Set("Content-Type", "text/html")
			}
			_, _ = w.Write([]byte(p))
			return
		}
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			w.Header().Set("Content-Type", "application/wasm")
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		f := fetched
		fetched = nil
		return f
	}

	t.Run("import map", func(t *testing.T) {
		took()
		var got struct {
			Same, Lazy          bool
			Global, GlobalAfter string
			Problems            []string
			Rows                string
			Late, ErrClass      string
		}
		run(t, ctx, srv.URL+"/map.html", checkAPI+`
			const {Replica, same, global} = window.pkg;
			// Nothing is fetched before the first use.
			await new Promise((r) => setTimeout(r, 200));
			const lazy = typeof Go === "undefined" && !performance.getEntriesByType("resource").some((e) => e.name.endsWith(".wasm"));
			await Replica.ready;
			let late = "";
			try { Replica.configure({wasmURL: "/x.wasm"}); } catch (e) { late = e.code; }
			const db = await Replica.open({name: "pkg-map", schema: {tables: {t: {columns: {title: "text", n: "integer"}}}}});
			await db.transaction(async (tx) => { await tx.insert("t", {title: "a", n: 1}); await tx.insert("t", {title: "b", n: 2}); });
			const rows = (await db.query("t", {orderBy: "title"})).map((r) => r.title + ":" + r.n).join(",");
			let errClass = "";
			try { await db.insert("t", {n: "x"}); } catch (e) { errClass = (e instanceof Replica.ReplicaError) + " " + e.code; }
			await db.close();
			const problems = await checkAPI({Static: Replica});
			return {same, lazy, global, globalAfter: typeof globalThis.Replica, problems, rows, late, errClass};
		`, &got)
		for _, p := range got.Problems {
			t.Error(p)
		}
		if !got.Same || !got.Lazy || got.Global != "undefined" || got.GlobalAfter != "undefined" {
			t.Errorf("default export is Replica %v, nothing loaded before use %v, global Replica before %q and after %q (want undefined)", got.Same, got.Lazy, got.Global, got.GlobalAfter)
		}
		if got.Rows != "a:1,b:2" {
			t.Errorf("rows %q", got.Rows)
		}
		if got.Late != "INVALID_ARGUMENT" || got.ErrClass != "true VALIDATION" {
			t.Errorf("configure after loading: %q; a bad insert: %q", got.Late, got.ErrClass)
		}
		if f := took(); !slices.Contains(f, "/node_modules/@replica-sync/replica/replica.wasm") || !slices.Contains(f, "/node_modules/@replica-sync/replica/wasm_exec.js") {
			t.Errorf("fetched %v: want the package's replica.wasm and wasm_exec.js", f)
		}
	})

	t.Run("configure", func(t *testing.T) {
		took()
		var got string
		run(t, ctx, srv.URL+"/path.html", `
			const {Replica} = window.pkg;
			const errs = [];
			for (const bad of [null, {baseURL: "/"}, {wasmURL: 42}]) {
				try { Replica.configure(bad); errs.push("accepted"); } catch (e) { errs.push(e.code); }
			}
			const db = await Replica.open({name: "pkg-path", schema: {tables: {t: {columns: {v: "text"}}}}});
			await db.insert("t", {v: "x"});
			const n = await db.count("t");
			await db.close();
			return errs.join(",") + " " + n;
		`, &got)
		if got != "INVALID_ARGUMENT,INVALID_ARGUMENT,INVALID_ARGUMENT 1" {
			t.Errorf("got %q", got)
		}
		f := took()
		if !slices.Contains(f, "/assets/r.wasm") || !slices.Contains(f, "/assets/go.js") {
			t.Errorf("fetched %v: want /assets/r.wasm and /assets/go.js", f)
		}
		for _, p := range f {
			// replica-worker.js: worker mode's (the default), not configured.
			if strings.HasPrefix(p, "/node_modules/") && !strings.HasSuffix(p, "/index.js") && !strings.HasSuffix(p, "/replica-worker.js") {
				t.Errorf("fetched %s besides the configured files", p)
			}
		}
	})

	t.Run("CSP without eval", func(t *testing.T) {
		var got string
		run(t, ctx, srv.URL+"/csp.html", `
			const {Replica, evalAllowed} = window.pkg;
			const db = await Replica.open({name: "pkg-csp", schema: {tables: {t: {columns: {v: "text"}}}}});
			await db.transaction(async (tx) => { await tx.insert("t", {v: "a"}); await tx.insert("t", {v: "b"}); });
			const rows = (await db.query("t", {orderBy: "v"})).map((r) => r.v).join(",");
			await db.close();
			return "eval " + evalAllowed + " " + rows;
		`, &got)
		if got != "eval false a,b" {
			t.Errorf("got %q, want eval false a,b", got)
		}
	})

	t.Run("module worker", func(t *testing.T) {
		var got string
		run(t, ctx, srv.URL+"/worker.html", `
			const w = new Worker("/worker.js", {type: "module"});
			const got = await new Promise((resolve) => {
				w.onmessage = (e) => resolve(e.data);
				w.onerror = (e) => resolve("worker error: " + e.message);
			});
			w.terminate();
			return got;
		`, &got)
		if got != "from a worker function undefined" {
			t.Errorf("got %q", got)
		}
	})

	t.Run("worker mode", func(t *testing.T) {
		took()
		var got string
		run(t, ctx, srv.URL+"/map.html", `
			const {Replica} = window.pkg;
			const db = await Replica.open({name: "pkg-worker-mode", worker: true, schema: {tables: {t: {columns: {v: "text", b: "blob"}}}}});
			await db.transaction(async (tx) => { tx.insert("t", {v: "a", b: new Uint8Array([7])}); tx.insert("t", {v: "b"}); });
			const rows = (await db.query("t", {orderBy: "v"})).map((r) => r.v + (r.b ? r.b[0] : "")).join(",");
			await db.close();
			const w = new Worker("/worker-nested.js", {type: "module"});
			const nested = await new Promise((resolve) => {
				w.onmessage = (e) => resolve(e.data);
				w.onerror = (e) => resolve("worker error: " + e.message);
			});
			w.terminate();
			return rows + " " + typeof Go + " | " + nested;
		`, &got)
		// typeof Go: the page (and the module Worker) never loaded
		// wasm_exec.js; the Worker of worker mode did.
		if got != "a7,b undefined | nested undefined" {
			t.Errorf("got %q", got)
		}
		if f := took(); !slices.Contains(f, "/node_modules/@replica-sync/replica/replica-worker.js") || !slices.Contains(f, "/node_modules/@replica-sync/replica/replica.wasm") {
			t.Errorf("fetched %v: want the package's replica-worker.js and replica.wasm", f)
		}
	})

	t.Run("script tag", func(t *testing.T) {
		var got string
		run(t, ctx, srv.URL+"/script.html", `
			let late = "";
			try { Replica.configure({wasmURL: "/assets/r.wasm"}); } catch (e) { late = e.code; }
			const db = await Replica.open({name: "pkg-script", schema: {tables: {t: {columns: {v: "text"}}}}});
			await db.insert("t", {v: "x"});
			const n = await db.count("t");
			await db.close();
			return late + " " + n;
		`, &got)
		if got != "INVALID_ARGUMENT 1" {
			t.Errorf("got %q", got)
		}
	})
}

// checkTarball: the tarball holds exactly the package's files, its
// package.json says what an npm user's tools read, and its wasm_exec.js is
// the one of the Go that built its replica.wasm (this Go).
func checkTarball(t *testing.T, tgz, version string) {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	content := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		content[h.Name] = b
	}
	var names []string
	for n := range content {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"package/README.md", "package/index.d.ts", "package/index.js", "package/package.json",
		"package/replica-worker.js", "package/replica.d.ts", "package/replica.js", "package/replica.wasm", "package/wasm_exec.js"}
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %v, want %v", tgz, names, want)
	}
	var p struct {
		Name, Version, License, Type string
		Exports                      map[string]json.RawMessage
		Files                        []string
	}
	if err := json.Unmarshal(content["package/package.json"], &p); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	var dot struct{ Types, Import, Default string }
	_ = json.Unmarshal(p.Exports["."], &dot)
	if p.Name != "@replica-sync/replica" || p.Version != version || p.Type != "module" || p.License == "" ||
		dot != (struct{ Types, Import, Default string }{"./index.d.ts", "./index.js", "./index.js"}) {
		t.Errorf("package.json: %s", content["package/package.json"])
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(content["package/wasm_exec.js"], wasmExec) {
		t.Error("the package's wasm_exec.js is not this Go's")
	}
	if !bytes.HasPrefix(content["package/replica.wasm"], []byte("\x00asm")) {
		t.Error("the package's replica.wasm is not a WebAssembly module")
	}
	if js, _ := os.ReadFile(replicaJS); !bytes.Equal(content["package/replica.js"], js) {
		t.Error("the package's replica.js is not web/replica.js")
	}
}

// withoutMake drops the variables of an enclosing make (its jobserver and
// flags) from env, so that `make package` run from a test run by make starts
// afresh.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
