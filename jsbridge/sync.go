//go:build js && wasm

package jsbridge

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Syncing (db.sync). Only the leader tab (the holder of the Web Locks lock
// "replica-leader:"+name) runs a client.Client; every tab records the
// target (url, database, token) given to db.sync.connect in any tab —
// facade.js shares it over the BroadcastChannel, and tells a tab that opens
// later. When a tab becomes leader with a target, it connects; the client
// resumes from the cursors and watermarks persisted in the replica, which
// all tabs share. Other tabs' commits reach the leader as BroadcastChannel
// notices, and the leader's client.Notify pushes them. The leader's
// syncState events are forwarded to the other tabs by facade.js.
//
// Everything here runs on the replica's worker, so connect, disconnect, a
// leadership change and close are serialized; the client's own goroutines
// deliver its events.

// syncTarget is what db.sync.connect names. As JSON (db.sync.connect's
// result, and between tabs) it is {url, database, token?, keyIds?}; the
// keys of a sealed database travel beside it as SealKeys (sealkeys.go),
// never in the JSON.
type syncTarget struct {
	URL      string
	Database string
	Token    string
	// Keys, when not empty, make the database sealed: Keys[0] seals and
	// every key opens (older keys after a rotation).
	Keys []seal.WebKey
}

func (t *syncTarget) result() result {
	var o jsonObject
	o.str("url", t.URL)
	o.str("database", t.Database)
	if t.Token != "" {
		o.str("token", t.Token)
	}
	if len(t.Keys) > 0 {
		ids := make([]byte, 0, 20*len(t.Keys))
		ids = append(ids, '[')
		for i, k := range t.Keys {
			if i > 0 {
				ids = append(ids, ',')
			}
			ids = appendString(ids, k.ID().String())
		}
		o.raw("keyIds", string(append(ids, ']')))
	}
	return o.result()
}

// parseSyncTarget reads a target another tab sent: the JSON of a
// syncTarget, or null (nil: no target). Unknown members are ignored (a
// newer tab may send more).
func parseSyncTarget(text string) (*syncTarget, error) {
	r := newReader([]byte(text), nil)
	if r.Peek() == 'n' {
		return nil, r.null()
	}
	t := &syncTarget{}
	err := r.object(func(key string) (err error) {
		switch key {
		case "url":
			t.URL, err = r.Str()
		case "database":
			t.Database, err = r.Str()
		case "token":
			t.Token, err = r.Str()
		default:
			_, err = r.skip()
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	return t, err
}

// syncer is a replica's sync side.
type syncer struct {
	mu       sync.Mutex // guards what follows target, read from client events
	target   *syncTarget
	cl       *client.Client
	clKeys   []seal.WebKey // the keys cl seals and opens with; nil: cl syncs a plain database
	unsub    func()
	wantSnap bool

	// The unsent count (SyncState.pending), kept by the leader: counted
	// from the change log's keys (client.PendingCount) when it may have
	// shrunk or is unknown — on becoming leader, a new target, an ack, a
	// state change — and incremented by one per local commit, this tab's
	// or another's, in between. last is the target counted against (the
	// last one, kept after a disconnect: offline writes count against the
	// relay last synced with).
	last      *syncTarget
	status    client.Status // the last state emitted
	pending   int
	pendKnown bool
	commits   uint64 // local commits seen, to tell whether one raced a count
	pcRunning bool   // a count runs
	pcAgain   bool   // count again once it ends
	pcStop    bool   // closing: no more counts
	pcWG      sync.WaitGroup
	emitMu    sync.Mutex // serializes syncState emissions

	issue *syncIssue // SyncState.lastError; nil: none
}

// syncIssue is SyncState.lastError: the most recent transient error the
// client reported (client.ErrorReported: the session went on), kept until
// its condition clears (see clearIssue).
type syncIssue struct {
	code, msg string
	at        time.Time
	// push: the error was a push's (the relay failed it, or it could not
	// be sent); only an acknowledged push clears it. Others clear also
	// when changes from the relay apply, or the session reaches synced.
	push bool
	// lasting: a transaction the client gave up on (client.ErrRefused:
	// refused alone by the relay, too large, not encodable); it will not
	// sync, so no success clears it: only a newer error, or syncing
	// stopping or changing target (dropIssue).
	lasting bool
}

// Codes of SyncState.lastError only (not ErrorCode: nothing rejects with
// them).
const (
	codeSyncStateReset = "SYNC_STATE_RESET" // client.ErrSyncStateReset: stored sync state did not decode; discarded and rebuilt
	codeRelayDiverged  = "RELAY_DIVERGED"   // client.ErrRelayDiverged: the relay's log is not a continuation (restored, truncated, replaced); repaired
)

// issueFor describes a transient error the client reported; nil for
// reports that are not failures (SNAPSHOT_REQUIRED: the client
// bootstraps, as designed).
func issueFor(err error, now time.Time) *syncIssue {
	is := &syncIssue{code: "SYNC_ERROR", msg: err.Error(), at: now, lasting: errors.Is(err, client.ErrRefused)}
	if we := client.RelayError(err); we != nil {
		if we.Code == wire.CodeSnapshotRequired {
			return nil
		}
		if we.Code != "" {
			is.code = string(we.Code)
		}
		switch we.Code {
		case wire.CodeApplyChangesError, wire.CodeApplyChangesRefused, wire.CodeMessageTooLarge:
			is.push = true
		}
		is.push = is.push || we.RequestID != ""
		return is
	}
	switch {
	case errors.Is(err, client.ErrSyncStateReset):
		is.code = codeSyncStateReset
	case errors.Is(err, client.ErrRelayDiverged):
		is.code = codeRelayDiverged
	case errors.Is(err, seal.ErrDecryptFailed):
		is.code = codeDecryptFailed
	case errors.Is(err, client.ErrCheckpointRefused):
		is.code = codeCheckpointRefused
	case errors.Is(err, seal.ErrEnvelopeInvalid):
		// The ChangeSet is refused for good (the cursor moves past it):
		// lasting, as a transaction given up on.
		is.code, is.lasting = codeEnvelopeInvalid, true
	case errors.Is(err, client.ErrTooLarge):
		is.code, is.push = "TRANSACTION_TOO_LARGE", true
	case errors.Is(err, model.ErrClockDrift):
		is.code = codeClockDrift
	case errors.Is(err, kv.ErrQuotaExceeded):
		is.code = codeQuota
	}
	is.push = is.push || is.lasting
	return is
}

// setIssue records a transient error as SyncState.lastError and emits the
// state.
func (d *db) setIssue(err error) {
	is := issueFor(err, time.Now())
	if is == nil {
		return
	}
	d.sy.mu.Lock()
	d.sy.issue = is
	d.sy.mu.Unlock()
	d.emitSyncState(nil)
}

// clearIssue forgets SyncState.lastError when its condition cleared: any
// but a lasting one after an acknowledged push (ack true), one that is not
// a push's after changes from the relay applied or the session reached
// synced (ack false). It reports whether it cleared one (the caller emits
// the state).
func (d *db) clearIssue(ack bool) bool {
	d.sy.mu.Lock()
	defer d.sy.mu.Unlock()
	if is := d.sy.issue; is == nil || is.lasting || (is.push && !ack) {
		return false
	}
	d.sy.issue = nil
	return true
}

// dropIssue forgets SyncState.lastError (syncing stopped, or its target
// changed).
func (d *db) dropIssue() {
	d.sy.mu.Lock()
	d.sy.issue = nil
	d.sy.mu.Unlock()
}

// syncConnect serves db.sync.connect: a = url, b = options JSON (without
// key and oldKeys), c = the SealKeys of a sealed database (key, then
// oldKeys) or undefined.
func (d *db) syncConnect(c *call) (result, error) {
	t, err := parseTarget(c.str(0), c.str(1))
	if err != nil {
		return result{}, err
	}
	if t.Keys, err = parseSealKeys(c.value(2), t.Database); err != nil {
		return result{}, err
	}
	d.targetChanging(t)
	d.sy.target = t
	d.setPendingTarget(t)
	return t.result(), d.syncStart()
}

// syncTarget serves another tab's sync target: a = target JSON or "null",
// b = its SealKeys or undefined (no promise).
func (d *db) syncTarget(c *call) (result, error) {
	t, err := parseSyncTarget(c.str(0))
	if err != nil {
		return result{}, err
	}
	if t != nil && !wire.ValidDatabaseID(t.Database) {
		return result{}, argError("invalid database id")
	}
	if t != nil {
		if t.Keys, err = parseSealKeys(c.value(1), t.Database); err != nil {
			return result{}, err
		}
	}
	d.targetChanging(t)
	d.sy.target = t
	if t == nil {
		d.syncStop()
		return result{}, nil
	}
	d.setPendingTarget(t)
	return result{}, d.syncStart()
}

// syncDisconnect serves db.sync.disconnect.
func (d *db) syncDisconnect(*call) (result, error) {
	d.sy.target = nil
	d.syncStop()
	d.emitSyncState(&client.Status{State: client.Disconnected})
	return result{kind: kindUndefined}, nil
}

// syncSnapshot serves db.sync.requestSnapshot.
func (d *db) syncSnapshot(*call) (result, error) {
	d.sy.mu.Lock()
	cl := d.sy.cl
	d.sy.wantSnap = cl == nil
	d.sy.mu.Unlock()
	if cl != nil {
		cl.RequestSnapshot()
	}
	return result{kind: kindUndefined}, nil
}

// targetChanging drops SyncState.lastError when the sync target becomes
// t and is another relay or database (the error was the old one's). Runs
// on the worker, before d.sy.target is set.
func (d *db) targetChanging(t *syncTarget) {
	if o := d.sy.target; o == nil || t == nil || o.URL != t.URL || o.Database != t.Database {
		d.dropIssue()
	}
}

// parseTarget validates db.sync.connect's arguments.
func parseTarget(url, opts string) (*syncTarget, error) {
	if url == "" {
		return nil, argError("url must be a non-empty ws://, wss://, http:// or https:// URL")
	}
	for _, u := range strings.Fields(url) {
		if err := client.CheckRelayURL(u); err != nil {
			return nil, argError("%v", err)
		}
	}
	t := &syncTarget{URL: url}
	r := newReader([]byte(opts), nil)
	err := r.object(func(key string) error {
		var dst *string
		switch key {
		case "database":
			dst = &t.Database
		case "token":
			dst = &t.Token
		default:
			return argError("unknown option %q (known: database, token)", key)
		}
		if r.Peek() != '"' {
			raw, err := r.skip()
			if err != nil {
				return err
			}
			return argError("options.%s must be a string, got %s", key, raw)
		}
		var err error
		*dst, err = r.Str()
		return err
	})
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, errSyntax) {
		return nil, argError("options must be an object {database, token?}")
	}
	if err != nil {
		return nil, err
	}
	if !wire.ValidDatabaseID(t.Database) {
		return nil, argError("options.database %q is not a valid database id (1 to %d of A-Z a-z 0-9 _ . : -)", t.Database, wire.MaxDatabaseIDLength)
	}
	return t, nil
}

// syncStart connects when this tab leads and has a target (replacing the
// previous connection); otherwise it does nothing. Runs on the worker.
//
// A target with keys (a sealed database) needs a client made with a
// Sealer, one without keys a plain client: a client of the other mode is
// closed and replaced. New keys for a sealed client (another current key,
// older keys added or dropped) are given with SetSealer, which reconnects
// so that envelopes held for want of a key (DECRYPT_FAILED) are pulled
// again; the same keys leave the connection alone.
func (d *db) syncStart() error {
	t := d.sy.target
	if t == nil || !d.leader.Load() {
		return nil
	}
	sealed := len(t.Keys) > 0
	var ring seal.Sealer
	if sealed {
		var err error
		if ring, err = keyring(t.Keys); err != nil {
			return argError("%v", err)
		}
	}
	d.sy.mu.Lock()
	if cl := d.sy.cl; cl != nil && (d.sy.clKeys != nil) != sealed {
		unsub := d.sy.unsub
		d.sy.cl, d.sy.unsub, d.sy.clKeys = nil, nil, nil
		d.sy.mu.Unlock()
		_ = cl.Close()
		unsub()
		d.sy.mu.Lock()
	}
	cl := d.sy.cl
	if cl == nil {
		cl = client.New(d.eng, client.Options{Sealer: ring, PushLimit: d.batch})
		d.sy.cl, d.sy.clKeys = cl, t.Keys
		d.sy.unsub = cl.Subscribe(d.onSyncEvent)
	} else if sealed && !sameKeys(d.sy.clKeys, t.Keys) {
		d.sy.clKeys = t.Keys
		if err := cl.SetSealer(ring); err != nil {
			d.sy.mu.Unlock()
			return argError("%v", err)
		}
	}
	want := d.sy.wantSnap
	d.sy.wantSnap = false
	d.sy.mu.Unlock()
	if err := cl.ConnectAny(strings.Fields(t.URL), t.Database, t.Token); err != nil {
		return argError("%v", err)
	}
	if want {
		cl.RequestSnapshot()
	}
	return nil
}

// syncStop closes the client, if any. Runs on the worker (or at close).
func (d *db) syncStop() {
	d.sy.mu.Lock()
	cl, unsub := d.sy.cl, d.sy.unsub
	d.sy.cl, d.sy.unsub, d.sy.clKeys = nil, nil, nil
	d.sy.mu.Unlock()
	if cl != nil {
		_ = cl.Close()
		unsub()
	}
	d.dropIssue()
}

// leaderChanged runs on the worker after facade.js reported the lock.
func (d *db) leaderChanged(leader bool) {
	if leader {
		d.startPruning()
		d.sy.mu.Lock()
		d.sy.pendKnown = false
		d.sy.mu.Unlock()
		d.recountPending()
		if err := d.syncStart(); err != nil {
			_ = panicError("connect on becoming leader", err)
		}
		return
	}
	d.stopPruning(false)
	d.syncStop()
}

// notifyOtherTabWrite tells the client that another tab committed (n
// transactions).
func (d *db) notifyOtherTabWrite(n int) {
	d.sy.mu.Lock()
	cl := d.sy.cl
	d.sy.mu.Unlock()
	if cl != nil {
		cl.Notify()
	}
	d.pendingCommitted(n)
}

// peerJoined: another tab made itself known. Its commits made before it
// knew of this one are the client's to push (it announces them too, with
// their number, which the count adds: see announce).
func (d *db) peerJoined() {
	if !d.leader.Load() {
		return
	}
	d.sy.mu.Lock()
	cl := d.sy.cl
	d.sy.mu.Unlock()
	if cl != nil {
		cl.Notify()
	}
}

// onSyncEvent receives the client's events (on the client's goroutine) and
// turns state changes into syncState events. An ack, and a new state (a
// handshake loads the sent watermark), have the unsent count recounted; a
// changed count is emitted again. A transient error becomes
// SyncState.lastError (emitted at once), cleared by an ack, applied
// changes or reaching synced (see clearIssue).
func (d *db) onSyncEvent(ev client.Event) {
	defer func() {
		if p := recover(); p != nil {
			_ = panicError("sync event", p)
		}
	}()
	switch ev.Type {
	case client.ErrorReported:
		if ev.Err != nil {
			d.setIssue(ev.Err)
		}
		d.recountPending() // a refused push may have been given up
	case client.PushAcked:
		if d.clearIssue(true) {
			d.emitSyncState(nil)
		}
		d.recountPending()
	case client.ChangesApplied:
		if d.clearIssue(false) {
			d.emitSyncState(nil)
		}
	case client.StateChanged:
		if ev.Status.State == client.Synced {
			d.clearIssue(false)
		}
		d.emitSyncState(&ev.Status)
		d.recountPending()
	case client.SnapshotProgressed:
		st := ev.Status
		p := ev.Progress
		st.Snapshot = &p
		d.emitSyncState(&st)
	}
}

// setPendingTarget records the target the unsent count is counted against
// and, when it changed, has the leader count again.
func (d *db) setPendingTarget(t *syncTarget) {
	d.sy.mu.Lock()
	same := d.sy.last != nil && d.sy.last.URL == t.URL && d.sy.last.Database == t.Database
	d.sy.last = t
	if !same {
		d.sy.pendKnown = false
	}
	d.sy.mu.Unlock()
	if !same {
		d.recountPending()
	}
}

// pendingNow returns the unsent count (the facade's db.sync.state getter
// in the leader tab asks for it synchronously).
func (d *db) pendingNow() int {
	d.sy.mu.Lock()
	defer d.sy.mu.Unlock()
	return d.sy.pending
}

// pendingCommitted counts one local commit (this tab's or another's) in
// the leader's unsent count, at no cost when the count is known; otherwise
// a count runs (or, if one runs, it sees the commit).
func (d *db) pendingCommitted(n int) {
	if !d.leader.Load() {
		return
	}
	d.sy.mu.Lock()
	d.sy.commits += uint64(n)
	if d.sy.pcRunning {
		d.sy.mu.Unlock()
		return
	}
	if !d.sy.pendKnown {
		d.sy.mu.Unlock()
		d.recountPending()
		return
	}
	d.sy.pending += n
	d.sy.mu.Unlock()
	d.pendingChanged()
}

// recountPending has the unsent count counted on a goroutine of its own
// (one at a time; a request while one runs makes it count again).
func (d *db) recountPending() {
	if !d.leader.Load() {
		return
	}
	d.sy.mu.Lock()
	defer d.sy.mu.Unlock()
	if d.sy.pcStop {
		return
	}
	if d.sy.pcRunning {
		d.sy.pcAgain = true
		return
	}
	d.sy.pcRunning = true
	d.sy.pcWG.Add(1)
	go d.countPending()
}

// countPending counts the unsent transactions from the change log's keys.
// A commit that lands during a count may or may not be in it: the count
// is repeated once; if commits still raced it, those are added (the next
// count, at the next ack or state change, corrects a double count), so a
// stream of commits never keeps it counting.
func (d *db) countPending() {
	defer d.sy.pcWG.Done()
	defer func() {
		if p := recover(); p != nil {
			_ = panicError("counting unsent changes", p)
			d.sy.mu.Lock()
			d.sy.pcRunning = false
			d.sy.mu.Unlock()
		}
	}()
	for try := 0; ; try++ {
		d.sy.mu.Lock()
		d.sy.pcAgain = false
		seq := d.sy.commits
		cl, t := d.sy.cl, d.sy.last
		d.sy.mu.Unlock()
		var n int
		var err error
		switch {
		case cl != nil:
			n, err = cl.PendingCount()
		case t != nil:
			n, err = client.PendingCount(d.eng, firstURL(t.URL), t.Database)
		default:
			n, err = client.PendingCount(d.eng, "", "")
		}
		d.sy.mu.Lock()
		if err == nil && (d.sy.pcAgain || (d.sy.commits != seq && try == 0)) && !d.sy.pcStop {
			d.sy.mu.Unlock()
			continue
		}
		d.sy.pcRunning = false
		if err != nil || d.sy.pcStop {
			d.sy.mu.Unlock()
			return
		}
		n += int(d.sy.commits - seq)
		changed := !d.sy.pendKnown || d.sy.pending != n
		d.sy.pending, d.sy.pendKnown = n, true
		d.sy.mu.Unlock()
		if changed {
			d.pendingChanged()
			d.subs.markSystem() // $pending may have changed
		}
		return
	}
}

// stopPendingCount ends counting (at close) and waits for a count that
// runs.
func (d *db) stopPendingCount() {
	d.sy.mu.Lock()
	d.sy.pcStop = true
	d.sy.mu.Unlock()
	d.sy.pcWG.Wait()
}

// pendingChanged emits the leader's sync state again with the new count,
// when a syncState listener or another tab (which shows the leader's
// state) wants it; db.sync.state's getter asks Go for the count anyway.
func (d *db) pendingChanged() {
	if !d.leader.Load() || !d.wants(listenSyncState|listenPeers) {
		return
	}
	d.emitSyncState(nil)
}

// emitSyncState fires syncState with SyncState of replica.d.ts:
// {status, error?: {code, message}, lastError?: {code, message, at},
// retryAt?, progress?: {table, tablesDone, tablesTotal, rowsApplied,
// rowsTotal}, pending, leader},
// for the new state ns (nil: the last one again, with the current count).
// Emissions are serialized, each with the latest state and count, so a
// count emitted late never brings back an older state.
func (d *db) emitSyncState(ns *client.Status) {
	d.sy.emitMu.Lock()
	defer d.sy.emitMu.Unlock()
	d.sy.mu.Lock()
	if ns != nil {
		d.sy.status = *ns
	}
	st, pending, issue := d.sy.status, d.sy.pending, d.sy.issue
	d.sy.mu.Unlock()
	var o jsonObject
	o.str("status", st.State.String())
	if st.Err != nil {
		var e jsonObject
		e.str("code", syncErrorCode(st.Err))
		e.str("message", st.Err.Error())
		o.raw("error", e.done())
	}
	if issue != nil {
		var e jsonObject
		e.str("code", issue.code)
		e.str("message", issue.msg)
		e.int("at", issue.at.UnixMilli())
		o.raw("lastError", e.done())
	}
	if !st.Retry.IsZero() {
		o.int("retryAt", st.Retry.UnixMilli())
	}
	if s := st.Snapshot; s != nil && !s.Done {
		var p jsonObject
		p.str("table", s.Table)
		p.int("tablesDone", int64(s.TablesDone))
		p.int("tablesTotal", int64(s.TablesTotal))
		p.int("rowsApplied", s.RowsApplied)
		p.int("rowsTotal", s.RowsTotal)
		o.raw("progress", p.done())
	}
	o.int("pending", int64(pending))
	o.bool("leader", d.leader.Load())
	d.emit("syncState", o.result())
}

// syncErrorCode maps a sync client error to a JS error code.
func syncErrorCode(err error) string {
	switch {
	case errors.Is(err, client.ErrProtocolVersion):
		return codeProtocolVersion
	case errors.Is(err, model.ErrClockDrift):
		return codeClockDrift
	case errors.Is(err, engine.ErrClosed):
		return codeClosed
	}
	if we := client.RelayError(err); we != nil {
		switch string(we.Code) {
		case codeProtocolVersion:
			return codeProtocolVersion
		case codeAuthFailed:
			return codeAuthFailed
		case codeSealedMismatch:
			return codeSealedMismatch
		}
	}
	return codeSyncFailed
}

// firstURL returns the first of a target's space-separated relay URLs (the
// one the client keeps its state under: client.ConnectAny).
func firstURL(urls string) string {
	u, _, _ := strings.Cut(strings.TrimSpace(urls), " ")
	return u
}

// pushedTargetOp is db.sync.pushed's first step: the base HLC (wire form,
// a JSON string) of the newest transaction this replica wrote
// (engine.LastLocalTransaction), or null when the sync target's relay has
// been sent everything already (client.Pushed), so the promise resolves at
// once. Runs on the worker, in any tab: the sent watermark is read from
// the shared store.
func (d *db) pushedTargetOp(_ *call) (result, error) {
	h, ok, err := d.eng.LastLocalTransaction()
	if err != nil {
		return result{}, err
	}
	if ok {
		done, err := d.pushedUpTo(h)
		if err != nil {
			return result{}, err
		}
		ok = !done
	}
	if !ok {
		return result{kind: kindJSON, text: "null"}, nil
	}
	return result{kind: kindJSON, text: string(appendString(nil, wire.FormatHLC(h)))}, nil
}

// pushedCheckOp answers, for a = a JSON array of pushedTargetOp's HLCs,
// a JSON array of booleans: whether the sync target's relay has been sent
// everything up to each. facade.js asks whenever the sync state changes
// (an acknowledgment moves the pending count) while db.sync.pushed
// promises wait, and every second besides.
func (d *db) pushedCheckOp(c *call) (result, error) {
	var targets []string
	r := newReader([]byte(c.str(0)), nil)
	err := r.Elements(func(int) error {
		s, err := r.Str()
		targets = append(targets, s)
		return err
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return result{}, argError("pushed: targets: %v", err)
	}
	b := []byte{'['}
	for i, s := range targets {
		h, err := wire.ParseHLC(s)
		if err != nil {
			return result{}, argError("pushed: target %q: %v", s, err)
		}
		done, err := d.pushedUpTo(h)
		if err != nil {
			return result{}, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendBool(b, done)
	}
	b = append(b, ']')
	return result{kind: kindJSON, text: string(b)}, nil
}

// pushedUpTo reports whether the sync target's relay (its first URL, under
// which the client stores what it keeps per relay) has been sent every
// local transaction up to base h; false without a target.
func (d *db) pushedUpTo(h model.HLC) (bool, error) {
	url, id := "", ""
	if t := d.sy.target; t != nil {
		url, id = firstURL(t.URL), t.Database
	}
	return client.Pushed(d.eng, url, id, h)
}

// withPending sets q.PendingAbove for a query with system columns: the
// sent watermark stored for the last sync target (client.SentWatermark),
// the one the unsent count is counted against, so $pending and
// db.sync.state.pending agree; the zero HLC (every own write pending)
// before any target.
func (d *db) withPending(q engine.Query) (engine.Query, error) {
	if !q.System || q.Deleted {
		return q, nil
	}
	d.sy.mu.Lock()
	t := d.sy.last
	d.sy.mu.Unlock()
	url, id := "", ""
	if t != nil {
		url, id = firstURL(t.URL), t.Database
	}
	wm, err := client.SentWatermark(d.eng, url, id)
	q.PendingAbove = &wm
	return q, err
}
