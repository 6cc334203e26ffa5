//go:build js && wasm

package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"
)

// TestSystemColumnsJS: db.query(table, {system: true}) gives each row
// $createdAt and $updatedAt (Dates) and $siteId (the last writer), which
// where and orderBy may name; {deleted: true} lists the deleted rows as
// they were, with $deletedAt (a trash view), from which a row of a table
// allowing resurrection can be restored; subscriptions take the options
// too; a plain query has no system columns; bad values are refused.
func TestSystemColumnsJS(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDBOpts(t, name, testSchema, "allowResurrection: true")
	before := jsv("new Date()")
	must(t, db.Call("insert", "items", jsv(`{id: "a", title: "kept", n: 1}`)))
	must(t, db.Call("insert", "items", jsv(`{id: "b", title: "binned", n: 2}`)))
	must(t, db.Call("update", "items", "a", jsv(`{n: 10}`)))
	must(t, db.Call("delete", "items", "b"))

	rows := must(t, db.Call("query", "items", jsv(`{system: true, orderBy: "-$updatedAt"}`)))
	if rows.Length() != 1 {
		t.Fatalf("system query: %s", describe(rows))
	}
	a := rows.Index(0)
	if !a.Get("$createdAt").InstanceOf(js.Global().Get("Date")) || !a.Get("$updatedAt").InstanceOf(js.Global().Get("Date")) {
		t.Fatalf("row %s: $createdAt and $updatedAt should be Dates", describe(a))
	}
	if a.Get("$createdAt").Call("getTime").Float() < before.Call("getTime").Float() || a.Get("$updatedAt").Call("getTime").Float() < a.Get("$createdAt").Call("getTime").Float() {
		t.Fatalf("row %s: want $createdAt after the start and $updatedAt after it", describe(a))
	}
	if a.Get("$siteId").String() != db.Get("siteId").String() {
		t.Fatalf("$siteId %s, want db.siteId", describe(a.Get("$siteId")))
	}
	filtered := must(t, db.Call("query", "items", jsv(`{system: true, where: {$updatedAt: {gte: new Date(0)}}}`)))
	if filtered.Length() != 1 {
		t.Fatalf("where on $updatedAt: %s", describe(filtered))
	}
	plain := must(t, db.Call("query", "items"))
	if !plain.Index(0).Get("$createdAt").IsUndefined() {
		t.Fatalf("a plain query has system columns: %s", describe(plain))
	}

	trash := must(t, db.Call("query", "items", jsv(`{deleted: true}`)))
	if trash.Length() != 1 {
		t.Fatalf("trash: %s", describe(trash))
	}
	b := trash.Index(0)
	if b.Get("id").String() != "b" || b.Get("title").String() != "binned" || b.Get("n").Int() != 2 || !b.Get("$deletedAt").InstanceOf(js.Global().Get("Date")) {
		t.Fatalf("trash row %s: want b as it was, with $deletedAt", describe(b))
	}
	// Undo: put it back (the table allows resurrection).
	restore := jsfn("", `return (r) => { const o = {}; for (const k of Object.keys(r)) if (!k.startsWith("$")) o[k] = r[k]; return o; }`).Invoke()
	must(t, db.Call("insert", "items", restore.Invoke(b)))
	if n := must(t, db.Call("count", "items")).Int(); n != 2 {
		t.Fatalf("after the undo: %d rows, want 2", n)
	}
	if n := must(t, db.Call("query", "items", jsv(`{deleted: true}`))).Length(); n != 0 {
		t.Fatalf("after the undo the trash holds %d rows", n)
	}

	seen := jsv("[]")
	stop := db.Call("subscribe", "items", jsv(`{system: true, orderBy: "id"}`), jsfn("s", "return (rows) => s.push(rows)").Invoke(seen))
	defer stop.Invoke()
	waitFor(t, "the subscription", func() bool { return seen.Length() >= 1 })
	if seen.Index(0).Index(0).Get("$siteId").IsUndefined() {
		t.Fatalf("subscription rows without system columns: %s", describe(seen.Index(0)))
	}

	for _, bad := range []struct{ opts, frag string }{
		{`{system: 1}`, "options.system must be a boolean"},
		{`{where: {$createdAt: {gte: new Date(0)}}}`, "$createdAt"},
		{`{system: true, orderBy: "$deletedAt"}`, "$deletedAt"},
	} {
		p := db.Call("query", "items", jsv(bad.opts))
		v, rej := await(p)
		if !rej {
			t.Fatalf("query %s resolved with %s", bad.opts, describe(v))
		}
		if msg := v.Get("message").String(); !strings.Contains(msg, bad.frag) {
			t.Errorf("query %s: %s, want a message naming %s", bad.opts, msg, bad.frag)
		}
	}
}
