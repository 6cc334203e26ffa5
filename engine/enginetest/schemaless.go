package enginetest

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// A schema-less replica (the relay's mode) accepts every table, keeps values
// exactly as received, and passes them on; replicas with a schema normalize
// them on arrival.
func (s *suite) testSchemaLess(t *testing.T) {
	relay := s.newReplica(t, "relay", nil, nil)
	a := s.newReplica(t, "a", TripsSchema(), nil)
	peer := engine.SiteID{8}
	h := engine.HLC{Wall: T0, Site: peer}
	cs := engine.ChangeSet{SiteID: peer, TransactionID: h.TransactionID()}
	add := func(col string, v engine.Value) {
		hh := h
		hh.OpSeq = uint32(len(cs.Changes))
		cs.Changes = append(cs.Changes, engine.Change{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("r")}, Column: col, Value: v, HLC: hh})
		cs.HLC = hh
	}
	add("title", engine.Text("t"))
	add("budget", engine.Int(3)) // an integral real, as JSON may carry it
	add("anything", engine.Text("x"))
	cs2 := cs
	cs2.Changes = nil
	h2 := engine.HLC{Wall: T0, Site: peer, Counter: 1}
	cs2.TransactionID = h2.TransactionID()
	cs2.HLC = h2
	cs2.Changes = []engine.Change{{Type: engine.ColumnChange, Table: "elsewhere", PK: []engine.Value{engine.Int(1)}, Column: "v", Value: engine.Bool(true), HLC: h2}}
	res := must(relay.ApplyChanges([]engine.ChangeSet{cs, cs2}))(t)
	if res.Applied != 4 || res.Held != 0 {
		t.Fatalf("schema-less apply: %+v", res)
	}
	row := must(relay.Get("trips", engine.Key{"r"}))(t)
	if b := row["budget"]; b.Kind() != engine.KindInteger {
		t.Fatalf("relay stored budget as %s, want it as received (integer)", b.Kind())
	}
	if must(relay.Get("elsewhere", engine.Key{1}))(t)["v"].Bool() != true {
		t.Fatal("relay lost a table nobody declared")
	}
	// Passed on, the value is normalized by the receiver's schema.
	pull(t, a, relay)
	if b := must(a.Get("trips", engine.Key{"r"}))(t)["budget"]; !b.Equal(engine.Real(3)) {
		t.Fatalf("receiver stored budget %s (%s), want real 3", b, b.Kind())
	}
	if _, err := relay.Insert("trips", map[string]any{"title": "x"}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("local write on a schema-less replica: %v", err)
	}
}
