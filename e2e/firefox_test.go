//go:build !js

package e2e

// Firefox ESR for TestEngines, over WebDriver BiDi, which Firefox speaks
// itself (--remote-debugging-port): Debian packages no geckodriver, so this
// small BiDi client over a WebSocket does the few commands the tests need.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/coder/websocket"
)

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
