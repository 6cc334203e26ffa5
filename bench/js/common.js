// common.js: the part of the browser benchmark every system's page shares.
// The page (served by bench/server.go) sets T0 = performance.now() in its
// first script, loads the system's library and its adapter (sys-*.js), which
// calls B.start(adapter). The driver (bench/browser.go) then evaluates one of
// the flows below and reads back its JSON result.
//
// An adapter implements, over a handle h it opened:
//   open(name) -> h              open (creating) database name
//   first(h)                     read one row: the database is usable
//   close(h)
//   w1(h, rows, o)               one awaited insert transaction per row
//   w2(h, rows, o)               one transaction of all rows
//   w3(h, rows, o)               update one column of each row, one awaited transaction each
//   w4(h, prefixes) -> count     name-prefix query per prefix, first 50 rows in name order
//   w5(h, rows, o)               load all rows into the empty database h
// and may return {n, note} from w1/w3 when it stopped early (o.capMs).
"use strict";
const B = (() => {
	const params = new URLSearchParams(location.search);
	let resolveReady, rejectReady;
	const ready = new Promise((ok, fail) => { resolveReady = ok; rejectReady = fail; });
	const profile = params.get("profile") === "1";
	const B = {
		params,
		profile,
		sys: null,
		db: null,
		openMs: NaN,
		ready,
		// start is called by the adapter once its library is loaded: it
		// opens the database named by ?db= and reads one row, and resolves
		// ready with the time since the page's first script (W6).
		start(sys) {
			B.sys = sys;
			(async () => {
				B.db = await sys.open(params.get("db"));
				await sys.first(B.db);
				B.openMs = performance.now() - T0;
				return B.openMs;
			})().then(resolveReady, rejectReady);
		},
		async rows() {
			const r = await fetch("/data/rows.json");
			if (!r.ok) throw new Error("/data/rows.json: HTTP " + r.status);
			return r.json();
		},
		async prefixes() {
			return (await fetch("/data/prefixes.json")).json();
		},
		async gc() {
			if (typeof gc !== "function") return;
			for (let i = 0; i < 3; i++) {
				gc();
				await new Promise((r) => setTimeout(r, 20));
			}
		},
		// memory: the page's used JS heap and replica.wasm's memory, plus
		// the memory of replica.wasm in a Worker running it (workermem.js),
		// in bytes. The Workers' JS heaps are added by the Go side
		// (pagebench.WorkerHeaps: a Worker has no performance.memory).
		async memory() {
			const m = performance.memory || {};
			const out = {jsHeap: m.usedJSHeapSize || 0, wasm: globalThis.goCount ? goCount.wasmBytes() : 0};
			if (globalThis.benchWorkerMemory) {
				const w = await benchWorkerMemory();
				out.wasm += w.wasm;
				out.workerURLs = w.urls;
			}
			return out;
		},
		snap() {
			const o = {};
			if (globalThis.idbCount) Object.assign(o, idbCount.snap());
			if (globalThis.goCount) Object.assign(o, goCount.snap());
			return o;
		},
		// timed runs fn and returns {ms, n} (and, when profiling, the
		// IndexedDB requests and Go<->JS crossings per item).
		// W10: the main thread's long tasks (over 50 ms) that started
		// while fn ran: the longest and the total blocking time (the sum of
		// each one's time beyond 50 ms), read after the run (the observer
		// is told of a task after it ends).
		async timed(fn, n) {
			const c0 = profile ? B.snap() : null;
			const t0 = performance.now();
			const r = await fn();
			const t1 = performance.now();
			const ms = t1 - t0;
			await new Promise((ok) => setTimeout(ok, 100));
			let longestTaskMs = 0, blockingMs = 0;
			for (const [start, d] of LONGTASKS) {
				if (start + d < t0 || start > t1) continue;
				longestTaskMs = Math.max(longestTaskMs, d);
				blockingMs += Math.max(0, d - 50);
			}
			const out = Object.assign({ms, n, longestTaskMs, blockingMs}, r && typeof r === "object" ? r : {});
			if (profile) out.counts = idbCount.per(c0, B.snap(), out.n || 1);
			return out;
		},
		// flowBasic: W6 cold (this page's open), W1, W2 (into a second
		// database), W3 (on W1's rows); o.skip lists workloads to leave out
		// (a system that had to be stopped early once is not run again).
		async flowBasic(o) {
			const openMs = await ready;
			const S = B.sys;
			const rows = (await B.rows()).slice(0, o.n);
			const res = {openMs};
			const skip = o.skip || [];
			if (!skip.includes("w1")) res.w1 = await B.timed(() => S.w1(B.db, rows, o), rows.length);
			if (!skip.includes("w2")) {
				const h2 = await S.open(params.get("db") + "-w2");
				res.w2 = await B.timed(() => S.w2(h2, rows, o), rows.length);
				await S.close(h2);
			}
			if (!skip.includes("w3")) {
				if (S.prepareW3 || skip.includes("w1")) await (S.prepareW3 || S.w2)(B.db, rows, o);
				res.w3 = await B.timed(() => S.w3(B.db, rows, o), rows.length);
			}
			return res;
		},
		// flowBig: W5 into this page's (empty) database, W7 after it, W4
		// (unless o.skip lists "w4"); the database stays open (closeBig).
		async flowBig(o) {
			await ready;
			const S = B.sys;
			let rows = S.rowsFromRelay ? null : await B.rows();
			const n = rows ? rows.length : o.total;
			const res = {};
			res.w5 = await B.timed(() => S.w5(B.db, rows, o), n);
			rows = null;
			await B.gc();
			res.w7 = await B.memory();
			if (!(o.skip || []).includes("w4")) {
				const prefixes = await B.prefixes();
				res.w4 = await B.timed(() => S.w4(B.db, prefixes), prefixes.length);
				if (S.w4getAll) res.w4getAll = await B.timed(() => S.w4getAll(B.db, prefixes), prefixes.length);
			}
			return res;
		},
		// closeBig closes flowBig's database: the driver calls it once it
		// has read the Workers' JS heaps for W7 (a closed replica's Worker
		// ends).
		async closeBig() {
			await B.sys.close(B.db);
			return 0;
		},
		// prepareOne and runOne run one workload alone (the driver's
		// -cpuprofile profiles runOne): prepareOne loads the rows and what
		// the workload needs first (W3: W2's rows; W4: W5's).
		async prepareOne(w, o) {
			await ready;
			const S = B.sys;
			B.one = {rows: S.rowsFromRelay && (w === "w4" || w === "w5") ? null : await B.rows()};
			if (w === "w1" || w === "w2" || w === "w3") B.one.rows = B.one.rows.slice(0, o.n);
			if (w === "w3") await S.w2(B.db, B.one.rows, o);
			if (w === "w4") {
				await S.w5(B.db, B.one.rows, o);
				B.one.rows = await B.prefixes();
			}
			return true;
		},
		async runOne(w, o) {
			return B.timed(() => B.sys[w](B.db, B.one.rows, o), B.one.rows ? B.one.rows.length : o.total);
		},
		// W8, one device per page: w8Connect starts syncing and watching
		// the pings table; w8Write commits ping i and returns when the
		// commit resolved, with the time it started; w8Seen(i) resolves
		// with the time this device's subscription first saw ping i. Times
		// are performance.timeOrigin + now(), comparable across pages.
		seen: new Map(),
		waiters: new Map(),
		applied: new Map(),
		async w8Connect(o) {
			await ready;
			if (B.sys.w8Watch) B.sys.w8Watch(B.db, (n) => { if (!B.applied.has(n)) B.applied.set(n, performance.timeOrigin + performance.now()); });
			await B.sys.w8Connect(B.db, o, (n) => {
				if (B.seen.has(n)) return;
				const t = performance.timeOrigin + performance.now();
				B.seen.set(n, t);
				const w = B.waiters.get(n);
				if (w) { B.waiters.delete(n); w(t); }
			});
		},
		pushedAt: new Map(),
		async w8Write(i) {
			const t = performance.timeOrigin + performance.now();
			await B.sys.w8Write(B.db, i, t);
			if (B.sys.w8Pushed) B.sys.w8Pushed(B.db).then(() => B.pushedAt.set(i, performance.timeOrigin + performance.now()), () => {});
			return t;
		},
		// w8PushedAt: when the relay acknowledged ping i's write (null: not
		// reported).
		w8PushedAt(i) { return B.pushedAt.has(i) ? B.pushedAt.get(i) : null; },
		// w8Burst: ping first is inserted, then updated to first+1 …
		// first+n-1 back to back (each write awaited, none waiting for the
		// relay); it returns the last value and the time its write started.
		async w8Burst(first, n) {
			await B.sys.w8Write(B.db, first, performance.timeOrigin + performance.now());
			let t = 0;
			for (let i = first + 1; i < first + n; i++) {
				t = performance.timeOrigin + performance.now();
				await B.sys.w8Update(B.db, "p" + first, i, t);
			}
			return {last: first + n - 1, t};
		},
		// w8Applied: when ping i was applied here (null: not reported).
		w8Applied(i) { return B.applied.has(i) ? B.applied.get(i) : null; },
		w8Seen(i, ms) {
			if (B.seen.has(i)) return B.seen.get(i);
			return new Promise((ok, fail) => {
				B.waiters.set(i, ok);
				setTimeout(() => fail(new Error("ping " + i + " not seen after " + ms + " ms")), ms);
			});
		},
		// flowWarm: W6 warm (this page's open of the database flowBig filled).
		async flowWarm() {
			const openMs = await ready;
			await B.sys.close(B.db);
			return {openMs};
		},
	};
	return B;
})();
