//go:build !js

package relay

import (
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// A forged push whose values do not fit the column types the relay knows
// from the database's migrations (text into a real column, a real into an
// integer one, an integer key for a text key) is refused with
// APPLY_CHANGES_REFUSED and nothing is stored or fanned out: before, the
// schema-less relay stored it as received and every browser took it.
func TestWrongTypePushRefused(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", localSets(t, rep)) // the DDL: cursor 1
	for i, mut := range []func(c *model.Change){
		func(c *model.Change) { c.Column, c.Value = "budget", model.Text("lots") },
		func(c *model.Change) { c.Column, c.Value = "pos", model.Real(1.5) },
		func(c *model.Change) { c.PK = []model.Value{model.Int(5)} },
	} {
		cs := insertStops(t, rep, "t", 1)[0]
		for j := range cs.Changes {
			if c := &cs.Changes[j]; c.Column == "name" {
				if i == 0 {
					c.Table = "trips"
				}
				mut(c)
			}
		}
		if i == 2 {
			for j := range cs.Changes {
				cs.Changes[j].PK = []model.Value{model.Int(5)}
			}
			cs.Changes = cs.Changes[1:] // not the id cell, which must equal the key
		}
		id := "bad"
		a.send(&wire.ApplyChanges{RequestID: id, ChangeSets: []model.ChangeSet{cs}})
		if e := a.expectError(wire.CodeApplyChangesRefused); e.RequestID != id {
			t.Fatalf("case %d: error %+v", i, *e)
		}
		if ch := a.getChanges(0); ch.Cursor != 1 {
			t.Fatalf("case %d: cursor %d after a refused push, want 1 (nothing stored)", i, ch.Cursor)
		}
	}
}
