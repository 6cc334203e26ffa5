//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/pagebench"
)

// cpuProfile runs workload w of sys alone in a fresh Chromium with V8's
// sampling profiler on around it, writes the profile (load it in Chrome's
// DevTools, Performance panel) to dir, and prints the functions with the
// most self time and the time by origin: Go (WebAssembly functions), each
// script, IndexedDB and other native work the profiler attributes to
// "(program)", and garbage collection. For Go function names, measure a
// build without -s -w (make bench-profile does).
func (r *runner) cpuProfile(sys *system, w, tag, dir string, out io.Writer) error {
	ctx, cancel, err := pagebench.Start(context.Background())
	if err != nil {
		return err
	}
	defer cancel()
	fo := r.opts
	if sys.sealed {
		fo.RelayDB = r.sealedDB
	}
	o, _ := json.Marshal(fo)
	if err := chromedp.Do(ctx, chromedp.Navigate(r.url(sys.name, tag+"-one"))); err != nil {
		return err
	}
	if err := eval(ctx, fmt.Sprintf("B.prepareOne(%q, %s)", w, o), nil); err != nil {
		return fmt.Errorf("prepare %s: %w", w, err)
	}
	cdpDo := func(f func(ctx context.Context, t *chromedp.Target) error) error {
		return chromedp.Do(ctx, chromedp.Func(f))
	}
	if err := cdpDo(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, profiler.Enable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, t, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 200}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, profiler.Start, cdp.Empty{})
		return err
	}); err != nil {
		return err
	}
	var tm timing
	start := time.Now()
	if err := eval(ctx, fmt.Sprintf("B.runOne(%q, %s)", w, o), &tm); err != nil {
		return fmt.Errorf("run %s: %w", w, err)
	}
	var prof *profiler.Profile
	if err := cdpDo(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, profiler.Stop, cdp.Empty{})
		prof = res.Profile
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s: %.0f ms for %d items (wall %s)\n", sys.title, strings.ToUpper(w), tm.Ms, tm.N, time.Since(start).Round(time.Millisecond))
	path := filepath.Join(dir, fmt.Sprintf("%s-%s.cpuprofile", sys.name, w))
	b, _ := json.Marshal(prof)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	summarize(prof, tm.N, out)
	fmt.Fprintf(out, "(profile: %s)\n", path)
	return nil
}

// summarize prints self time by function (top 30) and by origin, in µs
// per item.
func summarize(p *profiler.Profile, items int, out io.Writer) {
	nodes := map[int64]*profiler.ProfileNode{}
	for _, n := range p.Nodes {
		nodes[n.ID] = n
	}
	parent := map[int64]int64{}
	for _, n := range p.Nodes {
		for _, c := range n.Children {
			parent[c] = n.ID
		}
	}
	name := func(n *profiler.ProfileNode) string {
		k := n.CallFrame.FunctionName
		if n.CallFrame.URL != "" {
			k += " " + filepath.Base(n.CallFrame.URL)
		}
		return k
	}
	incl := map[string]float64{}
	self := map[string]float64{}
	origin := map[string]float64{}
	total := 0.0
	for i, id := range p.Samples {
		if i+1 >= len(p.TimeDeltas) {
			break
		}
		dt := float64(p.TimeDeltas[i+1]) // the sample's time runs until the next
		n := nodes[id]
		if n == nil || n.CallFrame == nil {
			continue
		}
		f := n.CallFrame.FunctionName
		u := n.CallFrame.URL
		if f == "(idle)" {
			continue
		}
		total += dt
		key := f
		if u != "" {
			key += " " + filepath.Base(u)
		}
		self[key] += dt
		seen := map[string]bool{}
		for m := n; m != nil; m = nodes[parent[m.ID]] {
			if k := name(m); !seen[k] {
				seen[k] = true
				incl[k] += dt
			}
			if _, ok := parent[m.ID]; !ok {
				break
			}
		}
		switch {
		case strings.HasPrefix(f, "("):
			origin[f] += dt
		case strings.Contains(u, "wasm") || strings.HasPrefix(f, "$") || strings.Contains(f, "wasm-function") || strings.Contains(f, "."):
			if strings.HasSuffix(u, ".js") {
				origin[filepath.Base(u)] += dt
			} else {
				origin["Go (wasm)"] += dt
			}
		case u != "":
			origin[filepath.Base(u)] += dt
		default:
			origin["(native: "+f+")"] += dt
		}
	}
	per := float64(max(items, 1))
	fmt.Fprintf(out, "busy %.0f ms = %.1f µs per item; by origin (µs per item):\n", total/1000, total/per)
	for _, k := range sortedKeys(origin) {
		fmt.Fprintf(out, "  %8.1f  %5.1f%%  %s\n", origin[k]/per, 100*origin[k]/total, k)
	}
	fmt.Fprintln(out, "top functions by inclusive time (µs per item):")
	for i, k := range sortedKeys(incl) {
		if i == 60 {
			break
		}
		fmt.Fprintf(out, "  %8.1f  %5.1f%%  %s\n", incl[k]/per, 100*incl[k]/total, k)
	}
	fmt.Fprintln(out, "top functions by self time (µs per item):")
	for i, k := range sortedKeys(self) {
		if i == 30 {
			break
		}
		fmt.Fprintf(out, "  %8.1f  %5.1f%%  %s\n", self[k]/per, 100*self[k]/total, k)
	}
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		switch {
		case m[a] > m[b]:
			return -1
		case m[a] < m[b]:
			return 1
		}
		return strings.Compare(a, b)
	})
	return ks
}
