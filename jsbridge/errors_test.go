//go:build js && wasm

package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"
)

// TestErrors checks codes, messages and the table/column properties of
// rejections for bad values, unknown tables and columns, wrong argument
// types and unknown options.
func TestErrors(t *testing.T) {
	db := openT(t)
	id := must(t, db.Call("insert", "items", jsv(`{title: "x"}`))).Get("id")
	cases := []struct {
		name     string
		call     func() js.Value
		code     string
		table    string
		column   string
		fragment []string
	}{
		{"text for integer", func() js.Value { return db.Call("insert", "items", jsv(`{n: "42"}`)) },
			"VALIDATION", "items", "n", []string{"db.insert", "items.n", "expected integer", `got the string "42"`}},
		{"fraction for integer", func() js.Value { return db.Call("insert", "items", jsv(`{n: 1.5}`)) },
			"VALIDATION", "items", "n", []string{"fraction"}},
		{"BigInt beyond int64", func() js.Value { return db.Call("insert", "items", jsv(`{n: 2n ** 64n}`)) },
			"VALIDATION", "items", "n", []string{"int64"}},
		{"NaN", func() js.Value { return db.Call("insert", "items", jsv(`{r: NaN}`)) },
			"VALIDATION", "items", "r", []string{"finite"}},
		{"Infinity", func() js.Value { return db.Call("insert", "items", jsv(`{r: -Infinity}`)) },
			"VALIDATION", "items", "r", []string{"finite"}},
		{"invalid Date", func() js.Value { return db.Call("insert", "items", jsv(`{at: new Date(NaN)}`)) },
			"VALIDATION", "items", "at", []string{"invalid Date"}},
		{"function value", func() js.Value { return db.Call("insert", "items", jsv(`{meta: () => 1}`)) },
			"VALIDATION", "items", "meta", []string{"a function"}},
		{"Symbol value", func() js.Value { return db.Call("insert", "items", jsv(`{title: Symbol("s")}`)) },
			"VALIDATION", "items", "title", []string{"a symbol"}},
		{"Map value", func() js.Value { return db.Call("insert", "items", jsv(`{meta: new Map()}`)) },
			"VALIDATION", "items", "meta", []string{"a Map"}},
		{"BigInt inside json", func() js.Value { return db.Call("insert", "items", jsv(`{meta: {a: 1n}}`)) },
			"VALIDATION", "items", "meta", []string{"BigInt"}},
		{"NaN inside json", func() js.Value { return db.Call("insert", "items", jsv(`{meta: {a: [1, {b: NaN}], s: "null"}}`)) },
			"VALIDATION", "items", "meta", []string{"db.insert", "items.meta", "NaN at .a[1].b"}},
		{"Infinity inside json, update", func() js.Value { return db.Call("update", "items", id, jsv(`{meta: [null, Infinity]}`)) },
			"VALIDATION", "items", "meta", []string{"db.update", "Infinity at [1]"}},
		{"-Infinity inside json, upsert", func() js.Value { return db.Call("upsert", "items", jsv(`{meta: {"a b": {toJSON: () => -Infinity}}}`)) },
			"VALIDATION", "items", "meta", []string{"db.upsert", `-Infinity at ["a b"]`}},
		{"Number(NaN) inside json, transaction", func() js.Value {
			return asyncfn("db", `return db.transaction(async (tx) => { await tx.insert("items", {meta: {n: new Number(NaN)}}); })`).Invoke(db)
		}, "VALIDATION", "items", "meta", []string{"NaN at .n"}},
		{"NaN inside json in where", func() js.Value { return db.Call("query", "items", jsv(`{where: {meta: {eq: {a: NaN}}}}`)) },
			"VALIDATION", "items", "meta", []string{"NaN at .a"}},
		{"lone surrogate", func() js.Value { return db.Call("insert", "items", jsv(`{title: "\uD800"}`)) },
			"VALIDATION", "items", "title", []string{"UTF-8"}},
		{"object for text", func() js.Value { return db.Call("insert", "items", jsv(`{title: {a: 1}}`)) },
			"VALIDATION", "items", "title", []string{"expected text"}},
		{"bytes for text", func() js.Value { return db.Call("insert", "items", jsv(`{title: new Uint8Array(2)}`)) },
			"VALIDATION", "items", "title", []string{"got a Uint8Array (2 bytes)"}},
		{"unknown column", func() js.Value { return db.Call("insert", "items", jsv(`{nope: 1}`)) },
			"VALIDATION", "items", "nope", []string{"unknown column"}},
		{"missing notNull", func() js.Value { return db.Call("insert", "strict", jsv(`{qty: 2}`)) },
			"VALIDATION", "strict", "name", []string{"required"}},
		{"unknown table", func() js.Value { return db.Call("insert", "nope", jsv(`{a: 1}`)) },
			"VALIDATION", "nope", "", []string{"unknown table", `"nope"`}},
		{"unknown table read", func() js.Value { return db.Call("query", "nope") },
			"VALIDATION", "nope", "", []string{"db.query", "unknown table"}},
		{"unknown column in where", func() js.Value { return db.Call("query", "items", jsv(`{where: {zz: 1}}`)) },
			"VALIDATION", "items", "zz", []string{"unknown column"}},
		{"unknown column in orderBy", func() js.Value { return db.Call("query", "items", jsv(`{orderBy: "-zz"}`)) },
			"VALIDATION", "items", "zz", nil},
		{"composite key arity", func() js.Value { return db.Call("get", "pair", "k") },
			"VALIDATION", "pair", "", []string{"primary key"}},
		{"duplicate insert", func() js.Value { return db.Call("insert", "items", jsv(`{id: `+jsString(id.String())+`}`)) },
			"CONFLICT", "", "", []string{"already exists"}},
		{"update missing", func() js.Value { return db.Call("update", "items", "nope", jsv(`{n: 1}`)) },
			"NOT_FOUND", "", "", []string{"db.update", "nope"}},
		{"table not a string", func() js.Value { return db.Call("insert", 7, jsv(`{}`)) },
			"INVALID_ARGUMENT", "", "", []string{"db.insert", "table must be a string", "number"}},
		{"row not an object", func() js.Value { return db.Call("insert", "items", "row") },
			"INVALID_ARGUMENT", "", "", []string{"row must be an object", "string"}},
		{"row an array", func() js.Value { return db.Call("insert", "items", jsv(`[1]`)) },
			"INVALID_ARGUMENT", "", "", []string{"an array"}},
		{"missing pk", func() js.Value { return db.Call("get", "items") },
			"INVALID_ARGUMENT", "", "", []string{"primary key"}},
		{"patch missing", func() js.Value { return db.Call("update", "items", id) },
			"INVALID_ARGUMENT", "", "", []string{"patch must be an object"}},
		{"unknown query option", func() js.Value { return db.Call("query", "items", jsv(`{limt: 3}`)) },
			"INVALID_ARGUMENT", "", "", []string{`"limt"`}},
		{"count with orderBy", func() js.Value { return db.Call("count", "items", jsv(`{orderBy: "n"}`)) },
			"INVALID_ARGUMENT", "", "", []string{"count"}},
		{"bad limit", func() js.Value { return db.Call("query", "items", jsv(`{limit: 0}`)) },
			"INVALID_ARGUMENT", "", "", []string{"limit"}},
		{"bad offset", func() js.Value { return db.Call("query", "items", jsv(`{offset: -1}`)) },
			"INVALID_ARGUMENT", "", "", []string{"offset"}},
		{"unknown operator", func() js.Value { return db.Call("query", "items", jsv(`{where: {n: {greater: 1}}}`)) },
			"INVALID_ARGUMENT", "", "", []string{"where.n", `"greater"`}},
		{"undefined in where", func() js.Value { return db.Call("query", "items", jsv(`{where: {n: undefined}}`)) },
			"INVALID_ARGUMENT", "", "", []string{"where.n is undefined"}},
		{"in not an array", func() js.Value { return db.Call("query", "items", jsv(`{where: {n: {in: 3}}}`)) },
			"INVALID_ARGUMENT", "", "", []string{"in must be an array"}},
		{"bad orderBy", func() js.Value { return db.Call("query", "items", jsv(`{orderBy: [{col: "n"}]}`)) },
			"INVALID_ARGUMENT", "", "", []string{"orderBy"}},
		{"prefix on number", func() js.Value { return db.Call("query", "items", jsv(`{where: {title: {prefix: 1}}}`)) },
			"VALIDATION", "items", "title", []string{"prefix"}},
		{"transaction without fn", func() js.Value { return db.Call("transaction", 5) },
			"INVALID_ARGUMENT", "", "", []string{"db.transaction"}},
		{"open without schema a name never opened", func() js.Value { return js.Global().Get("Replica").Call("open", jsv(`{name: "x"}`)) },
			"NOT_FOUND", "", "", []string{"Replica.open", "options.schema"}},
		{"open with schema null", func() js.Value { return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: null}`)) },
			"INVALID_ARGUMENT", "", "", []string{"options.schema"}},
		{"open without name", func() js.Value { return js.Global().Get("Replica").Call("open", jsv(`{schema: {tables: {}}}`)) },
			"INVALID_ARGUMENT", "", "", []string{"name"}},
		{"open unknown option", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {}}, allowResurection: true}`))
		}, "INVALID_ARGUMENT", "", "", []string{`"allowResurection"`}},
		{"open bad schema", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {t: {columns: {a: "varchar"}}}}}`))
		}, "SCHEMA", "", "", []string{"varchar"}},
		{"open with no tables", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {}}}`))
		}, "SCHEMA", "", "", []string{"no tables"}},
		{"open negative storageQuota", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {t: {columns: {a: "text"}}}}, storageQuota: -1}`))
		}, "INVALID_ARGUMENT", "", "", []string{"storageQuota", "positive"}},
		{"open storageQuota not a number", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {t: {columns: {a: "text"}}}}, storageQuota: "1GB"}`))
		}, "INVALID_ARGUMENT", "", "", []string{"storageQuota", "number"}},
		{"open bad heldChanges", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {}}, heldChanges: "discard"}`))
		}, "INVALID_ARGUMENT", "", "", []string{"heldChanges", "discard", "hold, drop or hold-and-forward"}},
		{"open bad unknownTableDisposition", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {}}, unknownTableDisposition: "discard"}`))
		}, "INVALID_ARGUMENT", "", "", []string{"unknownTableDisposition", "discard"}},
		{"open heldChanges under both names", func() js.Value {
			return js.Global().Get("Replica").Call("open", jsv(`{name: "x", schema: {tables: {}}, heldChanges: "drop", unknownTableDisposition: "ignore"}`))
		}, "INVALID_ARGUMENT", "", "", []string{"heldChanges", "unknownTableDisposition", "both"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mustReject(t, c.call(), c.code, c.fragment...)
			if !e.InstanceOf(js.Global().Get("Replica").Get("ReplicaError")) || e.Get("name").String() != "ReplicaError" {
				t.Errorf("%s is not a ReplicaError", describe(e))
			}
			if got := e.Get("table"); c.table != "" && (got.Type() != js.TypeString || got.String() != c.table) {
				t.Errorf("table = %s, want %q", describe(got), c.table)
			}
			if got := e.Get("column"); c.column != "" && (got.Type() != js.TypeString || got.String() != c.column) {
				t.Errorf("column = %s, want %q", describe(got), c.column)
			}
		})
	}
	// Nothing of the failed writes landed.
	if n := must(t, db.Call("count", "items")).Int(); n != 1 {
		t.Errorf("count %d after failed writes, want 1", n)
	}
	// Synchronous argument errors of the non-Promise methods are thrown.
	for _, expr := range []string{
		`db.on("nope", () => {})`, `db.on("change", 5)`, `db.subscribe("items", {}, 5)`,
		`db.subscribe(5, () => {})`, `db.subscribe("items", {where: 3}, () => {})`,
	} {
		thrown := jsfn("db", "try { "+expr+"; return null } catch (e) { return e }").Invoke(db)
		if thrown.IsNull() {
			t.Errorf("%s did not throw", expr)
			continue
		}
		checkError(t, thrown, "INVALID_ARGUMENT")
	}
}

// TestErrorsInAPITerms: messages name values and causes as the JavaScript
// API has them: a JS number is "the number 42" (not Go's "real 42"), a
// schema that does not decode names its path in options.schema (not the
// decoder's package and byte offset), and a replica whose IndexedDB
// database another connection deletes is "closed", not "kv: store closed".
func TestErrorsInAPITerms(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDB(t, name, testSchema)
	R := js.Global().Get("Replica")
	lacks := func(e js.Value, bad ...string) {
		t.Helper()
		msg := e.Get("message").String()
		for _, b := range bad {
			if strings.Contains(msg, b) {
				t.Errorf("message %q contains %q", msg, b)
			}
		}
	}
	e := mustReject(t, db.Call("insert", "items", jsv(`{title: 42}`)), "VALIDATION", "items.title: expected text, got the number 42")
	lacks(e, "real")
	e = mustReject(t, db.Call("insert", "items", jsv(`{n: 2.5}`)), "VALIDATION", "got the number 2.5")
	lacks(e, "real")
	e = mustReject(t, db.Call("insert", "items", jsv(`{title: 5n}`)), "VALIDATION", "got the BigInt 5")
	e = mustReject(t, R.Call("open", jsv(`{name: "terms", schema: {tables: {t: {columns: {a: 5}}}}}`)), "SCHEMA",
		`Replica.open: invalid schema: options.schema.tables["t"].columns["a"]: want an object, got a number`)
	lacks(e, "wire", "at byte")
	e = mustReject(t, R.Call("open", jsv(`{name: "terms", schema: {tables: {t: {columns: {a: "text"}, indexs: {}}}}}`)), "SCHEMA",
		`options.schema.tables["t"]: unknown field "indexs"`)
	lacks(e, "wire", "at byte")
	// A mistake at the top level (table for tables) names options.schema itself.
	e = mustReject(t, R.Call("open", jsv(`{name: "terms", schema: {table: {t: {columns: {a: "text"}}}}}`)), "SCHEMA",
		`invalid schema: options.schema: unknown field "table"`)
	lacks(e, "options.schema.:")

	// Another connection deletes the database: the replica closes.
	must(t, db.Call("insert", "items", jsv(`{title: "before"}`)))
	must(t, asyncfn("name", `await new Promise((res, rej) => { const r = indexedDB.deleteDatabase(name); r.onsuccess = res; r.onerror = () => rej(r.error); }); return null;`).
		Invoke(IDBPrefix+name))
	e = mustReject(t, db.Call("insert", "items", jsv(`{title: "after"}`)), "CLOSED", "db.insert: the replica is closed (another tab or window is deleting")
	lacks(e, "idbkv", "kv:")
}

// TestJSTerms checks jsTerms against a strings.Replacer of the same pairs
// (what it replaced): the same output for every message.
func TestJSTerms(t *testing.T) {
	var pairs []string
	for _, p := range jsValueTerms {
		pairs = append(pairs, p[0], p[1])
	}
	r := strings.NewReplacer(pairs...)
	for _, msg := range []string{
		"",
		"column price: want integer, got real 4.5",
		"column a: want text, got integer 7, got blob 3 bytes",
		", got real , got text , got boolean true",
		", got realistic values",
		", got , got number 1",
		"x, got timestamp 2026-01-01T00:00:00Z; y, got unknown z, got blob ",
		", got ", ", got", "got real 1",
		", got , got real 2",
	} {
		if got, want := jsTerms(msg), r.Replace(msg); got != want {
			t.Errorf("jsTerms(%q) = %q, want %q", msg, got, want)
		}
	}
}
