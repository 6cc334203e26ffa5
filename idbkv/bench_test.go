//go:build js && wasm

package idbkv

import (
	"slices"
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/kvtest"
)

// Run with
//
//	GOOS=js GOARCH=wasm go test -run XXX -bench . ./idbkv
//
// (with .bin first on PATH, as `make bench-browser` does). BenchmarkIdbkv runs
// the kv benchmark shapes (kv/kvtest.Bench) through idbkv; BenchmarkRawJS runs
// the same shapes written directly against IndexedDB in JavaScript, in the
// same page, for comparison. Run one benchmark process at a time: two at once
// on a small machine distort each other.

func BenchmarkIdbkv(b *testing.B) {
	// The durability hint's cost: the speculative driver (the one
	// Replica uses) with "strict", against the same without (the
	// browser's default) in the same run.
	strict := driverCase{"helper-speculate-strict", openOptions{speculate: true, durability: "strict"}}
	for _, d := range append(slices.Clip(drivers), strict) {
		b.Run(d.name, func(b *testing.B) {
			kvtest.Bench(b, func(t testing.TB, buckets []string) kv.Store {
				s, _ := openT(t, d.opts, buckets...)
				return s
			})
		})
	}
}

// rawJS implements the benchmark shapes of kvtest.Bench in plain JS: the
// same three object stores per transaction, 16-byte binary keys (the same
// "bench/k:" + scrambled big-endian uint64), 100-byte Uint8Array values.
// setup opens a fresh database (filled with 10,000 keys for the read
// shapes), run(st, n) resolves after n operations of the shape.
const rawJS = `
const stores = ["alpha", "beta", "gamma"];
const val = new Uint8Array(100).map((_, i) => (i * 31) ^ 2);
function key(i) {
	const k = new Uint8Array(16);
	k.set([98, 101, 110, 99, 104, 47, 107, 58]); // "bench/k:"
	const n = (BigInt(i % 100000) * 0x9E3779B97F4A7C15n) & 0xFFFFFFFFFFFFFFFFn;
	new DataView(k.buffer).setBigUint64(8, n);
	return k;
}
function req(r) { return new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); }); }
function done(tx) { return new Promise((ok, fail) => { tx.oncomplete = ok; tx.onabort = () => fail(tx.error); }); }
function open(name) {
	const r = indexedDB.open(name, 1);
	r.onupgradeneeded = () => stores.forEach(s => r.result.createObjectStore(s));
	return req(r);
}
async function fill(db, n) {
	for (let lo = 0; lo < n; lo += 1000) {
		const tx = db.transaction(stores, "readwrite"), s = tx.objectStore("alpha");
		for (let i = lo; i < Math.min(lo + 1000, n); i++) s.put(val.slice(), key(i));
		await done(tx);
	}
}
const shapes = {
	async PutSingle(db, n) {
		for (let i = 0; i < n; i++) {
			const tx = db.transaction(stores, "readwrite");
			tx.objectStore("alpha").put(val.slice(), key(i));
			await done(tx);
		}
	},
	async Put1000(db, n) {
		let k = 0;
		for (let i = 0; i < n; i++) {
			const tx = db.transaction(stores, "readwrite"), s = tx.objectStore("alpha");
			for (let j = 0; j < 1000; j++) s.put(val.slice(), key(k++));
			await done(tx);
		}
	},
	async GetMany100(db, n) {
		const keys = [];
		for (let j = 0; j < 100; j++) keys.push(key(j % 10 === 9 ? 20000 + j : j * 97));
		for (let i = 0; i < n; i++) {
			const tx = db.transaction(stores, "readonly"), s = tx.objectStore("alpha");
			const rs = keys.map(k => s.get(k));
			await req(rs[rs.length - 1]);
			if (rs[9].result !== undefined || rs[0].result === undefined) throw new Error("wrong values");
		}
	},
	async Scan10000(db, n) {
		for (let i = 0; i < n; i++) {
			const tx = db.transaction(stores, "readonly"), s = tx.objectStore("alpha");
			let bytes = 0;
			if (s.getAllRecords) {
				for (const r of await req(s.getAllRecords())) bytes += r.value.byteLength;
			} else {
				s.getAllKeys();
				for (const v of await req(s.getAll())) bytes += v.byteLength;
			}
			if (bytes !== 1000000) throw new Error("scan read " + bytes);
		}
	},
};
return {
	async setup(name, shape) {
		const db = await open(name);
		if (shape === "GetMany100" || shape === "Scan10000") await fill(db, 10000);
		return { db, shape };
	},
	async run(st, n) { await shapes[st.shape](st.db, n); },
	async teardown(st, name) { st.db.close(); await req(indexedDB.deleteDatabase(name)); },
};
`

func BenchmarkRawJS(b *testing.B) {
	h := js.Global().Get("Function").New(rawJS).Invoke()
	for _, shape := range []string{"PutSingle", "Put1000", "GetMany100", "Scan10000"} {
		b.Run(shape, func(b *testing.B) {
			name := dbName(b)
			st := await(b, h.Call("setup", name, shape))
			defer func() { await(b, h.Call("teardown", st, name)) }()
			b.ResetTimer()
			await(b, h.Call("run", st, b.N))
			b.StopTimer()
			if shape == "Put1000" {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/put")
			}
		})
	}
}

// await waits for the JS promise p and returns its value; a rejection fails b.
func await(b *testing.B, p js.Value) js.Value {
	b.Helper()
	type result struct {
		v   js.Value
		err string
	}
	c := make(chan result, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any { c <- result{v: args[0]}; return nil })
	fail := js.FuncOf(func(_ js.Value, args []js.Value) any { c <- result{err: args[0].Call("toString").String()}; return nil })
	defer ok.Release()
	defer fail.Release()
	p.Call("then", ok, fail)
	r := <-c
	if r.err != "" {
		b.Fatal(r.err)
	}
	return r.v
}
