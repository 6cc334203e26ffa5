// inspect.js: the replica inspector (GET /inspect?db=NAME, served by the
// relay with -inspect). It opens the named replica of this origin's
// IndexedDB as another tab would (Replica.open without a schema: the
// schema the replica holds) and shows what db.inspect reads: tables and
// rows with each cell's HLC and writing site, tombstones, held changes,
// the change log, sync state and cursors, and conflicts as they happen.
"use strict";

(() => {
	const $ = (id) => document.getElementById(id);
	const nf = new Intl.NumberFormat("en-US");
	const PAGE = 50;

	function h(tag, attrs, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v === undefined || v === null || v === false) continue;
			if (k === "class") e.className = v;
			else if (k === "text") e.textContent = v;
			else if (k.startsWith("data-") || k.startsWith("aria-") || k === "for" || k === "role" || k === "title") e.setAttribute(k, v === true ? "" : v);
			else e[k] = v;
		}
		for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
		return e;
	}

	// show writes a value as text: dates in ISO form, BigInts with n,
	// bytes by length, json values as JSON.
	function show(v) {
		if (v === null || v === undefined) return "null";
		if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
		if (typeof v === "bigint") return v + "n";
		if (v instanceof Uint8Array) return "bytes(" + v.length + ")";
		if (typeof v === "object") return JSON.stringify(v);
		return String(v);
	}
	function cellTD(v) {
		return h("td", { class: v === null ? "null" : typeof v === "number" || typeof v === "bigint" ? "num" : null, title: show(v) }, show(v));
	}
	function when(ms) { return new Date(ms).toISOString().replace("T", " ").replace("Z", ""); }

	// site draws a site id in a colour of its own (the same site, the same
	// colour everywhere), "this device" for the replica's own.
	function site(id) {
		let x = 0;
		for (const c of id) x = (x * 31 + c.charCodeAt(0)) >>> 0;
		const mine = state.db && id === state.db.siteId;
		return h("span", { class: "site", title: id + (mine ? " (this device)" : ""), style: "background:hsl(" + (x % 360) + ",55%,34%)", "data-site": id },
			id.slice(0, 8) + (mine ? " · this device" : ""));
	}

	const state = {
		db: null, name: "", tables: [], view: null, conflicts: [], seenConflicts: 0,
		held: 0, unsent: 0, sync: null, refreshTimer: 0, lastMs: 0, timings: {},
		counts: {}, counting: false, countAgain: false,
		table: { name: "", search: "", prefix: false, deleted: false, pages: [undefined], selected: null },
		log: { unsentOnly: false, pages: [undefined] }, heldPages: [undefined],
	};
	window.inspector = state;

	async function start() {
		const params = new URLSearchParams(location.search);
		state.name = params.get("db") || "";
		if (!state.name) return listReplicas();
		$("db-name").textContent = state.name;
		document.title = state.name + " · Replica inspector";
		const t0 = performance.now();
		try {
			await Replica.ready;
			state.db = await Replica.open({ name: state.name });
			state.timings.open = performance.now() - t0;
		} catch (e) {
			const card = h("div", { class: "card error" }, "Cannot open the replica " + JSON.stringify(state.name) + ": " + (e.code ? e.code + ": " : "") + e.message);
			$("main").replaceChildren(card);
			if (e.code === "NOT_FOUND") {
				// ?db= is the name given to Replica.open (the demo's is
				// "trip-planner/" + its ?db=), not a relay database: list
				// the names this profile holds.
				const list = await replicaNames();
				card.append(h("p", null, list.length ? "?db= takes the name given to Replica.open. The replicas in this browser profile: " : "?db= takes the name given to Replica.open; this browser profile holds no replica."),
					list.length ? h("ul", null, list.map((n) => h("li", null, h("a", { href: "?db=" + encodeURIComponent(n), text: n })))) : "");
			}
			document.body.dataset.ready = "error";
			return;
		}
		const db = state.db;
		db.inspect.conflicts((c) => {
			state.conflicts.unshift(Object.assign({ seenAt: Date.now() }, c));
			if (state.conflicts.length > 500) state.conflicts.length = 500;
			renderNav();
			if (state.view === "conflicts") render();
		});
		db.on("change", () => scheduleRefresh());
		db.on("syncState", () => { renderFacts(); renderNav(); scheduleRefresh(); });
		db.on("leaderChange", () => renderFacts());
		addEventListener("hashchange", () => route());
		let t1 = performance.now();
		await loadSummary();
		state.timings.summary = performance.now() - t1;
		t1 = performance.now();
		await route();
		state.timings.firstView = performance.now() - t1;
		document.body.dataset.ready = "true";
		recount(true);
	}

	// replicaNames: the replicas of this browser profile, sorted (none
	// where indexedDB.databases is missing).
	async function replicaNames() {
		if (typeof indexedDB.databases !== "function") return [];
		return (await indexedDB.databases()).map((d) => d.name).filter((n) => n && n.startsWith("replica:")).map((n) => n.slice(8)).sort();
	}

	async function listReplicas() {
		$("db-name").textContent = "";
		const list = await replicaNames();
		$("main").replaceChildren(h("div", { class: "card" },
			h("h2", { text: "Replicas in this browser profile" }),
			list.length ? h("ul", null, list.map((n) => h("li", null, h("a", { href: "?db=" + encodeURIComponent(n), text: n })))) :
				h("p", { class: "empty", text: "None found. Open an app that uses Replica first, or add ?db=NAME (the name given to Replica.open)." })));
		document.body.dataset.ready = "true";
	}

	// loadSummary reads the tables (with row counts), the held changes and
	// the unsent count for the navigation.
	async function loadSummary() {
		const db = state.db;
		const t0 = performance.now();
		const timed = (name, p) => p.then((v) => { state.timings[name] = performance.now() - t0; return v; });
		const [tables, held, sync] = await Promise.all([timed("tables", db.inspect.tables({ counts: false })), timed("held", db.heldChanges()), timed("sync", db.inspect.sync())]);
		state.tables = tables;
		state.held = held.total;
		state.sync = sync;
		state.unsent = sync.unsent;
		renderNav();
		renderFacts();
	}

	// recount counts the rows of every table (all), or of those not
	// counted yet or that count fast (under 250 ms: a refresh recounts them;
	// a larger table is counted again only from its view's recount
	// button), one table at a time, updating the navigation as it goes.
	async function recount(all, only) {
		if (state.counting) { state.countAgain = state.countAgain || all; return; }
		state.counting = true;
		try {
			for (const t of state.tables) {
				const c = state.counts[t.name];
				if (only ? t.name !== only : c && !all && c.ms > 250) continue;
				const t0 = performance.now();
				const r = await state.db.inspect.count(t.name);
				state.counts[t.name] = { rows: r.rows, deleted: r.deleted, ms: performance.now() - t0 };
				renderNav();
				const head = $("table-count");
				if (head && state.view === "table" && state.table.name === t.name) head.textContent = countText(t.name);
			}
		} catch (e) {
			console.warn("inspector count:", e);
		} finally {
			state.counting = false;
		}
		if (state.countAgain) { const a = state.countAgain; state.countAgain = false; recount(a === true); }
	}
	function countText(name) {
		const c = state.counts[name];
		return c ? nf.format(c.rows) + " live rows, " + nf.format(c.deleted) + " deleted" : "counting…";
	}

	function scheduleRefresh() {
		if (state.refreshTimer) return;
		state.refreshTimer = setTimeout(async () => {
			state.refreshTimer = 0;
			try { await loadSummary(); await render(); recount(false); } catch (e) { console.warn("inspector refresh:", e); }
		}, 400);
	}

	function renderFacts() {
		if (!state.db) return;
		const st = state.db.sync.state;
		$("facts").replaceChildren(
			h("span", null, "site ", site(state.db.siteId)),
			h("span", null, "tab: ", h("b", { text: state.db.isLeader ? "leader" : "follower" })),
			h("span", { id: "fact-status" }, "sync: ", h("b", { text: st.status }), st.lastError ? " (" + st.lastError.code + ")" : ""),
			h("span", { id: "fact-unsent" }, "unsent: ", h("b", { text: nf.format(unsent()) })));
	}

	// unsent is the number of unsent transactions: the leader's live
	// count once a sync state arrived, else this tab's own count.
	function unsent() {
		const st = state.db && state.db.sync.state;
		return st && st.status !== "disconnected" && typeof st.pending === "number" ? st.pending : state.unsent;
	}

	function navLink(hash, label, count, alert, unit) {
		return h("a", { href: hash, "aria-current": location.hash === hash ? "page" : null, "data-nav": hash },
			h("span", { text: label }), count === undefined ? null : h("span", { class: "count" + (alert ? " alert" : "") + (unit ? " " + unit : ""), text: nf.format(count) + (unit ? " " + unit : "") }));
	}
	function renderNav() {
		const fresh = state.conflicts.length - state.seenConflicts;
		$("nav").replaceChildren(
			h("h3", { text: "Tables" }),
			...state.tables.map((t) => navLink("#t=" + encodeURIComponent(t.name), t.name, state.counts[t.name] ? state.counts[t.name].rows : undefined)),
			h("h3", { text: "Replica" }),
			navLink("#held", "Held changes", state.held, state.held > 0),
			navLink("#log", "Change log", unsent() ? unsent() : undefined, false, "unsent"),
			navLink("#sync", "Sync"),
			navLink("#conflicts", "Conflicts", state.conflicts.length, fresh > 0 && state.view !== "conflicts"));
	}

	async function route() {
		const hash = location.hash;
		if (hash.startsWith("#t=")) {
			const name = decodeURIComponent(hash.slice(3));
			if (state.view !== "table" || state.table.name !== name) {
				state.table = { name, search: "", prefix: false, deleted: false, pages: [undefined], selected: null };
			}
			state.view = "table";
		} else if (hash === "#held" || hash === "#log" || hash === "#sync" || hash === "#conflicts") {
			state.view = hash.slice(1);
		} else if (state.tables.length) {
			history.replaceState(null, "", "#t=" + encodeURIComponent(state.tables[0].name));
			return route();
		} else {
			state.view = "sync";
		}
		if (state.view === "conflicts") state.seenConflicts = state.conflicts.length;
		renderNav();
		await render();
	}

	let renderSeq = 0;
	async function render() {
		const seq = ++renderSeq;
		const main = $("main");
		main.dataset.loading = "true";
		main.dataset.view = state.view;
		let out;
		try {
			out = await ({ table: tableView, held: heldView, log: logView, sync: syncView, conflicts: conflictsView })[state.view]();
		} catch (e) {
			out = h("div", { class: "card error" }, (e.code ? e.code + ": " : "") + e.message);
		}
		if (seq !== renderSeq) return; // a newer render started
		main.replaceChildren(out);
		main.dataset.loading = "false";
	}

	// ---- a table's rows --------------------------------------------------------

	async function tableView() {
		const v = state.table;
		const t = state.tables.find((x) => x.name === v.name);
		if (!t) return h("div", { class: "card empty", text: "No table " + v.name + "." });
		const cols = t.columns.map((c) => c.name);
		const t0 = performance.now();
		const page = await state.db.inspect.rows(v.name, { after: v.pages[v.pages.length - 1], limit: PAGE, search: v.search || undefined, prefix: v.prefix || undefined, deleted: v.deleted || undefined });
		const ms = performance.now() - t0;
		state.lastMs = ms;
		v.next = page.next;
		const search = h("input", { type: "search", id: "search", placeholder: "Search every cell (case-insensitive)…", value: v.search, "aria-label": "Search rows" });
		let timer = 0;
		const go = () => { v.search = search.value; v.pages = [undefined]; v.selected = null; render(); };
		search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(go, 300); });
		search.addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(timer); go(); } });
		const prefix = h("input", { type: "checkbox", id: "prefix", checked: v.prefix });
		prefix.addEventListener("change", () => { v.prefix = prefix.checked; v.pages = [undefined]; render(); });
		const seg = (label, deleted) => {
			const b = h("button", { type: "button", "aria-pressed": String(v.deleted === deleted), "data-kind": deleted ? "deleted" : "live", text: label });
			b.addEventListener("click", () => { v.deleted = deleted; v.pages = [undefined]; v.selected = null; render(); });
			return b;
		};
		const selected = v.selected && page.rows.find((r) => JSON.stringify(r.key) === v.selected);
		const grid = h("table", { class: "grid", id: "rows" },
			h("thead", null, h("tr", null, cols.map((c) => h("th", { title: t.primaryKey.includes(c) ? "primary key column" : null }, c, t.primaryKey.includes(c) ? h("span", { class: "pk", text: "key" }) : null)), h("th", { text: v.deleted ? "deleted" : "last write" }), h("th", { text: "by" }))),
			h("tbody", null, page.rows.map((r) => {
				const newest = newestVersion(r);
				const tr = h("tr", { class: "pick", "data-key": JSON.stringify(r.key), "aria-selected": String(selected === r) },
					cols.map((c) => cellTD(r.values[c] === undefined ? null : r.values[c])),
					h("td", { text: newest ? when(newest.at) : "" }), h("td", null, newest ? site(newest.siteId) : ""));
				tr.addEventListener("click", () => { v.selected = JSON.stringify(r.key); render(); });
				return tr;
			})));
		const from = (v.pages.length - 1) * PAGE;
		const prev = h("button", { type: "button", id: "prev", disabled: v.pages.length === 1, text: "← Previous" });
		prev.addEventListener("click", () => { v.pages.pop(); v.selected = null; render(); });
		const next = h("button", { type: "button", id: "next", disabled: page.next === null, text: "Next →" });
		next.addEventListener("click", () => { v.pages.push(page.next); v.selected = null; render(); });
		const what = v.deleted ? "deleted rows" : "rows";
		const summary = page.rows.length ? what + " " + nf.format(from + 1) + "–" + nf.format(from + page.rows.length) : "no " + what + (v.search ? " match" : "");
		return h("div", null,
			h("div", { class: "card" },
				h("h2", null, v.name, " ", h("span", { class: "muted", id: "table-count", text: countText(v.name) }),
					h("span", { class: "muted", text: " · key " + t.primaryKey.join(", ") + (t.indexes.length ? " · indexes " + t.indexes.map((x) => x.name).join(", ") : "") }), " ", recountButton(v.name)),
				h("div", { class: "toolbar" }, search, h("label", { for: "prefix" }, prefix, "starts with"), h("span", { class: "seg" }, seg("Live", false), seg("Deleted (tombstones)", true))),
				selected ? rowDetail(selected, cols) : null,
				h("div", { class: "scroll" }, grid),
				h("div", { class: "pager", id: "pager" }, prev, next,
					h("span", { id: "page-summary", text: summary + " · read " + nf.format(page.scanned) + " records in " + ms.toFixed(0) + " ms" }),
					page.rows.length ? h("span", { text: "· click a row for its cells' HLCs" }) : null)));
	}

	function recountButton(name) {
		const b = h("button", { type: "button", class: "small", id: "recount", title: "Count this table's rows again", text: "recount" });
		b.addEventListener("click", () => { delete state.counts[name]; $("table-count").textContent = countText(name); recount(false, name); });
		return b;
	}

	// newestVersion is the row's newest write: its deletion for a deleted
	// row, else its newest cell (by wall time, then counter).
	function newestVersion(r) {
		if (r.deleted) return r.tombstone || null;
		const counter = (v) => parseInt(v.hlc.split(".")[1], 10);
		let best = null;
		for (const c of Object.values(r.cells)) if (!best || c.at > best.at || (c.at === best.at && counter(c) > counter(best))) best = c;
		return best;
	}

	// rowDetail lists a row's cells: value, HLC, writing site and time.
	function rowDetail(r, cols) {
		const names = cols.concat(Object.keys(r.cells).filter((c) => !cols.includes(c)));
		return h("div", { class: "card detail", id: "detail" },
			h("h2", null, "Row ", h("code", { text: JSON.stringify(r.key) }), " ", r.deleted ? h("span", { class: "badge del", text: "deleted" }) : null),
			r.tombstone ? h("p", null, "Tombstone ", h("code", { text: r.tombstone.hlc }), " by ", site(r.tombstone.siteId), " at " + when(r.tombstone.at)) : null,
			r.deleted && Object.keys(r.cells).length === 0 ? h("p", { class: "muted", text: "The deletion dropped the row's cells: the values below are the image the deleting device recorded." }) : null,
			h("div", { class: "scroll" }, h("table", { class: "grid", id: "cells" },
				h("thead", null, h("tr", null, ["column", "value", "written at", "by", "HLC"].map((x) => h("th", { text: x })))),
				h("tbody", null, names.map((c) => {
					const ver = r.cells[c];
					return h("tr", { "data-column": c }, h("td", { text: c }), cellTD(r.values[c] === undefined ? null : r.values[c]),
						h("td", { text: ver ? when(ver.at) : "" }), h("td", null, ver ? site(ver.siteId) : h("span", { class: "muted", text: r.deleted ? "—" : "not stored" })),
						h("td", { class: "mono hlc", text: ver ? ver.hlc : "" }));
				})))));
	}

	// ---- held changes -----------------------------------------------------------

	async function heldView() {
		const p = state.heldPages;
		const page = await state.db.inspect.heldChanges({ after: p[p.length - 1], limit: PAGE });
		const prev = h("button", { type: "button", disabled: p.length === 1, text: "← Previous" });
		prev.addEventListener("click", () => { p.pop(); render(); });
		const next = h("button", { type: "button", disabled: page.next === null, text: "Next →" });
		next.addEventListener("click", () => { p.push(page.next); render(); });
		return h("div", { class: "card" },
			h("h2", null, "Held changes ", h("span", { class: "muted", text: nf.format(state.held) + " synced changes this replica holds instead of applying" })),
			page.changes.length === 0 ? h("p", { class: "empty", text: "None: every synced change fits this replica's schema." }) :
				h("div", { class: "scroll" }, h("table", { class: "grid", id: "held" },
					h("thead", null, h("tr", null, ["table", "key", "change", "reason", "replayed later", "written at", "by", "held at"].map((x) => h("th", { text: x })))),
					h("tbody", null, page.changes.map((c) => h("tr", { "data-table": c.table },
						h("td", { text: c.table }), h("td", { class: "mono", text: JSON.stringify(c.key) }),
						h("td", { class: "mono", text: c.type === "delete" ? "delete row" : c.column + " = " + c.value }),
						h("td", null, h("span", { class: "badge reason", text: c.reason })),
						h("td", { text: c.replayable ? "yes" : "no (dropped at the retention horizon)" }),
						h("td", { text: when(c.at) }), h("td", null, site(c.siteId)), h("td", { text: when(c.receivedAt) })))))),
			h("div", { class: "pager" }, prev, next));
	}

	// ---- the change log ---------------------------------------------------------

	async function logView() {
		const v = state.log;
		const page = await state.db.inspect.changeLog({ before: v.pages[v.pages.length - 1], limit: PAGE, unsent: v.unsentOnly || undefined });
		const seg = (label, only) => {
			const b = h("button", { type: "button", "aria-pressed": String(v.unsentOnly === only), "data-kind": only ? "unsent" : "all", text: label });
			b.addEventListener("click", () => { v.unsentOnly = only; v.pages = [undefined]; render(); });
			return b;
		};
		const prev = h("button", { type: "button", disabled: v.pages.length === 1, text: "← Newer" });
		prev.addEventListener("click", () => { v.pages.pop(); render(); });
		const next = h("button", { type: "button", disabled: page.next === null, text: "Older →" });
		next.addEventListener("click", () => { v.pages.push(page.next); render(); });
		return h("div", { class: "card" },
			h("h2", null, "Change log ", h("span", { class: "muted", text: "this device's transactions, newest first" })),
			h("div", { class: "toolbar" }, h("span", { class: "seg" }, seg("All", false), seg("Unsent only", true)),
				h("span", { class: "muted" }, "sent watermark: ", h("code", { text: page.sentWatermark || "none (never acknowledged by a relay)" }))),
			page.entries.length === 0 ? h("p", { class: "empty", text: v.unsentOnly ? "Nothing unsent: the relay has every transaction." : "No transactions." }) :
				h("div", { class: "scroll" }, h("table", { class: "grid", id: "log" },
					h("thead", null, h("tr", null, ["when", "rows", "tables", "schema", "status", "HLC"].map((x) => h("th", { text: x })))),
					h("tbody", null, page.entries.map((e) => h("tr", { "data-unsent": String(e.unsent) },
						h("td", { text: when(e.at) }), h("td", { class: "num", text: nf.format(e.rows) }),
						h("td", { text: Object.entries(e.tables).map(([t, n]) => t + " ×" + nf.format(n)).join(", ") }),
						h("td", { text: e.migrations.join(", ") }),
						h("td", null, h("span", { class: "badge " + (e.unsent ? "unsent" : "sent"), text: e.unsent ? "unsent" : "sent" }),
							e.superseded ? h("span", { class: "muted", title: "Later writes replaced every value it wrote: nothing of it is pushed; it counts as unsent until a later push passes it.", text: " superseded: nothing to push" }) : null),
						h("td", { class: "mono", text: e.hlc })))))),
			h("div", { class: "pager" }, prev, next));
	}

	// ---- sync -------------------------------------------------------------------

	async function syncView() {
		const s = await state.db.inspect.sync();
		const st = s.status;
		const row = (k, v) => h("tr", null, h("th", { text: k }), h("td", null, v));
		return h("div", null,
			h("div", { class: "card" }, h("h2", { text: "Sync" }),
				h("table", { class: "grid", id: "sync" }, h("tbody", null,
					row("status", h("b", { text: st.status })),
					row("relay", s.target ? h("code", { text: s.target.url + " · database " + s.target.database + (s.target.sealed ? " · sealed" : "") }) : "none yet (the app has not called db.sync.connect)"),
					row("this tab", s.leader ? "leader: holds the relay connection" : "follower: the leader tab syncs for every tab"),
					row("unsent transactions", nf.format(s.unsent)),
					row("sent watermark", h("code", { text: s.sentWatermark || "none" })),
					st.progress ? row("snapshot", JSON.stringify(st.progress)) : null,
					st.lastError ? row("last error", h("span", { class: "error", text: st.lastError.code + ": " + st.lastError.message })) : null,
					st.error ? row("error", h("span", { class: "error", text: st.error.code + ": " + st.error.message })) : null))),
			h("div", { class: "card" }, h("h2", null, "Cursors and watermarks ", h("span", { class: "muted", text: "what the sync client persists, per relay log" })),
				s.state.length === 0 ? h("p", { class: "empty", text: "Nothing: this replica never synced with a relay." }) :
					h("table", { class: "grid", id: "cursors" }, h("thead", null, h("tr", null, h("th", { text: "name" }), h("th", { text: "value" }))),
						h("tbody", null, s.state.map((e) => h("tr", null, h("td", { class: "mono", text: e.name }), h("td", { class: "mono", text: e.value })))))));
	}

	// ---- conflicts --------------------------------------------------------------

	async function conflictsView() {
		if (!state.conflicts.length) {
			return h("div", { class: "card" }, h("h2", { text: "Conflicts" }),
				h("p", { class: "empty", text: "None since this page opened. Conflicts appear here as any tab of this replica resolves them (two devices writing the same cell while apart)." }));
		}
		return h("div", { id: "conflicts" }, h("h2", null, "Conflicts ", h("span", { class: "muted", text: nf.format(state.conflicts.length) + " since this page opened, newest first" })),
			state.conflicts.map((c) => h("div", { class: "card conflict", "data-column": c.column },
				h("div", null, h("b", { text: c.table + " " + JSON.stringify(c.pk) + " · " + c.column }), h("span", { class: "muted", text: " · resolved " + when(c.seenAt) + (c.fromOtherTab ? " in another tab" : "") })),
				h("div", { class: "vals" },
					h("span", { text: "local" }), h("span", { class: c.remoteWon ? "lose" : "win" }, show(c.localValue), " ", site(c.localSiteId), " ", h("code", { text: c.localHlc })),
					h("span", { text: "remote" }), h("span", { class: c.remoteWon ? "win" : "lose" }, show(c.remoteValue), " ", site(c.remoteSiteId), " ", h("code", { text: c.remoteHlc })),
					h("span", { text: "kept" }), h("span", { text: (c.remoteWon ? "remote" : "local") + " (the higher HLC wins)" })))));
	}

	start().catch((e) => {
		$("main").replaceChildren(h("div", { class: "card error" }, String(e && e.message || e)));
		document.body.dataset.ready = "error";
	});
})();
