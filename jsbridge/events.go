//go:build js && wasm

package jsbridge

import (
	"strconv"
	"syscall/js"
	"time"

	"github.com/replica-sync/replica/engine"
)

// changeResult is the payload of the change and remoteChange events
// (ChangeEvent in replica.d.ts): {tables, remote, fromOtherTab: false,
// transactionId, siteId (null without a ChangeSet), at (ms, now),
// changes: [{table, pk, columns, deleted, priorRow?}]}, encoded as holders
// (values of keys and prior rows need the fixes): holder 0 is the event,
// whose changes name their pk's holder (k) and prior row's (p, 0: none);
// facade.js puts them in place.
func (d *db) changeResult(ev *engine.Event) result {
	rows := ev.Rows
	if rows == nil {
		rows = engine.RowsOf(ev.ChangeSet)
	}
	e := newEncoder()
	e.beginHolder(0, '{')
	e.b = append(e.b, `"tables":[`...)
	for i, t := range ev.Tables {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, t)
	}
	e.b = append(e.b, `],"remote":`...)
	e.b = strconv.AppendBool(e.b, ev.Type == engine.RemoteChange)
	e.b = append(e.b, `,"fromOtherTab":false,"transactionId":`...)
	if ev.ChangeSet != nil {
		e.b = appendString(e.b, ev.ChangeSet.TransactionID)
		e.b = append(e.b, `,"siteId":`...)
		e.b = appendString(e.b, ev.ChangeSet.SiteID.String())
	} else {
		e.b = append(e.b, `null,"siteId":null`...)
	}
	e.b = append(e.b, `,"at":`...)
	e.b = strconv.AppendInt(e.b, time.Now().UnixMilli(), 10)
	e.b = append(e.b, `,"changes":[`...)
	next := 1
	for i, r := range rows {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, `{"table":`...)
		e.b = appendString(e.b, r.Table)
		e.b = append(e.b, `,"columns":[`...)
		for j, c := range r.Columns {
			if j > 0 {
				e.b = append(e.b, ',')
			}
			e.b = appendString(e.b, c)
		}
		e.b = append(e.b, `],"deleted":`...)
		e.b = strconv.AppendBool(e.b, r.Deleted)
		e.b = append(e.b, `,"k":`...)
		e.b = strconv.AppendInt(e.b, int64(next), 10)
		next++
		p := 0
		if r.Prior != nil {
			p = next
			next++
		}
		e.b = append(e.b, `,"p":`...)
		e.b = strconv.AppendInt(e.b, int64(p), 10)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, "]}"...)
	n := 1
	for _, r := range rows {
		e.list(n, r.PK)
		n++
		if r.Prior != nil {
			cols, _ := d.cachedColumns(r.Table)
			e.row(n, r.Prior, cols)
			n++
		}
	}
	text, blobs := e.finish()
	return result{kind: kindRows, text: text, blobs: blobs}
}

// heldResult is the payload of held (HeldEvent in replica.d.ts): {table,
// reason, detail (absent when empty), policy, changes, site, latestHlc}.
// facade.js derives from it the payload of unknownTable, the event's older
// name (UnknownTableEvent).
func heldResult(h *engine.HeldReport) result {
	var o jsonObject
	o.str("table", h.Table)
	o.str("reason", h.Reason.String())
	if h.Detail != "" {
		o.str("detail", h.Detail)
	}
	o.str("policy", h.Policy.String())
	o.int("changes", int64(h.Changes))
	o.str("site", h.Site.String())
	o.str("latestHlc", h.LatestHLC.String())
	return o.result()
}

// onEvent receives the engine's events, synchronously on the goroutine
// that committed. It only marks subscriptions dirty (the refresher re-runs
// them later), counts a local commit as unsent, and hands the event to
// facade.js — if it has listeners for it, or other tabs to tell of a
// commit (the listen mask) — which queues the listeners and, for this
// tab's commits, tells the other tabs on the BroadcastChannel.
func (d *db) onEvent(ev engine.Event) {
	defer func() {
		if p := recover(); p != nil {
			_ = panicError("event delivery", p) // logged; the commit stands
		}
	}()
	switch ev.Type {
	case engine.LocalChange, engine.RemoteChange:
		d.subs.markDirty(ev.Tables)
		if ev.Type == engine.LocalChange {
			d.pendingCommitted(1)
			if !d.wants(listenPeers) {
				d.noteUnannounced(ev.Tables)
			}
		}
		// One emit for both: the facade fires change, and remoteChange
		// for a remote one, and posts the notice to the other tabs. Not
		// even that when nobody listens and no other tab is open.
		if d.wants(listenChange | listenRemoteChange | listenPeers) {
			d.emit("change", d.changeResult(&ev))
		}
	case engine.ConflictResolved:
		if c := ev.Conflict; c != nil && d.wants(listenConflict) {
			d.emit("conflict", conflictResult(c))
		}
	case engine.ChangesHeld:
		if h := ev.Held; h != nil && d.wants(listenHeld) {
			d.emit("held", heldResult(h))
		}
	case engine.HeldReplayed:
		if r := ev.Replayed; r != nil && d.wants(listenHeldReplayed) {
			var o jsonObject
			o.str("table", r.Table)
			o.int("changes", int64(r.Changes))
			o.int("remaining", int64(r.Remaining))
			d.emit("heldReplayed", o.result())
		}
	}
}

// conflictResult encodes a conflict as two holders: the event and its
// primary key (facade.js sets event.pk to the second).
func conflictResult(c *engine.Conflict) result {
	ctx := engine.ConflictContext{Table: c.Table, PK: c.PK, Column: c.Column,
		LocalValue: c.LocalValue, LocalHLC: c.LocalHLC, RemoteValue: c.RemoteValue, RemoteHLC: c.RemoteHLC,
		HasRemotePrior: c.HasRemotePrior, RemotePriorValue: c.RemotePriorValue, RemotePriorHLC: c.RemotePriorHLC}
	return conflictHolders(&ctx, func(e *encoder, field func(string) []byte) {
		field("remoteWon")
		e.b = strconv.AppendBool(e.b, c.RemoteWon)
		field("winningHlc")
		e.b = appendString(e.b, c.WinningHLC.String())
	})
}

// conflictHolders encodes a conflict as two holders, the object and its
// primary key (facade.js sets obj.pk to the second): {table, column,
// localValue, localHlc, localSiteId, remoteValue, remoteHlc, remoteSiteId,
// what more writes, and remotePriorValue and remotePriorHlc when the
// remote write carried its before-image}. HLCs are in the form
// "wall.counter@site/opSeq". The conflict event (conflictResult) and a
// resolver's argument (resolverContext) share it.
func conflictHolders(c *engine.ConflictContext, more func(e *encoder, field func(string) []byte)) result {
	e := newEncoder()
	e.beginHolder(0, '{')
	first := true
	field := func(name string) []byte {
		if !first {
			e.b = append(e.b, ',')
		}
		first = false
		start := len(e.b)
		e.b = appendString(e.b, name)
		key := e.b[start:len(e.b):len(e.b)]
		e.b = append(e.b, ':')
		return key
	}
	field("table")
	e.b = appendString(e.b, c.Table)
	field("column")
	e.b = appendString(e.b, c.Column)
	e.value(field("localValue"), c.LocalValue)
	field("localHlc")
	e.b = appendString(e.b, c.LocalHLC.String())
	field("localSiteId")
	e.b = appendString(e.b, c.LocalHLC.Site.String())
	e.value(field("remoteValue"), c.RemoteValue)
	field("remoteHlc")
	e.b = appendString(e.b, c.RemoteHLC.String())
	field("remoteSiteId")
	e.b = appendString(e.b, c.RemoteHLC.Site.String())
	if more != nil {
		more(e, field)
	}
	if c.HasRemotePrior {
		e.value(field("remotePriorValue"), c.RemotePriorValue)
		field("remotePriorHlc")
		e.b = appendString(e.b, c.RemotePriorHLC.String())
	}
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
