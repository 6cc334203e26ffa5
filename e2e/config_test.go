//go:build !js

package e2e

import (
	"testing"
)

// TestBatchSizeOption: Replica.open's batchSize bounds the changes of each
// push (the sync client's apply_changes): 20 one-row transactions written
// offline reach the relay in at least 10 pushes from a replica opened
// with batchSize 6 (each transaction has 3 changes, so at most 2 fit),
// and in at most 2 with the default (1,000). Measured by the relay's
// apply count; both replicas end with every row on the relay.
func TestBatchSizeOption(t *testing.T) {
	r := startRelay(t)
	p := newBrowser(t, "").newDevice("A").open(r.URL + "?db=demo")
	p.waitStatus("synced", syncTimeout)

	applies := func() float64 { return r.metric(t, "replica_relay_apply_duration_seconds_count") }
	push := func(name, batch string) float64 {
		t.Helper()
		before := applies()
		p.eval(`
			const rdb = await Replica.open({name: `+jsString(name)+`, `+batch+` schema: {tables: {notes: {columns: {id: "text", body: "text", n: "integer"}}}}});
			for (let i = 0; i < 20; i++) await rdb.insert("notes", {id: "n" + i, body: "note " + i, n: i});
			await rdb.sync.connect(location.origin.replace("http", "ws") + "/sync", {database: `+jsString(name)+`});
			await wait("every push acknowledged", () => rdb.sync.state.status === "synced" && rdb.sync.state.pending === 0, 20000);
			window[`+jsString(name)+`] = rdb;
			return null;`, nil)
		return applies() - before
	}
	small := push("batch6", "batchSize: 6,")
	whole := push("batchdefault", "")
	if small < 10 {
		t.Errorf("batchSize 6: 20 transactions of 3 changes reached the relay in %v pushes, want at least 10", small)
	}
	if whole > 2 {
		t.Errorf("default batchSize: 20 transactions reached the relay in %v pushes, want at most 2", whole)
	}
	if got := r.metric(t, "replica_relay_changesets_stored_total"); got < 42 {
		t.Errorf("the relay stored %v ChangeSets, want at least 42 (20 transactions and a schema from each replica)", got)
	}
}
