// app.js — the Replica demo: a shared trip planner and a cities browser.
//
// Plain JavaScript with no build step, loaded after replica.js as a user's
// app would load it. Everything reads and writes the local replica
// (IndexedDB) through the global Replica, whose engine runs in a Worker
// (the loader's default); syncing with the relay runs there too, in the
// background. The API is documented in replica.d.ts.
//
// Page parameters:
//   ?db=NAME     the relay database to share (default "demo"); the local
//                replica is named "trip-planner/NAME", so each database
//                gets its own IndexedDB database in this browser.
//   ?relay=URL   the relay's sync endpoint (default: /sync of this page's
//                origin, which is where `make run` serves it; a relay on
//                another origin must allow this one: -allow-origin).
//   ?sealed=1    the database is sealed (end-to-end encrypted; default
//                database "demo-sealed"): the page asks for a passphrase,
//                derives the key in WebCrypto (Replica.deriveKey) and keeps
//                only that key, a non-extractable CryptoKey, in IndexedDB
//                ("trip-planner-keys"), so a reload asks for nothing;
//                "Forget key" deletes it. The "What the relay holds" card
//                shows the relay's newest stored log entries (the relay's
//                GET /inspect/{database}, served with -inspect, as `make
//                run` does): envelopes, no trips.
//
// For tests and the curious, window.app exposes the open database and a few
// functions (see the end of this file).
(function () {
	"use strict";

	// ---- configuration --------------------------------------------------------

	const params = new URLSearchParams(location.search);
	const DB_ID = /^[A-Za-z0-9_.:-]{1,128}$/; // the relay's database id syntax
	const sealed = params.get("sealed") === "1";
	let database = params.get("db") || (sealed ? "demo-sealed" : "demo");
	const badDatabase = !DB_ID.test(database) ? database : null;
	if (badDatabase) database = sealed ? "demo-sealed" : "demo";
	const replicaName = "trip-planner/" + database;
	const relayURL = params.get("relay") || new URL("sync", location.href).href;

	// The schema, declared as plain data. trips and stops use the default
	// key (a text id, a UUIDv7 generated on insert); a stop points at its
	// trip by tripId and is ordered by a real position (moving a stop
	// rewrites only its own position: see moveStop).
	//
	// cities rows are keyed deterministically by their natural key, the
	// tuple (country, admin1, name, lat, lng), which is unique in the
	// GeoNames data (web/data/README.md). Two devices that import the same
	// rows therefore write the same keys: their imports merge column by
	// column into one row per city instead of duplicating, and importing
	// again changes nothing (upsert of identical values writes nothing).
	// `search` is the name folded for searching (lower case, accents
	// removed), indexed alone and after country, so a name-prefix search,
	// with or without a country filter, is an index range scan.
	const schema = {
		tables: {
			trips: {
				columns: {
					title: { type: "text", notNull: true },
					destination: "text",
					startsOn: "timestamp",
					budget: "real",
					travelers: { type: "integer", default: 1 },
					booked: { type: "boolean", notNull: true, default: false },
					createdAt: "timestamp",
				},
				indexes: { by_start: ["startsOn"] },
			},
			stops: {
				columns: {
					tripId: { type: "text", notNull: true },
					name: { type: "text", notNull: true },
					position: { type: "real", notNull: true },
					nights: { type: "integer", default: 1 },
					cost: "real",
					visited: { type: "boolean", notNull: true, default: false },
				},
				indexes: { by_trip: ["tripId", "position"] },
			},
			cities: {
				columns: {
					country: { type: "text", notNull: true },
					admin1: { type: "text", notNull: true },
					name: { type: "text", notNull: true },
					lat: { type: "real", notNull: true },
					lng: { type: "real", notNull: true },
					admin2: "text",
					search: { type: "text", notNull: true },
				},
				primaryKey: ["country", "admin1", "name", "lat", "lng"],
				indexes: { by_search: ["search"], by_country_search: ["country", "search"] },
			},
		},
	};

	// ---- small helpers --------------------------------------------------------

	const $ = (id) => document.getElementById(id);
	const nf = new Intl.NumberFormat("en");
	const money = new Intl.NumberFormat("en", { style: "currency", currency: "EUR", maximumFractionDigits: 0 });
	let regionNames = null;
	try { regionNames = new Intl.DisplayNames(["en"], { type: "region" }); } catch (_) { /* older browsers */ }

	function h(tag, attrs, ...children) {
		const e = document.createElement(tag);
		if (attrs) {
			for (const [k, v] of Object.entries(attrs)) {
				if (v === undefined || v === null || v === false) continue;
				if (k === "class") e.className = v;
				else if (k === "text") e.textContent = v;
				else if (k.startsWith("data-") || k.startsWith("aria-") || k === "for" || k === "role") e.setAttribute(k, v === true ? "" : v);
				else e[k] = v;
			}
		}
		for (const c of children) if (c !== null && c !== undefined) e.append(c);
		return e;
	}

	function setText(e, s) { if (e.textContent !== s) e.textContent = s; }

	function plural(n, one, many) { return nf.format(n) + " " + (n === 1 ? one : many); }

	// fold is what the cities' search column holds and what a search
	// compares with: lower case without diacritics.
	function fold(s) {
		return s.normalize("NFD").replace(/\p{M}+/gu, "").toLowerCase();
	}

	function countryName(code) {
		if (!code) return "";
		try { return (regionNames && regionNames.of(code)) || code; } catch (_) { return code; }
	}

	function shortId(s) { return s ? s.slice(0, 8) : "?"; }


	// ---- errors: shown on the page, never thrown at the console ----------------

	// Field names as the forms show them, for messages about a column.
	const FIELD_LABELS = {
		title: "Title", destination: "Destination", startsOn: "Starts", budget: "Budget", travelers: "Travelers",
		booked: "Booked", name: "Name", nights: "Nights", cost: "Cost", visited: "Visited", position: "Position",
	};

	// humanError says what went wrong in the user's words, from the
	// error's stable code (and its column, for VALIDATION); the message,
	// written for developers, stays in the toast's title and app.lastError.
	function humanError(e) {
		const code = e && e.code;
		const field = e && e.column ? (FIELD_LABELS[e.column] || e.column) : "";
		const msg = (e && e.message) || "";
		switch (code) {
			case "VALIDATION":
				if (!field) return "That value can't be saved here.";
				if (/is required/.test(msg)) return field + " can't be empty.";
				switch (columnType(e.table, e.column)) {
					case "integer": return field + " must be a whole number.";
					case "real": return field + " must be a number.";
					case "timestamp": return field + " must be a date.";
					default: return "That value doesn't fit " + field + ".";
				}
			case "NOT_FOUND": return "It no longer exists; it was probably deleted, maybe on another device.";
			case "CONFLICT": return "It changed at the same time somewhere else. Try again.";
			case "CLOSED": return "The local database was closed (deleted in another tab?). Reload the page.";
			case "QUOTA_EXCEEDED": return "This browser has no room to store more. Free some space, then try again.";
			case "STORAGE_ERROR": return "The browser could not write to its storage (disk full?). Reload the page to see what is stored.";
			case "STORAGE_FORMAT": return "The data stored in this browser was written by another version of the app.";
			case "DECRYPT_FAILED": return "The key does not open this database's changes. Check the passphrase.";
			default: return "Something went wrong" + (msg && !code ? ": " + msg : ".");
		}
	}

	// columnType is a column's type in the schema above, or "".
	function columnType(table, column) {
		const t = schema.tables[table], c = t && t.columns[column];
		return !c ? "" : typeof c === "string" ? c : c.type;
	}

	const CONTEXT_LABELS = {
		"new trip": "Couldn't add the trip", "sample trip": "Couldn't add the sample trip", "add stop": "Couldn't add the stop",
		import: "The import stopped", "live query": "Couldn't show the trips", countries: "Couldn't load the countries",
		"city search": "Couldn't search the cities", count: "Couldn't count the cities", connect: "Couldn't connect to the relay",
		disconnect: "Couldn't go offline",
	};

	let toastTimer = 0;
	function showError(e, context) {
		const code = (e && e.code) || "ERROR";
		const msg = (e && e.message) || String(e);
		const t = $("toast");
		t.dataset.code = code;
		const what = (context && CONTEXT_LABELS[context]) ||
			(context && /^edit /.test(context) ? "Couldn't save the change" : context ? "Couldn't " + context[0].toLowerCase() + context.slice(1) : "Something went wrong");
		t.replaceChildren(h("strong", { text: what + "." }), " ", humanError(e));
		// The developer's detail: in the tooltip and in app.lastError.
		t.title = code + (context ? " " + context : "") + ": " + msg;
		t.hidden = false;
		clearTimeout(toastTimer);
		toastTimer = setTimeout(() => { t.hidden = true; }, 8000);
		app.lastError = { code, message: msg, context: context || "" };
	}

	function fatal(message) {
		const f = $("fatal");
		f.textContent = message;
		f.hidden = false;
	}

	// ---- the app object (also what tests drive) --------------------------------

	const app = {
		database, replicaName, relayURL, schema, sealed,
		/** The sealed database's key (a SealKey: key id and non-extractable CryptoKey), once given. */
		key: null,
		db: null,
		siteId: null,
		syncState: { status: "disconnected", pending: 0, leader: false },
		/** Every syncState payload seen (bounded), for tests and debugging. */
		syncHistory: [],
		/** The activity log entries, newest first. */
		log: [],
		lastError: null,
		timing: { start: performance.now() },
		ready: null,
		trips: [],
		stops: [],
	};
	window.app = app;

	// ---- open -------------------------------------------------------------------

	app.ready = (async () => {
		$("info-db").textContent = database;
		$("share-link").href = location.href;
		if (badDatabase) fatal("?db=" + badDatabase + " is not a valid database name (1–128 of A–Z a–z 0–9 _ . : -); using \"demo\".");
		try {
			await Replica.ready;
		} catch (e) {
			fatal("Replica could not start: " + e.message + ". Was replica.wasm built? Run `make run`.");
			throw e;
		}
		app.timing.replicaReady = performance.now();
		let db;
		try {
			db = await Replica.open({ name: replicaName, schema });
		} catch (e) {
			fatal("Could not open the local database: " + e.code + ": " + e.message);
			throw e;
		}
		app.db = db;
		app.timing.opened = performance.now();
		app.siteId = db.siteId;
		watchSync(db);
		watchActivity(db);
		startTrips(db);
		startCities(db);
		for (const e of document.querySelectorAll("[disabled]:not(#sync-toggle)")) e.disabled = false;
		$("sync-toggle").disabled = false;
		if (sealed) {
			await startSealed(db);
			if (!app.key) return db; // connect once the passphrase is given
		}
		await connect();
		return db;
	})();
	app.ready.catch(() => { }); // reported on the page by fatal()

	// ---- sync --------------------------------------------------------------------

	async function connect() {
		try {
			if (sealed && !app.key) { $("key-passphrase").focus(); return; }
			await app.db.sync.connect(relayURL, sealed ? { database, key: app.key } : { database });
		} catch (e) {
			showError(e, "connect");
		}
	}

	// ---- sealed databases ---------------------------------------------------------
	//
	// The key is kept as a SealKey ({keyId, cryptoKey}: the CryptoKey is
	// non-extractable, so script can use it but nothing can read its bytes)
	// in an IndexedDB database of the page's own, under relay URL and
	// database id. The passphrase itself is never stored.

	const KEY_DB = "trip-planner-keys";
	const keySlot = relayURL + " " + database;

	function keyStore(mode, fn) {
		return new Promise((resolve, reject) => {
			const req = indexedDB.open(KEY_DB, 1);
			req.onupgradeneeded = () => req.result.createObjectStore("keys");
			req.onerror = () => reject(req.error);
			req.onsuccess = () => {
				const idb = req.result;
				const tx = idb.transaction("keys", mode);
				const r = fn(tx.objectStore("keys"));
				tx.oncomplete = () => { idb.close(); resolve(r && r.result); };
				tx.onerror = tx.onabort = () => { idb.close(); reject(tx.error); };
			};
		});
	}

	function showKey() {
		const has = !!app.key;
		$("key-form").hidden = has;
		$("key-forget").hidden = !has;
		setText($("info-key"), has ? "key id " + app.key.keyId + " (kept in this browser, not extractable)" : "no key yet: enter the passphrase");
	}

	async function startSealed(db) {
		$("info-sealed").hidden = false;
		$("relay-holds").hidden = false;
		try {
			app.key = (await keyStore("readonly", (s) => s.get(keySlot))) || null;
		} catch (e) {
			app.key = null;
		}
		showKey();
		$("key-form").addEventListener("submit", async (ev) => {
			ev.preventDefault();
			const input = $("key-passphrase");
			const passphrase = input.value;
			if (!passphrase) return;
			const btn = $("key-open");
			btn.disabled = true;
			setText($("info-key"), "deriving the key (PBKDF2, 600,000 iterations)…");
			try {
				app.key = await Replica.deriveKey({ passphrase, database });
				input.value = "";
				await keyStore("readwrite", (s) => s.put(app.key, keySlot));
				showKey();
				addLog("sync", "Key " + app.key.keyId + " derived and kept in this browser");
				await connect();
			} catch (e) {
				showKey();
				showError(e, "open the sealed database");
			} finally {
				btn.disabled = false;
			}
		});
		$("key-forget").addEventListener("click", async () => {
			try {
				await keyStore("readwrite", (s) => s.delete(keySlot));
				app.key = null;
				showKey();
				await disconnect();
			} catch (e) {
				showError(e, "forget the key");
			}
		});
		$("relay-refresh").addEventListener("click", showRelayHolds);
		db.on("remoteChange", () => showRelayHoldsSoon());
		db.on("syncState", (st) => { if (st.status === "synced" && st.pending === 0) showRelayHoldsSoon(); });
		showRelayHolds();
	}

	// inspectURL is the relay's GET /inspect/{database} (same host as /sync).
	function inspectURL() {
		const u = new URL(relayURL, location.href);
		u.protocol = u.protocol === "wss:" ? "https:" : u.protocol === "ws:" ? "http:" : u.protocol;
		u.pathname = u.pathname.replace(/sync\/?$/, "") + "inspect/" + encodeURIComponent(database);
		u.search = "";
		return u.href;
	}

	let holdsTimer = 0;
	function showRelayHoldsSoon() {
		clearTimeout(holdsTimer);
		holdsTimer = setTimeout(showRelayHolds, 300);
	}

	// showRelayHolds shows what the relay stores of this database: its
	// newest log entries, each the ChangeSet's site id, transactionId, HLC
	// and envelope (AES-256-GCM under a key the relay never had).
	async function showRelayHolds() {
		const out = $("relay-entries");
		try {
			const resp = await fetch(inspectURL(), { cache: "no-store" });
			if (resp.status === 404 && !(await resp.clone().text()).includes("not open")) {
				setText(out, "This relay does not show its log (start it with -inspect, as `make run` does).");
				return;
			}
			if (!resp.ok) { setText(out, "The relay answered " + resp.status + ": " + (await resp.text())); return; }
			const entries = await resp.json();
			app.relayEntries = entries;
			if (!entries.length) { setText(out, "Nothing stored yet."); return; }
			setText(out, entries.map((e) => "cursor " + e.cursor + ", " + e.bytes + " bytes, arrived " + clock(new Date(e.arrivedMs)) + ":\n" + e.stored).join("\n\n"));
		} catch (e) {
			setText(out, "Could not ask the relay: " + e.message);
		}
	}

	async function disconnect() {
		try {
			await app.db.sync.disconnect();
		} catch (e) {
			showError(e, "disconnect");
		}
	}

	// isOffline: not connected and not trying to (the user went offline,
	// or has not connected yet).
	function isOffline(st) {
		return st.status === "disconnected" && !st.retryAt;
	}

	function watchSync(db) {
		const render = (st) => {
			const wasBootstrapping = !!app.syncState.progress;
			app.syncState = st;
			if (wasBootstrapping && !st.progress && countLater) { countLater = false; scheduleCount(); }
			app.syncHistory.push(Object.assign({ t: performance.now() }, st));
			if (app.syncHistory.length > 5000) app.syncHistory.splice(0, 1000);
			renderSync(st);
		};
		db.on("syncState", render);
		render(db.sync.state);
		db.on("leaderChange", () => renderSync(app.syncState));
		$("sync-toggle").addEventListener("click", async () => {
			const st = app.syncState;
			const btn = $("sync-toggle");
			btn.disabled = true;
			try {
				if (isOffline(st) || st.status === "error") await connect();
				else await disconnect();
			} finally {
				btn.disabled = false;
			}
		});
		// While waiting to reconnect, count down.
		setInterval(() => { if (app.syncState.retryAt) renderSync(app.syncState); }, 1000);
	}

	let lastStatusLogged = "";
	let syncDetailKey = "", syncDetailHidden = null;
	$("sync-detail-hide").addEventListener("click", () => { syncDetailHidden = syncDetailKey; $("sync-detail").hidden = true; });
	$("sync-issue").addEventListener("click", () => { syncDetailHidden = null; if (app.syncState) renderSync(app.syncState); });
	let lastIssueLogged = "";
	function renderSync(st) {
		const bar = $("sync");
		let label, detail = "", kind = st.status, tech = "";
		switch (st.status) {
			case "synced": label = "Synced"; break;
			case "connecting": label = "Connecting…"; break;
			case "syncing": {
				label = "Syncing…";
				const p = st.progress;
				if (p) {
					if (p.rowsTotal) label = "Syncing " + Math.floor(100 * p.rowsApplied / p.rowsTotal) + "%";
					else if (p.rowsApplied) label = "Syncing " + nf.format(p.rowsApplied) + " rows";
					detail = "Downloading a snapshot of the database" + (p.table ? ": table " + p.table +
						(p.tablesTotal ? " (" + Math.min(p.tablesDone + 1, p.tablesTotal) + " of " + p.tablesTotal + ")" : "") : "") +
						(p.rowsApplied || p.rowsTotal ? ", " + nf.format(p.rowsApplied) + (p.rowsTotal ? " of " + nf.format(p.rowsTotal) : "") + " rows" : "") + "…";
				}
				break;
			}
			case "error":
				label = "Error";
				detail = describeError(st.error) + ". Syncing stopped; press Retry to try again.";
				break;
			default:
				if (st.retryAt) {
					// Not offline by choice: the relay is out of reach and the
					// client tries again. The client's own words (the dial
					// error) are for developers: the tooltip.
					kind = "retrying";
					label = "Reconnecting…";
					const s = Math.max(0, Math.ceil((st.retryAt - Date.now()) / 1000));
					detail = "Can't reach the relay. Trying again " + (s > 0 ? "in " + s + " s" : "now") +
						"; your changes are saved on this device and sent once it is back.";
					if (st.error) tech = st.error.code + ": " + st.error.message;
				} else {
					kind = "offline";
					label = "Offline";
				}
		}
		bar.dataset.status = kind;
		setText($("sync-pill"), label);
		$("sync-pill").title = (detail || label) + (tech ? "\n\n" + tech : "");
		$("sync-message").title = tech;
		const pending = st.pending || 0;
		setText($("sync-pending"), nf.format(pending) + " unsent");
		$("sync-pending").dataset.count = String(pending);
		setText($("info-pending"), pending ? plural(pending, "transaction", "transactions") + " not yet acknowledged" : "none");
		// db.isLeader is current even before the new leader's first syncState.
		setText($("info-leader"), app.db && app.db.isLeader ? "holds the relay connection" : "syncs through another tab");
		const btn = $("sync-toggle");
		setText(btn, st.status === "error" ? "Retry" : isOffline(st) ? "Go online" : kind === "retrying" ? "Stop trying" : "Go offline");
		btn.title = kind === "retrying" ? "Stop trying to reach the relay and work offline (Go online tries again)" : "";
		btn.setAttribute("aria-pressed", isOffline(st) ? "true" : "false");

		// The last transient sync problem (the session goes on and retries),
		// beside the status: a short note in the bar, the sentence below it.
		const le = st.lastError;
		const note = $("sync-issue"), noteDetail = $("sync-issue-detail");
		note.hidden = noteDetail.hidden = !le;
		if (le) {
			setText(note, "Sync problem at " + clock(new Date(le.at)));
			note.dataset.code = le.code;
			note.title = describeError(le);
			setText(noteDetail, describeIssue(le));
			// Logged once per problem, not at every retry.
			if (le.code !== lastIssueLogged) addLog("error", "Sync problem: " + describeError(le));
			lastIssueLogged = le.code;
		} else {
			lastIssueLogged = "";
			delete note.dataset.code;
		}

		// The box hangs over the top of the page; the user may hide it until
		// the status or the problem changes (or until the note is clicked).
		const box = $("sync-detail");
		syncDetailKey = kind + "|" + (le ? le.code : "");
		box.hidden = (!detail && !le) || syncDetailKey === syncDetailHidden;
		box.dataset.status = detail ? kind : "issue";
		setText($("sync-message"), detail);
		const p = st.status === "syncing" && st.progress;
		$("sync-progress-wrap").hidden = !p;
		if (p) $("sync-progress").style.width = (p.rowsTotal ? Math.min(100, 100 * p.rowsApplied / p.rowsTotal) : 5) + "%";

		// Log the status changes that matter to the user, once each.
		const key = kind + (st.error ? st.error.code : "");
		if (key !== lastStatusLogged && (kind === "synced" || kind === "error" || (kind === "offline" && lastStatusLogged))) {
			if (kind === "error") addLog("error", "Sync stopped: " + describeError(st.error));
			else if (kind === "synced") addLog("sync", "Synced with the relay");
			else addLog("sync", "Offline: changes stay on this device until you go online");
		}
		if (kind !== "syncing" && kind !== "connecting") lastStatusLogged = key;
	}

	// describeError names a sync error's code, once.
	function describeError(err) {
		if (!err) return "syncing stopped";
		return err.message.includes(err.code) ? err.message : err.code + ": " + err.message;
	}

	// describeIssue says what SyncState.lastError means for the user.
	function describeIssue(le) {
		const at = " at " + clock(new Date(le.at)) + " (" + describeError(le) + "). ";
		if (/^APPLY_CHANGES_REFUSED$|^TRANSACTION_TOO_LARGE$/.test(le.code)) {
			return "The relay did not accept a change from this device" + at +
				"It is kept on this device but will not reach your other devices; your other changes sync as usual.";
		}
		if (le.code === "CLOCK_DRIFT") {
			return "Changes could not sync because this device's clock and the relay's or another device's disagree by more than a minute" + at +
				"They are kept and sync once the clocks agree; check this device's date and time.";
		}
		if (le.code === "DECRYPT_FAILED") {
			return "Changes from the relay cannot be opened with this key" + at +
				"Wrong passphrase? They are held, not lost: press Forget key and enter the right one.";
		}
		if (le.code === "ENVELOPE_INVALID") {
			return "A change from the relay did not authenticate (altered on the way?) and was refused" + at + "The rest applied.";
		}
		if (le.code === "APPLY_CHANGES_ERROR" || le.code === "MESSAGE_TOO_LARGE") {
			return "Sending changes failed" + at + "They are kept and sent again; this note goes away when the relay accepts them.";
		}
		return "A sync step failed" + at + "Syncing goes on and retries; this note goes away once it succeeds.";
	}

	// ---- the activity log ---------------------------------------------------------

	// addLog adds an entry to the activity log; the same text again right
	// away bumps the entry's count instead (a burst of remote transactions).
	function addLog(kind, text) {
		const list = $("log");
		const last = app.log[0];
		if (last && last.text === text && Date.now() - last.at.getTime() < 10000 && list.firstElementChild) {
			last.count++;
			last.at = new Date();
			const li = list.firstElementChild;
			li.querySelector("time").textContent = clock(last.at);
			setText(li.querySelector(".times"), "×" + last.count);
			saveLog();
			return;
		}
		const entry = { kind, text, at: new Date(), count: 1 };
		app.log.unshift(entry);
		if (app.log.length > 50) app.log.length = 50;
		showLogEntry(entry);
		saveLog();
	}

	function showLogEntry(entry) {
		const list = $("log");
		const empty = list.querySelector(".log-empty");
		if (empty) empty.remove();
		list.prepend(h("li", { class: "log-" + entry.kind, "data-kind": entry.kind },
			h("time", { text: clock(entry.at), title: entry.at.toLocaleString() }),
			h("span", null, entry.text, " ", h("span", { class: "times muted", text: entry.count > 1 ? "×" + entry.count : "" })),
		));
		while (list.children.length > 30) list.lastElementChild.remove();
	}

	// The log outlives a reload: its newest entries are kept in this tab's
	// sessionStorage, per database (a new tab starts empty).
	const LOG_KEY = "trip-planner-log/" + database;
	const LOG_KEEP = 30;
	function saveLog() {
		try {
			sessionStorage.setItem(LOG_KEY, JSON.stringify(app.log.slice(0, LOG_KEEP).map((e) => ({ kind: e.kind, text: e.text, at: e.at.getTime(), count: e.count }))));
		} catch (_) { /* storage full or disabled: the log stays in memory */ }
	}
	function restoreLog() {
		let saved = [];
		try { saved = JSON.parse(sessionStorage.getItem(LOG_KEY) || "[]"); } catch (_) { saved = []; }
		if (!Array.isArray(saved)) return;
		for (const e of saved.slice(0, LOG_KEEP).reverse()) {
			if (!e || typeof e.text !== "string" || typeof e.kind !== "string") continue;
			const entry = { kind: e.kind, text: e.text, at: new Date(+e.at || 0), count: +e.count || 1, restored: true };
			app.log.unshift(entry);
			showLogEntry(entry);
		}
	}
	restoreLog();

	function clock(d) {
		return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
	}

	function renderSite() {
		$("info-site").replaceChildren(h("code", { text: app.siteId, title: "This browser's replica id: every change made here carries it" }));
	}

	function show(v) {
		if (v === null || v === undefined) return "empty";
		if (v instanceof Date) return v.toISOString().slice(0, 10);
		if (typeof v === "string") return "“" + (v.length > 40 ? v.slice(0, 40) + "…" : v) + "”";
		return String(v);
	}

	// schemaOnly: a change event that changed no rows (a schema migration,
	// such as another device's first open creating its tables). Events
	// without the list (another tab's notice for several commits) count
	// as data changes.
	function schemaOnly(e) {
		return Array.isArray(e.changes) && e.changes.length === 0;
	}

	// changedWhat says which rows a change event changed: "2 trips and
	// 1 stop", or the tables when the rows are not listed.
	const ROW_NAMES = { trips: ["trip", "trips"], stops: ["stop", "stops"], cities: ["city", "cities"] };
	function changedWhat(e) {
		if (!Array.isArray(e.changes)) return e.tables.join(", ");
		const n = new Map();
		for (const c of e.changes) n.set(c.table, (n.get(c.table) || 0) + 1);
		const parts = [...n].map(([t, k]) => plural(k, (ROW_NAMES[t] || [t + " row"])[0], (ROW_NAMES[t] || [, t + " rows"])[1]));
		return parts.length > 1 ? parts.slice(0, -1).join(", ") + " and " + parts[parts.length - 1] : parts[0];
	}

	function watchActivity(db) {
		renderSite();
		db.on("change", (e) => {
			if (e.fromOtherTab && !e.remote && !schemaOnly(e)) addLog("tab", "Another tab changed " + changedWhat(e));
		});
		db.on("remoteChange", (e) => {
			// A device that only opened the page (its tables' setup, schema
			// migrations) changed no rows: nothing to tell the user.
			if (schemaOnly(e)) return;
			const what = changedWhat(e);
			addLog("remote", what[0].toUpperCase() + what.slice(1) + " changed " + (e.siteId ? "on device " + shortId(e.siteId) : "(from the relay)"));
		});
		db.on("conflict", (c) => {
			const other = "device " + shortId(c.remoteSiteId);
			addLog("conflict", "Conflict in " + c.table + "." + c.column + ": this device wrote " + show(c.localValue) + ", " + other + " wrote " +
				show(c.remoteValue) + " — " + (c.remoteWon ? other + "'s edit won (it is newer)" : "this device's edit was kept (it is newer)"));
		});
		// Synced changes this version cannot apply: for a table or column a
		// newer app version declared (applied once this one declares it too),
		// or whose key or value does not fit the table (kept 30 days, never applied).
		const heldWhy = { unknownTable: "a table this app version does not know", unknownColumn: "a column this app version does not know",
			keyMismatch: "its key does not fit this app version's table", wrongType: "a value of the wrong type" };
		db.on("held", (e) => addLog("remote", "Held " + e.changes + " changes for table " + e.table + ": " + (heldWhy[e.reason] || e.reason) + (e.detail ? " (" + e.detail + ")" : "")));
	}

	// ---- trips and stops --------------------------------------------------------------

	const tripEls = new Map(); // trip id -> article element

	// Field codecs between rows and <input>s.
	const FIELDS = {
		trips: { title: "text", destination: "text", startsOn: "date", budget: "real", travelers: "integer", booked: "boolean" },
		stops: { name: "text", nights: "integer", cost: "real", visited: "boolean" },
	};

	function toInput(input, kind, v) {
		if (kind === "boolean") { input.checked = !!v; return; }
		let s = "";
		if (v !== null && v !== undefined) {
			if (kind === "date") s = v instanceof Date ? v.toISOString().slice(0, 10) : "";
			else s = String(v);
		}
		if (input.value !== s) input.value = s;
	}

	// fromInput returns the value to write. Numbers go to Replica as typed:
	// an integer column refuses 2.5 with VALIDATION, which the page shows.
	// An empty field is null (so clearing a trip's title is refused: it is
	// notNull).
	function fromInput(input, kind) {
		if (kind === "boolean") return input.checked;
		const s = input.value.trim();
		if (s === "") {
			// A number field holding text the browser cannot parse also reads
			// as "": treat it as invalid rather than as a cleared value.
			if (input.validity && input.validity.badInput) return NaN;
			return null;
		}
		switch (kind) {
			case "real": case "integer": return Number(s);
			case "date": return new Date(s + "T00:00:00Z");
			default: return s.replace(/\s*[\r\n]+\s*/g, " "); // a title pasted over several lines
		}
	}

	function fieldInput(table, field, attrs) {
		const kind = FIELDS[table][field];
		const type = { date: "date", real: "number", integer: "number", boolean: "checkbox" }[kind] || "text";
		const a = Object.assign({ type, "data-field": field }, attrs || {});
		if (kind === "real") { a.step = "0.01"; a.inputMode = "decimal"; }
		if (kind === "integer") { a.step = "1"; a.inputMode = "numeric"; }
		return h("input", a);
	}

	function renderTripFields(el, trip) {
		for (const input of el.querySelectorAll(":scope > .trip-head [data-field], :scope > .trip-fields [data-field]")) {
			if (input === document.activeElement && input.type !== "checkbox") continue; // do not overwrite what the user types
			toInput(input, FIELDS.trips[input.dataset.field], trip[input.dataset.field]);
		}
		fitTitle(el.querySelector(".trip-title"));
	}

	// fitTitle sizes a title's textarea to its text where CSS cannot
	// (field-sizing: content is Chromium's; elsewhere rows=1 would cut it).
	const cssFits = !!(window.CSS && CSS.supports && CSS.supports("field-sizing", "content"));
	function fitTitle(ta) {
		if (cssFits || !ta) return;
		if (!ta.isConnected) { requestAnimationFrame(() => { if (ta.isConnected) fitTitle(ta); }); return; } // a new card, not placed yet
		ta.style.height = "auto";
		ta.style.height = ta.scrollHeight + ta.offsetHeight - ta.clientHeight + "px"; // border-box: the borders too
	}
	if (!cssFits) {
		document.addEventListener("input", (ev) => { if (ev.target.classList && ev.target.classList.contains("trip-title")) fitTitle(ev.target); });
		window.addEventListener("resize", () => { for (const ta of document.querySelectorAll("#trips .trip-title")) fitTitle(ta); });
	}

	function newTripEl(trip) {
		const el = h("article", { class: "card trip", "data-table": "trips", "data-id": trip.id },
			h("div", { class: "trip-head" },
				// A textarea, so that a long title wraps (on a phone too)
				// instead of being cut; Enter commits it as in the other fields.
				h("textarea", { class: "trip-title", rows: 1, "data-field": "title", "aria-label": "Trip title", placeholder: "Trip title" }),
				h("label", { class: "check" }, fieldInput("trips", "booked", { "aria-label": "Booked" }), " Booked"),
				h("button", { class: "btn btn-icon btn-danger", type: "button", "data-action": "delete-trip", title: "Delete this trip and its stops", "aria-label": "Delete trip" }, "✕"),
			),
			h("div", { class: "grid trip-fields" },
				h("label", { class: "field" }, "Destination ", fieldInput("trips", "destination", { placeholder: "Where to?" })),
				h("label", { class: "field" }, "Starts ", fieldInput("trips", "startsOn")),
				h("label", { class: "field" }, "Budget (€) ", fieldInput("trips", "budget", { min: "0" })),
				h("label", { class: "field" }, "Travelers ", fieldInput("trips", "travelers", { min: "1" })),
			),
			h("ol", { class: "stops" }),
			h("form", { class: "add-stop", autocomplete: "off" },
				h("input", { name: "stop", placeholder: "Add a stop…", "aria-label": "New stop name" }),
				h("button", { class: "btn", type: "submit" }, "Add stop"),
			),
			h("div", { class: "trip-foot muted" }),
		);
		return el;
	}

	function newStopEl(stop) {
		return h("li", { class: "stop", "data-table": "stops", "data-id": stop.id },
			h("span", { class: "order" },
				h("button", { class: "btn btn-icon", type: "button", "data-action": "up", title: "Move up", "aria-label": "Move stop up" }, "↑"),
				h("button", { class: "btn btn-icon", type: "button", "data-action": "down", title: "Move down", "aria-label": "Move stop down" }, "↓"),
			),
			fieldInput("stops", "name", { class: "stop-name", "aria-label": "Stop name" }),
			h("label", { class: "mini" }, fieldInput("stops", "nights", { min: "0", "aria-label": "Nights" }), h("span", { text: "nights" })),
			h("label", { class: "mini" }, h("span", { text: "€" }), fieldInput("stops", "cost", { min: "0", "aria-label": "Cost" })),
			h("label", { class: "check visited-check" }, fieldInput("stops", "visited"), h("span", { text: "Visited" })),
			h("button", { class: "btn btn-icon btn-danger", type: "button", "data-action": "delete-stop", title: "Delete stop", "aria-label": "Delete stop" }, "✕"),
		);
	}

	function stopsOf(tripId) { return app.stops.filter((s) => s.tripId === tripId); }

	// renderTrips reconciles the trip cards with app.trips and app.stops,
	// keyed by id, so inputs keep focus and caret while data changes.
	function renderTrips() {
		const list = $("trips");
		const trips = app.trips.slice().sort((a, b) => {
			const x = a.startsOn ? a.startsOn.getTime() : Infinity, y = b.startsOn ? b.startsOn.getTime() : Infinity;
			if (x !== y) return x - y;
			const c = (a.createdAt ? a.createdAt.getTime() : 0) - (b.createdAt ? b.createdAt.getTime() : 0);
			return c || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
		});
		const seen = new Set();
		let prev = null;
		for (const trip of trips) {
			seen.add(trip.id);
			let el = tripEls.get(trip.id);
			if (!el) { el = newTripEl(trip); tripEls.set(trip.id, el); }
			renderTripFields(el, trip);
			renderStops(el, trip);
			const want = prev ? prev.nextSibling : list.firstChild;
			if (want !== el) list.insertBefore(el, want);
			prev = el;
		}
		for (const [id, el] of tripEls) if (!seen.has(id)) { el.remove(); tripEls.delete(id); }
		$("trips-empty").hidden = trips.length > 0;
		list.dataset.count = String(trips.length);
	}

	function renderStops(tripEl, trip) {
		const ol = tripEl.querySelector(".stops");
		const stops = stopsOf(trip.id);
		const byId = new Map();
		for (const li of ol.children) byId.set(li.dataset.id, li);
		let prev = null;
		stops.forEach((s, i) => {
			let li = byId.get(s.id);
			byId.delete(s.id);
			if (!li) li = newStopEl(s);
			for (const input of li.querySelectorAll("[data-field]")) {
				if (input === document.activeElement && input.type !== "checkbox") continue;
				toInput(input, FIELDS.stops[input.dataset.field], s[input.dataset.field]);
			}
			li.classList.toggle("visited", !!s.visited);
			li.querySelector('[data-action="up"]').disabled = i === 0;
			li.querySelector('[data-action="down"]').disabled = i === stops.length - 1;
			const want = prev ? prev.nextSibling : ol.firstChild;
			if (want !== li) ol.insertBefore(li, want);
			prev = li;
		});
		for (const li of byId.values()) li.remove();
		const nights = stops.reduce((n, s) => n + (Number(s.nights) || 0), 0);
		const cost = stops.reduce((n, s) => n + (s.cost || 0), 0);
		const parts = [plural(stops.length, "stop", "stops"), plural(nights, "night", "nights")];
		if (cost || trip.budget) parts.push(money.format(cost) + (trip.budget ? " of " + money.format(trip.budget) + (cost > trip.budget ? " — over budget" : "") : ""));
		setText(tripEl.querySelector(".trip-foot"), parts.join(" · "));
		tripEl.classList.toggle("over", !!trip.budget && cost > trip.budget);
	}

	function startTrips(db) {
		let gotTrips = false, gotStops = false;
		const rendered = () => {
			if (!gotTrips || !gotStops) return;
			renderTrips();
			if (!app.timing.firstRender) {
				app.timing.firstRender = performance.now();
				document.body.dataset.ready = "true";
			}
		};
		const onErr = (e) => showError(e, "live query");
		db.subscribe("trips", { orderBy: "createdAt" }, (rows) => { app.trips = rows; gotTrips = true; rendered(); }, onErr);
		db.subscribe("stops", { orderBy: ["tripId", "position"] }, (rows) => { app.stops = rows; gotStops = true; rendered(); }, onErr);

		// The form checks what it can before writing (the browser's
		// constraint validation: a title is required, the numbers' min and
		// step) and says so beside the form, in words.
		const form = $("new-trip");
		form.addEventListener("invalid", (ev) => {
			const input = ev.target;
			const label = FIELD_LABELS[input.name] || input.name;
			const why = input.validity.valueMissing || input.validity.customError ? label + " is required: give the trip a " + label.toLowerCase() + "." :
				label + ": " + input.validationMessage;
			const p = $("new-trip-error");
			if (p.hidden || !p.dataset.field) { setText(p, why); p.dataset.field = input.name; p.hidden = false; }
		}, true);
		form.addEventListener("input", (ev) => {
			if (ev.target.name === "title") ev.target.setCustomValidity("");
			const p = $("new-trip-error");
			p.hidden = true;
			delete p.dataset.field;
		});
		form.addEventListener("submit", async (ev) => {
			ev.preventDefault();
			const f = ev.target;
			$("new-trip-error").hidden = true;
			delete $("new-trip-error").dataset.field;
			if (!f.title.value.trim()) {
				// Only spaces: what `required` lets through.
				f.title.setCustomValidity("Give the trip a title.");
				f.title.reportValidity();
				return;
			}
			const row = {
				title: fromInput(f.title, "text"),
				destination: fromInput(f.destination, "text"),
				startsOn: fromInput(f.startsOn, "date"),
				budget: fromInput(f.budget, "real"),
				travelers: fromInput(f.travelers, "integer"),
				createdAt: new Date(),
			};
			for (const k of Object.keys(row)) if (row[k] === null && k !== "title") delete row[k];
			try {
				await db.insert("trips", row);
				f.reset();
				f.title.focus();
			} catch (e) {
				showError(e, "new trip");
			}
		});

		$("sample-trip").addEventListener("click", () => addSampleTrip().catch((e) => showError(e, "sample trip")));

		const list = $("trips");
		list.addEventListener("change", (ev) => {
			const input = ev.target;
			const field = input.dataset && input.dataset.field;
			if (!field) return;
			const rowEl = input.closest("[data-id]");
			const table = rowEl.dataset.table;
			const id = rowEl.dataset.id;
			const kind = FIELDS[table][field];
			const value = fromInput(input, kind);
			db.update(table, id, { [field]: value }).catch((e) => {
				showError(e, "edit " + table.slice(0, -1) + " " + field);
				// Show the stored value again: the write changed nothing.
				const cur = (table === "trips" ? app.trips : app.stops).find((r) => r.id === id);
				if (cur) toInput(input, kind, cur[field]);
			});
		});
		// Enter in a text field commits it (change fires on blur).
		list.addEventListener("keydown", (ev) => {
			if (ev.key === "Enter" && ev.target.dataset && ev.target.dataset.field && ev.target.type !== "checkbox") {
				ev.preventDefault();
				ev.target.blur();
			}
		});
		list.addEventListener("click", (ev) => {
			const btn = ev.target.closest("button[data-action]");
			if (!btn) return;
			const rowEl = btn.closest("[data-id]");
			const id = rowEl.dataset.id;
			const act = {
				"delete-trip": () => deleteTrip(id),
				"delete-stop": () => db.delete("stops", id),
				up: () => moveStop(id, -1),
				down: () => moveStop(id, +1),
			}[btn.dataset.action];
			if (act) act().catch((e) => showError(e, btn.title || btn.dataset.action));
		});
		list.addEventListener("submit", async (ev) => {
			const form = ev.target.closest(".add-stop");
			if (!form) return;
			ev.preventDefault();
			const tripId = form.closest("[data-id]").dataset.id;
			const name = form.stop.value.trim();
			if (!name) return;
			try {
				await addStop(tripId, name);
				form.stop.value = "";
			} catch (e) {
				showError(e, "add stop");
			}
		});
	}

	async function addStop(tripId, name, extra) {
		const stops = stopsOf(tripId);
		const position = stops.length ? stops[stops.length - 1].position + 1 : 1;
		return app.db.insert("stops", Object.assign({ tripId, name, position }, extra || {}));
	}

	// deleteTrip deletes a trip and its stops in one transaction.
	async function deleteTrip(id) {
		await app.db.transaction(async (tx) => {
			const stops = await tx.query("stops", { where: { tripId: id } });
			for (const s of stops) await tx.delete("stops", s.id);
			await tx.delete("trips", id);
		});
	}

	// moveStop moves a stop one place up (-1) or down (+1) by giving it a
	// position between its new neighbours: one row changes, so moves made
	// on two devices at once merge like any other edit. When positions get
	// too close to split, the trip's stops are renumbered in one transaction.
	async function moveStop(id, dir) {
		const stop = app.stops.find((s) => s.id === id);
		if (!stop) return;
		const sib = stopsOf(stop.tripId);
		const i = sib.findIndex((s) => s.id === id);
		const j = i + dir;
		if (j < 0 || j >= sib.length) return;
		const before = dir < 0 ? (sib[j - 1] ? sib[j - 1].position : sib[j].position - 2) : sib[j].position;
		const after = dir < 0 ? sib[j].position : (sib[j + 1] ? sib[j + 1].position : sib[j].position + 2);
		const pos = (before + after) / 2;
		if (pos > before && pos < after) {
			await app.db.update("stops", id, { position: pos });
			return;
		}
		const order = sib.map((s) => s.id);
		order.splice(i, 1);
		order.splice(j, 0, id);
		await app.db.transaction(async (tx) => {
			for (let k = 0; k < order.length; k++) await tx.update("stops", order[k], { position: k + 1 });
		});
	}

	async function addSampleTrip() {
		const start = new Date();
		start.setUTCHours(0, 0, 0, 0);
		start.setUTCDate(start.getUTCDate() + 30);
		await app.db.transaction(async (tx) => {
			const trip = await tx.insert("trips", { title: "Portugal by train", destination: "Portugal", startsOn: start, budget: 1800, travelers: 2, booked: false, createdAt: new Date() });
			const stops = [["Lisbon", 3, 420], ["Sintra", 1, 130], ["Coimbra", 1, 110], ["Porto", 3, 390]];
			let p = 1;
			for (const [name, nights, cost] of stops) await tx.insert("stops", { tripId: trip.id, name, position: p++, nights, cost });
		});
	}

	// ---- cities ---------------------------------------------------------------------

	let excerpt = null; // the rows of web/data/cities-excerpt.json, once fetched
	let citySub = null; // unsubscribe of the current results query
	let countTimer = 0, countBusy = false, countAgain = false, countLater = false, importing = false;

	// cityRow turns a row of the GeoNames data ({name, lat, lng, country,
	// admin1, admin2}, coordinates as decimal strings) into a cities row.
	function cityRow(c) {
		return {
			country: c.country, admin1: c.admin1, name: c.name,
			lat: Number(c.lat), lng: Number(c.lng),
			admin2: c.admin2 || null,
			search: fold(c.name),
		};
	}

	// cityWhere builds the query's where: an index range on (country,
	// search) or (search).
	function cityWhere(q, country) {
		const where = {};
		if (country) where.country = country;
		const f = fold(q.trim());
		if (f) where.search = { prefix: f };
		return where;
	}

	// searchCities runs the Cities view's query: name prefix (folded) and
	// country, ordered by name, at most limit rows.
	function searchCities({ q = "", country = "", limit = 100 } = {}) {
		return app.db.query("cities", { where: cityWhere(q, country), orderBy: "search", limit });
	}

	// importCities writes rows of the GeoNames data in transactions of
	// `batch` rows, calling onProgress(done, total) after each. A batch is
	// first tried with insert, the fast path for rows this replica does not
	// have; if any of its keys exists (imported before, here or on another
	// device and synced), the commit fails with CONFLICT and writes nothing,
	// and the batch is redone with upsert, which writes only what differs:
	// importing the same rows again changes nothing.
	async function importCities(rows, { batch = 300, onProgress } = {}) {
		const db = app.db;
		const write = (chunk, op) => db.transaction(async (tx) => {
			const ps = new Array(chunk.length);
			for (let k = 0; k < chunk.length; k++) ps[k] = tx[op]("cities", cityRow(chunk[k]));
			await Promise.all(ps);
		});
		for (let i = 0; i < rows.length; i += batch) {
			const chunk = rows.slice(i, i + batch);
			try {
				await write(chunk, "insert");
			} catch (e) {
				if (!e || e.code !== "CONFLICT") throw e;
				await write(chunk, "upsert");
			}
			if (onProgress) onProgress(Math.min(i + batch, rows.length), rows.length);
		}
	}

	// runImport imports the rows that load() returns with the Cities view's
	// button and progress bar, and reports on the page (never throws).
	async function runImport(load, batch) {
		const btn = $("import"), wrap = $("import-progress-wrap"), bar = $("import-progress"), label = $("import-label");
		importing = true;
		btn.disabled = true;
		wrap.hidden = false;
		bar.style.width = "0%";
		delete label.dataset.done;
		const t0 = performance.now();
		try {
			setText(label, "Loading the rows…");
			const rows = await load();
			setText(label, "Importing…");
			await importCities(rows, {
				batch,
				onProgress: (done, total) => {
					bar.style.width = (100 * done / total) + "%";
					setText(label, "Imported " + nf.format(done) + " of " + nf.format(total) + " rows");
				},
			});
			const s = (performance.now() - t0) / 1000;
			setText(label, "Imported " + nf.format(rows.length) + " rows in " + s.toFixed(1) + " s. They sync to your other devices; importing them again there adds nothing.");
			label.dataset.done = "true";
			return { rows: rows.length, seconds: s };
		} catch (e) {
			showError(e, "import");
			setText(label, "Import failed: " + e.message);
			return { error: e.code || e.message };
		} finally {
			importing = false;
			btn.disabled = false;
			wrap.hidden = true;
			scheduleCount();
		}
	}

	// showImported demotes the import button once this replica holds the
	// excerpt (imported here or synced from another device): importing
	// again is possible but no longer the next thing to do.
	function showImported(total) {
		const btn = $("import");
		const done = total >= (excerpt ? excerpt.length : 3016);
		btn.classList.toggle("btn-primary", !done);
		btn.dataset.imported = String(done);
		setText(btn, done ? "Import again" : "Import 3,016 cities");
		btn.title = done ? "The cities are in this replica; importing them again changes nothing" : "";
	}

	async function loadExcerpt() {
		if (!excerpt) {
			const r = await fetch("data/cities-excerpt.json");
			if (!r.ok) throw new Error("fetching data/cities-excerpt.json: HTTP " + r.status);
			excerpt = await r.json();
		}
		return excerpt;
	}

	function citiesVisible() { return !$("view-cities").hidden; }

	function startCities(db) {
		const q = $("city-q"), sel = $("city-country");
		let t = 0;
		q.addEventListener("input", () => { clearTimeout(t); t = setTimeout(refreshCities, 120); });
		sel.addEventListener("change", refreshCities);
		db.on("change", (e) => { if (e.tables.includes("cities") && citiesVisible()) scheduleCount(); });
		$("import").addEventListener("click", () => runImport(loadExcerpt, 300));
	}

	async function fillCountries() {
		const sel = $("city-country");
		if (sel.options.length > 1) return;
		let rows;
		try { rows = await loadExcerpt(); } catch (e) { showError(e, "countries"); return; }
		const codes = [...new Set(rows.map((r) => r.country))];
		const opts = codes.map((c) => [c, countryName(c)]).sort((a, b) => a[1].localeCompare(b[1]));
		for (const [code, name] of opts) sel.append(h("option", { value: code, text: name + " (" + code + ")" }));
	}

	function refreshCities() {
		if (!app.db || !citiesVisible()) return;
		if (citySub) { citySub(); citySub = null; }
		const q = $("city-q").value, country = $("city-country").value;
		citySub = app.db.subscribe("cities", { where: cityWhere(q, country), orderBy: "search", limit: 100 },
			renderCities, (e) => showError(e, "city search"));
		scheduleCount();
	}

	// Region names: web/data/admin1-excerpt.json maps the GeoNames
	// first-level division codes of the excerpt's cities ("PT.14") to
	// their names ("Lisbon"). Until it is loaded (or if it cannot be) the
	// column shows the codes.
	let regions = null, regionsLoading = null, cityRowsShown = [];
	function loadRegions() {
		if (!regionsLoading) {
			regionsLoading = fetch("data/admin1-excerpt.json")
				.then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
				.then((m) => { regions = m; renderCities(cityRowsShown); })
				.catch(() => { regionsLoading = null; });
		}
		return regionsLoading;
	}

	function regionName(c) {
		const name = regions && regions[c.country + "." + c.admin1];
		if (name) return name;
		return c.admin1 === "00" ? "" : c.admin1; // 00: GeoNames' "no region"
	}

	function renderCities(rows) {
		cityRowsShown = rows;
		const body = $("city-rows");
		body.replaceChildren(...rows.map((c) => h("tr", null,
			h("td", { text: c.name }),
			h("td", { title: countryName(c.country), text: c.country }),
			h("td", { class: "hide-narrow", title: "GeoNames code " + c.country + "." + c.admin1, text: regionName(c) }),
			h("td", { class: "num", text: c.lat.toFixed(3) }),
			h("td", { class: "num", text: c.lng.toFixed(3) }),
		)));
		body.dataset.count = String(rows.length);
	}

	// scheduleCount refreshes the counters once changes to cities have been
	// quiet for 400 ms. Counting every row is a scan of the table, not
	// something to repeat while an import or a snapshot writes thousands
	// of rows a second (both show their own progress meanwhile): the
	// counters catch up when the writes stop.
	function scheduleCount() {
		clearTimeout(countTimer);
		countTimer = setTimeout(runCount, 400);
	}

	async function runCount() {
		if (importing || app.syncState.progress) {
			countLater = true;
			setText($("city-total"), "(counting when the writes settle)");
			return;
		}
		if (countBusy) { countAgain = true; return; }
		countBusy = true;
		try {
			const q = $("city-q").value, country = $("city-country").value;
			const where = cityWhere(q, country);
			const filtered = Object.keys(where).length > 0;
			const total = await app.db.count("cities");
			const n = filtered ? await app.db.count("cities", { where }) : total;
			setText($("city-count"), nf.format(n));
			$("city-count").dataset.count = String(n);
			setText($("city-count-label"), n === 1 ? "matching city" : "matching cities");
			setText($("city-total"), filtered ? "(of " + nf.format(total) + " in this replica)" : "in this replica");
			showImported(total);
			$("city-more").hidden = n <= 100;
			setText($("city-more"), "Showing the first 100 of " + nf.format(n) + ". Type more of the name to narrow it down.");
		} catch (e) {
			showError(e, "count");
		} finally {
			countBusy = false;
			if (countAgain) { countAgain = false; scheduleCount(); }
		}
	}

	// ---- views -----------------------------------------------------------------------

	function route() {
		const cities = location.hash === "#cities";
		$("view-trips").hidden = cities;
		$("view-cities").hidden = !cities;
		for (const [tab, on] of [["tab-trips", !cities], ["tab-cities", cities]]) {
			if (on) $(tab).setAttribute("aria-current", "page"); else $(tab).removeAttribute("aria-current");
		}
		if (cities) {
			app.ready.then(() => { fillCountries(); loadRegions(); refreshCities(); }, () => { });
		} else if (citySub) {
			citySub();
			citySub = null;
		}
	}
	window.addEventListener("hashchange", route);
	route();

	Object.assign(app, { importCities, runImport, searchCities, cityRow, fold, addStop, moveStop, deleteTrip, addSampleTrip, connect, disconnect, showRelayHolds });
})();
