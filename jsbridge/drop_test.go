//go:build js && wasm

package jsbridge

import (
	"testing"
)

// TestDropMigrations: db.dropColumn, db.dropIndex and db.dropTable retire
// a column, an index and a table (engine's drop migrations): the column's
// values leave every row and writes naming it are refused, the table's
// rows go and it is unknown; the drops reach another replica through its
// ChangeSets like any migration, and are refused for a key column, an
// unknown index or table, and bad arguments.
func TestDropMigrations(t *testing.T) {
	a, b := openT(t), openT(t)
	pass := jsfn("", passJS).Invoke()
	w := jsv("{}")
	must(t, a.Call("insert", "items", jsv(`{id: "x", title: "gone soon", n: 1}`)))
	must(t, a.Call("insert", "other", jsv(`{id: "o", v: 1}`)))
	must(t, pass.Invoke(a, b, w, "ab", 1000))

	must(t, a.Call("dropColumn", "items", "title"))
	must(t, a.Call("dropIndex", "items", "by_n"))
	must(t, a.Call("dropTable", "other"))
	if row := must(t, a.Call("get", "items", "x")); !row.Get("title").IsUndefined() || row.Get("n").Int() != 1 {
		t.Fatalf("after dropColumn: %s, want no title and n 1", describe(row))
	}
	mustReject(t, a.Call("update", "items", "x", jsv(`{title: "back?"}`)), "VALIDATION", "title")
	mustReject(t, a.Call("count", "other"), "VALIDATION", "other")
	if n := must(t, a.Call("count", "items", jsv(`{where: {n: 1}}`))).Int(); n != 1 {
		t.Fatalf("a query on the dropped index's column: %d rows, want 1", n)
	}

	must(t, pass.Invoke(a, b, w, "ab", 1000))
	if row := must(t, b.Call("get", "items", "x")); !row.Get("title").IsUndefined() {
		t.Fatalf("b after the drops: %s, want no title", describe(row))
	}
	mustReject(t, b.Call("count", "other"), "VALIDATION", "other")

	mustReject(t, a.Call("dropColumn", "items", "id"), "SCHEMA", "primary key")
	mustReject(t, a.Call("dropIndex", "items", "nope"), "SCHEMA")
	mustReject(t, a.Call("dropTable", "nope"), "VALIDATION", "nope")
	mustReject(t, a.Call("dropColumn", "items", ""), "INVALID_ARGUMENT", "column")
	mustReject(t, a.Call("dropIndex", "items", 5), "INVALID_ARGUMENT", "index")
}

// TestDropThenTransaction: statements of a db.transaction on a table with a
// dropped column (whose staged inserts are checked against the store's
// effective schema, not the declaration) preview and commit like any
// other: the insert writes the remaining columns, a statement naming the
// dropped column is refused, and nothing waits on a read the dispatch
// cannot serve.
func TestDropThenTransaction(t *testing.T) {
	db := openT(t)
	must(t, db.Call("insert", "items", jsv(`{id: "x", title: "t", n: 1}`)))
	must(t, db.Call("dropColumn", "items", "title"))
	run := asyncfn("db", `
		const seen = {};
		await db.transaction(async (tx) => {
			await tx.insert("items", {id: "y", n: 2});
			seen.staged = (await tx.query("items", {orderBy: "n"})).map((r) => r.id + ":" + r.n).join(",");
			await tx.update("items", "x", {n: 3});
			try { await tx.insert("items", {id: "z", title: "no", n: 4}); seen.named = "accepted"; } catch (e) { seen.named = e.code; }
		});
		seen.after = (await db.query("items", {orderBy: "n"})).map((r) => r.id + ":" + r.n + ":" + r.title).join(",");
		return seen;
	`)
	seen := must(t, run.Invoke(db))
	for _, c := range []struct{ key, want string }{
		{"staged", "x:1,y:2"},
		{"after", "y:2:undefined,x:3:undefined"},
	} {
		if got := seen.Get(c.key).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.key, got, c.want)
		}
	}
	if got := seen.Get("named").String(); got != "accepted" && got != "VALIDATION" {
		t.Errorf("an insert naming the dropped column in the transaction: %q", got)
	}
}
