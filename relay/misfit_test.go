//go:build !js

package relay

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// A forged push whose values do not fit the column types the relay knows
// from the database's migrations (text into a real column, a real into an
// integer one, an integer key for a text key) is refused with
// APPLY_CHANGES_REFUSED and nothing is stored or fanned out: before, the
// schema-less relay stored it as received and every browser took it.
func TestMisfitPushRefused(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", localSets(t, rep)) // the DDL: cursor 1
	for i, mut := range []func(c *engine.Change){
		func(c *engine.Change) { c.Column, c.Value = "budget", engine.Text("lots") },
		func(c *engine.Change) { c.Column, c.Value = "pos", engine.Real(1.5) },
		func(c *engine.Change) { c.PK = []engine.Value{engine.Int(5)} },
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
				cs.Changes[j].PK = []engine.Value{engine.Int(5)}
			}
			cs.Changes = cs.Changes[1:] // not the id cell, which must equal the key
		}
		id := "bad"
		a.send(&wire.ApplyChanges{RequestID: id, ChangeSets: []engine.ChangeSet{cs}})
		if e := a.expectError(wire.CodeApplyChangesRefused); e.RequestID != id {
			t.Fatalf("case %d: error %+v", i, *e)
		}
		if ch := a.getChanges(0); ch.Cursor != 1 {
			t.Fatalf("case %d: cursor %d after a refused push, want 1 (nothing stored)", i, ch.Cursor)
		}
	}
}
