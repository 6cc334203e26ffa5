//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// heldBatch applies to d, as from peer site, one ChangeSet of the cells
// (table, key, column, value), numbered in order.
func heldBatch(t *testing.T, d *db, site model.SiteID, cells ...heldCell) {
	t.Helper()
	base := model.HLC{Wall: uint64(time.Now().UnixMilli()), Site: site}
	var changes []model.Change
	for i, c := range cells {
		h := base
		h.OpSeq = uint32(i)
		changes = append(changes, model.Change{Type: model.ColumnChange, Table: c.table, PK: c.pk, Column: c.col, Value: c.v, HLC: h})
	}
	cs := model.ChangeSet{SiteID: site, TransactionID: base.TransactionID(), HLC: changes[len(changes)-1].HLC, Changes: changes}
	if _, err := d.eng.ApplyChanges([]model.ChangeSet{cs}); err != nil {
		t.Fatal(err)
	}
}

type heldCell struct {
	table string
	pk    []model.Value
	col   string
	v     model.Value
}

func textKey(s string) []model.Value { return []model.Value{model.Text(s)} }

// byTable indexes the event payloads in events (a JS array) by their table.
func byTable(events js.Value) map[string]js.Value {
	out := map[string]js.Value{}
	for i := 0; i < events.Length(); i++ {
		e := events.Index(i)
		out[e.Get("table").String()] = e
	}
	return out
}

// TestHeldEvent: synced changes this replica holds back reach db.on("held")
// once per table, with the reason the engine tells apart — a table the
// schema lacks, a column it does not define, a key that does not fit, a
// value of the wrong type — and a detail in words for all but the first;
// the rest of the batch applies. The event's older name, unknownTable,
// fires for the same batches with its older payload (reason: the detail,
// absent for an unknown table; disposition under its older name).
func TestHeldEvent(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	held, old := jsv("[]"), jsv("[]")
	db.Call("on", "held", jsfn("s", "return (e) => s.push(e)").Invoke(held))
	db.Call("on", "unknownTable", jsfn("s", "return (e) => s.push(e)").Invoke(old))

	site := model.SiteID{7, 7}
	heldBatch(t, d, site,
		heldCell{"items", textKey("fits"), "id", model.Text("fits")},
		heldCell{"items", textKey("fits"), "title", model.Text("kept")},
		heldCell{"items", textKey("fits"), "n", model.Text("not a number")},
		heldCell{"other", textKey("o"), "nosuch", model.Int(1)},
		heldCell{"pair", textKey("one value for a two-column key"), "v", model.Text("x")},
		heldCell{"ghosts", textKey("g"), "id", model.Text("g")},
	)
	waitFor(t, "four held and four unknownTable events", func() bool { return held.Length() == 4 && old.Length() == 4 })

	want := map[string]string{"items": "wrongType", "other": "unknownColumn", "pair": "keyMismatch", "ghosts": "unknownTable"}
	hs, us := byTable(held), byTable(old)
	for table, reason := range want {
		h, u := hs[table], us[table]
		if h.Type() != js.TypeObject || u.Type() != js.TypeObject {
			t.Errorf("%s: held %s, unknownTable %s", table, describe(h), describe(u))
			continue
		}
		if h.Get("reason").String() != reason || h.Get("policy").String() != "hold" || h.Get("changes").Int() != 1 ||
			h.Get("site").String() != site.String() || h.Get("latestHlc").Type() != js.TypeString {
			t.Errorf("%s: held event %s, want reason %s, policy hold, 1 change from %s", table, describe(h), reason, site)
		}
		detail := h.Get("detail")
		if (reason == "unknownTable") != (detail.Type() == js.TypeUndefined) || (reason != "unknownTable" && detail.String() == "") {
			t.Errorf("%s: detail %s (absent only for an unknown table)", table, describe(detail))
		}
		// The older payload: reason is the detail, disposition the
		// policy's older name, nothing of the new fields.
		if !same(u.Get("reason"), detail) || u.Get("disposition").String() != "quarantine" ||
			u.Get("changes").Int() != 1 || u.Get("site").String() != site.String() || !same(u.Get("latestHlc"), h.Get("latestHlc")) ||
			u.Get("policy").Type() != js.TypeUndefined || u.Get("detail").Type() != js.TypeUndefined {
			t.Errorf("%s: unknownTable event %s, held event %s", table, describe(u), describe(h))
		}
	}
	row := must(t, db.Call("get", "items", "fits"))
	if row.Get("title").String() != "kept" || row.Get("n").Type() != js.TypeNull {
		t.Errorf("row %s: the fitting facts apply, the value of the wrong type does not", describe(row))
	}
	if n := len(mustHeld(t, d)); n != 4 {
		t.Errorf("%d changes held, want 4", n)
	}
}

func mustHeld(t *testing.T, d *db) []engine.HeldChange {
	t.Helper()
	h, err := d.eng.HeldChanges("")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHeldChangesOption: the heldChanges option sets the policy, under its
// names or the older ones, and so does its older name
// unknownTableDisposition; a listener on unknownTable alone gets its
// events. Under "drop" the changes are reported but not kept, those for a
// known table that do not fit included.
func TestHeldChangesOption(t *testing.T) {
	for _, c := range []struct {
		option, value       string
		policy, disposition string
	}{
		{"heldChanges", "hold", "hold", "quarantine"},
		{"heldChanges", "drop", "drop", "ignore"},
		{"heldChanges", "hold-and-forward", "hold-and-forward", "store-and-forward"},
		{"heldChanges", "ignore", "drop", "ignore"},
		{"unknownTableDisposition", "quarantine", "hold", "quarantine"},
		{"unknownTableDisposition", "store-and-forward", "hold-and-forward", "store-and-forward"},
		{"unknownTableDisposition", "ignore", "drop", "ignore"},
		{"unknownTableDisposition", "drop", "drop", "ignore"},
	} {
		t.Run(c.option+"="+c.value, func(t *testing.T) {
			name := dbName(t)
			t.Cleanup(func() { deleteIDB(name) })
			db := must(t, js.Global().Get("Replica").Call("open", jsv("{name: "+jsString(name)+", schema: "+testSchema+", "+c.option+": "+jsString(c.value)+"}")))
			t.Cleanup(func() { await(db.Call("close")) })
			d := dbOf(t, db)
			old := jsv("[]")
			db.Call("on", "unknownTable", jsfn("s", "return (e) => s.push(e)").Invoke(old))
			heldBatch(t, d, model.SiteID{9},
				heldCell{"ghosts", textKey("g"), "id", model.Text("g")},
				heldCell{"items", textKey("i"), "n", model.Text("not a number")})
			waitFor(t, "two unknownTable events", func() bool { return old.Length() == 2 })
			for _, u := range byTable(old) {
				if u.Get("disposition").String() != c.disposition {
					t.Errorf("unknownTable event %s, want disposition %s", describe(u), c.disposition)
				}
			}
			held := jsv("[]")
			db.Call("on", "held", jsfn("s", "return (e) => s.push(e)").Invoke(held))
			heldBatch(t, d, model.SiteID{9, 1}, heldCell{"ghosts", textKey("g2"), "id", model.Text("g2")})
			waitFor(t, "a held event", func() bool { return held.Length() == 1 })
			if p := held.Index(0).Get("policy"); p.String() != c.policy {
				t.Errorf("held event %s, want policy %s", describe(held.Index(0)), c.policy)
			}
			wantKept := 3
			if c.policy == "drop" {
				wantKept = 0
			}
			kept := mustHeld(t, d)
			if len(kept) != wantKept {
				t.Errorf("%d changes kept, want %d", len(kept), wantKept)
			}
			// Stored as before: forwarded only under hold-and-forward and
			// only for the unknown table; the wrong type never replayed.
			for _, h := range kept {
				fwd := c.policy == "hold-and-forward" && h.Change.Table == "ghosts"
				if h.Forward != fwd || h.NeverReplayed != (h.Change.Table == "items") {
					t.Errorf("held %s: forward %v, does not fit %v", h.Change.Table, h.Forward, h.NeverReplayed)
				}
			}
		})
	}
}

// TestHeldChangesAndReplay: db.heldChanges counts the held changes per
// table and reason; when a peer's schema ChangeSet creates the table they
// were held for, they are replayed, heldReplayed fires with the number
// replayed and left, and the counts drop them.
func TestHeldChangesAndReplay(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	replayed := jsv("[]")
	db.Call("on", "heldReplayed", jsfn("s", "return (e) => s.push(e)").Invoke(replayed))
	peerSchema, err := wire.ParseSchema([]byte(`{"tables": {"ghosts": {"columns": {"id": "text", "v": "integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	peer, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &peerSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for _, id := range []string{"g1", "g2", "g3"} {
		if _, err := peer.Insert("ghosts", map[string]any{"id": id, "v": 1}); err != nil {
			t.Fatal(err)
		}
	}
	sets, err := peer.ChangesSince(model.HLC{}, 1000, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.eng.ApplyChanges(sets[1:]); err != nil { // the rows, not the schema
		t.Fatal(err)
	}
	heldBatch(t, d, model.SiteID{8}, heldCell{"items", textKey("i"), "nosuch", model.Int(1)})

	stats := must(t, db.Call("heldChanges"))
	if want := jsv(`{total: 7, tables: {ghosts: {unknownTable: 6, total: 6}, items: {unknownColumn: 1, total: 1}}}`); !same(stats, want) {
		t.Fatalf("heldChanges: %s, want %s", describe(stats), describe(want))
	}
	if _, err := d.eng.ApplyChanges(sets[:1]); err != nil { // the schema: ghosts exists now
		t.Fatal(err)
	}
	waitFor(t, "heldReplayed", func() bool { return replayed.Length() == 1 })
	if want := jsv(`{table: "ghosts", changes: 6, remaining: 0}`); !same(replayed.Index(0), want) {
		t.Fatalf("heldReplayed payload %s, want %s", describe(replayed.Index(0)), describe(want))
	}
	if n := must(t, db.Call("count", "ghosts")).Int(); n != 3 {
		t.Fatalf("%d ghosts after the replay, want 3", n)
	}
	if stats := must(t, db.Call("heldChanges")); !same(stats, jsv(`{total: 1, tables: {items: {unknownColumn: 1, total: 1}}}`)) {
		t.Fatalf("heldChanges after the replay: %s", describe(stats))
	}
}
