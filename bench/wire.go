//go:build !js

package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// W11 is bytes on the wire: relay's BenchmarkWireBytes (in `make
// bench-go`, so in the -gotest output) counts the TCP bytes a GeoNames
// cities row costs on a loopback WebSocket between a relay and native
// clients, per direction, against the rows' own compact JSON in the same
// run; see relay/doc.go, "Compression". Its figures are per row.

// wireKey names one measured figure: deflate mode (off, nocontext,
// context), transaction size (1, 1000), metric (json, push, ack, live,
// pull, snapshot).
type wireKey struct {
	mode string
	tx   int
	what string
}

// wireLine matches a BenchmarkWireBytes result line of go test -bench.
var wireLine = regexp.MustCompile(`^BenchmarkWireBytes/deflate=(\w+)/tx=(\d+)(?:-\d+)?\s+\d+\s+(.*)$`)

// parseWireBytes reads every BenchmarkWireBytes sample (bytes per row) of
// the go test output in text.
func parseWireBytes(text string) map[wireKey][]float64 {
	out := map[wireKey][]float64{}
	for _, line := range strings.Split(text, "\n") {
		m := wireLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		tx, _ := strconv.Atoi(m[2])
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			what, ok := strings.CutSuffix(f[i+1], "-B/row")
			if !ok {
				continue
			}
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				k := wireKey{m[1], tx, what}
				out[k] = append(out[k], v)
			}
		}
	}
	return out
}

// loadWire reads W11's samples from the -gotest file, noting why when
// there are none.
func (r *results) loadWire(o *options) {
	if o.gotest == "" {
		return
	}
	b, err := os.ReadFile(o.gotest)
	if err != nil {
		return
	}
	r.wire = parseWireBytes(string(b))
	if len(r.wire) == 0 {
		r.note("W11 not measured: no BenchmarkWireBytes results in %s (it needs the cities data set)", o.gotest)
	}
	r.Wire = map[string][]float64{}
	for k, v := range r.wire {
		r.Wire[fmt.Sprintf("%s/tx=%d/%s", k.mode, k.tx, k.what)] = v
	}
}

// wireMedian is the median of W11's samples of k.
func (r *results) wireMedian(k wireKey) (float64, bool) {
	xs := slices.Clone(r.wire[k])
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2], true
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2, true
}

// wireRows are W11's rows: the direction measured and its title.
var wireRows = []struct{ what, title string }{
	{"push", "W11 bytes per cities row on the wire: push (device → relay, apply_changes)"},
	{"live", "W11 … live (relay → a device online meanwhile, push_changes)"},
	{"pull", "W11 … pull (relay → a device catching up, get_changes)"},
	{"snapshot", "W11 … snapshot (relay → a new device, get_snapshot)"},
}

// wireModeNames are the deflate modes in the order cells list them.
var wireModeNames = []struct{ mode, label string }{
	{"off", "deflate off"}, {"nocontext", "deflate (the relay's default)"}, {"context", "deflate, context takeover"},
}

// wireCell is W11's cell of system s for direction what: for Replica,
// bytes per row and the ratio to compact JSON, per transaction size and
// deflate mode; for raw IndexedDB, the baseline.
func (r *results) wireCell(what string) func(*system) string {
	return func(s *system) string {
		switch s.name {
		case "raw":
			j1, ok1 := r.wireMedian(wireKey{"off", 1, "json"})
			j2, ok2 := r.wireMedian(wireKey{"off", 1000, "json"})
			if !ok1 || !ok2 {
				return "—"
			}
			return fmt.Sprintf("compact JSON of the rows: %.0f B (the baseline)", (j1+j2)/2)
		case "replica":
		default:
			return "—"
		}
		var parts []string
		for _, tx := range []int{1, 1000} {
			j, ok := r.wireMedian(wireKey{"off", tx, "json"})
			if !ok {
				continue
			}
			var ms []string
			for _, m := range wireModeNames {
				if v, ok := r.wireMedian(wireKey{m.mode, tx, what}); ok {
					ms = append(ms, fmt.Sprintf("%s %.0f B (%s)", m.label, v, fmtRatio(v/j)))
				}
			}
			label := "1-row transactions, each pushed alone"
			if tx > 1 {
				label = "1,000-row transactions"
			}
			parts = append(parts, label+": "+strings.Join(ms, ", "))
		}
		return strings.Join(parts, "; ")
	}
}

// wireTarget is W11's target cell for direction what: every transaction
// size within 2× of compact JSON under the relay's default (deflate
// without context takeover).
func (r *results) wireTarget(what string) string {
	const target = "≤ 2× compact JSON (default deflate)"
	met := true
	for _, tx := range []int{1, 1000} {
		j, ok1 := r.wireMedian(wireKey{"off", tx, "json"})
		v, ok2 := r.wireMedian(wireKey{"nocontext", tx, what})
		if !ok1 || !ok2 {
			return target
		}
		met = met && v <= 2*j
	}
	if met {
		return target + ": met"
	}
	return target + ": **missed**"
}
