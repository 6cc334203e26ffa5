//go:build !js

package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// size is one file set's bytes: raw, gzip -9, brotli -q 11 (-1: no brotli
// here).
type size struct {
	Files  []string `json:"files"`
	Raw    int      `json:"raw"`
	Gzip   int      `json:"gzip"`
	Brotli int      `json:"brotli"`
}

// sizes of W9, per system: "wasm" (replica.wasm) and "js" (the scripts).
type sizes map[string]map[string]size

func measureSizes(o *options, goroot string) sizes {
	out := sizes{}
	for _, sys := range o.systems {
		if sys.sealed {
			continue // Replica's files
		}
		for _, f := range sys.files {
			p := f
			switch {
			case f == "WASM":
				p = o.wasm
			case strings.HasPrefix(f, "GOROOT/"):
				p = filepath.Join(goroot, strings.TrimPrefix(f, "GOROOT/"))
			default:
				p = filepath.Join(o.root, f)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			part := "js"
			if f == "WASM" {
				part = "wasm"
			}
			if out[sys.name] == nil {
				out[sys.name] = map[string]size{}
			}
			s := out[sys.name][part]
			s.Files = append(s.Files, filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p))
			s.Raw += len(b)
			s.Gzip += gzipSize(b)
			if br := brotliSize(b); br > 0 && s.Brotli >= 0 {
				s.Brotli += br
			} else {
				s.Brotli = -1 // unknown
			}
			out[sys.name][part] = s
		}
	}
	return out
}

func gzipSize(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Len()
}

// brotliSize compresses with the brotli command (Debian's brotli package),
// else with node's zlib; 0 when neither is there.
func brotliSize(b []byte) int {
	if _, err := exec.LookPath("brotli"); err == nil {
		cmd := exec.Command("brotli", "-c", "-q", "11")
		cmd.Stdin = bytes.NewReader(b)
		if out, err := cmd.Output(); err == nil {
			return len(out)
		}
	}
	if _, err := exec.LookPath("node"); err == nil {
		cmd := exec.Command("node", "-e", `const z = require("zlib"); const c = []; process.stdin.on("data", (d) => c.push(d)); process.stdin.on("end", () => process.stdout.write(String(z.brotliCompressSync(Buffer.concat(c), {params: {[z.constants.BROTLI_PARAM_QUALITY]: 11}}).length)));`)
		cmd.Stdin = bytes.NewReader(b)
		if out, err := cmd.Output(); err == nil {
			n := 0
			for _, c := range bytes.TrimSpace(out) {
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return 0
}
