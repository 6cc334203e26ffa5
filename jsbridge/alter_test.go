//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// TestAlterColumn: db.alterColumn changes a column's notNull and default
// (engine's alter_column migration): later inserts take the new default,
// writes obey the new notNull while a row holding null keeps it; the
// alter reaches another replica through its ChangeSets like any migration
// and holds there over that replica's declaration, also after it re-opens
// with it; refusals (a key column, a type change, bad arguments) are
// SCHEMA, VALIDATION and INVALID_ARGUMENT as for the other migrations.
func TestAlterColumn(t *testing.T) {
	a := openT(t)
	bName := dbName(t) + "-b"
	t.Cleanup(func() { deleteIDB(bName) })
	b := openDB(t, bName, testSchema)
	pass := jsfn("", passJS).Invoke()
	w := jsv("{}")
	must(t, a.Call("insert", "items", jsv(`{id: "x", title: "n is null"}`)))
	must(t, a.Call("insert", "strict", jsv(`{id: "s1", name: "named"}`)))
	must(t, pass.Invoke(a, b, w, "ab", 1000))

	must(t, a.Call("alterColumn", "strict", "name", jsv(`{notNull: false}`)))
	must(t, a.Call("alterColumn", "strict", "qty", jsv(`{default: 5}`)))
	must(t, a.Call("alterColumn", "items", "n", jsv(`{notNull: true, default: 7}`)))
	must(t, a.Call("alterColumn", "items", "title", jsv(`{default: "untitled", notNull: undefined}`)))

	check := func(db js.Value, who, id string) {
		t.Helper()
		row := must(t, db.Call("insert", "strict", jsv(`{id: "`+id+`"}`)))
		if !row.Get("name").IsNull() || row.Get("qty").Int() != 5 {
			t.Fatalf("%s: insert after the alters: %s, want name null and qty 5", who, describe(row))
		}
		row = must(t, db.Call("insert", "items", jsv(`{id: "`+id+`"}`)))
		if row.Get("n").Int() != 7 || row.Get("title").String() != "untitled" {
			t.Fatalf("%s: insert after the alters: %s, want n 7 and title untitled", who, describe(row))
		}
		mustReject(t, db.Call("update", "items", id, jsv(`{n: null}`)), "VALIDATION", "n")
		if row := must(t, db.Call("get", "items", "x")); !row.Get("n").IsNull() {
			t.Fatalf("%s: the row holding a null n: %s, want it kept", who, describe(row))
		}
		must(t, db.Call("update", "items", "x", jsv(`{title: "still null n"}`)))
		// In a transaction (tx.insert stages without reading the store).
		run := jsfn("db", `return db.transaction(async (tx) => {
			const r = await tx.insert("strict", {id: "`+id+`-tx"});
			let refused = "";
			try { await tx.insert("items", {id: "`+id+`-tx", n: null}); } catch (e) { refused = e.code; }
			return r.qty + ":" + r.name + ":" + refused;
		})`)
		if got := must(t, run.Invoke(db)).String(); got != "5:null:VALIDATION" {
			t.Fatalf("%s: in a transaction after the alters: %s, want 5:null:VALIDATION", who, got)
		}
	}
	check(a, "a", "a1")
	must(t, pass.Invoke(a, b, w, "ab", 1000))
	check(b, "b", "b1") // b declares strict.name notNull and qty default 1: the alters win

	// b re-opens with its declaration: nothing changes back.
	await(b.Call("close"))
	b = openDB(t, bName, testSchema)
	check(b, "b re-opened", "b2")

	mustReject(t, a.Call("alterColumn", "items", "id", jsv(`{notNull: false}`)), "SCHEMA", "primary key")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{type: "text"}`)), "SCHEMA", "add a new column")
	mustReject(t, a.Call("alterColumn", "items", "nope", jsv(`{notNull: true}`)), "SCHEMA", "no such column")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{}`)), "SCHEMA", "changes nothing")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{default: "many"}`)), "SCHEMA", "invalid default")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{default: null}`)), "SCHEMA", "null default")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{default: 1, dropDefault: true}`)), "SCHEMA", "not both")
	mustReject(t, a.Call("alterColumn", "nope", "n", jsv(`{notNull: true}`)), "VALIDATION", "nope")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{notNull: "yes"}`)), "INVALID_ARGUMENT", "notNull")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{dropDefault: false}`)), "INVALID_ARGUMENT", "dropDefault")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`{nullable: true}`)), "INVALID_ARGUMENT", "nullable")
	mustReject(t, a.Call("alterColumn", "items", "n", jsv(`null`)), "INVALID_ARGUMENT", "change")
	mustReject(t, a.Call("alterColumn", "items", "", jsv(`{notNull: true}`)), "INVALID_ARGUMENT", "column")
	// dropDefault, then an insert without n is refused (notNull, no default).
	must(t, a.Call("alterColumn", "items", "n", jsv(`{dropDefault: true}`)))
	mustReject(t, a.Call("insert", "items", jsv(`{id: "a3"}`)), "VALIDATION", "n")
}
