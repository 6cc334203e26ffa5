//go:build js && wasm

package jsbridge

import (
	"syscall/js"

	"github.com/replica-sync/replica/engine"
)

// changeResult is the payload of the change and remoteChange events
// (ChangeEvent in replica.d.ts): {tables, remote, fromOtherTab: false,
// transactionId, siteId}, the last two strings or null (no ChangeSet).
func changeResult(ev *engine.Event) result {
	var o jsonObject
	o.key("tables")
	o.b = append(o.b, '[')
	for i, t := range ev.Tables {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendString(o.b, t)
	}
	o.b = append(o.b, ']')
	o.bool("remote", ev.Type == engine.RemoteChange)
	o.bool("fromOtherTab", false)
	if ev.ChangeSet != nil {
		o.str("transactionId", ev.ChangeSet.TransactionID)
		o.str("siteId", ev.ChangeSet.SiteID.String())
	} else {
		o.raw("transactionId", "null")
		o.raw("siteId", "null")
	}
	return o.result()
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
			d.emit("change", changeResult(&ev))
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
	field(false, "localSiteId")
	e.b = appendString(e.b, c.LocalHLC.Site.String())
	e.value(field(false, "remoteValue"), c.RemoteValue)
	field(false, "remoteHlc")
	e.b = appendString(e.b, c.RemoteHLC.String())
	field(false, "remoteSiteId")
	e.b = appendString(e.b, c.RemoteHLC.Site.String())
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
