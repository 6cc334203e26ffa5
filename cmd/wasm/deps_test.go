//go:build !js

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The browser build's dependencies, kept few so that replica.wasm stays
// small (issue 17, W9). Each module outside the standard library and each
// standard package below costs tens to hundreds of KB of replica.wasm:
// a new one here is a decision, measured with `go run ./internal/wasmsize`
// (see its doc), not an accident of an import made for one helper.

// wasmModules are the only modules besides the standard library the
// browser build may use.
var wasmModules = []string{
	"github.com/replica-sync/replica",
	"github.com/google/btree",
	"github.com/hack-pad/go-indexeddb",
	"github.com/hack-pad/safejs",
}

// wasmDenied are standard packages (a name, or a prefix ending in '/')
// the browser build must not import: the browser does their work (HTTP,
// TLS, WebSockets, crypto through WebCrypto), or they are large for what
// they would be used for (regexp, templates, big numbers, compression,
// time zone data, structured logging, URL parsing).
var wasmDenied = []string{
	"net", "net/", "crypto/", "math/big", "compress/", "archive/", "regexp", "regexp/",
	"text/template", "html/template", "encoding/xml", "encoding/asn1", "encoding/pem", "encoding/gob",
	"mime", "mime/", "database/sql", "log/slog", "time/tzdata", "os/exec", "os/user", "os/signal",
	"bufio", "flag", "testing", "runtime/pprof", "runtime/trace", "expvar", "go/", "hash/", "image", "image/",
	"html", "unique", "container/",
}

// deniedWasmDep says why p may not be in the browser build's dependencies,
// or returns "" when it may.
func deniedWasmDep(p string, std bool) string {
	if !std {
		for _, m := range wasmModules {
			if p == m || strings.HasPrefix(p, m+"/") {
				return ""
			}
		}
		return "a module outside the allowed list"
	}
	for _, d := range wasmDenied {
		if p == d || strings.HasSuffix(d, "/") && strings.HasPrefix(p, d) {
			return "a denied standard package (" + d + ")"
		}
	}
	return ""
}

// TestWasmDeps lists the js/wasm dependencies of ./cmd/wasm (go list
// -deps, as GOOS=js GOARCH=wasm go build sees them) and fails on a module
// outside wasmModules or a standard package in wasmDenied, naming the
// importer.
func TestWasmDeps(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \",\"}}", ".")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go list -deps ./cmd/wasm: %v", err)
	}
	importers := map[string][]string{}
	type dep struct {
		path string
		std  bool
	}
	var deps []dep
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("go list printed %q", line)
		}
		deps = append(deps, dep{f[0], f[1] == "true"})
		if len(f) == 3 {
			for _, imp := range strings.Split(f[2], ",") {
				importers[imp] = append(importers[imp], f[0])
			}
		}
	}
	if len(deps) < 40 {
		t.Fatalf("go list -deps listed only %d packages; is the command stale?", len(deps))
	}
	std := map[string]bool{}
	for _, d := range deps {
		std[d.path] = d.std
	}
	denied := 0
	for _, d := range deps {
		why := deniedWasmDep(d.path, d.std)
		if why == "" {
			continue
		}
		denied++
		// Name only where a denied package enters: from an allowed importer.
		var from []string
		for _, imp := range importers[d.path] {
			if deniedWasmDep(imp, std[imp]) == "" {
				from = append(from, imp)
			}
		}
		if len(from) > 0 {
			t.Errorf("the browser build imports %s, %s, imported by %s: drop the import from the js/wasm build (a //go:build !js file, a small implementation of our own), or allow it in cmd/wasm/deps_test.go with the size it costs (go run ./internal/wasmsize)",
				d.path, why, strings.Join(from, ", "))
		}
	}
	if denied > 0 {
		t.Logf("%d denied packages in all", denied)
	}
}

// TestDeniedWasmDep checks the rule TestWasmDeps applies.
func TestDeniedWasmDep(t *testing.T) {
	for _, c := range []struct {
		path   string
		std    bool
		denied bool
	}{
		{"net/http", true, true},
		{"net", true, true},
		{"crypto/sha256", true, true},
		{"regexp/syntax", true, true},
		{"netip", true, false},
		{"encoding/json", true, false},
		{"strings", true, false},
		{"github.com/replica-sync/replica/engine", false, false},
		{"github.com/google/btree", false, false},
		{"github.com/google/uuid", false, true},
		{"github.com/replica-sync/replicax", false, true},
	} {
		if got := deniedWasmDep(c.path, c.std) != ""; got != c.denied {
			t.Errorf("deniedWasmDep(%q, %v) denied = %v, want %v", c.path, c.std, got, c.denied)
		}
	}
}
