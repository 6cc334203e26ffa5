//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/model"
)

// inspectJS runs body (an async function of a, b, Replica and check,
// which throws an Error whose message lists what differs) and fails t
// with its message.
func inspectJS(t *testing.T, body string, args ...any) {
	t.Helper()
	const check = `function check(what, got, want) {
		const g = JSON.stringify(got), w = JSON.stringify(want);
		if (g !== w) throw new Error(what + ": got " + g + ", want " + w);
	}
	`
	fn := asyncfn("a, b, Replica", check+body)
	all := append([]any{}, args...)
	for len(all) < 2 {
		all = append(all, js.Undefined())
	}
	all = append(all, js.Global().Get("Replica"))
	if v, rej := await(fn.Invoke(all...)); rej {
		t.Fatal(describe(v))
	}
}

// TestInspectCells: db.inspect.rows gives each cell its value, HLC and
// writing site: two replicas exchange their writes (changesSince and
// applyChanges) and each cell names the replica that last wrote it;
// values keep their types (a Date, a BigInt); a deleted row leaves the
// live rows and appears with {deleted: true}, its tombstone naming the
// deleting site and its values the image it had.
func TestInspectCells(t *testing.T) {
	a, b := openT(t), openT(t)
	inspectJS(t, `
		await a.insert("items", {id: "x", title: "from a", n: 1, at: new Date(86400000)});
		await a.insert("items", {id: "y", title: "doomed", n: 2});
		await b.applyChanges((await a.changesSince(null)).changeSets);
		await b.update("items", "x", {title: "from b", n: 9007199254740993n});
		await a.applyChanges((await b.changesSince(null)).changeSets);
		await a.delete("items", "y");

		const page = await a.inspect.rows("items");
		check("live keys", page.rows.map((r) => r.key), [["x"]]);
		check("next", page.next, null);
		check("scanned", page.scanned, 2);
		const x = page.rows[0];
		check("cell sites", Object.fromEntries(Object.entries(x.cells).map(([c, h]) => [c, h.siteId === a.siteId ? "a" : h.siteId === b.siteId ? "b" : h.siteId])),
			{at: "a", data: "a", id: "a", meta: "a", n: "b", ok: "a", r: "a", title: "b"});
		check("hlc names its site", x.cells.title.hlc.endsWith("@" + b.siteId + "/0") || x.cells.title.hlc.includes("@" + b.siteId + "/"), true);
		check("at is the hlc's wall", String(x.cells.title.at), x.cells.title.hlc.split(".")[0]);
		check("title", x.values.title, "from b");
		check("bigint", typeof x.values.n === "bigint" && x.values.n === 9007199254740993n, true);
		const p = await a.insert("pair", {a: "k", b: 7});
		check("a two-column key: text and number", (await a.inspect.rows("pair")).rows.map((r) => [r.key, r.values]), [[["k", 7], {a: "k", b: 7, v: null}]]);
		check("date", x.values.at instanceof Date && x.values.at.getTime() === 86400000, true);
		check("columns in schema order", Object.keys(x.values), ["id", "title", "n", "r", "ok", "at", "data", "meta"]);
		check("not deleted", [x.deleted, x.tombstone], [false, undefined]);

		const trash = await a.inspect.rows("items", {deleted: true});
		check("deleted keys", trash.rows.map((r) => r.key), [["y"]]);
		const y = trash.rows[0];
		check("tombstone", [y.deleted, y.tombstone.siteId === a.siteId], [true, true]);
		check("image", y.values.title, "doomed");
		const onB = await b.inspect.rows("items", {deleted: true});
		check("b has not seen the delete", onB.rows.length, 0);
	`, a, b)
}

// TestInspectPaging: rows page in key order with next cursors to the
// end; search matches a case-insensitive substring (or, with prefix, the
// start) of any cell, keys included; maxScan stops a sparse search early
// with next set; bad arguments are INVALID_ARGUMENT (VALIDATION for a
// table the replica lacks) with the method in the message.
func TestInspectPaging(t *testing.T) {
	a := openT(t)
	inspectJS(t, `
		await a.transaction(async (tx) => {
			for (let i = 0; i < 25; i++) tx.insert("other", {id: "k" + String(i).padStart(2, "0"), v: i * 10});
		});
		const seen = [];
		let next = undefined, pages = 0;
		do {
			const p = await a.inspect.rows("other", {limit: 10, after: next});
			seen.push(...p.rows.map((r) => r.key[0]));
			next = p.next;
			pages++;
		} while (next !== null && pages < 10);
		check("pages", pages, 3);
		check("every key once, in order", seen.join(","), Array.from({length: 25}, (_, i) => "k" + String(i).padStart(2, "0")).join(","));
		const exact = await a.inspect.rows("other", {limit: 25});
		check("a full last page has no next", exact.next, null);

		check("substring", (await a.inspect.rows("other", {search: "K1"})).rows.map((r) => r.key[0]),
			["k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17", "k18", "k19"]);
		check("number cells", (await a.inspect.rows("other", {search: "240"})).rows.map((r) => r.key[0]), ["k24"]);
		check("prefix", (await a.inspect.rows("other", {search: "2", prefix: true})).rows.map((r) => r.key[0]), ["k02", "k20", "k21", "k22", "k23", "k24"]);
		const none = await a.inspect.rows("other", {search: "zzz"});
		check("no match", [none.rows.length, none.next, none.scanned], [0, null, 25]);
		const sparse = await a.inspect.rows("other", {search: "k24", maxScan: 10});
		check("maxScan", [sparse.rows.length, sparse.next !== null, sparse.scanned], [0, true, 10]);
		const rest = await a.inspect.rows("other", {search: "k24", after: sparse.next});
		check("resumed", rest.rows.map((r) => r.key[0]), ["k24"]);

		async function fails(p, code, text) {
			try { await p; } catch (e) {
				check("code of " + text, e.code, code);
				if (!e.message.includes(text)) throw new Error("message " + JSON.stringify(e.message) + " lacks " + JSON.stringify(text));
				return;
			}
			throw new Error("resolved, want " + code + " " + text);
		}
		await fails(a.inspect.rows(42), "INVALID_ARGUMENT", "db.inspect.rows: table must be a string");
		await fails(a.inspect.rows("nope"), "VALIDATION", "nope");
		await fails(a.inspect.rows("other", {limit: 0}), "INVALID_ARGUMENT", "options.limit must be an integer from 1 to 1000");
		await fails(a.inspect.rows("other", {limit: 2.5}), "INVALID_ARGUMENT", "options.limit");
		await fails(a.inspect.rows("other", {after: "!!"}), "INVALID_ARGUMENT", "options.after must be a page's next cursor");
		await fails(a.inspect.rows("items", {after: exact.rows[3] && (await a.inspect.rows("other", {limit: 1})).next}), "INVALID_ARGUMENT", "cursor is not one of this table's");
		await fails(a.inspect.rows("items", {after: "garbage"}), "INVALID_ARGUMENT", "cursor is not one of this table's");
		await fails(a.inspect.heldChanges({after: "junk"}), "INVALID_ARGUMENT", "the held-change cursor is not one");
		await fails(a.inspect.heldChanges({table: "nosuch", after: (await a.inspect.rows("other", {limit: 1})).next}), "INVALID_ARGUMENT", "the held-change cursor is not one");
		await fails(a.inspect.rows("other", {bogus: 1}), "INVALID_ARGUMENT", "unknown option \"bogus\"");
		await fails(a.inspect.rows("other", "x"), "INVALID_ARGUMENT", "options must be an object");
		await fails(a.inspect.changeLog({before: "yesterday"}), "INVALID_ARGUMENT", "options.before must be an HLC");
		await fails(a.inspect.heldChanges({limit: 5000}), "INVALID_ARGUMENT", "db.inspect.heldChanges: options.limit");
		await fails(a.inspect.tables({counts: "yes"}), "INVALID_ARGUMENT", "options.counts must be a boolean");
	`, a)
}

// TestInspectLogHeldSync: with no relay ever synced, every local
// transaction is in the change log, newest first, unsent, with its rows
// per table, and db.inspect.sync counts them; changes held for a table
// the schema lacks are listed with their reason; tables lists the schema
// with live row counts.
func TestInspectLogHeldSync(t *testing.T) {
	a := openT(t)
	d := dbOf(t, a)
	heldBatch(t, d, model.SiteID{7, 7},
		heldCell{"ghosts", textKey("g1"), "name", model.Text("Casper")},
		heldCell{"items", textKey("i1"), "nosuch", model.Int(3)},
	)
	inspectJS(t, `
		await a.insert("items", {id: "one"});
		await a.transaction(async (tx) => { await tx.insert("items", {id: "two"}); await tx.insert("other", {id: "o", v: 1}); });
		await a.update("items", "one", {title: "t"});

		const log = await a.inspect.changeLog();
		check("next", log.next, null);
		check("sentWatermark", log.sentWatermark, null);
		const ours = log.entries.filter((e) => e.tables.items || e.tables.other);
		check("entries, newest first", log.entries.map((e) => [e.tables, e.rows, e.migrations.length > 0]), [[{items: 1}, 1, false], [{items: 1, other: 1}, 2, false], [{items: 1}, 1, false], [{}, 0, true]]);
		check("the schema's creation", log.entries[3].migrations.slice(0, 2), ["create_table items", "create_table other"]);
		check("all unsent", log.entries.every((e) => e.unsent), true);
		check("hlc order", ours[0].hlc > ours[1].hlc || ours[0].at >= ours[1].at, true);
		check("hlc is this site's", ours[0].hlc.includes("@" + a.siteId + "/"), true);
		const two = await a.inspect.changeLog({limit: 2});
		check("paged", [two.entries.length, two.next === two.entries[1].hlc], [2, true]);
		const older = await a.inspect.changeLog({before: two.next, limit: 1000});
		check("the rest", older.entries.length, log.entries.length - 2);
		const unsent = await a.inspect.changeLog({unsent: true});
		check("unsent = all", unsent.entries.length, log.entries.length);

		check("none superseded", log.entries.some((e) => e.superseded), false);
		await a.insert("items", {id: "gone"});
		await a.delete("items", "gone");
		check("an insert whose row was deleted is superseded", (await a.inspect.changeLog({limit: 2})).entries.map((e) => [e.tables, e.unsent, e.superseded]),
			[[{items: 1}, true, false], [{items: 1}, true, true]]);

		const sync = await a.inspect.sync();
		check("sync", [sync.siteId === a.siteId, sync.target, sync.sentWatermark, sync.unsent, sync.state], [true, null, null, log.entries.length + 2, []]);
		check("status", typeof sync.status.status, "string");

		const held = await a.inspect.heldChanges();
		check("held", held.changes.map((c) => [c.table, c.key, c.type, c.column, c.value, c.reason, c.replayable, c.siteId.length > 0]),
			[["ghosts", ["g1"], "column", "name", "\"Casper\"", "unknownTable", true, true], ["items", ["i1"], "column", "nosuch", "3", "unknownColumn", true, true]]);
		check("held next", held.next, null);
		const first = await a.inspect.heldChanges({limit: 1});
		check("held paged", [first.changes.length, (await a.inspect.heldChanges({after: first.next})).changes.map((c) => c.table)], [1, ["items"]]);
		check("held by table", (await a.inspect.heldChanges({table: "items"})).changes.length, 1);

		const tables = await a.inspect.tables();
		const items = tables.find((t) => t.name === "items");
		check("items", [items.rows, items.primaryKey, items.columns[1], items.indexes], [2, ["id"], {name: "title", type: "text", notNull: false}, [{name: "by_n", columns: ["n"]}]]);
		check("strict default", tables.find((t) => t.name === "strict").columns[2], {name: "qty", type: "integer", notNull: false, default: "1"});
		check("no counts", "rows" in (await a.inspect.tables({counts: false}))[0], false);
		await a.delete("items", "two");
		check("count", await a.inspect.count("items"), {rows: 1, deleted: 2});
		check("tables count deleted rows", (await a.inspect.tables()).find((t) => t.name === "items").deleted, 2);
		try { await a.inspect.count("nope"); throw new Error("counted nope"); } catch (e) { check("count nope", e.code, "VALIDATION"); }
	`, a)
}

// TestOpenStoredSchema: Replica.open without options.schema opens the
// schema the replica holds (a second handle sees the tables and rows the
// first wrote); a name nothing was stored under is NOT_FOUND, and a
// schema of null is INVALID_ARGUMENT.
func TestOpenStoredSchema(t *testing.T) {
	a := openT(t)
	name := a.Get("name").String()
	missing := dbName(t)
	t.Cleanup(func() { deleteIDB(missing); deleteIDB(missing + "-empty") })
	inspectJS(t, `
		await a.insert("pair", {a: "p", b: 1, v: "kept"});
		const c = await Replica.open({name: a.name});
		try {
			check("tables", (await c.inspect.tables()).map((t) => t.name), (await a.inspect.tables()).map((t) => t.name));
			check("row", await c.get("pair", ["p", 1]), {a: "p", b: 1, v: "kept"});
			check("writes", (await c.insert("other", {id: "w", v: 2})).v, 2);
		} finally { await c.close(); }
		try { await Replica.open({name: b}); throw new Error("opened a replica never created"); }
		catch (e) { check("missing", [e.code, e.message.includes("give options.schema")], ["NOT_FOUND", true]); }
		check("nothing created", (await indexedDB.databases()).some((d) => d.name === "replica:" + b), false);
		await new Promise((resolve) => { const q = indexedDB.open("replica:" + b + "-empty"); q.onsuccess = () => { q.result.close(); resolve(); }; });
		try { await Replica.open({name: b + "-empty"}); throw new Error("opened a replica without tables"); }
		catch (e) { check("no tables", [e.code, e.message.includes("with tables")], ["NOT_FOUND", true]); }
		try { await Replica.open({name: a.name, schema: null}); throw new Error("opened with schema null"); }
		catch (e) { check("null schema", e.code, "INVALID_ARGUMENT"); }
	`, a, missing)
	_ = name
}

// TestInspectConflicts: db.inspect.conflicts in one tab (here a second
// handle of the replica, opened by name without a schema) receives the
// conflicts another tab resolves, marked fromOtherTab, as well as its
// own; after unsubscribing it receives none.
func TestInspectConflicts(t *testing.T) {
	a, b := openT(t), openT(t)
	inspectJS(t, `
		const ins = await Replica.open({name: a.name});
		try {
			const got = [];
			const off = ins.inspect.conflicts((c) => got.push(c));
			await new Promise((r) => setTimeout(r, 50)); // the other tab learns an inspector listens
			await a.insert("items", {id: "x", title: "start"});
			await b.applyChanges((await a.changesSince(null)).changeSets);
			await a.update("items", "x", {title: "A"});
			await b.update("items", "x", {title: "B"});
			await a.applyChanges((await b.changesSince(null)).changeSets);
			for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
			check("forwarded", got.map((c) => [c.table, c.pk, c.column, c.localValue, c.remoteValue, c.fromOtherTab, c.remoteSiteId === b.siteId]),
				[["items", ["x"], "title", "A", "B", true, true]]);
			// After the last listener goes, the other tab stops forwarding
			// its conflicts over the channel.
			const sniff = new BroadcastChannel("replica:" + a.name), sent = [];
			sniff.onmessage = (e) => { if (e.data && e.data.conflict) sent.push(e.data.conflict.column); };
			off();
			await new Promise((r) => setTimeout(r, 50)); // the other tab learns no inspector listens
			await a.update("items", "x", {title: "A2"});
			await b.update("items", "x", {title: "B2"});
			await a.applyChanges((await b.changesSince(null)).changeSets);
			await new Promise((r) => setTimeout(r, 200));
			sniff.close();
			check("after off", got.length, 1);
			check("forwarded after off", sent, []);
			try { ins.inspect.conflicts(42); throw new Error("took 42"); } catch (e) { check("bad listener", e.code, "INVALID_ARGUMENT"); }
		} finally { await ins.close(); }
	`, a, b)
}

// TestInspectOpenArgs: db.inspect.open refuses options it cannot use with
// INVALID_ARGUMENT before opening any window: a url that is not a URL (a
// bare TypeError before), an unknown option and a target that is not a
// string (both ignored before).
func TestInspectOpenArgs(t *testing.T) {
	a := openT(t)
	inspectJS(t, `
		const got = [];
		for (const o of [{url: "http://[bad"}, {bogus: 1}, {target: 5}, {url: 5}, 5]) {
			try { a.inspect.open(o); got.push("opened"); } catch (e) { got.push(e instanceof Replica.ReplicaError ? e.code + " " + e.message : "not a ReplicaError: " + e); }
		}
		check("refusals", got, [
			'INVALID_ARGUMENT db.inspect.open: options.url is not a URL: "http://[bad"',
			'INVALID_ARGUMENT db.inspect.open: unknown option "bogus" (known: url, target)',
			"INVALID_ARGUMENT db.inspect.open: options.target must be a string, got number",
			"INVALID_ARGUMENT db.inspect.open: options.url must be a string, got number",
			"INVALID_ARGUMENT db.inspect.open: options must be an object {url?, target?}, got number",
		]);
	`, a)
}
