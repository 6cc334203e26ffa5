// Package wasmbuild holds the go build flags of replica.wasm's release
// build, for the tests and tools that build it as `make wasm` does (the
// Makefile spells the same flags: WASM_GCFLAGS, checked by this package's
// test).
package wasmbuild

import (
	"os"
	"os/exec"
)

// GCFlags turn inlining off (-l) in the packages where it costs download
// size for no speed worth having (issue 17, W9). Inlining copies a callee's
// body, its inline tree and its pc-value tables into every call site, and
// in a js/wasm build that is about 8 % of replica.wasm gzipped: measured
// (internal/wasmsize, make wasm's packed build, Go 1.26) 1,794,881 ->
// 1,654,880 bytes gzip -9 with these flags, 1,602,493 with inlining off
// everywhere. Inlining stays on where it pays: the runtime and the rest of
// the standard library (maps, sync, strconv: off there, an engine
// benchmark in Node ran 1.7-3x slower), engine/internal/... and kv (the
// per-key and per-row encoders; 7 KB gzip). Off in our other packages,
// the engine's insert and apply benchmarks in Node cost the same CPU time.
// Later flags override earlier ones for the packages they match.
var GCFlags = []string{
	"-gcflags=github.com/replica-sync/replica/...=-l",
	"-gcflags=github.com/replica-sync/replica/engine/internal/...=",
	"-gcflags=github.com/replica-sync/replica/kv=",
	"-gcflags=github.com/hack-pad/...=-l",
	"-gcflags=fmt=-l",
	"-gcflags=internal/fmtsort=-l",
	"-gcflags=reflect=-l",
	"-gcflags=time=-l",
	"-gcflags=log=-l",
	"-gcflags=encoding/json=-l",
	"-gcflags=internal/bisect=-l",
	"-gcflags=internal/godebug=-l",
}

// Flags are all the go build flags of the release build, symbols stripped
// (-s -w): what `make wasm` passes.
func Flags() []string {
	return append([]string{"-trimpath", "-ldflags=-s -w"}, GCFlags...)
}

// Command returns the command that builds the js/wasm package pkg (a path
// or pattern go build accepts, relative to the command's directory) into
// out with Flags: GOOS=js GOARCH=wasm go build <Flags> -o out pkg.
func Command(out, pkg string) *exec.Cmd {
	args := append([]string{"build"}, Flags()...)
	cmd := exec.Command("go", append(args, "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	return cmd
}
