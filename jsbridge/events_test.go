//go:build js && wasm

package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestConflictEventSites: a conflict event names the site of each side
// (localSiteId, remoteSiteId), so apps need not parse HLCs.
func TestConflictEventSites(t *testing.T) {
	local, remote := model.SiteID{1, 2, 3}, model.SiteID{9, 8, 7}
	r := conflictResult(&engine.Conflict{
		Table: "items", Column: "n", PK: []model.Value{model.Text("k")},
		LocalValue: model.Int(1), LocalHLC: model.HLC{Wall: 5, Site: local},
		RemoteValue: model.Int(2), RemoteHLC: model.HLC{Wall: 6, Site: remote},
		RemoteWon: true, WinningHLC: model.HLC{Wall: 6, Site: remote},
	})
	for _, want := range []string{`"localSiteId":"` + local.String() + `"`, `"remoteSiteId":"` + remote.String() + `"`} {
		if !strings.Contains(r.text, want) {
			t.Errorf("conflict event %s lacks %s", r.text, want)
		}
	}
}

// TestChangeEventRows: a change event lists the rows its transaction
// changed — table, key (a BigInt and a Date key survive), columns
// written, deletion with the prior row — and when: for a local insert, an
// update, a multi-row transaction with a delete, and a remote change
// (applyChanges), and in another tab of the replica (the notice carries
// them); a conflict event carries the remote write's before-image.
func TestChangeEventRows(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDB(t, name, testSchema)
	other := openDB(t, name, testSchema)
	events, fromOther := jsv("[]"), jsv("[]")
	db.Call("on", "change", jsfn("s", "return (e) => s.push(e)").Invoke(events))
	other.Call("on", "change", jsfn("s", "return (e) => s.push(e)").Invoke(fromOther))
	waitFor(t, "the tabs to know each other", func() bool { return dbOf(t, db).wants(listenPeers) })
	before := jsv("Date.now()").Float()

	must(t, db.Call("insert", "items", jsv(`{id: "a", title: "first", n: 1}`)))
	must(t, db.Call("update", "items", "a", jsv(`{n: 2}`)))
	must(t, db.Call("transaction", asyncfn("tx", `
		await tx.insert("pair", {a: "p", b: 9007199254740993n, v: "big"});
		await tx.delete("items", "a");
	`)))
	waitFor(t, "three change events", func() bool { return events.Length() == 3 })
	check := func(what string, ev js.Value, want string) {
		t.Helper()
		ch := ev.Get("changes")
		if !same(ch, jsv(want)) {
			t.Errorf("%s: changes %s\nwant %s", what, describe(ch), want)
		}
		if at := ev.Get("at").Float(); at < before || at > jsv("Date.now()").Float() {
			t.Errorf("%s: at %v, want between %v and now", what, at, before)
		}
	}
	check("insert", events.Index(0), `[{table: "items", columns: ["at", "data", "id", "meta", "n", "ok", "r", "title"], deleted: false, pk: ["a"]}]`) // an insert writes every column
	check("update", events.Index(1), `[{table: "items", columns: ["n"], deleted: false, pk: ["a"]}]`)
	check("transaction", events.Index(2), `[
		{table: "items", columns: [], deleted: true, pk: ["a"],
			priorRow: {id: "a", title: "first", n: 2, r: null, ok: null, at: null, data: null, meta: null}},
		{table: "pair", columns: ["a", "b", "v"], deleted: false, pk: ["p", 9007199254740993n]}]`)
	waitFor(t, "the other tab's notices", func() bool { return fromOther.Length() == 3 })
	for i := range 3 {
		if !same(fromOther.Index(i).Get("changes"), events.Index(i).Get("changes")) {
			t.Errorf("other tab, event %d: changes %s, want %s", i, describe(fromOther.Index(i).Get("changes")), describe(events.Index(i).Get("changes")))
		}
	}

	// A remote change, through applyChanges.
	src := openT(t)
	must(t, src.Call("insert", "other", jsv(`{id: "o", v: 7}`)))
	page := must(t, src.Call("changesSince", js.Null()))
	must(t, db.Call("applyChanges", page.Get("changeSets")))
	waitFor(t, "the remote change event", func() bool { return events.Length() >= 5 })
	last := events.Index(events.Length() - 1)
	if !last.Get("remote").Bool() || last.Get("siteId").String() != src.Get("siteId").String() {
		t.Fatalf("remote change event %s", describe(last))
	}
	check("remote", last, `[{table: "other", columns: ["id", "v"], deleted: false, pk: ["o"]}]`)
}

// TestConflictEventPrior: a conflict event carries the remote write's
// before-image (remotePriorValue, remotePriorHlc) when it had one.
func TestConflictEventPrior(t *testing.T) {
	local, remote := model.SiteID{1, 2, 3}, model.SiteID{9, 8, 7}
	c := &engine.Conflict{
		Table: "items", Column: "n", PK: []model.Value{model.Text("k")},
		LocalValue: model.Int(1), LocalHLC: model.HLC{Wall: 5, Site: local},
		RemoteValue: model.Int(2), RemoteHLC: model.HLC{Wall: 6, Site: remote},
		RemoteWon: true, WinningHLC: model.HLC{Wall: 6, Site: remote},
	}
	if r := conflictResult(c); strings.Contains(r.text, "remotePrior") {
		t.Errorf("conflict without a before-image: %s", r.text)
	}
	c.HasRemotePrior, c.RemotePriorValue, c.RemotePriorHLC = true, model.Int(0), model.HLC{Wall: 4, Site: remote}
	r := conflictResult(c)
	for _, want := range []string{`"remotePriorValue":0`, `"remotePriorHlc":"` + c.RemotePriorHLC.String() + `"`} {
		if !strings.Contains(r.text, want) {
			t.Errorf("conflict event %s lacks %s", r.text, want)
		}
	}
}
