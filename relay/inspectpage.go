//go:build !js

package relay

import (
	"embed"
	"net/http"
)

// inspectorFiles is the replica inspector page (relay/inspector): its
// HTML, script and style, served by Config.Inspect at GET /inspect,
// /inspect.js and /inspect.css.
//
//go:embed inspector/inspect.html inspector/inspect.js inspector/inspect.css
var inspectorFiles embed.FS

// inspectorCSP is the page's Content-Security-Policy: its own scripts
// (replica.js, wasm_exec.js and inspect.js, from the relay's web
// directory and here) and the compilation of replica.wasm, nothing
// inline, no connections elsewhere; the page shows an app's rows, which it
// writes as text only.
const inspectorCSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'self'"

// serveInspector serves one file of the inspector page (see
// Config.Inspect): GET /inspect?db=NAME opens the replica NAME of the
// browser's IndexedDB at this origin (the app's, when the relay serves
// the app) and shows it through db.inspect (web/replica.d.ts Inspector).
// It holds no data of the relay's: everything it shows comes from the
// visitor's own browser. It loads /wasm_exec.js and /replica.js from the
// web directory (Config.WebDir).
func serveInspector(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := inspectorFiles.ReadFile("inspector/" + name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", inspectorCSP)
		w.Header().Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write(b)
	}
}
