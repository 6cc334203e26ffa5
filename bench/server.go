//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/replica-sync/replica/internal/pagebench"
)

// pageConfig is BENCH_CONFIG in every page.
type pageConfig struct {
	Schema json.RawMessage `json:"schema"`
	// SealKey is the 32 raw bytes of the sealed database's key (pages of
	// a sealed system only), passed to db.sync.connect as a Uint8Array.
	SealKey []int `json:"sealKey,omitempty"`
}

// sealKey is the key of this run's sealed databases (W5's, seeded by a
// native client, and W8's): 32 random bytes (seal.GenerateKey).
var sealKey []byte

// system is one column of the table.
type system struct {
	name  string // in URLs and adapter file names: raw, replica, dexie, tinybase
	title string
	// scripts are the page's <script> tags after T0 and the shared
	// helpers, before common.js; module is the adapter's type.
	scripts []string
	module  bool
	// files are the library files the page loads, for W9 (relative to
	// the repository root); empty for raw IndexedDB.
	files []string
	// syncs: W8 applies.
	syncs bool
	// sealed: Replica syncing sealed databases (the key in BENCH_CONFIG,
	// the adapter of "replica"); it runs W5 (from a sealed checkpoint),
	// W7 after it, and W8 only: the other workloads do not sync.
	sealed bool
	// adapter names the sys-*.js file when it is not name's.
	adapter string
	// worker: Replica in worker mode, the loader's default (its script
	// tag has data-worker="true": the engine runs in a dedicated Worker,
	// not on the page's thread); the other Replica systems run in page
	// mode (data-worker="false").
	worker bool
}

var systems = []system{
	{name: "raw", title: "raw IndexedDB"},
	{name: "replica", title: "Replica, page mode", syncs: true,
		scripts: []string{"/lib/wasm_exec.js", "GOCOUNT", "/lib/replica.js"},
		files:   []string{"WASM", "web/replica.js", "GOROOT/lib/wasm/wasm_exec.js"}},
	{name: "replica-worker", title: "Replica in a Worker (default)", syncs: true, adapter: "replica", worker: true,
		scripts: []string{"/lib/replica.js"},
		files:   []string{"WASM", "web/replica.js", "web/replica-worker.js", "GOROOT/lib/wasm/wasm_exec.js"}},
	{name: "replica-sealed", title: "Replica sealed", syncs: true, sealed: true, adapter: "replica",
		scripts: []string{"/lib/wasm_exec.js", "GOCOUNT", "/lib/replica.js"},
		files:   []string{"WASM", "web/replica.js", "GOROOT/lib/wasm/wasm_exec.js"}},
	{name: "dexie", title: "Dexie", scripts: []string{"/nm/dexie/dist/dexie.min.js"},
		files: []string{"bench/node_modules/dexie/dist/dexie.min.js"}},
	{name: "tinybase", title: "TinyBase", module: true, syncs: true,
		files: []string{"bench/node_modules/tinybase/min/mergeable-store/index.js",
			"bench/node_modules/tinybase/min/persisters/persister-indexed-db/index.js"}},
}

func systemByName(n string) *system {
	for i := range systems {
		if systems[i].name == n {
			return &systems[i]
		}
	}
	return nil
}

// page returns the HTML of sys's page: T0 first, then (profiling) the
// IndexedDB request counter, the shared helpers, the library, common.js and
// the adapter.
func page(sys *system, profile bool) string {
	var b strings.Builder
	pc := pageConfig{Schema: json.RawMessage(schemaJSON)}
	if sys.sealed {
		for _, b := range sealKey {
			pc.SealKey = append(pc.SealKey, int(b))
		}
	}
	cfg, _ := json.Marshal(pc)
	b.WriteString("<!doctype html><meta charset=utf-8><title>bench " + sys.name + "</title>\n")
	// The long-task observer is installed before any system's script (W10).
	b.WriteString("<script>const T0 = performance.now(); const LONGTASKS = []; try { new PerformanceObserver((l) => { for (const e of l.getEntries()) LONGTASKS.push([e.startTime, e.duration]); }).observe({type: \"longtask\", buffered: true}); } catch (e) {}</script>\n")
	if profile {
		b.WriteString(`<script src="/pb/idbcount.js"></script>` + "\n")
	}
	b.WriteString(`<script src="/pb/rawidb.js"></script>` + "\n")
	fmt.Fprintf(&b, "<script>const BENCH_CONFIG = %s;</script>\n", cfg)
	for _, s := range sys.scripts {
		if s == "GOCOUNT" {
			fmt.Fprintf(&b, "<script>globalThis.goCountOptions = {count: %v};</script>\n", profile)
			s = "/pb/gocount.js"
		}
		if s == "/lib/replica.js" {
			// W7 counts a Worker's memory too (bench/js/workermem.js).
			b.WriteString(`<script src="/js/workermem.js"></script>` + "\n")
			// Each system names its mode (worker mode is the loader's
			// default).
			mode := "false"
			if sys.worker {
				mode = "true"
			}
			fmt.Fprintf(&b, "<script src=%q data-worker=%q></script>\n", s, mode)
			continue
		}
		fmt.Fprintf(&b, "<script src=%q></script>\n", s)
	}
	b.WriteString(`<script src="/js/common.js"></script>` + "\n")
	adapter := sys.name
	if sys.adapter != "" {
		adapter = sys.adapter
	}
	if sys.module {
		fmt.Fprintf(&b, "<script type=module src=\"/js/sys-%s.js\"></script>\n", adapter)
	} else {
		fmt.Fprintf(&b, "<script src=\"/js/sys-%s.js\"></script>\n", adapter)
	}
	return b.String()
}

// libFiles maps the library files the pages load (/lib/NAME) to the files
// served: web/'s loader and Worker, GOROOT's wasm_exec.js and the release
// build of replica.wasm.
func libFiles(root, wasmPath, goroot string) map[string]string {
	return map[string]string{
		"replica.js":        filepath.Join(root, "web", "replica.js"),
		"replica-worker.js": filepath.Join(root, "web", "replica-worker.js"),
		"wasm_exec.js":      filepath.Join(goroot, "lib", "wasm", "wasm_exec.js"),
		"replica.wasm":      wasmPath,
	}
}

// linkLibs makes dir hold a symbolic link to each of libs (name -> file),
// for the relay's static handler to serve.
func linkLibs(dir string, libs map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, file := range libs {
		abs, err := filepath.Abs(file)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// handler serves the pages, scripts, data and the relay (rs: /sync, and
// /lib/'s library files through the relay's static handler, with the
// headers production gets from the relay: Content-Type application/wasm,
// Cache-Control no-cache, Last-Modified, 304 on revalidation; see
// relay/static.go).
func handler(root string, data *dataset, rs http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/p/"), ".html")
		sys := systemByName(name)
		if sys == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(page(sys, r.URL.Query().Get("profile") == "1")))
	})
	mux.Handle("/lib/", http.StripPrefix("/lib", rs))
	pb := map[string]string{"/pb/idbcount.js": pagebench.IDBCountJS, "/pb/gocount.js": pagebench.GoCountJS, "/pb/rawidb.js": pagebench.RawIDBJS}
	mux.HandleFunc("/pb/", func(w http.ResponseWriter, r *http.Request) {
		s, ok := pb[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(s))
	})
	mux.Handle("/js/", http.StripPrefix("/js/", http.FileServer(http.Dir(filepath.Join(root, "bench", "js")))))
	mux.Handle("/nm/", http.StripPrefix("/nm/", http.FileServer(http.Dir(filepath.Join(root, "bench", "node_modules")))))
	mux.HandleFunc("/data/rows.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data.rowsJSON)
	})
	mux.HandleFunc("/data/prefixes.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data.prefixesJSON)
	})
	mux.Handle("/sync", rs)
	return mux
}

// exists reports whether every file of paths is there.
func exists(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}
