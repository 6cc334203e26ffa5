package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// Staged is an optimistic local transaction for callers that cannot run
// their statements inside one kv transaction — a JavaScript callback that
// awaits between statements, for one: IndexedDB would commit the
// transaction at the first await.
//
// Each statement is validated at once and previewed against the committed
// state plus the statements staged before it, without holding any kv
// transaction; Commit then re-executes them all in one transaction (one HLC
// tick), against the state at that moment. A statement that previewed fine
// can still fail at Commit if another writer got there first (the key was
// inserted meanwhile, the row deleted): Commit then writes nothing and
// returns that error.
//
// Previews: Insert returns the row it will write (defaults filled, a
// generated id fixed for the commit) without reading the store — a duplicate
// key is reported by Commit; Update, Upsert and Delete read the row; Get sees
// staged writes; Query re-executes the staged statements in a transaction
// that is rolled back, so it costs one pass over them.
//
// A Staged is not safe for concurrent use. After Commit or Discard every
// method returns ErrClosed.
type Staged struct {
	e     *Engine
	stmts []stagedStmt
	rows  map[string]*txRow // preview overlay
	opSeq uint32
	done  bool
}

type stmtKind uint8

const (
	stmtInsert stmtKind = iota
	stmtUpdate
	stmtUpsert
	stmtDelete
)

type stagedStmt struct {
	kind   stmtKind
	table  string
	values map[string]any
	pk     Key
	// Inserts into a declared table keep the row as validated at staging
	// (defaults filled, id generated), and no values: Commit writes
	// exactly the row, without validating again; fresh marks a generated
	// key, which Commit does not read.
	row   Row
	rowPK []Value
	fresh bool
}

// Stage starts a staged transaction.
func (e *Engine) Stage() *Staged { return &Staged{e: e, rows: map[string]*txRow{}} }

// Len returns the number of statements staged.
func (s *Staged) Len() int { return len(s.stmts) }

var errPreview = errors.New("engine: preview rolled back")

// preview runs fn against the overlay in a read-only kv transaction.
func (s *Staged) preview(fn func(w *writeTx) error) error {
	if s.done {
		return ErrClosed
	}
	if err := s.e.checkOpen(); err != nil {
		return err
	}
	return s.e.store.View(func(tx kv.Tx) error {
		w, err := s.e.begin(tx)
		if err != nil {
			return err
		}
		w.rows = s.rows
		w.base = HLC{Wall: w.meta.clock.Wall, Counter: w.meta.clock.Counter, Site: s.e.site}
		w.opSeq = s.opSeq
		err = fn(w)
		s.opSeq = w.opSeq
		return err
	})
}

// Insert stages an insert and returns the row it will write. The generated
// id, if any, is the one Commit writes. It does not read the store (a bulk
// insert of many rows stays cheap); a duplicate key is found by Commit, or
// here when the key was staged before.
func (s *Staged) Insert(table string, values map[string]any) (Row, error) {
	if s.done {
		return nil, ErrClosed
	}
	if err := s.e.checkOpen(); err != nil {
		return nil, err
	}
	vt, err := s.insertTable(table)
	if err != nil {
		return nil, err
	}
	row, err := vt.coerceRow(values, true)
	if err != nil {
		return nil, err
	}
	pk := vt.keyOf(row)
	if err := vt.checkKeySize(pk); err != nil {
		return nil, err
	}
	var buf [128]byte
	rk := string(layout.AppendRowKey(buf[:0], vt.key, pk))
	r, err := s.insertRow(rk, table, vt, pk)
	if err != nil {
		return nil, err
	}
	// A new row's record holds exactly row's columns (coerceRow gives
	// every column of vt and no other): its row is a copy of row.
	fresh := len(r.cur.Cells) == 0 && vt.byName != nil
	s.setInsertCells(r, vt, row)
	s.stmts = append(s.stmts, s.insertStmt(table, vt, values, row, pk))
	if fresh {
		return maps.Clone(row), nil
	}
	return vt.rowOf(r.cur, pk), nil
}

// StagedInsertReads reports whether Staged.Insert into table name reads
// the store to validate the row: when the table is not declared locally or
// may have dropped columns (then the effective schema decides). A caller
// that must not wait on the store (jsbridge runs staged inserts inside a
// JavaScript callback) stages such inserts where it may wait instead.
func (e *Engine) StagedInsertReads(name string) bool {
	return e.declared[name] == nil || e.mayHaveDropped(name)
}

// insertTable returns the definition an insert into table name is checked
// against: the local declaration, else the effective schema's.
func (s *Staged) insertTable(name string) (*table, error) {
	if vt := s.e.declared[name]; vt != nil && !s.e.mayHaveDropped(name) {
		// Without reading the store (a staged insert may run where a
		// read cannot, jsbridge's dispatch): the alters of the cached
		// schema, which a committed migration updates at once
		// (publishSchema); Commit validates again against the store's.
		return s.e.cachedAltered(name, vt), nil
	}
	// Not declared locally: validate against the effective schema.
	var vt *table
	err := s.preview(func(w *writeTx) error {
		var err error
		_, vt, err = w.tables(name)
		return err
	})
	return vt, err
}

// insertRow returns the staged row of key rk (primary key pk) an insert
// writes, staging it if new, with an empty record. A row already inserted
// in this transaction, or deleted in a delete-wins table, is ErrConflict.
func (s *Staged) insertRow(rk, table string, vt *table, pk []Value) (*txRow, error) {
	r := s.rows[rk]
	allow := vt.resurrect // the declared policy; Commit applies the database's
	if r != nil && r.tbl != nil {
		allow = r.tbl.resurrect // previewed against the effective schema
	}
	if r != nil && r.cur.Visible(allow) {
		return nil, fmt.Errorf("%w: %s %s is already inserted in this transaction", ErrConflict, table, fmtKey(pk))
	}
	if r == nil {
		r = &txRow{key: rk, table: table, tbl: vt, pk: pk}
		s.rows[rk] = r
	}
	if r.cur == nil {
		r.cur = &rowrec.Record{Cells: make([]rowrec.Cell, 0, len(vt.def.Columns))}
	}
	if r.cur.HasTomb && !allow {
		return nil, fmt.Errorf("%w: %s %s was deleted and deleted rows stay deleted (the table's resurrection policy is delete-wins); use a new key", ErrConflict, table, fmtKey(pk))
	}
	return r, nil
}

// setInsertCells writes every column of row into r, each cell stamped with
// the next opSeq.
func (s *Staged) setInsertCells(r *txRow, vt *table, row Row) {
	if len(r.cur.Cells) == 0 && vt.byName != nil {
		for _, i := range vt.byName {
			c := vt.def.Columns[i].Name
			r.cur.Cells = append(r.cur.Cells, rowrec.Cell{Col: c, Val: row[c], HLC: HLC{Site: s.e.site, OpSeq: s.opSeq + uint32(i)}})
		}
		s.opSeq += uint32(len(vt.def.Columns))
		return
	}
	for i := range vt.def.Columns {
		c := vt.def.Columns[i].Name
		r.cur.Set(rowrec.Cell{Col: c, Val: row[c], HLC: HLC{Site: s.e.site, OpSeq: s.opSeq}})
		s.opSeq++
	}
}

// insertStmt is the statement Commit replays for the insert: the coerced
// row when vt is the local declaration, else the values (validated again
// at Commit) with the generated id fixed.
func (s *Staged) insertStmt(table string, vt *table, values map[string]any, row Row, pk []Value) stagedStmt {
	fresh := vt.autoID && values["id"] == nil
	st := stagedStmt{kind: stmtInsert, table: table}
	if s.e.declared[table] == vt {
		// values too, for replayStmt when an alter_column arrived since
		st.row, st.rowPK, st.fresh, st.values = row, pk, fresh, values
		return st
	}
	fixed := make(map[string]any, len(values)+1)
	for k, v := range values {
		fixed[k] = v
	}
	if fresh {
		fixed["id"] = row["id"]
	}
	st.values = fixed
	return st
}

// Update stages an update and returns the row as it will be.
func (s *Staged) Update(table string, pk Key, patch map[string]any) (row Row, err error) {
	err = s.preview(func(w *writeTx) error { row, err = w.update(table, pk, patch); return err })
	if err == nil {
		s.stmts = append(s.stmts, stagedStmt{kind: stmtUpdate, table: table, pk: pk, values: patch})
	}
	return row, err
}

// Upsert stages an upsert and returns the row as it will be.
func (s *Staged) Upsert(table string, values map[string]any) (row Row, err error) {
	autoID := false
	err = s.preview(func(w *writeTx) error {
		_, vt, err := w.tables(table)
		if err != nil {
			return err
		}
		// The table may be one learned from a peer, not declared here.
		autoID = vt.autoID
		row, err = w.upsert(table, values)
		return err
	})
	if err == nil {
		fixed := make(map[string]any, len(values)+1)
		for k, v := range values {
			fixed[k] = v
		}
		if id, ok := row["id"]; ok && values["id"] == nil && autoID {
			fixed["id"] = id
		}
		s.stmts = append(s.stmts, stagedStmt{kind: stmtUpsert, table: table, values: fixed})
	}
	return row, err
}

// Delete stages a delete and reports whether a live row was there.
func (s *Staged) Delete(table string, pk Key) (deleted bool, err error) {
	err = s.preview(func(w *writeTx) error { deleted, err = w.delete(table, pk); return err })
	if err == nil {
		s.stmts = append(s.stmts, stagedStmt{kind: stmtDelete, table: table, pk: pk})
	}
	return deleted, err
}

// Get returns the row with key pk as the staged statements leave it.
func (s *Staged) Get(table string, pk Key) (row Row, err error) {
	err = s.preview(func(w *writeTx) error {
		row, err = (&Tx{w: w}).Get(table, pk)
		return err
	})
	return row, err
}

// Query runs q against the committed state with the staged statements
// applied (re-executed in a transaction that is rolled back).
func (s *Staged) Query(table string, q Query) ([]Row, error) {
	if s.done {
		return nil, ErrClosed
	}
	var rows []Row
	err := s.e.store.Update(func(tx kv.Tx) error {
		w, err := s.e.begin(tx)
		if err != nil {
			return err
		}
		if err := s.replay(w); err != nil {
			return err
		}
		if err := w.flush(); err != nil {
			return err
		}
		rows, err = s.e.query(tx, w.schema, table, q)
		if err != nil {
			return err
		}
		return errPreview
	})
	if errors.Is(err, errPreview) {
		err = nil
	}
	return rows, err
}

// replay executes the staged statements in w, prefetching their rows.
func (s *Staged) replay(w *writeTx) error {
	if err := s.prefetchStmts(w); err != nil {
		return err
	}
	for i, st := range s.stmts {
		if err := s.replayStmt(w, st); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
	}
	return nil
}

// prefetchStmts loads the rows the statements write, with one read per
// table. A fresh insert (a generated id) reads nothing: freshRow stages it.
func (s *Staged) prefetchStmts(w *writeTx) error {
	byTable := map[string][][]Value{}
	for _, st := range s.stmts {
		t, _, err := w.tables(st.table)
		if err != nil {
			return err
		}
		if st.row != nil && st.fresh {
			w.freshRow(t, st.rowPK)
			continue
		}
		pk, err := s.stmtKey(t, st)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(pk, Value.IsNull) {
			byTable[st.table] = append(byTable[st.table], pk)
		}
	}
	for name, pks := range byTable {
		t, _, _ := w.tables(name)
		if err := w.prefetch(t, pks); err != nil {
			return err
		}
	}
	return nil
}

// stmtKey returns the primary key of the row st writes in t (it may hold
// nulls: an insert that will fail).
func (s *Staged) stmtKey(t *table, st stagedStmt) ([]Value, error) {
	switch {
	case st.row != nil:
		return st.rowPK, nil
	case st.kind == stmtInsert || st.kind == stmtUpsert:
		vt := t
		if d := s.e.declared[st.table]; d != nil {
			vt = withAltered(d, t)
		}
		row, err := vt.coerceRow(st.values, false)
		if err != nil {
			return nil, err
		}
		return t.keyOf(row), nil
	}
	return t.coerceKey(st.pk)
}

// replayStmt runs st in w.
func (s *Staged) replayStmt(w *writeTx, st stagedStmt) error {
	var err error
	switch {
	case st.row != nil:
		var t, vt *table
		if t, vt, err = w.tables(st.table); err != nil {
			break
		}
		if len(t.altered) > 0 && vt != s.e.declared[st.table] && st.values != nil {
			// An alter_column changed what the declaration says since
			// the row was staged: validate the values again, under the
			// notNull and defaults that hold now.
			fixed := maps.Clone(st.values)
			if st.fresh {
				fixed["id"] = st.row["id"]
			}
			_, err = w.insert(st.table, fixed)
			break
		}
		_, _, err = w.insertCells(t, vt, st.row, st.rowPK)
	case st.kind == stmtInsert:
		_, err = w.insert(st.table, st.values)
	case st.kind == stmtUpdate:
		_, err = w.update(st.table, st.pk, st.values)
	case st.kind == stmtUpsert:
		_, err = w.upsert(st.table, st.values)
	case st.kind == stmtDelete:
		_, err = w.delete(st.table, st.pk)
	}
	return err
}

// Commit executes the staged statements as one local transaction and
// returns its ChangeSet (nil if they changed nothing), which finishes the
// Staged. On error nothing is written, and the Staged may be committed
// again (after a transient store failure, such as a transaction the page
// freeze aborted) or discarded.
func (s *Staged) Commit() (*ChangeSet, error) {
	if s.done {
		return nil, ErrClosed
	}
	s.done = true
	if len(s.stmts) == 0 {
		return nil, nil
	}
	lc, err := s.e.write(s.replay)
	if err != nil {
		// Nothing was written: the statements may be committed again
		// (a transaction the store aborted, e.g. idbkv.ErrSuspended) or
		// discarded.
		s.done = false
		return nil, err
	}
	s.e.emitLocal(lc)
	return lc.changeSet(), nil
}

// Discard abandons the staged statements.
func (s *Staged) Discard() { s.done = true; s.stmts = nil; s.rows = nil }
