//go:build !js

package main

import (
	"strings"
	"testing"
)

// TestWorkerSmoke: a replica opened in worker mode writes, reads,
// transacts, subscribes and fails with the codes of page mode.
func TestWorkerSmoke(t *testing.T) {
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	var res struct {
		Log []string `json:"log"`
	}
	run(t, ctx, srv.URL+"/worker.html", `
		const log = [];
		try {
		const db = await Replica.open({name: "w-smoke", schema: {tables: {t: {columns: {title: "text", n: "integer", b: "blob"}}}}});
		log.push("opened " + (typeof db.siteId));
		const r = await db.insert("t", {title: "a", n: 5n, b: new Uint8Array([1, 2, 3])});
		log.push("insert " + r.title + " " + r.n + " " + Array.from(r.b).join(":"));
		await db.transaction(async (tx) => { for (let i = 0; i < 10; i++) tx.insert("t", {title: "x" + i}); });
		log.push("count " + await db.count("t"));
		try { await db.insert("t", {n: "x"}); } catch (e) { log.push("err " + (e instanceof Replica.ReplicaError) + " " + e.code + " " + e.column); }
		const rows = [];
		const off = db.subscribe("t", {orderBy: "title", limit: 1}, (rs) => rows.push(rs.length));
		await new Promise((r) => setTimeout(r, 100));
		off();
		log.push("sub " + rows.join(","));
		log.push("pending " + db.sync.state.pending + " leader " + db.isLeader);
		await db.close();
		try { await db.get("t", r.id); } catch (e) { log.push("after close " + e.code); }
		} catch (e) { log.push("FAIL " + e.code + " " + e.message + " " + e.stack); }
		return {log};
	`, &res)
	t.Log(strings.Join(res.Log, "\n"))
}
