//go:build !js

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestLoaderVite builds examples/vite as its README says, with Vite from
// npm (npm ci from the example's committed package-lock.json: the npm
// registry is the only network it needs), against the package `make
// package` builds into a temporary DIST (the example depends on it by path,
// ../../dist/package), serves the production build (vite build: the
// package's replica.wasm and wasm_exec.js emitted as hashed assets) over
// loopback, and opens it in headless Chromium with ?relay= a real relay:
// a note added through the page's form reaches a native device through
// the relay, and the native device's note shows in the page.
func TestLoaderVite(t *testing.T) {
	ctx := browser(t) // skips without REPLICA_CHROMIUM
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")
	mk := exec.Command("make", "-C", "../..", "package", "DIST="+dist)
	mk.Env = withoutMake(os.Environ())
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make package: %v\n%s", err, out)
	}
	app := filepath.Join(tmp, "examples", "vite")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", ".npmrc", "index.html", "main.js", "vite.config.js"} {
		b, err := os.ReadFile(filepath.Join("../../examples/vite", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"npm", "ci", "--no-audit", "--no-fund", "--no-update-notifier"},
		{"node", "node_modules/vite/bin/vite.js", "build"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = app
		cmd.Env = withoutMake(os.Environ())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("%s:\n%s", strings.Join(args, " "), lastLines(string(out), 8))
		}
	}

	t.Run("page mode", func(t *testing.T) { openVite(t, ctx, app, "&page") })
	// In worker mode (a fresh browser profile: the same replica name):
	// the Worker script is one of the files Vite emitted.
	t.Run("worker mode", func(t *testing.T) {
		emitted, _ := filepath.Glob(filepath.Join(app, "dist", "assets", "replica-worker*.js"))
		if len(emitted) != 1 {
			t.Fatalf("vite build emitted %v, want one replica-worker*.js", emitted)
		}
		openVite(t, browser(t), app, "")
	})
}

// openVite serves the example's production build and opens it with
// ?relay= a real relay and the query extra: a note added through the
// page's form reaches a native device through the relay, and the native
// device's note shows in the page.
func openVite(t *testing.T, ctx context.Context, app, extra string) {
	relayURL := startRelay(t)

	files := http.FileServer(http.Dir(filepath.Join(app, "dist")))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			w.Header().Set("Content-Type", "application/wasm")
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(web.Close)

	// The other device: a native replica with the example's schema.
	dev, _ := nativeDevice(t, relayURL, "vite-notes", `{"tables": {"notes": {"columns": {"text": {"type": "text", "notNull": true}, "at": "timestamp"}}}}`)

	page := web.URL + "/?relay=" + relayURL + extra
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx,
		chromedp.Navigate(page),
		chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent === "Sync: synced"`, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.SendKeys(chromedp.CSS(`#text`), "from the Vite app"),
		chromedp.Click(chromedp.CSS(`#add button`)),
	); err != nil {
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
		t.Fatalf("the Vite app at %s: %v (status %q)", page, err, s)
	}

	// The page's note reaches the native device.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, err := dev.Query("notes", engine.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0]["text"].Equal(model.Text("from the Vite app")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the native device holds %v, want the page's note", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The native device's note shows in the page.
	if _, err := dev.Insert("notes", map[string]any{"id": "native-1", "text": "from a native device", "at": time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx,
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#notes li")].some((li) => li.textContent === "from a native device")`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("the native device's note in the page: %v", err)
	}
	notes, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("notes").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes, "from the Vite app") {
		t.Errorf("the page lists %q", notes)
	}
	checkMode(t, tctx, map[bool]string{true: "page", false: "worker"}[strings.Contains(extra, "page")])
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
