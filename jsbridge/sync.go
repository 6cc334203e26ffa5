//go:build js && wasm

package jsbridge

import (
	"errors"
	"sync"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
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
// result, and between tabs) it is {url, database, token?}.
type syncTarget struct {
	URL      string
	Database string
	Token    string
}

func (t *syncTarget) result() result {
	var o jsonObject
	o.str("url", t.URL)
	o.str("database", t.Database)
	if t.Token != "" {
		o.str("token", t.Token)
	}
	return o.result()
}

// parseSyncTarget reads a target another tab sent: the JSON of a
// syncTarget, or null (nil: no target). Unknown members are ignored (a
// newer tab may send more).
func parseSyncTarget(text string) (*syncTarget, error) {
	r := &reader{b: []byte(text)}
	if r.peek() == 'n' {
		return nil, r.lit("null")
	}
	t := &syncTarget{}
	err := r.object(func(key string) (err error) {
		switch key {
		case "url":
			t.URL, err = r.str()
		case "database":
			t.Database, err = r.str()
		case "token":
			t.Token, err = r.str()
		default:
			_, err = r.skip()
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	return t, err
}

// syncer is a replica's sync side.
type syncer struct {
	mu       sync.Mutex // guards cl and pending, read from client events
	target   *syncTarget
	cl       *client.Client
	unsub    func()
	wantSnap bool
	pending  int
}

// sync serves db.sync.connect (a = url, b = options JSON), disconnect,
// requestSnapshot and syncTarget (a = target JSON or "null", from another
// tab; no promise).
func (d *db) sync(c *call) {
	switch c.op {
	case opSyncConnect:
		url, opts := c.str(0), c.str(1)
		d.run(c, "db.sync.connect", "", func() (result, error) {
			t, err := parseTarget(url, opts)
			if err != nil {
				return result{}, err
			}
			d.sy.target = t
			return t.result(), d.syncStart()
		})
	case opSyncTarget:
		text := c.str(0)
		d.run(c, "db.sync", "", func() (result, error) {
			t, err := parseSyncTarget(text)
			if err != nil {
				return result{}, err
			}
			if t != nil && !wire.ValidDatabaseID(t.Database) {
				return result{}, argError("invalid database id")
			}
			d.sy.target = t
			if t == nil {
				d.syncStop()
				return result{}, nil
			}
			return result{}, d.syncStart()
		})
	case opSyncDisconnect:
		d.run(c, "db.sync.disconnect", "", func() (result, error) {
			d.sy.target = nil
			d.syncStop()
			d.emitSyncState(client.Status{State: client.Disconnected})
			return result{kind: kindUndefined}, nil
		})
	case opSyncSnapshot:
		d.run(c, "db.sync.requestSnapshot", "", func() (result, error) {
			d.sy.mu.Lock()
			cl := d.sy.cl
			d.sy.wantSnap = cl == nil
			d.sy.mu.Unlock()
			if cl != nil {
				cl.RequestSnapshot()
			}
			return result{kind: kindUndefined}, nil
		})
	}
}

// parseTarget validates db.sync.connect's arguments.
func parseTarget(url, opts string) (*syncTarget, error) {
	if url == "" {
		return nil, argError("url must be a non-empty ws://, wss://, http:// or https:// URL")
	}
	t := &syncTarget{URL: url}
	r := &reader{b: []byte(opts)}
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
		if r.peek() != '"' {
			raw, err := r.skip()
			if err != nil {
				return err
			}
			return argError("options.%s must be a string, got %s", key, raw)
		}
		var err error
		*dst, err = r.str()
		return err
	})
	if err == nil {
		err = r.end()
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
func (d *db) syncStart() error {
	t := d.sy.target
	if t == nil || !d.leader.Load() {
		return nil
	}
	d.sy.mu.Lock()
	cl := d.sy.cl
	if cl == nil {
		cl = client.New(d.eng, client.Options{})
		d.sy.cl = cl
		d.sy.unsub = cl.Subscribe(d.onSyncEvent)
	}
	want := d.sy.wantSnap
	d.sy.wantSnap = false
	d.sy.mu.Unlock()
	if err := cl.Connect(t.URL, t.Database, t.Token); err != nil {
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
	d.sy.cl, d.sy.unsub = nil, nil
	d.sy.mu.Unlock()
	if cl != nil {
		_ = cl.Close()
		unsub()
	}
}

// leaderChanged runs on the worker after facade.js reported the lock.
func (d *db) leaderChanged(leader bool) {
	if leader {
		if err := d.syncStart(); err != nil {
			_ = panicError("connect on becoming leader", err)
		}
		return
	}
	d.syncStop()
}

// notifyOtherTabWrite tells the client that another tab committed.
func (d *db) notifyOtherTabWrite() {
	d.sy.mu.Lock()
	cl := d.sy.cl
	d.sy.mu.Unlock()
	if cl != nil {
		cl.Notify()
	}
}

// onSyncEvent receives the client's events (on the client's goroutine) and
// turns state changes into syncState events.
func (d *db) onSyncEvent(ev client.Event) {
	defer func() {
		if p := recover(); p != nil {
			_ = panicError("sync event", p)
		}
	}()
	switch ev.Type {
	case client.StateChanged, client.SnapshotProgressed, client.PushAcked:
	default:
		return
	}
	if ev.Type != client.SnapshotProgressed {
		d.sy.mu.Lock()
		cl := d.sy.cl
		d.sy.mu.Unlock()
		if cl != nil {
			if n, err := cl.Pending(); err == nil {
				d.sy.mu.Lock()
				d.sy.pending = n
				d.sy.mu.Unlock()
			}
		}
	}
	st := ev.Status
	if ev.Type == client.SnapshotProgressed {
		p := ev.Progress
		st.Snapshot = &p
	}
	d.emitSyncState(st)
}

// emitSyncState fires syncState with SyncState of replica.d.ts:
// {status, error?: {code, message}, retryAt?, progress?: {table,
// tablesDone, tablesTotal, rowsApplied, rowsTotal}, pending, leader}.
func (d *db) emitSyncState(st client.Status) {
	d.sy.mu.Lock()
	pending := d.sy.pending
	d.sy.mu.Unlock()
	var o jsonObject
	o.str("status", st.State.String())
	if st.Err != nil {
		var e jsonObject
		e.str("code", syncErrorCode(st.Err))
		e.str("message", st.Err.Error())
		o.raw("error", e.done())
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
	case errors.Is(err, engine.ErrClockDrift):
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
		}
	}
	return codeSyncFailed
}
