//go:build !js

package e2e

// Firefox ESR and WebKitGTK, beside Chromium.
//
// Firefox is driven over WebDriver BiDi, which it speaks itself
// (--remote-debugging-port): Debian packages no geckodriver, so a small
// BiDi client over a WebSocket (github.com/coder/websocket, already a
// dependency) does the few commands the tests need (firefox_test.go).
// WebKitGTK is driven by WebKitWebDriver (Debian's webkit2gtk-driver),
// WebDriver classic over HTTP, starting MiniBrowser (from
// libwebkit2gtk-4.1-0) on an Xvfb display: MiniBrowser of WebKitGTK 2.50
// has no headless mode (webkit_test.go). Each engine is
// started once per test binary, at its first use, and shared by the tests
// (each test opens and closes its own tabs; each test's relay has its own
// port, so its pages have an origin, and an IndexedDB, of their own).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
