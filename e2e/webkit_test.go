//go:build !js

package e2e

// WebKitGTK for TestEngines: WebKitWebDriver (Debian's webkit2gtk-driver),
// WebDriver classic over HTTP, starting MiniBrowser (libwebkit2gtk-4.1-0)
// on an Xvfb display of its own: MiniBrowser has no headless mode.

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
	"strings"
	"sync"
	"time"
)

// webkitDriverPath is the WebKitWebDriver the tests start:
// $REPLICA_WEBKIT_DRIVER, else Debian's webkit2gtk-driver's.
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
