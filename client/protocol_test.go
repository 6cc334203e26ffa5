//go:build !js

package client

import (
	"errors"
	"strconv"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// TestLifecycleBootstrap: a brand-new replica connects, goes
// disconnected → connecting → syncing → synced, bootstraps from a
// snapshot (progress reported, the header's cursor persisted), pulls from
// that cursor, and only then pushes (its schema migrations).
func TestLifecycleBootstrap(t *testing.T) {
	relay := newScriptRelay(t)
	src, _ := newEngine(t)
	for i := range 5 {
		insert(t, src, string(rune('a'+i)), "from the relay")
	}
	db, _ := newEngine(t)
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	if st := c.State(); st.State != Disconnected {
		t.Fatalf("new client in %s", st.State)
	}
	if err := c.Connect(relay.url, "db1", "tok"); err != nil {
		t.Fatal(err)
	}
	p := relay.accept(t)
	h := p.ack(t)
	if h.ProtocolVersion != wire.ProtocolVersion || h.DatabaseID != "db1" || h.Token != "tok" || h.SiteID != db.SiteID() {
		t.Fatalf("handshake %+v", h)
	}
	expect[*wire.GetSnapshot](t, p)
	if st := c.State(); st.State != Syncing || st.Snapshot == nil {
		t.Fatalf("while bootstrapping: %+v", st)
	}
	p.streamSnapshot(t, src, 17)
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 17 {
		t.Fatalf("pull after the snapshot since %d, want the header's 17", g.Since)
	}
	if got := stateOf(t, db, cursorKey(testNS)); got != "17" {
		t.Fatalf("persisted cursor %q, want 17", got)
	}
	for i := range 5 {
		if _, ok := getTitle(t, db, string(rune('a'+i))); !ok {
			t.Fatalf("row %c missing after the snapshot", 'a'+i)
		}
	}
	p.send(t, &wire.Changes{Cursor: 17})
	ev.waitState(t, Synced)
	a := expect[*wire.ApplyChanges](t, p)
	if a.RequestID != "apply-1" || len(a.ChangeSets) != 1 || len(a.ChangeSets[0].Migrations) == 0 {
		t.Fatalf("first push %+v", a)
	}

	var states []State
	var progress []engine.SnapshotProgress
	for _, e := range ev.snapshot() {
		switch e.Type {
		case StateChanged:
			states = append(states, e.Status.State)
		case SnapshotProgressed:
			progress = append(progress, e.Progress)
		}
	}
	want := []State{Connecting, Syncing, Synced}
	if len(states) != len(want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("states %v, want %v", states, want)
		}
	}
	if len(progress) < 3 || !progress[len(progress)-1].Done || progress[len(progress)-1].RowsApplied != 5 {
		t.Fatalf("snapshot progress %+v", progress)
	}
	if st := c.State(); st.State != Synced || st.Snapshot != nil || st.Err != nil {
		t.Fatalf("final status %+v", st)
	}
	c.Disconnect()
	if st := c.State(); st.State != Disconnected {
		t.Fatalf("after Disconnect: %+v", st)
	}
	p.waitClosed(t)
	// The cursor stays; a reconnect does not bootstrap again.
	if err := c.Connect(relay.url, "db1", "tok"); err != nil {
		t.Fatal(err)
	}
	p = relay.accept(t)
	if g := p.syncUp(t, 17); g.Since != 17 {
		t.Fatalf("reconnect pulled since %d", g.Since)
	}
}

// TestNoBootstrapWithOwnData: a replica with data of its own never
// bootstraps; it pulls from 0 and pushes.
func TestNoBootstrapWithOwnData(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "local")
	c := newClient(t, db, Options{})
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	if h := p.ack(t); h.Token != "" {
		t.Fatalf("token %q sent", h.Token)
	}
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 0 {
		t.Fatalf("since %d", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 0})
	a := expect[*wire.ApplyChanges](t, p)
	if n := len(a.ChangeSets); n != 2 { // migrations, the insert
		t.Fatalf("pushed %d ChangeSets", n)
	}
}

// TestVersionMismatch: a handshake_ack with another protocolVersion, or
// none, is a lasting error: the client never reconnects.
func TestVersionMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		ack  string
	}{
		{"other", `{"type":"handshake_ack","protocolVersion":` + strconv.Itoa(wire.ProtocolVersion+1) + `,"databaseId":"db1","serverSiteId":"AY86XH4RQpugDcRVbiGQ_g","connectionId":"c"}`},
		{"absent", `{"type":"handshake_ack","databaseId":"db1","serverSiteId":"AY86XH4RQpugDcRVbiGQ_g","connectionId":"c"}`},
		// A relay of version 13 (JSON ChangeSets only; version 14 sends
		// binary frames).
		{"v13", `{"type":"handshake_ack","protocolVersion":13,"databaseId":"db1","serverSiteId":"AY86XH4RQpugDcRVbiGQ_g","connectionId":"c","history":"new"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := newScriptRelay(t)
			clk := newFakeClock()
			db, _ := newEngine(t)
			c := newClient(t, db, Options{Clock: clk})
			ev := recordEvents(t, c)
			c.Connect(relay.url, "db1", "")
			p := relay.accept(t)
			expect[*wire.Handshake](t, p)
			p.sendRaw(t, []byte(tc.ack))
			e := ev.waitState(t, Error)
			if !errors.Is(e.Status.Err, ErrProtocolVersion) || !errors.Is(c.State().Err, ErrProtocolVersion) {
				t.Fatalf("error %v", e.Status.Err)
			}
			p.waitClosed(t)
			assertNoReconnect(t, relay, clk, c)
		})
	}
}

// assertNoReconnect checks that the client stays down: no timer armed, no
// connection after a long time.
func assertNoReconnect(t *testing.T, relay *scriptRelay, clk *fakeClock, c *Client) {
	t.Helper()
	waitCond(t, "the client's timers stopped", func() bool { return len(clk.activeDurations()) == 0 })
	clk.Advance(10 * BackoffMax)
	relay.noConnection(t)
	if st := c.State(); st.State != Error {
		t.Fatalf("state %s after a fatal error", st.State)
	}
}

// TestFatalErrors: an error frame with fatal set, one from a relay that
// predates the flag with a known-fatal code, and a fatal close status
// without an error frame all stop the client in the Error state.
func TestFatalErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame string // sent after the handshake, then the socket closes with status
		code  wire.ErrorCode
	}{
		{"flagged", `{"type":"error","code":"AUTH_FAILED","message":"bad token","fatal":true}`, wire.CodeAuthFailed},
		{"unflagged known code", `{"type":"error","code":"MISSING_DATABASE_ID","message":"x"}`, wire.CodeMissingDatabaseID},
		{"flagged unknown code", `{"type":"error","code":"TENANT_DELETED","message":"gone","fatal":true}`, "TENANT_DELETED"},
		{"close status only", ``, wire.CodeAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := newScriptRelay(t)
			clk := newFakeClock()
			db, _ := newEngine(t)
			c := newClient(t, db, Options{Clock: clk})
			ev := recordEvents(t, c)
			c.Connect(relay.url, "db1", "bad")
			p := relay.accept(t)
			expect[*wire.Handshake](t, p)
			if tc.frame != "" {
				p.sendRaw(t, []byte(tc.frame))
			}
			p.c.Close(wire.CloseAuthFailed, "auth")
			e := ev.waitState(t, Error)
			re := RelayError(e.Status.Err)
			if re == nil || re.Code != tc.code || !re.Fatal {
				t.Fatalf("error state with %v, want relay error %s", e.Status.Err, tc.code)
			}
			assertNoReconnect(t, relay, clk, c)
		})
	}
}

// TestTransientError: an error frame without the fatal flag is reported
// and the session goes on.
func TestTransientError(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "y")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.syncUp(t, 0)
	a := expect[*wire.ApplyChanges](t, p)
	p.send(t, &wire.Error{Code: wire.CodeUnknownMessage, Message: "what?"})
	e := ev.wait(t, "an error event", func(e Event) bool { return e.Type == ErrorReported })
	if re := RelayError(e.Err); re == nil || re.Code != wire.CodeUnknownMessage {
		t.Fatalf("reported %v", e.Err)
	}
	p.ackPush(t, a)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	if st := c.State(); st.State != Synced {
		t.Fatalf("state %s after a transient error", st.State)
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("unexpected frames %v", got)
	}
}
