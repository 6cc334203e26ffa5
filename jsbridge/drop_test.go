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
