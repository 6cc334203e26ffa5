//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/internal/wasmbuild"
	"github.com/replica-sync/replica/seal"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	root, wasm, out, benchstat string
	gotest                     string
	reps, n, w8Writes          int
	capped                     time.Duration
	quick, profile             bool
	cpuprofile                 string
	systems                    []*system
	workloads                  map[string]bool
}

func parseFlags() (*options, error) {
	o := &options{}
	var systemsFlag, workloadsFlag string
	flag.StringVar(&o.wasm, "wasm", "bench/out/replica.wasm", "the release build of replica.wasm to measure")
	flag.StringVar(&o.out, "out", "bench/out", "directory for browser.json and bench.md")
	flag.StringVar(&o.benchstat, "benchstat", "", "benchstat summary of the Go benchmarks, appended to bench.md")
	flag.StringVar(&o.gotest, "gotest", "", "output of the Go benchmarks' go test run: failures are noted in bench.md")
	flag.IntVar(&o.reps, "reps", 1, "repetitions of W1-W7 per system, each in a fresh Chromium (medians are reported; one takes about 7 minutes for the six systems, so 1 keeps make bench within 15 minutes)")
	flag.BoolVar(&o.quick, "quick", false, "one repetition and 100 W8 writes (development)")
	flag.IntVar(&o.n, "n", 10000, "rows of W1, W2 and W3")
	flag.IntVar(&o.w8Writes, "w8", 200, "W8 writes per system (p99 is then the 3rd slowest (percentile: nearest rank, index 197 of 200); each write waits 60 ms of quiet: about 20 s per system)")
	flag.DurationVar(&o.capped, "cap", 15*time.Second, "stop a system's W1 or W3 after this long (TinyBase: its cost per row grows with the store)")
	flag.BoolVar(&o.profile, "profile", false, "also count IndexedDB requests and Go<->JS crossings per row (Replica and raw IndexedDB)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "SYSTEM:WORKLOAD (e.g. replica:w2): run only that workload under V8's CPU profiler and summarize it")
	flag.StringVar(&systemsFlag, "systems", "raw,replica,replica-worker,replica-sealed,dexie,tinybase", "systems to run (replica-worker: Replica in worker mode; replica-sealed: W5 and W8 of a sealed database)")
	flag.StringVar(&workloadsFlag, "workloads", "w1,w2,w3,w4,w5,w6,w7,w8,w9", "workloads to run")
	flag.Parse()
	if o.quick {
		o.reps, o.w8Writes = 1, 100
	}
	for _, s := range strings.Split(systemsFlag, ",") {
		sys := systemByName(strings.TrimSpace(s))
		if sys == nil {
			return nil, fmt.Errorf("unknown system %q", s)
		}
		o.systems = append(o.systems, sys)
	}
	o.workloads = map[string]bool{}
	for _, w := range strings.Split(workloadsFlag, ",") {
		o.workloads[strings.ToLower(strings.TrimSpace(w))] = true
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	o.root = root
	for _, p := range []*string{&o.wasm, &o.out, &o.benchstat, &o.gotest} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
	return o, nil
}

// repoRoot walks up from the working directory to go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// run runs the browser half of make bench: the workloads asked for, on
// the systems installed, then writes the report (results.write).
func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	sealKey = seal.GenerateKey()
	res := newResults(o)
	noteGoTestFailures(o, res)
	res.loadWire(o)

	// W9 needs no browser.
	gr, err := buildInputs(o)
	if err != nil {
		return err
	}
	o.systems = installedSystems(o, res)
	res.systems = o.systems
	if o.workloads["w9"] {
		res.sizes = measureSizes(o, gr)
	}

	data, skipped, err := browserInputs()
	if err != nil {
		return err
	}
	if skipped != "" {
		res.note("%s", skipped)
		say("%s", skipped)
		return res.write(o, time.Since(start))
	}
	res.prefixes = len(data.prefixes)

	addr, stop, err := startServers(o, gr, data)
	if err != nil {
		return err
	}
	defer stop()
	tag := fmt.Sprintf("%d", time.Now().Unix())
	r := &runner{base: "http://" + addr, log: os.Stdout, opts: flowOptions{N: o.n, CapMs: int(o.capped.Milliseconds()), Total: len(data.rows), RelayDB: "cities-" + tag},
		sealedDB: "cities-sealed-" + tag}
	if err := seedIfNeeded(o, r, addr, data); err != nil {
		return err
	}
	if o.workloads["w8"] && systemIn(o.systems, "tinybase") != nil {
		url, stop, err := startTinybaseServer(o.root)
		if err != nil {
			res.note("TinyBase W8 left out: %v", err)
		} else {
			defer stop()
			r.opts.TinybaseURL = url
		}
	}

	if o.cpuprofile != "" {
		name, w, _ := strings.Cut(o.cpuprofile, ":")
		sys := systemByName(name)
		if sys == nil || w == "" {
			return fmt.Errorf("-cpuprofile %q: want SYSTEM:WORKLOAD, e.g. replica:w2", o.cpuprofile)
		}
		return r.cpuProfile(sys, strings.ToLower(w), "cpu-"+tag, o.out, os.Stdout)
	}
	runRepetitions(o, r, res, tag)
	if o.workloads["w8"] {
		runW8(o, r, res, tag)
	}
	if o.profile {
		runProfile(o, r, res, tag)
	}
	return res.write(o, time.Since(start))
}

// say prints a progress line.
func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// buildInputs returns GOROOT (its wasm_exec.js is served and measured) and
// checks that the release build of replica.wasm (-wasm) exists.
func buildInputs(o *options) (string, error) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	if _, err := os.Stat(o.wasm); err != nil {
		return "", fmt.Errorf("%s: %w (make bench builds it; or: GOOS=js GOARCH=wasm go build -trimpath -ldflags='-s -w' %s -o %s ./cmd/wasm)", o.wasm, err, strings.Join(wasmbuild.GCFlags, " "), o.wasm)
	}
	return strings.TrimSpace(string(goroot)), nil
}

// browserInputs loads the cities data set and checks for Chromium. When
// either is missing it returns why the browser workloads are skipped.
func browserInputs() (*dataset, string, error) {
	data, err := loadData()
	if errors.Is(err, cities.ErrAbsent) {
		return nil, fmt.Sprintf("browser workloads skipped: %v (the cities data set is not beside the repository; set REPLICA_CITIES to its path)", err), nil
	}
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(chromium()); err != nil {
		return nil, fmt.Sprintf("browser workloads skipped: no Chromium at %s (make browser-deps installs it)", chromium()), nil
	}
	return data, "", nil
}

// noteGoTestFailures notes in res every failure and panic line of the Go
// benchmarks' go test output (-gotest), when there is one.
func noteGoTestFailures(o *options, res *results) {
	if o.gotest == "" {
		return
	}
	b, err := os.ReadFile(o.gotest)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "panic:") {
			res.note("Go benchmark failed: %s (see %s)", strings.TrimSpace(line), o.gotest)
		}
	}
}

// installedSystems returns the systems of o whose files are installed: the
// peers need their npm packages (and TinyBase's W8 needs node). The others
// are left out with a note in res.
func installedSystems(o *options, res *results) []*system {
	var systems []*system
	for _, sys := range o.systems {
		missing := ""
		for _, f := range sys.files {
			if strings.HasPrefix(f, "bench/node_modules/") && !exists(filepath.Join(o.root, f)) {
				missing = f
			}
		}
		if missing != "" {
			res.note("%s left out: %s is missing (run `npm ci` in bench/, as make bench does)", sys.title, missing)
			continue
		}
		systems = append(systems, sys)
	}
	return systems
}

// startServers starts the relay (in-process, over a temporary directory)
// and the bench's HTTP server in front of it, on loopback. It returns the
// server's address and the function that stops both.
func startServers(o *options, goroot string, data *dataset) (string, func(), error) {
	relayDir, err := os.MkdirTemp("", "replica-bench-relay-")
	if err != nil {
		return "", nil, err
	}
	web := filepath.Join(relayDir, "web")
	if err := linkLibs(web, libFiles(o.root, o.wasm, goroot)); err != nil {
		_ = os.RemoveAll(relayDir)
		return "", nil, err
	}
	rs, err := newRelay(filepath.Join(relayDir, "data"), web)
	if err != nil {
		_ = os.RemoveAll(relayDir)
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = rs.Close()
		_ = os.RemoveAll(relayDir)
		return "", nil, err
	}
	hs := &http.Server{Handler: handler(o.root, data, rs.Handler())}
	go func() { _ = hs.Serve(ln) }()
	stop := func() {
		_ = hs.Shutdown(context.Background())
		_ = rs.Close()
		_ = os.RemoveAll(relayDir)
	}
	return ln.Addr().String(), stop, nil
}

// seedIfNeeded loads the cities into the relay's database r.opts.RelayDB
// when a workload of Replica reads them from the relay (W4-W7, or a CPU
// profile of W4 or W5).
func seedIfNeeded(o *options, r *runner, addr string, data *dataset) error {
	needRelay, needSealed := false, false
	for _, sys := range o.systems {
		needRelay = needRelay || (sys.name == "replica" || sys.name == "replica-worker") && (o.workloads["w4"] || o.workloads["w5"] || o.workloads["w6"] || o.workloads["w7"] ||
			strings.HasPrefix(o.cpuprofile, "replica:w4") || strings.HasPrefix(o.cpuprofile, "replica:w5"))
		needSealed = needSealed || sys.sealed && (o.workloads["w5"] && o.cpuprofile == "" || strings.HasPrefix(o.cpuprofile, "replica-sealed:w4") ||
			strings.HasPrefix(o.cpuprofile, "replica-sealed:w5"))
	}
	if needRelay {
		say("seeding the relay with %d cities ...", len(data.rows))
		d, err := seedRelay("ws://"+addr+"/sync", r.opts.RelayDB, data.rows, nil)
		if err != nil {
			return err
		}
		say("  done in %.1fs", d.Seconds())
	}
	if needSealed {
		say("seeding the relay with %d cities, sealed, and a sealed checkpoint of them ...", len(data.rows))
		d, err := seedRelay("ws://"+addr+"/sync", r.sealedDB, data.rows, sealKeyring())
		if err != nil {
			return fmt.Errorf("sealed: %w", err)
		}
		say("  done in %.1fs", d.Seconds())
	}
	return nil
}

// sealKeyring is the Sealer of sealKey, for the native devices.
func sealKeyring() seal.Sealer {
	k, err := seal.NewKey(sealKey)
	if err != nil {
		panic(err) // 32 bytes from seal.GenerateKey
	}
	r, err := seal.NewKeyring(k)
	if err != nil {
		panic(err)
	}
	return r
}

// noSealedSupport reports whether err is a page's db.sync.connect refusing
// the key option: a replica.wasm built before sealed databases reached the
// browser. "Replica sealed" is then left out with a note, not a failure.
func noSealedSupport(err error) bool {
	m := err.Error()
	return strings.Contains(m, "unknown option") && strings.Contains(m, "key")
}

// runRepetitions runs W1-W7: o.reps repetitions, one system at a time, the
// order rotating.
func runRepetitions(o *options, r *runner, res *results, tag string) {
	for rep := 0; rep < o.reps; rep++ {
		say("repetition %d of %d", rep+1, o.reps)
		for k := range o.systems {
			sys := o.systems[(k+rep)%len(o.systems)]
			if sys.sealed && r.sealedOff != "" {
				continue
			}
			// A workload stopped early (o.capped) is not run again.
			var skip []string
			for _, w := range []string{"W1", "W3"} {
				if len(res.Capped[sys.name][w]) > 0 {
					skip = append(skip, strings.ToLower(w))
				}
			}
			s, err := r.session(sys, fmt.Sprintf("%s-%s-r%d", sys.name, tag, rep), o.workloads, skip)
			if err != nil && sys.sealed && noSealedSupport(err) {
				r.sealedOff = err.Error()
				res.note("Replica sealed left out: this replica.wasm does not take a key at db.sync.connect (%v)", err)
				say("  Replica sealed left out: no sealed support in this replica.wasm")
				continue
			}
			if err != nil {
				res.fail(sys, err)
				say("  %v", err)
				continue
			}
			res.add(sys, s)
		}
	}
}

// runW8 runs W8 on every system that syncs (TinyBase when its server
// started).
func runW8(o *options, r *runner, res *results, tag string) {
	for _, sys := range o.systems {
		if !sys.syncs || sys.name == "tinybase" && r.opts.TinybaseURL == "" {
			continue
		}
		if sys.sealed && r.sealedOff != "" {
			continue
		}
		say("W8 %s: %d writes", sys.title, o.w8Writes)
		w8, err := r.w8(sys, sys.name+"-"+tag, o.w8Writes)
		if err != nil && sys.sealed && noSealedSupport(err) {
			r.sealedOff = err.Error()
			res.note("Replica sealed left out: this replica.wasm does not take a key at db.sync.connect (%v)", err)
			say("  Replica sealed left out: no sealed support in this replica.wasm")
			continue
		}
		if err != nil {
			res.fail(sys, err)
			say("  %v", err)
			continue
		}
		res.addW8(sys, w8)
	}
}

// runProfile runs one repetition of Replica and raw IndexedDB with the
// counters on (-profile).
func runProfile(o *options, r *runner, res *results, tag string) {
	pr := *r
	pr.profile = true
	for _, name := range []string{"raw", "replica"} {
		sys := systemIn(o.systems, name)
		if sys == nil {
			continue
		}
		say("profile %s", sys.title)
		s, err := pr.session(sys, fmt.Sprintf("prof-%s-%s", name, tag), o.workloads, nil)
		if err != nil {
			res.fail(sys, err)
			say("  %v", err)
			continue
		}
		res.addProfile(sys, s)
	}
}

func chromium() string {
	if p := os.Getenv("REPLICA_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

func systemIn(list []*system, name string) *system {
	for _, s := range list {
		if s.name == name {
			return s
		}
	}
	return nil
}

// writeJSON writes v to path, indented.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
