//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestTransactionCommit: statements preview at once (an insert's generated
// id is usable by the next statement, reads see staged writes), nothing is
// visible outside before the callback settles, and everything commits as
// one transaction (one HLC).
func TestTransactionCommit(t *testing.T) {
	db := openT(t)
	seed := must(t, db.Call("insert", "items", jsv(`{title: "seed", n: 1}`)))
	run := asyncfn("db, seedId", `
		const seen = {};
		const out = await db.transaction(async (tx) => {
			const a = await tx.insert("items", {title: "a", n: 10});
			await tx.insert("other", {id: a.id, v: 7});
			seen.updated = await tx.update("items", seedId, {n: 2});
			seen.get = await tx.get("items", a.id);
			seen.query = (await tx.query("items", {orderBy: "n"})).map((r) => r.n);
			seen.count = await tx.count("items", {where: {n: {gte: 2}}});
			seen.outside = await db.count("items");
			await tx.delete("items", seedId);
			seen.afterDelete = await tx.get("items", seedId);
			return a.id;
		});
		seen.id = out;
		seen.after = (await db.query("items")).map((r) => r.title);
		seen.other = await db.get("other", out);
		return seen;
	`)
	seen := must(t, run.Invoke(db, seed.Get("id")))
	for _, c := range []struct{ expr, want string }{
		{"updated.n", "2"}, {"get.title", `"a"`}, {"query", "[2, 10]"}, {"count", "2"},
		{"outside", "1"}, {"afterDelete", "undefined"}, {"after", `["a"]`}, {"other.v", "7"},
	} {
		v := jsfn("s", "return s."+c.expr).Invoke(seen)
		if got := describe(v); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
	// One transaction: the insert, the other insert, the update and the
	// delete share one HLC tick.
	d := dbOf(t, db)
	sets, err := d.eng.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	last := sets[len(sets)-1]
	tables := map[string]bool{}
	for _, c := range last.Changes {
		tables[c.Table] = true
	}
	if !tables["items"] || !tables["other"] {
		t.Errorf("last transaction touched %v, want items and other in one", tables)
	}
}

// TestTransactionRollback: when the callback throws (or its promise
// rejects), nothing is written and the transaction rejects with the
// callback's own error; the tx is unusable afterwards.
func TestTransactionRollback(t *testing.T) {
	db := openT(t)
	must(t, db.Call("insert", "items", jsv(`{id: "keep", title: "keep", n: 1}`)))
	run := asyncfn("db", `
		let leaked;
		const mine = new Error("boom");
		try {
			await db.transaction(async (tx) => {
				leaked = tx;
				await tx.insert("items", {title: "b"});
				await tx.update("items", "keep", {n: 99});
				await tx.insert("other", {v: 1});
				throw mine;
			});
			return "resolved";
		} catch (e) {
			if (e !== mine) return "rejected with another error: " + e;
		}
		try { await leaked.insert("items", {title: "late"}); return "late insert worked"; }
		catch (e) { if (e.code !== "CLOSED") return "late insert: " + e.code; }
		// A statement that fails inside the callback rejects that statement;
		// if the callback rethrows, nothing is written either.
		try {
			await db.transaction(async (tx) => {
				await tx.insert("items", {title: "c"});
				await tx.insert("items", {id: "keep"});
			});
			return "duplicate committed";
		} catch (e) {
			if (e.code !== "CONFLICT") return "duplicate: " + e.code + " " + e.message;
		}
		// A statement that fails inside the callback and is caught does not
		// stop the transaction.
		await db.transaction(async (tx) => {
			try { await tx.insert("items", {n: "x"}); } catch (_) {}
			await tx.insert("items", {id: "d", title: "d"});
		});
		return (await db.query("items", {orderBy: "id"})).map((r) => r.id + ":" + r.n).join(",") + " other=" + (await db.count("other"));
	`)
	if got := must(t, run.Invoke(db)).String(); got != "d:null,keep:1 other=0" {
		t.Errorf("after rollbacks: %s", got)
	}
}

// TestTransactionConflictAtCommit: a statement that previewed fine fails
// at commit when another writer got there first; nothing is written.
func TestTransactionConflictAtCommit(t *testing.T) {
	db := openT(t)
	run := asyncfn("db", `
		try {
			await db.transaction(async (tx) => {
				await tx.insert("items", {id: "k", title: "from tx"});
				await tx.insert("other", {id: "o"});
				await db.insert("items", {id: "k", title: "outside"});
			});
			return "committed";
		} catch (e) {
			return e.code + " " + (await db.get("items", "k")).title + " " + (await db.count("other"));
		}
	`)
	if got := must(t, run.Invoke(db)).String(); got != "CONFLICT outside 0" {
		t.Errorf("got %q", got)
	}
}

// dbOf returns the Go side of a JS db object.
func dbOf(t testing.TB, db js.Value) *db {
	t.Helper()
	b := current.Load()
	h := b.handleOf.Invoke(db).Int()
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.dbs[h]
	if d == nil {
		t.Fatalf("no open replica for handle %d", h)
	}
	return d
}

// TestTransactionInsertBatch: tx.inserts issued without awaiting go to Go
// together (one call per turn), yet each settles on its own, in call order
// with the other statements: a failed row rejects only its own promise, the
// rows around it insert, values round-trip (bytes from the shared buffer,
// dates, BigInt), and a read issued after them sees them.
func TestTransactionInsertBatch(t *testing.T) {
	db := openT(t)
	run := asyncfn("db", `
		const seen = {};
		await db.transaction(async (tx) => {
			const ps = [
				tx.insert("items", {id: "a", title: "a", n: 1, data: new Uint8Array([1, 2])}),
				tx.insert("strict", {id: "s1"}), // name is notNull: VALIDATION
				tx.insert("items", {id: "b", title: "b", n: 2n ** 60n, at: new Date(5), data: new Uint8Array([3])}),
				tx.insert("items", {id: "a", title: "again"}), // exists: CONFLICT
				tx.insert("other", {id: "o", v: () => 1}), // not a value: VALIDATION
				tx.insert("pair", {a: "x", b: 1, v: "p"}),
			];
			const count = tx.count("items");
			const rs = await Promise.allSettled(ps);
			seen.status = rs.map((r) => r.status === "fulfilled" ? "ok" : r.reason.code);
			seen.a = Array.from(rs[0].value.data);
			seen.bn = rs[2].value.n === 2n ** 60n;
			seen.bat = rs[2].value.at.getTime();
			seen.bdata = Array.from(rs[2].value.data);
			seen.pair = rs[5].value.v;
			seen.count = await count;
		});
		seen.after = (await db.query("items", {orderBy: "id"})).map((r) => r.id + ":" + r.title);
		seen.strict = await db.count("strict");
		seen.pairs = await db.count("pair");
		return seen;
	`)
	seen := must(t, run.Invoke(db))
	for _, c := range []struct{ expr, want string }{
		{"status", `["ok", "VALIDATION", "ok", "CONFLICT", "VALIDATION", "ok"]`},
		{"a", "[1, 2]"}, {"bn", "true"}, {"bat", "5"}, {"bdata", "[3]"}, {"pair", `"p"`},
		{"count", "2"}, {"after", `["a:a", "b:b"]`}, {"strict", "0"}, {"pairs", "1"},
	} {
		v := jsfn("s", "return s."+c.expr).Invoke(seen)
		if got := describe(v); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

// TestTransactionInsertBatchesOf1000: 2,500 staged inserts made in one
// turn go to Go in batches of 1,000 (facade.js BATCH_ROWS); each resolves
// with its own row in call order across the batches, a failing row in the
// second batch fails alone, and a read queued after them sees them all.
func TestTransactionInsertBatchesOf1000(t *testing.T) {
	db := openT(t)
	run := asyncfn("db", `
		const seen = {};
		await db.transaction(async (tx) => {
			const ps = [];
			for (let i = 0; i < 2500; i++) ps.push(tx.insert("items", i === 1500 ? {id: "i0"} : {id: "i" + i, title: "t" + i, n: i}));
			const count = tx.count("items");
			const rs = await Promise.allSettled(ps);
			seen.failed = rs.map((r, i) => r.status === "rejected" ? i + ":" + r.reason.code : "").filter((x) => x).join();
			seen.order = rs.every((r, i) => i === 1500 || r.value.n === i);
			seen.count = await count;
		});
		seen.after = await db.count("items");
		return seen;
	`)
	seen := must(t, run.Invoke(db))
	for _, c := range []struct{ expr, want string }{
		{"failed", `"1500:CONFLICT"`}, {"order", "true"}, {"count", "2499"}, {"after", "2499"},
	} {
		v := jsfn("s", "return s."+c.expr).Invoke(seen)
		if got := describe(v); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}
