//go:build !js

package client

import (
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestSiblingCommitNotifiedLate: another engine over the same store (a
// browser tab that is not the sync leader) commits T2, then this engine
// commits T3, and the tab's Notify arrives only after T3's push was acked
// (BroadcastChannel is asynchronous). T2's HLC is below T3's, so a push
// built from this engine's own LocalChange events alone would carry T3,
// move the sent watermark past T2, and T2 would never be synced. The push
// reads the change log, which holds both in HLC order.
func TestSiblingCommitNotifiedLate(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	st := memkv.New(engine.Buckets...)
	db, err := engine.Open(st, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tab, err := engine.Open(st, engine.Options{Schema: notesSchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	insert(t, db, "seed", "x") // own facts: no bootstrap
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 0)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p)) // the migrations and seed
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	clk.Advance(time.Second) // quiet: the next change is pushed at once

	insert(t, tab, "t2", "from the tab") // its Notify is late
	insert(t, db, "t3", "from this engine")
	all := ownSets(t, db, model.HLC{})
	t2, t3 := all[len(all)-2], all[len(all)-1]
	if !t2.HLC.Less(t3.HLC) {
		t.Fatal("T2's HLC is not below T3's")
	}
	pushed := map[string]bool{}
	a := expect[*wire.ApplyChanges](t, p)
	for _, cs := range a.ChangeSets {
		pushed[cs.TransactionID] = true
	}
	p.ackPush(t, a)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	c.Notify() // late
	clk.Advance(time.Second)
	for _, m := range p.barrier(t) {
		if a, ok := m.(*wire.ApplyChanges); ok {
			for _, cs := range a.ChangeSets {
				pushed[cs.TransactionID] = true
			}
			p.ackPush(t, a)
		}
	}
	if !pushed[t2.TransactionID] || !pushed[t3.TransactionID] {
		t.Fatalf("pushed %v; want T2 %s and T3 %s", pushed, t2.TransactionID, t3.TransactionID)
	}
}
