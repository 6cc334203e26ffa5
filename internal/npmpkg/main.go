//go:build !js

// Command npmpkg assembles the npm package @replica-sync/replica (`make
// package`; `make typecheck` runs it with -types-only). It writes into -out:
//
//	package.json   name, version, "type": "module", "exports", "files", license
//	README.md      web/npm/README.md, for npm users
//	index.js       the ES module: web/replica.js's loader function, called with
//	               the URLs of replica.wasm and wasm_exec.js beside it
//	               (new URL("./replica.wasm", import.meta.url)), exported as
//	               Replica and as the default export
//	index.d.ts     its typings: web/replica.d.ts with the namespace Replica
//	               and the value Replica exported instead of global
//	replica.js     web/replica.js as is, for a script tag
//	replica.d.ts   web/replica.d.ts as is: the global Replica of the script tag
//	replica-worker.js  web/replica-worker.js as is: the Worker of worker mode
//	replica.wasm   -wasm
//	wasm_exec.js   -wasm-exec: the one of the Go release that built -wasm
//
// Nothing is copied by hand: index.js and index.d.ts are derived from the
// two files a script-tag page uses, and the derivation fails when their
// markers (the loader's first and last lines, the two global declarations)
// are not found exactly once. With -types-only it writes package.json,
// index.d.ts and replica.d.ts only (what tsc needs).
//
//	go run ./internal/npmpkg -out dist/package -version 0.1.0 -wasm dist/replica.wasm -wasm-exec "$(go env GOROOT)/lib/wasm/wasm_exec.js"
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Name is the package's name on npm.
const Name = "@replica-sync/replica"

// The loader's first and last lines in web/replica.js: a function of
// (global, moduleURLs) called at once with the global object for a script
// tag.
const (
	loaderOpen  = "(function (global, moduleURLs) {\n"
	loaderClose = "})(typeof globalThis !== \"undefined\" ? globalThis : self);\n"
)

// The global declarations of web/replica.d.ts.
const (
	dtsNamespace = "declare namespace Replica {\n"
	dtsVar       = "declare var Replica: Replica.Static;\n"
)

func main() {
	out := flag.String("out", "", "the package directory to write (emptied first)")
	web := flag.String("web", "web", "the directory of replica.js, replica.d.ts and npm/README.md")
	version := flag.String("version", "0.1.0", "the package's version")
	license := flag.String("license", "UNLICENSED", "the package's license (an SPDX expression)")
	wasm := flag.String("wasm", "", "the replica.wasm to ship")
	wasmExec := flag.String("wasm-exec", "", "the wasm_exec.js of the Go that built -wasm ($(go env GOROOT)/lib/wasm/wasm_exec.js)")
	typesOnly := flag.Bool("types-only", false, "write package.json, index.d.ts and replica.d.ts only")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 || (!*typesOnly && (*wasm == "" || *wasmExec == "")) {
		fmt.Fprintln(os.Stderr, "usage: npmpkg -out DIR [-version V] [-license L] (-wasm replica.wasm -wasm-exec wasm_exec.js | -types-only)")
		os.Exit(2)
	}
	if err := build(*out, *web, *version, *license, *wasm, *wasmExec, *typesOnly); err != nil {
		fmt.Fprintln(os.Stderr, "npmpkg:", err)
		os.Exit(1)
	}
}

func build(out, web, version, license, wasm, wasmExec string, typesOnly bool) error {
	loaderJS, err := os.ReadFile(filepath.Join(web, "replica.js"))
	if err != nil {
		return err
	}
	dts, err := os.ReadFile(filepath.Join(web, "replica.d.ts"))
	if err != nil {
		return err
	}
	files := map[string][]byte{"replica.d.ts": dts}
	if files["index.d.ts"], err = moduleDTS(string(dts), version); err != nil {
		return err
	}
	if !typesOnly {
		files["replica.js"] = loaderJS
		if files["replica-worker.js"], err = os.ReadFile(filepath.Join(web, "replica-worker.js")); err != nil {
			return err
		}
		if files["index.js"], err = moduleJS(string(loaderJS), version); err != nil {
			return err
		}
		for name, src := range map[string]string{"README.md": filepath.Join(web, "npm", "README.md"), "replica.wasm": wasm, "wasm_exec.js": wasmExec} {
			if files[name], err = os.ReadFile(src); err != nil {
				return err
			}
		}
		if !bytes.HasPrefix(files["replica.wasm"], []byte("\x00asm")) {
			return fmt.Errorf("%s is not a WebAssembly module", wasm)
		}
		if !bytes.Contains(files["wasm_exec.js"], []byte("globalThis.Go = class")) {
			return fmt.Errorf("%s is not Go's wasm_exec.js", wasmExec)
		}
	}
	if files["package.json"], err = packageJSON(version, license); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// once replaces the one occurrence of old in s (at the start of a line) by
// new, or fails.
func once(s, old, new, file string) (string, error) {
	n := strings.Count(s, old)
	if n != 1 || !(strings.HasPrefix(s, old) || strings.Contains(s, "\n"+old)) {
		return "", fmt.Errorf("%s: want one line %q, found %d", file, strings.TrimSpace(old), n)
	}
	return strings.Replace(s, old, new, 1), nil
}

// moduleJS derives index.js from replica.js: the loader function, called
// with the module's URLs instead of the global object alone, returns the
// loader, which the module exports. Vite (examples/vite) and, by their
// documentation, webpack 5 and Parcel 2 follow new URL("./x",
// import.meta.url) literals; esbuild does not (Replica.configure then).
func moduleJS(loader, version string) ([]byte, error) {
	s, err := once(loader, loaderOpen, "const Replica = "+loaderOpen, "replica.js")
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(s, loaderClose) {
		return nil, fmt.Errorf("replica.js: the loader does not end with %q", strings.TrimSpace(loaderClose))
	}
	s, err = once(s, loaderClose, `})(globalThis, {
	wasm: new URL("./replica.wasm", import.meta.url),
	wasmExec: new URL("./wasm_exec.js", import.meta.url),
	worker: new URL("./replica-worker.js", import.meta.url),
});

export { Replica };
export default Replica;
`, "replica.js")
	if err != nil {
		return nil, err
	}
	head := `// index.js: the ES module of ` + Name + ` ` + version + `.
//
//     import { Replica } from "` + Name + `";
//     const db = await Replica.open({name, schema});
//
// Generated by ` + "`make package`" + ` (internal/npmpkg) from web/replica.js, whose
// loader it runs with the URLs of replica.wasm, wasm_exec.js and
// replica-worker.js beside this file (Replica.configure names others). The
// API: index.d.ts.

`
	return []byte(head + s), nil
}

// moduleDTS derives index.d.ts from replica.d.ts: the same declarations,
// exported instead of global.
func moduleDTS(dts, version string) ([]byte, error) {
	s, err := once(dts, dtsNamespace, "export "+dtsNamespace, "replica.d.ts")
	if err != nil {
		return nil, err
	}
	if s, err = once(s, dtsVar, "export declare const Replica: Replica.Static;\nexport default Replica;\n", "replica.d.ts"); err != nil {
		return nil, err
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "declare ") {
			return nil, fmt.Errorf("replica.d.ts: another global declaration: %q (index.d.ts would not export it)", line)
		}
	}
	head := `// index.d.ts: the typings of ` + Name + ` ` + version + `'s ES module
// (index.js). Generated by ` + "`make package`" + ` (internal/npmpkg) from replica.d.ts,
// the typings of the script tag's global Replica, with the namespace and the
// value exported instead of global.

`
	return []byte(head + s), nil
}

// packageJSON writes package.json; keys in this order.
func packageJSON(version, license string) ([]byte, error) {
	if version == "" || strings.ContainsAny(version, " \t\n\"") {
		return nil, errors.New("-version: not a version: " + version)
	}
	type entry struct {
		Types   string `json:"types"`
		Import  string `json:"import"`
		Default string `json:"default"`
	}
	p := struct {
		Name        string            `json:"name"`
		Version     string            `json:"version"`
		Description string            `json:"description"`
		License     string            `json:"license"`
		Type        string            `json:"type"`
		Main        string            `json:"main"`
		Module      string            `json:"module"`
		Types       string            `json:"types"`
		Exports     map[string]any    `json:"exports"`
		Files       []string          `json:"files"`
		SideEffects []string          `json:"sideEffects"`
		Keywords    []string          `json:"keywords"`
		Repository  map[string]string `json:"repository"`
	}{
		Name:        Name,
		Version:     version,
		Description: "Replica, a local-first database for web apps: Go compiled to WebAssembly, IndexedDB storage, CRDT sync through a relay",
		License:     license,
		Type:        "module",
		Main:        "./index.js",
		Module:      "./index.js",
		Types:       "./index.d.ts",
		Exports: map[string]any{
			".":                   entry{Types: "./index.d.ts", Import: "./index.js", Default: "./index.js"},
			"./replica.js":        "./replica.js",
			"./replica.d.ts":      "./replica.d.ts",
			"./replica.wasm":      "./replica.wasm",
			"./replica-worker.js": "./replica-worker.js",
			"./wasm_exec.js":      "./wasm_exec.js",
			"./package.json":      "./package.json",
		},
		Files:       []string{"index.js", "index.d.ts", "replica.js", "replica.d.ts", "replica-worker.js", "replica.wasm", "wasm_exec.js"},
		SideEffects: []string{"./replica.js", "./wasm_exec.js"},
		Keywords:    []string{"local-first", "database", "indexeddb", "crdt", "sync", "offline", "webassembly"},
		Repository:  map[string]string{"type": "git", "url": "git+https://github.com/replica-sync/replica.git"},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
