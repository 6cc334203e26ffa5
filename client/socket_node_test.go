//go:build !js

package client

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSSocketInNode runs TestJSSocket and TestJSRelayURL
// (socket_js_test.go: the browser's socket over a scripted WebSocket, and
// its reading of relay URLs) as GOOS=js GOARCH=wasm under Node.js
// with Go's own go_js_wasm_exec, so that the native test run covers the
// browser socket too. It is skipped without node on PATH and with -short.
// (The real browser WebSocket is exercised by jsbridge's sync tests and
// cmd/wasm's TestSyncTwoTabs.)
func TestJSSocketInNode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	execWrapper := filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "go_js_wasm_exec")
	cmd := exec.Command("go", "test", "-count=1", "-run", "^(TestJSSocket|TestJSRelayURL)$", "-exec", execWrapper, ".")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go test -run TestJSSocket|TestJSRelayURL: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}
