package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// txRow is one row touched by a write transaction: its committed record
// (orig, nil if absent) and its current state (cur).
type txRow struct {
	key   string
	table string
	tbl   *table // effective table, nil in schema-less mode for unknown tables
	pk    []Value
	orig  *rowrec.Record
	cur   *rowrec.Record
	dirty bool
	// shadow is the newest tombstone this transaction saw lose to the
	// row's own tombstone (noteShadow; zero: none), recorded at flush
	// (diffTomb, putShadow).
	shadow HLC
}

// noteShadow notes h, a tombstone the row's tombstone of this replica
// superseded (or is about to), as the row's shadow tombstone if it is the
// newest so noted (see putShadow).
func (r *txRow) noteShadow(h HLC) {
	if r.shadow.Less(h) {
		r.shadow = h
	}
}

// pkKey returns the encoding of the row's primary key alone
// (layout.RowKey(nil, r.pk)): the end of its row key, past its table's
// key, without allocating.
func (r *txRow) pkKey() string {
	if r.tbl != nil {
		if tk := r.tbl.key; len(r.key) >= len(tk) && r.key[:len(tk)] == string(tk) {
			return r.key[len(tk):]
		}
	}
	return string(layout.RowKey(nil, r.pk))
}

// writeTx is the state of one kv read-write transaction of the engine, used
// by local writes, ApplyChanges, snapshot apply and the replay of held changes. Rows
// are cached decoded and written back once, at flush, with their change-log
// and index entries.
type writeTx struct {
	e      *Engine
	kv     kv.Tx
	meta   metaState
	schema *schemaState
	// schema0 is the schema at begin: commit compares it with schema to
	// find the tables whose shape a migration changed.
	schema0 *schemaState

	// mergeOwn: an apply merges this replica's own ChangeSets too
	// (ApplyOptions.MergeOwn).
	mergeOwn bool

	// Local transactions: base is the tick taken at begin; opSeq numbers
	// the facts. A transaction that records no fact writes no clock.
	base  HLC
	opSeq uint32

	rows map[string]*txRow
	// order lists the rows added to rows, in the order they were added
	// (rows in key order then need no sort at flush); it is only used
	// while it holds every row of rows.
	order []*txRow
	// own collects, per transaction base of this replica, the rows its
	// change-log entry lists; ownDirty marks entries to write at the next
	// flush, ownLoaded those whose stored rows were merged in.
	own           map[HLC][]string // row keys, unsorted, possibly repeated
	ownDirty      map[HLC]bool
	ownLoaded     map[HLC]bool
	schemaChanged bool
	clock         clockState // clock state to persist, if clockDirty
	clockDirty    bool
	migs          []SchemaMigration // migrations recorded by this transaction
	// out is the row the transaction's last Insert, Update or Upsert
	// returned (a WriteNote's Value is given it).
	out Row
}

// begin starts a write transaction without hints (out of line: see checkOpen).
//
//go:noinline
func (e *Engine) begin(tx kv.Tx) (*writeTx, error) {
	return e.beginHinted(tx, nil)
}

// beginHinted reads the meta record and the hinted rows, in one round trip
// when the store supports it.
func (e *Engine) beginHinted(tx kv.Tx, hint []hintRow) (*writeTx, error) {
	var read []hintRow
	for _, h := range hint {
		if !h.fresh {
			read = append(read, h)
		}
	}
	var m metaState
	var vals [][]byte
	var keys [][]byte
	// Through GetBatch even when only the meta record is read (an insert
	// with a generated key): a store may answer a first GetBatch from what
	// it committed before (idbkv's speculative reads).
	bg, batch := tx.(kv.BatchGetter)
	if batch && len(hint) > 0 {
		refs := make([]kv.BucketKey, 0, 1+len(read))
		refs = append(refs, kv.BucketKey{Bucket: layout.BucketMeta, Key: layout.MetaClock})
		for _, h := range read {
			k := layout.RowKey(h.t.key, h.pk)
			keys = append(keys, k)
			refs = append(refs, kv.BucketKey{Bucket: layout.BucketRows, Key: k})
		}
		got, err := bg.GetBatch(refs)
		if err != nil {
			return nil, err
		}
		if got[0] != nil {
			if m, err = decodeMeta(got[0]); err != nil {
				return nil, err
			}
		}
		vals = got[1:]
	} else {
		var err error
		if m, err = readMeta(tx); err != nil {
			return nil, err
		}
	}
	s, err := e.schemaFor(tx, m.schemaVer)
	if err != nil {
		return nil, err
	}
	w := &writeTx{e: e, kv: tx, meta: m, schema: s, schema0: s, rows: map[string]*txRow{}, clock: m.clock}
	for i, h := range read {
		t := w.effTable(h.t.def.Name)
		if t == nil || vals == nil || !bytes.Equal(t.key, h.t.key) {
			continue // read by the statement itself (a renamed table: under its identity)
		}
		if _, ok := w.rows[string(keys[i])]; ok {
			continue
		}
		if _, err := w.addRow(t, h.pk, string(keys[i]), vals[i]); err != nil {
			return nil, err
		}
	}
	for _, h := range hint {
		if h.fresh {
			if t := w.effTable(h.t.def.Name); t != nil && t.name == h.t.def.Name {
				w.freshRow(t, h.pk)
			}
		}
	}
	return w, nil
}

// freshRow records that the row (t, pk) does not exist, without reading
// it: its key was just generated (a UUIDv7 cannot collide).
func (w *writeTx) freshRow(t *table, pk []Value) {
	rk := string(layout.RowKey(t.key, pk))
	if _, ok := w.rows[rk]; !ok {
		r := &txRow{key: rk, table: t.def.Name, tbl: t, pk: pk}
		w.rows[rk] = r
		w.order = append(w.order, r)
	}
}

// localCommit is a committed local transaction: its ChangeSet (without
// Changes under Options.OmitLocalChanges) and the tables it wrote.
type localCommit struct {
	cs     *ChangeSet
	tables []string
	rows   []RowChange // OmitLocalChanges: what the event says instead of cs.Changes
}

// changeSet returns the transaction's ChangeSet; nil for a nil lc.
func (lc *localCommit) changeSet() *ChangeSet {
	if lc == nil {
		return nil
	}
	return lc.cs
}

// write runs fn as one local transaction: one HLC tick, facts numbered in
// write order, everything committed in one kv transaction. It returns the
// committed transaction, or nil when fn recorded nothing (and then nothing,
// not even the clock, was written).
func (e *Engine) write(fn func(*writeTx) error) (*localCommit, error) {
	return e.writeHinted(nil, fn)
}

// hintRow names a row a write transaction is about to read: it is read
// together with the meta record, in one round trip where the store can
// (kv.BatchGetter). fresh marks a row known not to exist (a generated
// UUIDv7 key): nothing is read for it.
type hintRow struct {
	t     *table
	pk    []Value
	fresh bool
}

// writeHinted is write with the rows fn will read named up front.
func (e *Engine) writeHinted(hint []hintRow, fn func(*writeTx) error) (*localCommit, error) {
	return e.writeAfter(nil, hint, fn)
}

// writeAfter is writeHinted with pre, when not nil, run first in the same
// store transaction, before anything else is read: Open reads the site id
// there (openSite), which the transaction's clock stamps carry.
func (e *Engine) writeAfter(pre func(kv.Tx) error, hint []hintRow, fn func(*writeTx) error) (*localCommit, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var lc *localCommit
	var folded *schemaState
	err := e.store.Update(func(tx kv.Tx) error {
		lc, folded = nil, nil
		if pre != nil {
			if err := pre(tx); err != nil {
				return err
			}
		}
		w, err := e.beginHinted(tx, hint)
		if err != nil {
			return err
		}
		next := w.meta.clock.tick(e.clock.Now())
		w.base = HLC{Wall: next.Wall, Counter: next.Counter, Site: e.site}
		if err := fn(w); err != nil {
			return err
		}
		if n := e.note.Load(); n != nil {
			// The caller's record of this write, in its transaction
			// (written even when the write changed nothing).
			if err := n.put(tx, w.out); err != nil {
				return err
			}
		}
		if w.opSeq == 0 {
			return nil
		}
		w.clock, w.clockDirty = next, true
		if err := w.commit(); err != nil {
			return err
		}
		if w.schemaChanged {
			folded = w.schema
		}
		if e.opts.OmitLocalChanges {
			lc = w.localCommitLean()
		} else {
			cs := w.localChangeSet()
			lc = &localCommit{cs: cs, tables: tablesOf(cs)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.publishSchema(folded)
	return lc, nil
}

// publishSchema makes s, the schema a committed transaction folded (nil:
// it changed none), the engine's cached one unless the cache holds a
// later version already, so that what reads only the cache (a staged
// insert: Staged.insertTable) sees a migration at once rather than after
// the next transaction reloads it (schemaFor).
func (e *Engine) publishSchema(s *schemaState) {
	if s == nil {
		return
	}
	e.mu.Lock()
	if e.schema == nil || e.schema.version <= s.version {
		e.schema = s
	}
	e.mu.Unlock()
}

// nextHLC stamps the next fact of a local transaction.
func (w *writeTx) nextHLC() HLC {
	h := w.base
	h.OpSeq = w.opSeq
	w.opSeq++
	return h
}

// receiveClock max-merges h, an HLC received from a peer, into the
// transaction's clock (a zero h changes nothing).
func (w *writeTx) receiveClock(h HLC) {
	if h.IsZero() {
		return
	}
	if c := w.clock.receive(h); c != w.clock {
		w.clock, w.clockDirty = c, true
	}
}

// commit flushes rows and writes the clock and schema version. It ends the
// transaction's writes: rows must not change after it (their committed and
// current states may then be one record).
func (w *writeTx) commit() error {
	if w.schemaChanged {
		// Before the flush, so that the rows it changes are flushed
		// with their change-log, prune-index and index entries.
		if err := w.retireDropped(); err != nil {
			return err
		}
		if err := w.mergeRenamed(); err != nil {
			return err
		}
	}
	if err := w.flushRows(true); err != nil {
		return err
	}
	if w.schemaChanged {
		if err := w.reconcileTables(); err != nil {
			return err
		}
	}
	if w.clockDirty || w.schemaChanged {
		// The schema itself reaches this engine's cache only through
		// schemaFor after the commit, so a failed commit cannot leak it.
		m := metaState{clock: w.meta.clock, schemaVer: w.meta.schemaVer}
		if w.clockDirty {
			m.clock = w.clock
		}
		if w.schemaChanged {
			m.schemaVer = w.schema.version
		}
		if err := putMeta(w.kv, m); err != nil {
			return err
		}
	}
	return nil
}

// effTable returns the effective table for name: the schema's, or in
// schema-less mode a synthetic one so any table can be stored.
func (w *writeTx) effTable(name string) *table {
	if t := w.schema.table(name); t != nil {
		return t
	}
	if w.e.declared == nil {
		name = w.schema.resolve(name)
		return &table{def: TableDef{Name: name}, key: layout.TableKey(name), name: name, asReceived: true}
	}
	return nil
}

// load returns the txRow for (t, pk), reading it from the store if this
// transaction has not touched it yet.
func (w *writeTx) load(t *table, pk []Value) (*txRow, error) {
	var buf [128]byte
	if r, ok := w.rows[string(layout.AppendRowKey(buf[:0], t.key, pk))]; ok {
		return r, nil // looked up without allocating the key
	}
	rk := layout.RowKey(t.key, pk)
	v, err := w.kv.Get(layout.BucketRows, rk)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return nil, err
	}
	return w.addRow(t, pk, string(rk), v)
}

func (w *writeTx) addRow(t *table, pk []Value, rk string, v []byte) (*txRow, error) {
	r := &txRow{key: rk, table: t.def.Name, tbl: t, pk: pk}
	if v != nil {
		rec, err := rowrec.Decode(v, pk)
		if err != nil {
			return nil, fmt.Errorf("row %s %v: %w", t.def.Name, pk, err)
		}
		r.orig = rec
		r.cur = rec.Clone()
	}
	w.rows[rk] = r
	w.order = append(w.order, r)
	return r, nil
}

// prefetch loads every listed row the transaction has not touched yet with
// one GetMany (one IndexedDB round trip instead of one per row).
func (w *writeTx) prefetch(t *table, pks [][]Value) error {
	keys := make([][]byte, len(pks))
	for i, pk := range pks {
		keys[i] = layout.RowKey(t.key, pk)
	}
	return w.prefetchKeyed(t, keys, pks)
}

// prefetchKeyed is prefetch with the row keys of pks given (rks[i] is
// layout.RowKey(t.key, pks[i])).
func (w *writeTx) prefetchKeyed(t *table, rks [][]byte, pks [][]Value) error {
	keys := make([][]byte, 0, len(rks))
	want := make([][]Value, 0, len(rks))
	for i, rk := range rks {
		if _, ok := w.rows[string(rk)]; ok {
			continue
		}
		keys = append(keys, rk)
		want = append(want, pks[i])
	}
	if len(keys) == 0 {
		return nil
	}
	if len(keys) >= rangePrefetchMin {
		done, err := w.prefetchRange(t, keys, want)
		if err != nil || done {
			return err
		}
	}
	vals, err := w.kv.GetMany(layout.BucketRows, keys)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if _, ok := w.rows[string(k)]; ok {
			continue // duplicate key in the list
		}
		if _, err := w.addRow(t, want[i], string(k), vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// rangePrefetchMin is the number of rows from which prefetch first tries
// one range read instead of one read per row.
const rangePrefetchMin = 64

// prefetchRange reads the rows between the smallest and the largest of
// keys with one range scan, which is one request on IndexedDB instead of
// one per key — a bulk insert into an empty or sparse key range (an
// import, a snapshot) finds out that none of its rows exist almost for
// free. It gives up (done false) when the range holds more than about twice
// as many rows as asked for, so a scattered batch over a full table does
// not read the table.
func (w *writeTx) prefetchRange(t *table, keys [][]byte, pks [][]Value) (done bool, err error) {
	lo, hi := keys[0], keys[0]
	for _, k := range keys[1:] {
		if bytes.Compare(k, lo) < 0 {
			lo = k
		}
		if bytes.Compare(k, hi) > 0 {
			hi = k
		}
	}
	limit := 2*len(keys) + 16
	found := map[string][]byte{}
	n := 0
	err = w.kv.Scan(layout.BucketRows, kv.Range{Start: lo, End: append(bytes.Clone(hi), 0), Limit: limit}, func(k, v []byte) bool {
		n++
		found[string(k)] = v
		return true
	})
	if err != nil || n >= limit {
		return false, err
	}
	for i, k := range keys {
		if _, ok := w.rows[string(k)]; ok {
			continue
		}
		if _, err := w.addRow(t, pks[i], string(k), found[string(k)]); err != nil {
			return false, err
		}
	}
	return true, nil
}

// MaxLocalRowSize bounds the stored size of a row a local write leaves: a
// quarter of the storage limit (kv.MaxValueSize, 8 MiB). Merging concurrent
// writes of different columns can grow a row beyond what any one device
// wrote, and a merged row over the storage limit could be applied by no
// replica, cutting sync in both directions; the margin leaves room for
// that. Applies (changes, snapshots) keep the storage limit. A local write
// that does not grow a row already above the bound (merged so) is allowed:
// clearing a column, deleting the row.
const MaxLocalRowSize = kv.MaxValueSize / 4

// flush writes every dirty row with its change-log and index entries.
func (w *writeTx) flush() error { return w.flushRows(false) }

// flushRows is flush; final (the commit's flush) shares each flushed row's
// current record as its committed one instead of copying it, as nothing
// changes the rows afterwards.
func (w *writeTx) flushRows(final bool) error {
	local := !w.base.IsZero() // a local transaction, not an apply
	// The index entries of the rows written are written even when a later
	// row fails: those rows are clean now, and a transaction may go on
	// after a failed statement (Engine.Transact) and commit them.
	ixw, err := w.flushEach(w.dirtyRows(), final, local)
	if werr := w.writeIndexes(ixw); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	return w.flushOwnLog()
}

// flushEach writes the rows of dirty with their change-log entries and
// returns their index entries, to write in key order. On failure it
// returns those of the rows written in full before the failing one, which
// stays dirty (its entries are diffed again from its committed state).
func (w *writeTx) flushEach(dirty []*txRow, final, local bool) (ixw []indexWrite, err error) {
	var buf []byte
	var ob, nb []HLC // scratch: the bases of each row's states
	for _, r := range dirty {
		rk := []byte(r.key)
		if !r.dirty {
			// A row that only gained a shadow tombstone.
			if err := w.diffTomb(r, rk); err != nil {
				return ixw, err
			}
			continue
		}
		ob, nb = r.orig.AppendBases(ob), r.cur.AppendBases(nb)
		if buf, err = w.writeRecord(r, rk, buf, ob, nb, local); err != nil {
			return ixw, err
		}
		if err := w.diffLog(r, rk, ob, nb); err != nil {
			return ixw, err
		}
		if err := w.diffTomb(r, rk); err != nil {
			return ixw, err
		}
		if r.tbl != nil && len(r.tbl.indexes) > 0 {
			if ixw == nil {
				ixw = make([]indexWrite, 0, len(dirty)*len(r.tbl.indexes))
			}
			out, err := w.diffIndexes(ixw, r, r.tbl.resurrect)
			if err != nil {
				return ixw, err
			}
			ixw = out
		}
		if final {
			r.orig = r.cur
		} else {
			r.orig = r.cur.Clone()
		}
		r.dirty = false
	}
	return ixw, nil
}

// dirtyRows returns the dirty rows, and those with only a shadow
// tombstone to record (txRow.shadow), in key order.
func (w *writeTx) dirtyRows() []*txRow {
	dirty := make([]*txRow, 0, len(w.rows))
	if len(w.order) == len(w.rows) {
		// Rows are usually added in key order (a snapshot chunk, a bulk
		// insert of ascending keys): then they need no sort.
		for _, r := range w.order {
			if r.dirty || !r.shadow.IsZero() {
				dirty = append(dirty, r)
			}
		}
	} else {
		for _, r := range w.rows {
			if r.dirty || !r.shadow.IsZero() {
				dirty = append(dirty, r)
			}
		}
	}
	if !slices.IsSortedFunc(dirty, compareRowKeys) {
		slices.SortFunc(dirty, compareRowKeys)
	}
	return dirty
}

// writeRecord stores r's current record under rk (ob and nb: the bases of
// its committed and current states), or deletes the stored one when the
// row has no cell and no tombstone left. A record over kv.MaxValueSize, or
// in a local transaction over MaxLocalRowSize and larger than before, is a
// *ValidationError. buf is scratch for the encoding; writeRecord returns
// it, grown.
func (w *writeTx) writeRecord(r *txRow, rk, buf []byte, ob, nb []HLC, local bool) ([]byte, error) {
	if r.cur == nil || (len(r.cur.Cells) == 0 && !r.cur.HasTomb) {
		if r.orig != nil {
			return buf, w.kv.Delete(layout.BucketRows, rk)
		}
		return buf, nil
	}
	var pkCols []string
	if r.tbl != nil {
		pkCols = r.tbl.pkCols
	}
	buf = rowrec.EncodeBases(buf[:0], r.cur, nb, r.pk, pkCols)
	if len(buf) > kv.MaxValueSize {
		return buf, &ValidationError{Table: r.table, Reason: fmt.Sprintf(
			"row %s is too large (%d bytes stored, limit %d)", fmtKey(r.pk), len(buf), kv.MaxValueSize)}
	}
	if local && len(buf) > MaxLocalRowSize {
		var was int
		if r.orig != nil {
			was = len(rowrec.EncodeBases(nil, r.orig, ob, r.pk, pkCols))
		}
		if len(buf) > was {
			return buf, &ValidationError{Table: r.table, Reason: fmt.Sprintf(
				"row %s is too large for a local write (%d bytes stored, limit %d: a quarter of the storage limit, so that merges of concurrent writes still fit)",
				fmtKey(r.pk), len(buf), MaxLocalRowSize)}
		}
	}
	return buf, w.kv.Put(layout.BucketRows, rk, buf)
}

func compareRowKeys(a, b *txRow) int { return strings.Compare(a.key, b.key) }

// diffLog updates the change log for one row: a peer's transactions get a
// per-row entry while the row holds one of their facts; this replica's own
// transactions get the row added to their entry (written by flushOwnLog).
// An own entry is not rewritten when the row loses the transaction's facts:
// ChangesSince skips rows without them, and Prune drops the entry later.
// ob and nb are the bases of r.orig and r.cur.
func (w *writeTx) diffLog(r *txRow, rk []byte, ob, nb []HLC) error {
	remote := !w.e.opts.LocalChangeLogOnly
	for _, b := range ob {
		if remote && b.Site != w.e.site && !containsBase(nb, b) {
			if err := w.kv.Delete(layout.BucketLog, layout.LogKey(layout.ClassRemote, b, rk)); err != nil {
				return err
			}
		}
	}
	for _, b := range nb {
		if containsBase(ob, b) {
			continue
		}
		if b.Site == w.e.site {
			w.addOwn(b, r.key)
		} else if remote {
			if err := w.kv.Put(layout.BucketLog, layout.LogKey(layout.ClassRemote, b, rk), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// addOwn lists row rk in the own entry of base. A list, sorted and rid of
// repeats when written, not a set: a 10,000-row transaction adds 10,000
// keys, and a map of them cost more than the sort.
func (w *writeTx) addOwn(base HLC, rk string) {
	if w.own == nil {
		w.own, w.ownDirty, w.ownLoaded = map[HLC][]string{}, map[HLC]bool{}, map[HLC]bool{}
	}
	w.own[base] = append(w.own[base], rk)
	w.ownDirty[base] = true
}

// flushOwnLog writes the own change-log entries that changed: the entry of
// this local transaction (new: it cannot exist yet, its base is a fresh
// tick), and, read-modify-write, entries of earlier own transactions that
// gained rows (own facts can come back in a snapshot).
func (w *writeTx) flushOwnLog() error {
	if len(w.ownDirty) == 0 {
		return nil
	}
	var load []HLC
	for b := range w.ownDirty {
		if b != w.base && !w.ownLoaded[b] {
			load = append(load, b)
		}
	}
	if len(load) > 0 {
		keys := make([][]byte, len(load))
		for i, b := range load {
			keys[i] = layout.OwnLogKey(b)
		}
		vals, err := w.kv.GetMany(layout.BucketLog, keys)
		if err != nil {
			return err
		}
		for i, b := range load {
			w.ownLoaded[b] = true
			if vals[i] == nil {
				continue
			}
			rks, err := layout.DecodeRowList(vals[i])
			if err != nil {
				return err
			}
			for _, rk := range rks {
				w.own[b] = append(w.own[b], string(rk))
			}
		}
	}
	for b := range w.ownDirty {
		rks := w.own[b]
		slices.Sort(rks)
		rks = slices.Compact(rks)
		w.own[b] = rks
		v := layout.EncodeRowList(rks)
		if len(v) > kv.MaxValueSize {
			return fmt.Errorf("%w: a transaction touching %d rows is too large to record (its change-log entry would be %d bytes, limit %d); split it", ErrValidation, len(rks), len(v), kv.MaxValueSize)
		}
		if err := w.kv.Put(layout.BucketLog, layout.OwnLogKey(b), v); err != nil {
			return err
		}
		delete(w.ownDirty, b)
	}
	return nil
}

// diffTomb keeps the prune index in step with the row's tombstone.
func (w *writeTx) diffTomb(r *txRow, rk []byte) error {
	var ob, nb HLC
	oHas := r.orig != nil && r.orig.HasTomb
	nHas := r.cur != nil && r.cur.HasTomb
	if oHas {
		ob = r.orig.Tomb.Base()
	}
	if nHas {
		nb = r.cur.Tomb.Base()
	}
	if oHas && (!nHas || ob != nb) {
		if r.orig.Tomb.Site == w.e.site {
			// An own tombstone's entry may name a shadow tombstone.
			if _, err := w.dropShadow(ob, rk); err != nil {
				return err
			}
		}
		if err := w.kv.Delete(layout.BucketTombs, layout.TombKey(ob, rk)); err != nil {
			return err
		}
	}
	if nHas && (!oHas || ob != nb) {
		if err := w.kv.Put(layout.BucketTombs, layout.TombKey(nb, rk), nil); err != nil {
			return err
		}
	}
	if s := r.shadow; !s.IsZero() {
		r.shadow = HLC{}
		if nHas && r.cur.Tomb.Site == w.e.site && s.Less(r.cur.Tomb) && s.Base() != nb {
			return w.putShadow(nb, s, rk)
		}
	}
	return nil
}

// Shadow tombstones. A row whose tombstone is this replica's own may have
// superseded another tombstone, its shadow: the newest the row received
// below the own one. A delete-wins row's only: under resurrection the
// pruning of a tombstone decides no cell (pruneShadow). Until the own
// deletion reaches the relay, the relay's row carries the shadow instead,
// and prunes at a horizon mark by it: a delete-wins row whose tombstone
// goes loses its cells, the dead ones of other sites included, and the own
// deletion applied after that pruning leaves a bare tombstone. The row
// record keeps one tombstone, so the prune index keeps the shadow:
//
//	tombs  own tombstone's base ‖ rk → the shadow's HLC (30 bytes)
//	       shadow's base ‖ rk        → empty
//
// The second entry lies where PruneTombstonesWith looks for tombstones
// past its bound; the first tells it which row's shadow it is (a row keeps
// the newest only). An engine of an earlier version reads both as entries
// of the row's tombstone, the second as a stale one it deletes.

// putShadow records s as the shadow of row rk, whose own tombstone has
// base nb, unless it already has a newer one.
func (w *writeTx) putShadow(nb, s HLC, rk []byte) error {
	tk := layout.TombKey(nb, rk)
	v, err := w.kv.Get(layout.BucketTombs, tk)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if old, ok := decodeShadow(v); ok {
		if !old.Less(s) {
			return nil
		}
		if err := w.kv.Delete(layout.BucketTombs, layout.TombKey(old.Base(), rk)); err != nil {
			return err
		}
	}
	if err := w.kv.Put(layout.BucketTombs, layout.TombKey(s.Base(), rk), nil); err != nil {
		return err
	}
	return w.kv.Put(layout.BucketTombs, tk, s.Bytes())
}

// dropShadow removes the shadow recorded with the own tombstone of base
// ob of row rk, if any, and returns it.
func (w *writeTx) dropShadow(ob HLC, rk []byte) (HLC, error) {
	s, err := w.shadowOf(ob, rk)
	if err != nil || s.IsZero() {
		return s, err
	}
	if err := w.kv.Delete(layout.BucketTombs, layout.TombKey(s.Base(), rk)); err != nil {
		return HLC{}, err
	}
	return s, w.kv.Put(layout.BucketTombs, layout.TombKey(ob, rk), nil)
}

// shadowOf returns the shadow recorded with the own tombstone of base ob
// of row rk (zero: none).
func (w *writeTx) shadowOf(ob HLC, rk []byte) (HLC, error) {
	v, err := w.kv.Get(layout.BucketTombs, layout.TombKey(ob, rk))
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return HLC{}, err
	}
	s, _ := decodeShadow(v)
	return s, nil
}

// decodeShadow reads the value of an own tombstone's prune index entry:
// its shadow, if it has one.
func decodeShadow(v []byte) (HLC, bool) {
	if len(v) != HLCSize {
		return HLC{}, false
	}
	s, err := HLCFromBytes(v)
	return s, err == nil && !s.IsZero()
}

func containsBase(list []HLC, b HLC) bool {
	for _, x := range list {
		if x == b {
			return true
		}
	}
	return false
}

// indexWrite is an index entry to put (del false) or delete.
type indexWrite struct {
	key []byte
	del bool
}

// diffIndexes appends to out the index entries row r's change removes
// and adds; flushRows writes them.
func (w *writeTx) diffIndexes(out []indexWrite, r *txRow, allow bool) ([]indexWrite, error) {
	ov, nv := r.orig.Visible(allow), r.cur.Visible(allow)
	for _, ix := range r.tbl.indexes {
		var ok, nk []byte
		if ov {
			ok = r.tbl.recIndexKey(ix, r.orig, r.pk)
		}
		if nv {
			nk = r.tbl.recIndexKey(ix, r.cur, r.pk)
			if len(nk) > kv.MaxKeySize {
				return out, &ValidationError{Table: r.table, Column: ix.def.Columns[0], Reason: fmt.Sprintf(
					"value too long for index %s (%d bytes encoded, limit %d)", ix.def.Name, len(nk), kv.MaxKeySize)}
			}
		}
		if bytes.Equal(ok, nk) {
			continue
		}
		if ok != nil {
			out = append(out, indexWrite{key: ok, del: true})
		}
		if nk != nil {
			out = append(out, indexWrite{key: nk})
		}
	}
	return out, nil
}

// writeIndexes writes the index entries of a flush in key order (each
// key is one row's: the order changes nothing stored, and a store keeps
// keys written in order cheaply, see idbkv's overlay).
func (w *writeTx) writeIndexes(ws []indexWrite) error {
	for i := 1; i < len(ws); i++ {
		if bytes.Compare(ws[i-1].key, ws[i].key) > 0 {
			// sort.Slice, not slices.SortFunc: no sort code of its own
			// in replica.wasm (issue 17, W9).
			sort.Slice(ws, func(i, j int) bool { return bytes.Compare(ws[i].key, ws[j].key) < 0 })
			break
		}
	}
	for _, x := range ws {
		var err error
		if x.del {
			err = w.kv.Delete(layout.BucketIndex, x.key)
		} else {
			err = w.kv.Put(layout.BucketIndex, x.key, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkIndexKeys rejects a row whose entry in one of t's indexes would not
// fit the kv key limit. Local writes call it before changing anything, so
// the statement fails, not the transaction at commit.
func (t *table) checkIndexKeys(row Row, pk []Value) error {
	var buf [256]byte
	for _, ix := range t.indexes {
		if k := appendIndexKey(buf[:0], ix, row, pk); len(k) > kv.MaxKeySize {
			return &ValidationError{Table: t.name, Column: ix.def.Columns[0], Reason: fmt.Sprintf(
				"value too long for index %s (%d bytes encoded, limit %d)", ix.def.Name, len(k), kv.MaxKeySize)}
		}
	}
	return nil
}

// indexKey returns table ‖ index name ‖ column values ‖ pk.
func indexKey(ix *compiledIndex, row Row, pk []Value) []byte {
	return appendIndexKey(make([]byte, 0, len(ix.prefix)+24*len(ix.def.Columns)+16*len(pk)), ix, row, pk)
}

// appendIndexKey appends indexKey(ix, row, pk) to dst.
func appendIndexKey(dst []byte, ix *compiledIndex, row Row, pk []Value) []byte {
	k := append(dst, ix.prefix...)
	for _, c := range ix.def.Columns {
		k = keyenc.AppendValue(k, row[c])
	}
	return keyenc.AppendTuple(k, pk)
}

// recIndexKey is indexKey(ix, t.rowOf(rec, pk), pk) without building the
// row: an index column's value is its cell's, else the key's (key
// columns), else null.
func (t *table) recIndexKey(ix *compiledIndex, rec *rowrec.Record, pk []Value) []byte {
	k := make([]byte, 0, len(ix.prefix)+24*len(ix.def.Columns)+16*len(pk))
	k = append(k, ix.prefix...)
	for _, c := range ix.def.Columns {
		k = keyenc.AppendValue(k, t.recValue(rec, pk, c))
	}
	return keyenc.AppendTuple(k, pk)
}

// recValue returns t.rowOf(rec, pk)[col].
func (t *table) recValue(rec *rowrec.Record, pk []Value, col string) Value {
	if i := rec.Find(col); i >= 0 {
		return rec.Cells[i].Val
	}
	for i, n := range t.pkCols {
		if n == col && i < len(pk) {
			return pk[i]
		}
	}
	return Null
}

// factsOf returns the facts of transaction base recorded in rec, unsorted.
func factsOf(rec *rowrec.Record, base HLC, table string, pk []Value) []Change {
	return appendFacts(nil, rec, base, table, pk)
}

// appendFacts is factsOf appending to out.
func appendFacts(out []Change, rec *rowrec.Record, base HLC, table string, pk []Value) []Change {
	if rec == nil {
		return out
	}
	if rec.HasTomb && rec.Tomb.SameTransaction(base) {
		out = append(out, Change{Type: RowDeletion, Table: table, PK: pk, HLC: rec.Tomb, PriorRow: rec.PriorRow})
	}
	for i := range rec.Cells {
		c := &rec.Cells[i]
		if c.HLC.SameTransaction(base) {
			out = append(out, Change{Type: ColumnChange, Table: table, PK: pk, Column: c.Col, Value: c.Val, HLC: c.HLC})
			setPrior(&out[len(out)-1], c.Prior)
		}
	}
	return out
}

// localCommitLean is the localCommit of OmitLocalChanges: the ChangeSet
// without Changes, its HLC and tables read from the rows without building
// a Change.
func (w *writeTx) localCommitLean() *localCommit {
	cs := &ChangeSet{SiteID: w.e.site, TransactionID: w.base.TransactionID(), Migrations: w.migs}
	var seen map[string]bool
	var tables []string
	for _, m := range w.migs {
		if !seen[m.TableName] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[m.TableName] = true
			tables = append(tables, m.TableName)
		}
		if cs.HLC.Less(m.HLC) {
			cs.HLC = m.HLC
		}
	}
	// The rows in the order they were added when that lists them all
	// (usually key order already, so the sort below only checks it).
	src := w.order
	if len(src) != len(w.rows) {
		src = make([]*txRow, 0, len(w.rows))
		for _, r := range w.rows {
			src = append(src, r)
		}
	}
	// One backing array for every row's Columns (a row's own, grown by
	// append, was a third of a 10,000-row transaction's cost here).
	nCols := 0
	for _, r := range src {
		if r.cur != nil {
			nCols += len(r.cur.Cells)
		}
	}
	colBuf := make([]string, 0, nCols)
	rows := make([]RowChange, 0, len(src))
	keys := make([]string, 0, len(src))
	for _, r := range src {
		rec := r.cur
		if rec == nil {
			continue
		}
		has := false
		var rc RowChange
		if rec.HasTomb && rec.Tomb.SameTransaction(w.base) {
			has = true
			rc.Deleted = true
			if cs.HLC.Less(rec.Tomb) {
				cs.HLC = rec.Tomb
			}
		}
		c0 := len(colBuf)
		for i := range rec.Cells {
			if h := rec.Cells[i].HLC; h.SameTransaction(w.base) {
				has = true
				colBuf = append(colBuf, rec.Cells[i].Col)
				if cs.HLC.Less(h) {
					cs.HLC = h
				}
			}
		}
		if len(colBuf) > c0 {
			rc.Columns = colBuf[c0:len(colBuf):len(colBuf)]
		}
		if has {
			rc.Table, rc.PK = r.table, r.pk
			if rc.Deleted && rec.PriorRow != nil && rec.Tomb.SameTransaction(w.base) {
				// The image tombstone recorded (priorImage: values too
				// large to keep are left out), with the key.
				rc.Prior = make(Row, len(rec.PriorRow)+len(r.pk))
				for k, v := range rec.PriorRow {
					rc.Prior[k] = v
				}
				if r.tbl != nil {
					for i, n := range r.tbl.pkCols {
						if _, ok := rc.Prior[n]; !ok && i < len(r.pk) {
							rc.Prior[n] = r.pk[i]
						}
					}
				}
			}
			rows = append(rows, rc)
			keys = append(keys, r.pkKey())
		}
		if has && !seen[r.table] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[r.table] = true
			tables = append(tables, r.table)
		}
	}
	if len(rows) == 0 {
		rows = nil
	}
	sort.Strings(tables)
	sortRowChangesKeyed(rows, keys)
	return &localCommit{cs: cs, tables: tables, rows: rows}
}

// setPrior copies a cell's before-image into its Change.
func setPrior(c *Change, p *rowrec.Prior) {
	if p != nil {
		c.HasPrior, c.PriorValue, c.PriorHLC = true, p.Val, p.HLC
	}
}

// localChangeSet builds the ChangeSet of the local transaction just
// flushed, from the same records ChangesSince reads, so both agree.
func (w *writeTx) localChangeSet() *ChangeSet {
	cs := &ChangeSet{SiteID: w.e.site, TransactionID: w.base.TransactionID(), Migrations: w.migs}
	if !w.placeFacts(cs) {
		n := 0
		for _, r := range w.rows {
			if r.cur != nil {
				n += len(r.cur.Cells) + 1
			}
		}
		cs.Changes = make([]Change, 0, n)
		for _, r := range w.rows {
			cs.Changes = appendFacts(cs.Changes, r.cur, w.base, r.table, r.pk)
		}
		sortChanges(cs.Changes)
	}
	cs.HLC = maxFactHLC(cs)
	return cs
}

// placeFacts fills cs.Changes with the transaction's facts in HLC order
// without sorting: they share one base, so their order is their opSeqs',
// and each is written straight to its rank among the opSeqs still held
// (moving ~200-byte Changes through a comparison sort was a fifth of a
// 1,000-row transaction's cost). It reports false, having done nothing,
// when the facts are not distinct opSeqs below the transaction's count.
func (w *writeTx) placeFacts(cs *ChangeSet) bool {
	n := w.opSeq
	rank := make([]int32, n)
	mark := func(h HLC) bool {
		if !h.SameTransaction(w.base) {
			return true
		}
		if h.OpSeq >= n || rank[h.OpSeq] != 0 {
			return false
		}
		rank[h.OpSeq] = 1
		return true
	}
	for _, r := range w.rows {
		if r.cur == nil {
			continue
		}
		if r.cur.HasTomb && !mark(r.cur.Tomb) {
			return false
		}
		for i := range r.cur.Cells {
			if !mark(r.cur.Cells[i].HLC) {
				return false
			}
		}
	}
	total := int32(0)
	for i, m := range rank {
		rank[i] = total
		total += m
	}
	cs.Changes = make([]Change, total)
	for _, r := range w.rows {
		rec := r.cur
		if rec == nil {
			continue
		}
		if rec.HasTomb && rec.Tomb.SameTransaction(w.base) {
			cs.Changes[rank[rec.Tomb.OpSeq]] = Change{Type: RowDeletion, Table: r.table, PK: r.pk, HLC: rec.Tomb, PriorRow: rec.PriorRow}
		}
		for i := range rec.Cells {
			c := &rec.Cells[i]
			if c.HLC.SameTransaction(w.base) {
				ch := &cs.Changes[rank[c.HLC.OpSeq]]
				*ch = Change{Type: ColumnChange, Table: r.table, PK: r.pk, Column: c.Col, Value: c.Val, HLC: c.HLC}
				setPrior(ch, c.Prior)
			}
		}
	}
	return true
}

// sortChanges sorts cs by HLC. It sorts pointers, with the same pdqsort,
// comparisons and so the same resulting order as slices.SortFunc over cs
// itself: that would instantiate pdqsort for Change, about 20 KB of wasm
// code, where the pointer shape is shared with the engine's other sorts.
func sortChanges(cs []Change) {
	if len(cs) < 2 {
		return
	}
	ps := make([]*Change, len(cs))
	for i := range cs {
		ps[i] = &cs[i]
	}
	slices.SortFunc(ps, func(a, b *Change) int { return a.HLC.Compare(b.HLC) })
	sorted := make([]Change, len(cs))
	for i, p := range ps {
		sorted[i] = *p
	}
	copy(cs, sorted)
}

func maxFactHLC(cs *ChangeSet) HLC {
	var m HLC
	for i := range cs.Migrations {
		if m.Less(cs.Migrations[i].HLC) {
			m = cs.Migrations[i].HLC
		}
	}
	for i := range cs.Changes {
		if m.Less(cs.Changes[i].HLC) {
			m = cs.Changes[i].HLC
		}
	}
	return m
}

// recordMigration stamps and stores a local schema migration and folds it
// into this transaction's schema.
func (w *writeTx) recordMigration(m *SchemaMigration) error {
	m.HLC = w.nextHLC()
	return w.storeMigration(m, layout.ClassOwn)
}

func (w *writeTx) storeMigration(m *SchemaMigration, class byte) error {
	v, err := encodeMigration(m)
	if err != nil {
		return err
	}
	if err := w.kv.Put(layout.BucketMigrations, layout.MigrationKey(class, m.HLC), v); err != nil {
		return err
	}
	if class == layout.ClassOwn {
		w.migs = append(w.migs, *m)
	}
	all := append(append([]SchemaMigration(nil), w.schema.migrations...), *m)
	w.schema = foldSchema(w.meta.schemaVer+1, all, w.e.declared == nil)
	w.schemaChanged = true
	return nil
}

// tableShape is what stored rows and index entries depend on: the key, the
// column types, the indexes and the resurrection policy (which rows are live,
// so indexed).
func tableShape(t *table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%t|%q|", t.resurrect, t.pkCols)
	for _, c := range t.def.Columns {
		fmt.Fprintf(&b, "%q:%d,", c.Name, c.Type)
	}
	b.WriteByte('|')
	for _, ix := range t.def.Indexes {
		fmt.Fprintf(&b, "%q%q,", ix.Name, ix.Columns)
	}
	return b.String()
}

// reconcileTables brings the stored rows of every table whose shape this
// transaction's migrations changed in line with the new shape, as if the
// table had always had it: an index that appears (declared on reopen, from a
// peer's add_index, or folded in from another device's create_table) gets an
// entry for every live row that already exists, and cells stored before
// their column was known (or under another type) are normalized to the
// column's type as they would have been on arrival. Without this, a query
// answered through a new index silently misses the older rows, and two
// replicas that learned a column and its values in different orders hold
// different bytes. It runs after flush, over the committed-plus-own-writes
// state, and costs one pass over the rows of each changed table (schema
// changes are rare).
func (w *writeTx) reconcileTables() error {
	for _, name := range w.schema.names() {
		t := w.schema.tables[name]
		if old := w.schema0.table(name); old != nil && tableShape(old) == tableShape(t) {
			continue
		}
		if err := w.rebuildTable(t); err != nil {
			return err
		}
		for k, r := range w.rows {
			if r.table == name {
				delete(w.rows, k) // stale now: reload if used again
			}
		}
	}
	return nil
}

// rebuildTable rewrites t's rows and index entries for its current shape,
// a page (sourcePage rows) at a time: the index entries are dropped and
// written anew, each record re-encoded under the table's key, and, unless
// t keeps values as received, its cells normalized (refitCells).
func (w *writeTx) rebuildTable(t *table) error {
	tk := t.key
	if err := w.kv.DeleteRange(layout.BucketIndex, tk, kv.PrefixEnd(tk)); err != nil {
		return err
	}
	isKey := map[string]bool{}
	for _, n := range t.pkCols {
		isKey[n] = true
	}
	start, end := tk, kv.PrefixEnd(tk)
	for {
		p := rebuildPage{t: t, isKey: isKey}
		var derr error
		err := w.kv.Scan(layout.BucketRows, kv.Range{Start: start, End: end, Limit: sourcePage}, func(k, v []byte) bool {
			if derr = p.add(k, v); derr != nil {
				return false
			}
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
		if err := p.write(w); err != nil {
			return err
		}
		if p.n < sourcePage {
			return nil
		}
		start = append(p.last, 0)
	}
}

// rebuildPage collects the writes of one page of rebuildTable: they are
// made after the scan.
type rebuildPage struct {
	t     *table
	isKey map[string]bool // t's key columns
	n     int             // rows read
	last  []byte          // key of the last row read
	puts  []rowRewrite    // records re-encoded
	dels  [][]byte        // rows left without cells or tombstone
	holds []Change        // cells that no longer fit their column
	idx   [][]byte        // index keys
}

type rowRewrite struct{ k, v []byte }

// add reads the row stored under k (record v).
func (p *rebuildPage) add(k, v []byte) error {
	t := p.t
	p.n++
	p.last = bytes.Clone(k)
	_, pk, err := layout.SplitRowKey(k)
	if err != nil {
		return err
	}
	rec, err := rowrec.Decode(v, pk)
	if err != nil {
		return err
	}
	if !t.asReceived {
		p.refitCells(rec, pk)
		if len(rec.Cells) == 0 && !rec.HasTomb {
			p.dels = append(p.dels, bytes.Clone(k))
			return nil
		}
	}
	// Re-encoded under the table's key: a record written before
	// the key columns were known (schema-less) holds its key
	// cells as values, not as references to the key.
	if nb := rowrec.Encode(nil, rec, pk, t.pkCols); !bytes.Equal(nb, v) {
		p.puts = append(p.puts, rowRewrite{bytes.Clone(k), nb})
	}
	if rec.Visible(t.resurrect) && len(t.indexes) > 0 {
		row := t.rowOf(rec, pk)
		for _, ix := range t.indexes {
			ik := indexKey(ix, row, pk)
			if len(ik) > kv.MaxKeySize {
				return &ValidationError{Table: t.name, Column: ix.def.Columns[0], Reason: fmt.Sprintf(
					"value too long for index %s (%d bytes encoded, limit %d)", ix.def.Name, len(ik), kv.MaxKeySize)}
			}
			p.idx = append(p.idx, ik)
		}
	}
	return nil
}

// refitCells normalizes the value cells of rec (key pk) to their columns'
// types, keeping the cells of key or undeclared columns as they are.
func (p *rebuildPage) refitCells(rec *rowrec.Record, pk []Value) {
	t := p.t
	kept := rec.Cells[:0]
	for i := range rec.Cells {
		c := rec.Cells[i]
		d := t.cols[c.Col]
		if d == nil || p.isKey[c.Col] {
			kept = append(kept, c)
			continue
		}
		c.Val = normalizeRemote(d, c.Val)
		// A cell that no longer fits its column's type (two
		// declarations of the column folded to the older
		// one) is held (HeldWrongType), as it would have been
		// had it arrived after the fold: the outcome must
		// not depend on arrival order.
		if model.WrongType(d, c.Val) != "" {
			p.holds = append(p.holds, Change{Type: ColumnChange, Table: t.def.Name, PK: slices.Clone(pk), Column: c.Col, Value: c.Val, HLC: c.HLC})
			continue
		}
		if c.Prior != nil {
			c.Prior = &rowrec.Prior{Val: normalizeRemote(d, c.Prior.Val), HLC: c.Prior.HLC}
		}
		kept = append(kept, c)
	}
	rec.Cells = kept
}

// write makes the page's writes in w: records, deletions, held cells,
// index entries.
func (p *rebuildPage) write(w *writeTx) error {
	for _, r := range p.puts {
		if err := w.kv.Put(layout.BucketRows, r.k, r.v); err != nil {
			return err
		}
	}
	for _, k := range p.dels {
		if err := w.kv.Delete(layout.BucketRows, k); err != nil {
			return err
		}
	}
	for i := range p.holds {
		if err := w.holdAs(&p.holds[i], heldNoReplay); err != nil {
			return err
		}
	}
	for _, k := range p.idx {
		if err := w.kv.Put(layout.BucketIndex, k, nil); err != nil {
			return err
		}
	}
	return nil
}
