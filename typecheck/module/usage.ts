// usage.ts: an app that imports the npm package as an ES module, compiled by
// make typecheck with tsc --strict against the package's index.d.ts (which
// `go run ./internal/npmpkg -types-only` writes into node_modules/ here, with
// the package.json whose "exports" name it). typecheck/usage.ts checks the
// API itself, against the global typings these are generated from; this file
// checks that the module exports them: the value, the namespace of types,
// the default export, configure, and no global Replica.

import { Replica } from "@replica-sync/replica";
import ReplicaDefault from "@replica-sync/replica";
import type { Replica as R } from "@replica-sync/replica";

export async function app(): Promise<R.Row[]> {
	Replica.configure({ wasmURL: "/assets/replica.wasm", wasmExecURL: new URL("/assets/wasm_exec.js", location.href) });
	Replica.configure({});
	Replica.configure({ worker: true, workerURL: "/assets/replica-worker.js" });
	// @ts-expect-error worker is a boolean
	Replica.configure({ worker: 1 });
	// @ts-expect-error unknown option
	Replica.configure({ baseURL: "/assets/" });
	// @ts-expect-error not a URL
	Replica.configure({ wasmURL: 42 });
	await Replica.ready;
	const schema: R.Schema = { tables: { notes: { columns: { title: { type: "text", notNull: true }, n: "integer" } } } };
	const db: Replica.Database = await Replica.open({ name: "notes", schema });
	const same: R.Static = ReplicaDefault;
	await same.open({ name: "other", schema });
	const row = await db.insert("notes", { title: "hello", n: 1 });
	const off = db.on("change", (e: R.ChangeEvent) => { void e.siteId; });
	off();
	try {
		await db.insert("notes", { n: 2 });
	} catch (e) {
		if (e instanceof Replica.ReplicaError) {
			const code: R.ErrorCode = e.code;
			void code;
		}
	}
	// @ts-expect-error the module's typings declare no global Replica
	void globalThis.Replica;
	void row;
	return db.query("notes", { orderBy: "title" });
}
