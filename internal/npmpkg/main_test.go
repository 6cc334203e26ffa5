//go:build !js

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuild assembles the package from the repository's web/ with a stand-in
// replica.wasm and wasm_exec.js: index.js is replica.js with the module's
// head and tail (the new URL literals bundlers follow), index.d.ts is
// replica.d.ts with the two global declarations exported. The browser test
// of the real package is cmd/wasm's TestLoaderPackage.
func TestBuild(t *testing.T) {
	tmp := t.TempDir()
	wasm := filepath.Join(tmp, "replica.wasm")
	exec := filepath.Join(tmp, "wasm_exec.js")
	_ = os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	_ = os.WriteFile(exec, []byte("(() => { globalThis.Go = class {}; })();\n"), 0o644)
	out := filepath.Join(tmp, "pkg")
	if err := build(out, "../../web", "1.2.3", "MIT", wasm, exec, false); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	src, _ := os.ReadFile("../../web/replica.js")
	idx := read("index.js")
	body := strings.TrimSuffix(string(src), loaderClose)
	if !strings.Contains(idx, strings.Replace(body, loaderOpen, "const Replica = "+loaderOpen, 1)) {
		t.Error("index.js does not carry replica.js's loader")
	}
	for _, want := range []string{`new URL("./replica.wasm", import.meta.url)`, `new URL("./wasm_exec.js", import.meta.url)`, `new URL("./replica-worker.js", import.meta.url)`, "export { Replica };", "export default Replica;"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.js lacks %s", want)
		}
	}
	dts := read("index.d.ts")
	if strings.Contains(dts, "\ndeclare ") || !strings.Contains(dts, "\nexport declare namespace Replica {") || !strings.Contains(dts, "\nexport declare const Replica: Replica.Static;") {
		t.Error("index.d.ts: want the namespace and the value exported, nothing global")
	}
	var p struct{ Name, Version, License, Type string }
	if err := json.Unmarshal([]byte(read("package.json")), &p); err != nil || p.Name != Name || p.Version != "1.2.3" || p.License != "MIT" || p.Type != "module" {
		t.Errorf("package.json: %+v %v", p, err)
	}

	// Markers missing: refused, not a half-derived module.
	if _, err := moduleJS(strings.Replace(string(src), loaderOpen, "(function (global) {\n", 1), "1"); err == nil {
		t.Error("moduleJS accepted a loader without its first line")
	}
	if _, err := moduleDTS("declare namespace Replica {\n}\ndeclare var Replica: Replica.Static;\ndeclare function other(): void;\n", "1"); err == nil {
		t.Error("moduleDTS accepted a d.ts with another global declaration")
	}
	if err := build(filepath.Join(tmp, "bad"), "../../web", "1", "MIT", exec, exec, false); err == nil {
		t.Error("build accepted a replica.wasm that is not WebAssembly")
	}
}
