package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// Dropping tables, columns and indexes (docs/design.md § Schema
// migrations). A drop retires a name for good: the fold (foldSchema)
// ignores every definition of a dropped name, whatever its HLC, so
// replicas that learn a drop and a concurrent definition in either order
// agree ("most destructive wins"). The state a drop leaves is what the
// replica would hold had the dropped thing never been defined:
//
//   - drop_table: the table's rows, index entries, tombstones, change-log
//     entries of peers and held changes are deleted; later changes for it
//     are discarded (counted as skipped, neither applied nor held).
//   - drop_column: the column's cells (and their before-images, and its
//     value in tombstones' prior rows) are removed from every row, a row
//     left with no cell and no tombstone is deleted, indexes over the
//     column go, held changes for it are deleted, and later changes for it
//     are discarded like a dropped table's.
//   - drop_index: its entries are deleted.
//
// All of it happens in the transaction that folds the drop in (commit,
// retireDropped, then reconcileTables for the indexes), so the outcome
// does not depend on whether data arrived before or after the drop.

// errRetired is returned by normalizeFact for a change to a dropped
// column: the caller discards it.
var errRetired = errors.New("column dropped")

// retiredTable reports whether changes for table name are discarded: the
// table was dropped.
func (w *writeTx) retiredTable(name string) bool {
	_, gone := w.schema.droppedTable(name)
	return gone
}

// retireDropped removes from the store what the drops this transaction
// folded in (w.schema against w.schema0) retired: the rows and held
// changes of dropped tables, the cells and held changes of dropped
// columns. Rows are changed through the transaction's rows, so that
// flush keeps the change log, the prune index and the indexes in step.
// It loads every row of an affected table (schema changes are rare).
func (w *writeTx) retireDropped() error {
	for _, name := range w.schema.droppedNames() {
		if _, was := w.schema0.droppedTable(name); was || w.schema0.resolve(name) != name {
			// Dropped already, or its rows were stored under another
			// name (its class's root then), which this loop meets too.
			if was {
				continue
			}
			tk := layout.TableKey(name)
			if err := w.kv.DeleteRange(layout.BucketHeld, tk, kv.PrefixEnd(tk)); err != nil {
				return err
			}
			continue
		}
		t := w.schema0.table(name)
		if t == nil {
			t = &table{def: TableDef{Name: name}, key: layout.TableKey(name), name: name, asReceived: true}
		}
		err := w.eachRow(t, func(r *txRow) {
			if r.cur != nil {
				r.cur = nil
				r.dirty = true
			}
		})
		if err != nil {
			return err
		}
		tk := layout.TableKey(name)
		if err := w.kv.DeleteRange(layout.BucketHeld, tk, kv.PrefixEnd(tk)); err != nil {
			return err
		}
		if err := w.kv.DeleteRange(layout.BucketIndex, tk, kv.PrefixEnd(tk)); err != nil {
			return err
		}
	}
	for _, name := range w.schema.names() {
		t := w.schema.tables[name]
		var gone map[string]HLC
		old := w.schema0.table(name)
		for c, h := range t.dropped {
			if old != nil {
				if _, was := old.dropped[c]; was {
					continue
				}
			}
			if gone == nil {
				gone = map[string]HLC{}
			}
			gone[c] = h
		}
		if gone == nil {
			continue
		}
		err := w.eachRow(t, func(r *txRow) {
			r.tbl = t
			if stripColumns(r, gone) {
				r.dirty = true
			}
		})
		if err != nil {
			return err
		}
		if err := w.dropHeldColumns(t.key, gone); err != nil {
			return err
		}
	}
	return nil
}

// eachRow calls fn with every row of t, stored or of this transaction,
// loaded into the transaction.
func (w *writeTx) eachRow(t *table, fn func(*txRow)) error {
	var keys [][]byte
	err := w.kv.Scan(layout.BucketRows, kv.Range{Start: t.key, End: kv.PrefixEnd(t.key), KeysOnly: true}, func(k, _ []byte) bool {
		keys = append(keys, bytes.Clone(k))
		return true
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		_, pk, err := layout.SplitRowKey(k)
		if err != nil {
			return err
		}
		r, err := w.load(t, pk)
		if err != nil {
			return err
		}
		fn(r)
	}
	for _, r := range w.rows {
		if r.table == t.def.Name {
			fn(r) // fn is idempotent: rows loaded above come again
		}
	}
	return nil
}

// stripColumns removes the cells of the columns gone from r's current
// record, and their values from its tombstone's prior row; it reports
// whether it changed anything.
func stripColumns(r *txRow, gone map[string]HLC) bool {
	if r.cur == nil {
		return false
	}
	changed := false
	kept := r.cur.Cells[:0:0]
	for _, c := range r.cur.Cells {
		if _, g := gone[c.Col]; g {
			changed = true
			continue
		}
		kept = append(kept, c)
	}
	if changed {
		r.cur.Cells = kept
	}
	if pr := stripPriorRow(r.cur.PriorRow, gone); len(pr) != len(r.cur.PriorRow) {
		r.cur.PriorRow = pr
		changed = true
	}
	return changed
}

// stripPriorRow returns row without the columns gone (row itself when it
// has none of them; the caller's map is not modified).
func stripPriorRow(row Row, gone map[string]HLC) Row {
	for c := range gone {
		if _, ok := row[c]; ok {
			out := maps.Clone(row)
			for c := range gone {
				delete(out, c)
			}
			return out
		}
	}
	return row
}

// dropHeldColumns deletes the held column changes for the columns gone of
// the table with key tk.
func (w *writeTx) dropHeldColumns(tk []byte, gone map[string]HLC) error {
	var del [][]byte
	var derr error
	err := w.kv.Scan(layout.BucketHeld, kv.Range{Start: tk, End: kv.PrefixEnd(tk)}, func(k, v []byte) bool {
		h, err := decodeHeld(v)
		if err != nil {
			derr = err
			return false
		}
		if _, g := gone[h.change.Column]; g && h.change.Type == ColumnChange {
			del = append(del, bytes.Clone(k))
		}
		return true
	})
	if err == nil {
		err = derr
	}
	for i := 0; err == nil && i < len(del); i++ {
		err = w.kv.Delete(layout.BucketHeld, del[i])
	}
	return err
}

// DropTable retires table name for good (a drop_table migration, recorded
// and replicated like every migration; docs/design.md § Schema
// migrations): its rows, index entries and held changes are deleted on
// every replica, changes for it are discarded, and no definition of the
// name (a declaration at Open, a peer's create_table, before or after the
// drop) creates it again. Writes to it fail with ErrUnknownTable.
//
// Errors: ErrUnknownTable (the replica holds no such table), ErrClosed,
// and the store's.
func (e *Engine) DropTable(name string) error {
	return e.drop(SchemaMigration{Type: DropTable, TableName: name}, func(s *schemaState) (*table, error) {
		t, err := s.named(name)
		if err == nil && t == nil {
			err = fmt.Errorf("%w: %q", ErrUnknownTable, name)
		}
		return t, err
	})
}

// DropColumn retires column of table tbl for good (a drop_column migration):
// its cells are removed from every row on every replica, indexes over it
// go with it, held and later changes for it are discarded, and no
// definition of the name (add_column, a create_table, a declaration at
// Open) brings it back. A write naming it is refused (*ValidationError);
// an insert through a declaration that still lists it writes the other
// columns.
//
// Errors: ErrUnknownTable; *SchemaError (matching ErrSchema) when the
// table has no such column or the column is part of the primary key;
// ErrClosed, and the store's.
func (e *Engine) DropColumn(tbl, column string) error {
	return e.drop(SchemaMigration{Type: DropColumn, TableName: tbl, Name: column}, func(s *schemaState) (*table, error) {
		t, err := s.named(tbl)
		switch {
		case err != nil:
			return nil, err
		case t == nil:
			return nil, fmt.Errorf("%w: %q", ErrUnknownTable, tbl)
		case t.cols[column] == nil:
			return nil, &SchemaError{Table: tbl, Column: column, Reason: "no such column to drop"}
		case t.isKey(column):
			return nil, &SchemaError{Table: tbl, Column: column, Reason: "a primary key column cannot be dropped"}
		}
		return t, nil
	})
}

// DropIndex retires index of table tbl for good (a drop_index migration): its
// entries are deleted on every replica and no definition of the name
// brings it back (a changed index needs a new name, as before).
//
// Errors: ErrUnknownTable; *SchemaError (matching ErrSchema) when the
// table has no such index; ErrClosed, and the store's.
func (e *Engine) DropIndex(tbl, index string) error {
	return e.drop(SchemaMigration{Type: DropIndex, TableName: tbl, Name: index}, func(s *schemaState) (*table, error) {
		t, err := s.named(tbl)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTable, tbl)
		}
		for _, ix := range t.def.Indexes {
			if ix.Name == index {
				return t, nil
			}
		}
		return nil, &SchemaError{Table: tbl, Index: index, Reason: "no such index to drop"}
	})
}

// drop records m as a local transaction of its own once check accepts the
// effective schema, naming the table check returns by its identity (a
// renamed table's differs from the name the caller gave).
func (e *Engine) drop(m SchemaMigration, check func(*schemaState) (*table, error)) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	lc, err := e.write(func(w *writeTx) error {
		t, err := check(w.schema)
		if err != nil {
			return err
		}
		m.TableName = t.def.Name
		return w.recordMigration(&m)
	})
	if err != nil {
		return err
	}
	e.emitLocal(lc)
	return nil
}

// isKey reports whether column is one of t's key columns.
func (t *table) isKey(column string) bool {
	for _, n := range t.pkCols {
		if n == column {
			return true
		}
	}
	return false
}

// cachedAltered returns the declaration vt of table name with the notNull
// and defaults the cached effective schema's alters give its columns
// (withAltered), without reading the store.
func (e *Engine) cachedAltered(name string, vt *table) *table {
	e.mu.Lock()
	cur := e.schema
	e.mu.Unlock()
	if t, _ := cur.named(name); t != nil {
		return withAltered(vt, t)
	}
	return vt
}

// mayHaveDropped reports whether table name may have dropped columns, by
// the cached effective schema (unknown counts as may): then a local write
// is validated against the declaration without them (writeTx.tables), not
// the declaration itself.
func (e *Engine) mayHaveDropped(name string) bool {
	e.mu.Lock()
	cur := e.schema
	e.mu.Unlock()
	if cur == nil {
		return true
	}
	t, _ := cur.named(name)
	// A renamed table too: its declaration's key (under the name
	// declared) is not where its rows are stored.
	return t == nil || len(t.dropped) > 0 || t.name != t.def.Name
}
