//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// TestResurrectionPolicy: allowResurrection declares the database's
// resurrection policy (issue 10 § 4). A replica opened with it revives a
// deleted row; reopened with allowResurrection: false, or with a table
// declaring the other policy, Replica.open rejects with SCHEMA naming both
// policies, and the data is untouched; reopened without a declaration it
// follows the stored policy.
func TestResurrectionPolicy(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	const schema = `{tables: {notes: {columns: {id: "text", title: "text"}}}}`
	open := func(extra string) js.Value {
		return js.Global().Get("Replica").Call("open", jsv("{name: "+jsString(name)+", schema: "+schema+extra+"}"))
	}
	db := must(t, open(`, allowResurrection: true`))
	must(t, db.Call("insert", "notes", jsv(`{id: "r", title: "first"}`)))
	must(t, db.Call("delete", "notes", "r"))
	must(t, db.Call("insert", "notes", jsv(`{id: "r", title: "second"}`)))
	must(t, db.Call("close"))

	for _, c := range []struct{ name, open string }{
		{"option", `, allowResurrection: false`},
		{"table", `, schema: {tables: {notes: {columns: {id: "text", title: "text"}, allowResurrection: false}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p js.Value
			if c.name == "table" {
				p = js.Global().Get("Replica").Call("open", jsv("{name: "+jsString(name)+c.open+"}"))
			} else {
				p = open(c.open)
			}
			mustReject(t, p, "SCHEMA", "notes", "delete-wins", "allow-resurrection")
		})
	}

	db = must(t, open(``))
	t.Cleanup(func() { await(db.Call("close")) })
	row := must(t, db.Call("get", "notes", "r"))
	if row.IsNull() || row.Get("title").String() != "second" {
		t.Fatalf("after reopening without a declaration, r is %s, want the re-inserted row", describe(row))
	}
}
