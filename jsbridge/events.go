//go:build js && wasm

package jsbridge

import (
	"syscall/js"

	"github.com/replica-sync/replica/engine"
)

// changeEvent is the payload of the change and remoteChange events
// (ChangeEvent in replica.d.ts).
type changeEvent struct {
	Tables        []string `json:"tables"`
	Remote        bool     `json:"remote"`
	FromOtherTab  bool     `json:"fromOtherTab"`
	TransactionID *string  `json:"transactionId"`
}

// unknownTableEvent is the payload of unknownTable (UnknownTableEvent).
type unknownTableEvent struct {
	Table       string `json:"table"`
	Disposition string `json:"disposition"`
	Changes     int    `json:"changes"`
	Site        string `json:"site"`
	LatestHLC   string `json:"latestHlc"`
}

// onEvent receives the engine's events, synchronously on the goroutine
// that committed. It only marks subscriptions dirty (the refresher re-runs
// them later) and hands the event to facade.js, which queues the listeners
// and, for this tab's commits, tells sibling tabs on the BroadcastChannel.
func (d *db) onEvent(ev engine.Event) {
	defer func() {
		if p := recover(); p != nil {
			_ = panicError("event delivery", p) // logged; the commit stands
		}
	}()
	switch ev.Type {
	case engine.LocalChange, engine.RemoteChange:
		d.subs.markDirty(ev.Tables)
		p := changeEvent{Tables: ev.Tables, Remote: ev.Type == engine.RemoteChange}
		if p.Tables == nil {
			p.Tables = []string{}
		}
		if ev.ChangeSet != nil {
			id := ev.ChangeSet.TransactionID
			p.TransactionID = &id
		}
		d.emit("change", jsonResult(p))
		if p.Remote {
			d.emit("remoteChange", jsonResult(p))
		}
	case engine.ConflictResolved:
		if c := ev.Conflict; c != nil {
			d.emit("conflict", conflictResult(c))
		}
	case engine.UnknownTableSeen:
		if u := ev.UnknownTable; u != nil {
			d.emit("unknownTable", jsonResult(unknownTableEvent{
				Table: u.Table, Disposition: u.Disposition.String(), Changes: u.Changes,
				Site: u.Site.String(), LatestHLC: u.LatestHLC.String(),
			}))
		}
	}
}

// conflictResult encodes a conflict as two holders: the event and its
// primary key (facade.js sets event.pk to the second).
func conflictResult(c *engine.Conflict) result {
	e := newEncoder()
	e.beginHolder(0, '{')
	field := func(first bool, name string) []byte {
		if !first {
			e.b = append(e.b, ',')
		}
		start := len(e.b)
		e.b = appendString(e.b, name)
		key := e.b[start:len(e.b):len(e.b)]
		e.b = append(e.b, ':')
		return key
	}
	field(true, "table")
	e.b = appendString(e.b, c.Table)
	field(false, "column")
	e.b = appendString(e.b, c.Column)
	e.value(field(false, "localValue"), c.LocalValue)
	field(false, "localHlc")
	e.b = appendString(e.b, c.LocalHLC.String())
	e.value(field(false, "remoteValue"), c.RemoteValue)
	field(false, "remoteHlc")
	e.b = appendString(e.b, c.RemoteHLC.String())
	field(false, "remoteWon")
	if c.RemoteWon {
		e.b = append(e.b, "true"...)
	} else {
		e.b = append(e.b, "false"...)
	}
	field(false, "winningHlc")
	e.b = appendString(e.b, c.WinningHLC.String())
	e.b = append(e.b, '}')
	e.list(1, c.PK)
	text, blobs := e.finish()
	return result{kind: kindRows, text: text, blobs: blobs}
}

// emit hands an event to facade.js: emit(handle, name, kind, text, blobs).
func (d *db) emit(name string, r result) {
	var blobs any
	if r.blobs != nil {
		a := jsUint8Array.New(len(r.blobs))
		js.CopyBytesToJS(a, r.blobs)
		blobs = a
	}
	d.b.emitFn.Invoke(d.h, name, r.kind, r.text, blobs)
}
