//go:build !js

package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestInvalidInput: values the schema refuses are rejected with code
// VALIDATION, shown on the page, and the page goes on showing the stored
// values and working.
func TestInvalidInput(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=invalid")
	a.waitStatus("synced", syncTimeout)
	a.addTrip("Valid", "Somewhere", "100")

	toast := func() string {
		return a.evalString(`const t = document.getElementById("toast"); return t.hidden ? "" : t.dataset.code + ": " + t.textContent;`)
	}
	stored := `JSON.stringify((await db.query("trips")).map((r) => [r.title, r.travelers, r.budget]))`
	before := a.evalString(`return ` + stored + `;`)

	// An integer column refuses 2.5.
	a.eval(`setField(tripEl("Valid"), "travelers", "2.5"); await wait("the error", () => !document.getElementById("toast").hidden); return null;`, nil)
	if got := toast(); !strings.HasPrefix(got, "VALIDATION: Couldn't save the change.") || !strings.Contains(got, "Travelers must be a whole number") {
		t.Errorf("toast after travelers 2.5: %q", got)
	}
	a.waitJS("the stored travelers back in the field", `tripEl("Valid").querySelector('[data-field="travelers"]').value === "2"`, syncTimeout)
	a.shot("validation-error")

	// A notNull column refuses an empty title (inline and in the form).
	a.eval(`document.getElementById("toast").hidden = true; setField(tripEl("Valid"), "title", ""); await wait("the error", () => !document.getElementById("toast").hidden); return null;`, nil)
	if got := toast(); !strings.HasPrefix(got, "VALIDATION") || !strings.Contains(got, "Title can't be empty") {
		t.Errorf("toast after an empty title: %q", got)
	}
	a.waitJS("the title back in the field", `tripEl("Valid") && titles().length === 1`, syncTimeout)
	// The form refuses an empty title itself, beside the form (no toast).
	a.eval(`document.getElementById("toast").hidden = true; document.querySelector('#new-trip [type="submit"]').click(); await wait("the form's note", () => !document.getElementById("new-trip-error").hidden); return null;`, nil)
	if got := a.evalString(`return document.getElementById("new-trip-error").textContent;`); !strings.Contains(got, "Title is required") {
		t.Errorf("form note after adding a trip without a title: %q", got)
	}
	if got := toast(); got != "" {
		t.Errorf("toast after adding a trip without a title: %q", got)
	}
	var lastErr struct{ Code string }
	a.eval(`return app.lastError;`, &lastErr)
	if lastErr.Code != "VALIDATION" {
		t.Errorf("app.lastError.code = %q", lastErr.Code)
	}
	if after := a.evalString(`return ` + stored + `;`); after != before {
		t.Errorf("rejected writes changed the rows: %s, was %s", after, before)
	}

	// The page still works, and only the valid write synced.
	a.eval(`setField(tripEl("Valid"), "travelers", "3"); await wait("the valid edit", async () => (await db.query("trips"))[0].travelers === 3); return null;`, nil)
	bb := b.newDevice("B").open(r.URL + "?db=invalid")
	bb.waitJS("the valid edit on B", `tripEl("Valid") && tripEl("Valid").querySelector('[data-field="travelers"]').value === "3"`, syncTimeout)
	waitSame(t, "the same trips", syncTimeout, []string{"trips"}, a, bb)
}

// TestProtocolMismatch: a relay that refuses the client's protocol version
// (error PROTOCOL_VERSION_MISMATCH, fatal, close 4003) puts the page in a
// lasting error state with the relay's message, and the client does not
// reconnect until the user asks to retry.
func TestProtocolMismatch(t *testing.T) {
	requireBrowser(t)
	var handshakes, badFrames atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(webDir)))
	mux.HandleFunc("/sync", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		_, msg, err := c.Read(ctx)
		if err != nil || !strings.Contains(string(msg), `"handshake"`) {
			badFrames.Add(1) // reported by the test (this may run after it)
			return
		}
		handshakes.Add(1)
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"error","code":"PROTOCOL_VERSION_MISMATCH","message":"this relay speaks protocol version 999","fatal":true}`))
		_ = c.Close(4003, "protocol version mismatch")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	b := newBrowser(t, "")
	a := b.newDevice("A").open("http://" + ln.Addr().String() + "/?db=future")
	a.waitStatus("error", syncTimeout)
	detail := a.evalString(`return document.getElementById("sync-message").textContent;`)
	if !strings.Contains(detail, "PROTOCOL_VERSION_MISMATCH") {
		t.Errorf("error detail %q does not name PROTOCOL_VERSION_MISMATCH", detail)
	}
	a.shot("protocol-mismatch")
	// Writes still work locally.
	a.addTrip("Still works", "", "1")

	// It stays in error and does not redial: the first reconnect of a
	// transient failure would come within 2 s (1 s backoff plus jitter).
	n := handshakes.Load()
	end := time.Now().Add(3500 * time.Millisecond)
	for time.Now().Before(end) {
		if st := a.evalString(`return document.getElementById("sync").dataset.status;`); st != "error" {
			t.Fatalf("status became %q after the fatal error", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := handshakes.Load(); got != n || n != 1 {
		t.Errorf("%d handshakes, then %d after 3.5 s: want exactly 1", n, got)
	}
	if got := a.evalString(`return document.getElementById("sync-toggle").textContent;`); got != "Retry" {
		t.Errorf("toggle reads %q in the error state, want Retry", got)
	}

	// Retry dials once more and fails the same way.
	a.click("#sync-toggle")
	deadline := time.Now().Add(syncTimeout)
	for handshakes.Load() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no second handshake after Retry (%d)", handshakes.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.waitStatus("error", syncTimeout)
	if n := badFrames.Load(); n != 0 {
		t.Errorf("%d connections did not start with a handshake", n)
	}
}
