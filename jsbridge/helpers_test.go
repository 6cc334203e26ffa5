//go:build js && wasm

package jsbridge

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall/js"
	"testing"
	"time"
)

// testSchema is the schema most tests open replicas with.
const testSchema = `{tables: {
	items: {columns: {id: "text", title: "text", n: "integer", r: "real", ok: "boolean",
		at: "timestamp", data: "blob", meta: "json"}, indexes: {by_n: ["n"]}},
	other: {columns: {id: "text", v: "integer"}},
	pair: {columns: {a: "text", b: "integer", v: "text"}, primaryKey: ["a", "b"]},
	strict: {columns: {id: "text", name: {type: "text", notNull: true}, qty: {type: "integer", default: 1}}},
}}`

// testJS holds helpers for the tests, compiled once: same(a, b) compares
// values exactly (Object.is for numbers, BigInt, Date time, bytes), and
// describe(v) prints one.
const testJS = `
function same(a, b) {
	if (typeof a !== typeof b) return false;
	if (typeof a === "number") return Object.is(a, b);
	if (typeof a !== "object" || a === null || b === null) return a === b;
	if (a instanceof Date) return b instanceof Date && a.getTime() === b.getTime();
	if (a instanceof Uint8Array) return b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
	if (Array.isArray(a) !== Array.isArray(b)) return false;
	const ka = Object.keys(a), kb = Object.keys(b);
	if (ka.length !== kb.length) return false;
	return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
}
function describe(v) {
	if (typeof v === "bigint") return v + "n";
	if (v instanceof Date) return "Date(" + v.getTime() + ")";
	if (v instanceof Uint8Array) return "Uint8Array[" + Array.from(v).join(",") + "]";
	if (typeof v === "number" && Object.is(v, -0)) return "-0";
	if (Array.isArray(v)) return "[" + v.map(describe).join(", ") + "]";
	if (v instanceof Error) return v.name + "(" + v.code + "): " + v.message;
	if (v && typeof v === "object") return "{" + Object.keys(v).map((k) => k + ": " + describe(v[k])).join(", ") + "}";
	if (typeof v === "string") return JSON.stringify(v);
	return String(v);
}
return { same, describe };
`

var testHelpers = js.Global().Get("Function").New(testJS).Invoke()

// jsv evaluates a JavaScript expression.
func jsv(expr string) js.Value {
	return js.Global().Get("Function").New("return (" + expr + ");").Invoke()
}

// jsfn compiles a function from its parameters and body.
func jsfn(params, body string) js.Value {
	return js.Global().Get("Function").New(params, body)
}

func describe(v js.Value) string { return testHelpers.Call("describe", v).String() }

func same(a, b js.Value) bool { return testHelpers.Call("same", a, b).Bool() }

// await waits for the promise p (or returns a non-promise value) and
// returns its value, or the rejection reason with rejected set.
func await(p js.Value) (v js.Value, rejected bool) {
	if p.Type() != js.TypeObject || p.Get("then").Type() != js.TypeFunction {
		return p, false
	}
	type res struct {
		v   js.Value
		rej bool
	}
	c := make(chan res, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any { c <- res{v: arg0(args)}; return nil })
	bad := js.FuncOf(func(_ js.Value, args []js.Value) any { c <- res{v: arg0(args), rej: true}; return nil })
	defer ok.Release()
	defer bad.Release()
	p.Call("then", ok, bad)
	select {
	case r := <-c:
		return r.v, r.rej
	case <-time.After(20 * time.Second):
		return js.ValueOf("timed out after 20 s"), true
	}
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// must awaits p and fails t if it rejects.
func must(t testing.TB, p js.Value) js.Value {
	t.Helper()
	v, rej := await(p)
	if rej {
		t.Fatalf("rejected: %s", describe(v))
	}
	return v
}

// mustReject awaits p, which must reject with a ReplicaError of code whose
// message contains every fragment; it returns the error.
func mustReject(t testing.TB, p js.Value, code string, fragments ...string) js.Value {
	t.Helper()
	v, rej := await(p)
	if !rej {
		t.Fatalf("resolved with %s, want a %s rejection", describe(v), code)
	}
	checkError(t, v, code, fragments...)
	return v
}

func checkError(t testing.TB, v js.Value, code string, fragments ...string) {
	t.Helper()
	if !v.InstanceOf(js.Global().Get("Error")) {
		t.Fatalf("rejected with %s, not an Error", describe(v))
	}
	if got := v.Get("code"); got.Type() != js.TypeString || got.String() != code {
		t.Fatalf("error %s: code %s, want %s", describe(v), describe(got), code)
	}
	msg := v.Get("message").String()
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error message %q lacks %q", msg, f)
		}
	}
}

var dbSeq atomic.Int64

// dbName returns a replica name not used before in this run.
func dbName(t testing.TB) string {
	n := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("jsbridge-%d-%s", dbSeq.Add(1), n)
}

// openDB opens a replica named name with schema (a JS expression); it is
// closed, and its IndexedDB database deleted, when t ends.
func openDB(t testing.TB, name, schema string) js.Value {
	t.Helper()
	opts := jsv("{name: " + jsString(name) + ", schema: " + schema + "}")
	db := must(t, js.Global().Get("Replica").Call("open", opts))
	t.Cleanup(func() {
		await(db.Call("close"))
	})
	return db
}

// openT opens a fresh replica with testSchema.
func openT(t testing.TB) js.Value {
	t.Helper()
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	return openDB(t, name, testSchema)
}

func deleteIDB(name string) {
	req := js.Global().Get("indexedDB").Call("deleteDatabase", IDBPrefix+name)
	done := make(chan struct{})
	f := js.FuncOf(func(js.Value, []js.Value) any { close(done); return nil })
	defer f.Release()
	req.Set("onsuccess", f)
	req.Set("onerror", f)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

func jsString(s string) string {
	return js.Global().Get("JSON").Call("stringify", s).String()
}

// waitFor polls cond (every 5 ms, up to 5 s).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var asyncFunction = jsv("Object.getPrototypeOf(async function () {}).constructor")

// asyncfn compiles an async function from its parameters and body.
func asyncfn(params, body string) js.Value { return asyncFunction.New(params, body) }
