//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

const sealedSchemaJSON = `{"tables": {"coffer": {"columns": {"id": "text", "caption": "text", "n": "integer", "photo": "blob"}}}}`

// sealedDevice is a native replica syncing a sealed database with
// seal.Keyring (crypto/aes), the browser's peer in these tests.
type sealedDevice struct {
	eng *engine.Engine
	cl  *client.Client
}

func newSealedDevice(t *testing.T, relayURL, database string, s seal.Sealer, checkpointChanges int) *sealedDevice {
	t.Helper()
	schema, err := wire.ParseSchema([]byte(sealedSchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(eng, client.Options{Sealer: s, CheckpointChanges: checkpointChanges, BackoffBase: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { cl.Close(); eng.Close() })
	if err := cl.Connect(relayURL, database, ""); err != nil {
		t.Fatal(err)
	}
	return &sealedDevice{eng: eng, cl: cl}
}

func (d *sealedDevice) insert(t *testing.T, id, caption string, n int) {
	t.Helper()
	if _, err := d.eng.Insert("coffer", map[string]any{"id": id, "caption": caption, "n": n, "photo": []byte("photo-bytes-" + id)}); err != nil {
		t.Fatal(err)
	}
}

// wait waits until the device holds row id with caption.
func (d *sealedDevice) wait(t *testing.T, id, caption string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := d.eng.Get("coffer", engine.Key{id}); err == nil && r["caption"].Text() == caption {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the native device never received %s (%q)", id, caption)
		}
	}
}

func keyring(t *testing.T, current []byte, older ...[]byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKey(current)
	if err != nil {
		t.Fatal(err)
	}
	var ks []seal.Key
	for _, o := range older {
		ko, err := seal.NewKey(o)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, ko)
	}
	r, err := seal.NewKeyring(k, ks...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// jsBytes is a JavaScript expression for a Uint8Array of b.
func jsBytes(b []byte) string {
	return `Uint8Array.from(` + fmt.Sprintf("%q", hex.EncodeToString(b)) + `.match(/../g), (h) => parseInt(h, 16))`
}

// sealedSetup opens replica name in a page and defines waitFor, seen
// (captions by n, kept by a subscription) and errs (lastError codes seen).
func sealedSetup(name string) string {
	return `
		window.db = await Replica.open({name: ` + fmt.Sprintf("%q", name) + `, schema: ` + sealedSchemaJSON + `});
		window.waitFor = async (what, cond, ms = 20000) => {
			const end = Date.now() + ms;
			while (!(await cond())) { if (Date.now() > end) throw new Error("timed out waiting for " + what + ": " + JSON.stringify(db.sync.state)); await new Promise((r) => setTimeout(r, 20)); }
			return true;
		};
		window.seen = [];
		window.errs = []; // lastError codes, one per report (by its time)
		const ats = new Set();
		db.on("syncState", (s) => { if (s.lastError && !ats.has(s.lastError.at)) { ats.add(s.lastError.at); errs.push(s.lastError.code); } });
		db.subscribe("coffer", {orderBy: "n"}, (rows) => { window.seen = rows.map((r) => r.caption); });
		await waitFor("the leader lock", async () => db.isLeader);
		return true;
	`
}

// TestSyncSealed runs the release build in headless Chromium against a
// real relay with a native device (seal.Keyring, crypto/aes): one sealed
// database, both directions converge, the new browser device bootstraps
// from the native device's sealed checkpoint; the relay's files hold none
// of the plaintext; a wrong key (DECRYPT_FAILED) applies nothing and does
// not loop, the right key then applies everything; a rotation (native
// first, then the browser given the new key with the old as oldKeys);
// a passphrase gives both sides the same key; a connect without a key to
// the sealed database stops with SEALED_MISMATCH.
func TestSyncSealed(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	dataDir := t.TempDir()
	rs, err := relay.New(relay.Config{DataDir: dataDir, Auth: relay.AllowAll, NoSync: true, OriginPatterns: []string{"127.0.0.1:*"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rs.Handler())
	t.Cleanup(func() { rs.Close(); hs.Close() })
	relayURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"
	metric := func(name string) string {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, name+" ") {
				return strings.TrimPrefix(l, name+" ")
			}
		}
		return "0"
	}

	k1 := bytes.Repeat([]byte{0x11}, 32)
	k2 := bytes.Repeat([]byte{0x22}, 32)
	// The native device writes first; a second one, receiving its
	// writes, uploads a sealed checkpoint after 3 ChangeSets.
	dev := newSealedDevice(t, relayURL, "vault-db", keyring(t, k1), -1)
	up := newSealedDevice(t, relayURL, "vault-db", keyring(t, k1), 3)
	for i := 1; i <= 4; i++ {
		dev.insert(t, fmt.Sprintf("d%d", i), fmt.Sprintf("native caption %d", i), i)
	}
	up.wait(t, "d4", "native caption 4")
	for end := time.Now().Add(20 * time.Second); metric(`replica_relay_sealed_checkpoints_total{result="stored"}`) == "0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the native device uploaded no sealed checkpoint")
		}
	}

	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var ok bool
	run(t, tab, srv.URL+"/two.html", sealedSetup("browser-a"), &ok)
	eval := func(tab context.Context, js string) string {
		t.Helper()
		out, err := chromedp.Run(tab, chromedp.Evaluate[string]("(async () => {"+js+"})()", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%v", err)
		}
		return out
	}
	url := fmt.Sprintf("%q", relayURL)

	// Native -> browser: a new device, bootstrapped from the sealed
	// checkpoint and the log after it; the key given as 32 bytes.
	eval(tab, `await db.sync.connect(`+url+`, {database: "vault-db", key: `+jsBytes(k1)+`});
		await waitFor("the native rows", async () => seen.join() === "native caption 1,native caption 2,native caption 3,native caption 4"); return "";`)
	if got := metric(`replica_relay_sealed_checkpoints_total{result="served"}`); got == "0" {
		t.Error("the browser did not bootstrap from the sealed checkpoint (none served)")
	}
	// Browser -> native, blobs included.
	eval(tab, `await db.insert("coffer", {id: "b1", caption: "browser caption 1", n: 10, photo: new TextEncoder().encode("browser-photo-bytes")}); return "";`)
	dev.wait(t, "b1", "browser caption 1")
	if r, _ := dev.eng.Get("coffer", engine.Key{"b1"}); !bytes.Equal(r["photo"].Blob(), []byte("browser-photo-bytes")) {
		t.Errorf("the browser's blob arrived as %q", r["photo"])
	}
	dev.insert(t, "d5", "native caption 5", 5)
	eval(tab, `await waitFor("d5", async () => seen.includes("native caption 5")); return "";`)
	if got := eval(tab, `return String(db.sync.state.lastError ? db.sync.state.lastError.code : "")`); got != "" {
		t.Errorf("lastError %s after a clean sealed sync", got)
	}

	// The relay's files hold ciphertext only.
	time.Sleep(200 * time.Millisecond)
	secrets := []string{"coffer", "caption", "native caption", "browser caption", "browser-photo-bytes", "photo-bytes-d1"}
	scanned := 0
	_ = filepath.WalkDir(dataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned += len(b)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("relay file %s contains %q", filepath.Base(p), s)
			}
		}
		return nil
	})
	if scanned == 0 {
		t.Error("the relay's data directory is empty")
	}

	// A wrong key (a passphrase that is not the database's) in a second
	// replica: DECRYPT_FAILED, nothing applied, no retry loop; then the
	// right key applies everything that was held.
	tab2, cancel2 := chromedp.NewContext(ctx)
	defer cancel2()
	run(t, tab2, srv.URL+"/two.html", sealedSetup("browser-b"), &ok)
	eval(tab2, `await db.sync.connect(`+url+`, {database: "vault-db", key: {passphrase: "not the key"}});
		await waitFor("DECRYPT_FAILED", async () => errs.includes("DECRYPT_FAILED"));
		return "";`)
	time.Sleep(1500 * time.Millisecond)
	if got := eval(tab2, `return JSON.stringify({rows: seen.length, errs: errs.length, status: db.sync.state.status, code: db.sync.state.lastError && db.sync.state.lastError.code})`); got != `{"rows":0,"errs":1,"status":"syncing","code":"DECRYPT_FAILED"}` {
		t.Errorf("with a wrong key: %s, want no rows, one report, syncing, DECRYPT_FAILED", got)
	}
	eval(tab2, `await db.sync.connect(`+url+`, {database: "vault-db", key: `+jsBytes(k1)+`});
		await waitFor("every row", async () => seen.length === 6);
		await waitFor("lastError cleared", async () => !db.sync.state.lastError); return "";`)

	// Rotation: the native device seals with k2 from now on (k1 kept to
	// open older envelopes). The browser, given only k1, holds the new
	// envelope (DECRYPT_FAILED); given k2 with k1 as oldKeys, it applies
	// it, and what it writes is sealed with k2, which the native opens.
	if err := dev.cl.SetSealer(keyring(t, k2, k1)); err != nil {
		t.Fatal(err)
	}
	dev.insert(t, "d6", "after rotation", 6)
	eval(tab, `errs.length = 0; await waitFor("DECRYPT_FAILED after the rotation", async () => errs.includes("DECRYPT_FAILED")); return "";`)
	if got := eval(tab, `return String(seen.includes("after rotation"))`); got != "false" {
		t.Error("applied an envelope sealed with a key it was not given")
	}
	eval(tab, `const k2 = await Replica.importKey(`+jsBytes(k2)+`);
		window.k2id = k2.keyId;
		await db.sync.connect(`+url+`, {database: "vault-db", key: k2, oldKeys: [`+jsBytes(k1)+`]});
		await waitFor("the rotated row", async () => seen.includes("after rotation"));
		await db.insert("coffer", {id: "b2", caption: "browser after rotation", n: 20});
		return "";`)
	dev.wait(t, "b2", "browser after rotation")
	k2key, _ := seal.NewKey(k2)
	if got := eval(tab, `return k2id`); got != k2key.ID().String() {
		t.Errorf("browser key id %s, native %s", got, k2key.ID())
	}
	// A native device given only the new key opens what the browser sealed
	// after the rotation (and is held before it: DECRYPT_FAILED is its own
	// test in client).
	eval(tab2, `await db.sync.connect(`+url+`, {database: "vault-db", key: `+jsBytes(k2)+`, oldKeys: [`+jsBytes(k1)+`]});
		await waitFor("the browser's post-rotation row in the other replica", async () => seen.includes("browser after rotation")); return "";`)

	// A passphrase gives the browser and the native device the same key.
	raw, err := seal.PassphraseKey("correct horse battery staple", "pass-db")
	if err != nil {
		t.Fatal(err)
	}
	pdev := newSealedDevice(t, relayURL, "pass-db", keyring(t, raw), -1)
	pdev.insert(t, "p1", "passphrase native", 1)
	tab3, cancel3 := chromedp.NewContext(ctx)
	defer cancel3()
	run(t, tab3, srv.URL+"/two.html", sealedSetup("browser-c"), &ok)
	eval(tab3, `await db.sync.connect(`+url+`, {database: "pass-db", key: {passphrase: "correct horse battery staple"}});
		await waitFor("the native row", async () => seen.join() === "passphrase native");
		await db.insert("coffer", {id: "p2", caption: "passphrase browser", n: 2}); return "";`)
	pdev.wait(t, "p2", "passphrase browser")

	// No key for a sealed database: SEALED_MISMATCH, syncing stops.
	eval(tab3, `await db.sync.connect(`+url+`, {database: "vault-db"});
		await waitFor("SEALED_MISMATCH", async () => db.sync.state.status === "error" && db.sync.state.error.code === "SEALED_MISMATCH"); return "";`)
	for _, tb := range []context.Context{tab, tab2, tab3} {
		eval(tb, `await db.close(); return "";`)
	}
}

// relayClock is a relay clock the test moves by hand (ms since the epoch).
type relayClock struct{ ms atomic.Uint64 }

func (c *relayClock) Now() uint64 { return c.ms.Load() }

// TestSyncSealedBrowserCheckpoint runs the release build in headless
// Chromium: a sealed database written only from a browser. Its leader
// uploads a sealed checkpoint under the default policy
// (client.DefaultCheckpointChanges ChangeSets past the relay's newest,
// sealed with WebCrypto outside IndexedDB transactions; a native device
// that uploads none writes one row); past the
// retention the relay prunes the sealed log below it; a new native device
// then bootstraps from it plus the log after it, and holds every row.
func TestSyncSealedBrowserCheckpoint(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	clock := &relayClock{}
	clock.ms.Store(uint64(time.Now().UnixMilli()))
	rs, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, OriginPatterns: []string{"127.0.0.1:*"},
		Clock: clock, Retention: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rs.Handler())
	t.Cleanup(func() { rs.Close(); hs.Close() })
	relayURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"
	metric := func(name string) float64 {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	waitMetric := func(what, name string) {
		t.Helper()
		for end := time.Now().Add(60 * time.Second); metric(name) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s (%s)", what, name)
			}
		}
	}
	key := bytes.Repeat([]byte{0x33}, 32)
	n := client.DefaultCheckpointChanges

	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var ok bool
	run(t, tab, srv.URL+"/two.html", sealedSetup("browser-ckpt"), &ok)
	eval := func(js string) string {
		t.Helper()
		out, err := chromedp.Run(tab, chromedp.Evaluate[string]("(async () => {"+js+"})()", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%v", err)
		}
		return out
	}
	// n transactions, n ChangeSets in the relay's log: the leader
	// uploads a checkpoint at its cursor once caught up.
	eval(fmt.Sprintf(`await db.sync.connect(%q, {database: "browser-only", key: %s});
		await waitFor("synced", async () => db.sync.state.status === "synced");
		for (let i = 1; i <= %d; i++) await db.insert("coffer", {id: "r" + i, caption: "browser row " + i, n: i, photo: new TextEncoder().encode("browser-photo-" + i)});
		return "";`, relayURL, jsBytes(key), n))
	// A native device that uploads none writes a row after them: the
	// browser, whose cursor stays where its last pull left it while it
	// only pushes (until apply_result carries the log position), pulls to
	// catch up, then uploads.
	w := newSealedDevice(t, relayURL, "browser-only", keyring(t, key), -1)
	w.wait(t, fmt.Sprintf("r%d", n), fmt.Sprintf("browser row %d", n))
	w.insert(t, "native", "native row", 0)
	eval(`await waitFor("the native row", async () => seen.includes("native row")); return "";`)
	waitMetric("the browser's sealed checkpoint", `replica_relay_sealed_checkpoints_total{result="stored"}`)
	if got := eval(`return String(db.sync.state.lastError ? db.sync.state.lastError.code : "")`); got != "" {
		t.Errorf("lastError %s after the browser's upload", got)
	}

	// Past the retention, the relay prunes the log below the checkpoint.
	clock.ms.Add(uint64(2 * time.Hour / time.Millisecond))
	if err := rs.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := metric("replica_relay_arrivals_pruned_total"); p < float64(n)/2 {
		t.Fatalf("the relay pruned %v arrivals below the browser's checkpoint", p)
	}
	eval(fmt.Sprintf(`await db.insert("coffer", {id: "after", caption: "after the checkpoint", n: %d}); return "";`, n+1))

	// A new native device bootstraps from the browser's checkpoint.
	dev := newSealedDevice(t, relayURL, "browser-only", keyring(t, key), -1)
	dev.wait(t, "after", "after the checkpoint")
	dev.wait(t, "r1", "browser row 1")
	dev.wait(t, fmt.Sprintf("r%d", n), fmt.Sprintf("browser row %d", n))
	if r, _ := dev.eng.Get("coffer", engine.Key{"r7"}); !bytes.Equal(r["photo"].Blob(), []byte("browser-photo-7")) {
		t.Errorf("the checkpoint's blob arrived as %q", r["photo"])
	}
	if metric(`replica_relay_sealed_checkpoints_total{result="served"}`) == 0 {
		t.Error("the native device did not bootstrap from the browser's checkpoint (none served)")
	}
	if c, err := dev.eng.Count("coffer", nil); err != nil || c != n+2 {
		t.Errorf("the new device holds %d rows (%v), want %d", c, err, n+2)
	}
	eval(`await db.close(); return "";`)
}
