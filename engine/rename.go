package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// Renaming tables (a rename_table migration; docs/design.md § Schema
// migrations, "Renaming tables"). A table has an identity, the name it was
// created with: its rows are stored, and its changes and migrations
// travel, under that name, whatever it is called now. Its name is an
// attribute the rename_table migrations set, the one with the highest HLC
// winning. Every replica folds the same set of migrations into the same
// names, whatever the order in which they arrived:
//
//   - Names are claimed for good. A rename joins the renamed table's name
//     and its new name into one class, and every name of a class names
//     the same table (its former names too): a create_table of a name
//     the class holds (a device that had not learned the rename declaring
//     the new name, or an old app version the old one) defines that same
//     table, as two devices' create_tables of one name always did; a
//     rename of another table to a name the class holds (concurrent: a
//     local one is refused) joins the two tables into one.
//   - The class's root, the identity its rows are stored under, is the
//     name created first (lowest create_table HLC; the smallest name when
//     none was created, on a schema-less replica). When classes join, or
//     a create_table with a lower HLC arrives, rows stored under a name
//     that is no longer a root are merged into the root's rows in the
//     transaction that folds the migration in (mergeRenamed): a join of
//     their cells, as for changes from a peer.
//   - Most destructive wins: a drop_table of any name of a class drops the
//     class, whatever its renames.

// foldAliases returns the classes of names rename_table migrations join
// (migs in HLC order), as a map from each name of a class to its root; nil
// when migs hold no rename.
func foldAliases(migs []SchemaMigration) map[string]string {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	for _, m := range migs {
		if m.Type != RenameTable || m.Name == "" {
			continue
		}
		a, b := find(m.TableName), find(m.Name)
		if _, ok := parent[a]; !ok {
			parent[a] = a
		}
		if _, ok := parent[b]; !ok {
			parent[b] = b
		}
		if a != b {
			if b < a {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	if len(parent) == 0 {
		return nil
	}
	created := map[string]HLC{}
	for _, m := range migs { // HLC order: the first is the lowest
		if m.Type == CreateTable {
			if _, ok := created[m.TableName]; !ok {
				created[m.TableName] = m.HLC
			}
		}
	}
	classes := map[string][]string{}
	for n := range parent {
		r := find(n)
		classes[r] = append(classes[r], n)
	}
	alias := make(map[string]string, len(parent))
	for _, members := range classes {
		sort.Strings(members)
		root := members[0]
		rootH, rootCreated := created[root]
		for _, n := range members[1:] {
			if h, ok := created[n]; ok && (!rootCreated || h.Less(rootH)) {
				root, rootH, rootCreated = n, h, true
			}
		}
		for _, n := range members {
			alias[n] = root
		}
	}
	return alias
}

// nameTables gives the tables of st their current names: per class, the
// new name of its rename with the highest HLC (migs, in HLC order, name
// the tables by root), the root when none renamed it.
func nameTables(st *schemaState, migs []SchemaMigration) {
	for _, m := range migs {
		if m.Type == RenameTable {
			if t := st.tables[m.TableName]; t != nil {
				t.name = m.Name
			}
		}
	}
	for _, t := range st.tables {
		if t.name != t.def.Name {
			if st.byName == nil {
				st.byName = map[string]*table{}
			}
			st.byName[t.name] = t
		}
	}
}

// named returns the table whose current name is name, as the local API
// names tables; nil and an error saying so when name is another name of a
// renamed table (its identity or a former name), nil and no error when no
// table holds it.
func (s *schemaState) named(name string) (*table, error) {
	if s == nil {
		return nil, nil
	}
	if t := s.byName[name]; t != nil {
		return t, nil
	}
	t := s.table(name)
	if t == nil || t.name == name {
		return t, nil
	}
	return nil, &renamedError{name: name, to: t.name}
}

// renamedError is the error for a table looked up by a name it no longer
// has. It matches ErrUnknownTable.
type renamedError struct{ name, to string }

func (e *renamedError) Error() string {
	return fmt.Sprintf("%v: %q was renamed to %q (rename_table); use its current name", ErrUnknownTable, e.name, e.to)
}

func (e *renamedError) Is(target error) bool { return target == ErrUnknownTable }

// droppedNames returns, sorted, every name of the dropped tables' classes
// (rows may be stored under each, held changes name each).
func (s *schemaState) droppedNames() []string {
	var out []string
	for n, r := range s.alias {
		if _, gone := s.dropped[r]; gone && n != r {
			out = append(out, n)
		}
	}
	for n := range s.dropped {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// claimed reports whether name is taken for good in s: a table's current
// or former name, a name it was created with, a dropped table's.
func (s *schemaState) claimed(name string) bool {
	if s == nil {
		return false
	}
	if _, ok := s.alias[name]; ok {
		return true
	}
	if s.tables[name] != nil || s.byName[name] != nil {
		return true
	}
	_, gone := s.dropped[name]
	return gone
}

// RenameTable gives table from the name to (a rename_table migration,
// recorded and replicated like every migration; docs/design.md § Schema
// migrations, "Renaming tables"). The table keeps its rows, indexes,
// policy and identity: changes that name it by a former name (from a
// device that has not learned the rename) land in it on every replica.
// After the call, the local API, queries, subscriptions and events name
// it to; from is refused (ErrUnknownTable, saying what it was renamed
// to), and a declaration at Open that still lists from creates nothing.
// Of concurrent renames of one table, the one with the highest HLC names
// it everywhere; a drop wins over every rename.
//
// Errors: ErrUnknownTable (no table is called from now, or it was
// dropped); *SchemaError (matching ErrSchema) when to is not a valid name
// (model.ValidName), equals from, or is taken for good: another table's
// current or former name, or a dropped table's (a name, once a table's,
// is never another's); ErrClosed, and the store's. Nothing is written
// when it fails.
func (e *Engine) RenameTable(from, to string) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	lc, err := e.write(func(w *writeTx) error {
		t, err := w.schema.named(from)
		if err != nil {
			return err
		}
		if t == nil {
			if h, gone := w.schema.droppedTable(from); gone {
				return fmt.Errorf("%w: %q was dropped (drop_table at %s)", ErrUnknownTable, from, h)
			}
			return fmt.Errorf("%w: %q", ErrUnknownTable, from)
		}
		switch {
		case !ValidName(to):
			return &SchemaError{Table: from, Reason: fmt.Sprintf("cannot rename to %q: not a valid table name", to)}
		case to == from:
			return &SchemaError{Table: from, Reason: "the table is already called " + to}
		case w.schema.resolve(to) == t.def.Name:
			// A former name of this very table (or the one it was
			// created with): taking it back is a rename like any other.
		case w.schema.claimed(to):
			return &SchemaError{Table: from, Reason: fmt.Sprintf("cannot rename to %q: the name is (or was) another table's, and a name is never reused", to)}
		}
		return w.recordMigration(&SchemaMigration{Type: RenameTable, TableName: t.def.Name, Name: to})
	})
	if err != nil {
		return err
	}
	e.emitLocal(lc)
	return nil
}

// mergeRenamed moves the rows stored under a name this transaction's
// migrations made part of another name's class (w.schema against
// w.schema0: the name was a root and is not any more) into the rows of
// the class's root, cell by cell as a peer's changes merge (mergeRow), and
// deletes them where they were, with their index entries; held changes
// stored under the name stay (they name it, and replay resolves it).
// Facts that do not fit the root's table are held, as from a peer.
func (w *writeTx) mergeRenamed() error {
	if w.schema.alias == nil {
		return nil
	}
	names := make([]string, 0, len(w.schema.alias))
	for n, r := range w.schema.alias {
		if r != n && w.schema0.resolve(n) == n {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out applyOutcome
	for _, n := range names {
		if _, gone := w.schema.droppedTable(n); gone {
			continue // retireDropped deleted them
		}
		src := w.schema0.table(n)
		if src == nil || src.def.Name != n {
			src = &table{def: TableDef{Name: n}, key: layout.TableKey(n), name: n, asReceived: true}
		}
		dst := w.effTable(w.schema.resolve(n))
		if dst == nil || bytes.Equal(dst.key, src.key) {
			continue
		}
		var moved []*txRow
		if err := w.eachRow(src, func(r *txRow) {
			if r.cur != nil {
				moved = append(moved, r)
			}
		}); err != nil {
			return err
		}
		seen := map[*txRow]bool{}
		for _, r := range moved {
			if seen[r] {
				continue
			}
			seen[r] = true
			facts := rowFacts(r)
			r.cur = nil
			r.dirty = true
			if err := w.mergeFacts(dst, facts, &out); err != nil {
				return err
			}
		}
		if err := w.kv.DeleteRange(layout.BucketIndex, src.key, kv.PrefixEnd(src.key)); err != nil {
			return err
		}
	}
	return nil
}

// rowFacts returns the facts of r's current record as changes of its
// table: its deletion, then its cells.
func rowFacts(r *txRow) []Change {
	var out []Change
	rec := r.cur
	if rec.HasTomb {
		out = append(out, Change{Type: RowDeletion, Table: r.table, PK: r.pk, HLC: rec.Tomb, PriorRow: rec.PriorRow})
	}
	for _, c := range rec.Cells {
		ch := Change{Type: ColumnChange, Table: r.table, PK: r.pk, Column: c.Col, Value: c.Val, HLC: c.HLC}
		if c.Prior != nil {
			ch.HasPrior, ch.PriorValue, ch.PriorHLC = true, c.Prior.Val, c.Prior.HLC
		}
		out = append(out, ch)
	}
	return out
}

// mergeFacts joins facts (one row's, as stored under another name) into
// their row of t; those that do not fit t are held.
func (w *writeTx) mergeFacts(t *table, facts []Change, out *applyOutcome) error {
	var pending []pendingFact
	var pk []Value
	for i := range facts {
		c := &facts[i] // under the name they were stored under: held, they keep it, as from a peer
		if err := normalizeChange(t, c); err != nil {
			if errors.Is(err, errRetired) {
				continue
			}
			var d heldTally
			if err := w.holdUnfit(&d, &ChangeSet{SiteID: c.HLC.Site}, c, err, false, out); err != nil {
				return err
			}
			continue
		}
		pk = c.PK
		pending = append(pending, pendingFact{c: c, own: true})
	}
	if len(pending) == 0 {
		return nil
	}
	r, err := w.load(t, pk)
	if err != nil {
		return err
	}
	w.mergeRow(r, pending, out)
	return nil
}
