//go:build js && wasm

package jsbridge

import (
	"sync"
	"sync/atomic"
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// shiftedClock is the system clock moved ahead by a shift the test sets.
type shiftedClock struct{ shift atomic.Int64 }

func (c *shiftedClock) Now() uint64 { return uint64(time.Now().UnixMilli() + c.shift.Load()) }

// TestRetentionHorizonOption: Replica.open's retentionHorizonMs is the
// horizon of the replica's retention pass (engine.Options.Retention): a
// change held (an unknown table) two minutes ago is dropped by a replica
// opened with one minute, kept by one with the default 30 days.
func TestRetentionHorizonOption(t *testing.T) {
	clock := &shiftedClock{}
	engineOptionsHook = func(o *engine.Options) { o.Clock = clock }
	var mu sync.Mutex
	held := map[*db]int{}
	pruneHook = func(d *db, res engine.PruneResult, err error) {
		if err != nil {
			t.Errorf("prune: %v", err)
		}
		mu.Lock()
		held[d] += res.Held
		mu.Unlock()
	}
	t.Cleanup(func() { engineOptionsHook, pruneHook = nil, nil })

	short := dbName(t)
	t.Cleanup(func() { deleteIDB(short) })
	dShort := dbOf(t, openDBOpts(t, short, testSchema, "retentionHorizonMs: 60000"))
	dDefault := dbOf(t, openT(t))
	for _, d := range []*db{dShort, dDefault} {
		heldBatch(t, d, model.SiteID{4, 4}, heldCell{"ghosts", textKey("g"), "id", model.Text("g")})
	}
	clock.shift.Store((2 * time.Minute).Milliseconds())
	for _, d := range []*db{dShort, dDefault} {
		d.pruneOnce()
	}
	mu.Lock()
	defer mu.Unlock()
	if held[dShort] != 1 || held[dDefault] != 0 {
		t.Fatalf("held changes dropped two minutes later: %d with a one-minute horizon (want 1), %d with the default (want 0)", held[dShort], held[dDefault])
	}
}

// TestOpenConfigOptions: retentionHorizonMs and batchSize are checked at
// open; batchSize becomes the sync client's push limit (changes per
// apply_changes).
func TestOpenConfigOptions(t *testing.T) {
	for _, bad := range []struct{ opt, frag string }{
		{"retentionHorizonMs: 59999", "retentionHorizonMs must be a whole number of milliseconds from 60000"},
		{"retentionHorizonMs: 1.5e12", "retentionHorizonMs"},
		{"retentionHorizonMs: 3600000.5", "retentionHorizonMs"},
		{`retentionHorizonMs: "1h"`, "retentionHorizonMs must be a number"},
		{"batchSize: 0", "batchSize must be a whole number of changes from 1 to 100000"},
		{"batchSize: 100001", "batchSize"},
		{"batchSize: 2.5", "batchSize"},
		{`durability: "always"`, `options.durability must be "strict", "relaxed" or "default"`},
		{"durability: true", "durability"},
	} {
		opts := jsv("{name: " + jsString(dbName(t)) + ", schema: " + testSchema + ", " + bad.opt + "}")
		mustReject(t, js.Global().Get("Replica").Call("open", opts), "INVALID_ARGUMENT", bad.frag)
	}
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	d := dbOf(t, openDBOpts(t, name, testSchema, "retentionHorizonMs: 3600000, batchSize: 50"))
	if d.batch != 50 {
		t.Fatalf("batchSize 50 gave push limit %d", d.batch)
	}
}

// openDBOpts is openDB with more options (a JS object literal's members).
func openDBOpts(t testing.TB, name, schema, more string) js.Value {
	t.Helper()
	opts := jsv("{name: " + jsString(name) + ", schema: " + schema + ", " + more + "}")
	db := must(t, js.Global().Get("Replica").Call("open", opts))
	t.Cleanup(func() { await(db.Call("close")) })
	return db
}

// TestDurabilityOption: Replica.open's durability: "strict" opens every
// IndexedDB transaction that writes with {durability: "strict"} (seen by
// wrapping IDBDatabase.prototype.transaction), so a write's promise
// resolves only once the browser has flushed it to the disk.
func TestDurabilityOption(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDBOpts(t, name, testSchema, `durability: "strict"`)
	spy := jsfn("", `const proto = IDBDatabase.prototype, orig = proto.transaction, seen = [];
		proto.transaction = function (names, mode, options) {
			if (mode === "readwrite") seen.push(options && options.durability || "none");
			return orig.apply(this, arguments);
		};
		return [seen, () => { proto.transaction = orig; }];`).Invoke()
	defer spy.Index(1).Invoke()
	must(t, db.Call("insert", "items", jsv(`{id: "a", n: 1}`)))
	must(t, db.Call("transaction", asyncfn("tx", `await tx.insert("items", {id: "b"}); await tx.update("items", "a", {n: 2});`)))
	seen := spy.Index(0)
	if seen.Length() < 2 {
		t.Fatalf("%d read-write transactions seen, want at least 2", seen.Length())
	}
	for i := 0; i < seen.Length(); i++ {
		if d := seen.Index(i).String(); d != "strict" {
			t.Fatalf("read-write transaction %d opened with durability %q, want strict", i, d)
		}
	}
}
