// Command wasmsize reports what a WebAssembly module built by Go is made of,
// for keeping replica.wasm small (issue 3: under 1.3 MB gzip -9), and can
// write a copy that compresses better.
//
//	go run ./internal/wasmsize [-n 40] [-fn prefix] file.wasm
//	go run ./internal/wasmsize -pack out.wasm [-gzip] file.wasm
//
// The report gives the raw and gzipped size (compress/gzip at its best
// compression, which comes within 1 % of gzip -9), the size of each
// section, the initial memory split at the addresses the runtime's
// moduledata names (read-only data, the pclntab's parts, funcdata,
// findfunctab, data; each with its size gzipped alone), and,
// when the module has a name section (a build without -ldflags=-s), the
// code bytes per Go package (-n of them) or, with -fn, the largest
// functions whose names start with prefix (-fn '*': all). `go tool nm`
// cannot read wasm, and the name section spells package paths with '_'
// for '/' and '.' ("github.com_replica_sync_replica_engine.__Engine_.query").
// Why a package or function is in the build at all: link with
// -ldflags=-dumpdep, which prints each reachable symbol after the first
// symbol that reached it.
//
// -pack writes a copy whose data segments are merged across runs of zero
// bytes of up to -maxgap bytes. Go's linker starts a new data segment at
// every run of 8 or more zero bytes, which keeps the raw module small but
// costs a segment header (about 8 bytes of varying offsets) each time:
// tens of thousands of them. Merged, the runs are zero bytes again, which
// gzip and brotli compress to almost nothing: for replica.wasm about
// 100 KB less gzip -9 and 70 KB less brotli, for 10 % more raw bytes. The
// module's initial memory is byte for byte the same (memory starts zeroed);
// nothing else in the module changes. With -gzip it also writes out.wasm.gz
// (gzip at best compression), which the relay serves to browsers that
// accept gzip instead of the raw file.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	n := flag.Int("n", 40, "packages to list")
	fn := flag.String("fn", "", "list the largest functions whose names start with this prefix (mangled: '_' for '/'; * for all)")
	pack := flag.String("pack", "", "write a copy with merged data segments to this file")
	maxGap := flag.Int("maxgap", 64, "with -pack, merge segments across zero runs of up to this many bytes")
	gz := flag.Bool("gzip", false, "with -pack, also write the packed module gzipped to out.wasm.gz")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: wasmsize [-n N] [-fn prefix] [-pack out.wasm [-maxgap N]] file.wasm")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	b, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		if *pack != "" {
			err = writePacked(*pack, b, *maxGap, *gz)
		} else {
			err = report(os.Stdout, b, *n, *fn)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmsize:", err)
		os.Exit(1)
	}
}

func writePacked(out string, b []byte, maxGap int, gz bool) error {
	p, err := packData(b, maxGap)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, p, 0o644); err != nil {
		return err
	}
	if gz {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(p); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(out+".gz", buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d -> %d bytes raw, %d -> %d bytes gzipped\n", out, len(b), len(p), gzipSize(b), gzipSize(p))
	return nil
}

func report(w io.Writer, b []byte, n int, prefix string) error {
	m, err := parse(b)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d bytes raw, %d bytes gzipped\n", len(b), gzipSize(b))
	for _, s := range m.sections {
		fmt.Fprintf(w, "  section %-14s %9d bytes\n", s.name, len(s.body))
	}
	if len(m.segments) > 0 {
		fmt.Fprintf(w, "  %d data segments\n", len(m.segments))
	}
	reportData(w, m)
	if len(m.names) == 0 {
		fmt.Fprintln(w, "no name section (built with -ldflags=-s): no per-package sizes")
		return nil
	}
	type entry struct {
		name string
		size int
	}
	byPkg := map[string]int{}
	var fns []entry
	total := 0
	for i, size := range m.codeSizes {
		name := m.names[m.imports+i]
		byPkg[packageOf(name)] += size
		total += size
		if prefix == "*" || prefix != "" && strings.HasPrefix(name, prefix) {
			fns = append(fns, entry{name, size})
		}
	}
	list := fns
	if prefix == "" {
		for p, s := range byPkg {
			list = append(list, entry{p, s})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].size != list[j].size {
			return list[i].size > list[j].size
		}
		return list[i].name < list[j].name
	})
	fmt.Fprintf(w, "code: %d bytes in %d functions\n", total, len(m.codeSizes))
	for i, e := range list {
		if i == n {
			break
		}
		fmt.Fprintf(w, "%9d  %s\n", e.size, e.name)
	}
	return nil
}

// packageOf returns the package part of a mangled function name: the text
// before the first '.', or for a module path that starts with a domain
// ("github.com_x_y.F", "go.etcd.io_bbolt.F") the text before the first '.'
// after the domain.
func packageOf(name string) string {
	start := 0
	if i := strings.IndexByte(name, '_'); i > 0 {
		for _, tld := range []string{".com", ".org", ".io", ".net", ".dev", ".in"} {
			if strings.HasSuffix(name[:i], tld) {
				start = i
			}
		}
	}
	if j := strings.IndexByte(name[start:], '.'); j >= 0 {
		return name[:start+j]
	}
	return name
}

func gzipSize(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Len()
}
