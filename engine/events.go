package engine

import (
	"bytes"
	"slices"
	"sort"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// EventType names an Event.
type EventType uint8

const (
	// LocalChange: a local transaction committed (one per transaction).
	LocalChange EventType = iota + 1
	// RemoteChange: ApplyChanges (or a snapshot, or a replay of held changes)
	// changed local state with one remote ChangeSet.
	RemoteChange
	// ConflictResolved: a remote column change met a concurrent local
	// version of the same cell.
	ConflictResolved
	// ChangesHeld: synced changes this replica cannot apply now were held
	// (or, under the Drop policy, dropped): one event per table per apply
	// (Event.Held).
	ChangesHeld
	// HeldReplayed: changes held for a table were replayed (ReplayHeld:
	// a migration or a newer schema defined their table or column): one
	// event per table per replay (Event.Replayed), after the RemoteChange
	// events of the rows they changed.
	HeldReplayed
)

func (t EventType) String() string {
	switch t {
	case LocalChange:
		return "localChange"
	case RemoteChange:
		return "remoteChange"
	case ConflictResolved:
		return "conflict"
	case ChangesHeld:
		return "held"
	case HeldReplayed:
		return "heldReplayed"
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
	// Held is set for ChangesHeld.
	Held *HeldReport
	// Replayed is set for HeldReplayed.
	Replayed *ReplayReport
	// Rows summarizes the rows a LocalChange wrote when ChangeSet has no
	// Changes (Options.OmitLocalChanges); RowsOf(ChangeSet) gives the
	// same for the other LocalChange and RemoteChange events.
	Rows []RowChange
}

// RowChange summarizes what one transaction did to one row: the columns
// it wrote (in column-name order) and whether it deleted the row; Prior
// is the row as it stood before a deletion, when known (a local delete of
// a live row; a remote delete whose origin sent its image).
type RowChange struct {
	Table   string
	PK      []Value
	Columns []string
	Deleted bool
	Prior   Row
}

// RowsOf summarizes cs's changes per row, rows in (table, key) order.
func RowsOf(cs *ChangeSet) []RowChange {
	if cs == nil || len(cs.Changes) == 0 {
		return nil
	}
	idx := map[string]int{}
	var out []RowChange
	for i := range cs.Changes {
		c := &cs.Changes[i]
		k := string(layout.RowKey(layout.TableKey(c.Table), c.PK))
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, RowChange{Table: c.Table, PK: c.PK})
		}
		switch c.Type {
		case ColumnChange:
			out[j].Columns = append(out[j].Columns, c.Column)
		case RowDeletion:
			out[j].Deleted = true
			if c.PriorRow != nil {
				out[j].Prior = Row(c.PriorRow)
			}
		}
	}
	sortRowChanges(out)
	return out
}

// sortRowChanges orders rows by table, then key, and each row's columns
// by name.
func sortRowChanges(rows []RowChange) {
	for i := range rows {
		sort.Strings(rows[i].Columns)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Table != rows[j].Table {
			return rows[i].Table < rows[j].Table
		}
		return bytes.Compare(layout.RowKey(nil, rows[i].PK), layout.RowKey(nil, rows[j].PK)) < 0
	})
}

// sortRowChangesKeyed is sortRowChanges for rows whose primary keys'
// encodings (layout.RowKey(nil, pk)) are given: keys[i] is rows[i]'s. It
// encodes no key, and rows already in order (a transaction's rows, added
// in key order) are only checked.
func sortRowChangesKeyed(rows []RowChange, keys []string) {
	for i := range rows {
		if c := rows[i].Columns; !sort.StringsAreSorted(c) {
			sort.Strings(c)
		}
	}
	less := func(i, j int) bool {
		if rows[i].Table != rows[j].Table {
			return rows[i].Table < rows[j].Table
		}
		return keys[i] < keys[j]
	}
	sorted := true
	for i := 1; i < len(rows); i++ {
		if less(i, i-1) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	// A permutation sorted with sort.SliceStable, not a slices sort: no
	// sort code of its own in replica.wasm (issue 17, W9).
	perm := make([]int, len(rows))
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(a, b int) bool { return less(perm[a], perm[b]) })
	out := make([]RowChange, len(rows))
	for i, p := range perm {
		out[i] = rows[p]
	}
	copy(rows, out)
}

// ReplayReport describes one replay of a table's held changes
// (HeldReplayed).
type ReplayReport struct {
	Table string
	// Changes replayed (applied as fresh remote changes, whether they
	// won or not) and removed from the hold.
	Changes int
	// Remaining changes still held for the table: for columns still
	// undefined, or whose key or value does not fit (never replayed).
	Remaining int
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

// HeldReport describes the changes of one table that one apply (ApplyChanges,
// a snapshot's rows chunk) held instead of applying (docs/design.md § Held
// changes).
type HeldReport struct {
	Table string
	// Reason is why the first of them was held; the others may have
	// other reasons (HeldChanges lists each change).
	Reason HeldReason
	// Detail says in words why the first was held, naming the column and
	// the type or key it does not fit; empty for HeldUnknownTable.
	Detail string
	// Policy is the replica's Options.HeldChanges: under Drop the
	// changes were counted and reported but not kept.
	Policy    HeldPolicy
	Changes   int    // changes held (or dropped) for the table in this apply
	Site      SiteID // origin of the first of them
	LatestHLC HLC    // max HLC among them
}

// HeldReason says why a synced change is held instead of applied. The
// engine tells these four apart; the first two are replayed when the
// schema catches up, the last two never are (Prune drops them at the
// retention horizon).
type HeldReason uint8

const (
	// HeldUnknownTable: the change's table is not in the local schema
	// (a newer app version declared it). Replayed when a migration or a
	// newer schema creates the table.
	HeldUnknownTable HeldReason = iota + 1
	// HeldUnknownColumn: the table exists but does not define the
	// change's column (yet). Replayed when a migration adds the column.
	HeldUnknownColumn
	// HeldKeyMismatch: the change's primary key does not fit the local
	// table's: another number of key columns, a key value not of its
	// column's type (two app versions declared the table with different
	// keys), or a change to a key column whose value contradicts the
	// key. Never replayed.
	HeldKeyMismatch
	// HeldWrongType: the value is not of its column's type, even after the
	// lossless conversion of wire spellings (text into a real column, a
	// fraction into an integer one, a timestamp out of range, invalid
	// UTF-8, JSON nested too deeply; see model.WrongType). Never
	// replayed.
	HeldWrongType
)

// String returns the reason's name in the JavaScript API: "unknownTable",
// "unknownColumn", "keyMismatch" or "wrongType".
func (r HeldReason) String() string {
	switch r {
	case HeldUnknownTable:
		return "unknownTable"
	case HeldUnknownColumn:
		return "unknownColumn"
	case HeldKeyMismatch:
		return "keyMismatch"
	case HeldWrongType:
		return "wrongType"
	}
	return "invalid"
}

// Replayed reports whether changes held for r are replayed once the
// schema defines their table or column (HeldUnknownTable,
// HeldUnknownColumn); the others are kept only until Prune drops them.
func (r HeldReason) Replayed() bool { return r == HeldUnknownTable || r == HeldUnknownColumn }

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
	ev = e.currentNames(ev)
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

// currentNames returns ev with the tables it names by their current name
// (rename_table): changes travel, and ChangeSet keeps them, under the
// table's identity, while an app knows the table by its current name. A
// RemoteChange or LocalChange event then carries Rows (RowsOf its
// ChangeSet, renamed), and one carrying a rename_table lists in Tables
// every name of the renamed table (reads of a former name re-run and
// learn it is gone). ev itself when no table was ever renamed.
func (e *Engine) currentNames(ev Event) Event {
	e.mu.Lock()
	s := e.schema
	e.mu.Unlock()
	if s == nil || s.alias == nil {
		return ev
	}
	name := func(n string) string {
		if t := s.table(n); t != nil {
			return t.name
		}
		return n
	}
	if ev.Tables != nil {
		tables := make([]string, 0, len(ev.Tables))
		for _, n := range ev.Tables {
			if n = name(n); !slices.Contains(tables, n) {
				tables = append(tables, n)
			}
		}
		if ev.ChangeSet != nil {
			// A rename: what read the table under another of its names
			// (the one it had) reads it no more, and must know.
			for _, m := range ev.ChangeSet.Migrations {
				if m.Type != RenameTable {
					continue
				}
				r := s.resolve(m.TableName)
				for n, nr := range s.alias {
					if nr == r && !slices.Contains(tables, n) {
						tables = append(tables, n)
					}
				}
			}
		}
		sort.Strings(tables)
		ev.Tables = tables
	}
	rows := ev.Rows
	if rows == nil && ev.ChangeSet != nil {
		rows = RowsOf(ev.ChangeSet)
	} else {
		rows = slices.Clone(rows)
	}
	for i := range rows {
		rows[i].Table = name(rows[i].Table)
	}
	if len(rows) > 0 {
		sortRowChanges(rows)
		ev.Rows = rows
	}
	if ev.Conflict != nil {
		c := *ev.Conflict
		c.Table = name(c.Table)
		ev.Conflict = &c
	}
	if ev.Held != nil {
		h := *ev.Held
		h.Table = name(h.Table)
		ev.Held = &h
	}
	if ev.Replayed != nil {
		r := *ev.Replayed
		r.Table = name(r.Table)
		ev.Replayed = &r
	}
	return ev
}

func (e *Engine) emitLocal(lc *localCommit) {
	if lc == nil {
		return
	}
	e.emit(Event{Type: LocalChange, Tables: lc.tables, ChangeSet: lc.cs, Rows: lc.rows})
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
