//go:build !js

package relay

import (
	"compress/gzip"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

func TestSnapshotRequiredAfterPruning(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	insertStops(t, rep, "old", 2)
	old := localSets(t, rep) // cursors 1…3
	a.apply("apply-1", old)

	// Within retention nothing is pruned.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := connect(t, r, "acme")
	if all, cur, _ := b.pullAll(0); cur != 3 || len(all) != 3 {
		t.Fatalf("before the horizon: cursor %d with %d ChangeSets, want 3 and 3", cur, len(all))
	}

	clock.Advance(engine.DefaultRetention + 24*time.Hour)
	a.apply("apply-2", insertStops(t, rep, "new", 1)) // cursor 4, arrived now
	recvType[*wire.PushChanges](b)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, since := range []uint64{0, 2} {
		b.send(&wire.GetChanges{Since: since})
		e := b.expectError(wire.CodeSnapshotRequired)
		if !strings.Contains(e.Message, "pruned") {
			t.Fatalf("SNAPSHOT_REQUIRED message %q does not say the log was pruned", e.Message)
		}
	}
	b.ping() // not fatal
	ch := b.getChanges(3)
	if ch.Cursor != 4 || len(ch.ChangeSets) != 1 || ch.More {
		t.Fatalf("pull from the oldest retained cursor: cursor %d, %d ChangeSets, more %v", ch.Cursor, len(ch.ChangeSets), ch.More)
	}
	// A snapshot still has everything, and the client resumes from its
	// cursor.
	s := collectSnapshot(t, b, &wire.GetSnapshot{})
	if s.header.Cursor != 4 || s.rows["stops"] != 3 {
		t.Fatalf("snapshot after pruning: cursor %d, stops %d", s.header.Cursor, s.rows["stops"])
	}
	// The dedup index went with the log: an old ChangeSet re-sent now is a
	// new arrival (the merged replica skips it).
	res := a.apply("apply-3", old[1:2])
	if res.Applied != 0 {
		t.Fatalf("re-sent old ChangeSet changed the merged replica: %+v", res.ApplyResult)
	}
	if p := recvType[*wire.PushChanges](b); p.Cursor != 5 {
		t.Fatalf("re-sent old ChangeSet got cursor %d, want 5", p.Cursor)
	}

	// The pruned position survives a restart.
	dir := r.dir
	a.readAll()
	b.readAll()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := startRelay(t, Config{DataDir: dir, Clock: clock})
	c := connect(t, r2, "acme")
	c.send(&wire.GetChanges{Since: 1})
	c.expectError(wire.CodeSnapshotRequired)
	if all, cur, _ := c.pullAll(3); cur != 5 || len(all) != 2 {
		t.Fatalf("after restart: cursor %d with %d ChangeSets, want 5 and 2", cur, len(all))
	}
}

func TestRestartKeepsDataAndCursors(t *testing.T) {
	needFiles(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme:trips", rep)
	first := dial(t, r, nil)
	ack := first.handshake("acme:trips", "")
	insertStops(t, rep, "t", 3)
	sets := localSets(t, rep)
	a.apply("apply-1", sets)
	other := newReplica(t, nil)
	beta := connectAs(t, r, "beta", other)
	beta.apply("apply-1", localSets(t, other))
	recvType[*wire.PushChanges](first)
	for _, c := range []*client{a, first, beta} {
		c.readAll() // answer the relay's close at once
	}
	if err := r.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if !slices.Equal(files, []string{filepath.Join(dir, "acme%3Atrips.db"), filepath.Join(dir, "beta.db")}) {
		t.Fatalf("data directory holds %v", files)
	}

	r2 := startRelay(t, Config{DataDir: dir})
	b := dial(t, r2, nil)
	ack2 := b.handshake("acme:trips", "")
	if ack2.ServerSiteID != ack.ServerSiteID {
		t.Fatalf("serverSiteId changed across a restart: %s then %s", ack.ServerSiteID, ack2.ServerSiteID)
	}
	all, cur, _ := b.pullAll(0)
	if cur != uint64(len(sets)) || !slices.Equal(txIDs(all), txIDs(sets)) {
		t.Fatalf("after restart: cursor %d and %d ChangeSets, want %d in push order", cur, len(all), len(sets))
	}
	// The cursor continues, and the dedup index survived.
	a2 := connectAs(t, r2, "acme:trips", rep)
	if res := a2.apply("apply-2", sets); res.Applied != 0 {
		t.Fatalf("re-sent batch after restart applied %d changes", res.Applied)
	}
	b.ping()
	a2.apply("apply-3", insertStops(t, rep, "t", 1))
	if p := recvType[*wire.PushChanges](b); p.Cursor != uint64(len(sets)+1) {
		t.Fatalf("first push after restart has cursor %d, want %d", p.Cursor, len(sets)+1)
	}
}

func TestHealthMetricsAndWeb(t *testing.T) {
	web := t.TempDir()
	mustWrite(t, filepath.Join(web, "index.html"), "<!doctype html><title>demo</title>")
	mustWrite(t, filepath.Join(web, "replica.wasm"), "\x00asm\x01\x00\x00\x00")
	mustWrite(t, filepath.Join(web, "app.js"), "console.log('plain')")
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("\x00asm\x01\x00\x00\x00"))
	_ = zw.Close()
	mustWrite(t, filepath.Join(web, "replica.wasm.gz"), gz.String())

	r := startRelay(t, Config{WebDir: web})
	rep := newReplica(t, nil)
	c := connectAs(t, r, "acme", rep)
	c.apply("apply-1", localSets(t, rep))
	c.send(&wire.GetChanges{Since: 99})
	c.expectError(wire.CodeSnapshotRequired)

	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()
	get := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", r.url(path), nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp, readAllBody(t, resp.Body)
	}
	if resp, body := get("/healthz"); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
	resp, body := get("/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		"replica_relay_connections 1",
		`replica_relay_messages_received_total{type="handshake"} 1`,
		`replica_relay_messages_received_total{type="apply_changes"} 1`,
		`replica_relay_messages_sent_total{type="apply_result"} 1`,
		`replica_relay_errors_total{code="SNAPSHOT_REQUIRED"} 1`,
		"replica_relay_changes_applied_total 2",
		"replica_relay_changesets_stored_total 1",
		"replica_relay_apply_duration_seconds_count 1",
		"replica_relay_databases_open 1",
		"replica_relay_received_bytes_total",
		"replica_relay_sent_bytes_total",
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if resp, body := get("/"); resp.StatusCode != 200 || !strings.Contains(body, "<title>demo</title>") {
		t.Fatalf("/: %d %q", resp.StatusCode, body)
	}
	resp, body = get("/replica.wasm")
	if resp.Header.Get("Content-Type") != "application/wasm" || body != "\x00asm\x01\x00\x00\x00" || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("/replica.wasm: %q %q %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), body)
	}
	resp, body = get("/replica.wasm", "Accept-Encoding", "gzip, deflate")
	if resp.Header.Get("Content-Type") != "application/wasm" || resp.Header.Get("Content-Encoding") != "gzip" || body != gz.String() {
		t.Fatalf("/replica.wasm with gzip: %q %q, %d bytes", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), len(body))
	}
	if resp, _ := get("/app.js", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("/app.js without a .gz sibling: %q %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"))
	}
	if resp, _ := get("/missing.js"); resp.StatusCode != 404 {
		t.Fatalf("/missing.js: %d", resp.StatusCode)
	}
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "beta")
	idle := dial(t, r, nil) // no handshake yet
	insertStops(t, rep, "t", 2000)
	sets := localSets(t, rep)

	// An apply in flight when the relay stops either lands whole and is
	// acknowledged, or is not handled at all.
	a.send(&wire.ApplyChanges{RequestID: "apply-1", ChangeSets: sets})
	inA, inB, inIdle := a.readAll(), b.readAll(), idle.readAll()
	time.Sleep(5 * time.Millisecond)
	start := time.Now()
	if err := r.stop(); err != nil {
		t.Fatalf("Serve returned %v on shutdown", err)
	}
	if d := time.Since(start); d > 4*time.Second { // not the 5 s of an unanswered close
		t.Errorf("shutdown with responsive clients took %v", d)
	}
	acked := false
	for f := range inA {
		if f.err != nil {
			if websocket.CloseStatus(f.err) != websocket.StatusGoingAway {
				t.Fatalf("apply in flight: connection ended with %v, want close 1001", f.err)
			}
			break
		}
		m, _ := wire.Decode(f.frame)
		res, ok := m.(*wire.ApplyResult)
		if acked || !ok || res.RequestID != "apply-1" || res.Transactions != len(sets) {
			t.Fatalf("before the close: %s", f.frame)
		}
		acked = true
	}
	for _, in := range []<-chan frameOrErr{inB, inIdle} {
		f := <-in
		if f.err == nil || websocket.CloseStatus(f.err) != websocket.StatusGoingAway {
			t.Fatalf("idle connection got %q, %v; want close 1001", f.frame, f.err)
		}
	}

	// The database files were closed: they open at once. (On another
	// storage, TestStorage's, its pool stays open until the test ends.)
	for _, name := range []string{"acme.db", "beta.db"} {
		if TestStorage != nil {
			break
		}
		st, err := boltkv.Open(filepath.Join(dir, name), storeBuckets, &boltkv.Options{Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s still held after shutdown: %v", name, err)
		}
		_ = st.Close()
	}
	// No goroutine of the relay is left.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before && TestStorage == nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after shutdown, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}

	// What was acknowledged is there after a restart; otherwise nothing.
	r2 := startRelay(t, Config{DataDir: dir})
	c := connect(t, r2, "acme")
	want := uint64(0)
	if acked {
		want = uint64(len(sets))
	}
	if _, cur, _ := c.pullAll(0); cur != want {
		t.Fatalf("after restart the cursor is %d, want %d (acknowledged: %v)", cur, want, acked)
	}
}

func TestIdleTimeout(t *testing.T) {
	r := startRelay(t, Config{IdleTimeout: 500 * time.Millisecond})
	quiet := connect(t, r, "acme")
	chatty := connect(t, r, "acme")
	start := time.Now()
	for time.Since(start) < 1200*time.Millisecond {
		chatty.ping()
		time.Sleep(100 * time.Millisecond)
	}
	_, err := quiet.read(recvTimeout)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("quiet connection: %v, want close 1001", err)
	}
	var ce websocket.CloseError
	if !asCloseError(err, &ce) || ce.Reason != "idle timeout" {
		t.Fatalf("close reason %q, want \"idle timeout\"", ce.Reason)
	}
	chatty.ping()
}

func asCloseError(err error, ce *websocket.CloseError) bool {
	for err != nil {
		if c, ok := err.(websocket.CloseError); ok {
			*ce = c
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func TestIdleDatabaseIsClosedAndReopened(t *testing.T) {
	r := startRelay(t, Config{DatabaseIdleClose: 100 * time.Millisecond})
	rep := newReplica(t, nil)
	c := connectAs(t, r, "acme", rep)
	c.apply("apply-1", localSets(t, rep))
	c.ws.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.srv.dbMu.Lock()
		n := len(r.srv.dbs)
		r.srv.dbMu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an unused database was not closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := boltkv.Open(filepath.Join(r.dir, "acme.db"), storeBuckets, &boltkv.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("database file still held: %v", err)
	}
	_ = st.Close()
	if ch := connect(t, r, "acme").getChanges(0); ch.Cursor != 1 {
		t.Fatalf("reopened database at cursor %d, want 1", ch.Cursor)
	}
}

func TestSlowReaderDoesNotStallOthers(t *testing.T) {
	r := startRelay(t, Config{SendQueue: 8, WriteTimeout: time.Minute})
	rep := newReplica(t, nil)
	pusher := connectAs(t, r, "acme", rep)
	fast := connect(t, r, "acme")
	slow := connect(t, r, "acme") // never reads until the end
	pusher.apply("apply-0", localSets(t, rep))
	recvType[*wire.PushChanges](fast)

	const batches = 300
	name := strings.Repeat("n", 60<<10) // ~64 KiB frames: ~19 MiB for slow to not read
	got := make(chan uint64, batches)
	go func() {
		defer close(got)
		for {
			b, err := fast.read(30 * time.Second)
			if err != nil {
				return
			}
			m, _ := wire.Decode(b)
			if p, ok := m.(*wire.PushChanges); ok {
				got <- p.Cursor
				if p.Cursor == batches+1 {
					return
				}
			}
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < batches; i++ {
		cs, err := rep.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("stops", map[string]any{"trip": "t", "pos": i, "name": name})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		pusher.apply("apply", []model.ChangeSet{*cs})
		if time.Now().After(deadline) {
			t.Fatalf("pushing stalled: %d of %d batches in 30 s", i, batches)
		}
	}
	want := uint64(2)
	for c := range got {
		if c != want {
			t.Fatalf("fast reader got push cursor %d, want %d", c, want)
		}
		want++
	}
	if want != batches+2 {
		t.Fatalf("fast reader got pushes up to cursor %d, want %d", want-1, batches+1)
	}
	// The slow connection was cut (1013) instead of being waited for; it
	// got some pushes, not all.
	n := 0
	for {
		b, err := slow.read(recvTimeout)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				t.Fatalf("slow reader ended with %v after %d frames, want close 1013", err, n)
			}
			break
		}
		n++
		if m, _ := wire.Decode(b); m == nil || m.Type() != wire.TypePushChanges {
			t.Fatalf("slow reader got %s", b)
		}
	}
	if n >= batches {
		t.Fatalf("slow reader got all %d pushes: its queue never overflowed, the test proves nothing", n)
	}
	t.Logf("slow reader got %d of %d pushes before it was cut", n, batches+1)
}
