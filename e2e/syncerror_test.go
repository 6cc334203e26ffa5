//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/wire"
)

// refusingProxy serves the demo and forwards its /sync WebSocket to a real
// relay, frame by frame; while refuse holds an error code, it answers
// every apply_changes itself with that error (echoing its requestId, not
// fatal) instead of forwarding it, as a relay refusing or failing a push
// does.
type refusingProxy struct {
	URL     string                 // http://127.0.0.1:PORT/
	refuse  atomic.Pointer[string] // the error code, or nil: forward
	refused atomic.Int32
}

func startRefusingProxy(t *testing.T, r *relayServer) *refusingProxy {
	t.Helper()
	p := &refusingProxy{}
	upstream := "ws" + strings.TrimPrefix(r.URL, "http") + "sync"
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(webDir)))
	mux.HandleFunc("/sync", func(w http.ResponseWriter, req *http.Request) {
		down, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		defer down.CloseNow()
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		up, _, err := websocket.Dial(ctx, upstream, nil)
		if err != nil {
			return
		}
		defer up.CloseNow()
		down.SetReadLimit(-1)
		up.SetReadLimit(-1)
		go func() { // relay -> page
			defer cancel()
			for {
				typ, msg, err := up.Read(ctx)
				if err != nil || down.Write(ctx, typ, msg) != nil {
					return
				}
			}
		}()
		for { // page -> relay
			typ, msg, err := down.Read(ctx)
			if err != nil {
				return
			}
			var m struct{ Type, RequestID string }
			if code := p.refuse.Load(); code != nil && json.Unmarshal(wire.FrameHead(msg), &m) == nil && m.Type == "apply_changes" {
				p.refused.Add(1)
				e, _ := json.Marshal(map[string]any{"type": "error", "code": *code,
					"message": "the test relay answers this push with " + *code, "requestId": m.RequestID, "fatal": false})
				if down.Write(ctx, wsframe.Type(e), e) != nil {
					return
				}
				continue
			}
			if up.Write(ctx, typ, msg) != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	p.URL = "http://" + ln.Addr().String() + "/"
	return p
}

// TestPushRefused: a relay refusing a push (APPLY_CHANGES_REFUSED, not
// fatal) leaves the status synced but shows in db.sync.state.lastError —
// in the leader tab and in another tab — and next to the sync state on the
// page. The client gives that transaction up (it stays on the device but
// never syncs), so the error stays while later writes sync. A push the
// relay fails (APPLY_CHANGES_ERROR) replaces it; it is retried, and once
// the relay acknowledges it, lastError and the note go away everywhere.
func TestPushRefused(t *testing.T) {
	r := startRelay(t)
	p := startRefusingProxy(t, r)
	b := newBrowser(t, "")
	dev := b.newDevice("A")
	a := dev.open(p.URL + "?db=refused")
	a.waitStatus("synced", syncTimeout)
	a.waitJS("nothing unsent", `db.sync.state.pending === 0`, syncTimeout)
	if got := a.evalString(`return JSON.stringify(db.sync.state.lastError ?? null);`); got != "null" {
		t.Errorf("lastError %s before any error", got)
	}
	var hidden bool
	if a.eval(`return document.getElementById("sync-issue").hidden;`, &hidden); !hidden {
		t.Error("the sync problem note shows with no problem")
	}
	a2 := dev.open(p.URL + "?db=refused") // a second tab of the same device
	bb := b.newDevice("B").open(p.URL + "?db=refused")

	code := func(c string) *string { return &c }
	p.refuse.Store(code("APPLY_CHANGES_REFUSED"))
	a.addTrip("Refused", "Nowhere", "1")
	a.waitJS("lastError APPLY_CHANGES_REFUSED", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_REFUSED"`, syncTimeout)
	var st struct {
		Status    string
		LastError struct {
			Code, Message string
			At            float64
		}
	}
	a.eval(`return db.sync.state;`, &st)
	if st.Status != "synced" {
		t.Errorf("status %q while the push is refused: want synced (the session goes on)", st.Status)
	}
	if !strings.Contains(st.LastError.Message, "the test relay answers this push with APPLY_CHANGES_REFUSED") {
		t.Errorf("lastError.message %q", st.LastError.Message)
	}
	if at := time.UnixMilli(int64(st.LastError.At)); time.Since(at) > time.Minute || time.Until(at) > time.Second {
		t.Errorf("lastError.at %v", at)
	}
	a.waitJS("the note next to the sync state", `!document.getElementById("sync-issue").hidden && document.getElementById("sync-issue").dataset.code === "APPLY_CHANGES_REFUSED" && document.getElementById("sync-issue-detail").textContent.includes("APPLY_CHANGES_REFUSED")`, syncTimeout)
	a2.waitJS("lastError in the other tab", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_REFUSED" && !document.getElementById("sync-issue").hidden`, syncTimeout)
	a.shot("push-refused")

	// Later writes sync; the given-up transaction's error stays.
	p.refuse.Store(nil)
	a.addTrip("Accepted", "Somewhere", "2")
	bb.waitJS("the accepted trip on another device", `tripEl("Accepted")`, syncTimeout)
	a.waitJS("nothing unsent", `db.sync.state.pending === 0`, syncTimeout)
	if got := a.evalString(`return db.sync.state.lastError ? db.sync.state.lastError.code : "none";`); got != "APPLY_CHANGES_REFUSED" {
		t.Errorf("lastError %s after a later push was acknowledged: the refused transaction's error should stay", got)
	}

	// A push the relay fails is retried; its acknowledgement clears it.
	p.refuse.Store(code("APPLY_CHANGES_ERROR"))
	a.addTrip("Retried", "Elsewhere", "3")
	a.waitJS("lastError APPLY_CHANGES_ERROR", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_ERROR"`, syncTimeout)
	a2.waitJS("APPLY_CHANGES_ERROR in the other tab", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_ERROR"`, syncTimeout)
	p.refuse.Store(nil)
	a.waitJS("lastError cleared", `!db.sync.state.lastError && db.sync.state.pending === 0`, syncTimeout)
	a.waitJS("the note gone", `document.getElementById("sync-issue").hidden && document.getElementById("sync-detail").hidden`, syncTimeout)
	a2.waitJS("lastError cleared in the other tab", `!db.sync.state.lastError && document.getElementById("sync-issue").hidden`, syncTimeout)
	a.waitStatus("synced", syncTimeout)
	bb.waitJS("the retried trip on another device", `tripEl("Retried")`, syncTimeout)
	if bb.evalString(`return tripEl("Refused") ? "yes" : "no";`) != "no" {
		t.Error("the refused transaction reached another device")
	}
	if p.refused.Load() < 2 {
		t.Errorf("the proxy answered %d pushes itself, want at least 2", p.refused.Load())
	}
}
