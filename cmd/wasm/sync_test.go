//go:build !js

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/wire"
)

// TestSyncTwoTabs runs the release build in two real tabs of one browser
// profile against a real relay, with a native replica as a second device:
// only the leader tab connects; a write in the other tab reaches the relay
// through it; the second device's writes reach both tabs; closing the
// leader tab hands the connection to the other, which resumes. Both tabs
// in page mode, both in worker mode, and one of each on the same replica.
func TestSyncTwoTabs(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	for _, c := range []struct{ name, page1, page2 string }{
		{"page", "/two.html", "/two.html"},
		{"worker", "/worker.html", "/worker.html"},
		{"page and worker", "/two.html", "/worker.html"},
		{"worker and page", "/worker.html", "/two.html"},
	} {
		t.Run(c.name, func(t *testing.T) {
			syncTwoTabs(t, ctx, srv.URL, c.page1, c.page2, strings.ReplaceAll(c.name, " ", "-"))
		})
	}
}

func syncTwoTabs(t *testing.T, ctx context.Context, base, page1, page2, name string) {
	relayURL := startRelay(t)

	const schemaJSON = `{"tables": {"notes": {"columns": {"id": "text", "title": "text", "n": "integer"}}}}`
	// The second device: a native replica with its sync client.
	dev, _ := nativeDevice(t, relayURL, "notes-db", schemaJSON)

	// Tab 1 opens first and leads; tab 2 is a second tab of the same browser.
	if err := chromedp.Do(ctx); err != nil { // start the browser
		t.Fatal(err)
	}
	tab1, cancel1 := chromedp.NewContext(ctx)
	defer cancel1()
	tab2, cancel2 := chromedp.NewContext(ctx)
	defer cancel2()
	setup := `
		window.db = await Replica.open({name: "e2e-` + name + `", schema: ` + schemaJSON + `});
		window.waitFor = async (what, cond, ms = 15000) => {
			const end = Date.now() + ms;
			while (!(await cond())) { if (Date.now() > end) throw new Error("timed out waiting for " + what); await new Promise((r) => setTimeout(r, 20)); }
			return true;
		};
		window.seen = [];
		window.remoteSites = [];
		db.on("remoteChange", (e) => remoteSites.push(e.siteId));
		db.subscribe("notes", {orderBy: "n"}, (rows) => { window.seen = rows.map((r) => r.title); });
		await waitFor("the leader lock", async () => db.isLeader || document.title === "follower");
		await db.sync.connect(` + fmt.Sprintf("%q", relayURL) + `, {database: "notes-db"});
		return db.isLeader;
	`
	var lead1, lead2 bool
	run(t, tab1, base+page1, setup, &lead1)
	run(t, tab2, base+page2, `document.title = "follower";`+setup, &lead2)
	if !lead1 || lead2 {
		t.Fatalf("leaders: tab1 %v, tab2 %v", lead1, lead2)
	}
	checkMode(t, tab1, page1)
	checkMode(t, tab2, page2)
	eval := func(tab context.Context, js string) string {
		t.Helper()
		out, err := chromedp.Run(tab, chromedp.Evaluate[string]("(async () => {"+js+"})()", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%v", err)
		}
		return out
	}
	eval(tab1, `try { await waitFor("synced", async () => db.sync.state.status === "synced"); } catch (e) { throw new Error(e.message + ": " + JSON.stringify(db.sync.state)); } return "";`)
	if st := eval(tab2, `return JSON.stringify(db.sync.state);`); !strings.Contains(st, `"leader":false`) {
		t.Errorf("follower state %s", st)
	}

	// A write in the follower tab reaches the relay through the leader.
	eval(tab2, `await db.insert("notes", {id: "from-tab2", title: "tab2", n: 1}); return "";`)
	waitDev := func(id string) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := dev.Get("notes", engine.Key{id}); err == nil {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("the second device never received %s", id)
			}
		}
	}
	waitDev("from-tab2")

	// The second device's write reaches both tabs' subscriptions.
	if _, err := dev.Insert("notes", map[string]any{"id": "from-dev", "title": "dev", "n": 2}); err != nil {
		t.Fatal(err)
	}
	for _, tab := range []context.Context{tab1, tab2} {
		eval(tab, `await waitFor("the device's note", async () => seen.join() === "tab2,dev"); return "";`)
		// The leader's remoteChange and the follower's (relayed by the leader) name the device.
		if got := eval(tab, `return remoteSites.join();`); !strings.Contains(got, dev.SiteID().String()) {
			t.Errorf("remoteChange siteIds %q lack the device's %s", got, dev.SiteID())
		}
	}

	// Closing the leader tab hands the connection to tab 2, which resumes.
	start := time.Now()
	cancel1()
	eval(tab2, `await waitFor("leadership", async () => db.isLeader, 5000); return "";`)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("leadership moved after %v", d)
	}
	eval(tab2, `await waitFor("synced", async () => db.sync.state.status === "synced"); return "";`)
	if _, err := dev.Insert("notes", map[string]any{"id": "after", "title": "after", "n": 3}); err != nil {
		t.Fatal(err)
	}
	eval(tab2, `await waitFor("the note sent after the hand-over", async () => seen.join() === "tab2,dev,after"); return "";`)
	eval(tab2, `await db.insert("notes", {id: "from-new-leader", title: "x", n: 4}); return "";`)
	waitDev("from-new-leader")
	eval(tab2, `await db.close(); return "";`)
}

// TestSyncStrictCSP: under the README's strictest Content-Security-Policy
// (default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src
// 'self' and the relay), a page opens a replica, writes through the batched
// IndexedDB helper (not a fallback), syncs with a real relay, and a native
// device receives its rows.
func TestSyncStrictCSP(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	relayURL := startRelay(t)

	const schemaJSON = `{"tables": {"notes": {"columns": {"id": "text", "title": "text"}}}}`
	dev, _ := nativeDevice(t, relayURL, "csp-db", schemaJSON)

	var got struct {
		Eval    string
		Helpers int
		Commits int
		Status  string
	}
	run(t, ctx, srv.URL+"/strict.html", `
		const db = await Replica.open({name: "csp-strict", schema: `+schemaJSON+`});
		await db.sync.connect(`+fmt.Sprintf("%q", relayURL)+`, {database: "csp-db"});
		await db.transaction(async (tx) => { await tx.insert("notes", {id: "a", title: "under a strict CSP"}); await tx.insert("notes", {id: "b", title: "second"}); });
		await db.sync.pushed();
		const status = db.sync.state.status;
		await db.close();
		return {Eval: spy.eval, Helpers: spy.helpers, Commits: spy.commits, Status: status};
	`, &got)
	if got.Eval != "EvalError" {
		t.Fatalf("new Function on the strict page: %q, want EvalError (is the policy applied?)", got.Eval)
	}
	if got.Helpers != 1 || got.Commits < 1 {
		t.Errorf("the page's helper built %d Stores and ran %d commits, want 1 and at least 1", got.Helpers, got.Commits)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := dev.Query("notes", engine.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the native device holds %d rows, want the page's 2 (page status %q)", len(rows), got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkMode fails t unless the tab runs replica.wasm where its page says:
// in the page (page mode: Go's runtime is there) or in a Worker
// (/worker.html: the page never loaded wasm_exec.js).
func checkMode(t *testing.T, tab context.Context, page string) {
	t.Helper()
	inPage, err := chromedp.Run(tab, chromedp.Evaluate[bool]("typeof Go === 'function'"))
	if err != nil {
		t.Fatal(err)
	}
	if want := !strings.Contains(page, "worker"); inPage != want {
		t.Fatalf("%s: Go's runtime in the page %v, want %v", page, inPage, want)
	}
}

// startRelay starts a relay on loopback (bbolt in a temporary directory,
// no fsync) that pages of 127.0.0.1 may connect to, stopped at the end of
// the test, and returns its /sync URL.
func startRelay(t *testing.T) string {
	t.Helper()
	rs, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, OriginPatterns: []string{"127.0.0.1:*"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rs.Handler())
	t.Cleanup(func() { rs.Close(); hs.Close() })
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"
}

// nativeDevice opens a native replica (memkv) with schemaJSON, the schema
// in the form Replica.open takes, and connects its sync client to
// database on relayURL; both close at the end of the test.
func nativeDevice(t *testing.T, relayURL, database, schemaJSON string) (*engine.Engine, *client.Client) {
	t.Helper()
	schema, err := wire.ParseSchema([]byte(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(dev, client.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { cl.Close(); dev.Close() })
	if err := cl.Connect(relayURL, database, ""); err != nil {
		t.Fatal(err)
	}
	return dev, cl
}
