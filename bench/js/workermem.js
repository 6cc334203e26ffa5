// workermem.js: lets the bench count a Worker's memory in W7. Loaded by
// Replica's pages before replica.js, it wraps the Worker constructor: each
// classic Worker starts from a small script (a blob) that wraps
// WebAssembly.instantiate/instantiateStreaming to keep the module's memory,
// answers {benchMemory} messages itself (before the Worker's own handler,
// which never sees them) with the size of its WebAssembly memory, and then
// loads the Worker's script. The page's benchWorkerMemory() asks every
// Worker still running and sums them: {wasm} in bytes (zero when none
// runs, as in page mode), with urls, the blob: URLs of those Workers,
// which the bench uses to pick this page's Workers out of the browser's.
// A Worker has no performance.memory: the bench reads the Workers' JS
// heaps through CDP (internal/pagebench.WorkerHeaps).
(function (g) {
	"use strict";
	if (typeof g.Worker !== "function" || g.benchWorkerMemory) return;
	function inWorker() {
		let mem = null;
		const keep = (r) => { const i = r && r.instance ? r.instance : r; try { if (i && i.exports && i.exports.mem) mem = i.exports.mem; } catch (_) { } return r; };
		const wrap = (f) => function () { return f.apply(this, arguments).then(keep); };
		WebAssembly.instantiate = wrap(WebAssembly.instantiate);
		if (typeof WebAssembly.instantiateStreaming === "function") WebAssembly.instantiateStreaming = wrap(WebAssembly.instantiateStreaming);
		self.addEventListener("message", (e) => {
			if (!e.data || !e.data.benchMemory) return;
			e.stopImmediatePropagation();
			self.postMessage({ benchMemory: e.data.benchMemory, wasm: mem ? mem.buffer.byteLength : 0 });
		});
	}
	const Real = g.Worker;
	const live = new Set();
	let seq = 0;
	function BenchWorker(url, options) {
		if (options && options.type === "module") return new Real(url, options);
		const abs = new URL(String(url), g.location.href).href;
		const src = "(" + inWorker.toString() + ")();\nimportScripts(" + JSON.stringify(abs) + ");\n";
		const blobURL = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
		const w = new Real(blobURL, options);
		w.benchURL = blobURL;
		live.add(w);
		const terminate = w.terminate;
		w.terminate = function () { live.delete(w); return terminate.call(this); };
		return w;
	}
	BenchWorker.prototype = Real.prototype;
	g.Worker = BenchWorker;
	g.benchWorkerMemory = function () {
		return Promise.all([...live].map((w) => new Promise((resolve) => {
			const id = ++seq;
			const t = setTimeout(() => { w.removeEventListener("message", on); resolve({ wasm: 0 }); }, 5000);
			function on(e) {
				if (!e.data || e.data.benchMemory !== id) return;
				clearTimeout(t);
				w.removeEventListener("message", on);
				resolve({ wasm: e.data.wasm });
			}
			w.addEventListener("message", on);
			w.postMessage({ benchMemory: id });
		}))).then((all) => ({ wasm: all.reduce((a, b) => a + b.wasm, 0), urls: [...live].map((w) => w.benchURL) }));
	};
})(globalThis);
