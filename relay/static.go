//go:build !js

package relay

import (
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// staticHandler serves the files of dir (the demo app). It sets
// application/wasm for .wasm files (WebAssembly.instantiateStreaming requires
// it), asks browsers to revalidate (Cache-Control: no-cache, with
// Last-Modified; an unchanged file is answered 304) so a rebuilt
// replica.wasm is picked up, and serves a precompressed sibling
// ("replica.wasm.gz", not older than the file) with Content-Encoding: gzip
// to clients that accept it.
//
// V8's wasm code cache and these headers (measured in headless Chromium
// 156, README "Serving replica.wasm"): Chromium keeps the code cache entry
// of a revalidated replica.wasm only if it was made during the session
// that downloaded the file (a 200); an entry made after a 304 carries the
// revalidation's time and the next load discards it. The names here are
// fixed (replica.wasm, not replica-HASH.wasm), so the relay cannot say
// "immutable" without serving a stale module after a rebuild: no-cache
// stays. Apps that serve content-hashed file names (a bundler's output)
// should serve them with Cache-Control: max-age=31536000, immutable.
func staticHandler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		name := path.Clean("/" + r.URL.Path)
		ext := path.Ext(name)
		if ext == ".wasm" {
			w.Header().Set("Content-Type", "application/wasm")
		}
		if ext != "" && ext != ".gz" && acceptsGzip(r) && servePrecompressed(w, r, dir, name, ext) {
			return
		}
		files.ServeHTTP(w, r)
	})
}

// servePrecompressed serves dir/name.gz for dir/name if it exists and is
// not older, and reports whether it did.
func servePrecompressed(w http.ResponseWriter, r *http.Request, dir, name, ext string) bool {
	full := filepath.Join(dir, filepath.FromSlash(name))
	orig, err := os.Stat(full)
	if err != nil || orig.IsDir() {
		return false
	}
	f, err := os.Open(full + ".gz")
	if err != nil {
		return false
	}
	defer f.Close()
	gz, err := f.Stat()
	if err != nil || gz.IsDir() || gz.ModTime().Before(orig.ModTime()) {
		return false
	}
	if w.Header().Get("Content-Type") == "" {
		if ct := mime.TypeByExtension(ext); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
	}
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Add("Vary", "Accept-Encoding")
	http.ServeContent(w, r, name, orig.ModTime(), f)
	return true
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
