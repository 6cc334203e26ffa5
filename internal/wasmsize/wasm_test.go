package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyModule builds a module with one imported and two defined functions, a
// memory, three data segments (gaps of 2 and 78 zero bytes) and a name
// section.
func tinyModule() []byte {
	sec := func(b []byte, id byte, body []byte) []byte {
		b = append(b, id)
		b = binary.AppendUvarint(b, uint64(len(body)))
		return append(b, body...)
	}
	str := func(b []byte, s string) []byte {
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = sec(b, 1, []byte{1, 0x60, 0, 0})                // type: () -> ()
	imp := append(str(str([]byte{1}, "go"), "f"), 0, 0) // one function import, type 0
	b = sec(b, 2, imp)
	b = sec(b, 3, []byte{2, 0, 0})                          // two functions of type 0
	b = sec(b, 5, []byte{1, 0, 1})                          // memory: min 1 page
	b = sec(b, 10, []byte{2, 2, 0, 0x0b, 4, 0, 1, 1, 0x0b}) // bodies: end; nop nop end
	data := []byte{3}                                       // three segments
	for _, s := range []segment{{16, []byte("ab")}, {20, []byte("cd")}, {100, []byte("ef")}} {
		data = append(data, 0, 0x41)
		data = appendSleb(data, s.offset)
		data = append(data, 0x0b)
		data = append(binary.AppendUvarint(data, uint64(len(s.data))), s.data...)
	}
	b = sec(b, 11, data)
	names := []byte{2}
	names = str(binary.AppendUvarint(names, 1), "github.com_x_y_pkg.F")
	names = str(binary.AppendUvarint(names, 2), "runtime.g")
	sub := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(names)))...)
	return sec(b, 0, append(str(nil, "name"), append(sub, names...)...))
}

func TestParse(t *testing.T) {
	m, err := parse(tinyModule())
	if err != nil {
		t.Fatal(err)
	}
	if m.imports != 1 || len(m.codeSizes) != 2 || m.codeSizes[0] != 3 || m.codeSizes[1] != 5 {
		t.Errorf("imports %d, code sizes %v", m.imports, m.codeSizes)
	}
	if m.names[1] != "github.com_x_y_pkg.F" || m.names[2] != "runtime.g" {
		t.Errorf("names %v", m.names)
	}
	if len(m.segments) != 3 || m.segments[2].offset != 100 || string(m.segments[2].data) != "ef" {
		t.Errorf("segments %+v", m.segments)
	}
	var out bytes.Buffer
	if err := report(&out, tinyModule(), 10, ""); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "3  github.com_x_y_pkg\n") || !strings.Contains(s, "5  runtime\n") || !strings.Contains(s, "3 data segments") {
		t.Errorf("report:\n%s", s)
	}
	if _, err := parse([]byte("\x00asm\x01\x00\x00\x00\x0b\x05\x01")); err == nil {
		t.Error("a truncated module parsed")
	}
}

func TestPackageOf(t *testing.T) {
	for name, want := range map[string]string{
		"runtime.mallocgc":                                     "runtime",
		"runtime.gc_drain":                                     "runtime",
		"crypto_internal_fips140_aes.encryptBlock":             "crypto_internal_fips140_aes",
		"github.com_replica_sync_replica_engine.__Engine_.Get": "github.com_replica_sync_replica_engine",
		"go.etcd.io_bbolt.__DB_.Begin":                         "go.etcd.io_bbolt",
		"type_.eq.main.T":                                      "type_",
		"main":                                                 "main",
	} {
		if got := packageOf(name); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// checkPacked checks that packed differs from orig only in the data
// section, whose memory image is the same, in at most want segments.
func checkPacked(t *testing.T, orig, packed []byte, want int) {
	t.Helper()
	a, err := parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parse(packed)
	if err != nil {
		t.Fatalf("packed module: %v", err)
	}
	if len(a.sections) != len(b.sections) {
		t.Fatalf("%d sections, packed %d", len(a.sections), len(b.sections))
	}
	for i := range a.sections {
		if a.sections[i].id != secData && !bytes.Equal(a.sections[i].body, b.sections[i].body) {
			t.Errorf("section %s changed", a.sections[i].name)
		}
	}
	baseA, imgA := memoryImage(a.segments)
	baseB, imgB := memoryImage(b.segments)
	if baseA != baseB || !bytes.Equal(imgA, imgB) {
		t.Errorf("memory image changed: base %d -> %d, %d -> %d bytes", baseA, baseB, len(imgA), len(imgB))
	}
	if len(b.segments) > want {
		t.Errorf("%d segments after packing, want at most %d", len(b.segments), want)
	}
}

func TestPack(t *testing.T) {
	orig := tinyModule()
	for gap, want := range map[int]int{0: 3, 2: 2, 77: 2, 78: 1} {
		p, err := packData(orig, gap)
		if err != nil {
			t.Fatal(err)
		}
		checkPacked(t, orig, p, want)
	}
}

// TestPackGoModule packs a real js/wasm build and runs it under Node.js
// (skipped without node, and with -short).
func TestPackGoModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	dir := t.TempDir()
	src := "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nvar table = map[string]int{\"a\": 1, \"b\": 2}\n\nfunc main() {\n\tfmt.Fprintln(os.Stdout, \"packed\", table[\"b\"], len(os.Args))\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module packtest\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(dir, "main.wasm")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", wasm, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	orig, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := packData(orig, 64)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := parse(orig)
	checkDataLayout(t, a)
	checkPacked(t, orig, packed, len(a.segments)/4)
	if gzipSize(packed) >= gzipSize(orig) {
		t.Errorf("gzipped: %d bytes packed, %d not", gzipSize(packed), gzipSize(orig))
	}
	t.Logf("%d segments: %d -> %d bytes raw, %d -> %d gzipped", len(a.segments), len(orig), len(packed), gzipSize(orig), gzipSize(packed))
	if err := os.WriteFile(wasm, packed, 0o644); err != nil {
		t.Fatal(err)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "go_js_wasm_exec"), wasm, "x")
	out, err := run.CombinedOutput()
	if err != nil || string(out) != "packed 2 2\n" {
		t.Fatalf("running the packed module: %v\n%s", err, out)
	}
}

// checkDataLayout checks the split of a real Go module's initial memory:
// found, in address order, the parts within the data segments' span, the
// function names holding main.main's name.
func checkDataLayout(t *testing.T, m *module) {
	t.Helper()
	rs := dataLayout(m.segments)
	if len(rs) < 8 {
		t.Fatalf("dataLayout found %d parts; want the moduledata's", len(rs))
	}
	base, img := memoryImage(m.segments)
	for i, r := range rs {
		if r.end < r.start || i > 0 && r.start != rs[i-1].end {
			t.Errorf("part %q spans %#x-%#x after %#x", r.name, r.start, r.end, rs[i-1].end)
		}
		if r.name == "pclntab: function names" {
			if !bytes.Contains(img[r.start-base:r.end-base], []byte("main.main\x00")) {
				t.Errorf("the function names lack main.main")
			}
		}
	}
	if last := rs[len(rs)-1]; last.end > base+int64(len(img))+4096 || rs[0].start+4096 < base {
		t.Errorf("parts span %#x-%#x, the segments %#x-%#x", rs[0].start, last.end, base, base+int64(len(img)))
	}
}
