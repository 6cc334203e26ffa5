//go:build !js

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/wasmbuild"
	"github.com/replica-sync/replica/relay"
)

var (
	// webDir is a copy of ../web with a freshly built replica.wasm and the
	// toolchain's wasm_exec.js; "" when the tests are skipped.
	webDir string
	// chromiumPath is the browser the tests start.
	chromiumPath string
	// skipAll, when set, is why every test skips (no browser).
	skipAll string
	// shotDir receives the screenshots.
	shotDir string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	chromiumPath = os.Getenv("REPLICA_CHROMIUM")
	if chromiumPath == "" {
		chromiumPath = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		skipAll = fmt.Sprintf("no browser at %s (set REPLICA_CHROMIUM, or run make test-e2e, which installs Debian's chromium)", chromiumPath)
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "replica-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer stopEngines()
	webDir = filepath.Join(tmp, "web")
	start := time.Now()
	if err := buildWeb(webDir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built replica.wasm into %s in %v (worker mode: %v)\n", webDir, time.Since(start).Round(time.Millisecond), workerMode)
	shotDir = os.Getenv("REPLICA_SCREENSHOTS")
	if shotDir == "" {
		shotDir = filepath.Join(os.TempDir(), "replica-e2e-screenshots")
	}
	if err := os.MkdirAll(shotDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: screenshots go to %s\n", shotDir)
	return m.Run()
}

// buildWeb copies ../web to dir (without any built replica.wasm or
// wasm_exec.js in it), builds replica.wasm there as `make wasm` does, and
// copies the toolchain's wasm_exec.js beside it.
func buildWeb(dir string) error {
	src := filepath.Join("..", "web")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch rel {
		case "replica.wasm", "replica.wasm.gz", "wasm_exec.js":
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		return copyFile(path, filepath.Join(dir, rel))
	})
	if err != nil {
		return fmt.Errorf("copying web/: %w", err)
	}
	if !workerMode {
		// Page mode as the default of every page: what a
		// data-worker="false" attribute on each script tag does.
		if err := setPageDefault(filepath.Join(dir, "replica.js")); err != nil {
			return err
		}
	}
	cmd := wasmbuild.Command(filepath.Join(dir, "replica.wasm"), "../cmd/wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("GOOS=js GOARCH=wasm go build ./cmd/wasm: %v\n%s", err, out)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	return copyFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"), filepath.Join(dir, "wasm_exec.js"))
}

// workerMode runs the suite with every replica in worker mode, the
// loader's default; REPLICA_WORKER=0 runs it in page mode (Replica.open's
// worker option defaulting to false): the same tests, the engine in the
// page.
var workerMode = os.Getenv("REPLICA_WORKER") != "0"

// setPageDefault rewrites the loader at path so that page mode is its
// default, as a data-worker="false" attribute on its script tag would.
func setPageDefault(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	const on, off = "let defaultWorker = inWindow,", "let defaultWorker = false,"
	if bytes.Count(b, []byte(on)) != 1 {
		return fmt.Errorf("%s: want one %q to switch worker mode off", path, on)
	}
	return os.WriteFile(path, bytes.Replace(b, []byte(on), []byte(off), 1), 0o644)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// ---- relay --------------------------------------------------------------------

// relayServer is a relay serving the demo, started in-process for one test.
type relayServer struct {
	srv *relay.Server
	// URL is the page's address: http://127.0.0.1:PORT/.
	URL string
	// logs collects the relay's warnings and errors, shown when the test fails.
	logs *syncBuffer
}

// startRelay starts a relay on a free loopback port with a temporary data
// directory, serving the built web copy. It stops when the test ends.
func startRelay(t *testing.T) *relayServer {
	t.Helper()
	return startRelayConfig(t, relay.Config{})
}

// startRelayConfig is startRelay with cfg's settings (a clock, limits);
// DataDir, WebDir, Auth, NoSync and Logger are the harness's.
func startRelayConfig(t *testing.T, cfg relay.Config) *relayServer {
	t.Helper()
	requireBrowser(t)
	logs := &syncBuffer{}
	cfg.DataDir, cfg.WebDir, cfg.Auth, cfg.NoSync = t.TempDir(), webDir, relay.AllowAll, true
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	r := &relayServer{srv: srv, URL: "http://" + ln.Addr().String() + "/", logs: logs}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v", err)
		}
		if t.Failed() && logs.Len() > 0 {
			t.Logf("relay log:\n%s", logs.String())
		}
	})
	return r
}

// metric returns the value of an unlabelled metric of the relay's /metrics.
func (r *relayServer) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(r.URL + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return v
		}
	}
	t.Fatalf("metric %s not found in /metrics", name)
	return 0
}

// waitMetric polls the relay's metric until cond holds.
func (r *relayServer) waitMetric(t *testing.T, name string, what string, cond func(float64) bool, timeout time.Duration) float64 {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		v := r.metric(t, name)
		if cond(v) {
			return v
		}
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s (%s = %v)", timeout, what, name, v)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// ---- browsers ------------------------------------------------------------------

func requireBrowser(t *testing.T) {
	t.Helper()
	if skipAll != "" {
		t.Skip(skipAll)
	}
}

// chromiumFlags are scripts/chromium's, for the exec allocator.
func chromiumFlags(extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1280, 900),
	)
	return append(opts, extra...)
}

// browser is one Chromium process.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts Chromium (with a throwaway profile, or userDataDir if
// not "") for the rest of the test.
func newBrowser(t *testing.T, userDataDir string) *browser {
	t.Helper()
	requireBrowser(t)
	var extra []chromedp.ExecAllocatorOption
	if userDataDir != "" {
		extra = append(extra, chromedp.UserDataDir(userDataDir))
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromiumFlags(extra...)...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // start it
		cancel()
		cancelA()
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	t.Cleanup(func() { cancel(); cancelA() })
	return &browser{t: t, ctx: ctx}
}

// device is one browser profile: a browser context of its own (its own
// IndexedDB, BroadcastChannels and Web Locks), whose pages are tabs.
type device struct {
	name string
	b    *browser
	ctx  context.Context
}

// newDevice makes a new browser context in b. Its first (blank) tab stays
// open as long as the test, so closing a page never disposes of the
// context's storage.
func (b *browser) newDevice(name string) *device {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		b.t.Fatalf("device %s: %v", name, err)
	}
	b.t.Cleanup(cancel)
	return &device{name: name, b: b, ctx: ctx}
}

// defaultDevice is the browser's own profile (for a browser started with
// a user data directory).
func (b *browser) defaultDevice(name string) *device {
	return &device{name: name, b: b, ctx: b.ctx}
}

// page is one tab showing the demo.
type page struct {
	t      *testing.T
	name   string
	dev    *device
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	console []string // every console message, for failure reports
	errs    []string // console errors and uncaught exceptions
	closed  bool
}

// open opens a new tab of d at url and waits until the demo is ready
// (app.ready resolved: the replica is open and the page rendered).
// Actions in before run in the new tab before it navigates (such as
// chromedp.EmulateViewport).
func (d *device) open(url string, before ...chromedp.Action[chromedp.Void]) *page {
	t := d.b.t
	t.Helper()
	p := &page{t: t, name: d.name, dev: d}
	ctx, cancel := chromedp.NewContext(d.ctx, chromedp.WithListener(p.onEvent))
	p.ctx, p.cancel = ctx, cancel
	t.Cleanup(p.close)
	if err := chromedp.Do(ctx, append(before, chromedp.Navigate(url))...); err != nil {
		t.Fatalf("%s: open %s: %v", p.name, url, err)
	}
	p.waitReady()
	return p
}

// openPlain opens a new tab of d at url, a page that is not the demo.
func (d *device) openPlain(url string) *page {
	t := d.b.t
	t.Helper()
	p := &page{t: t, name: d.name + " (plain tab)", dev: d}
	ctx, cancel := chromedp.NewContext(d.ctx, chromedp.WithListener(p.onEvent))
	p.ctx, p.cancel = ctx, cancel
	t.Cleanup(p.close)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: open %s: %v", p.name, url, err)
	}
	return p
}

func (p *page) waitReady() {
	p.t.Helper()
	p.eval(`await app.ready; await wait("the first render", () => document.body.dataset.ready === "true"); return null;`, nil)
}

// waitNewDocument waits until the page has navigated away from the
// document where the global marker was set, and the new one is ready.
func (p *page) waitNewDocument(marker string) {
	p.t.Helper()
	end := time.Now().Add(syncTimeout)
	for {
		fresh, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](
			`typeof window.`+marker+` === "undefined" && document.readyState === "complete" && typeof app === "object"`))
		if err == nil && fresh {
			break
		}
		if time.Now().After(end) {
			p.t.Fatalf("%s: no new document after %v (last error: %v)", p.name, syncTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.waitReady()
}

// onEvent runs on chromedp's reading goroutine: record, never block.
func (p *page) onEvent(ev any) {
	var msg string
	isErr := false
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range ev.Args {
			switch {
			case a.Value != nil:
				var s string
				if json.Unmarshal(a.Value, &s) == nil {
					parts = append(parts, s)
				} else {
					parts = append(parts, string(a.Value))
				}
			case a.Description != "":
				parts = append(parts, a.Description)
			default:
				parts = append(parts, string(a.Type))
			}
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		isErr = ev.Type == runtime.ConsoleAPICalledTypeError
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "uncaught: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		isErr = true
	case *log.EventEntryAdded:
		msg = "browser log (" + string(ev.Entry.Level) + ", " + string(ev.Entry.Source) + "): " + ev.Entry.Text
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.console = append(p.console, msg)
	if len(p.console) > 400 {
		p.console = p.console[100:]
	}
	if isErr {
		p.errs = append(p.errs, msg)
	}
}

// checkErrors fails the test if the page reported a console error or an
// uncaught exception since the last check.
func (p *page) checkErrors() {
	p.t.Helper()
	p.mu.Lock()
	errs := p.errs
	p.errs = nil
	p.mu.Unlock()
	for _, e := range errs {
		p.t.Errorf("%s: %s", p.name, e)
	}
}

// close closes the tab (as a user closing it) after checking its console.
func (p *page) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.checkErrors()
	if p.t.Failed() {
		p.mu.Lock()
		tail := append([]string(nil), p.console...)
		if len(tail) > 60 {
			tail = tail[len(tail)-60:]
		}
		p.mu.Unlock()
		if len(tail) > 0 {
			p.t.Logf("%s console (last %d):\n  %s", p.name, len(tail), strings.Join(tail, "\n  "))
		}
	}
	p.cancel()
}

// prelude defines helpers for every evaluated snippet: wait(what, cond,
// ms) polls cond (sync or async) until truthy, or throws after ms.
const prelude = `
const wait = async (what, cond, ms = 20000) => {
	const end = Date.now() + ms;
	for (;;) {
		const v = await cond();
		if (v) return v;
		if (Date.now() > end) throw new Error("timed out after " + ms + " ms waiting for " + what);
		await new Promise((r) => setTimeout(r, 20));
	}
};
const db = window.app && app.db;
const tripEl = (title) => [...document.querySelectorAll("#trips .trip")].find((e) => e.querySelector(".trip-title").value === title);
const titles = () => [...document.querySelectorAll("#trips .trip .trip-title")].map((e) => e.value);
const setField = (el, field, value) => {
	const input = el.querySelector('[data-field="' + field + '"]');
	if (!input) throw new Error("no field " + field);
	if (input.type === "checkbox") input.checked = value; else input.value = value;
	input.dispatchEvent(new Event("change", {bubbles: true}));
};
`

// eval runs js, the body of an async function (with prelude's helpers in
// scope), in the page and decodes its JSON result into out (nil: ignored).
func (p *page) eval(js string, out any) {
	p.t.Helper()
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]byte]("(async () => {"+prelude+js+"\n})()", chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("%s: %v\nin: %s\npage state: %s", p.name, err, strings.TrimSpace(js), p.state())
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			p.t.Fatalf("%s: result %s: %v", p.name, raw, err)
		}
	}
}

// state describes the demo page for a failure report: the trips it renders
// and holds, the form's fields, the sync state and any toast. It never fails.
func (p *page) state() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { try {
		const v = (sel) => [...document.querySelectorAll(sel)].map((e) => e.value);
		const f = document.getElementById("new-trip");
		const toast = document.getElementById("toast");
		return JSON.stringify({
			rendered: v("#trips .trip-title"),
			held: typeof app === "object" && app.trips ? app.trips.map((t) => t.title) : null,
			form: f ? [...f.elements].filter((e) => e.name).map((e) => e.name + "=" + e.value) : null,
			focus: document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : null,
			sync: typeof db === "object" && db && db.sync ? db.sync.state : null,
			toast: toast && !toast.hidden ? toast.textContent : null,
		});
	} catch (e) { return "state: " + e; } })()`))
	if err != nil {
		return "unavailable: " + err.Error()
	}
	return s
}

// evalString is eval returning a string.
func (p *page) evalString(js string) string {
	p.t.Helper()
	var s string
	p.eval(js, &s)
	return s
}

// waitJS waits until the JavaScript expression cond (may use await) is
// truthy in the page.
func (p *page) waitJS(what, cond string, timeout time.Duration) {
	p.t.Helper()
	p.eval(fmt.Sprintf("await wait(%q, async () => (%s), %d); return null;", what, cond, timeout.Milliseconds()), nil)
}

// waitLogging is waitJS for long waits: it polls from the test every
// second and logs the JavaScript expression progress every 30 s.
func (p *page) waitLogging(what, cond, progress string, timeout time.Duration) {
	p.t.Helper()
	start := time.Now()
	next := start.Add(30 * time.Second)
	for {
		var done bool
		p.eval("return !!("+cond+");", &done)
		if done {
			return
		}
		if time.Since(start) > timeout {
			p.t.Fatalf("%s: timed out after %v waiting for %s (%s)", p.name, timeout, what, p.evalString("return String("+progress+");"))
		}
		if time.Now().After(next) {
			p.t.Logf("%s: %v waiting for %s: %s", p.name, time.Since(start).Round(time.Second), what, p.evalString("return String("+progress+");"))
			next = next.Add(30 * time.Second)
		}
		time.Sleep(time.Second)
	}
}

// waitStatus waits until the sync bar shows status (synced, offline, ...).
func (p *page) waitStatus(status string, timeout time.Duration) {
	p.t.Helper()
	p.waitJS("sync status "+status, fmt.Sprintf(`document.getElementById("sync").dataset.status === %q`, status), timeout)
}

// do runs chromedp actions in the page.
func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
}

// click clicks the element matching the CSS selector, as a user would.
func (p *page) click(sel string) {
	p.t.Helper()
	p.do(chromedp.Click(chromedp.CSS(sel)))
}

// shot saves a screenshot of the viewport as shotDir/TEST-NAME.png.
func (p *page) shot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("%s: screenshot: %v", p.name, err)
	}
	file := filepath.Join(shotDir, shotName(p.t.Name())+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func shotName(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// rows returns the rows of a table as the page's replica holds them, as
// JSON text (timestamps as ISO strings), in primary-key order.
func (p *page) rows(table string) string {
	p.t.Helper()
	return p.evalString(fmt.Sprintf(`return JSON.stringify(await db.query(%q));`, table))
}

// waitSame polls until every page (of any engine) holds the same rows of
// tables, and returns them (by table).
func waitSame(t *testing.T, what string, timeout time.Duration, tables []string, pages ...jsPage) map[string]string {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		got := map[string]string{}
		same := true
		for _, tb := range tables {
			first := pages[0].rows(tb)
			got[tb] = first
			for _, p := range pages[1:] {
				if p.rows(tb) != first {
					same = false
				}
			}
		}
		if same {
			return got
		}
		if time.Now().After(end) {
			for _, tb := range tables {
				for i, p := range pages {
					name := fmt.Sprintf("page %d", i)
					if c, ok := p.(*page); ok {
						name = c.name
					}
					t.Logf("%s %s: %s", name, tb, p.rows(tb))
				}
			}
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsFloat formats a number for JavaScript source.
func jsFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
