//go:build js && wasm

package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// passJS moves src's own transactions after the watermark w[key] to dst,
// through JSON text (the app's channel), a page of limit changes at a
// time, and resolves with the number of ChangeSets passed.
const passJS = `return async (src, dst, w, key, limit) => {
	let n = 0;
	for (let more = true; more; ) {
		const page = await src.changesSince(w[key] ?? null, {limit});
		const text = JSON.stringify(page.changeSets);
		if (page.changeSets.length) await dst.applyChanges(JSON.parse(text));
		w[key] = page.next;
		more = page.more;
		n += page.changeSets.length;
	}
	return n;
}`

// TestChangesChannel: two replicas that never meet a relay converge through
// a channel the test drives (db.changesSince and db.applyChanges, the
// ChangeSets carried as JSON text), with watermarks: inserts, a
// multi-row transaction, concurrent writes of one cell (the same winner on
// both sides), a delete. A third replica given all of the first's
// ChangeSets in reverse order ends up identical (order independence), and
// the receiving replica fires remoteChange and refreshes a subscription.
func TestChangesChannel(t *testing.T) {
	a, b := openT(t), openT(t)
	pass := jsfn("", passJS).Invoke()
	w := jsv("{}")
	exchange := func() (ab, ba int) {
		t.Helper()
		ab = must(t, pass.Invoke(a, b, w, "ab", 2)).Int()
		ba = must(t, pass.Invoke(b, a, w, "ba", 2)).Int()
		return ab, ba
	}
	remote := jsv("[]")
	b.Call("on", "remoteChange", jsfn("s", "return (e) => s.push(e)").Invoke(remote))
	seen := jsv("[]")
	stop := b.Call("subscribe", "items", jsfn("s", "return (rows) => s.push(rows.length)").Invoke(seen))
	defer stop.Invoke()

	must(t, a.Call("insert", "items", jsv(`{id: "x", title: "x from a", n: 1}`)))
	must(t, a.Call("insert", "items", jsv(`{id: "y", title: "y from a", n: 2}`)))
	must(t, b.Call("insert", "other", jsv(`{id: "o", v: 7}`)))
	must(t, a.Call("transaction", asyncfn("tx", `
		await tx.insert("items", {id: "z", n: 3, data: new Uint8Array([1, 2, 3]), at: new Date(5), meta: {k: [1, "two"]}});
		await tx.update("items", "x", {n: 10});
		await tx.insert("pair", {a: "p", b: 9007199254740993n, v: "big key"});
	`)))
	// Each side's first transaction is its schema's (create_table
	// migrations, ahead of any data).
	if ab, ba := exchange(); ab != 4 || ba != 2 {
		t.Fatalf("first exchange passed %d ChangeSets a->b and %d b->a, want 4 and 2 (a schema and 3 transactions, a schema and 1)", ab, ba)
	}
	// Nothing new: the watermarks hold.
	if ab, ba := exchange(); ab != 0 || ba != 0 {
		t.Fatalf("second exchange passed %d and %d ChangeSets, want none", ab, ba)
	}
	// Concurrent writes of one cell, and a delete.
	must(t, a.Call("update", "items", "x", jsv(`{title: "x by a"}`)))
	must(t, b.Call("update", "items", "x", jsv(`{title: "x by b"}`)))
	must(t, b.Call("delete", "items", "y"))
	exchange()
	for _, table := range []string{"items", "other", "pair"} {
		ra, rb := must(t, a.Call("query", table)), must(t, b.Call("query", table))
		if !same(ra, rb) {
			t.Fatalf("%s differs:\na: %s\nb: %s", table, describe(ra), describe(rb))
		}
	}
	if n := must(t, a.Call("count", "items")).Int(); n != 2 {
		t.Fatalf("a holds %d items, want 2 (x and z; y deleted)", n)
	}
	if got := must(t, b.Call("get", "pair", jsv(`["p", 9007199254740993n]`))); got.Type() != js.TypeObject {
		t.Fatalf("b lacks the pair row with a key beyond 2^53: %s", describe(got))
	}
	waitFor(t, "remoteChange events on b", func() bool { return remote.Length() >= 4 })
	if e := remote.Index(0); e.Get("remote").Bool() != true || e.Get("siteId").String() != a.Get("siteId").String() {
		t.Fatalf("remoteChange payload %s, want remote from a's site %s", describe(e), a.Get("siteId").String())
	}
	waitFor(t, "b's subscription to see z", func() bool {
		n := seen.Length()
		return n > 0 && seen.Index(n-1).Int() == 2
	})

	// Order independence: every ChangeSet of a and of b, reversed, to a
	// fresh replica.
	pageA := must(t, a.Call("changesSince", js.Null(), jsv(`{limit: 100000}`)))
	pageB := must(t, b.Call("changesSince", js.Null(), jsv(`{limit: 100000}`)))
	if pageA.Get("more").Bool() || pageB.Get("more").Bool() {
		t.Fatalf("one page of 100000 changes should hold everything: %s, %s", describe(pageA), describe(pageB))
	}
	if n := jsfn("p, s", "return p.changeSets.filter((c) => c.siteId !== s).length").Invoke(pageA, a.Get("siteId")).Int(); n != 0 {
		t.Fatalf("a's changesSince returned %d ChangeSets of other sites; a browser replica returns its own", n)
	}
	sets := pageA.Get("changeSets").Call("concat", pageB.Get("changeSets"))
	c := openT(t)
	res := must(t, c.Call("applyChanges", sets.Call("slice").Call("reverse")))
	if res.Get("transactions").Int() != sets.Length() || res.Get("held").Int() != 0 {
		t.Fatalf("applyChanges result %s, want %d transactions and none held", describe(res), sets.Length())
	}
	for _, table := range []string{"items", "other", "pair"} {
		ra, rc := must(t, a.Call("query", table)), must(t, c.Call("query", table))
		if !same(ra, rc) {
			t.Fatalf("%s: reversed apply differs:\na: %s\nc: %s", table, describe(ra), describe(rc))
		}
	}
	// Applying them again changes nothing.
	again := must(t, c.Call("applyChanges", sets))
	if again.Get("applied").Int() != 0 {
		t.Fatalf("applying the same ChangeSets again: %s, want nothing applied", describe(again))
	}
}

// TestApplyChangesGuards: what applyChanges refuses writes nothing — a
// ChangeSet far ahead of this device's clock (CLOCK_DRIFT), malformed
// input (INVALID_ARGUMENT naming the index) — and what it cannot apply yet
// (a table this schema lacks) is held and reported, the rest applied.
func TestApplyChangesGuards(t *testing.T) {
	db := openT(t)
	held := jsv("[]")
	db.Call("on", "held", jsfn("s", "return (e) => s.push(e)").Invoke(held))
	peer := model.SiteID{9, 9, 9}
	changeSet := func(wall uint64, table, id string) string {
		h := model.HLC{Wall: wall, Site: peer}
		var changes []model.Change
		for i, col := range []string{"id", "title"} {
			hc := h
			hc.OpSeq = uint32(i)
			changes = append(changes, model.Change{Type: model.ColumnChange, Table: table, PK: []model.Value{model.Text(id)}, Column: col, Value: model.Text(id), HLC: hc})
		}
		cs := model.ChangeSet{SiteID: peer, TransactionID: h.TransactionID(), HLC: changes[len(changes)-1].HLC, Changes: changes}
		b, err := wire.MarshalChangeSet(&cs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	now := uint64(time.Now().UnixMilli())

	ahead := "[" + changeSet(now, "items", "fine") + "," + changeSet(now+10*60*1000, "items", "future") + "]"
	mustReject(t, db.Call("applyChanges", ahead), "CLOCK_DRIFT")
	if n := must(t, db.Call("count", "items")).Int(); n != 0 {
		t.Fatalf("a refused batch wrote %d rows", n)
	}

	res := must(t, db.Call("applyChanges", jsv("["+changeSet(now, "items", "kept")+","+changeSet(now+1, "ghosts", "g")+"]")))
	if res.Get("applied").Int() != 2 || res.Get("held").Int() != 2 || res.Get("transactions").Int() != 2 {
		t.Fatalf("result %s, want 2 applied, 2 held, 2 transactions", describe(res))
	}
	if got := must(t, db.Call("get", "items", "kept")); got.Type() != js.TypeObject {
		t.Fatal("the applicable ChangeSet of the batch was not applied")
	}
	waitFor(t, "a held event for ghosts", func() bool { return held.Length() == 1 })
	if e := held.Index(0); e.Get("table").String() != "ghosts" || e.Get("reason").String() != "unknownTable" {
		t.Fatalf("held event %s", describe(e))
	}

	for _, bad := range []struct {
		arg  js.Value
		frag string
	}{
		{js.ValueOf(42), "must be an array"},
		{jsv(`{}`), "must be an array"},
		{js.ValueOf(`{"not": "an array"}`), "must be an array"},
		{js.ValueOf("[1,"), "changeSets[0]"},
		{js.ValueOf("[" + changeSet(now, "items", "cut")), "must be an array"},
		{jsv(`[{}]`), "changeSets[0]"},
		{jsv(`[` + changeSet(now, "items", "a") + `, {siteId: "x"}]`), "changeSets[1]"},
		{jsv(`[1n]`), "cannot be written as JSON"},
	} {
		e := mustReject(t, db.Call("applyChanges", bad.arg), "INVALID_ARGUMENT", "db.applyChanges", bad.frag)
		// In the API's terms: no decoder package, no byte offsets.
		if msg := e.Get("message").String(); strings.Contains(msg, "wire:") || strings.Contains(msg, "at byte") {
			t.Errorf("message %q names the decoder", msg)
		}
	}
	if n := must(t, db.Call("count", "items")).Int(); n != 1 {
		t.Fatalf("refused calls wrote rows: %d items, want 1", n)
	}
	for _, bad := range []struct {
		since, opts js.Value
		frag        string
	}{
		{js.ValueOf("not an hlc"), js.Undefined(), "since must be"},
		{js.ValueOf(5), js.Undefined(), "since must be"},
		{js.Null(), jsv(`{limit: 0}`), "limit"},
		{js.Null(), jsv(`{limit: 1.5}`), "limit"},
		{js.Null(), jsv(`{limit: "10"}`), "options"},
		{js.Null(), jsv(`{bogus: true}`), "bogus"},
		{js.Null(), js.ValueOf("x"), "options must be an object"},
	} {
		mustReject(t, db.Call("changesSince", bad.since, bad.opts), "INVALID_ARGUMENT", "db.changesSince", bad.frag)
	}
	// The replica's own first transaction is its schema; after it, an
	// empty page keeps the watermark.
	page := must(t, db.Call("changesSince", js.Null(), js.Undefined()))
	if page.Get("changeSets").Length() != 1 || page.Get("changeSets").Index(0).Get("changes").Length() != 0 || page.Get("more").Bool() {
		t.Fatalf("a replica with no writes of its own: %s, want its schema's ChangeSet alone", describe(page))
	}
	empty := must(t, db.Call("changesSince", page.Get("next"), js.Undefined()))
	if empty.Get("changeSets").Length() != 0 || empty.Get("next").String() != page.Get("next").String() || empty.Get("more").Bool() {
		t.Fatalf("after the last ChangeSet: %s, want an empty page at the same watermark %s", describe(empty), page.Get("next").String())
	}
}
