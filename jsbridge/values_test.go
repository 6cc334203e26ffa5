//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// TestValueRoundTrip writes each value through insert and reads it back
// through insert's result, get and query: the value must come back exactly
// (Object.is for numbers, BigInt by value, Date to the ms, bytes).
func TestValueRoundTrip(t *testing.T) {
	db := openT(t)
	cases := []struct {
		col, in, want string // want "" means the same as in
	}{
		{"title", `"Lisbon"`, ""},
		{"title", `""`, ""},
		{"title", `"😀 non-BMP \u{1F600} and \uFF61 and \u0000 nul \n\t\"quoted\\"`, ""},
		{"title", `"<script>&amp;</script> \u2028"`, ""},
		{"title", `null`, ""},
		{"n", `42`, ""},
		{"n", `-0`, `0`},
		{"n", `Number.MAX_SAFE_INTEGER`, ""},
		{"n", `-Number.MAX_SAFE_INTEGER`, ""},
		{"n", `2n ** 53n`, ""},
		{"n", `-(2n ** 53n)`, ""},
		{"n", `2n ** 63n - 1n`, ""},
		{"n", `-(2n ** 63n)`, ""},
		{"n", `12n`, `12`},
		{"n", `1e15`, ""},
		{"r", `1.5`, ""},
		{"r", `-0`, ""},
		{"r", `0.1 + 0.2`, ""},
		{"r", `Number.MIN_VALUE`, ""},
		{"r", `Number.MAX_VALUE`, ""},
		{"r", `1e21`, ""},
		{"r", `-1.5e-7`, ""},
		{"r", `3`, ""},
		{"ok", `true`, ""},
		{"ok", `false`, ""},
		{"at", `new Date(1714564800123)`, ""},
		{"at", `new Date(0)`, ""},
		{"at", `new Date(-1)`, ""},
		{"at", `1714564800123`, `new Date(1714564800123)`},
		{"data", `new Uint8Array([0, 1, 2, 255])`, ""},
		{"data", `new Uint8Array(0)`, ""},
		{"data", `new Uint8Array([9, 8, 7]).buffer`, `new Uint8Array([9, 8, 7])`},
		{"data", `new Uint8Array([1, 2, 3, 4]).subarray(1, 3)`, `new Uint8Array([2, 3])`},
		{"meta", `{a: 1, b: [true, null, "x", {c: -1.5}], "d e": {}}`, ""},
		{"meta", `[]`, ""},
		{"meta", `[1, [2, [3, [4, {deep: "😀"}]]]]`, ""},
		{"meta", `"a string"`, ""},
		{"meta", `7`, ""},
		{"meta", `false`, ""},
		{"meta", `{when: new Date(0)}`, `{when: "1970-01-01T00:00:00.000Z"}`},
		{"meta", `null`, ""},
	}
	for _, c := range cases {
		in := jsv(c.in)
		want := in
		if c.want != "" {
			want = jsv(c.want)
		}
		row := jsv("({})")
		row.Set(c.col, in)
		got := must(t, db.Call("insert", "items", row))
		id := got.Get("id")
		if id.Type() != js.TypeString || len(id.String()) != 36 {
			t.Fatalf("insert %s: generated id %s", c.in, describe(id))
		}
		if v := got.Get(c.col); !same(v, want) {
			t.Errorf("%s = %s: insert returned %s, want %s", c.col, c.in, describe(v), describe(want))
		}
		back := must(t, db.Call("get", "items", id))
		if v := back.Get(c.col); !same(v, want) {
			t.Errorf("%s = %s: get returned %s, want %s", c.col, c.in, describe(v), describe(want))
		}
		if !same(back, got) {
			t.Errorf("%s = %s: get %s differs from insert %s", c.col, c.in, describe(back), describe(got))
		}
		rows := must(t, db.Call("query", "items", jsv(`{where: {id: `+jsString(id.String())+`}}`)))
		if rows.Length() != 1 || !same(rows.Index(0), got) {
			t.Errorf("%s = %s: query returned %s", c.col, c.in, describe(rows))
		}
	}
}

// TestRowShape checks the row objects: every column present in schema
// order, nulls as null, each blob its own copy.
func TestRowShape(t *testing.T) {
	db := openT(t)
	row := must(t, db.Call("insert", "items", jsv(`{title: "x", data: new Uint8Array([1]), meta: {a: 1}}`)))
	keys := js.Global().Get("Object").Call("keys", row)
	if got := describe(keys); got != `["id", "title", "n", "r", "ok", "at", "data", "meta"]` {
		t.Errorf("keys %s", got)
	}
	if v := row.Get("n"); !v.IsNull() {
		t.Errorf("n = %s, want null", describe(v))
	}
	rows := must(t, db.Call("query", "items"))
	a, b := rows.Index(0).Get("data"), row.Get("data")
	a.SetIndex(0, 9)
	if b.Index(0).Int() != 1 {
		t.Error("blobs share memory")
	}
	// Composite key: given as an array.
	must(t, db.Call("insert", "pair", jsv(`{a: "k", b: 2, v: "two"}`)))
	got := must(t, db.Call("get", "pair", jsv(`["k", 2]`)))
	if !same(got, jsv(`{a: "k", b: 2, v: "two"}`)) {
		t.Errorf("composite get: %s", describe(got))
	}
	if v := must(t, db.Call("get", "pair", jsv(`["k", 3]`))); !v.IsUndefined() {
		t.Errorf("get of an absent row: %s, want undefined", describe(v))
	}
	// A BigInt key for an integer key column.
	if v := must(t, db.Call("get", "pair", jsv(`["k", 2n]`))); v.IsUndefined() {
		t.Error("get with a BigInt key component found nothing")
	}
}

// TestUpdateSemantics: undefined in a patch means "not given", null sets
// null; update, upsert and delete results.
func TestUpdateSemantics(t *testing.T) {
	db := openT(t)
	row := must(t, db.Call("insert", "items", jsv(`{title: "a", n: 1, r: 2.5}`)))
	id := row.Get("id")
	got := must(t, db.Call("update", "items", id, jsv(`{n: undefined, r: null, title: "b"}`)))
	if !same(got, jsv(`{id: `+jsString(id.String())+`, title: "b", n: 1, r: null, ok: null, at: null, data: null, meta: null}`)) {
		t.Errorf("update returned %s", describe(got))
	}
	up := must(t, db.Call("upsert", "items", jsv(`{id: `+jsString(id.String())+`, n: 5}`)))
	if up.Get("n").Int() != 5 || up.Get("title").String() != "b" {
		t.Errorf("upsert of an existing row: %s", describe(up))
	}
	fresh := must(t, db.Call("upsert", "items", jsv(`{id: "new", title: "c"}`)))
	if fresh.Get("id").String() != "new" {
		t.Errorf("upsert of a new row: %s", describe(fresh))
	}
	if v := must(t, db.Call("delete", "items", id)); !v.IsUndefined() {
		t.Errorf("delete resolved with %s, want undefined", describe(v))
	}
	if v := must(t, db.Call("get", "items", id)); !v.IsUndefined() {
		t.Errorf("deleted row still there: %s", describe(v))
	}
	if v := must(t, db.Call("delete", "items", "no-such-id")); !v.IsUndefined() {
		t.Errorf("delete of an absent row resolved with %s", describe(v))
	}
	if n := must(t, db.Call("count", "items")); n.Int() != 1 {
		t.Errorf("count %d, want 1", n.Int())
	}
}
