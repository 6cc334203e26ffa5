//go:build !js

package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/replica-sync/replica/internal/wasmbuild"
)

// These tests run natively (go test ./cmd/wasm). They build the browser
// module and check that the pieces a web developer sees agree: web/replica.js
// carries jsbridge/facade.js and idbkv/helper.js verbatim, web/replica.d.ts documents every error
// code the implementation produces, and (with a browser: loader_test.go)
// the objects the loader installs have exactly the members the .d.ts
// declares.

var update = flag.Bool("update", false, "rewrite the copies of jsbridge/facade.js and idbkv/helper.js in web/replica.js and web/replica-worker.js")

const (
	wasmPath   = "../../web/replica.wasm"
	replicaJS  = "../../web/replica.js"
	workerJS   = "../../web/replica-worker.js"
	replicaDTS = "../../web/replica.d.ts"
	facadePath = "../../jsbridge/facade.js"
	errorsPath = "../../jsbridge/errors.go"
)

// carried are the JavaScript files web/replica.js and web/replica-worker.js
// (in) carry verbatim, each as the body of a function between two marker
// lines.
var carried = []struct{ in, path, begin, end string }{
	{replicaJS, facadePath, "// BEGIN jsbridge/facade.js (verbatim; see above)\nfunction replicaFacade(go, OPS, KINDS) {\n", "}\n// END jsbridge/facade.js\n"},
	{replicaJS, "../../idbkv/helper.js", "// BEGIN idbkv/helper.js (verbatim; see above)\nfunction replicaIDBHelper(cb, opts) {\n", "}\n// END idbkv/helper.js\n"},
	{workerJS, "../../idbkv/helper.js", "// BEGIN idbkv/helper.js (verbatim; see above)\nfunction replicaIDBHelper(cb, opts) {\n", "}\n// END idbkv/helper.js\n"},
}

var (
	buildOnce sync.Once
	buildErr  error
	buildOut  []byte
)

// buildWasm runs `GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w"
// $(WASM_GCFLAGS) -o web/replica.wasm ./cmd/wasm`, as `make wasm` does
// (internal/wasmbuild), once per test run.
func buildWasm(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		_ = os.Remove(wasmPath)
		cmd := wasmbuild.Command(wasmPath, ".")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go build ./cmd/wasm: %v\n%s", buildErr, buildOut)
	}
}

func TestBuildWasm(t *testing.T) {
	buildWasm(t)
	b, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("%s is not a WebAssembly module", wasmPath)
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	t.Logf("web/replica.wasm: %d bytes raw, %d bytes gzip -9", len(b), gz.Len())
}

// TestReplicaJSCarriesFacade checks that web/replica.js holds exact copies
// of jsbridge/facade.js and idbkv/helper.js, and web/replica-worker.js one
// of idbkv/helper.js (carried); with -update it rewrites the copies.
func TestReplicaJSCarriesFacade(t *testing.T) {
	files := map[string]string{}
	stale := map[string]bool{}
	for _, c := range carried {
		s, ok := files[c.in]
		if !ok {
			b, err := os.ReadFile(c.in)
			if err != nil {
				t.Fatal(err)
			}
			s = string(b)
		}
		src, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(s, c.begin)
		j := strings.Index(s, c.end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the markers around the copy of %s", c.in, c.path)
		}
		head, copy, tail := s[:i+len(c.begin)], s[i+len(c.begin):j], s[j:]
		files[c.in] = s
		if copy == string(src) {
			continue
		}
		if !*update {
			t.Errorf("%s's copy of %s is stale: run go test ./cmd/wasm -run TestReplicaJSCarriesFacade -update", c.in, c.path)
			continue
		}
		files[c.in] = head + string(src) + tail
		stale[c.in] = true
	}
	for in := range stale {
		if err := os.WriteFile(in, []byte(files[in]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the copies in %s", in)
	}
}

// TestErrorCodesDocumented checks that every error code jsbridge produces
// (Go constants and codes facade.js creates) is in the .d.ts ErrorCode type,
// and that the .d.ts documents each code it lists.
func TestErrorCodesDocumented(t *testing.T) {
	dts := readFile(t, replicaDTS)
	m := regexp.MustCompile(`type ErrorCode =([^;]*);`).FindStringSubmatch(dts)
	if m == nil {
		t.Fatal("no ErrorCode type in the .d.ts")
	}
	declared := map[string]bool{}
	for _, c := range regexp.MustCompile(`"([A-Z_]+)"`).FindAllStringSubmatch(m[1], -1) {
		declared[c[1]] = true
		if !strings.Contains(dts, "* - `"+c[1]+"`") {
			t.Errorf("ErrorCode %s is not described in the .d.ts", c[1])
		}
	}
	used := map[string]bool{}
	for _, c := range regexp.MustCompile(`code[A-Za-z]* += "([A-Z_]+)"`).FindAllStringSubmatch(readFile(t, errorsPath), -1) {
		used[c[1]] = true
	}
	for _, c := range regexp.MustCompile(`ReplicaError\("([A-Z_]+)"`).FindAllStringSubmatch(readFile(t, facadePath), -1) {
		used[c[1]] = true
	}
	if len(used) < 8 {
		t.Fatalf("found only %d codes in the implementation; is the pattern stale?", len(used))
	}
	for c := range used {
		if !declared[c] {
			t.Errorf("code %s is produced but not declared in the .d.ts ErrorCode", c)
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// member is one member of an interface of the .d.ts.
type member struct {
	name   string
	method bool
}

// apiInterface is one interface of the .d.ts.
type apiInterface struct {
	name    string
	extends []string
	members []member
}

// parseDTS reads the interfaces of a .d.ts: names, extends lists, and the
// names of their methods and properties (construct and call signatures are
// skipped). It is a minimal parser for the style of web/replica.d.ts: one
// member per line, comments anywhere.
func parseDTS(src string) map[string]*apiInterface {
	src = stripComments(src)
	out := map[string]*apiInterface{}
	head := regexp.MustCompile(`^\s*(?:export\s+)?interface\s+([A-Za-z_$][\w$]*)(?:<[^>]*>)?(?:\s+extends\s+([^{]+))?\s*\{`)
	memberRe := regexp.MustCompile(`^\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\s*\??\s*([(<:])`)
	var cur *apiInterface
	depth := 0
	for _, line := range strings.Split(src, "\n") {
		if cur == nil {
			if m := head.FindStringSubmatch(line); m != nil {
				cur = &apiInterface{name: m[1]}
				for _, e := range strings.Split(m[2], ",") {
					if e = strings.TrimSpace(e); e != "" {
						cur.extends = append(cur.extends, e)
					}
				}
				out[cur.name] = cur
				depth = 1
				line = line[strings.Index(line, "{")+1:]
				if strings.Contains(line, "}") && strings.Count(line, "}") > strings.Count(line, "{") {
					cur = nil
				}
			}
			continue
		}
		if depth == 1 {
			if m := memberRe.FindStringSubmatch(line); m != nil && m[1] != "new" {
				method := m[2] == "(" || m[2] == "<"
				dup := false
				for _, x := range cur.members {
					dup = dup || x.name == m[1]
				}
				if !dup {
					cur.members = append(cur.members, member{name: m[1], method: method})
				}
			}
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth <= 0 {
			cur = nil
		}
	}
	return out
}

// stripComments removes // and /* */ comments outside string literals.
func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"' || s[i] == '\'':
			q := s[i]
			j := i + 1
			for j < len(s) && s[j] != q && s[j] != '\n' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(s[i:min(j+1, len(s))])
			i = j
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+end], "\n")))
			i += end + 3
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// apiObjects names the interfaces whose members live on real objects, with
// the JavaScript expression (in loader_test.go's page) that reaches one.
var apiObjects = map[string]string{
	"Static":      "Replica",
	"Database":    "db",
	"Transaction": "tx",
	"Sync":        "db.sync",
	"Inspector":   "db.inspect",
	"ChangeEvent": "a change event",
}

// flatten returns the members of an interface and everything it extends.
func flatten(ifaces map[string]*apiInterface, name string) []member {
	i := ifaces[name]
	if i == nil {
		return nil
	}
	out := append([]member(nil), i.members...)
	for _, e := range i.extends {
		out = append(out, flatten(ifaces, e)...)
	}
	return out
}

func TestParseDTS(t *testing.T) {
	ifaces := parseDTS(readFile(t, replicaDTS))
	db := flatten(ifaces, "Database")
	var names []string
	for _, m := range db {
		names = append(names, m.name)
	}
	sort.Strings(names)
	want := "alterColumn applyChanges changesSince close count delete dropColumn dropIndex dropTable get heldChanges insert inspect isLeader name on persisted query renameTable siteId subscribe sync transaction update upsert"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Database members: %s\nwant %s", got, want)
	}
	// Every interface with methods is checked on a real object, or is a
	// base of one.
	bases := map[string]bool{}
	for n := range apiObjects {
		for _, e := range ifaces[n].extends {
			bases[e] = true
		}
	}
	for n, i := range ifaces {
		hasMethod := false
		for _, m := range i.members {
			hasMethod = hasMethod || m.method
		}
		if hasMethod && apiObjects[n] == "" && !bases[n] {
			t.Errorf("interface %s declares methods but no test object implements it: add it to apiObjects", n)
		}
	}
	if filepath.Base(replicaDTS) != "replica.d.ts" {
		t.Fatal("path")
	}
}
