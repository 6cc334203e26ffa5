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
	flag.IntVar(&o.reps, "reps", 2, "repetitions of W1-W7 per system, each in a fresh Chromium (medians are reported; 2 fit make bench in 15 minutes)")
	flag.BoolVar(&o.quick, "quick", false, "one repetition and 100 W8 writes (development)")
	flag.IntVar(&o.n, "n", 10000, "rows of W1, W2 and W3")
	flag.IntVar(&o.w8Writes, "w8", 500, "W8 writes")
	flag.DurationVar(&o.capped, "cap", 15*time.Second, "stop a system's W1 or W3 after this long (TinyBase: its cost per row grows with the store)")
	flag.BoolVar(&o.profile, "profile", false, "also count IndexedDB requests and Go<->JS crossings per row (Replica and raw IndexedDB)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "SYSTEM:WORKLOAD (e.g. replica:w2): run only that workload under V8's CPU profiler and summarize it")
	flag.StringVar(&systemsFlag, "systems", "raw,replica,dexie,tinybase", "systems to run")
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

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	res := newResults(o)
	if o.gotest != "" {
		if b, err := os.ReadFile(o.gotest); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "panic:") {
					res.note("Go benchmark failed: %s (see %s)", strings.TrimSpace(line), o.gotest)
				}
			}
		}
	}
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }

	// W9 needs no browser.
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	gr := strings.TrimSpace(string(goroot))
	if _, err := os.Stat(o.wasm); err != nil {
		return fmt.Errorf("%s: %w (make bench builds it; or: GOOS=js GOARCH=wasm go build -trimpath -ldflags='-s -w' -o %s ./cmd/wasm)", o.wasm, err, o.wasm)
	}

	// The peers need their npm packages, and TinyBase's W8 needs node.
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
	o.systems = systems
	res.systems = systems

	if o.workloads["w9"] {
		res.sizes = measureSizes(o, gr)
	}

	data, err := loadData()
	if errors.Is(err, cities.ErrAbsent) {
		msg := fmt.Sprintf("browser workloads skipped: %v (the cities data set is not beside the repository; set REPLICA_CITIES to its path)", err)
		res.note("%s", msg)
		say("%s", msg)
		return res.write(o, time.Since(start))
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(chromium()); err != nil {
		msg := fmt.Sprintf("browser workloads skipped: no Chromium at %s (make browser-deps installs it)", chromium())
		res.note("%s", msg)
		say("%s", msg)
		return res.write(o, time.Since(start))
	}
	res.prefixes = len(data.prefixes)

	// The relay (in-process) and the bench's HTTP server.
	relayDir, err := os.MkdirTemp("", "replica-bench-relay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(relayDir)
	rs, err := newRelay(relayDir)
	if err != nil {
		return err
	}
	defer rs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: handler(o.root, o.wasm, gr, data, rs.Handler())}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()

	tag := fmt.Sprintf("%d", time.Now().Unix())
	r := &runner{base: base, log: os.Stdout, opts: flowOptions{N: o.n, CapMs: int(o.capped.Milliseconds()), Total: len(data.rows), RelayDB: "cities-" + tag}}
	needRelay := false
	for _, sys := range o.systems {
		needRelay = needRelay || sys.name == "replica" && (o.workloads["w4"] || o.workloads["w5"] || o.workloads["w6"] || o.workloads["w7"] ||
			strings.HasPrefix(o.cpuprofile, "replica:w4") || strings.HasPrefix(o.cpuprofile, "replica:w5"))
	}
	if needRelay {
		say("seeding the relay with %d cities ...", len(data.rows))
		d, err := seedRelay("ws://"+ln.Addr().String()+"/sync", r.opts.RelayDB, data.rows)
		if err != nil {
			return err
		}
		say("  done in %.1fs", d.Seconds())
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

	// W1-W7: repetitions, one system at a time, the order rotating.
	for rep := 0; rep < o.reps; rep++ {
		say("repetition %d of %d", rep+1, o.reps)
		for k := range o.systems {
			sys := o.systems[(k+rep)%len(o.systems)]
			// A workload stopped early (o.capped) is not run again.
			var skip []string
			for _, w := range []string{"W1", "W3"} {
				if len(res.Capped[sys.name][w]) > 0 {
					skip = append(skip, strings.ToLower(w))
				}
			}
			s, err := r.session(sys, fmt.Sprintf("%s-%s-r%d", sys.name, tag, rep), o.workloads, skip)
			if err != nil {
				res.fail(sys, err)
				say("  %v", err)
				continue
			}
			res.add(sys, s)
		}
	}

	// W8.
	if o.workloads["w8"] {
		for _, sys := range o.systems {
			if !sys.syncs || sys.name == "tinybase" && r.opts.TinybaseURL == "" {
				continue
			}
			say("W8 %s: %d writes", sys.title, o.w8Writes)
			lat, err := r.w8(sys, sys.name+"-"+tag, o.w8Writes)
			if err != nil {
				res.fail(sys, err)
				say("  %v", err)
				continue
			}
			res.addW8(sys, lat)
		}
	}

	// Profile: counters on, one repetition of Replica and raw IndexedDB.
	if o.profile {
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
	return res.write(o, time.Since(start))
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
