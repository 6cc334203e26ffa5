//go:build !js

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestLibServedAsProduction: the pages' library files come through the
// relay's static handler, with the headers cmd/relay gives replica.wasm
// (application/wasm, Cache-Control: no-cache, Last-Modified, 304 when
// revalidated): W6 measures what users get, revalidation included.
func TestLibServedAsProduction(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "replica.wasm")
	if err := os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(dir, "web")
	if err := linkLibs(web, libFiles(filepath.Join(dir, "repo"), wasm, filepath.Join(dir, "goroot"))); err != nil {
		t.Fatal(err)
	}
	rs, err := newRelay(filepath.Join(dir, "data"), web)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	srv := httptest.NewServer(handler(dir, &dataset{}, rs.Handler()))
	defer srv.Close()

	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := get("/lib/replica.wasm")
	lm := resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/wasm" || resp.Header.Get("Cache-Control") != "no-cache" || lm == "" {
		t.Fatalf("/lib/replica.wasm: %d, Content-Type %q, Cache-Control %q, Last-Modified %q",
			resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), lm)
	}
	if resp := get("/lib/replica.wasm", "If-Modified-Since", lm); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("/lib/replica.wasm revalidated: %d, want 304", resp.StatusCode)
	}
	if resp := get("/lib/missing.js"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/lib/missing.js: %d, want 404", resp.StatusCode)
	}
}
