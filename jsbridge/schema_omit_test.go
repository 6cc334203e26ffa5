//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// TestSchemaOmitsStoredColumn: a replica opened with a schema that omits
// a column (or a table) the stored replica has — an older app version on
// data a newer one shaped, or a column no longer used — opens; reads still
// return the column (it is part of the replica and syncs), writes that name
// it are refused with VALIDATION, other writes work, and an omitted table
// keeps its stored definition for reads and writes; a schema that retypes
// a stored column is refused with SCHEMA, nothing changed.
func TestSchemaOmitsStoredColumn(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	v2 := `{tables: {items: {columns: {id: "text", title: "text", n: "integer"}}, extra: {columns: {id: "text"}}}}`
	v1 := `{tables: {items: {columns: {id: "text", title: "text"}}}}`
	open := func(schema string) (js.Value, bool) {
		opts := jsv("{name: " + jsString(name) + ", schema: " + schema + "}")
		return await(js.Global().Get("Replica").Call("open", opts))
	}
	db, rej := open(v2)
	if rej {
		t.Fatal(describe(db))
	}
	must(t, db.Call("insert", "items", jsv(`{id: "a", title: "t", n: 7}`)))
	must(t, db.Call("insert", "extra", jsv(`{id: "e"}`)))
	must(t, db.Call("close"))

	db, rej = open(v1)
	if rej {
		t.Fatalf("a schema omitting a stored column and table was refused: %s", describe(db))
	}
	if row := must(t, db.Call("get", "items", "a")); row.Get("n").Int() != 7 {
		t.Fatalf("the omitted column is not read: %s", describe(row))
	}
	mustReject(t, db.Call("insert", "items", jsv(`{id: "b", title: "t", n: 1}`)), "VALIDATION", "n")
	must(t, db.Call("insert", "items", jsv(`{id: "c", title: "t"}`)))
	// An omitted table stays usable with its stored definition.
	must(t, db.Call("insert", "extra", jsv(`{id: "f"}`)))
	must(t, db.Call("close"))

	retyped := `{tables: {items: {columns: {id: "text", title: "integer", n: "integer"}}}}`
	if v, rej := open(retyped); !rej {
		await(v.Call("close"))
		t.Fatal("a schema retyping a stored column was accepted")
	} else {
		checkError(t, v, "SCHEMA", "title")
	}
	db, rej = open(v2)
	if rej {
		t.Fatal(describe(db))
	}
	defer func() { await(db.Call("close")) }()
	if n := must(t, db.Call("count", "items")).Int(); n != 2 {
		t.Fatalf("after the refused open: %d rows, want 2", n)
	}
}
