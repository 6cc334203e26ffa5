//go:build js && wasm

package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"
)

// TestRenameTable: db.renameTable renames a table (engine's rename_table
// migration): queries, subscriptions, events, transactions and indexes use
// the new name, the old one is refused saying the new one; a replica that
// writes under the old name before it learns the rename has its rows land
// in the renamed table on both; re-opening with the old declaration opens
// and still refuses the old name; a fresh replica of the new app version
// (declaring the new name) that writes before it syncs joins the table;
// refusals are SCHEMA, VALIDATION and INVALID_ARGUMENT.
func TestRenameTable(t *testing.T) {
	a := openT(t)
	bName := dbName(t) + "-b"
	t.Cleanup(func() { deleteIDB(bName) })
	b := openDB(t, bName, testSchema)
	pass := jsfn("", passJS).Invoke()
	w := jsv("{}")
	must(t, a.Call("insert", "items", jsv(`{id: "x", title: "first", n: 1}`)))
	must(t, pass.Invoke(a, b, w, "ab", 1000))

	must(t, a.Call("renameTable", "items", "things"))
	mustReject(t, a.Call("insert", "items", jsv(`{id: "no"}`)), "VALIDATION", `renamed to "things"`)
	mustReject(t, a.Call("count", "items"), "VALIDATION", "things")
	run := asyncfn("db", `
		const seen = {}, events = [];
		let last = null;
		const unsub = db.subscribe("things", {where: {n: {gte: 1}}, orderBy: "id"}, (rows) => { last = rows.map((r) => r.id).join(","); });
		db.on("change", (e) => { for (const c of e.changes) events.push(c.table); });
		await db.insert("things", {id: "a1", title: "by a", n: 2});
		await db.transaction(async (tx) => {
			await tx.insert("things", {id: "a2", title: "in a transaction", n: 3});
			seen.txRename = typeof tx.renameTable;
		});
		for (let i = 0; i < 100 && (events.length < 2 || last !== "a1,a2,x"); i++) await new Promise((r) => setTimeout(r, 20));
		seen.sub = last;
		seen.byIndex = (await db.query("things", {where: {n: 2}})).map((r) => r.id).join(",");
		seen.events = events.slice(0, 2).join(",");
		unsub();
		return seen;
	`)
	seen := must(t, run.Invoke(a))
	for _, c := range []struct{ key, want string }{
		{"events", "things,things"},
		{"sub", "a1,a2,x"},
		{"byIndex", "a1"},
		{"txRename", "undefined"},
	} {
		if got := seen.Get(c.key).String(); got != c.want {
			t.Errorf("after the rename, %s: %q, want %q", c.key, got, c.want)
		}
	}

	// b writes under the old name before it learns the rename.
	must(t, b.Call("insert", "items", jsv(`{id: "y", title: "by b", n: 5}`)))
	must(t, b.Call("update", "items", "x", jsv(`{title: "updated by b"}`)))
	must(t, pass.Invoke(b, a, w, "ba", 1000))
	must(t, pass.Invoke(a, b, w, "ab", 1000))
	ids := asyncfn("db", `return (await db.query("things", {orderBy: "id"})).map((r) => r.id + ":" + r.title).join(",");`)
	want := "a1:by a,a2:in a transaction,x:updated by b,y:by b"
	for _, c := range []struct {
		who string
		db  js.Value
	}{{"a", a}, {"b", b}} {
		if got := must(t, ids.Invoke(c.db)).String(); got != want {
			t.Fatalf("%s: things holds %s, want %s", c.who, got, want)
		}
	}
	mustReject(t, b.Call("insert", "items", jsv(`{id: "z"}`)), "VALIDATION", `renamed to "things"`)

	// b re-opens with its declaration of items: it opens, the old name
	// stays refused.
	await(b.Call("close"))
	b = openDB(t, bName, testSchema)
	mustReject(t, b.Call("get", "items", "x"), "VALIDATION", `renamed to "things"`)
	if n := must(t, b.Call("count", "things")).Int(); n != 4 {
		t.Fatalf("b re-opened: %d rows in things, want 4", n)
	}

	// A fresh replica of the new app version declares things and writes
	// before its first sync: its table is the renamed one.
	cName := dbName(t) + "-c"
	t.Cleanup(func() { deleteIDB(cName) })
	c := openDB(t, cName, strings.Replace(testSchema, "items:", "things:", 1))
	must(t, c.Call("insert", "things", jsv(`{id: "c1", title: "fresh", n: 9}`)))
	must(t, pass.Invoke(a, c, w, "ac", 1000))
	must(t, pass.Invoke(b, c, w, "bc", 1000)) // each replica passes its own transactions
	must(t, pass.Invoke(c, a, w, "ca", 1000))
	want = "a1:by a,a2:in a transaction,c1:fresh,x:updated by b,y:by b"
	for _, d := range []struct {
		who string
		db  js.Value
	}{{"a", a}, {"c", c}} {
		if got := must(t, ids.Invoke(d.db)).String(); got != want {
			t.Fatalf("%s after the fresh replica's sync: things holds %s, want %s", d.who, got, want)
		}
	}

	mustReject(t, a.Call("renameTable", "things", "other"), "SCHEMA", "other")
	mustReject(t, a.Call("renameTable", "things", "bad name!"), "SCHEMA", "valid")
	mustReject(t, a.Call("renameTable", "things", "things"), "SCHEMA")
	mustReject(t, a.Call("renameTable", "nope", "z"), "VALIDATION", "nope")
	mustReject(t, a.Call("renameTable", "items", "z"), "VALIDATION", `renamed to "things"`)
	mustReject(t, a.Call("renameTable", "things", ""), "INVALID_ARGUMENT", `to must be a non-empty string, got ""`)
	mustReject(t, a.Call("renameTable", "things", 5), "INVALID_ARGUMENT", "to")
	mustReject(t, a.Call("renameTable", 5, "z"), "INVALID_ARGUMENT", "table")
}
