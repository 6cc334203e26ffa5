//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

// TestUnknownTableEvent: synced changes this replica holds back reach
// db.on("unknownTable") — for a table the schema lacks without a reason,
// for a value that does not fit its column with the engine's reason — and
// the rest of the batch applies.
func TestUnknownTableEvent(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	events := jsv("[]")
	db.Call("on", "unknownTable", jsfn("s", "return (e) => s.push(e)").Invoke(events))

	site := model.SiteID{7, 7}
	base := model.HLC{Wall: uint64(time.Now().UnixMilli()), Site: site}
	cell := func(i int, table, pk, col string, v model.Value) model.Change {
		h := base
		h.OpSeq = uint32(i)
		return model.Change{Type: model.ColumnChange, Table: table, PK: []model.Value{model.Text(pk)}, Column: col, Value: v, HLC: h}
	}
	changes := []model.Change{
		cell(0, "items", "fits", "id", model.Text("fits")),
		cell(1, "items", "fits", "title", model.Text("kept")),
		cell(2, "items", "fits", "n", model.Text("not a number")),
		cell(3, "ghosts", "g", "id", model.Text("g")),
	}
	cs := model.ChangeSet{SiteID: site, TransactionID: base.TransactionID(), HLC: changes[len(changes)-1].HLC, Changes: changes}
	if _, err := d.eng.ApplyChanges([]model.ChangeSet{cs}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two unknownTable events", func() bool { return events.Length() == 2 })
	byTable := map[string]js.Value{}
	for i := 0; i < events.Length(); i++ {
		e := events.Index(i)
		byTable[e.Get("table").String()] = e
	}
	g, it := byTable["ghosts"], byTable["items"]
	if g.Type() != js.TypeObject || g.Get("reason").Type() != js.TypeUndefined || g.Get("changes").Int() != 1 {
		t.Errorf("event for the unknown table: %s", describe(g))
	}
	if it.Type() != js.TypeObject || it.Get("reason").Type() != js.TypeString || it.Get("reason").String() == "" || it.Get("changes").Int() != 1 {
		t.Errorf("event for the misfit: %s", describe(it))
	}
	if s := it.Get("site"); s.Type() != js.TypeString || s.String() != site.String() {
		t.Errorf("site %s, want %s", describe(s), site)
	}
	row := must(t, db.Call("get", "items", "fits"))
	if row.Get("title").String() != "kept" || row.Get("n").Type() != js.TypeNull {
		t.Errorf("row %s: the fitting facts apply, the misfit does not", describe(row))
	}
}
