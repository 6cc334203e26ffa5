//go:build js && wasm

package jsbridge

import (
	"encoding/json"
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

// syncTarget is what db.sync.connect names.
type syncTarget struct {
	URL      string `json:"url"`
	Database string `json:"database"`
	Token    string `json:"token,omitempty"`
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

// syncStatePayload is SyncState of replica.d.ts.
type syncStatePayload struct {
	Status   string        `json:"status"`
	Error    *syncError    `json:"error,omitempty"`
	RetryAt  *int64        `json:"retryAt,omitempty"`
	Progress *syncProgress `json:"progress,omitempty"`
	Pending  int           `json:"pending"`
	Leader   bool          `json:"leader"`
}

type syncError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type syncProgress struct {
	Table       string `json:"table"`
	TablesDone  int    `json:"tablesDone"`
	TablesTotal int    `json:"tablesTotal"`
	RowsApplied int64  `json:"rowsApplied"`
	RowsTotal   int64  `json:"rowsTotal"`
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
			return jsonResult(t), d.syncStart()
		})
	case opSyncTarget:
		text := c.str(0)
		d.run(c, "db.sync", "", func() (result, error) {
			var t *syncTarget
			if err := json.Unmarshal([]byte(text), &t); err != nil {
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
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(opts), &keys); err != nil {
		return nil, argError("options must be an object {database, token?}")
	}
	t := &syncTarget{URL: url}
	for k, v := range keys {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, argError("options.%s must be a string, got %s", k, v)
		}
		switch k {
		case "database":
			t.Database = s
		case "token":
			t.Token = s
		default:
			return nil, argError("unknown option %q (known: database, token)", k)
		}
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

func (d *db) emitSyncState(st client.Status) {
	d.sy.mu.Lock()
	p := syncStatePayload{Status: st.State.String(), Pending: d.sy.pending, Leader: d.leader.Load()}
	d.sy.mu.Unlock()
	if st.Err != nil {
		p.Error = &syncError{Code: syncErrorCode(st.Err), Message: st.Err.Error()}
	}
	if !st.Retry.IsZero() {
		ms := st.Retry.UnixMilli()
		p.RetryAt = &ms
	}
	if s := st.Snapshot; s != nil && !s.Done {
		p.Progress = &syncProgress{Table: s.Table, TablesDone: s.TablesDone, TablesTotal: s.TablesTotal, RowsApplied: s.RowsApplied, RowsTotal: s.RowsTotal}
	}
	d.emit("syncState", jsonResult(p))
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
