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
)

// refusingProxy serves the demo and forwards its /sync WebSocket to a real
// relay, frame by frame; while refuse is set, it answers every
// apply_changes itself with APPLY_CHANGES_REFUSED (echoing its requestId,
// not fatal) instead of forwarding it, as a relay refusing a push does.
type refusingProxy struct {
	URL     string // http://127.0.0.1:PORT/
	refuse  atomic.Bool
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
			if p.refuse.Load() && json.Unmarshal(msg, &m) == nil && m.Type == "apply_changes" {
				p.refused.Add(1)
				e, _ := json.Marshal(map[string]any{"type": "error", "code": "APPLY_CHANGES_REFUSED",
					"message": "the test relay refuses this push", "requestId": m.RequestID, "fatal": false})
				if down.Write(ctx, websocket.MessageText, e) != nil {
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
// page; once the relay acknowledges a push again, lastError and the note
// go away.
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

	p.refuse.Store(true)
	a.addTrip("Refused", "Nowhere", "1")
	a.waitJS("lastError APPLY_CHANGES_REFUSED", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_REFUSED"`, syncTimeout)
	var st struct {
		Status    string
		Pending   int
		LastError struct {
			Code, Message string
			At            float64
		}
	}
	a.eval(`return db.sync.state;`, &st)
	if st.Status != "synced" {
		t.Errorf("status %q while the push is refused: want synced (the session goes on)", st.Status)
	}
	if !strings.Contains(st.LastError.Message, "the test relay refuses this push") {
		t.Errorf("lastError.message %q", st.LastError.Message)
	}
	if at := time.UnixMilli(int64(st.LastError.At)); time.Since(at) > time.Minute || time.Until(at) > time.Second {
		t.Errorf("lastError.at %v", at)
	}
	a.waitJS("the note next to the sync state", `!document.getElementById("sync-issue").hidden && document.getElementById("sync-issue").dataset.code === "APPLY_CHANGES_REFUSED" && document.getElementById("sync-issue-detail").textContent.includes("APPLY_CHANGES_REFUSED")`, syncTimeout)
	a2.waitJS("lastError in the other tab", `db.sync.state.lastError && db.sync.state.lastError.code === "APPLY_CHANGES_REFUSED" && !document.getElementById("sync-issue").hidden`, syncTimeout)
	a.shot("push-refused")
	if p.refused.Load() == 0 {
		t.Fatal("the proxy refused no push")
	}

	// The relay takes pushes again: the next push (the refused one retried,
	// or the next write's, whichever the client sends) is acknowledged,
	// and the problem clears everywhere.
	p.refuse.Store(false)
	a.addTrip("Accepted", "Somewhere", "2")
	a.waitJS("lastError cleared", `!db.sync.state.lastError && db.sync.state.pending === 0`, syncTimeout)
	a.waitJS("the note gone", `document.getElementById("sync-issue").hidden && document.getElementById("sync-detail").hidden`, syncTimeout)
	a2.waitJS("lastError cleared in the other tab", `!db.sync.state.lastError && document.getElementById("sync-issue").hidden`, syncTimeout)
	a.waitStatus("synced", syncTimeout)
	bb := b.newDevice("B").open(p.URL + "?db=refused")
	bb.waitJS("the accepted trip on another device", `tripEl("Accepted")`, syncTimeout)
}
