package engine

import "sort"

// EventType names an Event.
type EventType uint8

const (
	// LocalChange: a local transaction committed (one per transaction).
	LocalChange EventType = iota + 1
	// RemoteChange: ApplyChanges (or a snapshot, or a quarantine replay)
	// changed local state with one remote ChangeSet.
	RemoteChange
	// ConflictResolved: a remote column change met a concurrent local
	// version of the same cell.
	ConflictResolved
	// UnknownTableSeen: changes for a table outside the schema were
	// diverted (one event per table per apply).
	UnknownTableSeen
)

func (t EventType) String() string {
	switch t {
	case LocalChange:
		return "localChange"
	case RemoteChange:
		return "remoteChange"
	case ConflictResolved:
		return "conflict"
	case UnknownTableSeen:
		return "unknownTable"
	}
	return "invalid"
}

// Event reports a committed change to the layers above (docs/design.md §
// Events). Tables names every table whose rows changed, sorted, so reactive
// queries re-run only when a table they read changed. Events are delivered
// after the commit, synchronously, in commit order per Engine.
type Event struct {
	Type   EventType
	Tables []string
	// ChangeSet is the transaction (LocalChange, RemoteChange). For a
	// RemoteChange it holds only the facts that changed local state; for
	// a LocalChange under Options.OmitLocalChanges, no Changes.
	ChangeSet *ChangeSet
	// Conflict is set for ConflictResolved.
	Conflict *Conflict
	// UnknownTable is set for UnknownTableSeen.
	UnknownTable *UnknownTable
}

// Conflict describes one resolved column conflict (docs/design.md § Conflicts and resolvers).
type Conflict struct {
	Table       string
	PK          []Value
	Column      string
	LocalValue  Value
	LocalHLC    HLC
	RemoteValue Value
	RemoteHLC   HLC
	// RemoteWon reports the outcome; WinningHLC is the winner's HLC.
	RemoteWon  bool
	WinningHLC HLC
	// HasRemotePrior, RemotePriorValue and RemotePriorHLC carry the
	// incoming change's before-image, when it had one.
	HasRemotePrior   bool
	RemotePriorValue Value
	RemotePriorHLC   HLC
}

// UnknownTable describes changes diverted for a table outside the schema.
type UnknownTable struct {
	Table       string
	Disposition Disposition
	Changes     int    // changes diverted for it in this apply
	Site        SiteID // origin of the first ChangeSet that named it
	LatestHLC   HLC    // max HLC among them
	// Reason is empty for a table outside the schema; otherwise it says why
	// (the first of) the changes for a known table were diverted: their
	// primary key does not fit the local definition (two app versions
	// declared the table with different keys, or a key value is of another
	// type), a value is not of its column's type, or the column is not
	// defined (yet).
	Reason string
}

// ConflictContext is what a ConflictResolver sees: the local cell version and
// the incoming one (with its before-image, when carried).
type ConflictContext struct {
	Table            string
	PK               []Value
	Column           string
	LocalValue       Value
	LocalHLC         HLC
	RemoteValue      Value
	RemoteHLC        HLC
	HasRemotePrior   bool
	RemotePriorValue Value
	RemotePriorHLC   HLC
}

// ConflictResolver decides a column conflict: return true to take the remote
// value, false to keep the local one. It is called only when the cell has a
// local version with a different HLC. Anything but LWW can make replicas
// diverge; LocalWins and RemoteWins exist for the cases where that is
// intended (docs/design.md § Conflicts and resolvers).
type ConflictResolver func(ConflictContext) (takeRemote bool)

// LWW is last-writer-wins: the higher HLC wins. It is the default.
func LWW(c ConflictContext) bool { return c.LocalHLC.Less(c.RemoteHLC) }

// LocalWins always keeps the local version (the target wins).
func LocalWins(ConflictContext) bool { return false }

// RemoteWins always takes the incoming version (the source wins).
func RemoteWins(ConflictContext) bool { return true }

// Subscribe registers fn for every Event and returns a function that removes
// it. fn runs on the goroutine that committed the change, after the commit;
// it must return quickly and may call the Engine's read and write methods.
func (e *Engine) Subscribe(fn func(Event)) (unsubscribe func()) {
	e.subMu.Lock()
	id := e.nextID
	e.nextID++
	e.subs[id] = fn
	e.subMu.Unlock()
	return func() {
		e.subMu.Lock()
		delete(e.subs, id)
		e.subMu.Unlock()
	}
}

func (e *Engine) emit(ev Event) {
	e.subMu.Lock()
	fns := make([]func(Event), 0, len(e.subs))
	ids := make([]int, 0, len(e.subs))
	for id := range e.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		fns = append(fns, e.subs[id])
	}
	e.subMu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

func (e *Engine) emitLocal(lc *localCommit) {
	if lc == nil {
		return
	}
	e.emit(Event{Type: LocalChange, Tables: lc.tables, ChangeSet: lc.cs})
}

func tablesOf(cs *ChangeSet) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range cs.Migrations {
		if !seen[m.TableName] {
			seen[m.TableName] = true
			out = append(out, m.TableName)
		}
	}
	for _, c := range cs.Changes {
		if !seen[c.Table] {
			seen[c.Table] = true
			out = append(out, c.Table)
		}
	}
	sort.Strings(out)
	return out
}
