// replica-worker.js: the dedicated Worker that runs Replica's engine and
// sync client (replica.wasm) for a page that opened a replica with
// worker mode, the default (web/replica.js starts it; replica.d.ts
// OpenOptions.worker).
//
// The page keeps the whole JavaScript API (jsbridge/facade.js: argument
// checks, Promises, listeners, sibling tabs over BroadcastChannel, the
// leader's Web Lock, page lifecycle); only the facade's one entry point
// into Go, go(op, handle, tx, id, a, b, c, d), and Go's four calls back
// (settle, settleValue, emit, deliver) cross the thread boundary. The
// protocol, both ways one message per event-loop turn:
//
//   worker -> page  {hello: 1}                                   at once, when this script runs
//                   (the page gives up on a Worker that sends nothing
//                   within 30 s: a workerURL that is not this script)
//   page -> worker  {init: {wasmURL, wasmExecURL}}               first, once
//   worker -> page  {ops: OPS, kinds: KINDS}                     Go installed
//                   {fail: message}                              it could not start
//   page -> worker  {c: [[op, handle, tx, id, a, b, c, d], ...]} the go() calls of a turn, in order;
//                   a write's array goes on with its journal token
//                   (token, ack, journal: jsbridge/journal.go)
//   worker -> page  {r: [entry, ...], p: [handle, pending, ...]} Go's calls of a turn, in order:
//                     [0, id, kind, text, blobs]        settle
//                     [1, id, value]                    settleValue (a SealKey: structured clone)
//                     [2, handle, event, kind, text, blobs]  emit
//                     [3, handle, sid, kind, text, blobs]    deliver
//                   p: the unsent count of each replica this page leads,
//                   read after the turn (the facade's synchronous
//                   go(OPS.pending) answers it from there)
//
// Byte arguments (Uint8Array) are cloned: the page keeps its copy until
// the call's answer, since after a freeze it may send the call again to
// another Worker; Go's result buffers are transferred back. Nothing here
// runs an app's code: a resolver function cannot run in a Worker (Go calls
// it synchronously inside an IndexedDB transaction), and the page opens
// such a replica in page mode, or refuses it.
//
// The page terminates this Worker when it freezes (the browser aborts its
// IndexedDB transactions) and starts another on resume, which restores
// the session (web/replica.js, worker mode): the write journal
// (jsbridge/journal.go: the writes' tokens and the recall calls) tells it which writes
// in flight committed.
//
// A classic worker script with no imports, so that bundlers can emit it as
// it is (new URL("./replica-worker.js", import.meta.url)). It carries a
// verbatim copy of idbkv/helper.js (replicaIDBHelper below), as replica.js
// does: do not edit it here; edit idbkv/helper.js and run
// `go test ./cmd/wasm -run TestReplicaJSCarriesFacade -update`.
(function (global) {
	"use strict";
	let go = null;          // the Go entry point (jsbridge dispatch)
	let OPS = null, KINDS = null;
	let out = null;         // entries of this turn, to the page
	let transfer = null;    // their buffers
	const leading = new Set(); // handles this page leads (OPS.leader seen with 1)

	function push(entry, blobs) {
		if (!out) { out = []; transfer = []; queueMicrotask(flush); }
		out.push(entry);
		// Go makes each result buffer (a new Uint8Array): give it away.
		if (blobs && blobs.buffer && blobs.byteOffset === 0 && blobs.byteLength === blobs.buffer.byteLength) transfer.push(blobs.buffer);
	}

	function flush() {
		const r = out, t = transfer;
		out = null; transfer = null;
		let p = null;
		for (const h of leading) {
			let n;
			try { n = go(OPS.pending, h, 0, 0); } catch (_) { continue; }
			if (typeof n === "number") (p || (p = [])).push(h, n);
		}
		global.postMessage(p ? { r, p } : { r }, t);
	}

	// workerFacade is the facade Go builds in this worker
	// (jsbridge.Install calls Replica._facade(go, OPS, KINDS)): Go's calls
	// back are queued for the page.
	function workerFacade(dispatch, ops, kinds) {
		go = dispatch;
		OPS = ops;
		KINDS = kinds;
		return {
			api: {},
			settle(id, kind, text, blobs) { push([0, id, kind, text, blobs], blobs); },
			settleValue(id, v) { push([1, id, v]); },
			emit(h, name, kind, text, blobs) { push([2, h, name, kind, text, blobs], blobs); },
			deliver(h, sid, kind, text, blobs) { push([3, h, sid, kind, text, blobs], blobs); },
			resolve() { return -1; }, // never asked: the page refuses resolver functions
			handleOf() { return undefined; },
		};
	}

	// run makes the page's calls of one turn, in order. A call Go throws
	// on (it recovers its own panics, so only a dead runtime does) is
	// rejected with INTERNAL.
	function run(calls) {
		for (const c of calls) {
			const op = c[0], h = c[1], id = c[3];
			if (op === OPS.leader) { if (c[4]) leading.add(h); else leading.delete(h); }
			try {
				if (c.length > 8) go(op, h, c[2], id, c[4], c[5], c[6], c[7], c[8], c[9], c[10]);
				else go(op, h, c[2], id, c[4], c[5], c[6], c[7]);
			} catch (e) {
				if (id) push([0, id, KINDS.error, JSON.stringify({ code: "INTERNAL", message: "Replica's WebAssembly module failed: " + ((e && e.message) || e) }), null]);
			}
			if (op === OPS.close) leading.delete(h);
			// A passphrase's or key's bytes: Go has copied them.
			if (op === OPS.sealKey) { for (let i = 4; i < 8; i++) if (c[i] instanceof Uint8Array) c[i].fill(0); }
		}
	}

	// loadGo loads wasm_exec.js (which defines Go) unless it is loaded.
	async function loadGo(init) {
		if (typeof global.Go !== "function") {
			if (typeof global.importScripts === "function") {
				try { global.importScripts(init.wasmExecURL); } catch (e) {
					// A module worker (a bundler may have made one) has
					// importScripts but throws.
					if (!(e instanceof TypeError)) throw e;
				}
			}
			if (typeof global.Go !== "function") await import(/* @vite-ignore */ /* webpackIgnore: true */ init.wasmExecURL);
			if (typeof global.Go !== "function") throw new Error(init.wasmExecURL + " did not define Go");
		}
	}

	// compile fetches and compiles replica.wasm, streaming from the fetch's
	// Response as start does: the form for which Chromium consults V8's
	// wasm code cache (README, "Serving replica.wasm").
	async function compile(init) {
		if (typeof WebAssembly.compileStreaming === "function") {
			try {
				return await WebAssembly.compileStreaming(fetch(init.wasmURL));
			} catch (e) {
				if (!(e instanceof TypeError)) throw e;
			}
		}
		const r = await fetch(init.wasmURL);
		if (!r.ok) throw new Error("fetching " + init.wasmURL + ": HTTP " + r.status);
		return WebAssembly.compile(await r.arrayBuffer());
	}

	// prepared: the module a {prepare} message compiled (the spare Worker
	// of replica.js): {init} then starts from it, without the network.
	let prepared = null;

	async function start(init) {
		await loadGo(init);
		const rt = new global.Go();
		let instance = null;
		if (prepared) instance = await WebAssembly.instantiate(await prepared, rt.importObject);
		else if (typeof WebAssembly.instantiateStreaming === "function") {
			try {
				instance = (await WebAssembly.instantiateStreaming(fetch(init.wasmURL), rt.importObject)).instance;
			} catch (e) {
				// A TypeError: not served as application/wasm (or not
				// fetched): try again the slow way, which reports HTTP
				// errors clearly.
				if (!(e instanceof TypeError)) throw e;
			}
		}
		if (!instance) {
			const r = await fetch(init.wasmURL);
			if (!r.ok) throw new Error("fetching " + init.wasmURL + ": HTTP " + r.status);
			instance = (await WebAssembly.instantiate(await r.arrayBuffer(), rt.importObject)).instance;
		}
		// jsbridge.Install finds this at globalThis.Replica in the
		// synchronous part of rt.run (Go's main up to its first wait).
		let installed = false, failed = null;
		global.Replica = {
			_facade: workerFacade,
			_idbHelper: replicaIDBHelper,
			_install() { installed = true; },
			_fail(message) { failed = String(message); },
		};
		let running;
		try { running = rt.run(instance); } finally { delete global.Replica; }
		running.then(
			() => global.postMessage({ fail: "replica.wasm exited" }),
			(e) => global.postMessage({ fail: "replica.wasm failed: " + ((e && e.message) || e) }));
		if (failed !== null) throw new Error(failed);
		if (!installed) throw new Error("replica.wasm did not install its API");
	}

	global.onmessage = (ev) => {
		const m = ev.data;
		if (m && m.c) { run(m.c); return; }
		if (m && m.prepare) {
			// The spare Worker: load and compile now, start at {init}.
			prepared = loadGo(m.prepare).then(() => compile(m.prepare));
			prepared.then(() => global.postMessage({ prepared: 1 }), (e) => {
				prepared = null;
				global.postMessage({ fail: String((e && e.message) || e) });
			});
			return;
		}
		if (m && m.init) {
			start(m.init).then(
				() => global.postMessage({ ops: OPS, kinds: KINDS }),
				(e) => global.postMessage({ fail: String((e && e.message) || e) }));
		}
	};
	global.postMessage({ hello: 1 });

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
})(self);
