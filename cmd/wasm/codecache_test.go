//go:build !js

package main

import (
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWorkerWasmCodeCache: the Worker of worker mode compiles replica.wasm
// in the form Chromium's wasm code cache serves (compileStreaming /
// instantiateStreaming from the fetch's own Response, same origin,
// application/wasm, a response the HTTP cache keeps): once V8 has made
// optimized code it writes an entry into the profile's Code Cache/wasm.
// Compiling from an ArrayBuffer, or a no-store response, gets none. V8
// is told to cache at its first optimized code (--wasm-caching-timeout-ms=0):
// with its default flags Chromium 156 writes no entry for sessions this
// short (bench/doc.go, "The wasm code cache"), which is why the test
// cannot wait for one without the flag.
func TestWorkerWasmCodeCache(t *testing.T) {
	profile := t.TempDir()
	ctx := browser(t, chromedp.UserDataDir(profile), chromedp.Flag("js-flags", "--wasm-caching-timeout-ms=0"))
	srv := serve(t, "application/wasm")

	// Enough work for V8 to optimize some of Go's functions.
	var res struct {
		Count  int  `json:"count"`
		InPage bool `json:"inPage"`
	}
	run(t, ctx, srv.URL+"/default.html", `
		const db = await Replica.open({name: "cc", schema: {tables: {t: {columns: {title: "text", n: "integer"}}}}});
		for (let i = 0; i < 20; i++) {
			await db.transaction(async (tx) => { const ps = []; for (let j = 0; j < 100; j++) ps.push(tx.insert("t", {title: "r" + j, n: i * 100 + j})); await Promise.all(ps); });
		}
		return {count: await db.count("t"), inPage: typeof Go === "function"};
	`, &res)
	if res.Count != 2000 || res.InPage {
		t.Fatalf("count %d, Go in the page %t", res.Count, res.InPage)
	}
	dir := filepath.Join(profile, "Default", "Code Cache", "wasm")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var entries []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != "index" && d.Name() != "the-real-index" {
				entries = append(entries, d.Name())
			}
			return nil
		})
		if len(entries) > 0 {
			t.Logf("%d files in %s", len(entries), dir)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no wasm code cache entry in %s 30 s after the Worker's session", dir)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
