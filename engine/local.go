package engine

import (
	"fmt"
	"slices"
	"sort"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// Key is a primary key given by a caller: the key column values in key order
// (one element for a single-column key), in any form a write accepts for the
// column (see Tx.Insert).
type Key []any

// Tx is a local transaction (Engine.Transact). Every write in it shares one
// HLC tick, numbered by opSeq in write order; it commits as a whole when the
// function returns nil and leaves nothing behind otherwise. Reads see the
// transaction's own writes. A Tx must not be used after its function returns
// or from another goroutine.
type Tx struct {
	w *writeTx
}

// Transact runs fn as one local transaction and returns the committed
// ChangeSet (nil if fn wrote nothing: such a transaction consumes no HLC).
// If fn returns an error, nothing is written and the error is returned
// unchanged. A failed statement inside fn writes nothing itself, so fn may
// handle its error and continue.
//
// fn runs inside a kv transaction: on IndexedDB it must not wait on anything
// but the engine (no timers, no network, no JavaScript promises), or the
// transaction fails with kv.ErrTxInactive.
func (e *Engine) Transact(fn func(tx *Tx) error) (*ChangeSet, error) {
	lc, err := e.write(func(w *writeTx) error { return fn(&Tx{w: w}) })
	if err != nil {
		return nil, err
	}
	e.emitLocal(lc)
	return lc.changeSet(), nil
}

// Insert inserts one row and returns it as stored (defaults filled, an
// omitted "id" key generated as a UUIDv7 text). values maps column names to
// nil, a Value, or a Go value: bool, any integer type, float32/64, string,
// []byte, time.Time, json.RawMessage, or for json columns anything
// json.Marshal accepts (in the browser build, not structs and types with
// MarshalJSON or MarshalText methods: see coerceValue). Every column is
// written, so the row travels whole.
//
// Errors: ErrUnknownTable; *ValidationError (unknown column, a value that
// does not fit, a missing NOT NULL value); ErrConflict if the key exists, or
// was deleted and resurrection is not allowed.
func (tx *Tx) Insert(table string, values map[string]any) (Row, error) {
	row, err := tx.w.insert(table, values)
	tx.w.out = row
	return row, err
}

// Update sets the columns in patch on the row with key pk and returns the
// row. Only columns whose value changes get new versions; an update that
// changes nothing records nothing. Changing a key column moves the row: the
// old key is deleted (a tombstone) and the whole row inserted at the new one.
//
// Errors: ErrUnknownTable, *ValidationError, ErrNotFound (no live row with
// that key), ErrConflict (the new key of a moved row exists).
func (tx *Tx) Update(table string, pk Key, patch map[string]any) (Row, error) {
	row, err := tx.w.update(table, pk, patch)
	tx.w.out = row
	return row, err
}

// Upsert inserts the row, or, if a live row with its key exists, updates the
// columns given in values. Errors as for Insert and Update.
func (tx *Tx) Upsert(table string, values map[string]any) (Row, error) {
	row, err := tx.w.upsert(table, values)
	tx.w.out = row
	return row, err
}

// Delete deletes the row with key pk, leaving a tombstone that carries the
// row's last image. It reports false, writing nothing, when there is no live
// row with that key.
func (tx *Tx) Delete(table string, pk Key) (bool, error) {
	return tx.w.delete(table, pk)
}

// Get returns the live row with key pk, or ErrNotFound.
func (tx *Tx) Get(table string, pk Key) (Row, error) {
	t, _, err := tx.w.tables(table)
	if err != nil {
		return nil, err
	}
	key, err := t.coerceKey(pk)
	if err != nil {
		return nil, err
	}
	r, err := tx.w.load(t, key)
	if err != nil {
		return nil, err
	}
	if !r.cur.Visible(t.resurrect) {
		return nil, fmt.Errorf("%w: %s %s", ErrNotFound, table, fmtKey(key))
	}
	return t.rowOf(r.cur, key), nil
}

// Query runs q against the transaction's state (its own writes included).
func (tx *Tx) Query(table string, q Query) ([]Row, error) {
	if err := tx.w.flush(); err != nil {
		return nil, err
	}
	return tx.w.e.query(tx.w.kv, tx.w.schema, table, q)
}

// Insert runs Tx.Insert in its own transaction. The row is validated
// before the transaction starts, and the transaction's reads (the clock and
// the row) are one round trip; a generated key is not read at all.
func (e *Engine) Insert(table string, values map[string]any) (row Row, err error) {
	vt := e.declared[table]
	if vt == nil {
		_, err = e.Transact(func(tx *Tx) error { row, err = tx.Insert(table, values); return err })
		return row, err
	}
	prepared, err := vt.coerceRow(values, true)
	if err != nil {
		// An alter_column may have relaxed what the declaration
		// requires (the cached schema may not know it yet): validate in
		// the transaction
		// (writeTx.tables), against the database's schema.
		_, err = e.Transact(func(tx *Tx) error { row, err = tx.Insert(table, values); return err })
		return row, err
	}
	pk := vt.keyOf(prepared)
	if err := vt.checkKeySize(pk); err != nil {
		return nil, err
	}
	hint := []hintRow{{t: vt, pk: pk, fresh: vt.autoID && values["id"] == nil}}
	lc, err := e.writeHinted(hint, func(w *writeTx) error {
		st, vt2, err := w.tables(table)
		if err != nil {
			return err
		}
		if vt2 != vt {
			// Columns of the declaration were dropped or altered:
			// validate against what remains (a value for a dropped
			// one is refused) with the altered notNull and defaults.
			if prepared, err = vt2.coerceRow(values, true); err != nil {
				return err
			}
		}
		row, err = w.insertRow(st, vt2, prepared)
		w.out = row
		return err
	})
	if err != nil {
		return nil, err
	}
	e.emitLocal(lc)
	return row, nil
}

// keyHint returns the read hint for a statement on the row with key pk, or
// nil when the key does not convert (the statement reports that itself).
func (e *Engine) keyHint(table string, pk Key) []hintRow {
	vt := e.declared[table]
	if vt == nil {
		return nil
	}
	key, err := vt.coerceKey(pk)
	if err != nil {
		return nil
	}
	return []hintRow{{t: vt, pk: key}}
}

// Update runs Tx.Update in its own transaction, its reads in one round
// trip.
func (e *Engine) Update(table string, pk Key, patch map[string]any) (row Row, err error) {
	lc, err := e.writeHinted(e.keyHint(table, pk), func(w *writeTx) error { row, err = w.update(table, pk, patch); w.out = row; return err })
	if err != nil {
		return nil, err
	}
	e.emitLocal(lc)
	return row, nil
}

// Upsert runs Tx.Upsert in its own transaction, its reads in one round
// trip.
func (e *Engine) Upsert(table string, values map[string]any) (row Row, err error) {
	var hint []hintRow
	if vt := e.declared[table]; vt != nil {
		key := make(Key, len(vt.pkCols))
		ok := true
		for i, n := range vt.pkCols {
			if key[i], ok = values[n]; !ok || key[i] == nil {
				ok = false
				break
			}
		}
		if ok {
			hint = e.keyHint(table, key)
		}
	}
	lc, err := e.writeHinted(hint, func(w *writeTx) error { row, err = w.upsert(table, values); w.out = row; return err })
	if err != nil {
		return nil, err
	}
	e.emitLocal(lc)
	return row, nil
}

// Delete runs Tx.Delete in its own transaction, its reads in one round
// trip.
func (e *Engine) Delete(table string, pk Key) (deleted bool, err error) {
	lc, err := e.writeHinted(e.keyHint(table, pk), func(w *writeTx) error { deleted, err = w.delete(table, pk); return err })
	if err != nil {
		return false, err
	}
	e.emitLocal(lc)
	return deleted, nil
}

// tables returns the storage table (effective schema) and the validation
// table (the local declaration when there is one) for a local write.
func (w *writeTx) tables(name string) (store, valid *table, err error) {
	store, err = w.schema.named(name)
	if err != nil {
		return nil, nil, err
	}
	if store == nil {
		if h, gone := w.schema.droppedTable(name); gone {
			return nil, nil, fmt.Errorf("%w: %q was dropped (drop_table at %s); a dropped table is not created again", ErrUnknownTable, name, h)
		}
		if w.e.declared == nil {
			return nil, nil, fmt.Errorf("%w: %q (a schema-less replica has no local tables; open it with a schema to write)", ErrUnknownTable, name)
		}
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	valid = store
	if d := w.e.declared[name]; d != nil {
		valid = d
		// A write validated against the local declaration is stored under
		// the effective key: when another device's definition of the
		// table, with another key, won the fold, the row would be keyed by
		// columns the write does not set (a null key every peer rejects).
		if !slices.Equal(d.pkCols, store.pkCols) {
			return nil, nil, &SchemaError{Table: name, Reason: fmt.Sprintf(
				"declared with primary key %v but the replica holds the table with primary key %v (another device created it first); writes to it are refused",
				d.pkCols, store.pkCols)}
		}
		valid = withAltered(withoutDropped(d, store), store)
	}
	return store, valid, nil
}

// withoutDropped returns the declaration d of store's table without the
// columns a drop_column retired (and the indexes over them), or d itself
// when it declares none: writes are validated against it, so they never
// set a dropped column (a write naming one is refused) and an insert
// writes the other columns.
func withoutDropped(d, store *table) *table {
	if len(store.dropped) == 0 {
		return d
	}
	has := false
	for c := range store.dropped {
		if d.cols[c] != nil {
			has = true
		}
	}
	if !has {
		return d
	}
	def := cloneTableDef(d.def)
	retireColumns(&def, store.dropped)
	t := compileTable(def)
	t.asReceived, t.policyHLC = d.asReceived, d.policyHLC
	return t
}

func fmtKey(pk []Value) string {
	s := "["
	for i, v := range pk {
		if i > 0 {
			s += ", "
		}
		s += v.String()
	}
	return s + "]"
}

// coerceKey converts a caller's key into key values of the table.
func (t *table) coerceKey(pk Key) ([]Value, error) {
	if len(pk) != len(t.pkCols) {
		return nil, &ValidationError{Table: t.name, Reason: fmt.Sprintf("primary key has %d column(s) (%v), got %d value(s)", len(t.pkCols), t.pkCols, len(pk))}
	}
	out := make([]Value, len(pk))
	for i, v := range pk {
		c := t.pkDefs[i]
		x, err := coerceValue(&t.def, c, v)
		if err != nil {
			return nil, err
		}
		if x.IsNull() {
			return nil, &ValidationError{Table: t.name, Column: c.Name, Reason: "primary key value is null"}
		}
		out[i] = x
	}
	if err := t.checkKeySize(out); err != nil {
		return nil, err
	}
	return out, nil
}

// coerceLocal is coerceValue for a value a local write stores: one whose
// size alone (inputBytes) is above MaxLocalRowSize is refused first, before
// any conversion, validation or encoding, whose cost grows with it (a
// 200 MB string took 8.8 s natively to be refused by the row size check).
func (t *table) coerceLocal(c *ColumnDef, x any) (Value, error) {
	if n := inputBytes(c.Type, x); n > MaxLocalRowSize {
		return Null, &ValidationError{Table: t.name, Column: c.Name, Reason: fmt.Sprintf(
			"a value of %d bytes is too large for a local write (a row a local write leaves is at most %d bytes: MaxLocalRowSize)", n, MaxLocalRowSize)}
	}
	return coerceValue(&t.def, c, x)
}

// inputBytes returns a lower bound of the bytes x takes stored in a column
// of kind k: the length of text for a text or json column (a json string
// is longer than its text), of bytes for a blob column, of a Value's
// payload of the column's kind; 0 when the conversion could shrink it
// (json text, which is compacted; numbers parsed from text).
func inputBytes(k Kind, x any) int {
	switch v := x.(type) {
	case string:
		if k == KindText || k == KindJSON {
			return len(v)
		}
	case []byte:
		if k == KindBlob {
			return len(v)
		}
	case Value:
		if v.Kind() == k && (k == KindText || k == KindBlob || k == KindJSON) {
			return v.Len()
		}
	}
	return 0
}

// coerceRow validates values against t. With insert set, omitted columns
// take their defaults (or null), and an omitted auto id is generated.
func (t *table) coerceRow(values map[string]any, insert bool) (Row, error) {
	row := make(Row, len(t.def.Columns))
	for n, x := range values {
		c := t.cols[n]
		if c == nil {
			return nil, t.firstValueError(values)
		}
		v, err := t.coerceLocal(c, x)
		if err != nil {
			return nil, t.firstValueError(values)
		}
		row[n] = v
	}
	if insert {
		for i := range t.def.Columns {
			c := &t.def.Columns[i]
			if _, ok := row[c.Name]; ok {
				continue
			}
			if c.HasDefault {
				row[c.Name] = c.Default
			} else {
				row[c.Name] = Null
			}
		}
		if t.autoID && row["id"].IsNull() {
			id, err := newKey()
			if err != nil {
				return nil, fmt.Errorf("generate id: %w", err)
			}
			row["id"] = Text(id)
		}
	}
	// The row holds only the table's columns: checked in name order, as
	// every error here is reported for the first column by name.
	names := t.names
	if len(names) != len(t.def.Columns) {
		names = sortedKeys(row)
	}
	for _, n := range names {
		v, ok := row[n]
		if c := t.cols[n]; ok && c != nil && c.NotNull && v.IsNull() {
			reason := "is required (notNull) and cannot be null"
			if _, given := values[n]; !given {
				reason = "is required (notNull) and has no default"
			}
			return nil, &ValidationError{Table: t.name, Column: n, Reason: reason}
		}
	}
	return row, nil
}

// firstValueError returns the error coerceRow reports for values that do
// not all convert: the first unknown or invalid column by name, so the
// error does not depend on map order.
func (t *table) firstValueError(values map[string]any) error {
	for _, n := range sortedKeys(values) {
		c := t.cols[n]
		if c == nil {
			return &ValidationError{Table: t.name, Column: n, Reason: "unknown column"}
		}
		if _, err := t.coerceLocal(c, values[n]); err != nil {
			return err
		}
	}
	return &ValidationError{Table: t.name, Reason: "invalid values"} // not reached: coerceValue is pure
}

func sortedKeys[V any](r map[string]V) []string {
	out := make([]string, 0, len(r))
	for n := range r {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (t *table) keyOf(row Row) []Value {
	pk := make([]Value, len(t.pkCols))
	for i, n := range t.pkCols {
		pk[i] = row[n]
	}
	return pk
}

func (w *writeTx) insert(name string, values map[string]any) (Row, error) {
	st, vt, err := w.tables(name)
	if err != nil {
		return nil, err
	}
	row, err := vt.coerceRow(values, true)
	if err != nil {
		return nil, err
	}
	return w.insertRow(st, vt, row)
}

func (w *writeTx) insertRow(st, vt *table, row Row) (Row, error) {
	r, pk, err := w.insertCells(st, vt, row, nil)
	if err != nil {
		return nil, err
	}
	return st.rowOf(r.cur, pk), nil
}

// insertCells is insertRow without building the row it returns; pk is
// st.keyOf(row), or nil to compute it.
func (w *writeTx) insertCells(st, vt *table, row Row, pk []Value) (*txRow, []Value, error) {
	if pk == nil {
		pk = st.keyOf(row)
	}
	if err := st.checkKeySize(pk); err != nil {
		return nil, nil, err
	}
	r, err := w.load(st, pk)
	if err != nil {
		return nil, nil, err
	}
	allow := st.resurrect
	if r.cur.Visible(allow) {
		return nil, nil, fmt.Errorf("%w: %s %s already exists (use upsert or update)", ErrConflict, st.name, fmtKey(pk))
	}
	if r.cur != nil && r.cur.HasTomb && !allow {
		return nil, nil, fmt.Errorf("%w: %s %s was deleted and deleted rows stay deleted (the table's resurrection policy is delete-wins); use a new key", ErrConflict, st.name, fmtKey(pk))
	}
	if err := st.checkIndexKeys(row, pk); err != nil {
		return nil, nil, err
	}
	if r.cur == nil {
		r.cur = &rowrec.Record{Cells: make([]rowrec.Cell, 0, len(vt.def.Columns))}
	}
	if len(r.cur.Cells) == 0 && vt.byName != nil {
		// No cell to replace: appended in name order (the order cells
		// are kept in), stamped in declaration order as setCell would.
		op := w.opSeq
		for _, i := range vt.byName {
			c := vt.def.Columns[i].Name
			h := w.base
			h.OpSeq = op + uint32(i)
			r.cur.Cells = append(r.cur.Cells, rowrec.Cell{Col: c, Val: row[c], HLC: h})
		}
		w.opSeq += uint32(len(vt.def.Columns))
		r.dirty = true
		return r, pk, nil
	}
	for i := range vt.def.Columns {
		c := vt.def.Columns[i].Name
		w.setCell(r, c, row[c])
	}
	return r, pk, nil
}

// setCell records a local column fact.
func (w *writeTx) setCell(r *txRow, col string, v Value) {
	h := w.nextHLC()
	if r.cur == nil {
		r.cur = &rowrec.Record{}
	}
	c := rowrec.Cell{Col: col, Val: v, HLC: h}
	if i := r.cur.Find(col); i >= 0 {
		old := r.cur.Cells[i]
		if old.HLC.SameTransaction(h) {
			// Rewritten inside this transaction: the before-image is
			// still what the transaction overwrote.
			c.Prior = old.Prior
		} else if priorKept(old.Val) {
			c.Prior = &rowrec.Prior{Val: old.Val, HLC: old.HLC}
		}
	}
	r.cur.Set(c)
	r.dirty = true
}

func (w *writeTx) update(name string, pkArg Key, patch map[string]any) (Row, error) {
	st, vt, err := w.tables(name)
	if err != nil {
		return nil, err
	}
	pk, err := st.coerceKey(pkArg)
	if err != nil {
		return nil, err
	}
	p, err := vt.coerceRow(patch, false)
	if err != nil {
		return nil, err
	}
	r, err := w.load(st, pk)
	if err != nil {
		return nil, err
	}
	if !r.cur.Visible(st.resurrect) {
		return nil, fmt.Errorf("%w: %s %s", ErrNotFound, name, fmtKey(pk))
	}
	return w.patchRow(st, vt, r, p)
}

func (w *writeTx) patchRow(st, vt *table, r *txRow, p Row) (Row, error) {
	cur := st.rowOf(r.cur, r.pk)
	moved := false
	for i, n := range st.pkCols {
		if v, ok := p[n]; ok && !v.Equal(r.pk[i]) {
			moved = true
		}
	}
	if moved {
		// A key change is a delete of the old key plus a full insert of
		// the new one (docs/design.md §
		// Primary-key changes).
		next := make(Row, len(vt.def.Columns))
		for i := range vt.def.Columns {
			c := vt.def.Columns[i].Name
			next[c] = cur[c]
		}
		for n, v := range p {
			next[n] = v
		}
		newPK := st.keyOf(next)
		// Every check insertRow makes runs before the tombstone: a
		// statement that fails must write nothing (Transact's contract).
		if err := st.checkKeySize(newPK); err != nil {
			return nil, err
		}
		if err := st.checkIndexKeys(next, newPK); err != nil {
			return nil, err
		}
		nr, err := w.load(st, newPK)
		if err != nil {
			return nil, err
		}
		if nr.cur.Visible(st.resurrect) {
			return nil, fmt.Errorf("%w: cannot move %s %s to %s: a row with that key exists", ErrConflict, st.name, fmtKey(r.pk), fmtKey(newPK))
		}
		if nr.cur != nil && nr.cur.HasTomb && !st.resurrect {
			return nil, fmt.Errorf("%w: cannot move %s %s to %s: that key was deleted and deleted rows stay deleted", ErrConflict, st.name, fmtKey(r.pk), fmtKey(newPK))
		}
		w.tombstone(r)
		return w.insertRow(st, vt, next)
	}
	next := make(Row, len(cur)+len(p))
	for n, v := range cur {
		next[n] = v
	}
	for n, v := range p {
		next[n] = v
	}
	if err := st.checkIndexKeys(next, r.pk); err != nil {
		return nil, err
	}
	for _, n := range sortedKeys(p) {
		if old, ok := cur[n]; ok && old.Equal(p[n]) {
			continue
		}
		if _, ok := cur[n]; !ok && p[n].IsNull() {
			continue
		}
		w.setCell(r, n, p[n])
	}
	return st.rowOf(r.cur, r.pk), nil
}

func (w *writeTx) upsert(name string, values map[string]any) (Row, error) {
	st, vt, err := w.tables(name)
	if err != nil {
		return nil, err
	}
	hasKey := true
	for _, n := range st.pkCols {
		if v, ok := values[n]; !ok || v == nil {
			hasKey = false
		}
	}
	if !hasKey {
		return w.insert(name, values)
	}
	p, err := vt.coerceRow(values, false)
	if err != nil {
		return nil, err
	}
	pk := st.keyOf(p)
	if err := st.checkKeySize(pk); err != nil {
		return nil, err
	}
	r, err := w.load(st, pk)
	if err != nil {
		return nil, err
	}
	if r.cur.Visible(st.resurrect) {
		return w.patchRow(st, vt, r, p)
	}
	row, err := vt.coerceRow(values, true)
	if err != nil {
		return nil, err
	}
	return w.insertRow(st, vt, row)
}

func (w *writeTx) delete(name string, pkArg Key) (bool, error) {
	st, _, err := w.tables(name)
	if err != nil {
		return false, err
	}
	pk, err := st.coerceKey(pkArg)
	if err != nil {
		return false, err
	}
	r, err := w.load(st, pk)
	if err != nil {
		return false, err
	}
	if !r.cur.Visible(st.resurrect) {
		return false, nil
	}
	w.tombstone(r)
	return true, nil
}

// tombstone records a local deletion of a live row.
func (w *writeTx) tombstone(r *txRow) {
	prior := priorImage(r.cur.Row())
	// A row live under its tombstone is one of a table allowing
	// resurrection: the tombstone this one supersedes is no shadow
	// (putShadow), as pruning by it decides no cell there (pruneShadow).
	r.cur.HasTomb = true
	r.cur.Tomb = w.nextHLC()
	r.cur.PriorRow = prior
	r.cur.DropDead()
	r.dirty = true
}

// maxRowKey leaves room in kv.MaxKeySize for the change-log and index
// prefixes around a row key.
const maxRowKey = 2048

// checkKeySize rejects keys whose encoding would not fit the kv key limit.
func (t *table) checkKeySize(pk []Value) error {
	var buf [128]byte
	if n := len(layout.AppendRowKey(buf[:0], t.key, pk)); n > maxRowKey {
		col := ""
		if len(t.pkCols) > 0 {
			col = t.pkCols[0]
		}
		return &ValidationError{Table: t.name, Column: col, Reason: fmt.Sprintf("primary key is too long (%d bytes encoded, limit %d)", n, maxRowKey)}
	}
	return nil
}
