//go:build !js

package e2e

// Firefox ESR and WebKitGTK, beside Chromium.
//
// Firefox is driven over WebDriver BiDi, which it speaks itself
// (--remote-debugging-port): Debian packages no geckodriver, so a small
// BiDi client over a WebSocket (github.com/coder/websocket, already a
// dependency) does the few commands the tests need. WebKitGTK is driven by
// WebKitWebDriver (Debian's webkit2gtk-driver), WebDriver classic over
// HTTP, starting MiniBrowser (from libwebkit2gtk-4.1-0) on an Xvfb display:
// MiniBrowser of WebKitGTK 2.50 has no headless mode. Each engine is
// started once per test binary, at its first use, and shared by the tests
// (each test opens and closes its own tabs; each test's relay has its own
// port, so its pages have an origin, and an IndexedDB, of their own).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// enginesWanted reports whether REPLICA_BROWSERS (a comma-separated list
// of chromium, firefox, webkit; unset: all) includes name.
func enginesWanted(name string) bool {
	v := strings.TrimSpace(os.Getenv("REPLICA_BROWSERS"))
	if v == "" {
		return true
	}
	return slices.Contains(strings.Split(strings.ReplaceAll(v, " ", ""), ","), name)
}

// tabDriver is one tab of a Firefox or WebKit browser.
type tabDriver interface {
	// navigate loads url and waits for its load event.
	navigate(ctx context.Context, url string) error
	// call runs fn, a JavaScript function expression returning a string
	// (or a promise of one), in the page, and returns the string.
	call(ctx context.Context, fn string) (string, error)
	// errors returns the console errors and uncaught exceptions reported
	// since the last call (nil where the driver cannot see them).
	errors() []string
	close(ctx context.Context) error
}

// engineDriver is one running browser of an engine.
type engineDriver interface {
	// newTab opens a tab: shown (the one in front), or in the background
	// (hidden behind the one shown, as a tab the user is not looking at).
	newTab(ctx context.Context, background bool) (tabDriver, error)
	version() string
	stop()
}

// engine is Firefox or WebKit, started at its first use.
type engine struct {
	name  string // firefox, webkit: as in REPLICA_BROWSERS
	title string // for messages
	start func() (engineDriver, error)

	once sync.Once
	drv  engineDriver
	err  error
}

var (
	firefoxEngine = &engine{name: "firefox", title: "Firefox ESR", start: startFirefox}
	webkitEngine  = &engine{name: "webkit", title: "WebKitGTK", start: startWebKit}
	otherEngines  = []*engine{firefoxEngine, webkitEngine}
)

// use returns the running browser, starting it first; it skips the test
// when REPLICA_BROWSERS leaves the engine out, and fails it when the
// engine cannot start.
func (e *engine) use(t *testing.T) engineDriver {
	t.Helper()
	requireBrowser(t) // the cases need Chromium too (the other device)
	if !enginesWanted(e.name) {
		t.Skipf("REPLICA_BROWSERS=%s leaves out %s", os.Getenv("REPLICA_BROWSERS"), e.name)
	}
	e.once.Do(func() {
		start := time.Now()
		e.drv, e.err = e.start()
		if e.err == nil {
			fmt.Fprintf(os.Stderr, "e2e: started %s %s in %v\n", e.title, e.drv.version(), time.Since(start).Round(time.Millisecond))
		}
	})
	if e.err != nil {
		t.Fatalf("%s: %v\n(make test-e2e installs it; REPLICA_BROWSERS=chromium leaves it out)", e.title, e.err)
	}
	return e.drv
}

// stopEngines stops the browsers that were started.
func stopEngines() {
	for _, e := range otherEngines {
		if e.drv != nil {
			e.drv.stop()
		}
	}
}

// ---- the test's view of a tab --------------------------------------------------

// xpage is one tab of Firefox or WebKit showing a page of the relay. It has
// the methods of page that drive a page through JavaScript.
type xpage struct {
	t    *testing.T
	name string
	tab  tabDriver

	closed bool
}

// openX opens a new tab of the engine at url, the one shown, and waits
// until the demo is ready.
func openX(t *testing.T, e *engine, name, url string) *xpage {
	t.Helper()
	p := openXTab(t, e, name, url, false)
	p.waitReady()
	return p
}

// openXTab opens a new tab at url (in the background if background) without
// waiting for the demo.
func openXTab(t *testing.T, e *engine, name, url string, background bool) *xpage {
	t.Helper()
	drv := e.use(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tab, err := drv.newTab(ctx, background)
	if err != nil {
		t.Fatalf("%s: new tab: %v", name, err)
	}
	p := &xpage{t: t, name: name, tab: tab}
	t.Cleanup(p.close)
	if err := tab.navigate(ctx, url); err != nil {
		t.Fatalf("%s: open %s: %v", name, url, err)
	}
	return p
}

// errorHook records the page's console errors and uncaught exceptions in
// window.__errs from when it runs (WebDriver classic shows none of them;
// what happens before waitReady installs it goes unseen there).
const errorHook = `if (!window.__errs) {
	window.__errs = [];
	const ce = console.error;
	console.error = (...a) => { __errs.push("console.error: " + a.map(String).join(" ")); ce.apply(console, a); };
	addEventListener("error", (e) => __errs.push("uncaught: " + e.message));
	addEventListener("unhandledrejection", (e) => __errs.push("unhandled rejection: " + (e.reason && e.reason.stack || e.reason)));
}`

func (p *xpage) waitReady() {
	p.t.Helper()
	p.eval(errorHook+`; await app.ready; return null;`, nil)
	p.waitJS("the first render", `document.body.dataset.ready === "true"`, syncTimeout)
}

// eval runs js, the body of an async function with prelude's helpers in
// scope, and decodes its JSON result into out (nil: ignored).
func (p *xpage) eval(js string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := p.tab.call(ctx, "async () => JSON.stringify(await (async () => {"+prelude+js+"\n})()) ?? \"null\"")
	if err != nil {
		p.t.Fatalf("%s: %v\nin: %s\npage state: %s", p.name, err, strings.TrimSpace(js), p.state())
	}
	if out != nil {
		if err := json.Unmarshal([]byte(s), out); err != nil {
			p.t.Fatalf("%s: result %s: %v", p.name, s, err)
		}
	}
}

func (p *xpage) evalString(js string) string {
	p.t.Helper()
	var s string
	p.eval(js, &s)
	return s
}

// waitJS waits until the JavaScript expression cond (may use await) is
// truthy in the page. It polls from the test, not in the page: Firefox
// runs a background tab's timers at most once a second, and a poll by
// setTimeout there would see everything up to a second late.
func (p *xpage) waitJS(what, cond string, timeout time.Duration) {
	p.t.Helper()
	end := time.Now().Add(timeout)
	for {
		var ok bool
		p.eval("return !!(await (async () => ("+cond+"))());", &ok)
		if ok {
			return
		}
		if time.Now().After(end) {
			p.t.Fatalf("%s: timed out after %v waiting for %s\npage state: %s", p.name, timeout, what, p.state())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *xpage) waitStatus(status string, timeout time.Duration) {
	p.t.Helper()
	p.waitJS("sync status "+status, fmt.Sprintf(`document.getElementById("sync").dataset.status === %q`, status), timeout)
}

func (p *xpage) rows(table string) string {
	p.t.Helper()
	return p.evalString(fmt.Sprintf(`return JSON.stringify(await db.query(%q));`, table))
}

// reload reloads the tab (location.reload, as a user pressing F5) and
// waits until the new document is ready. The old document's errors are
// checked first (errorHook's record goes with it).
func (p *xpage) reload() {
	p.t.Helper()
	p.checkErrors()
	p.eval(`window.beforeReload = true; setTimeout(() => location.reload(), 0); return null;`, nil)
	end := time.Now().Add(syncTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := p.tab.call(ctx, `() => String(typeof window.beforeReload === "undefined" && document.readyState === "complete" && typeof app === "object")`)
		cancel()
		if err == nil && s == "true" {
			break
		}
		if time.Now().After(end) {
			p.t.Fatalf("%s: no new document after %v (last error: %v)", p.name, syncTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.waitReady()
}

// addTrip fills the New trip form and submits it (through the DOM: the
// drivers here type nothing) and waits until the trip shows.
func (p *xpage) addTrip(title, destination, budget string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`const f = document.getElementById("new-trip");
		f.elements.title.value = %[1]s; f.elements.destination.value = %[2]s; f.elements.budget.value = %[3]s;
		f.querySelector('button[type="submit"]').click(); return null;`,
		jsString(title), jsString(destination), jsString(budget)), nil)
	p.waitJS("the new trip "+title, "tripEl("+jsString(title)+")", syncTimeout)
}

// checkErrors fails the test on console errors the driver saw, and on an
// error the demo showed (app.lastError, the fatal banner).
func (p *xpage) checkErrors() {
	p.t.Helper()
	for _, e := range p.tab.errors() {
		p.t.Errorf("%s: %s", p.name, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := p.tab.call(ctx, `() => typeof app !== "object" ? "" : JSON.stringify({lastError: app.lastError, fatal: document.getElementById("fatal").hidden ? null : document.getElementById("fatal").textContent, errors: (window.__errs || []).splice(0)})`)
	if err == nil && s != "" && s != `{"lastError":null,"fatal":null,"errors":[]}` {
		p.t.Errorf("%s: the page shows or reported an error: %s", p.name, s)
	}
}

func (p *xpage) close() {
	if p.closed {
		return
	}
	p.closed = true
	p.checkErrors()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.tab.close(ctx); err != nil {
		p.t.Logf("%s: closing the tab: %v", p.name, err)
	}
}

func (p *xpage) state() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := p.tab.call(ctx, `() => { try { return JSON.stringify({
		rendered: [...document.querySelectorAll("#trips .trip-title")].map((e) => e.value),
		sync: typeof app === "object" && app.db ? app.db.sync.state : null,
		lastError: typeof app === "object" ? app.lastError : null,
		visibility: document.visibilityState,
	}); } catch (e) { return "state: " + e; } }`)
	if err != nil {
		return "unavailable: " + err.Error()
	}
	return s
}

// ---- Firefox: WebDriver BiDi -----------------------------------------------------

// firefoxPath is the Firefox the tests start: $REPLICA_FIREFOX, else
// Debian's firefox-esr.
func firefoxPath() string {
	if p := os.Getenv("REPLICA_FIREFOX"); p != "" {
		return p
	}
	return "/usr/bin/firefox-esr"
}

// firefoxPrefs go to the throwaway profile's user.js: no first-run pages,
// update checks or telemetry. (Firefox's remote agent sets its own
// recommended automation preferences on top.)
const firefoxPrefs = `user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("browser.tabs.warnOnClose", false);
`

type firefox struct {
	cmd     *exec.Cmd
	profile string
	conn    *websocket.Conn
	ver     string

	mu      sync.Mutex
	nextID  int
	pending map[int]chan bidiReply
	errs    map[string][]string // console errors by browsing context
	readErr error
	done    chan struct{}
}

type bidiReply struct {
	Type    string          `json:"type"` // success, error, event
	ID      int             `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// firefoxNetworkLog matches what Firefox reports as a script error but is
// the browser's log of a refused or cut WebSocket (Chromium logs these as
// browser log entries, which the harness does not count as errors).
var firefoxNetworkLog = regexp.MustCompile(`^Firefox can.t establish a connection to the server at |^The connection to \S+ was interrupted while the page was loading`)

var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

func startFirefox() (engineDriver, error) {
	bin := firefoxPath()
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no Firefox at %s (Debian: apt-get install firefox-esr; or set REPLICA_FIREFOX)", bin)
	}
	profile, err := os.MkdirTemp("", "replica-e2e-firefox-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--headless", "--no-remote", "--remote-debugging-port=0", "--profile", profile, "about:blank")
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	dieWithTest(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	f := &firefox{cmd: cmd, profile: profile, pending: map[int]chan bidiReply{}, errs: map[string][]string{}, done: make(chan struct{})}
	// Firefox prints the BiDi address on stderr; the rest is drained.
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := bidiListening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		if !sent {
			close(addr)
		}
	}()
	var ws string
	select {
	case a, ok := <-addr:
		if !ok {
			f.stop()
			return nil, fmt.Errorf("%s exited before listening for WebDriver BiDi", bin)
		}
		ws = a
	case <-time.After(60 * time.Second):
		f.stop()
		return nil, fmt.Errorf("%s: no WebDriver BiDi address after 60 s", bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.conn, _, err = websocket.Dial(ctx, ws+"/session", nil)
	if err != nil {
		f.stop()
		return nil, fmt.Errorf("dialing %s/session: %w", ws, err)
	}
	f.conn.SetReadLimit(64 << 20)
	go f.read()
	var sess struct {
		Capabilities struct {
			BrowserVersion string `json:"browserVersion"`
		} `json:"capabilities"`
	}
	if err := f.send(ctx, "session.new", map[string]any{"capabilities": map[string]any{}}, &sess); err != nil {
		f.stop()
		return nil, err
	}
	f.ver = sess.Capabilities.BrowserVersion
	if err := f.send(ctx, "session.subscribe", map[string]any{"events": []string{"log.entryAdded"}}, nil); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

func (f *firefox) version() string { return f.ver }

func (f *firefox) read() {
	defer close(f.done)
	for {
		_, b, err := f.conn.Read(context.Background())
		if err != nil {
			f.mu.Lock()
			f.readErr = err
			for id, ch := range f.pending {
				close(ch)
				delete(f.pending, id)
			}
			f.mu.Unlock()
			return
		}
		var r bidiReply
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		if r.Type == "event" {
			f.onEvent(r.Method, r.Params)
			continue
		}
		f.mu.Lock()
		ch := f.pending[r.ID]
		delete(f.pending, r.ID)
		f.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

func (f *firefox) onEvent(method string, params json.RawMessage) {
	if method != "log.entryAdded" {
		return
	}
	var e struct {
		Level  string `json:"level"`
		Text   string `json:"text"`
		Type   string `json:"type"`
		Source struct {
			Context string `json:"context"`
		} `json:"source"`
	}
	if json.Unmarshal(params, &e) != nil || e.Level != "error" || firefoxNetworkLog.MatchString(e.Text) {
		return
	}
	what := "console.error: "
	if e.Type == "javascript" {
		what = "uncaught: "
	}
	f.mu.Lock()
	f.errs[e.Source.Context] = append(f.errs[e.Source.Context], what+e.Text)
	f.mu.Unlock()
}

// send runs one BiDi command and decodes its result into out (nil: ignored).
func (f *firefox) send(ctx context.Context, method string, params any, out any) error {
	ch := make(chan bidiReply, 1)
	f.mu.Lock()
	if f.readErr != nil {
		f.mu.Unlock()
		return fmt.Errorf("WebDriver BiDi connection: %w", f.readErr)
	}
	f.nextID++
	id := f.nextID
	f.pending[id] = ch
	f.mu.Unlock()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := f.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the WebDriver BiDi connection closed", method)
		}
		if r.Type == "error" {
			return fmt.Errorf("%s: %s: %s", method, r.Error, r.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		delete(f.pending, id)
		f.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (f *firefox) newTab(ctx context.Context, background bool) (tabDriver, error) {
	var r struct {
		Context string `json:"context"`
	}
	if err := f.send(ctx, "browsingContext.create", map[string]any{"type": "tab", "background": background}, &r); err != nil {
		return nil, err
	}
	return &firefoxTab{f: f, id: r.Context}, nil
}

func (f *firefox) stop() {
	if f.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = f.send(ctx, "browser.close", map[string]any{}, nil)
		cancel()
		f.conn.Close(websocket.StatusNormalClosure, "")
	}
	exited := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = f.cmd.Process.Kill()
		<-exited
	}
	os.RemoveAll(f.profile)
}

type firefoxTab struct {
	f  *firefox
	id string
}

func (t *firefoxTab) navigate(ctx context.Context, url string) error {
	return t.f.send(ctx, "browsingContext.navigate", map[string]any{"context": t.id, "url": url, "wait": "complete"}, nil)
}

func (t *firefoxTab) call(ctx context.Context, fn string) (string, error) {
	var r struct {
		Type   string `json:"type"`
		Result struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	err := t.f.send(ctx, "script.callFunction", map[string]any{
		"functionDeclaration": fn,
		"awaitPromise":        true,
		"target":              map[string]any{"context": t.id},
	}, &r)
	if err != nil {
		return "", err
	}
	if r.Type == "exception" {
		return "", errors.New(r.ExceptionDetails.Text)
	}
	s, ok := r.Result.Value.(string)
	if !ok {
		return "", fmt.Errorf("the function returned %s, not a string", r.Result.Type)
	}
	return s, nil
}

func (t *firefoxTab) errors() []string {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	e := t.f.errs[t.id]
	delete(t.f.errs, t.id)
	return e
}

func (t *firefoxTab) close(ctx context.Context) error {
	return t.f.send(ctx, "browsingContext.close", map[string]any{"context": t.id}, nil)
}

// ---- WebKitGTK: WebKitWebDriver, WebDriver classic -------------------------------

func webkitDriverPath() string {
	if p := os.Getenv("REPLICA_WEBKIT_DRIVER"); p != "" {
		return p
	}
	return "/usr/bin/WebKitWebDriver"
}

// miniBrowserPath: libwebkit2gtk-4.1-0 installs MiniBrowser under the
// multiarch library directory.
func miniBrowserPath() string {
	if p := os.Getenv("REPLICA_MINIBROWSER"); p != "" {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/*/webkit2gtk-4.1/MiniBrowser")
	if len(m) == 0 {
		return "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
	}
	return m[0]
}

type webkit struct {
	xvfb, driver *exec.Cmd
	base         string // http://127.0.0.1:PORT/session/ID
	ver          string

	mu  sync.Mutex // one command at a time; cur is the window commands go to
	cur string
}

func startWebKit() (engineDriver, error) {
	drvBin, mini := webkitDriverPath(), miniBrowserPath()
	for _, p := range []string{drvBin, mini, "/usr/bin/Xvfb"} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("no %s (Debian: apt-get install webkit2gtk-driver xvfb)", p)
		}
	}
	w := &webkit{}
	// Xvfb picks a free display and writes its number to fd 3.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	w.xvfb = exec.Command("/usr/bin/Xvfb", "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	w.xvfb.ExtraFiles = []*os.File{pw}
	dieWithTest(w.xvfb)
	if err := w.xvfb.Start(); err != nil {
		return nil, fmt.Errorf("starting Xvfb: %w", err)
	}
	pw.Close()
	disp := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		disp <- strings.TrimSpace(line)
		pr.Close()
	}()
	var display string
	select {
	case display = <-disp:
	case <-time.After(30 * time.Second):
	}
	if display == "" {
		w.stop()
		return nil, errors.New("Xvfb gave no display number")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.stop()
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	w.driver = exec.Command(drvBin, fmt.Sprintf("--port=%d", port))
	w.driver.Env = append(os.Environ(), "DISPLAY=:"+display)
	dieWithTest(w.driver)
	if err := w.driver.Start(); err != nil {
		w.stop()
		return nil, fmt.Errorf("starting %s: %w", drvBin, err)
	}
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var st struct {
			Ready bool `json:"ready"`
		}
		if w.http(ctx, "GET", root+"/status", nil, &st) == nil && st.Ready {
			break
		}
		if ctx.Err() != nil {
			w.stop()
			return nil, fmt.Errorf("%s not ready after a minute", drvBin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var sess struct {
		SessionID    string `json:"sessionId"`
		Capabilities struct {
			BrowserVersion string `json:"browserVersion"`
		} `json:"capabilities"`
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"binary": mini, "args": []string{"--automation"}},
	}}}
	if err := w.http(ctx, "POST", root+"/session", caps, &sess); err != nil {
		w.stop()
		return nil, fmt.Errorf("new session: %w", err)
	}
	w.base, w.ver = root+"/session/"+sess.SessionID, sess.Capabilities.BrowserVersion
	if err := w.http(ctx, "POST", w.base+"/timeouts", map[string]any{"script": 120000}, nil); err != nil {
		w.stop()
		return nil, err
	}
	if err := w.http(ctx, "GET", w.base+"/window", nil, &w.cur); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

func (w *webkit) version() string { return w.ver }

// http does one WebDriver request and decodes the reply's value into out.
func (w *webkit) http(ctx context.Context, method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s %s: %s: %.200s", method, url, resp.Status, b)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Value, &e)
		return fmt.Errorf("%s: %s", e.Error, e.Message)
	}
	if out != nil {
		return json.Unmarshal(r.Value, out)
	}
	return nil
}

// on runs a command in window h (switching to it first).
func (w *webkit) on(ctx context.Context, h, method, path string, body, out any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != h {
		if err := w.http(ctx, "POST", w.base+"/window", map[string]any{"handle": h}, nil); err != nil {
			return fmt.Errorf("switching to window %s: %w", h, err)
		}
		w.cur = h
	}
	return w.http(ctx, method, w.base+path, body, out)
}

// newTab: MiniBrowser shows a new window, and adds a new tab behind the
// current window's tab shown (WebDriver classic has no command to bring
// a tab to the front: switching to it does not), so a tab in front is a
// window of its own.
func (w *webkit) newTab(ctx context.Context, background bool) (tabDriver, error) {
	var r struct {
		Handle string `json:"handle"`
	}
	typ := "window"
	if background {
		typ = "tab"
	}
	w.mu.Lock()
	err := w.http(ctx, "POST", w.base+"/window/new", map[string]any{"type": typ}, &r)
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &webkitTab{w: w, h: r.Handle}, nil
}

func (w *webkit) stop() {
	if w.base != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = w.http(ctx, "DELETE", w.base, nil, nil)
		cancel()
	}
	for _, c := range []*exec.Cmd{w.driver, w.xvfb} {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

type webkitTab struct {
	w *webkit
	h string
}

func (t *webkitTab) navigate(ctx context.Context, url string) error {
	return t.w.on(ctx, t.h, "POST", "/url", map[string]any{"url": url}, nil)
}

// call: Execute Script awaits a returned promise.
func (t *webkitTab) call(ctx context.Context, fn string) (string, error) {
	var v any
	if err := t.w.on(ctx, t.h, "POST", "/execute/sync", map[string]any{"script": "return (" + fn + ")();", "args": []any{}}, &v); err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("the function returned %T, not a string", v)
	}
	return s, nil
}

func (t *webkitTab) errors() []string { return nil }

func (t *webkitTab) close(ctx context.Context) error {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	if t.w.cur != t.h {
		if err := t.w.http(ctx, "POST", t.w.base+"/window", map[string]any{"handle": t.h}, nil); err != nil {
			return err
		}
		t.w.cur = t.h
	}
	var left []string
	if err := t.w.http(ctx, "DELETE", t.w.base+"/window", nil, &left); err != nil {
		return err
	}
	// Commands need a current window: the first one, never closed.
	t.w.cur = ""
	if len(left) > 0 {
		if err := t.w.http(ctx, "POST", t.w.base+"/window", map[string]any{"handle": left[0]}, nil); err != nil {
			return err
		}
		t.w.cur = left[0]
	}
	return nil
}
