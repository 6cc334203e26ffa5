package client

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// State is where the client's connection stands (docs/design.md §
// Client behaviour).
type State int

const (
	// Disconnected: no socket. Either Connect was never called (or
	// Disconnect was), or the client waits to reconnect (Status.Retry is
	// then set, and Status.Err says why the last session ended).
	Disconnected State = iota
	// Connecting: dialing the relay.
	Connecting
	// Syncing: the socket is open; handshake, snapshot bootstrap and the
	// first pull are under way.
	Syncing
	// Synced: caught up with the relay (the first pull of the session
	// returned more = false) and no request failing; live updates flow
	// and local changes are pushed. It stays Synced across pushes, acks
	// and later pulls, but goes back to Syncing while a pull or a push
	// fails and waits for its retry (see "States" in the package
	// documentation): changes from the relay this replica cannot apply
	// (model.ErrClockDrift: this device's clock is behind), a push the
	// relay refuses for a reason that may pass (CLOCK_DRIFT: this
	// device's clock is ahead; APPLY_CHANGES_ERROR), a reply that breaks
	// the protocol (ErrProtocol). It never reads Synced while pushes are
	// being refused: after a failed push, in this session or an earlier
	// one, it is Synced again only once a push is acknowledged.
	Synced
	// Error: a fatal error (Status.Err) stopped the client; it will not
	// reconnect until Connect is called again.
	Error
)

func (s State) String() string {
	switch s {
	case Disconnected:
		return "disconnected"
	case Connecting:
		return "connecting"
	case Syncing:
		return "syncing"
	case Synced:
		return "synced"
	case Error:
		return "error"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a snapshot of the client's state. It is a value: later changes
// do not affect it.
type Status struct {
	State State
	// Err is the fatal error in the Error state; in Disconnected, the
	// error that ended the last session (nil after Disconnect).
	Err error
	// Retry is when the next reconnect attempt is due, while
	// Disconnected and waiting; zero otherwise.
	Retry time.Time
	// Snapshot is the progress of the snapshot being applied, while one
	// is; nil otherwise.
	Snapshot *engine.SnapshotProgress
}

// EventType names an Event.
type EventType int

const (
	// StateChanged: Event.Status is the new status. Sent on every change
	// of Status.State, and when a reconnect is scheduled.
	StateChanged EventType = iota + 1
	// SnapshotProgressed: a snapshot chunk was applied; Event.Progress
	// says how far (Progress.Done on the last).
	SnapshotProgressed
	// ErrorReported: a transient error (Event.Err): a relay error frame
	// without the fatal flag, a failed local apply, a push the relay
	// refused. The session goes on; a failed request is retried.
	ErrorReported
	// PushAcked: the relay stored a push; Event.Result has its counts
	// and the sent watermark moved (Pending shrank).
	PushAcked
	// ChangesApplied: changes from the relay (a changes reply or a
	// push_changes) were applied; Event.Result has the counts.
	ChangesApplied
	// CheckpointUploaded: this client's sealed checkpoint became the
	// relay's newest (sealed databases); Event.Cursor is its cursor.
	CheckpointUploaded
)

func (t EventType) String() string {
	switch t {
	case StateChanged:
		return "stateChanged"
	case SnapshotProgressed:
		return "snapshotProgress"
	case ErrorReported:
		return "error"
	case PushAcked:
		return "pushAcked"
	case ChangesApplied:
		return "changesApplied"
	case CheckpointUploaded:
		return "checkpointUploaded"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is delivered to Subscribe callbacks.
type Event struct {
	Type EventType
	// Status is the client's status when the event was queued.
	Status Status
	// Err is the error of ErrorReported.
	Err error
	// Progress is set for SnapshotProgressed.
	Progress engine.SnapshotProgress
	// Result is set for PushAcked (the relay's counts) and ChangesApplied
	// (this replica's).
	Result model.ApplyResult
	// Cursor is set for CheckpointUploaded.
	Cursor uint64
}

// dispatcher delivers events to subscribers, in order, on its own
// goroutine, so that neither the session nor the code that changed the
// state ever waits for a subscriber. Its queue is unbounded.
type dispatcher struct {
	mu     sync.Mutex
	subs   map[int]func(Event)
	nextID int
	queue  []Event
	signal chan struct{} // cap 1: the queue is not empty
}

func newDispatcher() *dispatcher {
	return &dispatcher{subs: map[int]func(Event){}, signal: make(chan struct{}, 1)}
}

func (d *dispatcher) subscribe(fn func(Event)) func() {
	d.mu.Lock()
	id := d.nextID
	d.nextID++
	d.subs[id] = fn
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.subs, id)
		d.mu.Unlock()
	}
}

func (d *dispatcher) post(ev Event) {
	d.mu.Lock()
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

// run delivers events until done is closed, then delivers what is queued
// and returns.
func (d *dispatcher) run(done <-chan struct{}) {
	for {
		select {
		case <-d.signal:
			d.drain()
		case <-done:
			d.drain()
			return
		}
	}
}

func (d *dispatcher) drain() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.mu.Unlock()
			return
		}
		ev := d.queue[0]
		d.queue[0] = Event{}
		d.queue = d.queue[1:]
		ids := make([]int, 0, len(d.subs))
		for id := range d.subs {
			ids = append(ids, id)
		}
		fns := make([]func(Event), 0, len(ids))
		slices.Sort(ids)
		for _, id := range ids {
			fns = append(fns, d.subs[id])
		}
		d.mu.Unlock()
		for _, fn := range fns {
			fn(ev)
		}
	}
}
