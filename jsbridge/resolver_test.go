//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// openResolver opens a fresh replica with testSchema and options.resolver
// set to resolver (a string or a function).
func openResolver(t *testing.T, resolver js.Value) js.Value {
	t.Helper()
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	opts := jsv("{name: " + jsString(name) + ", schema: " + testSchema + "}")
	opts.Set("resolver", resolver)
	db := must(t, js.Global().Get("Replica").Call("open", opts))
	t.Cleanup(func() { await(db.Call("close")) })
	return db
}

// TestResolverFunction: a resolver function decides conflicts on every
// replica, and, being a function of the two versions alone (here: the
// larger n wins), makes them converge on a value last-writer-wins would
// not pick: the later write (a's 5) loses to the earlier 9 on both
// sides. The resolver sees the conflict: table, column, key, both values,
// HLCs and site ids.
func TestResolverFunction(t *testing.T) {
	seen := jsv("[]")
	maxWins := jsfn("seen", `return (c) => { seen.push(c); return c.remoteValue > c.localValue ? "remote" : "local"; }`).Invoke(seen)
	a, b := openResolver(t, maxWins), openResolver(t, maxWins)
	pass := jsfn("", passJS).Invoke()
	send := func(src, dst js.Value) { t.Helper(); must(t, pass.Invoke(src, dst, jsv("{}"), "w", 1000)) }

	must(t, a.Call("insert", "items", jsv(`{id: "x", n: 1}`)))
	send(a, b)
	must(t, b.Call("update", "items", "x", jsv(`{n: 9}`)))
	must(t, a.Call("update", "items", "x", jsv(`{n: 5}`))) // later: LWW would keep 5
	send(a, b)
	send(b, a)
	for _, db := range []js.Value{a, b} {
		if n := must(t, db.Call("get", "items", "x")).Get("n").Int(); n != 9 {
			t.Fatalf("n = %d, want 9 (the larger) on both replicas", n)
		}
	}
	if seen.Length() < 2 {
		t.Fatalf("the resolver was called %d times, want at least 2 (once per side)", seen.Length())
	}
	var onB js.Value
	for i := 0; i < seen.Length(); i++ {
		if c := seen.Index(i); c.Get("localSiteId").String() == b.Get("siteId").String() {
			onB = c
		}
	}
	if onB.IsUndefined() {
		t.Fatal("no conflict seen on b")
	}
	want := map[string]string{"table": "items", "column": "n", "remoteSiteId": a.Get("siteId").String()}
	for k, v := range want {
		if got := onB.Get(k).String(); got != v {
			t.Errorf("ctx.%s = %q, want %q (ctx %s)", k, got, v, describe(onB))
		}
	}
	if onB.Get("localValue").Int() != 9 || onB.Get("remoteValue").Int() != 5 || !same(onB.Get("pk"), jsv(`["x"]`)) {
		t.Errorf("ctx %s: want localValue 9, remoteValue 5, pk [\"x\"]", describe(onB))
	}
	if h := onB.Get("localHlc").String(); len(h) < 10 || h[len(h)-2:] != "/0" && h[len(h)-2:] != "/1" {
		t.Errorf("ctx.localHlc %q, want the wall.counter@site/opSeq form", h)
	}
}

// TestResolverBuiltins: "localWins" keeps the local version of a cell
// against a later remote write, "remoteWins" takes an earlier remote one,
// where last-writer-wins would do the opposite; a resolver function that
// throws or answers anything but "local" or "remote" (a Promise
// included) leaves the decision to last-writer-wins, and the apply goes
// on. Bad values of the option are refused at open.
func TestResolverBuiltins(t *testing.T) {
	src := openT(t)
	pass := jsfn("", passJS).Invoke()
	send := func(from, to js.Value) { t.Helper(); must(t, pass.Invoke(from, to, jsv("{}"), "w", 1000)) }
	must(t, src.Call("insert", "items", jsv(`{id: "x", n: 1}`)))

	local := openResolver(t, js.ValueOf("localWins"))
	send(src, local)
	must(t, local.Call("update", "items", "x", jsv(`{n: 100}`)))
	must(t, src.Call("update", "items", "x", jsv(`{n: 5}`))) // later than local's 100
	send(src, local)
	if n := must(t, local.Call("get", "items", "x")).Get("n").Int(); n != 100 {
		t.Errorf("localWins: n = %d, want the local 100", n)
	}

	for _, c := range []struct {
		name     string
		resolver js.Value
		want     int
	}{
		{"remoteWins", js.ValueOf("remoteWins"), 5},
		{"lww", js.ValueOf("lww"), 200},
		{"throws", jsfn("", `return () => { throw new Error("resolver bug"); }`).Invoke(), 200},
		{"promise", jsfn("", `return async () => "remote"`).Invoke(), 200},
		{"bad answer", jsfn("", `return () => true`).Invoke(), 200},
	} {
		db := openResolver(t, c.resolver)
		send(src, db)                                             // x with n = 5
		must(t, db.Call("update", "items", "x", jsv(`{n: 200}`))) // later than src's 5
		w := jsv("{}")
		must(t, pass.Invoke(src, db, w, "w", 1000)) // n = 5 again: a conflict with the local 200
		if n := must(t, db.Call("get", "items", "x")).Get("n").Int(); n != c.want {
			t.Errorf("%s: n = %d, want %d", c.name, n, c.want)
		}
	}

	for _, bad := range []struct {
		v    js.Value
		frag string
	}{
		{js.ValueOf("bogus"), `options.resolver must be "lww", "localWins", "remoteWins" or a function`},
		{js.ValueOf("function"), "options.resolver"},
		{js.ValueOf(5), "options.resolver must be a string"},
	} {
		opts := jsv("{name: " + jsString(dbName(t)) + ", schema: " + testSchema + "}")
		opts.Set("resolver", bad.v)
		mustReject(t, js.Global().Get("Replica").Call("open", opts), "INVALID_ARGUMENT", bad.frag)
	}
}
