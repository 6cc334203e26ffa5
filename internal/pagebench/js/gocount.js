// gocount.js: counts crossings of the Go<->JavaScript boundary of a Go
// WebAssembly module started through wasm_exec.js's Go class. Load it after
// wasm_exec.js and before the code that does `new Go()` (replica.js does so
// when replica.wasm loads). It replaces globalThis.Go with a subclass that
// wraps every import of the "gojs" module (each is one Go->JS call:
// "syscall/js.valueCall", "syscall/js.valueGet", ...) and _resume (one
// JS->Go entry: a js.FuncOf callback or a timer waking Go), and keeps the
// last instance as goCount.go (so goCount.wasmBytes() reads the size of its
// WebAssembly memory). globalThis.goCount: {counts, snap(), wasmBytes()}.
// With {count: false} in globalThis.goCountOptions it only keeps the
// instance (no wrapping, no cost per call).
(function (g) {
	"use strict";
	if (g.goCount || typeof g.Go !== "function") return;
	const counting = !(g.goCountOptions && g.goCountOptions.count === false);
	const counts = {};
	const Base = g.Go;
	const state = {
		counts,
		go: null,
		snap: () => Object.assign({}, counts),
		wasmBytes() {
			const i = state.go && state.go._inst;
			return i ? i.exports.mem.buffer.byteLength : 0;
		},
	};
	g.Go = class extends Base {
		constructor(...a) {
			super(...a);
			state.go = this;
			if (!counting) return;
			const imp = this.importObject.gojs || this.importObject.go;
			for (const name of Object.keys(imp)) {
				const f = imp[name];
				if (!name.startsWith("syscall/js.")) continue;
				const key = "go->js " + name.slice("syscall/js.".length);
				imp[name] = (sp) => { counts[key] = (counts[key] || 0) + 1; return f(sp); };
			}
		}
		_resume() {
			if (counting) counts["js->go resume"] = (counts["js->go resume"] || 0) + 1;
			return super._resume();
		}
	};
	g.goCount = state;
})(globalThis);
