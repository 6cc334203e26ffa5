//go:build !js

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// results collects every sample of the run.
type results struct {
	Reps     int                                      `json:"reps"`
	N        int                                      `json:"n"`
	Samples  map[string]map[string][]float64          `json:"samples"` // system -> metric -> values
	Capped   map[string]map[string][]string           `json:"capped"`  // system -> metric -> how far it got
	Rows     map[string]map[string][]int              `json:"rows"`    // system -> W4/W4getAll -> rows returned
	Profile  map[string]map[string]map[string]float64 `json:"profile"` // system -> workload -> counter per row
	Sizes    sizes                                    `json:"sizes"`
	Notes    []string                                 `json:"notes"`
	Failures []string                                 `json:"failures"`
	Wire     map[string][]float64                     `json:"wire"` // W11: "mode/tx=N/metric" -> bytes per row

	wire map[wireKey][]float64

	systems  []*system
	sizes    sizes
	w8       bool // W8 was asked for
	prefixes int
}

func newResults(o *options) *results {
	return &results{w8: o.workloads["w8"], Reps: o.reps, N: o.n, Samples: map[string]map[string][]float64{}, Capped: map[string]map[string][]string{},
		Rows: map[string]map[string][]int{}, Profile: map[string]map[string]map[string]float64{}}
}

func (r *results) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *results) fail(sys *system, err error) {
	r.Failures = append(r.Failures, sys.title+": "+err.Error())
}

func (r *results) put(sys *system, metric string, v float64) {
	if r.Samples[sys.name] == nil {
		r.Samples[sys.name] = map[string][]float64{}
	}
	r.Samples[sys.name][metric] = append(r.Samples[sys.name][metric], v)
}

// putTiming records a workload's ms; a capped run is recorded as the time
// the whole workload would take at its average pace so far (a lower bound
// for a cost that grows with the store), with a note.
func (r *results) putTiming(sys *system, metric string, t timing, full int) {
	if t.N == 0 && t.Ms == 0 {
		return
	}
	v := t.Ms
	if t.Capped && t.N > 0 {
		v = t.Ms / float64(t.N) * float64(full)
		if r.Capped[sys.name] == nil {
			r.Capped[sys.name] = map[string][]string{}
		}
		r.Capped[sys.name][metric] = append(r.Capped[sys.name][metric], fmt.Sprintf("%d of %d rows in %.0f s", t.N, full, t.Ms/1000))
	}
	r.put(sys, metric, v)
}

// putLongTasks records W10 of a timed run: metric+"Longest" and
// metric+"Blocking" (ms).
func (r *results) putLongTasks(sys *system, metric string, t timing) {
	if t.N == 0 && t.Ms == 0 {
		return
	}
	r.put(sys, metric+"Longest", t.LongestTaskMs)
	r.put(sys, metric+"Blocking", t.BlockingMs)
}

func (r *results) add(sys *system, s *session) {
	b := s.Basic
	if b.OpenMs > 0 {
		r.put(sys, "W6cold", b.OpenMs)
	}
	r.putTiming(sys, "W1", b.W1, r.N)
	r.putTiming(sys, "W2", b.W2, r.N)
	r.putLongTasks(sys, "W10tx", b.W2)
	r.putTiming(sys, "W3", b.W3, r.N)
	g := s.Big
	r.putTiming(sys, "W5", g.W5, g.W5.N)
	r.putLongTasks(sys, "W10load", g.W5)
	if g.W7.JSHeap > 0 {
		r.put(sys, "W7js", g.W7.JSHeap)
		r.put(sys, "W7wasm", g.W7.Wasm)
	}
	r.putTiming(sys, "W4", g.W4, g.W4.N)
	if r.Rows[sys.name] == nil {
		r.Rows[sys.name] = map[string][]int{}
	}
	if g.W4.Ms > 0 {
		r.Rows[sys.name]["W4"] = append(r.Rows[sys.name]["W4"], g.W4.Rows)
	}
	if g.W4getAll != nil {
		r.putTiming(sys, "W4getAll", *g.W4getAll, g.W4getAll.N)
	}
	if s.Warm.OpenMs > 0 {
		r.put(sys, "W6warm", s.Warm.OpenMs)
	}
}

func (r *results) addW8(sys *system, w w8Result) {
	if len(w.burst) > 0 {
		r.put(sys, "W8burst", percentile(w.burst, 50))
		r.put(sys, "W8burstMax", percentile(w.burst, 100))
	}
	if len(w.pushed) > 0 {
		r.put(sys, "W8pushedP50", percentile(w.pushed, 50))
	}
	if len(w.applied) > 0 {
		r.put(sys, "W8appliedP50", percentile(w.applied, 50))
	}
	r.put(sys, "W8p50", percentile(w.lat, 50))
	r.put(sys, "W8p99", percentile(w.lat, 99))
	r.put(sys, "W8writes", float64(len(w.lat)))
}

func (r *results) addProfile(sys *system, s *session) {
	p := map[string]map[string]float64{}
	for name, t := range map[string]timing{"W1": s.Basic.W1, "W2": s.Basic.W2, "W3": s.Basic.W3, "W4": s.Big.W4, "W5": s.Big.W5} {
		if t.Counts != nil {
			p[name] = t.Counts
		}
	}
	r.Profile[sys.name] = p
}

// median of the samples of sys's metric; ok false when there are none.
func (r *results) median(sys, metric string) (float64, bool) {
	xs := r.Samples[sys][metric]
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

func fmtMs(ms float64) string {
	switch {
	case ms >= 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f ms", ms)
	}
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}

func fmtRatio(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	default:
		return fmt.Sprintf("%.2f×", x)
	}
}

// workload is one row of the table.
type workload struct {
	key, title string
	target     string // Replica's target (issue 17), "" for none
	// check says whether Replica (results.judged: the default mode, when
	// it ran) met target, and known whether the run measured what it
	// needs.
	check func(r *results) (met, known bool)
}

// againstRaw checks Replica's median of key against bound times raw
// IndexedDB's of the same run.
func againstRaw(key string, bound float64) func(*results) (bool, bool) {
	return func(r *results) (bool, bool) {
		rv, ok1 := r.median(r.judged(), key)
		bv, ok2 := r.median("raw", key)
		if !ok1 || !ok2 || bv == 0 {
			return false, false
		}
		return rv/bv <= bound, true
	}
}

// belowDexie checks that Replica's median of key is at most Dexie's.
func belowDexie(key string) func(*results) (bool, bool) {
	return func(r *results) (bool, bool) {
		rv, ok1 := r.median(r.judged(), key)
		dv, ok2 := r.median("dexie", key)
		if !ok1 || !ok2 {
			return false, false
		}
		return rv <= dv, true
	}
}

// both checks a and b.
func both(a, b func(*results) (bool, bool)) func(*results) (bool, bool) {
	return func(r *results) (bool, bool) {
		m1, k1 := a(r)
		m2, k2 := b(r)
		return m1 && m2, k1 && k2
	}
}

// atMost checks Replica's median of key against an absolute bound (the
// metric's own unit: ms, or bytes).
func atMost(key string, bound float64) func(*results) (bool, bool) {
	return func(r *results) (bool, bool) {
		v, ok := r.median(r.judged(), key)
		if !ok {
			return false, false
		}
		return v <= bound, true
	}
}

// The targets are issue 17's ("Performance at the physical limit"),
// checked on Replica in its default mode.
var timedWorkloads = []workload{
	{"W1", "W1 10,000 single-row insert transactions, each awaited", "≤ 1.2× raw and below Dexie", both(againstRaw("W1", 1.2), belowDexie("W1"))},
	{"W2", "W2 one transaction of 10,000 rows", "≤ 0.8× raw", againstRaw("W2", 0.8)},
	{"W3", "W3 update one column of 10,000 rows, one transaction each", "≤ 1.2× raw", againstRaw("W3", 1.2)},
	{"W4", "W4 100 name-prefix queries (first 50 rows each) over 171,075 rows, index", "≤ Dexie", belowDexie("W4")},
	{"W5", "W5 load 171,075 rows into an empty database", "≤ 1.0× raw bulk put", againstRaw("W5", 1.0)},
	{"W6cold", "W6 open, cold (first visit, no IndexedDB yet)", "≤ 150 ms", atMost("W6cold", 150)},
	{"W6warm", "W6 open, warm (171,075 rows stored)", "≤ 50 ms", atMost("W6warm", 50)},
}

// cell formats sys's median of metric and its ratio to raw's.
func (r *results) cell(sys *system, metric string) string {
	v, ok := r.median(sys.name, metric)
	if !ok {
		return r.missing(sys, metric)
	}
	s := fmtMs(v)
	if c := r.Capped[sys.name][metric]; len(c) > 0 {
		s = "≥ " + s + " (stopped: " + c[0] + ")"
	}
	switch {
	case sys.sealed:
		if base, ok := r.median("replica", metric); ok && base > 0 {
			s += " (" + fmtRatio(v/base) + " plain Replica)"
		}
	case sys.name != "raw":
		if base, ok := r.median("raw", metric); ok && base > 0 {
			s += " (" + fmtRatio(v/base) + ")"
		}
		if sys.worker {
			if base, ok := r.median("replica", metric); ok && base > 0 {
				s += " (" + fmtRatio(v/base) + " Replica in the page)"
			}
		}
	}
	return s
}

// missing says why a cell is empty.
func (r *results) missing(sys *system, metric string) string {
	for _, f := range r.Failures {
		if strings.HasPrefix(f, sys.title+":") {
			return "failed (see notes)"
		}
	}
	if sys.sealed && metric != "W5" && metric != "W7js" && metric != "W8p50" {
		return "— (Replica's: no sync)"
	}
	if strings.HasPrefix(metric, "W8") {
		switch sys.name {
		case "raw":
			return "— (no sync)"
		case "dexie":
			return "— (no sync in Dexie itself; Dexie Cloud is a hosted service)"
		}
	}
	return "—"
}

// judged is the Replica system the peer columns and the targets judge:
// worker mode ("replica-worker"), the loader's default, when it ran, else
// page mode ("replica").
func (r *results) judged() string {
	if systemIn(r.systems, "replica-worker") != nil {
		return "replica-worker"
	}
	return "replica"
}

// versus is Replica's median over peer's: below 1, Replica is faster.
func (r *results) versus(peer *system, metric string) string {
	rv, ok1 := r.median(r.judged(), metric)
	pv, ok2 := r.median(peer.name, metric)
	if !ok1 || !ok2 || pv == 0 {
		return "—"
	}
	s := fmtRatio(rv / pv)
	if len(r.Capped[peer.name][metric]) > 0 {
		s = "≤ " + s
	}
	return s
}

func (r *results) targetCell(w workload) string {
	return verdictCell(w.target, w.check, r)
}

// verdictCell is a target cell: the target and, when the run measured
// what it needs, "met" or "**missed**".
func verdictCell(target string, check func(*results) (bool, bool), r *results) string {
	if target == "" {
		return ""
	}
	met, known := check(r)
	switch {
	case !known:
		return target
	case met:
		return target + ": met"
	}
	return target + ": **missed**"
}

// table renders the markdown table: a column per system, and when Replica
// ran, a column per peer (Replica ÷ peer) and Replica's target; a row per
// timed workload measured, then W7's memory, W8's sync latency and W9's
// download size where measured.
func (r *results) table() string {
	t := &table{r: r, replica: systemIn(r.systems, r.judged()) != nil}
	for _, s := range r.systems {
		if s.name == "dexie" || s.name == "tinybase" {
			t.peers = append(t.peers, s)
		}
	}
	t.header()
	for _, w := range timedWorkloads {
		if r.any(w.key) {
			t.row(w.title, r.timedCell(w.key), func(p *system) string { return r.versus(p, w.key) }, r.targetCell(w))
		}
	}
	for _, w := range []struct{ key, title string }{
		{"W10tx", "W10 main-thread long tasks during W2 (one 10,000-row transaction): longest / total blocking time"},
		{"W10load", "W10 main-thread long tasks during W5 (loading 171,075 rows; Replica: from a relay snapshot): longest / total blocking time"},
	} {
		if r.any(w.key + "Longest") {
			t.row(w.title, r.longTaskCell(w.key), func(p *system) string {
				return r.versus(p, w.key+"Longest") + " (longest)"
			}, verdictCell("no task over 50 ms", atMost(w.key+"Longest", 50), r))
		}
	}
	if r.any("W7js") {
		t.row("W7 memory after W5 (used JS heap after gc() + WebAssembly memory; a Worker's included)", r.memoryCell, r.memoryVersus,
			verdictCell("≤ 32 MiB", func(r *results) (bool, bool) {
				js, ok := r.median(r.judged(), "W7js")
				wasm, _ := r.median(r.judged(), "W7wasm")
				return js+wasm <= 32<<20, ok
			}, r))
	}
	if r.any("W8p50") || r.w8 {
		t.row("W8 sync latency: commit on device A → row in device B's subscription, via the relay", r.syncCell,
			func(p *system) string { return r.versus(p, "W8p50") + " (p50)" },
			verdictCell("p50 ≤ 15 ms, p99 ≤ 40 ms", both(atMost("W8p50", 15), atMost("W8p99", 40)), r))
		t.row(fmt.Sprintf("W8 burst: %d updates back to back on A → the last in B's subscription (after the last update's start; median of %d, max)", burstWrites, burstReps), r.burstCell,
			func(p *system) string { return r.versus(p, "W8burst") + " (median)" },
			verdictCell("≤ 100 ms", atMost("W8burst", 100), r))
	}
	if len(r.sizes) > 0 {
		t.row("W9 download size: raw / gzip -9 / brotli -q 11", r.sizeCell, r.sizeVersus,
			verdictCell("replica.wasm ≤ 1.0 MB gzip", func(r *results) (bool, bool) {
				w, ok := r.sizes["replica"]["wasm"]
				return w.Gzip <= 1_000_000, ok && w.Gzip > 0
			}, r))
	}
	if len(r.wire) > 0 {
		for _, w := range wireRows {
			t.row(w.title, r.wireCell(w.what), func(*system) string { return "—" }, r.wireTarget(w.what))
		}
	}
	return t.b.String()
}

// table is the markdown table being rendered (results.table).
type table struct {
	r       *results
	b       strings.Builder
	peers   []*system // Dexie and TinyBase, when they ran
	replica bool      // Replica ran: the peer and target columns are shown
}

// header writes the table's header and separator lines.
func (t *table) header() {
	t.b.WriteString("| workload |")
	for _, s := range t.r.systems {
		t.b.WriteString(" " + s.title + " |")
	}
	cols := len(t.r.systems)
	if t.replica {
		for _, p := range t.peers {
			t.b.WriteString(" " + systemIn(t.r.systems, t.r.judged()).title + " ÷ " + p.title + " |")
		}
		t.b.WriteString(" Replica's target |")
		cols += len(t.peers) + 1
	}
	t.b.WriteString("\n|---|")
	t.b.WriteString(strings.Repeat("---|", cols) + "\n")
}

// row writes one row: title, sysCell's cell per system and, when Replica
// ran, peerCell's per peer and target.
func (t *table) row(title string, sysCell, peerCell func(*system) string, target string) {
	var cells []string
	for _, s := range t.r.systems {
		cells = append(cells, sysCell(s))
	}
	if t.replica {
		for _, p := range t.peers {
			cells = append(cells, peerCell(p))
		}
		cells = append(cells, target)
	}
	t.b.WriteString("| " + title + " | " + strings.Join(cells, " | ") + " |\n")
}

// timedCell returns the cell function of a timed workload's row: the
// median and its ratio to raw's (cell), with raw's getAll time and
// TinyBase's scanning noted at W4.
func (r *results) timedCell(key string) func(*system) string {
	return func(s *system) string {
		c := r.cell(s, key)
		if key == "W4" && s.name == "raw" {
			if g, ok := r.median("raw", "W4getAll"); ok {
				c += "; getAll " + fmtMs(g)
			}
		}
		if key == "W4" && s.name == "tinybase" && c != "—" {
			c += ", its queries scan"
		}
		return c
	}
}

// memoryCell is s's W7 cell: its JS heap, plus WebAssembly memory when it
// has some, and the total's ratio to raw's heap.
func (r *results) memoryCell(s *system) string {
	js, ok := r.median(s.name, "W7js")
	if !ok {
		return r.missing(s, "W7js")
	}
	base := 0.0
	if b, ok := r.median("raw", "W7js"); ok {
		base = b
	}
	wasm, _ := r.median(s.name, "W7wasm")
	c := "JS " + fmtBytes(js)
	if wasm > 0 {
		c += " + wasm " + fmtBytes(wasm) + " = " + fmtBytes(js+wasm)
	}
	if s.name != "raw" && base > 0 {
		c += " (" + fmtRatio((js+wasm)/base) + ")"
	}
	return c
}

// memoryVersus is Replica's W7 memory (heap and WebAssembly) over peer's
// heap.
func (r *results) memoryVersus(peer *system) string {
	rj, _ := r.median(r.judged(), "W7js")
	rw, _ := r.median(r.judged(), "W7wasm")
	pj, ok := r.median(peer.name, "W7js")
	if !ok || pj == 0 {
		return "—"
	}
	return fmtRatio((rj + rw) / pj)
}

// syncCell is s's W8 cell: the latency's p50 and p99 and the writes timed.
func (r *results) syncCell(s *system) string {
	p50, ok := r.median(s.name, "W8p50")
	if !ok {
		return r.missing(s, "W8p50")
	}
	p99, _ := r.median(s.name, "W8p99")
	n, _ := r.median(s.name, "W8writes")
	cell := fmt.Sprintf("p50 %s, p99 %s (%.0f writes)", fmtMs(p50), fmtMs(p99), n)
	if a, ok := r.median(s.name, "W8pushedP50"); ok {
		cell += fmt.Sprintf("; acknowledged to A at p50 %s", fmtMs(a))
	}
	if a, ok := r.median(s.name, "W8appliedP50"); ok {
		cell += fmt.Sprintf("; committed on B at p50 %s", fmtMs(a))
	}
	return cell
}

// longTaskCell returns the cell function of a W10 row: the median longest
// task and total blocking time.
func (r *results) longTaskCell(key string) func(*system) string {
	return func(s *system) string {
		l, ok := r.median(s.name, key+"Longest")
		if !ok {
			return r.missing(s, key+"Longest")
		}
		b, _ := r.median(s.name, key+"Blocking")
		return fmt.Sprintf("%s / %s", fmtMs(l), fmtMs(b))
	}
}

// burstCell is s's W8 burst cell: the median and the largest latency.
func (r *results) burstCell(s *system) string {
	m, ok := r.median(s.name, "W8burst")
	if !ok {
		return r.missing(s, "W8burst")
	}
	mx, _ := r.median(s.name, "W8burstMax")
	return fmt.Sprintf("%s, max %s", fmtMs(m), fmtMs(mx))
}

// sizeCell is s's W9 cell: each part's (wasm, js) size raw, gzipped and
// brotli-compressed.
func (r *results) sizeCell(s *system) string {
	sz := r.sizes[s.name]
	if s.sealed {
		return "Replica's"
	}
	if len(sz) == 0 {
		return "— (built in)"
	}
	var parts []string
	for _, part := range []string{"wasm", "js"} {
		x, ok := sz[part]
		if !ok {
			continue
		}
		br := "n/a"
		if x.Brotli > 0 {
			br = fmtBytes(float64(x.Brotli))
		}
		parts = append(parts, fmt.Sprintf("%s %s / gzip %s / br %s", part, fmtBytes(float64(x.Raw)), fmtBytes(float64(x.Gzip)), br))
	}
	return strings.Join(parts, "; ")
}

// sizeVersus is Replica's gzipped download (wasm and js) over peer's.
func (r *results) sizeVersus(peer *system) string {
	rs, ps := r.sizes["replica"], r.sizes[peer.name]
	rg := rs["wasm"].Gzip + rs["js"].Gzip
	pg := ps["js"].Gzip
	if pg == 0 || rg == 0 {
		return "—"
	}
	return fmtRatio(float64(rg)/float64(pg)) + " (gzip)"
}

// sealedSummary compares the sealed database's figures with the plain
// one's of the same run, against the targets of sealed databases: W5
// (bootstrap from a sealed checkpoint) within 1.2× of plain W5 (from the
// relay's snapshot), W8's p50 within 2 ms of plain's. "" when Replica
// sealed did not run.
func (r *results) sealedSummary() string {
	var lines []string
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	if sv, ok := r.median("replica-sealed", "W5"); ok {
		if pv, ok := r.median("replica", "W5"); ok && pv > 0 {
			lines = append(lines, fmt.Sprintf("- W5 (171,075 rows into a new database): sealed %s (from a sealed checkpoint), plain %s (from the relay's snapshot): %s plain; target ≤ 1.2×: %s",
				fmtMs(sv), fmtMs(pv), fmtRatio(sv/pv), verdict(sv/pv <= 1.2)))
		}
	}
	if sv, ok := r.median("replica-sealed", "W8p50"); ok {
		if pv, ok := r.median("replica", "W8p50"); ok {
			s99, _ := r.median("replica-sealed", "W8p99")
			p99, _ := r.median("replica", "W8p99")
			lines = append(lines, fmt.Sprintf("- W8 p50 (commit on A → B's subscription): sealed %s, plain %s: %+.1f ms; target ≤ +2 ms: %s (p99 sealed %s, plain %s)",
				fmtMs(sv), fmtMs(pv), sv-pv, verdict(sv-pv <= 2), fmtMs(s99), fmtMs(p99)))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nSealed database vs plain, same run:\n\n" + strings.Join(lines, "\n") + "\n"
}

func (r *results) any(metric string) bool {
	for _, s := range r.Samples {
		if len(s[metric]) > 0 {
			return true
		}
	}
	return false
}

// write prints the table and writes browser.json and bench.md.
func (r *results) write(o *options, took time.Duration) error {
	r.Sizes = r.sizes
	if err := writeJSON(filepath.Join(o.out, "browser.json"), r); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# make bench, %s\n\n", time.Now().Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, "Browser workloads: medians of %d repetition(s) per system (fresh Chromium each), one system at a time; ratios in parentheses are to raw IndexedDB in the same run; \"Replica ÷ peer\" below 1 means Replica is faster. W8: one run of the writes.\n\n", r.Reps)
	tab := r.table() + r.sealedSummary()
	b.WriteString(tab)
	if len(r.Notes)+len(r.Failures) > 0 || len(r.Rows) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Notes {
			b.WriteString("- " + n + "\n")
		}
		for _, f := range r.Failures {
			b.WriteString("- failed: " + f + "\n")
		}
		var w4 []string
		for _, s := range r.systems {
			if rows := r.Rows[s.name]["W4"]; len(rows) > 0 {
				w4 = append(w4, fmt.Sprintf("%s %d", s.title, rows[0]))
			}
		}
		if len(w4) > 0 {
			fmt.Fprintf(&b, "- W4 rows returned for the %d prefixes: %s\n", r.prefixes, strings.Join(w4, ", "))
		}
	}
	if len(r.Profile) > 0 {
		b.WriteString("\nProfile (counters on, one repetition; per row, W4 per query):\n\n")
		for _, name := range []string{"raw", "replica"} {
			for _, w := range []string{"W1", "W2", "W3", "W4", "W5"} {
				c := r.Profile[name][w]
				if c == nil {
					continue
				}
				keys := make([]string, 0, len(c))
				for k := range c {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				var parts []string
				for _, k := range keys {
					parts = append(parts, fmt.Sprintf("%s %.2f", k, c[k]))
				}
				fmt.Fprintf(&b, "- %s %s: %s\n", name, w, strings.Join(parts, ", "))
			}
		}
	}
	fmt.Fprintf(&b, "\nThe browser half took %s.\n", took.Round(time.Second))
	if o.benchstat != "" {
		if s, err := os.ReadFile(o.benchstat); err == nil {
			b.WriteString("\n## Go benchmarks (benchstat)\n\n```\n" + string(s) + "```\n")
		}
	}
	if err := os.WriteFile(filepath.Join(o.out, "bench.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(tab)
	fmt.Printf("\n(%s: the table with notes%s; every sample in %s)\n", filepath.Join(o.out, "bench.md"),
		map[bool]string{true: " and the benchstat summary", false: ""}[o.benchstat != ""], filepath.Join(o.out, "browser.json"))
	return nil
}
