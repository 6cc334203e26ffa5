// replica.js: loads Replica, a local-first database for web apps, into a page.
//
//     <script src="/replica/replica.js"></script>
//     <script> const db = await Replica.open({name, schema}); </script>
//
// It installs the global Replica at once (Replica.ready, Replica.open, which
// waits for ready). By default (worker mode) the first Replica.open (or
// ready, importKey, deriveKey) starts a dedicated Worker,
// replica-worker.js, which loads wasm_exec.js and replica.wasm and runs the
// engine; replica.wasm is never loaded into the page. In page mode
// (data-worker="false" on the script tag, configure({worker: false}), or
// Replica.open's {worker: false}; also a replica opened with a resolver
// function while worker mode is only the default) it loads wasm_exec.js if
// `Go` is not defined and replica.wasm into the page (the script tag with
// data-worker="false": at once), both from the directory this script was
// loaded from (the download of replica.wasm overlapping the load of
// wasm_exec.js), with WebAssembly.instantiateStreaming (falling back to
// instantiate when the server sends replica.wasm with another MIME type
// than application/wasm), and runs it. No build step. The API is
// documented in replica.d.ts beside this file.
//
// The same source is the ES module of the npm package: `make package`
// (internal/npmpkg) turns the function below into index.js, which calls it
// with the URLs of replica.wasm and wasm_exec.js beside the module
// (new URL("./replica.wasm", import.meta.url), which bundlers such as Vite
// follow) and exports the loader it returns as Replica instead of setting
// the global. A module's loader starts loading at its first use (ready,
// open, importKey, deriveKey), so that Replica.configure({wasmURL,
// wasmExecURL}) can name other places first. The global Replica is only set
// while replica.wasm starts (jsbridge.Install finds the loader there) and
// then restored.
//
// The Go side (package jsbridge) builds the API from the function
// replicaFacade below, a verbatim copy of jsbridge/facade.js, and runs its
// IndexedDB batches through replicaIDBHelper, a verbatim copy of
// idbkv/helper.js, so pages whose Content-Security-Policy forbids
// 'unsafe-eval' work (they still need 'wasm-unsafe-eval' for WebAssembly).
// Do not edit them here: edit jsbridge/facade.js or idbkv/helper.js and run
// `go test ./cmd/wasm -run TestReplicaJSCarriesFacade -update`.
(function (global, moduleURLs) {
	"use strict";
	// moduleURLs: {wasm, wasmExec, worker} (URL objects) from the ES module;
	// absent (undefined) for the script tag.
	const esm = !!moduleURLs;
	if (!esm && global.Replica && global.Replica.ready) return; // loaded twice

	let wasmURL, wasmExecURL, workerURL;
	// The default of Replica.open's worker option (and where importKey,
	// deriveKey and ready run): worker mode in a window, page mode (the
	// engine on this thread) where this loader itself runs in a Worker,
	// off the main thread already; configure({worker}) or the script tag's
	// data-worker attribute set it. workerAsked: the app asked for worker
	// mode itself (configure or data-worker), as against the default (see
	// inWorker: resolver functions).
	const inWindow = typeof document !== "undefined" && typeof Worker === "function";
	let defaultWorker = inWindow, workerAsked = false;
	if (esm) {
		wasmURL = String(moduleURLs.wasm);
		wasmExecURL = String(moduleURLs.wasmExec);
		workerURL = String(moduleURLs.worker);
	} else {
		const script = typeof document !== "undefined" ? document.currentScript : null;
		const base = new URL(".", script && script.src ? script.src : global.location.href).href;
		wasmURL = base + "replica.wasm";
		wasmExecURL = base + "wasm_exec.js";
		workerURL = base + "replica-worker.js";
		if (script && script.hasAttribute && script.hasAttribute("data-worker")) workerAsked = defaultWorker = script.getAttribute("data-worker") !== "false";
	}

	// ReplicaError is the class of every error Replica rejects with, in
	// both modes (the facade of each runtime is given it).
	class ReplicaError extends Error {
		constructor(code, message, table, column) {
			super(message);
			this.name = "ReplicaError";
			this.code = code;
			if (table) this.table = table;
			if (column) this.column = column;
		}
	}

	function loadError(message) {
		return new ReplicaError("INTERNAL", "replica.js: " + message);
	}

	let installed, failed;
	const ready = new Promise((resolve, reject) => { installed = resolve; failed = reject; });
	let dead = null;
	function fail(e) {
		if (dead) return;
		dead = e && e.code ? e : loadError(String((e && e.message) || e));
		console.error(dead);
		failed(dead);
	}

	// started: loading replica.wasm into this page has begun (the script
	// tag with data-worker="false": at once; otherwise at the first use in
	// page mode), after which configure refuses new file URLs.
	let started = false;
	function begin() {
		if (started) return ready;
		started = true;
		Object.assign(loader, hooks);
		warmIndexedDB();
		start().catch(fail);
		return ready;
	}

	// warmIndexedDB asks for the list of databases, which reads nothing
	// Replica needs but makes the browser start this origin's IndexedDB
	// backing store while replica.wasm downloads and compiles: the first
	// IndexedDB open of a browser session then no longer pays that start
	// (in headless Chromium, a new database's open took about half as
	// long 200 ms after it). Failures are ignored: Replica.open reports
	// its own.
	function warmIndexedDB() {
		try {
			const idb = global.indexedDB;
			if (idb && typeof idb.databases === "function") idb.databases().catch(() => { });
		} catch (_) { }
	}
	let pageApi = null; // the API replica.wasm installed in this page

	// The options of configure (replica.d.ts LoadOptions).
	const LOAD_OPTIONS = ["wasmURL", "wasmExecURL", "workerURL", "worker"];

	function argError(message) { return new ReplicaError("INVALID_ARGUMENT", message); }

	// inWorker: whether Replica.open(options) runs the replica in the
	// Worker: options.worker, else the default; a resolver function (which
	// cannot run in the Worker) opens in page mode unless the app asked for
	// worker mode (options.worker, configure, data-worker), which open then
	// refuses. A worker option that is not a boolean goes on to Go, which
	// refuses it.
	function inWorker(options) {
		if (options === null || typeof options !== "object") return defaultWorker;
		if (options.worker !== undefined) return options.worker === true;
		if (typeof options.resolver === "function" && !workerAsked) return false;
		return defaultWorker;
	}

	const loader = {
		get ready() { return defaultWorker ? session().then(() => undefined) : begin(); },
		open(options) {
			if (!inWorker(options)) return begin().then(() => pageApi.open(options));
			if (typeof options.resolver === "function") {
				return Promise.reject(argError("Replica.open: options.resolver is a function, which cannot run in the Worker " +
					"(Go calls it synchronously while it applies a batch, and a Worker cannot call the page synchronously): " +
					"open with {worker: false} to use a resolver function, or give \"lww\", \"localWins\" or \"remoteWins\""));
			}
			return inSession((api) => api.open(options));
		},
		importKey(bytes) { return defaultWorker ? inSession((api) => api.importKey(bytes)) : begin().then(() => pageApi.importKey(bytes)); },
		deriveKey(options) { return defaultWorker ? inSession((api) => api.deriveKey(options)) : begin().then(() => pageApi.deriveKey(options)); },
		configure(options) {
			const bad = (msg) => argError("Replica.configure: " + msg);
			if (options === null || typeof options !== "object") throw bad("options must be an object");
			const urls = {};
			for (const k of Object.keys(options)) {
				const v = options[k];
				if (!LOAD_OPTIONS.includes(k)) throw bad("unknown option " + JSON.stringify(k) + " (" + LOAD_OPTIONS.join(", ") + ")");
				if (v === undefined) continue;
				if (k === "worker") {
					if (typeof v !== "boolean") throw bad("worker must be a boolean");
					continue;
				}
				if (k === "workerURL" ? current !== null || everStarted : started || current !== null || everStarted) {
					throw bad("loading has already started (" + (k === "workerURL" ? (current !== null && !everStarted ? "a Worker is starting from " + workerURL + "; call configure({workerURL}) before the first worker-mode Replica.open, or again once it failed" : "a Worker ran from " + workerURL + "; call configure({workerURL}) before the first worker-mode Replica.open") : started && !esm ?
						"the script tag with data-worker=\"false\" loads replica.wasm at once from its own directory; use worker mode or the ES module to place the files elsewhere" :
						"call configure before the first Replica.ready, open, importKey or deriveKey") + ")");
				}
				if (typeof v !== "string" && !(typeof URL === "function" && v instanceof URL)) throw bad(k + " must be a string or a URL");
				try {
					urls[k] = new URL(String(v), global.location.href).href;
				} catch (_) {
					throw bad(k + " is not a URL: " + JSON.stringify(String(v)));
				}
			}
			if (urls.wasmURL) wasmURL = urls.wasmURL;
			if (urls.wasmExecURL) wasmExecURL = urls.wasmExecURL;
			if (urls.workerURL) workerURL = urls.workerURL;
			if (typeof options.worker === "boolean") workerAsked = defaultWorker = options.worker;
		},
		ReplicaError,
	};
	// hooks are the loader's members replica.wasm uses once, when it
	// starts in this page (jsbridge.Install): present from the start of
	// page-mode loading (begin) until it installed its API.
	const hooks = {
		_facade: (go, OPS, KINDS) => replicaFacade(go, Object.assign({}, OPS, { ReplicaError }), KINDS),
		_idbHelper: replicaIDBHelper,
		_install(api) {
			pageApi = api;
			delete loader._facade;
			delete loader._idbHelper;
			delete loader._install;
			delete loader._fail;
			installed();
		},
		_fail(message) { fail(loadError(message)); },
	};

	// ---- worker mode ------------------------------------------------------
	//
	// Replica.open runs replica.wasm in a dedicated Worker unless the page
	// mode is asked for (replica-worker.js documents the messages). This
	// page runs a facade of its own (replicaFacade below: the whole API,
	// sibling tabs, the leader lock, the page lifecycle) whose entry point
	// into Go posts the call instead: the calls of one event-loop turn go
	// as one message. One Worker serves every replica this page opens in
	// worker mode; it is terminated when the last one closes (a later open
	// starts another).
	//
	// The page lifecycle. Chromium pauses a frozen page's dedicated Worker
	// too, often before the Worker could read a message, so the Worker's
	// IndexedDB transactions would stay open for the whole freeze and
	// every other tab's writes would wait. So on freeze (and on a pagehide
	// into the back/forward cache) this loader terminates the Worker at
	// once, which makes the browser abort its transactions, and on resume
	// (or pageshow) it starts another and restores the session before
	// any call goes on:
	//   - the replicas are opened again (the page's handles are its own,
	//     mapped to each Worker's), with their listen masks, sync targets
	//     (and SealKeys) and subscriptions (which deliver their current
	//     result again); the facade resigned leadership at the freeze and
	//     elects again on resume;
	//   - a call whose answer never came is settled or sent again, in call
	//     order: a write (db.insert, upsert, update, delete, a
	//     db.transaction's commit, the migrations) recorded its answer in
	//     its own IndexedDB transaction (jsbridge/journal.go): the recorded
	//     answer settles it, and a write without a record never ran (or
	//     failed unrecorded) and is sent again; db.applyChanges records its
	//     answer just after its transaction (a merge by HLC: sent again
	//     when that record is missing, it changes nothing, and its result
	//     counts the changes as skipped); every other call reads, or is
	//     idempotent (the sync calls set a target), and is sent again;
	//   - a db.transaction that was staging (begun, not committed) lost its
	//     staged statements with the Worker: its unanswered statements and
	//     its commit are rejected with CLOSED (nothing of it was written;
	//     run it again);
	//   - calls made meanwhile wait, and go once the new Worker is ready.

	const WORKER_HELLO_MS = 30000; // see spawn
	let current = null; // the live session, or null
	// everStarted: a Worker once ran replica.wasm (workerURL is fixed from
	// then on; one that failed to load or start does not count, so that
	// configure({workerURL}) can correct a wrong URL).
	let everStarted = false;
	let nextHandle = 0, nextTx = 0; // the page's replica handles and transaction ids
	// This page's write journal (jsbridge/journal.go). Named by its time
	// (Date.now() in base 36, 9 digits: the retention loop drops the
	// records of journals named more than 30 days ago) and random
	// letters; a new one is made for each session (its call ids start
	// from 1) and when it is a day old (journalNow), so that a page open
	// for months does not write records the retention loop drops at once. Each write remembers the journal its token named
	// (inflight's j), which its recall asks.
	const JOURNAL_RENEW_MS = 864e5;
	let journal = "", journalBorn = 0;
	function journalNow() {
		const now = Date.now();
		if (!journal || !(Math.abs(now - journalBorn) < JOURNAL_RENEW_MS)) {
			journal = now.toString(36).padStart(9, "0") + Math.random().toString(36).slice(2, 12);
			journalBorn = now;
		}
		return journal;
	}
	journalNow();
	const FROZEN_ANSWER = "db.transaction: the page was frozen before this statement's answer arrived; its transaction committed, this statement with it, but the answer was lost with the Worker (read the rows back; do not run the transaction again)";
	const FROZEN_TX = "db.transaction: the page was frozen while the transaction was staging, which discarded it: nothing of it was written (run it again)";

	function session() {
		if (current) return current.ready;
		const s = {
			worker: null, hello: null, built: null, api: null, ops: null, kinds: null, ready: null, dead: null, ended: false,
			state: "starting", // then "ready"; "frozen" (no Worker), "restoring"
			gen: 0, // the Worker's generation: a terminated one's messages are dropped
			calls: null, held: [], pend: new Map(), inbox: [], at: 0, tick: null,
			inflight: new Map(), // call id -> {c: the call, as the facade made it; sent: generation it went to, or 0}
			asks: new Map(), nextAsk: 0, // this loader's own calls (negative ids) -> resolve
			dbs: new Map(), // page handle -> {wh: the Worker's handle, text: open options, mask, subs: sid -> call, target}
			rev: new Map(), // the Worker's handle -> page handle
			txs: new Map(), // page transaction id -> the Worker's
			closedOne: false, unwatch: null, drained: null,
		};
		current = s;
		warmIndexedDB(); // while the Worker loads replica.wasm
		// A new session's facade numbers its calls from 1 again: a new
		// journal, so that none of its writes finds the record a write
		// of an earlier session left under the same id.
		journal = "";
		s.ready = new Promise((resolve, reject) => {
			s.failStart = reject;
			spawn(s, () => {
				s.built = replicaFacade(proxy(s), Object.assign({}, s.ops, { ReplicaError }), s.kinds);
				s.api = s.built.api;
				everStarted = true;
				s.state = "ready";
				watch(s);
				resolve(s);
			});
		});
		s.ready.catch(() => { });
		return s.ready;
	}

	// spawn starts a Worker for s and calls ready once Go runs in it.
	function spawn(s, ready) {
		const gen = ++s.gen;
		const spare = s.spare && s.spare.prepared ? s.spare.worker : null;
		if (spare) {
			// The spare has loaded its scripts and compiled replica.wasm:
			// it starts without the network (see prepareSpare).
			s.spare.drop();
			s.spare = null;
			s.worker = spare;
		} else try {
			s.worker = new Worker(workerURL);
		} catch (e) {
			if (s.state === "starting") current = null;
			throw loadError("cannot start the Worker " + workerURL + ": " + ((e && e.message) || e));
		}
		// replica-worker.js says hello as soon as it runs: a script that
		// never does is not it, and would leave open pending.
		s.hello = setTimeout(() => die(s, loadError("the Worker " + workerURL + " sent nothing within " + (WORKER_HELLO_MS / 1000) +
			" s: is workerURL replica-worker.js, of the same Replica version as this loader?")), WORKER_HELLO_MS);
		s.worker.onmessage = (ev) => {
			if (s.gen !== gen) return;
			const m = ev.data;
			if (s.hello) { clearTimeout(s.hello); s.hello = null; }
			if (m && m.hello) return;
			if (m && m.r) { s.inbox.push(m); if (s.inbox.length === 1) drain(s); return; }
			if (m && m.ops) { s.ops = m.ops; s.kinds = m.kinds; ready(); laterSpare(s); return; }
			if (m && m.fail) die(s, loadError(m.fail));
		};
		s.worker.onerror = (ev) => {
			if (ev && typeof ev.preventDefault === "function") ev.preventDefault();
			if (s.gen === gen) die(s, loadError("the Worker " + workerURL + " failed: " + ((ev && ev.message) || "it could not be loaded")));
		};
		s.worker.onmessageerror = () => { if (s.gen === gen) die(s, loadError("a message from the Worker could not be read")); };
		s.worker.postMessage({ init: { wasmURL, wasmExecURL } });
	}

	// The spare Worker. A restore after a freeze needs a new Worker, and a
	// tab often resumes offline (a phone back from the subway): loading
	// replica-worker.js, wasm_exec.js and replica.wasm again would fail,
	// and with it every replica of the page. So SPARE_AFTER_MS after a
	// Worker starts, the page starts a spare one that loads those files and
	// compiles replica.wasm, then waits: it runs no Go and opens no
	// IndexedDB database until a restore hands it the session (spawn).
	// Its fetch revalidates replica.wasm (a 304 from the HTTP cache); its
	// compileStreaming finds the wasm code cache entry the first Worker's
	// session wrote, if any (measured with V8 made to cache early), and,
	// running no code, writes none.
	// A spare that fails to load is dropped and tried again after the next
	// start; without one, a restore loads the files as the first start did.
	const SPARE_AFTER_MS = 2000;
	function laterSpare(s) {
		if (s.spareTimer || s.spare || s.ended) return;
		s.spareTimer = setTimeout(() => { s.spareTimer = null; prepareSpare(s); }, SPARE_AFTER_MS);
	}

	function prepareSpare(s) {
		if (s.spare || s.ended || s.state !== "ready") return;
		let w;
		try { w = new Worker(workerURL); } catch (_) { return; }
		const sp = { worker: w, prepared: false };
		const on = (ev) => {
			const m = ev.data;
			if (m && m.prepared) { sp.prepared = true; return; }
			if (m && m.fail) fail();
		};
		const fail = () => {
			if (s.spare !== sp) return;
			sp.drop();
			s.spare = null;
			try { w.terminate(); } catch (_) { }
		};
		const onerror = (ev) => { if (ev && typeof ev.preventDefault === "function") ev.preventDefault(); fail(); };
		sp.drop = () => { w.removeEventListener("message", on); w.removeEventListener("error", onerror); };
		w.addEventListener("message", on);
		w.addEventListener("error", onerror);
		s.spare = sp;
		w.postMessage({ prepare: { wasmURL, wasmExecURL } });
	}

	// dropSpare terminates the spare Worker, if any.
	function dropSpare(s) {
		if (s.spareTimer) { clearTimeout(s.spareTimer); s.spareTimer = null; }
		if (!s.spare) return;
		s.spare.drop();
		try { s.spare.worker.terminate(); } catch (_) { }
		s.spare = null;
	}

	// inSession calls fn with the API of a running Worker: a session that
	// ended in the meantime (its last replica closed) is replaced.
	function inSession(fn) {
		return session().then((s) => s.ended ? session().then((n) => fn(n.api)) : fn(s.api));
	}

	// die ends a session whose Worker failed: calls waiting are rejected
	// with INTERNAL, later ones too (the facade turns what go throws into
	// INTERNAL); the next open starts another Worker.
	function die(s, e) {
		if (s.dead || s.ended) return;
		s.dead = e;
		console.error(e);
		s.failStart(e);
		end(s, "INTERNAL", e.message);
	}

	// end settles every waiting call with code and terminates the Worker.
	function end(s, code, message) {
		if (current === s) current = null;
		s.ended = true;
		s.gen++;
		if (s.hello) { clearTimeout(s.hello); s.hello = null; }
		if (s.unwatch) { s.unwatch(); s.unwatch = null; }
		try { s.worker.terminate(); } catch (_) { }
		dropSpare(s);
		for (const r of s.asks.values()) r(null);
		s.asks.clear();
		if (!s.built) return;
		const text = JSON.stringify({ code, message });
		for (const id of s.inflight.keys()) s.built.settle(id, s.kinds.error, text, null);
		s.inflight.clear();
		s.held = [];
	}

	// proxy is the facade's go(op, handle, tx, id, a, b, c, d) in worker
	// mode: it queues the call for the Worker (one message per turn) and
	// answers the one synchronous question (pending: the leader's unsent
	// count) from the count the Worker sent last. Handles and transaction
	// ids are the page's (see translate).
	function proxy(s) {
		const O = s.ops;
		return function (op, h, tx, id, a, b, c, d) {
			if (s.dead) throw s.dead;
			if (s.ended) throw new ReplicaError("CLOSED", "the replica is closed");
			if (op === O.pending) return s.pend.get(h) || 0;
			// The lifecycle is this loader's: it terminates the Worker
			// on freeze (see above).
			if (op === O.freeze || op === O.resume) return undefined;
			// Go emits the sync state (its unsent count among it) only to
			// listeners; here its every change must reach the page, which
			// cannot ask synchronously: the message that carries the
			// event carries the count (see drain).
			if (op === O.listen) a |= O.listenBits.syncState;
			const call = [op, h, tx, id, a, b, c, d];
			for (let i = 4; i < 8; i++) {
				const v = call[i];
				// Bytes: copied now (the caller may change or zero them
				// after the call returns, as in page mode), and kept until
				// the answer (a restore may send the call again).
				if (v instanceof Uint8Array) call[i] = v.slice();
				else if (typeof v === "function") throw new ReplicaError("INVALID_ARGUMENT", "a function cannot be sent to the Worker");
			}
			while (call.length > 4 && call[call.length - 1] === undefined) call.pop();
			const db = h ? s.dbs.get(h) : null;
			if (db) {
				if (op === O.listen) db.mask = a;
				else if (op === O.subscribe) db.subs.set(a, call);
				else if (op === O.unsubscribe) db.subs.delete(a);
				else if (op === O.syncTarget) db.target = [a, b];
			}
			if (id) s.inflight.set(id, { c: call, sent: 0 });
			if (s.state !== "ready") { s.held.push(call); return undefined; }
			if (!s.calls) { s.calls = []; queueMicrotask(() => send(s)); }
			s.calls.push(call);
			return undefined;
		};
	}

	function send(s) {
		const calls = s.calls;
		s.calls = null;
		if (!calls || s.ended) return;
		if (s.state !== "ready") { s.held.push(...calls); return; }
		post(s, calls);
	}

	// journaled reports whether call c is a write whose answer Go records
	// (jsbridge/journal.go).
	function journaled(O, c) {
		const op = c[0];
		return op === O.commit || op === O.dropTable || op === O.dropColumn || op === O.dropIndex || op === O.renameTable || op === O.alterColumn || op === O.applyChanges ||
			(!c[2] && (op === O.insert || op === O.upsert || op === O.update || op === O.delete));
	}

	// post sends the facade's calls to the running Worker, translated
	// (see translate); a write goes with its journal token after its
	// arguments: its id, the lowest id still waiting (every answer below
	// it arrived) and the journal.
	function post(s, calls) {
		const O = s.ops, out = [];
		for (const c of calls) {
			const t = translate(s, c);
			if (!t) continue;
			c.out = true; // sent to a Worker (a subscription is made again on restore)
			const r = c[3] && s.inflight.get(c[3]);
			if (r) r.sent = s.gen;
			if (t[1] > 0 && journaled(O, c)) {
				const j = journalNow();
				if (r) r.j = j;
				while (t.length < 8) t.push(undefined);
				t.push(c[3], s.inflight.keys().next().value || c[3], j);
			}
			out.push(t);
		}
		if (out.length) direct(s, out, calls);
	}

	// direct posts calls (in the Worker's terms); what the structured
	// clone refuses fails the facade's calls of the turn.
	function direct(s, out, calls) {
		try {
			s.worker.postMessage({ c: out });
		} catch (e) {
			const text = JSON.stringify({ code: "INTERNAL", message: "replica.js: posting to the Worker: " + ((e && e.message) || e) });
			for (const c of calls || []) if (c[3] && s.inflight.has(c[3])) receive(s, [0, c[3], s.kinds.error, text, null]);
		}
	}

	// translate returns the facade's call c in the running Worker's terms
	// (its handle and transaction id), or settles it and returns null: a
	// call of a transaction the Worker does not know (one that was
	// staging when the page froze) is rejected (db.transaction's
	// discard succeeds).
	function translate(s, c) {
		const t = c.slice();
		if (c[1]) { const db = s.dbs.get(c[1]); t[1] = db && db.wh !== undefined ? db.wh : -1; }
		if (c[2]) {
			const wt = s.txs.get(c[2]);
			if (wt === undefined) {
				if (c[3]) {
					const undef = c[0] === s.ops.discard;
					queueMicrotask(() => receive(s, [0, c[3], undef ? s.kinds.undefined : s.kinds.error, undef ? "" : JSON.stringify({ code: "CLOSED", message: FROZEN_TX }), null]));
				}
				return null;
			}
			t[2] = wt;
		}
		return t;
	}

	// ask sends this loader's own call (in the Worker's terms) and
	// resolves with its answer entry (null if the session ended).
	function ask(s, call, out) {
		const id = --s.nextAsk;
		call[3] = id;
		out.push(call);
		return new Promise((resolve) => s.asks.set(id, resolve));
	}

	// drain hands the Worker's messages (s.inbox) to the facade in order,
	// entry by entry, and yields the page's thread (a new task) whenever it
	// has run for SLICE_MS: a message carrying many results (10,000 rows'
	// worth) does not become one long task.
	const SLICE_MS = 8;
	function drain(s) {
		const t0 = performance.now();
		while (s.inbox.length && !s.ended) {
			const m = s.inbox[0];
			if (s.at === 0 && m.p) for (let i = 0; i < m.p.length; i += 2) { const h = s.rev.get(m.p[i]); if (h) s.pend.set(h, m.p[i + 1]); }
			while (s.at < m.r.length) {
				receive(s, m.r[s.at++]);
				if (s.at < m.r.length && performance.now() - t0 > SLICE_MS) { later(s); return; }
			}
			s.inbox.shift();
			s.at = 0;
			// The last replica closed: the Worker goes (a later open
			// starts another).
			if (s.dbs.size === 0 && s.closedOne && s.inflight.size === 0 && s.state === "ready" && !s.ended) { end(s, "CLOSED", "the replica is closed"); return; }
			if (s.inbox.length && performance.now() - t0 > SLICE_MS) { later(s); return; }
		}
		if (!s.inbox.length && s.drained) { const f = s.drained; s.drained = null; f(); }
	}

	// later runs drain(s) in a new task (a MessageChannel's message comes
	// sooner than a timer's).
	function later(s) {
		if (!s.tick) {
			s.tick = new MessageChannel();
			s.tick.port1.onmessage = () => drain(s);
		}
		s.tick.port2.postMessage(0);
	}

	// receive hands one entry of a Worker message to the facade, in the
	// page's terms.
	function receive(s, e) {
		const b = s.built;
		try {
			switch (e[0]) {
				case 0:
				case 1: {
					const id = e[1];
					if (id < 0) { const r = s.asks.get(id); if (r) { s.asks.delete(id); r(e); } break; }
					const r = s.inflight.get(id);
					if (r) { s.inflight.delete(id); answered(s, r.c, e); }
					if (e[0] === 0) b.settle(id, e[2], e[3], e[4]); else b.settleValue(id, e[2]);
					if (r && r.c[0] === s.ops.open && e[2] !== s.kinds.error) {
						// A new replica: Go is to emit its sync state from
						// the start (see proxy).
						try { proxy(s)(s.ops.listen, JSON.parse(e[3])[0], 0, 0, 0); } catch (_) { }
					}
					break;
				}
				case 2:
				case 3: {
					const h = s.rev.get(e[1]);
					if (h === undefined) break;
					if (e[0] === 2) b.emit(h, e[2], e[3], e[4], e[5]); else b.deliver(h, e[2], e[3], e[4], e[5]);
					break;
				}
			}
		} catch (err) {
			console.error(err);
		}
	}

	// answered keeps the session's records of call c, answered with entry
	// e (which it puts in the page's terms).
	function answered(s, c, e) {
		const O = s.ops, ok = e[0] === 1 || e[2] !== s.kinds.error;
		for (let i = 4; i < c.length; i++) if (c[0] === O.sealKey && c[i] instanceof Uint8Array) c[i].fill(0);
		if (!ok) return;
		const db = c[1] ? s.dbs.get(c[1]) : null;
		switch (c[0]) {
			case O.open: {
				const [wh, site] = JSON.parse(e[3]);
				const h = ++nextHandle;
				s.dbs.set(h, { wh, text: c[4], mask: 0, subs: new Map(), target: null });
				s.rev.set(wh, h);
				e[3] = JSON.stringify([h, site]);
				break;
			}
			case O.close:
				if (db) { s.rev.delete(db.wh); s.dbs.delete(c[1]); }
				s.closedOne = true;
				break;
			case O.begin: {
				const t = ++nextTx;
				s.txs.set(t, JSON.parse(e[3]));
				e[3] = String(t);
				break;
			}
			case O.commit:
			case O.discard:
				s.txs.delete(c[2]);
				break;
			case O.syncConnect: if (db) db.target = [e[3], c[6]]; break;
			case O.syncDisconnect: if (db) db.target = null; break;
		}
	}

	// watch terminates the Worker when the page freezes and restores the
	// session when it resumes (see above). Registered before any replica
	// opens, these run before the facade's own handlers (which resign
	// leadership: their calls wait for the new Worker).
	function watch(s) {
		if (typeof addEventListener !== "function" || typeof removeEventListener !== "function") return;
		const doc = typeof document === "object" && document && typeof document.addEventListener === "function" ? document : null;
		const off = () => freeze(s);
		const hide = (e) => { if (e && e.persisted) freeze(s); };
		const on = () => restore(s);
		const show = (e) => { if (e && e.persisted) restore(s); };
		if (doc) { doc.addEventListener("freeze", off); doc.addEventListener("resume", on); }
		addEventListener("pagehide", hide);
		addEventListener("pageshow", show);
		s.unwatch = () => {
			if (doc) { doc.removeEventListener("freeze", off); doc.removeEventListener("resume", on); }
			removeEventListener("pagehide", hide);
			removeEventListener("pageshow", show);
		};
	}

	// freeze terminates the Worker: the browser aborts its IndexedDB
	// transactions (nothing of them is written) and drops its messages not
	// yet read here.
	function freeze(s) {
		if ((s.state !== "ready" && s.state !== "restoring") || s.ended) return;
		s.state = "frozen";
		s.gen++; // a restore under way stops (see reopen)
		s.drained = null;
		if (s.hello) { clearTimeout(s.hello); s.hello = null; }
		try { if (s.worker) s.worker.terminate(); } catch (_) { }
		s.worker = null;
		for (const r of s.asks.values()) r(null);
		s.asks.clear();
		if (s.calls) { s.held.push(...s.calls); s.calls = null; }
	}

	// restore starts a new Worker once the messages read before the
	// freeze are handed over, and restores the session in it.
	function restore(s) {
		if (s.state !== "frozen" || s.ended) return;
		s.state = "restoring";
		const go = () => {
			// The last replica's close was answered (its answer read after
			// the freeze): nothing to restore, and the session ends as
			// drain would have ended it (a later open starts another).
			if (s.dbs.size === 0 && s.closedOne && s.inflight.size === 0) { end(s, "CLOSED", "the replica is closed"); return; }
			try {
				spawn(s, () => reopen(s).catch((e) => die(s, e && e.code ? e : loadError("restoring after a freeze: " + ((e && e.message) || e)))));
			} catch (e) {
				die(s, e);
			}
		};
		if (s.inbox.length) s.drained = go; else go();
	}

	async function reopen(s) {
		const O = s.ops, K = s.kinds;
		const gen = s.gen;
		// The calls the terminated Worker never answered, in call order.
		const lost = [];
		for (const [id, r] of s.inflight) if (r.sent) lost.push([id, r]);
		s.rev = new Map();
		s.txs = new Map(); // every transaction staging at the freeze is lost
		s.pend = new Map();
		let out = [];
		const opens = [];
		for (const [h, db] of s.dbs) {
			db.wh = undefined;
			opens.push(ask(s, [O.open, 0, 0, 0, db.text], out).then((e) => {
				if (!e) return;
				if (e[2] === K.error) { const x = JSON.parse(e[3]); throw new ReplicaError(x.code, "reopening " + JSON.stringify(JSON.parse(db.text).name) + " after a freeze: " + x.message); }
				db.wh = JSON.parse(e[3])[0];
				s.rev.set(db.wh, h);
			}));
		}
		direct(s, out);
		await Promise.all(opens);
		if (s.ended || s.gen !== gen) return;
		out = [];
		for (const db of s.dbs.values()) {
			out.push([O.listen, db.wh, 0, 0, db.mask]);
			if (db.target) out.push([O.syncTarget, db.wh, 0, 0, db.target[0], db.target[1]]);
			for (const c of db.subs.values()) if (c.out) { const t = c.slice(); t[1] = db.wh; out.push(t); }
		}
		const recalls = new Map();
		for (const [id, r] of lost) {
			const db = journaled(O, r.c) && s.dbs.get(r.c[1]);
			if (db && r.j) recalls.set(id, ask(s, [O.recall, db.wh, 0, 0, r.j, id], out));
		}
		direct(s, out);
		const answers = new Map();
		for (const [id, p] of recalls) answers.set(id, await p);
		if (s.ended || s.gen !== gen) return;
		// The transactions whose commit the journal shows committed: their
		// statements still unanswered (sent with the commit, not awaited)
		// were written with it, but their answers went with the Worker.
		const committed = new Set();
		for (const [id, r] of lost) {
			const e = answers.get(id);
			if (r.c[0] === O.commit && e && e[2] !== K.error) committed.add(r.c[2]);
		}
		const again = [];
		for (const [id, r] of lost) {
			r.sent = 0;
			if (r.c[2] && r.c[0] !== O.commit && committed.has(r.c[2])) {
				receive(s, [0, id, K.error, JSON.stringify({ code: "CLOSED", message: FROZEN_ANSWER }), null]);
				continue;
			}
			const e = answers.get(id);
			if (e && !(e[2] === K.error && JSON.parse(e[3]).code === "NOT_RUN")) {
				receive(s, [0, id, e[2], e[3], e[4]]); // it committed: its recorded answer
				continue;
			}
			again.push(r.c); // sent again (a staging transaction's calls are refused by translate)
		}
		s.state = "ready";
		const held = s.held;
		s.held = [];
		post(s, again.concat(held));
	}

	// ---- page mode --------------------------------------------------------

	function loadScript(src) {
		return new Promise((resolve, reject) => {
			const s = document.createElement("script");
			s.src = src;
			s.onload = resolve;
			s.onerror = () => reject(loadError("cannot load " + src));
			(document.head || document.documentElement).appendChild(s);
		});
	}

	async function start() {
		// replica.wasm downloads while wasm_exec.js loads; instantiateStreaming
		// compiles it as it arrives (measured: compileStreaming, then
		// instantiate, took twice as long as instantiateStreaming when
		// replica.wasm came from the HTTP cache). Streaming from the fetch's
		// own Response is also what lets Chromium use V8's wasm code cache
		// (an ArrayBuffer has no URL to key it on); whether an entry is ever
		// made depends on V8 and on how replica.wasm is served: README,
		// "Serving replica.wasm".
		const url = wasmURL;
		const response = fetch(url);
		response.catch(() => { }); // awaited below; not unhandled if wasm_exec.js fails first
		if (typeof global.Go !== "function") {
			const src = wasmExecURL;
			if (typeof document !== "undefined") await loadScript(src);
			// A worker: the module's (a module worker, where importScripts
			// throws) imports it, the script tag's (a classic worker)
			// importScripts it.
			else if (esm) await import(/* @vite-ignore */ /* webpackIgnore: true */ src);
			else if (typeof importScripts === "function") importScripts(src);
			if (typeof global.Go !== "function") throw loadError(src + " did not define Go");
		}
		const go = new global.Go();
		let instance = null;
		if (typeof WebAssembly.instantiateStreaming === "function") {
			try {
				instance = (await WebAssembly.instantiateStreaming(response, go.importObject)).instance;
			} catch (e) {
				// A TypeError: not served as application/wasm (or not fetched):
				// try again the slow way, which reports HTTP errors clearly.
				if (!(e instanceof TypeError)) throw e;
			}
		}
		if (!instance) {
			const r = await fetch(url);
			if (!r.ok) throw loadError("fetching " + url + ": HTTP " + r.status);
			instance = (await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject)).instance;
		}
		// jsbridge.Install looks for the loader at globalThis.Replica, in the
		// synchronous part of go.run (Go's main up to its first wait). The
		// module's loader is put there for that moment only.
		const had = esm && Object.prototype.hasOwnProperty.call(global, "Replica");
		const previous = esm ? global.Replica : undefined;
		if (esm) global.Replica = loader;
		let running;
		try {
			running = go.run(instance);
		} finally {
			if (esm && global.Replica === loader) {
				if (had) global.Replica = previous;
				else delete global.Replica;
			}
		}
		running.then(
			() => fail(loadError("replica.wasm exited")),
			(e) => fail(loadError("replica.wasm failed: " + ((e && e.message) || e))));
		if (esm && "_install" in loader && !dead) fail(loadError("replica.wasm did not install its API"));
	}

	if (esm) return loader;
	global.Replica = loader;
	if (!defaultWorker) begin();

// BEGIN jsbridge/facade.js (verbatim; see above)
function replicaFacade(go, OPS, KINDS) {
// facade.js: Replica's JavaScript API, the body of a function (go, OPS, KINDS)
// that jsbridge calls once at install (compiled with new Function, or taken
// verbatim from web/replica.js). It returns {api, settle, emit, deliver,
// handleOf, settleValue}.
//
// Division of labour: this file does what JavaScript does cheaply — check
// argument types, turn values into one JSON text per call (a Uint8Array for
// bytes), create Promises, turn results back into objects, call listeners,
// talk to sibling tabs (BroadcastChannel) and elect the leader tab (Web
// Locks). Go does everything else through one entry point,
// go(op, handle, tx, id, a, b, c, d), and answers a call later with
// settle(id, kind, text, blobs). Value tags are documented in decode.go and
// encode.go. web/replica.d.ts is the contract.
"use strict";

// unknownTable is held's older name, kept for one release (see heldAlias).
const EVENTS = ["change", "remoteChange", "conflict", "held", "heldReplayed", "unknownTable", "syncState", "leaderChange"];
const LISTEN = OPS.listenBits; // bits of the listen mask: event names, and "peers"
const hasOwn = Object.prototype.hasOwnProperty;

// ReplicaError is the loader's class when it gives one (OPS.ReplicaError:
// web/replica.js gives both its page and its Worker facades the same), so
// that errors of either mode are instances of Replica.ReplicaError.
const ReplicaError = typeof OPS.ReplicaError === "function" ? OPS.ReplicaError : class ReplicaError extends Error {
	constructor(code, message, table, column) {
		super(message);
		this.name = "ReplicaError";
		this.code = code;
		if (table) this.table = table;
		if (column) this.column = column;
	}
};

function argErr(msg) { return new ReplicaError("INVALID_ARGUMENT", msg); }
function closedErr(what) { return new ReplicaError("CLOSED", what + ": the replica is closed"); }
function goErr(e) {
	return new ReplicaError("INTERNAL", "Replica's WebAssembly module failed: " + ((e && e.message) || e));
}
const report = typeof reportError === "function" ? reportError : (e) => console.error(e);

// ---- Go calls and results -------------------------------------------------

const pending = new Map(); // call id -> [resolve, reject]
let nextCall = 1;

function call(op, h, tx, a, b, c, d) {
	if (batch) flush();
	return new Promise((resolve, reject) => {
		const id = nextCall++;
		pending.set(id, [resolve, reject]);
		try {
			go(op, h, tx, id, a, b, c, d);
		} catch (e) {
			pending.delete(id);
			reject(goErr(e));
		}
	});
}

// Staged inserts (tx.insert) are queued and sent to Go together, one call
// per turn of the event loop (or before any other call, which keeps call
// order) and per BATCH_ROWS rows: a bulk transaction pays one Go call and
// one result per 1,000 rows instead of one per row, and no result is so
// big that reading it holds the page's thread long (in worker mode the
// page reads each result in a task of its own). Each row still succeeds or
// fails on its own.
const BATCH_ROWS = 1000;
let batch = null; // {h, tx, tables, rows, st, ps: [resolve, reject, ...]}

function queueInsert(s, tx, table, row, method) {
	if (batch && (batch.h !== s.h || batch.tx !== tx || batch.rows.length >= BATCH_ROWS)) flush();
	const b = batch || { h: s.h, tx, tables: [], rows: [], st: { parts: null, size: 0 }, ps: [] };
	const text = encRow(row, b.st, method + ": row"); // throws before anything is queued
	if (!batch) { batch = b; queueMicrotask(flush); }
	return new Promise((resolve, reject) => {
		b.tables.push(table);
		b.rows.push(text);
		b.ps.push(resolve, reject);
	});
}

function flush() {
	const b = batch;
	if (!b) return;
	batch = null;
	const id = nextCall++;
	const fail = (e) => { for (let i = 1; i < b.ps.length; i += 2) b.ps[i](e); };
	pending.set(id, [(r) => {
		const [hs, errs] = r;
		const bad = new Map();
		for (let i = 0; i < errs.length; i += 2) bad.set(errs[i], errs[i + 1]);
		for (let i = 0; i < hs.length; i++) {
			const e = bad.get(i);
			if (e) b.ps[2 * i + 1](new ReplicaError(e.code, e.message, e.table, e.column));
			else b.ps[2 * i](hs[i]);
		}
	}, fail]);
	try {
		go(OPS.insertMany, b.h, b.tx, id, JSON.stringify(b.tables), "[" + b.rows.join(",") + "]", pack(b.st));
	} catch (e) {
		pending.delete(id);
		fail(goErr(e));
	}
}

function attempt(fn) {
	try { return fn(); } catch (e) { return Promise.reject(e); }
}

// holders applies the fixes of an encoded result: [holders, fixes] (and,
// for kind many, errors: returned as [holders, errors]).
function holders(text, blobs, many) {
	const [hs, f, errs] = JSON.parse(text);
	for (let i = 0; i < f.length; i += 5) {
		const o = hs[f[i]], k = f[i + 1];
		switch (f[i + 2]) {
			case 1: o[k] = new Date(o[k]); break;
			case 2: o[k] = BigInt(o[k]); break;
			case 3: o[k] = blobs.slice(f[i + 3], f[i + 3] + f[i + 4]); break;
		}
	}
	return many ? [hs, errs] : hs;
}

function decode(kind, text, blobs) {
	switch (kind) {
		case KINDS.undefined: return undefined;
		case KINDS.json: return JSON.parse(text);
		case KINDS.rows: return holders(text, blobs);
		case KINDS.many: return holders(text, blobs, true);
		case KINDS.row: { const r = holders(text, blobs); return r.length ? r[0] : undefined; }
		case KINDS.error: {
			const e = JSON.parse(text);
			return new ReplicaError(e.code, e.message, e.table, e.column);
		}
	}
	throw new ReplicaError("INTERNAL", "unknown result kind " + kind);
}

// settleValue resolves call id with a value Go made (a SealKey).
function settleValue(id, v) {
	const p = pending.get(id);
	if (p) { pending.delete(id); p[0](v); }
}

function settle(id, kind, text, blobs) {
	const p = pending.get(id);
	if (!p) return;
	pending.delete(id);
	let v;
	try {
		v = decode(kind, text, blobs);
	} catch (e) {
		p[1](e instanceof ReplicaError ? e : new ReplicaError("INTERNAL", "decoding a result: " + e.message));
		return;
	}
	if (kind === KINDS.error) p[1](v); else p[0](v);
}

// ---- values to Go -----------------------------------------------------------

function describe(v) {
	if (v === null) return "null";
	if (Array.isArray(v)) return "an array";
	return typeof v === "object" ? "an object" : typeof v;
}

function isBytes(v) { return v instanceof ArrayBuffer || ArrayBuffer.isView(v); }

function isRecord(v) {
	return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date) && !isBytes(v);
}

function isPlain(v) {
	const p = Object.getPrototypeOf(v);
	return p === Object.prototype || p === null;
}

// MAX_VALUE is the largest value a local write stores (engine.MaxLocalRowSize,
// in bytes). A row's value above it is sent as {"o": size} instead, which Go
// refuses with VALIDATION, before the value is copied, escaped, carried into
// WebAssembly and parsed there (a 200 MB string took 52 s to be refused).
// A string's UTF-8 form has at least as many bytes as it has UTF-16 units.
const MAX_VALUE = OPS.maxValueBytes;
const oversized = (n) => '{"o":' + n + "}";

// encVal returns the tagged JSON text of one value, or undefined for
// undefined. st collects bytes: {parts, size}. stored: the value is a row's
// (insert, update, upsert), held to MAX_VALUE.
function encVal(v, st, stored) {
	switch (typeof v) {
		case "string": return stored && v.length > MAX_VALUE ? oversized(v.length) : JSON.stringify(v);
		case "number":
			if (v === 0 && 1 / v < 0) return '{"f":"-0"}';
			if (v !== v || v === Infinity || v === -Infinity) return '{"f":"' + v + '"}';
			return String(v);
		case "boolean": return v ? "true" : "false";
		case "bigint": return '{"n":"' + v + '"}';
		case "undefined": return undefined;
		case "object": {
			if (v === null) return "null";
			if (v instanceof Date) {
				const t = v.getTime();
				return t === t ? '{"d":' + t + "}" : '{"d":null}';
			}
			if (isBytes(v)) {
				const u = v instanceof Uint8Array ? v
					: v instanceof ArrayBuffer ? new Uint8Array(v)
						: new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
				if (stored && u.byteLength > MAX_VALUE) return oversized(u.byteLength);
				(st.parts || (st.parts = [])).push(u);
				const off = st.size;
				st.size += u.byteLength;
				return '{"b":[' + off + "," + u.byteLength + "]}";
			}
			if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof Promise) {
				return '{"x":' + JSON.stringify("a " + v.constructor.name) + "}";
			}
			if (stored) {
				const n = stringBytes(v, 0, 0);
				if (n > MAX_VALUE) return oversized(n);
			}
			let j;
			try {
				j = JSON.stringify(v);
			} catch (e) {
				return '{"x":' + JSON.stringify("an object JSON.stringify rejects (" + e.message + ")") + "}";
			}
			if (j === undefined) return '{"x":"an object whose toJSON returns undefined"}';
			if (stored && j.length > MAX_VALUE) return oversized(j.length);
			// JSON.stringify writes NaN and ±Infinity as null: refuse them
			// (only a text with a null can hide one).
			if (j.includes("null")) {
				const bad = nonFinite(v, "");
				if (bad) return '{"i":' + JSON.stringify(bad) + "}";
			}
			return '{"j":' + j + "}";
		}
	}
	return '{"x":' + JSON.stringify("a " + typeof v) + "}";
}

// stringBytes adds to n the lengths of the strings inside v (plain objects
// and arrays without toJSON, at most 256 levels deep), stopping once the sum
// passes MAX_VALUE: a lower bound of JSON.stringify(v).length, found without
// building that text (stringify of an object holding a 200 MB string took
// 9 s).
function stringBytes(v, n, depth) {
	if (typeof v === "string") return n + v.length;
	if (v === null || typeof v !== "object" || depth > 256 || typeof v.toJSON === "function") return n;
	if (!Array.isArray(v) && !isPlain(v)) return n;
	for (const k of Object.keys(v)) {
		n = stringBytes(v[k], n + k.length, depth + 1);
		if (n > MAX_VALUE) break;
	}
	return n;
}

// nonFinite returns "NaN at .a[2]" for the first NaN or ±Infinity inside
// v, walked as JSON.stringify walks it (toJSON, own enumerable keys), or
// "" if there is none. v has no cycles (JSON.stringify took it).
function nonFinite(v, key) {
	if (v !== null && (typeof v === "object" || typeof v === "bigint") && typeof v.toJSON === "function") v = v.toJSON(key);
	if (v instanceof Number) v = Number(v);
	if (typeof v === "number") return v === v && v !== Infinity && v !== -Infinity ? "" : String(v);
	if (v === null || typeof v !== "object") return "";
	if (Array.isArray(v)) {
		for (let i = 0; i < v.length; i++) {
			const b = nonFinite(v[i], String(i));
			if (b) return b.includes(" at ") ? b.replace(" at ", " at [" + i + "]") : b + " at [" + i + "]";
		}
		return "";
	}
	for (const k of Object.keys(v)) {
		const b = nonFinite(v[k], k);
		if (b) {
			const step = /^[A-Za-z_$][\w$]*$/.test(k) ? "." + k : "[" + JSON.stringify(k) + "]";
			return b.includes(" at ") ? b.replace(" at ", " at " + step) : b + " at " + step;
		}
	}
	return "";
}

function pack(st) {
	if (!st.parts) return null;
	if (st.parts.length === 1 && st.parts[0].byteLength === st.size) return st.parts[0];
	const out = new Uint8Array(st.size);
	let o = 0;
	for (const p of st.parts) { out.set(p, o); o += p.byteLength; }
	return out;
}

function encRow(row, st, what) {
	if (!isRecord(row)) throw argErr(what + " must be an object mapping columns to values, got " + describe(row));
	let s = "{", first = true;
	for (const k of Object.keys(row)) {
		const e = encVal(row[k], st, true);
		if (e === undefined) continue; // undefined: not given
		s += (first ? "" : ",") + JSON.stringify(k) + ":" + e;
		first = false;
	}
	return s + "}";
}

function encList(list, st, what) {
	let s = "[";
	for (let i = 0; i < list.length; i++) {
		const e = encVal(list[i], st);
		if (e === undefined) throw argErr(what + "[" + i + "] is undefined");
		s += (i ? "," : "") + e;
	}
	return s + "]";
}

function encKey(pk, st, method) {
	if (pk === undefined) throw argErr(method + ": the primary key argument is missing");
	return encList(Array.isArray(pk) ? pk : [pk], st, method + ": primary key");
}

function encWhere(w, st, method) {
	if (!isRecord(w)) throw argErr(method + ": where must be an object mapping columns to values or operator objects, got " + describe(w));
	const parts = [];
	for (const col of Object.keys(w)) {
		const v = w[col], c = JSON.stringify(col);
		if (v === undefined) throw argErr(method + ": where." + col + " is undefined (use null to match nulls)");
		if (isRecord(v) && isPlain(v)) {
			const ops = Object.keys(v);
			if (ops.length === 0) throw argErr(method + ": where." + col + " is an empty operator object (to compare a json column with {}, use {eq: {}})");
			for (const op of ops) {
				const x = v[op];
				let t;
				if (x === undefined) throw argErr(method + ": where." + col + "." + op + " is undefined");
				if (op === "in") {
					if (!Array.isArray(x)) throw argErr(method + ": where." + col + ".in must be an array, got " + describe(x));
					t = encList(x, st, method + ": where." + col + ".in");
				} else {
					t = encVal(x, st);
				}
				parts.push("[" + c + "," + JSON.stringify(op) + "," + t + "]");
			}
		} else {
			parts.push("[" + c + ',"eq",' + encVal(v, st) + "]");
		}
	}
	return "[" + parts.join(",") + "]";
}

function encQuery(o, st, method) {
	if (o === undefined || o === null) return '{"where":null,"opts":{}}';
	if (!isRecord(o)) throw argErr(method + ": options must be an object, got " + describe(o));
	let where = "null";
	const rest = {};
	for (const k of Object.keys(o)) {
		if (k === "where") {
			if (o.where !== undefined && o.where !== null) where = encWhere(o.where, st, method);
		} else {
			rest[k] = o[k];
		}
	}
	let opts;
	try { opts = JSON.stringify(rest); } catch (e) { throw argErr(method + ": options: " + e.message); }
	return '{"where":' + where + ',"opts":' + opts + "}";
}

function needTable(table, method) {
	if (typeof table !== "string") throw argErr(method + ": table must be a string, got " + describe(table));
}

function needName(v, method, what) {
	if (typeof v !== "string" || v === "") throw argErr(method + ": " + what + " must be a non-empty string, got " + (v === "" ? '""' : describe(v)));
}

// ---- replicas -----------------------------------------------------------------

const dbs = new Map(); // handle -> state
const handles = new WeakMap(); // Database -> handle
let nextSub = 1;

function live(s, method) {
	if (s.closed) throw closedErr(method);
}

function liveTx(t, method) {
	live(t.s, method);
	if (t.done) throw new ReplicaError("CLOSED", method + ": the transaction has finished (its callback settled); use tx only inside the callback");
}

// Row operations, shared by Database (tx 0) and Transaction.
function opInsert(s, tx, op, method, table, row) {
	needTable(table, method);
	const st = { parts: null, size: 0 };
	const text = encRow(row, st, method + ": row");
	return call(op, s.h, tx, table, text, pack(st));
}
function opUpdate(s, tx, method, table, pk, patch) {
	needTable(table, method);
	const st = { parts: null, size: 0 };
	const k = encKey(pk, st, method);
	const p = encRow(patch, st, method + ": patch");
	return call(OPS.update, s.h, tx, table, k, p, pack(st));
}
function opKey(s, tx, op, method, table, pk) {
	needTable(table, method);
	const st = { parts: null, size: 0 };
	const k = encKey(pk, st, method);
	return call(op, s.h, tx, table, k, pack(st));
}
function opRead(s, tx, op, method, table, options) {
	needTable(table, method);
	const st = { parts: null, size: 0 };
	const q = encQuery(options, st, method);
	return call(op, s.h, tx, table, q, pack(st));
}

class Transaction {
	#t;
	constructor(t) { this.#t = t; }
	insert(table, row) {
		return attempt(() => {
			liveTx(this.#t, "tx.insert");
			needTable(table, "tx.insert");
			return queueInsert(this.#t.s, this.#t.id, table, row, "tx.insert");
		});
	}
	upsert(table, row) { return attempt(() => { liveTx(this.#t, "tx.upsert"); return opInsert(this.#t.s, this.#t.id, OPS.upsert, "tx.upsert", table, row); }); }
	update(table, pk, patch) { return attempt(() => { liveTx(this.#t, "tx.update"); return opUpdate(this.#t.s, this.#t.id, "tx.update", table, pk, patch); }); }
	delete(table, pk) { return attempt(() => { liveTx(this.#t, "tx.delete"); return opKey(this.#t.s, this.#t.id, OPS.delete, "tx.delete", table, pk); }); }
	get(table, pk) { return attempt(() => { liveTx(this.#t, "tx.get"); return opKey(this.#t.s, this.#t.id, OPS.get, "tx.get", table, pk); }); }
	query(table, options) { return attempt(() => { liveTx(this.#t, "tx.query"); return opRead(this.#t.s, this.#t.id, OPS.query, "tx.query", table, options); }); }
	count(table, options) { return attempt(() => { liveTx(this.#t, "tx.count"); return opRead(this.#t.s, this.#t.id, OPS.count, "tx.count", table, options); }); }
}

// post sends m to the other tabs of this replica, tagged with this tab's
// id. postPeers sends the frequent ones (commit notices, the leader's sync
// state) only when another tab is known to be open (see onTabMessage: a
// tab announces itself with hello); the rare ones (sync target, snapshot
// requests) go out always.
function post(s, m) {
	if (s.channel) { m.from = s.tabId; try { s.channel.postMessage(m); } catch (_) { } }
}
function postPeers(s, m) { if (s.peers.size) post(s, m); }

// listen tells Go what to emit: the events that have listeners, and
// whether other tabs are open (they are told of commits and get the
// leader's sync state).
function listen(s) {
	let mask = s.peers.size ? LISTEN.peers : 0;
	for (const [name, ls] of s.listeners) if (ls.size && LISTEN[name]) mask |= LISTEN[name];
	if (s.pushWaiters.length) mask |= LISTEN.syncState; // db.sync.pushed checks at each change
	if (s.inspectingTabs.size || s.inspectFns.size) mask |= LISTEN.conflict; // for an inspector (Inspector.conflicts), here or in another tab
	if (mask === s.mask || s.closed) return;
	s.mask = mask;
	try { go(OPS.listen, s.h, 0, 0, mask); } catch (_) { }
}

// syncStateNow is this tab's view of the sync state: the leader's count of
// unsent transactions is asked of Go (it changes with every commit, and is
// emitted only when someone listens).
function syncStateNow(s) {
	const st = Object.assign({}, s.syncState);
	if (s.isLeader && !s.closed) { try { st.pending = go(OPS.pending, s.h, 0, 0); } catch (_) { } }
	return st;
}

// ---- keys of sealed databases ------------------------------------------------
//
// A SealKey is {keyId, cryptoKey}: the key id (16 hex digits) and a
// non-extractable AES-GCM CryptoKey, made by Go (sealKey: WebCrypto's HKDF,
// and PBKDF2 for a passphrase). Raw bytes and passphrases are turned into
// SealKeys here, before anything else sees them; only SealKeys reach the
// sync target and the other tabs (structured clone over the
// BroadcastChannel), so the leader tab, whichever it is, can seal and open.

function isSealKey(k) {
	return k !== null && typeof k === "object" && typeof k.keyId === "string" && typeof CryptoKey === "function" && k.cryptoKey instanceof CryptoKey;
}

function importKey(bytes) {
	return attempt(() => {
		if (!(bytes instanceof Uint8Array)) throw argErr("Replica.importKey: the key must be a Uint8Array of 32 bytes, got " + describe(bytes));
		return call(OPS.sealKey, 0, 0, "", bytes);
	});
}

function deriveKey(options) {
	return attempt(() => {
		if (!isRecord(options) || typeof options.passphrase !== "string" || typeof options.database !== "string") {
			throw argErr("Replica.deriveKey: options must be {passphrase: string, database: string}, got " + describe(options));
		}
		return derivePass(options.database, options.passphrase);
	});
}

// derivePass asks Go for the SealKey of a passphrase, given as UTF-8
// bytes, overwritten once Go has copied them (go() copies its arguments
// before call returns), so that Go can overwrite its copy too.
function derivePass(database, passphrase) {
	const p = new TextEncoder().encode(passphrase);
	try { return call(OPS.sealKey, 0, 0, database, undefined, p); } finally { p.fill(0); }
}

// toSealKey turns one key option (a Uint8Array of 32 bytes, {passphrase},
// or a SealKey) into a SealKey; what names the option in errors.
function toSealKey(k, database, what) {
	if (isSealKey(k)) return Promise.resolve(k);
	if (k instanceof Uint8Array) return importKey(k);
	if (isRecord(k) && typeof k.passphrase === "string") {
		return derivePass(typeof database === "string" ? database : "", k.passphrase);
	}
	return Promise.reject(argErr("db.sync.connect: " + what + " must be a Uint8Array of 32 bytes, {passphrase: string}, or a key from Replica.importKey or Replica.deriveKey, got " + describe(k)));
}

// syncSerial runs fn once the db's previous connect or disconnect has
// settled, so that they take effect in the order they were called (a
// sealed connect waits for its keys first: PBKDF2 takes about half a
// second).
function syncSerial(s, fn) {
	const p = s.syncQueue.then(fn);
	s.syncQueue = p.then(() => { }, () => { });
	return p;
}

class Sync {
	#s;
	constructor(s) { this.#s = s; }
	connect(url, options) {
		return attempt(() => {
			const s = this.#s;
			live(s, "db.sync.connect");
			// Several relays of one database (relays sharing PostgreSQL):
			// an array of URLs, tried in turn; it travels as one string,
			// space-separated (no URL holds a space).
			if (Array.isArray(url)) {
				if (url.length === 0 || url.some((u) => typeof u !== "string" || u === "" || /\s/.test(u))) throw argErr("db.sync.connect: url must be a URL string or a non-empty array of them, got " + describe(url));
				url = url.join(" ");
			}
			if (typeof url !== "string") throw argErr("db.sync.connect: url must be a URL string or a non-empty array of them, got " + describe(url));
			if (!isRecord(options)) throw argErr("db.sync.connect: options must be an object {database, token?, key?, oldKeys?}, got " + describe(options));
			const rest = {};
			for (const k of Object.keys(options)) if (k !== "key" && k !== "oldKeys") rest[k] = options[k];
			let o;
			try { o = JSON.stringify(rest); } catch (e) { throw argErr("db.sync.connect: options: " + e.message); }
			const key = options.key, old = options.oldKeys;
			let keys = Promise.resolve(undefined);
			if (key !== undefined) {
				if (old !== undefined && !Array.isArray(old)) throw argErr("db.sync.connect: options.oldKeys must be an array of keys, got " + describe(old));
				const all = [key].concat(old || []);
				keys = Promise.all(all.map((k, i) => toSealKey(k, options.database, i ? "options.oldKeys[" + (i - 1) + "]" : "options.key")));
			} else if (old !== undefined) {
				throw argErr("db.sync.connect: options.oldKeys needs options.key (the current key)");
			}
			// Keys are derived at once, but the target is set in call
			// order (syncSerial): a connect deriving a passphrase's key
			// does not land after a later disconnect or connect.
			return syncSerial(s, () => keys.then((ks) => call(OPS.syncConnect, s.h, 0, url, o, ks).then((t) => {
				s.syncTarget = t;
				s.syncKeys = ks;
				post(s, { sync: t, keys: ks }); // every tab records it; the leader connects
			})));
		});
	}
	disconnect() {
		return attempt(() => {
			const s = this.#s;
			live(s, "db.sync.disconnect");
			return syncSerial(s, () => call(OPS.syncDisconnect, s.h, 0).then(() => {
				s.syncTarget = null;
				s.syncKeys = undefined;
				post(s, { sync: null });
			}));
		});
	}
	requestSnapshot() {
		return attempt(() => {
			const s = this.#s;
			live(s, "db.sync.requestSnapshot");
			return call(OPS.syncSnapshot, s.h, 0).then(() => {
				if (!s.isLeader) post(s, { requestSnapshot: true });
			});
		});
	}
	// pushed resolves once the sync target's relay has been sent every
	// transaction this replica wrote before the call (any tab's):
	// pushedTarget names the newest, pushedCheck is asked again whenever
	// the sync state changes, and every second, until it is.
	pushed() {
		return attempt(() => {
			const s = this.#s;
			live(s, "db.sync.pushed");
			return call(OPS.pushedTarget, s.h, 0).then((target) => target === null ? undefined : new Promise((resolve, reject) => {
				s.pushWaiters.push({ target, resolve, reject });
				listen(s);
				checkPushed(s);
			}));
		});
	}
	get state() { return syncStateNow(this.#s); }
}

// checkPushed asks Go which waiting db.sync.pushed targets are sent, one
// question at a time, and settles those; while some wait it asks again a
// second later (besides each sync state change).
function checkPushed(s) {
	if (s.closed || !s.pushWaiters.length) return;
	if (s.pushCheck) { s.pushAgain = true; return; }
	if (s.pushTimer) { clearTimeout(s.pushTimer); s.pushTimer = 0; }
	const ws = s.pushWaiters.slice();
	const drop = (w) => { const i = s.pushWaiters.indexOf(w); if (i >= 0) s.pushWaiters.splice(i, 1); };
	s.pushCheck = call(OPS.pushedCheck, s.h, 0, JSON.stringify(ws.map((w) => w.target))).then((done) => {
		ws.forEach((w, i) => { if (done[i]) { drop(w); w.resolve(undefined); } });
	}, (e) => {
		for (const w of ws) { drop(w); w.reject(e); }
	}).finally(() => {
		s.pushCheck = null;
		listen(s);
		if (s.pushAgain) { s.pushAgain = false; checkPushed(s); }
		else if (s.pushWaiters.length && !s.closed) s.pushTimer = setTimeout(() => { s.pushTimer = 0; checkPushed(s); }, 1000);
	});
}

function guarded(fn, arg) {
	try {
		const r = fn(arg);
		if (r && typeof r.then === "function") r.then(undefined, report);
	} catch (e) {
		report(e);
	}
}

function fire(s, name, payload) {
	const ls = s.listeners.get(name);
	if (!ls || ls.size === 0) return;
	for (const l of ls) queueMicrotask(() => { if (ls.has(l)) guarded(l.fn, payload); });
}

// The policy names of the release before (unknownTableDisposition's).
const OLD_POLICY = { "hold": "quarantine", "drop": "ignore", "hold-and-forward": "store-and-forward" };

// heldAlias is the payload of unknownTable (deprecated) made from a held
// one, as that event carried it: reason is the detail (absent for an
// unknown table) and disposition the policy under its older name.
function heldAlias(p) {
	const o = { table: p.table };
	if (p.detail !== undefined) o.reason = p.detail;
	o.disposition = OLD_POLICY[p.policy];
	o.changes = p.changes;
	o.site = p.site;
	o.latestHlc = p.latestHlc;
	return o;
}

// ---- db.inspect (jsbridge/inspect.go) ------------------------------------------

// inspectOpts checks an inspect call's options and returns their JSON.
function inspectOpts(options, method) {
	if (options === undefined || options === null) return "";
	if (!isRecord(options)) throw argErr(method + ": options must be an object, got " + describe(options));
	return JSON.stringify(options);
}

class Inspector {
	#s;
	constructor(s) { this.#s = s; }
	tables(options) { return attempt(() => { const m = "db.inspect.tables"; live(this.#s, m); return call(OPS.inspectTables, this.#s.h, 0, inspectOpts(options, m)); }); }
	rows(table, options) {
		return attempt(() => {
			const m = "db.inspect.rows";
			live(this.#s, m); needTable(table, m);
			return call(OPS.inspectRows, this.#s.h, 0, table, inspectOpts(options, m)).then(([hs, meta]) => {
				const page = { rows: hs.map((values, i) => { const r = meta[i + 1]; return { key: r.key, values, cells: r.cells, deleted: r.deleted, tombstone: r.tombstone }; }), next: meta[0].next, scanned: meta[0].scanned };
				return page;
			});
		});
	}
	count(table) { return attempt(() => { const m = "db.inspect.count"; live(this.#s, m); needTable(table, m); return call(OPS.inspectCount, this.#s.h, 0, table); }); }
	changeLog(options) { return attempt(() => { const m = "db.inspect.changeLog"; live(this.#s, m); return call(OPS.inspectLog, this.#s.h, 0, inspectOpts(options, m)); }); }
	heldChanges(options) { return attempt(() => { const m = "db.inspect.heldChanges"; live(this.#s, m); return call(OPS.inspectHeld, this.#s.h, 0, inspectOpts(options, m)); }); }
	sync() { return attempt(() => { live(this.#s, "db.inspect.sync"); return call(OPS.inspectSync, this.#s.h, 0).then((o) => { o.status = syncStateNow(this.#s); return o; }); }); }
	// conflicts calls fn with every conflict any tab of this replica
	// resolves (the leader's, forwarded over the channel): tabs that learn
	// an inspector listens emit theirs too.
	conflicts(fn) {
		const s = this.#s;
		live(s, "db.inspect.conflicts");
		if (typeof fn !== "function") throw argErr("db.inspect.conflicts: the listener must be a function, got " + describe(fn));
		const entry = (p) => fn(p);
		s.inspectFns.add(entry);
		listen(s);
		if (s.inspectFns.size === 1) post(s, { inspecting: true });
		// Unsubscribing the last listener of this tab tells the other
		// tabs, which stop forwarding conflicts unless another inspects.
		return () => {
			if (!s.inspectFns.delete(entry) || s.inspectFns.size || s.closed) return;
			listen(s);
			post(s, { inspecting: false });
		};
	}
	open(options) {
		const m = "db.inspect.open";
		live(this.#s, m);
		if (options !== undefined && !isRecord(options)) throw argErr(m + ": options must be an object {url?, target?}, got " + describe(options));
		const o = options || {};
		for (const k of Object.keys(o)) if (k !== "url" && k !== "target") throw argErr(m + ": unknown option " + JSON.stringify(k) + " (known: url, target)");
		if (o.url !== undefined && typeof o.url !== "string") throw argErr(m + ": options.url must be a string, got " + describe(o.url));
		if (o.target !== undefined && typeof o.target !== "string") throw argErr(m + ": options.target must be a string, got " + describe(o.target));
		if (typeof window !== "object" || !window || typeof window.open !== "function") throw argErr(m + ": there is no window to open the inspector from (call it in a page, not a Worker)");
		let u;
		try {
			u = new URL(o.url || "/inspect", location.href);
		} catch (_) {
			throw argErr(m + ": options.url is not a URL: " + JSON.stringify(o.url));
		}
		u.searchParams.set("db", this.#s.name);
		return window.open(u.href, o.target !== undefined ? o.target : "replica-inspect:" + this.#s.name);
	}
}

class Database {
	#s;
	constructor(s) { this.#s = s; }
	get name() { return this.#s.name; }
	get siteId() { return this.#s.siteId; }
	get isLeader() { return this.#s.isLeader; }
	get persisted() { return this.#s.persisted; }
	get sync() { return this.#s.sync; }
	get inspect() { const s = this.#s; return s.inspector || (s.inspector = new Inspector(s)); }
	insert(table, row) { return attempt(() => { live(this.#s, "db.insert"); return opInsert(this.#s, 0, OPS.insert, "db.insert", table, row); }); }
	upsert(table, row) { return attempt(() => { live(this.#s, "db.upsert"); return opInsert(this.#s, 0, OPS.upsert, "db.upsert", table, row); }); }
	update(table, pk, patch) { return attempt(() => { live(this.#s, "db.update"); return opUpdate(this.#s, 0, "db.update", table, pk, patch); }); }
	delete(table, pk) { return attempt(() => { live(this.#s, "db.delete"); return opKey(this.#s, 0, OPS.delete, "db.delete", table, pk); }); }
	get(table, pk) { return attempt(() => { live(this.#s, "db.get"); return opKey(this.#s, 0, OPS.get, "db.get", table, pk); }); }
	query(table, options) { return attempt(() => { live(this.#s, "db.query"); return opRead(this.#s, 0, OPS.query, "db.query", table, options); }); }
	count(table, options) { return attempt(() => { live(this.#s, "db.count"); return opRead(this.#s, 0, OPS.count, "db.count", table, options); }); }

	heldChanges() { return attempt(() => { live(this.#s, "db.heldChanges"); return call(OPS.heldCounts, this.#s.h, 0); }); }

	// Drop migrations (jsbridge/ops.go dropOp).
	dropTable(table) { return attempt(() => { live(this.#s, "db.dropTable"); needTable(table, "db.dropTable"); return call(OPS.dropTable, this.#s.h, 0, table); }); }
	dropColumn(table, column) { return attempt(() => { live(this.#s, "db.dropColumn"); needTable(table, "db.dropColumn"); needName(column, "db.dropColumn", "column"); return call(OPS.dropColumn, this.#s.h, 0, table, column); }); }
	dropIndex(table, index) { return attempt(() => { live(this.#s, "db.dropIndex"); needTable(table, "db.dropIndex"); needName(index, "db.dropIndex", "index"); return call(OPS.dropIndex, this.#s.h, 0, table, index); }); }
	// rename_table (jsbridge/ops.go renameOp).
	renameTable(from, to) { return attempt(() => { const m = "db.renameTable"; live(this.#s, m); needTable(from, m); needName(to, m, "to"); return call(OPS.renameTable, this.#s.h, 0, from, to); }); }
	// alter_column (jsbridge/ops.go alterOp): notNull and the default.
	alterColumn(table, column, change) {
		return attempt(() => {
			const m = "db.alterColumn";
			live(this.#s, m); needTable(table, m); needName(column, m, "column");
			if (!isRecord(change)) throw argErr(m + ": change must be an object {notNull?, default?, dropDefault?}, got " + describe(change));
			for (const k of Object.keys(change)) {
				const v = change[k];
				if (v === undefined) continue;
				if (k === "notNull" && typeof v !== "boolean") throw argErr(m + ": change.notNull must be a boolean, got " + describe(v));
				if (k === "dropDefault" && v !== true) throw argErr(m + ": change.dropDefault must be true when given, got " + describe(v));
				if (k === "type" && typeof v !== "string") throw argErr(m + ": change.type must be a string, got " + describe(v));
				if (k !== "notNull" && k !== "default" && k !== "dropDefault" && k !== "type") throw argErr(m + ": change has an unknown member " + JSON.stringify(k) + " (want notNull, default or dropDefault)");
			}
			const st = { parts: null, size: 0 };
			const text = encRow(change, st, m + ": change");
			return call(OPS.alterColumn, this.#s.h, 0, table, column, text, pack(st));
		});
	}

	// The transport-agnostic API (jsbridge/changes.go): ChangeSets in the
	// sync protocol's JSON form, for an app's own channel.
	changesSince(since, options) {
		return attempt(() => {
			live(this.#s, "db.changesSince");
			if (since !== undefined && since !== null && typeof since !== "string") throw argErr("db.changesSince: since must be a ChangeSet's hlc (a string, as in page.next), null or undefined, got " + describe(since));
			if (options !== undefined && !isRecord(options)) throw argErr("db.changesSince: options must be an object, got " + describe(options));
			return call(OPS.changesSince, this.#s.h, 0, since || "", options === undefined ? "" : JSON.stringify(options));
		});
	}
	applyChanges(changeSets) {
		return attempt(() => {
			live(this.#s, "db.applyChanges");
			let text = changeSets;
			if (Array.isArray(changeSets)) {
				try { text = JSON.stringify(changeSets); } catch (e) { throw argErr("db.applyChanges: changeSets cannot be written as JSON: " + e.message); }
			} else if (typeof changeSets !== "string") {
				throw argErr("db.applyChanges: changeSets must be an array of ChangeSets (as db.changesSince returns them) or its JSON text, got " + describe(changeSets));
			}
			return call(OPS.applyChanges, this.#s.h, 0, text);
		});
	}

	async transaction(fn) {
		const s = this.#s;
		live(s, "db.transaction");
		if (typeof fn !== "function") throw argErr("db.transaction: the argument must be a function (async tx => ...), got " + describe(fn));
		const t = { s, id: await call(OPS.begin, s.h, 0), done: false };
		let out;
		try {
			out = await fn(new Transaction(t));
		} catch (e) {
			t.done = true;
			call(OPS.discard, s.h, t.id).catch(() => { });
			throw e;
		}
		t.done = true;
		await call(OPS.commit, s.h, t.id);
		return out;
	}

	subscribe(table, options, callback, onError) {
		const s = this.#s;
		if (typeof options === "function") { onError = callback; callback = options; options = undefined; }
		live(s, "db.subscribe");
		needTable(table, "db.subscribe");
		if (typeof callback !== "function") throw argErr("db.subscribe: callback must be a function, got " + describe(callback));
		if (onError !== undefined && typeof onError !== "function") throw argErr("db.subscribe: onError must be a function, got " + describe(onError));
		const st = { parts: null, size: 0 };
		const q = encQuery(options, st, "db.subscribe");
		const sid = nextSub++;
		const sub = { cb: callback, onError };
		s.subs.set(sid, sub);
		if (batch) flush(); // queued tx.inserts go first, in call order
		try { go(OPS.subscribe, s.h, 0, 0, sid, table, q, pack(st)); } catch (e) { s.subs.delete(sid); throw goErr(e); }
		return () => {
			if (s.subs.get(sid) !== sub) return;
			s.subs.delete(sid);
			if (!s.closed) { try { go(OPS.unsubscribe, s.h, 0, 0, sid); } catch (_) { } }
		};
	}

	on(event, fn) {
		const s = this.#s;
		live(s, "db.on");
		if (!EVENTS.includes(event)) throw argErr("db.on: unknown event " + JSON.stringify(event) + " (events: " + EVENTS.join(", ") + ")");
		if (typeof fn !== "function") throw argErr("db.on: listener must be a function, got " + describe(fn));
		const l = { fn };
		s.listeners.get(event).add(l);
		listen(s);
		return () => { s.listeners.get(event).delete(l); listen(s); };
	}

	close() {
		const s = this.#s;
		if (s.closing) return s.closing;
		s.closed = true;
		s.subs.clear();
		for (const ls of s.listeners.values()) ls.clear();
		for (const w of s.pushWaiters.splice(0)) w.reject(closedErr("db.sync.pushed"));
		if (s.pushTimer) { clearTimeout(s.pushTimer); s.pushTimer = 0; }
		s.closing = call(OPS.close, s.h, 0).finally(() => {
			dbs.delete(s.h);
			if (s.unwatch) s.unwatch();
			if (s.channel) { post(s, { bye: true }); s.channel.close(); }
			if (s.lockAbort) s.lockAbort.abort();
			if (s.lockRelease) s.lockRelease();
			s.isLeader = false;
		});
		return s.closing;
	}
}

function elect(s) {
	const locks = typeof navigator === "object" && navigator && navigator.locks;
	if (!locks || typeof locks.request !== "function") { setLeader(s, true); return; }
	const ac = typeof AbortController === "function" ? new AbortController() : null;
	s.lockAbort = ac;
	locks.request("replica-leader:" + s.name, ac ? { signal: ac.signal } : {}, () => {
		if (s.closed || s.suspended || s.lockAbort !== ac) return undefined;
		// The release is in place before Go hears of the lock (Go may run
		// code that suspends or closes this tab before setLeader returns).
		const held = new Promise((resolve) => { s.lockRelease = resolve; });
		setLeader(s, true);
		return held;
	}).catch(() => { });
}

// waitingState is the sync state a tab shows while no tab is known to
// sync: the leader gave up (froze, or closed) and the next one has not
// reported yet. "connecting" when a target is known (a tab will lead and
// connect), else "disconnected"; the last known count of unsent changes.
function waitingState(s, leader) {
	return { status: s.syncTarget ? "connecting" : "disconnected", pending: s.syncState.pending || 0, leader };
}

function setLeader(s, v) {
	if (s.isLeader === v || s.closed) return;
	s.isLeader = v;
	// The previous leader's state (error, lastError, progress) was its
	// session's; this tab's own comes from Go once it connects.
	s.syncState = waitingState(s, v);
	try { go(OPS.leader, s.h, 0, 0, v ? 1 : 0); } catch (_) { }
	fire(s, "leaderChange", { isLeader: v });
	fire(s, "syncState", s.syncState);
}

// ---- page lifecycle ---------------------------------------------------------------
//
// A frozen page (Chromium freezes background tabs; a page in the
// back/forward cache is frozen too) runs nothing: no timers, no message
// handlers, no IndexedDB callbacks. Left as it was, a frozen leader would
// keep the leader lock with a dead socket (no tab syncs), and an IndexedDB
// transaction it had running would keep every other tab's writes waiting.
// So on freeze and on pagehide each tab suspends: Go aborts its running
// IndexedDB transactions (they run again on resume; nothing of them was
// written) and holds new ones, a leader closes its relay connection and
// releases the lock (the next tab in the lock's queue leads at once), the
// tab says bye (and, if it led, resign: the others show no tab syncing
// until the new leader reports), and a queued lock request is withdrawn
// (a lock granted to a frozen tab would make a frozen leader). On resume
// (or pageshow from the back/forward cache) the tab runs its transactions
// again, says hello (the leader answers with its state) and queues for the
// lock again: it rejoins as a follower, with no connection of its own.

function watchLifecycle(s) {
	if (typeof addEventListener !== "function" || typeof removeEventListener !== "function") return;
	const doc = typeof document === "object" && document && typeof document.addEventListener === "function" ? document : null;
	const off = () => suspend(s);
	const on = () => resume(s);
	const show = (e) => { if (e && e.persisted) resume(s); };
	if (doc) { doc.addEventListener("freeze", off); doc.addEventListener("resume", on); }
	addEventListener("pagehide", off);
	addEventListener("pageshow", show);
	s.unwatch = () => {
		if (doc) { doc.removeEventListener("freeze", off); doc.removeEventListener("resume", on); }
		removeEventListener("pagehide", off);
		removeEventListener("pageshow", show);
	};
}

function suspend(s) {
	if (s.closed || s.suspended) return;
	s.suspended = true;
	try { go(OPS.freeze, s.h, 0, 0); } catch (_) { }
	const led = s.isLeader;
	if (s.lockAbort) { s.lockAbort.abort(); s.lockAbort = null; }
	setLeader(s, false);
	if (s.lockRelease) { s.lockRelease(); s.lockRelease = null; }
	post(s, led ? { bye: true, resign: true } : { bye: true });
	if (s.peers.size) { s.peers.clear(); listen(s); }
}

function resume(s) {
	if (s.closed || !s.suspended) return;
	s.suspended = false;
	try { go(OPS.resume, s.h, 0, 0); } catch (_) { }
	s.syncState = waitingState(s, false);
	fire(s, "syncState", s.syncState);
	post(s, s.inspectFns.size ? { hello: true, inspecting: true } : { hello: true });
	elect(s);
}

// onTabMessage handles a sibling tab's message, each tagged {from: tab id}:
// {hello: true} from a tab that just opened or resumed (every tab answers
// {here: true}, the leader with its target and sync state too); {bye:
// true} from a tab that closes, freezes or is hidden (resign: true too
// when it led: no tab syncs until the next leader's state arrives); {tables, remote, transactionId, siteId, commits?} after a
// commit (commits: how many it stands for, when more than one); {sync:
// target|null} after db.sync.connect or disconnect; {requestSnapshot: true}
// for the leader; {syncState} from the leader.
//
// Tabs tell each other of commits only while they know another tab is
// open. A tab learns of another from its first message (a hello, or the
// here answering its own hello); then it re-runs its subscriptions (the
// other may have committed before it knew of this one), Go announces the
// commits this tab made while it knew of no other (an "announce" emit:
// their tables and number, which the leader adds to its unsent count), and
// the leader wakes its sync client.
function onTabMessage(s, m) {
	if (s.closed || s.suspended || !m || typeof m !== "object") return;
	if (m.bye) {
		s.inspectingTabs.delete(m.from);
		if (s.peers.delete(m.from)) listen(s);
		if (m.resign && !s.isLeader) {
			s.syncState = waitingState(s, false);
			fire(s, "syncState", s.syncState);
		}
		return;
	}
	if (m.from && !s.peers.has(m.from)) {
		s.peers.add(m.from);
		listen(s);
		try { go(OPS.peer, s.h, 0, 0); } catch (_) { }
	}
	if (m.hello) {
		const a = { here: true };
		if (s.inspectFns.size) a.inspecting = true;
		if (s.isLeader) {
			if (s.syncTarget) { a.sync = s.syncTarget; a.keys = s.syncKeys; }
			a.syncState = syncStateNow(s);
		}
		post(s, a);
	}
	if (Array.isArray(m.tables)) {
		try { go(OPS.tablesChanged, s.h, 0, 0, JSON.stringify(m.tables), m.remote ? 1 : 0, m.commits || 1); } catch (_) { }
		if (m.tables.length) {
			const p = { tables: m.tables, remote: !!m.remote, fromOtherTab: true, transactionId: m.transactionId == null ? null : m.transactionId,
				// A local commit of another tab is this replica's (one IndexedDB database, one site id).
				siteId: m.siteId != null ? m.siteId : m.remote ? null : s.siteId,
				at: typeof m.at === "number" ? m.at : Date.now() };
			// Absent from a notice of several commits (made before this tab opened).
			if (Array.isArray(m.changes)) p.changes = m.changes;
			fire(s, "change", p);
			if (p.remote) fire(s, "remoteChange", p);
		}
	}
	if (hasOwn.call(m, "sync")) {
		s.syncTarget = m.sync;
		s.syncKeys = m.sync && Array.isArray(m.keys) ? m.keys : undefined;
		try { go(OPS.syncTarget, s.h, 0, 0, JSON.stringify(m.sync), s.syncKeys); } catch (_) { }
	}
	// {inspecting: true|false}: whether the sending tab has an inspector's
	// conflicts listener (it forwards its own then, and this tab its).
	if (m.from && hasOwn.call(m, "inspecting")) {
		if (m.inspecting) s.inspectingTabs.add(m.from); else s.inspectingTabs.delete(m.from);
		listen(s);
	}
	if (m.conflict && s.inspectFns.size) for (const fn of s.inspectFns) queueMicrotask(() => guarded(fn, Object.assign({}, m.conflict, { fromOtherTab: true })));
	if (m.requestSnapshot && s.isLeader) { try { go(OPS.syncSnapshot, s.h, 0, 0); } catch (_) { } }
	if (m.syncState && !s.isLeader) {
		if (m.syncState.pending !== s.syncState.pending) { try { go(OPS.pendingMoved, s.h, 0, 0); } catch (_) { } }
		s.syncState = Object.assign({}, m.syncState, { leader: false });
		fire(s, "syncState", s.syncState);
		checkPushed(s);
	}
}

// askPersist asks the browser to keep this origin's storage under storage
// pressure (navigator.storage.persist(), once per replica; never awaited: a
// browser may ask the user) and records the answer in s.persisted.
function askPersist(s) {
	const st = typeof navigator === "object" && navigator && navigator.storage;
	if (!st || typeof st.persist !== "function") return;
	const done = (v) => { s.persisted = v === true; };
	const ask = () => st.persist().then(done, () => done(false));
	try {
		if (typeof st.persisted === "function") st.persisted().then((v) => (v ? done(true) : ask()), ask);
		else ask();
	} catch (_) { }
}

let tabSeq = 0;
const tabBase = Math.random().toString(36).slice(2) + Date.now().toString(36);

function makeDb(h, name, siteId) {
	const s = {
		h, name, siteId, closed: false, closing: null, subs: new Map(), listeners: new Map(),
		channel: null, lockAbort: null, lockRelease: null, isLeader: false, suspended: false, unwatch: null,
		syncState: { status: "disconnected", pending: 0, leader: false }, syncTarget: null, syncKeys: undefined, syncQueue: Promise.resolve(), sync: null,
		tabId: tabBase + "." + (++tabSeq), peers: new Set(), mask: 0, persisted: null,
		pushWaiters: [], pushCheck: null, pushAgain: false, pushTimer: 0,
		inspector: null, inspectFns: new Set(), inspectingTabs: new Set(),
	};
	askPersist(s);
	for (const e of EVENTS) s.listeners.set(e, new Set());
	s.sync = new Sync(s);
	dbs.set(h, s);
	if (typeof BroadcastChannel === "function") {
		s.channel = new BroadcastChannel("replica:" + name);
		s.channel.onmessage = (ev) => onTabMessage(s, ev.data);
		post(s, { hello: true });
	}
	watchLifecycle(s);
	elect(s);
	const db = new Database(s);
	handles.set(db, h);
	return db;
}

// ---- calls from Go --------------------------------------------------------------

function emit(h, name, kind, text, blobs) {
	const s = dbs.get(h);
	if (!s) return;
	let p = decode(kind, text, blobs);
	if (name === "announce") { // commits made while no other tab was known
		postPeers(s, { tables: p.tables, remote: false, transactionId: null, commits: p.commits });
		return;
	}
	if (name === "conflict") {
		const [ev, pk] = p; ev.pk = pk; p = ev;
		if (s.inspectingTabs.size) postPeers(s, { conflict: p });
		for (const fn of s.inspectFns) queueMicrotask(() => guarded(fn, p));
	}
	if (name === "syncState") {
		// Only the leader's own state counts: a tab that no longer leads
		// (its client closing after a freeze) shows the leader's.
		if (!s.isLeader) return;
		s.syncState = p;
		postPeers(s, { syncState: p });
		checkPushed(s);
	}
	if (name === "change") p = changeEvent(p);
	if (name === "change" && !p.fromOtherTab) postPeers(s, { tables: p.tables, remote: p.remote, transactionId: p.transactionId, siteId: p.siteId, at: p.at, changes: p.changes });
	fire(s, name, p);
	if (name === "change" && p.remote) fire(s, "remoteChange", p);
	if (name === "held" && s.listeners.get("unknownTable").size) fire(s, "unknownTable", heldAlias(p));
}

// changeEvent puts a change event's keys and prior rows (holders, see
// jsbridge/events.go changeResult) in place.
function changeEvent(hs) {
	const ev = hs[0];
	for (const c of ev.changes) {
		c.pk = hs[c.k];
		if (c.p) c.priorRow = hs[c.p];
		delete c.k;
		delete c.p;
	}
	return ev;
}

function deliver(h, sid, kind, text, blobs) {
	const s = dbs.get(h);
	const sub = s && s.subs.get(sid);
	if (!sub) return;
	let v;
	try { v = decode(kind, text, blobs); } catch (e) { v = e; kind = KINDS.error; }
	queueMicrotask(() => {
		if (s.subs.get(sid) !== sub) return;
		if (kind === KINDS.error) {
			s.subs.delete(sid);
			if (sub.onError) guarded(sub.onError, v); else report(v);
			return;
		}
		guarded(sub.cb, v);
	});
}

const api = {
	ready: Promise.resolve(),
	ReplicaError,
	importKey,
	deriveKey,
	open(options) {
		return attempt(() => {
			if (!isRecord(options)) throw argErr("Replica.open: options must be an object {name, schema, ...}, got " + describe(options));
			if (typeof options.name !== "string" || options.name === "") throw argErr("Replica.open: options.name must be a non-empty string");
			// A resolver function goes to Go beside the JSON (which has
			// no functions); Go calls it through resolve.
			let fn;
			if (typeof options.resolver === "function") {
				fn = options.resolver;
				options = Object.assign({}, options, { resolver: "function" });
			} else if (options.resolver === "function") {
				throw argErr("Replica.open: options.resolver must be \"lww\", \"localWins\", \"remoteWins\" or a function, got the string \"function\"");
			}
			let text;
			try { text = JSON.stringify(options); } catch (e) { throw argErr("Replica.open: options: " + e.message); }
			const name = options.name;
			const go = () => call(OPS.open, 0, 0, text, fn).then(([h, siteId]) => makeDb(h, name, siteId));
			// Without a schema, a name the profile does not hold is refused
			// before anything creates its database (Go checks for tables).
			const idb = typeof indexedDB === "object" && indexedDB;
			if (options.schema !== undefined || !idb || typeof idb.databases !== "function") return go();
			return idb.databases().then((list) => {
				if (!list.some((d) => d.name === "replica:" + name)) throw new ReplicaError("NOT_FOUND", "Replica.open: no replica named " + JSON.stringify(name) + " is stored in this browser profile: give options.schema to create one");
				return go();
			});
		});
	},
};

// resolve calls an app's resolver (Replica.open's options.resolver) with
// a conflict Go encoded (jsbridge/resolver.go), synchronously: 1 for
// "remote", 0 for "local", -1 (last-writer-wins decides) for anything
// else, which is reported.
function resolve(fn, kind, text, blobs) {
	try {
		const [ctx, pk] = decode(kind, text, blobs);
		ctx.pk = pk;
		const r = fn(ctx);
		if (r === "remote") return 1;
		if (r === "local") return 0;
		report(new ReplicaError("INVALID_ARGUMENT", "Replica.open: options.resolver returned " + describe(r) + " for " + ctx.table + "." + ctx.column + ", not \"local\" or \"remote\" (it must answer synchronously): last-writer-wins decided"));
	} catch (e) {
		report(e);
	}
	return -1;
}

return { api, settle, settleValue, emit, deliver, resolve, handleOf: (db) => handles.get(db) };
}
// END jsbridge/facade.js

// BEGIN idbkv/helper.js (verbatim; see above)
function replicaIDBHelper(cb, opts) {
// idbkv's JavaScript helper: the body of a function (cb, opts) that idbkv
// calls once per Store (compiled with new Function, or the page's verbatim
// copy given with idbkv.Helper, as web/replica.js carries one) and whose
// returned functions it calls from Go, so that each batch of IndexedDB
// requests costs one Go->JS call and at most one JS->Go callback instead of
// several crossings per request. opts.noGetAllRecords
// (tests) makes it use the paths for browsers without getAllRecords.
//
// Buffers are Uint8Arrays with little-endian uint32 lengths; NONE (0xFFFFFFFF)
// marks an absent key bound or value.
//
// cb(id, status, payload, length) reports the end of the one asynchronous
// operation a transaction has pending: status 0 with payload a Uint8Array of
// length bytes (or null), status 1 with payload the error, status 2 (commit
// only) when a value a speculative read assumed was not the stored one and
// the transaction was aborted. A transaction
// state t.p is true only while Go waits, so cb is never called otherwise.
"use strict";
const NONE = 0xFFFFFFFF;
const hasRecords = !opts.noGetAllRecords && typeof IDBObjectStore === "function" &&
	typeof IDBObjectStore.prototype.getAllRecords === "function";
const hasCommit = typeof IDBTransaction === "function" &&
	typeof IDBTransaction.prototype.commit === "function";
const probeKey = new Uint8Array(0);

function u32(b, o) {
	return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}
function put32(b, o, v) {
	b[o] = v; b[o + 1] = v >>> 8; b[o + 2] = v >>> 16; b[o + 3] = v >>> 24;
}
function bytes(v) {
	if (v instanceof Uint8Array) return v;
	if (v instanceof ArrayBuffer) return new Uint8Array(v);
	if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
	throw new DOMException("idbkv: stored value or key is not binary", "DataError");
}
function store(t, i) {
	return t.st[i] || (t.st[i] = t.tx.objectStore(t.names[i]));
}
function done(t, status, payload, n) {
	if (!t.p) return;
	t.p = false;
	cb(t.id, status, payload, n);
}
function fail(t, e) {
	try { t.tx.abort(); } catch (_) { }
	done(t, 1, e, 0);
}
// same reports whether the stored value v (undefined: absent) is want
// (null: absent).
function same(v, want) {
	if (v === undefined || want === null) return v === undefined && want === null;
	const a = bytes(v);
	if (a.byteLength !== want.byteLength) return false;
	for (let i = 0; i < a.byteLength; i++) if (a[i] !== want[i]) return false;
	return true;
}
// range decodes [u32 lolen][lo][u32 hilen][hi] at o into an IDBKeyRange
// (lower bound open if loOpen, upper bound always open) or undefined.
function range(b, o, loOpen) {
	let lo = null, hi = null;
	const ll = u32(b, o); o += 4;
	if (ll !== NONE) { lo = b.subarray(o, o + ll); o += ll; }
	const hl = u32(b, o); o += 4;
	if (hl !== NONE) { hi = b.subarray(o, o + hl); o += hl; }
	let r;
	if (lo && hi) r = IDBKeyRange.bound(lo, hi, loOpen, true);
	else if (lo) r = IDBKeyRange.lowerBound(lo, loOpen);
	else if (hi) r = IDBKeyRange.upperBound(hi, true);
	return [r, o];
}
// pack encodes entries as [u32 n]([u32 klen][key][u32 vlen|NONE][value])*.
function pack(ks, vs) {
	const n = ks.length;
	let total = 4 + 8 * n;
	const kb = new Array(n), vb = vs ? new Array(n) : null;
	for (let i = 0; i < n; i++) {
		kb[i] = bytes(ks[i]); total += kb[i].byteLength;
		if (vb) { vb[i] = bytes(vs[i]); total += vb[i].byteLength; }
	}
	const out = new Uint8Array(total);
	put32(out, 0, n);
	let o = 4;
	for (let i = 0; i < n; i++) {
		put32(out, o, kb[i].byteLength); o += 4;
		out.set(kb[i], o); o += kb[i].byteLength;
		if (vb) {
			put32(out, o, vb[i].byteLength); o += 4;
			out.set(vb[i], o); o += vb[i].byteLength;
		} else {
			put32(out, o, NONE); o += 4;
		}
	}
	return out;
}

return {
	hasRecords,

	// begin starts a transaction over every store in names (a JS array) and
	// returns its state; a read-write one with opts.durability's hint
	// (idbkv.Durability) when set. Throws what IDBDatabase.transaction throws.
	begin(db, names, mode, id) {
		const tx = mode === "readwrite" && opts.durability ? db.transaction(names, mode, { durability: opts.durability }) : db.transaction(names, mode);
		const t = { id, tx, names, st: new Array(names.length), p: false };
		tx.oncomplete = () => done(t, 0, null, 0);
		tx.onabort = () => {
			if (t.stale) done(t, 2, null, 0);
			else done(t, 1, tx.error || new DOMException("idbkv: transaction aborted", "AbortError"), 0);
		};
		return t;
	},

	// getMany reads [u32 count]([u32 store][u32 klen][key])* from b and
	// issues one get per key in its store; cb gets ([u32 vlen|NONE][value])*
	// in key order.
	getMany(t, b) {
		const count = u32(b, 0);
		const reqs = new Array(count);
		let o = 4;
		for (let i = 0; i < count; i++) {
			const si = u32(b, o); o += 4;
			const kl = u32(b, o); o += 4;
			reqs[i] = store(t, si).get(b.subarray(o, o + kl)); o += kl;
		}
		t.p = true;
		// Requests of a transaction complete in order, and a failed one
		// aborts the transaction (tx.onabort reports it).
		reqs[count - 1].onsuccess = () => {
			try {
				let total = 4 * count;
				const vals = new Array(count);
				for (let i = 0; i < count; i++) {
					const v = reqs[i].result;
					if (v !== undefined) { vals[i] = bytes(v); total += vals[i].byteLength; }
				}
				const out = new Uint8Array(total);
				let p = 0;
				for (let i = 0; i < count; i++) {
					const v = vals[i];
					if (v === undefined) { put32(out, p, NONE); p += 4; continue; }
					put32(out, p, v.byteLength); p += 4;
					out.set(v, p); p += v.byteLength;
				}
				done(t, 0, out, total);
			} catch (e) { fail(t, e); }
		};
	},

	// scan reads one page of at most count entries of store si within the
	// range encoded in b; flags: 1 lower bound open, 2 descending, 4 keys
	// only. cb gets the page packed as by pack. Never reads past count.
	scan(t, si, b, count, flags) {
		const s = store(t, si);
		const [r] = range(b, 0, (flags & 1) !== 0);
		const rev = (flags & 2) !== 0, keysOnly = (flags & 4) !== 0;
		const dir = rev ? "prev" : "next";
		if (hasRecords && !keysOnly) {
			const q = { count, direction: dir };
			if (r) q.query = r;
			const req = s.getAllRecords(q);
			t.p = true;
			req.onsuccess = () => {
				try {
					const recs = req.result, ks = new Array(recs.length), vs = new Array(recs.length);
					for (let i = 0; i < recs.length; i++) { ks[i] = recs[i].key; vs[i] = recs[i].value; }
					const out = pack(ks, vs);
					done(t, 0, out, out.byteLength);
				} catch (e) { fail(t, e); }
			};
		} else if (!rev) {
			const kreq = s.getAllKeys(r, count);
			const vreq = keysOnly ? null : s.getAll(r, count);
			t.p = true;
			(vreq || kreq).onsuccess = () => {
				try {
					const out = pack(kreq.result, vreq ? vreq.result : null);
					done(t, 0, out, out.byteLength);
				} catch (e) { fail(t, e); }
			};
		} else {
			// Descending without getAllRecords: a cursor, iterated here in JS.
			const req = keysOnly ? s.openKeyCursor(r, "prev") : s.openCursor(r, "prev");
			const ks = [], vs = keysOnly ? null : [];
			t.p = true;
			req.onsuccess = () => {
				try {
					const c = req.result;
					if (c) {
						ks.push(c.key);
						if (vs) vs.push(c.value);
						if (ks.length < count) { c.continue(); return; }
					}
					const out = pack(ks, vs);
					done(t, 0, out, out.byteLength);
				} catch (e) { fail(t, e); }
			};
		}
	},

	// commit issues every request encoded in b[0:n] —
	//   4 expect:      [u8 4][u32 si][u32 klen][key][u32 vlen|NONE][value]
	//   1 put:         [u8 1][u32 si][u32 klen][key][u32 vlen][value]
	//   2 delete:      [u8 2][u32 si][u32 klen][key]
	//   3 deleteRange: [u8 3][u32 si][range as in scan, lower bound closed]
	// — in order, then commits; cb reports the transaction's completion.
	// The expects (values speculative reads assumed) come first: each is a
	// get, and the last one's success handler compares them all with what
	// they assumed, aborting the transaction (status 2: nothing written) on
	// any difference and committing otherwise. With no requests it issues
	// one get to learn whether the transaction is still active. The first
	// request throws TransactionInactiveError if the transaction has
	// finished, and then nothing was issued. A throw after some requests
	// aborts the transaction before rethrowing.
	commit(t, b, n) {
		let o = 0, issued = false;
		const exp = [];
		try {
			if (n === 0) store(t, 0).get(probeKey);
			while (o < n) {
				const op = b[o], s = store(t, u32(b, o + 1));
				o += 5;
				if (op === 4) {
					const kl = u32(b, o); o += 4;
					const req = s.get(b.subarray(o, o + kl)); o += kl;
					const vl = u32(b, o); o += 4;
					let want = null;
					if (vl !== NONE) { want = b.slice(o, o + vl); o += vl; }
					exp.push(req, want);
				} else if (op === 1) {
					const kl = u32(b, o); o += 4;
					const key = b.subarray(o, o + kl); o += kl;
					const vl = u32(b, o); o += 4;
					// slice, not subarray: the structured clone of a view
					// stores its whole underlying buffer.
					s.put(b.slice(o, o + vl), key); o += vl;
				} else if (op === 2) {
					const kl = u32(b, o); o += 4;
					s.delete(b.subarray(o, o + kl)); o += kl;
				} else if (op === 3) {
					const [r, next] = range(b, o, false);
					o = next;
					if (r) s.delete(r); else s.clear();
				} else {
					throw new DOMException("idbkv: bad write op " + op, "DataError");
				}
				issued = true;
			}
			if (exp.length) {
				// Requests complete in order: when the last expect's get
				// succeeds, all of them have, and no write has yet.
				exp[exp.length - 2].onsuccess = () => {
					for (let i = 0; i < exp.length; i += 2) {
						if (!same(exp[i].result, exp[i + 1])) {
							t.stale = true;
							try { t.tx.abort(); } catch (_) { }
							return;
						}
					}
					if (hasCommit) { try { t.tx.commit(); } catch (_) { } }
				};
			} else if (hasCommit) t.tx.commit();
		} catch (e) {
			if (issued) { try { t.tx.abort(); } catch (_) { } }
			throw e;
		}
		t.p = true;
	},

	// abort rolls the transaction back; it is a no-op once it has finished.
	abort(t) {
		t.p = false;
		try { t.tx.abort(); } catch (_) { }
	},

	// finish ends a read-only transaction early; errors are irrelevant then.
	finish(t) {
		t.p = false;
		try { if (hasCommit) t.tx.commit(); } catch (_) { }
	},
};
}
// END idbkv/helper.js
})(typeof globalThis !== "undefined" ? globalThis : self);
