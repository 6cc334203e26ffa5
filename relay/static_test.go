//go:build !js

package relay

import (
	"compress/gzip"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStaticRevalidation: the web directory's files, replica.wasm plain
// and precompressed, are served so that a browser keeps them in its HTTP
// cache and revalidates them on each load (Cache-Control: no-cache, never
// no-store, with Last-Modified): an unchanged file is answered 304 Not
// Modified, so the browser keeps its cached copy and, with it, any V8 code
// cache entry made from the copy's first download (see staticHandler); a
// rebuilt file is answered 200 with its new bytes.
func TestStaticRevalidation(t *testing.T) {
	web := t.TempDir()
	wasm := filepath.Join(web, "replica.wasm")
	mustWrite(t, wasm, "\x00asm\x01\x00\x00\x00")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(wasm, old, old); err != nil {
		t.Fatal(err)
	}
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("\x00asm\x01\x00\x00\x00"))
	_ = zw.Close()
	mustWrite(t, wasm+".gz", gz.String())
	r := startRelay(t, Config{WebDir: web})

	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()
	get := func(header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", r.url("/replica.wasm"), nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAllBody(t, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, enc := range []string{"identity", "gzip"} {
		resp := get("Accept-Encoding", enc)
		lm := resp.Header.Get("Last-Modified")
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || lm != old.UTC().Format(http.TimeFormat) ||
			resp.Header.Get("Content-Type") != "application/wasm" {
			t.Fatalf("%s: %d, Cache-Control %q, Last-Modified %q (want %q), Content-Type %q", enc, resp.StatusCode,
				resp.Header.Get("Cache-Control"), lm, old.UTC().Format(http.TimeFormat), resp.Header.Get("Content-Type"))
		}
		if resp := get("Accept-Encoding", enc, "If-Modified-Since", lm); resp.StatusCode != http.StatusNotModified {
			t.Fatalf("%s: revalidation of an unchanged replica.wasm: %d, want 304", enc, resp.StatusCode)
		}
	}
	// A rebuild: new bytes, a newer file.
	mustWrite(t, wasm, "\x00asm\x01\x00\x00\x00\x00")
	mustWrite(t, wasm+".gz", gz.String()+"x")
	for _, enc := range []string{"identity", "gzip"} {
		if resp := get("Accept-Encoding", enc, "If-Modified-Since", old.UTC().Format(http.TimeFormat)); resp.StatusCode != 200 {
			t.Fatalf("%s: revalidation of a rebuilt replica.wasm: %d, want 200", enc, resp.StatusCode)
		}
	}
}
