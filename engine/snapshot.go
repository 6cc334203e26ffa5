package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"strconv"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// DefaultSnapshotChunkRows is the number of rows per rows chunk when
// SnapshotOptions.ChunkRows is 0.
const DefaultSnapshotChunkRows = 1000

// DefaultSnapshotChunkBytes is the size bound, in bytes as RowBytes
// measures them, of a rows chunk when SnapshotOptions.ChunkBytes is 0
// (4 MiB).
const DefaultSnapshotChunkBytes = 4 << 20

// SnapshotOptions tune Snapshot.
type SnapshotOptions struct {
	// ChunkRows bounds the rows per rows chunk; 0 means
	// DefaultSnapshotChunkRows.
	ChunkRows int
	// ChunkBytes bounds the size of a rows chunk: the sum of RowBytes over
	// its rows; 0 means DefaultSnapshotChunkBytes. A chunk holds at least
	// one row, and a row larger than ChunkBytes on its own travels in
	// parts: consecutive rows chunks of one row each, every part carrying
	// the row's key and as many of its cells as fit (at least one; the
	// tombstone travels with the first). Applying the parts merges them
	// into the row like any facts (a join), so the result is the row; each
	// part counts as a row in the footer and in SnapshotProgress. A single
	// cell larger than ChunkBytes is a part alone.
	ChunkBytes int
	// RowBytes measures a row for ChunkBytes: the bytes it adds to its
	// chunk as the caller sends it (the relay passes wire.SnapshotRowSize,
	// an upper bound of the row's share of the encoded frame). nil means
	// SnapshotRowBytes.
	RowBytes func(*SnapshotRow) int
	// Cursor is stamped into the header (the relay's delivery cursor,
	// taken before the snapshot starts).
	Cursor uint64
	// Resume continues an interrupted transfer: the stream keeps the
	// checkpoint's snapshot id and skips its completed tables.
	Resume *SnapshotCheckpoint
}

// SnapshotRowBytes is the default SnapshotOptions.RowBytes: the bytes of
// the row's values (text, blob and json by length, 8 for any other, the
// key's included) plus its column names and 24 bytes per cell.
func SnapshotRowBytes(r *SnapshotRow) int {
	n := 24
	for _, v := range r.PK {
		n += valueBytes(v)
	}
	for i := range r.Cells {
		n += 24 + len(r.Cells[i].Column) + valueBytes(r.Cells[i].Value)
	}
	return n
}

func valueBytes(v Value) int {
	switch v.Kind() {
	case KindText:
		return len(v.Text())
	case KindBlob:
		return len(v.Blob())
	case KindJSON:
		return len(v.JSON())
	}
	return 8
}

// splitSnapshotRow cuts r into parts of at most limit bytes as size
// measures them (at least one cell each), the tombstone in the first. The
// parts share r's key and cells.
func splitSnapshotRow(r SnapshotRow, limit int, size func(*SnapshotRow) int) []SnapshotRow {
	keyOnly := size(&SnapshotRow{PK: r.PK})
	cur := SnapshotRow{PK: r.PK, HasTombstone: r.HasTombstone, Tombstone: r.Tombstone}
	curSize, first := size(&cur), 0
	var parts []SnapshotRow
	for i := range r.Cells {
		c := size(&SnapshotRow{PK: r.PK, Cells: r.Cells[i : i+1 : i+1]}) - keyOnly
		if i > first && curSize+c > limit {
			cur.Cells = r.Cells[first:i:i]
			parts = append(parts, cur)
			cur, curSize, first = SnapshotRow{PK: r.PK}, keyOnly, i
		}
		curSize += c
	}
	if len(r.Cells) > first {
		cur.Cells = r.Cells[first:len(r.Cells):len(r.Cells)]
	}
	return append(parts, cur)
}

// Snapshot streams this replica's whole state (docs/design.md §
// Snapshots): header, schema, then per table its rows (every live cell
// with its HLC, and tombstones) in chunks of at most ChunkRows rows and
// ChunkBytes bytes (a larger row in parts, see SnapshotOptions), then a
// footer with counts. Each rows chunk is read in its own read transaction, so
// the stream never holds the store for long; rows written while it runs may
// or may not be included, which is safe because they also travel as changes.
// Stop iterating to abandon the stream.
func (e *Engine) Snapshot(opts SnapshotOptions) iter.Seq2[SnapshotChunk, error] {
	return func(yield func(SnapshotChunk, error) bool) {
		if err := e.checkOpen(); err != nil {
			yield(SnapshotChunk{}, err)
			return
		}
		b := newSnapshotBounds(opts)
		hdr, migs, tables, err := e.snapshotHeader(opts)
		if err != nil {
			yield(SnapshotChunk{}, err)
			return
		}
		if !yield(SnapshotChunk{Type: ChunkHeader, Header: &hdr}, nil) {
			return
		}
		if !yield(SnapshotChunk{Type: ChunkSchema, Migrations: migs}, nil) {
			return
		}
		var total int64
		for _, name := range tables {
			if !e.snapshotTable(name, b, &total, yield) {
				return
			}
		}
		yield(SnapshotChunk{Type: ChunkFooter, Footer: &SnapshotFooter{Tables: len(tables), Rows: total}}, nil)
	}
}

// snapshotBounds are a Snapshot's chunk bounds, defaults applied.
type snapshotBounds struct {
	rows, bytes int
	rowBytes    func(*SnapshotRow) int
}

func newSnapshotBounds(opts SnapshotOptions) snapshotBounds {
	b := snapshotBounds{rows: opts.ChunkRows, bytes: opts.ChunkBytes, rowBytes: opts.RowBytes}
	if b.rows <= 0 {
		b.rows = DefaultSnapshotChunkRows
	}
	if b.bytes <= 0 {
		b.bytes = DefaultSnapshotChunkBytes
	}
	if b.rowBytes == nil {
		b.rowBytes = SnapshotRowBytes
	}
	return b
}

// snapshotHeader reads, in one read transaction, a snapshot's header (with
// a new snapshot id, or the resumed one's), the schema's migrations and the
// tables to stream (those opts.Resume has not completed).
func (e *Engine) snapshotHeader(opts SnapshotOptions) (hdr SnapshotHeader, migs []SchemaMigration, tables []string, err error) {
	err = e.store.View(func(tx kv.Tx) error {
		m, err := readMeta(tx)
		if err != nil {
			return err
		}
		schema, err := e.schemaFor(tx, m.schemaVer)
		if err != nil {
			return err
		}
		migs = slices.Clone(schema.migrations)
		all, err := rowTables(tx, schema)
		if err != nil {
			return err
		}
		hdr = SnapshotHeader{Format: SnapshotFormat, SiteID: e.site,
			HLC: HLC{Wall: m.clock.Wall, Counter: m.clock.Counter, Site: e.site}, Cursor: opts.Cursor}
		if opts.Resume != nil {
			hdr.SnapshotID, hdr.HLC, hdr.Cursor = opts.Resume.SnapshotID, opts.Resume.HLC, opts.Resume.Cursor
		} else {
			hdr.SnapshotID, err = newSnapshotID(e.opts.Rand)
			if err != nil {
				return err
			}
		}
		for _, t := range all {
			if opts.Resume != nil && slices.Contains(opts.Resume.CompletedTables, t) {
				continue
			}
			tables = append(tables, t)
			err := tx.Scan(layout.BucketRows, kv.Range{Start: layout.TableKey(t), End: kv.PrefixEnd(layout.TableKey(t)), KeysOnly: true}, func(_, _ []byte) bool {
				hdr.Rows++
				return true
			})
			if err != nil {
				return err
			}
		}
		hdr.Tables = tables
		return nil
	})
	return hdr, migs, tables, err
}

// snapshotTable yields table name's table_start, rows and table_end chunks,
// counting the rows chunks' rows into total. It reports false when the
// stream ends: yield returned false, or an error was yielded.
func (e *Engine) snapshotTable(name string, b snapshotBounds, total *int64, yield func(SnapshotChunk, error) bool) bool {
	if !yield(SnapshotChunk{Type: ChunkTableStart, Table: name}, nil) {
		return false
	}
	tk := layout.TableKey(name)
	start, end := tk, kv.PrefixEnd(tk)
	var off int64 // the table's row entries yielded so far
	for {
		var r snapshotRowsReader
		err := e.store.View(func(tx kv.Tx) error { return r.read(tx, start, end, b) })
		if err != nil {
			yield(SnapshotChunk{}, err)
			return false
		}
		for _, p := range b.parts(r.rows) {
			if len(p) == 0 {
				continue
			}
			*total += int64(len(p))
			if !yield(SnapshotChunk{Type: ChunkRows, Table: name, Rows: p, Offset: off}, nil) {
				return false
			}
			off += int64(len(p))
		}
		if !r.full || r.last == nil {
			break
		}
		start = append(r.last, 0)
	}
	return yield(SnapshotChunk{Type: ChunkTableEnd, Table: name, Offset: off}, nil)
}

// parts returns the rows chunks rows travels in: rows itself, or the parts
// of its one row when that is larger than a chunk (splitSnapshotRow).
func (b snapshotBounds) parts(rows []SnapshotRow) [][]SnapshotRow {
	parts := [][]SnapshotRow{rows}
	if len(rows) == 1 && b.rowBytes(&rows[0]) > b.bytes {
		parts = parts[:0]
		for _, p := range splitSnapshotRow(rows[0], b.bytes, b.rowBytes) {
			parts = append(parts, []SnapshotRow{p})
		}
	}
	return parts
}

// snapshotRowsReader reads one rows chunk of a Snapshot: the rows from a
// start key, in key order, until a bound of snapshotBounds.
type snapshotRowsReader struct {
	b     snapshotBounds
	rows  []SnapshotRow
	cells []SnapshotCell // slab the rows' cells are carved from
	size  int            // the rows' bytes, as b.rowBytes measures them
	last  []byte         // key of the last row read
	full  bool           // stopped by a bound: more rows may follow
	err   error          // a row that did not decode
}

// read reads the chunk from the rows in [start, end) in tx.
func (r *snapshotRowsReader) read(tx kv.Tx, start, end []byte, b snapshotBounds) error {
	*r = snapshotRowsReader{b: b, rows: make([]SnapshotRow, 0, min(b.rows, 1024))}
	err := tx.Scan(layout.BucketRows, kv.Range{Start: start, End: end, Limit: b.rows}, r.add)
	if err == nil {
		err = r.err
	}
	if r.last != nil {
		r.last = bytes.Clone(r.last)
	}
	r.full = r.full || len(r.rows) == b.rows
	return err
}

// add is read's scan callback: it decodes one row and adds it unless it
// would pass the chunk's byte bound.
func (r *snapshotRowsReader) add(k, v []byte) bool {
	_, pk, err := layout.SplitRowKey(k)
	if err != nil {
		r.err = err
		return false
	}
	rec, err := rowrec.Decode(v, pk)
	if err != nil {
		r.err = err
		return false
	}
	sr := SnapshotRow{PK: pk, HasTombstone: rec.HasTomb, Tombstone: rec.Tomb}
	if n := len(rec.Cells); n > 0 {
		if cap(r.cells)-len(r.cells) < n {
			r.cells = make([]SnapshotCell, 0, max(n, 8*min(r.b.rows, 1024)))
		}
		first := len(r.cells)
		for _, c := range rec.Cells {
			r.cells = append(r.cells, SnapshotCell{Column: c.Col, Value: c.Val, HLC: c.HLC})
		}
		sr.Cells = r.cells[first:len(r.cells):len(r.cells)]
	}
	n := r.b.rowBytes(&sr)
	if len(r.rows) > 0 && r.size+n > r.b.bytes {
		r.full = true // this row starts the next chunk
		return false
	}
	r.last = k
	r.rows = append(r.rows, sr)
	r.size += n
	if r.size > r.b.bytes {
		r.full = true // a row too large for a chunk travels alone, in parts
		return false
	}
	return true
}

// rowTables lists the tables to snapshot: the schema's in creation order,
// then any other table holding rows (schema-less replicas), by name.
func rowTables(tx kv.Tx, s *schemaState) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range s.migrations {
		// By identity: rows are stored under their class's root (rename.go).
		if r := s.resolve(m.TableName); m.Type == CreateTable && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	var extra []string
	var start []byte
	for {
		var k []byte
		err := tx.Scan(layout.BucketRows, kv.Range{Start: start, Limit: 1, KeysOnly: true}, func(key, _ []byte) bool {
			k = bytes.Clone(key)
			return false
		})
		if err != nil {
			return nil, err
		}
		if k == nil {
			break
		}
		tv, _, err := keyenc.DecodeValue(k)
		if err != nil {
			return nil, err
		}
		if !seen[tv.Text()] {
			seen[tv.Text()] = true
			extra = append(extra, tv.Text())
		}
		start = kv.PrefixEnd(layout.TableKey(tv.Text()))
		if start == nil {
			break
		}
	}
	sort.Strings(extra)
	return append(out, extra...), nil
}

func newSnapshotID(r io.Reader) (string, error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", b), nil
}

// SnapshotProgress reports how far an applying snapshot has come.
type SnapshotProgress struct {
	SnapshotID string
	// Table is the table being applied ("" between tables).
	Table string
	// TablesDone counts tables finished in this stream; TablesTotal is the
	// number the header announced.
	TablesDone, TablesTotal int
	// RowsApplied counts rows applied in this stream; RowsTotal is the
	// header's count (0 if unknown).
	RowsApplied, RowsTotal int64
	// Done is set by the footer: the snapshot is complete.
	Done bool
}

// snapApply is the in-memory state of the snapshot being applied.
type snapApply struct {
	hdr     SnapshotHeader
	cp      SnapshotCheckpoint
	stage   ChunkType // last chunk type accepted
	broken  bool      // a chunk failed: only a new header is accepted
	table   string
	rows    int64    // rows applied in this stream
	tables  int      // tables finished in this stream
	inTable int64    // row entries of the table applied in this stream (SnapshotChunk.Offset)
	facts   []Change // scratch of applySnapshotRows, empty between chunks
	// dropFrom, in a replacing apply (cp.Replace), is the first row key
	// of the table being applied that no rows chunk has covered yet: the
	// table's first key after table_start, just after a chunk's last row
	// after it.
	dropFrom []byte
}

// ApplySnapshotOptions choose how ApplySnapshotChunkWith applies a snapshot.
// They are read at the header chunk only: the apply keeps the mode it
// started with (in its checkpoint) through an interrupted and resumed
// transfer, whatever later calls pass, with two exceptions at a resumed
// header: a replacing apply takes a lower KeepOwnAfter, and a merging one
// passed Replace replaces from there on (its remaining tables).
type ApplySnapshotOptions struct {
	// Replace makes the replica end with the snapshot's rows instead of
	// merging them into its own (docs/design.md § Snapshots, replacing
	// bootstrap): a local row of a table the snapshot carries (one its
	// header lists) that the snapshot lacks is dropped, its record and
	// index entries removed, with no tombstone and no change-log entry
	// (it is not a deletion by this replica: nothing is pushed for it).
	// The facts of this replica's own transactions with a base HLC above
	// KeepOwnAfter (unsent local writes: cells and tombstones) are the
	// exception: they stay, and only they, so such a row keeps its unsent
	// cells alone. A row the snapshot carries is set the same way: to the
	// snapshot's row merged with the unsent own facts, the local cells
	// and tombstone the sender let go (a tombstone it pruned, the cells
	// under it) dropped. Either way the replica ends with the facts the
	// sender's other devices end with, which a merge does not give: a
	// foreign fact the sender pruned would stay on this device alone.
	// Tables the header does not list are left alone: the sender
	// does not have them in its schema (the relay lists every table of
	// its schema, rows or none), so their rows are local state it never
	// held. It is for a replica whose cursor the relay can no longer
	// serve (SNAPSHOT_REQUIRED past the tombstone horizon): the rows
	// deleted meanwhile, whose tombstones the relay pruned, must go.
	Replace bool
	// KeepOwnAfter is, with Replace, the highest base HLC of this
	// replica's own transactions the sender is known to hold (the sync
	// client's sent watermark); zero keeps every own fact (foreign facts
	// the snapshot lacks still go). A resumed apply takes the lower of
	// the stored value and the one passed.
	KeepOwnAfter HLC
}

// ApplySnapshotChunk applies one chunk of a snapshot stream, in stream order
// (docs/design.md § Snapshots). The snapshot is merged into the
// local state as a join, exactly like changes: nothing local is lost, so a
// replica may keep writing while it bootstraps.
//
//   - header: refused with ErrSnapshotFormat (format) or ErrClockDrift
//     before anything is touched; then a checkpoint is stored, and exists
//     until the footer: while it does, the data is partial
//     (SnapshotCheckpoint). A header with the id of the stored checkpoint
//     resumes it; any other replaces it.
//   - schema: migrations applied as from a peer.
//   - rows: merged in one kv transaction, with the checkpoint's progress.
//   - table_end: the table joins the checkpoint's completed tables.
//   - footer: counts checked against what this stream carried
//     (ErrMalformed on a mismatch), checkpoint removed, held changes for
//     new tables replayed.
//
// A chunk out of order is ErrMalformed. Rows chunks emit RemoteChange events
// with a nil ChangeSet and the table in Tables.
//
// ApplySnapshotChunk merges; it is ApplySnapshotChunkWith with zero
// options (a resumed replacing apply goes on replacing).
func (e *Engine) ApplySnapshotChunk(c SnapshotChunk) (SnapshotProgress, error) {
	return e.ApplySnapshotChunkWith(c, ApplySnapshotOptions{})
}

// ApplySnapshotChunkWith is ApplySnapshotChunk with the options o, which
// the header chunk reads (a header that resumes a stored checkpoint keeps
// the checkpoint's mode instead) and every other chunk ignores. With
// o.Replace the apply drops the local rows the snapshot lacks (see
// ApplySnapshotOptions): a rows chunk covers the keys of its table from
// just after the previous chunk's last row (from the table's first key
// after table_start) up to its own last row, and drops the absent local
// rows in that range, in its kv transaction; table_end drops those after
// the last row. The drop emits the rows chunk's RemoteChange event, or one
// of its own at table_end. Memory stays bounded by a chunk: no set of the
// snapshot's keys is kept.
func (e *Engine) ApplySnapshotChunkWith(c SnapshotChunk, o ApplySnapshotOptions) (SnapshotProgress, error) {
	if err := e.checkOpen(); err != nil {
		return SnapshotProgress{}, err
	}
	// Events and replays of held changes run after snapMu is released:
	// subscribers may call back into the engine (DiscardSnapshotCheckpoint
	// takes snapMu).
	var after []func()
	e.snapMu.Lock()
	p, err := e.applySnapshotChunk(c, o, &after)
	e.snapMu.Unlock()
	for _, f := range after {
		f()
	}
	return p, err
}

// replayAfterSnapshot replays the changes held for tables a snapshot created.
func (e *Engine) replayAfterSnapshot(tables []string) {
	if len(tables) == 0 || e.declared == nil {
		return
	}
	if _, err := e.ReplayHeld(tables...); err != nil {
		e.log.Warn("replica: replaying held changes after a snapshot failed; they stay held", "tables", tables, "err", err)
	}
}

func (e *Engine) applySnapshotChunk(c SnapshotChunk, o ApplySnapshotOptions, after *[]func()) (SnapshotProgress, error) {
	s := e.snap
	if c.Type != ChunkHeader && s == nil {
		return SnapshotProgress{}, malformed("snapshot %s chunk before a header", c.Type)
	}
	if c.Type != ChunkHeader && s.broken {
		return SnapshotProgress{}, malformed("snapshot %s chunk after a failed chunk (start again with a header)", c.Type)
	}
	switch c.Type {
	case ChunkHeader:
		return e.applySnapshotHeader(c.Header, o)
	case ChunkSchema:
		return e.applySnapshotSchema(s, c.Migrations, after)
	case ChunkTableStart:
		return s.tableStart(c.Table)
	case ChunkRows:
		return e.applySnapshotRowsChunk(s, c, after)
	case ChunkTableEnd:
		return e.applySnapshotTableEnd(s, c.Table, c.Offset, after)
	case ChunkFooter:
		return e.applySnapshotFooter(s, c.Footer, after)
	}
	return SnapshotProgress{}, malformed("unknown snapshot chunk type %q", c.Type)
}

// applySnapshotHeader starts (or resumes) a snapshot: it checks the format
// and the clock, then stores the checkpoint (with o's mode when it starts
// one; a resumed one keeps its own).
func (e *Engine) applySnapshotHeader(hp *SnapshotHeader, o ApplySnapshotOptions) (SnapshotProgress, error) {
	if hp == nil {
		return SnapshotProgress{}, malformed("header chunk without a header")
	}
	h := *hp
	if h.Format != SnapshotFormat {
		return SnapshotProgress{}, fmt.Errorf("%w: snapshot format %d, this version reads %d", ErrSnapshotFormat, h.Format, SnapshotFormat)
	}
	if h.SnapshotID == "" || h.SiteID.IsZero() {
		return SnapshotProgress{}, malformed("snapshot header without id or site")
	}
	if err := checkDrift(h.HLC, e.clock.Now()); err != nil {
		return SnapshotProgress{}, err
	}
	ns := &snapApply{hdr: h, stage: ChunkHeader}
	err := e.store.Update(func(tx kv.Tx) error {
		old, err := readCheckpoint(tx)
		if err != nil {
			return err
		}
		if old != nil && old.SnapshotID == h.SnapshotID {
			ns.cp = *old
			// A lower KeepOwnAfter keeps more (the caller learned that
			// the sender lost acknowledged transactions): never a higher.
			if ns.cp.Replace && o.Replace && o.KeepOwnAfter.Less(ns.cp.KeepOwnAfter) {
				ns.cp.KeepOwnAfter = o.KeepOwnAfter
			}
			// A merging transfer may go on replacing (the tables still
			// to come), never the reverse.
			if !ns.cp.Replace && o.Replace {
				ns.cp.Replace, ns.cp.KeepOwnAfter = true, o.KeepOwnAfter
			}
		} else {
			ns.cp = SnapshotCheckpoint{SnapshotID: h.SnapshotID, SiteID: h.SiteID, HLC: h.HLC, Cursor: h.Cursor, CreatedAt: e.clock.Now()}
			if o.Replace {
				ns.cp.Replace, ns.cp.KeepOwnAfter = true, o.KeepOwnAfter
			}
		}
		return writeCheckpoint(tx, &ns.cp)
	})
	if err != nil {
		return SnapshotProgress{}, err
	}
	e.snap = ns
	return ns.progress(), nil
}

// applySnapshotSchema applies the schema chunk's migrations as from a peer.
func (e *Engine) applySnapshotSchema(s *snapApply, migs []SchemaMigration, after *[]func()) (SnapshotProgress, error) {
	if s.stage != ChunkHeader {
		return SnapshotProgress{}, malformed("schema chunk after %s", s.stage)
	}
	var maxH HLC
	for i := range migs {
		if err := validateMigration(&migs[i]); err != nil {
			return SnapshotProgress{}, err
		}
		if migs[i].HLC.Site.IsZero() {
			return SnapshotProgress{}, malformed("snapshot migration %s of %q without a site", migs[i].Type, migs[i].TableName)
		}
		if maxH.Less(migs[i].HLC) {
			maxH = migs[i].HLC
		}
	}
	if err := checkDrift(maxH, e.clock.Now()); err != nil {
		return SnapshotProgress{}, err
	}
	var created []string
	err := e.store.Update(func(tx kv.Tx) error {
		var err error
		created, err = e.storeSnapshotMigrations(tx, migs, maxH)
		return err
	})
	if err != nil {
		return SnapshotProgress{}, err
	}
	s.stage = ChunkSchema
	e.snapCreated = append(e.snapCreated, created...)
	// Held changes for the tables that just appeared replay now, not
	// at the footer: a snapshot abandoned or interrupted by a restart
	// never reaches it, and nothing else would replay them. (The footer
	// replays again, for one that failed here.)
	*after = append(*after, func() { e.replayAfterSnapshot(created) })
	return s.progress(), nil
}

// storeSnapshotMigrations stores the migrations not stored yet, merges maxH
// (their greatest HLC) into the clock and commits; it returns the tables
// that appeared.
func (e *Engine) storeSnapshotMigrations(tx kv.Tx, migs []SchemaMigration, maxH HLC) ([]string, error) {
	w, err := e.begin(tx)
	if err != nil {
		return nil, err
	}
	before := columnCounts(w.schema)
	for i := range migs {
		m := migs[i]
		k := layout.MigrationKey(layout.ClassOf(m.HLC.Site, e.site), m.HLC)
		if _, err := tx.Get(layout.BucketMigrations, k); err == nil {
			continue
		} else if !errors.Is(err, kv.ErrNotFound) {
			return nil, err
		}
		if err := w.storeMigration(&m, layout.ClassOf(m.HLC.Site, e.site)); err != nil {
			return nil, err
		}
	}
	created := grownTables(before, w.schema)
	// The clock max-merges every HLC received, migrations too, so
	// local facts (a local add_column) are stamped above them.
	w.receiveClock(maxH)
	return created, w.commit()
}

// tableStart checks a table_start chunk: the stream carries the tables its
// header announced, in order.
func (s *snapApply) tableStart(table string) (SnapshotProgress, error) {
	if s.stage != ChunkSchema && s.stage != ChunkTableEnd {
		return SnapshotProgress{}, malformed("table_start after %s", s.stage)
	}
	if !ValidName(table) {
		return SnapshotProgress{}, malformed("snapshot table %q", table)
	}
	// A stream that skips a table would otherwise end "complete" without it.
	if hs := s.hdr.Tables; s.tables >= len(hs) || hs[s.tables] != table {
		return SnapshotProgress{}, malformed("table_start of %q, but the header announced %v and %d are done", table, hs, s.tables)
	}
	s.stage, s.table, s.inTable = ChunkTableStart, table, 0
	s.dropFrom = layout.TableKey(table)
	return s.progress(), nil
}

// applySnapshotRowsChunk merges a rows chunk (applySnapshotRows) and queues
// its events.
func (e *Engine) applySnapshotRowsChunk(s *snapApply, c SnapshotChunk, after *[]func()) (SnapshotProgress, error) {
	if (s.stage != ChunkTableStart && s.stage != ChunkRows) || c.Table != s.table {
		return SnapshotProgress{}, malformed("rows of %q after %s of %q", c.Table, s.stage, s.table)
	}
	if c.Offset != s.inTable {
		s.broken = true
		return SnapshotProgress{}, lostChunk("rows", c.Table, c.Offset, s.inTable)
	}
	held, err := e.applySnapshotRows(s, c.Rows)
	if err != nil {
		// The stream is broken: accepting what follows could mark a
		// table whose rows did not land as completed, and a resume
		// would then skip it for good.
		s.broken = true
		return SnapshotProgress{}, err
	}
	s.stage = ChunkRows
	s.rows += int64(len(c.Rows))
	s.inTable += int64(len(c.Rows))
	ev := Event{Type: RemoteChange, Tables: []string{c.Table}}
	*after = append(*after, func() { e.emit(ev) })
	if held != nil {
		u := *held
		*after = append(*after, func() { e.emit(Event{Type: ChangesHeld, Tables: []string{u.Table}, Held: &u}) })
	}
	return s.progress(), nil
}

// lostChunk is the error of a rows or table_end chunk whose offset is not
// the count of the table's row entries applied: a rows chunk was lost or
// repeated on the way (SnapshotChunk.Offset).
func lostChunk(kind, table string, offset, applied int64) error {
	return malformed("%s chunk of %q at offset %d, but the stream carried %d of the table's row entries before it (a rows chunk was lost or repeated): nothing of it applied", kind, table, offset, applied)
}

// applySnapshotTableEnd adds the table to the checkpoint's completed
// tables; a replacing apply first drops the absent local rows after the
// table's last snapshot row, in the same kv transaction.
func (e *Engine) applySnapshotTableEnd(s *snapApply, table string, offset int64, after *[]func()) (SnapshotProgress, error) {
	if (s.stage != ChunkTableStart && s.stage != ChunkRows) || table != s.table {
		return SnapshotProgress{}, malformed("table_end of %q after %s of %q", table, s.stage, s.table)
	}
	if offset != s.inTable {
		s.broken = true
		return SnapshotProgress{}, lostChunk("table_end", table, offset, s.inTable)
	}
	cp := s.cp
	cp.CompletedTables = append(slices.Clone(cp.CompletedTables), table)
	cp.RowsApplied = s.cp.RowsApplied
	dropped := 0
	err := e.store.Update(func(tx kv.Tx) error {
		if !cp.Replace {
			return writeCheckpoint(tx, &cp)
		}
		w, err := e.begin(tx)
		if err != nil {
			return err
		}
		if t := w.effTable(table); t != nil {
			if dropped, err = w.dropAbsentRows(t, s.dropFrom, kv.PrefixEnd(t.key), nil, cp.KeepOwnAfter); err != nil {
				return err
			}
		}
		if err := writeCheckpoint(tx, &cp); err != nil {
			return err
		}
		return w.commit()
	})
	if err != nil {
		return SnapshotProgress{}, err
	}
	if dropped > 0 {
		ev := Event{Type: RemoteChange, Tables: []string{table}}
		*after = append(*after, func() { e.emit(ev) })
	}
	s.cp = cp
	s.stage, s.table = ChunkTableEnd, ""
	s.tables++
	return s.progress(), nil
}

// applySnapshotFooter checks the footer's counts against the stream, removes
// the checkpoint and queues the replay of changes held for new tables.
func (e *Engine) applySnapshotFooter(s *snapApply, f *SnapshotFooter, after *[]func()) (SnapshotProgress, error) {
	if s.stage != ChunkSchema && s.stage != ChunkTableEnd {
		return SnapshotProgress{}, malformed("footer after %s", s.stage)
	}
	if f == nil {
		return SnapshotProgress{}, malformed("footer chunk without a footer")
	}
	if f.Rows != s.rows || f.Tables != s.tables || s.tables != len(s.hdr.Tables) {
		return SnapshotProgress{}, malformed("snapshot footer counts %d tables and %d rows, the stream carried %d and %d (the header announced %d tables)",
			f.Tables, f.Rows, s.tables, s.rows, len(s.hdr.Tables))
	}
	if err := e.store.Update(func(tx kv.Tx) error { return tx.Delete(layout.BucketMeta, layout.MetaCheckpoint) }); err != nil {
		return SnapshotProgress{}, err
	}
	p := s.progress()
	p.Done = true
	e.snap = nil
	created := e.snapCreated
	e.snapCreated = nil
	*after = append(*after, func() { e.replayAfterSnapshot(created) })
	return p, nil
}

func (s *snapApply) progress() SnapshotProgress {
	return SnapshotProgress{SnapshotID: s.hdr.SnapshotID, Table: s.table, TablesDone: s.tables,
		TablesTotal: len(s.hdr.Tables), RowsApplied: s.rows, RowsTotal: s.hdr.Rows}
}

// applySnapshotRows merges one rows chunk and advances the checkpoint, in
// one kv transaction.
//
// Every fact passes the checks and conversions a change from a peer passes
// (validateChange, normalizeChange), split so that what depends only on a
// row's key runs once per row, not once per cell: a bootstrap applies
// hundreds of thousands of rows, and on WebAssembly allocation is dear.
//
// A fact that does not fit the local table (its key's columns or types, its
// value's type, its column: HeldReason) is held as ApplyChanges holds it,
// not applied, and the chunk applies without it: refusing the chunk would
// keep every new device from bootstrapping off a relay that stores one bad
// row. held reports the facts held (nil if none), for a ChangesHeld event.
func (e *Engine) applySnapshotRows(s *snapApply, rows []SnapshotRow) (held *HeldReport, err error) {
	now := e.clock.Now()
	n, err := countSnapshotFacts(s.table, rows)
	if err != nil {
		return nil, err
	}
	// The facts live in a buffer kept across chunks (a Change is ~230
	// bytes: a chunk's facts were the largest allocation of the apply).
	facts := s.facts[:0]
	if cap(facts) < n {
		facts = make([]Change, 0, n)
	}
	defer func() {
		clear(facts[:cap(facts)]) // hold no values of this chunk
		s.facts = facts[:0]
	}()
	facts = appendSnapshotFacts(facts, s.table, rows)
	maxH, err := checkSnapshotFacts(s.table, rows, facts)
	if err != nil {
		return nil, err
	}
	if err := checkDrift(maxH, now); err != nil {
		return nil, err
	}
	cp := s.cp
	cp.RowsApplied += int64(len(rows))
	dropFrom := s.dropFrom
	err = e.store.Update(func(tx kv.Tx) error {
		var err error
		dropFrom = s.dropFrom
		held, err = e.mergeSnapshotRows(tx, s.table, rows, facts, maxH, &cp, &dropFrom)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.cp, s.dropFrom = cp, dropFrom
	return held, nil
}

// snapshotRowFacts is the number of facts r carries: its cells and its
// tombstone.
func snapshotRowFacts(r *SnapshotRow) int {
	if r.HasTombstone {
		return len(r.Cells) + 1
	}
	return len(r.Cells)
}

// countSnapshotFacts checks that every row of a rows chunk of table has a
// key without nulls, and counts the rows' facts.
func countSnapshotFacts(table string, rows []SnapshotRow) (int, error) {
	n := 0
	for i := range rows {
		r := &rows[i]
		if len(r.PK) == 0 {
			return 0, malformed("snapshot row of %s without a key", table)
		}
		for _, v := range r.PK {
			if v.IsNull() {
				return 0, malformed("snapshot row of %s with a null key value", table)
			}
		}
		n += snapshotRowFacts(r)
	}
	return n, nil
}

// appendSnapshotFacts appends the facts of rows to facts as changes of
// table: per row its deletion (if it has a tombstone), then its cells.
func appendSnapshotFacts(facts []Change, table string, rows []SnapshotRow) []Change {
	for i := range rows {
		r := &rows[i]
		if r.HasTombstone {
			facts = append(facts, Change{Type: RowDeletion, Table: table, PK: r.PK, HLC: r.Tombstone})
		}
		for _, c := range r.Cells {
			facts = append(facts, Change{Type: ColumnChange, Table: table, PK: r.PK, Column: c.Column, Value: c.Value, HLC: c.HLC})
		}
	}
	return facts
}

// checkSnapshotFacts runs on the facts of rows the checks a change from a
// peer passes (finite values and key, key size, names) and checks that
// each names the site that minted it: a fact without one would be state
// ChangesSince can never return. It returns the facts' greatest HLC.
func checkSnapshotFacts(table string, rows []SnapshotRow, facts []Change) (HLC, error) {
	var maxH HLC
	k := 0
	for i := range rows {
		if err := validateChangeKey(table, rows[i].PK); err != nil {
			return HLC{}, fmt.Errorf("snapshot row of %s: %w", table, err)
		}
		m := snapshotRowFacts(&rows[i])
		for j := k; j < k+m; j++ {
			f := &facts[j]
			if err := validateChangeBody(f); err != nil {
				return HLC{}, fmt.Errorf("snapshot row of %s: %w", table, err)
			}
			if f.HLC.Site.IsZero() {
				return HLC{}, malformed("snapshot fact of %s %s without a site", table, fmtKey(f.PK))
			}
			if maxH.Less(f.HLC) {
				maxH = f.HLC
			}
		}
		k += m
	}
	return maxH, nil
}

// mergeSnapshotRows is the kv transaction of applySnapshotRows: it
// normalizes the facts of rows for the local table, holds those that do not
// fit, merges the rest row by row (mergeRow), receives maxH into the clock,
// stores cp and commits. In a replacing apply (cp.Replace) it also drops
// the absent local rows from *dropFrom up to the chunk's greatest row key,
// and moves *dropFrom just past that key. It returns the facts held (nil
// if none).
func (e *Engine) mergeSnapshotRows(tx kv.Tx, table string, rows []SnapshotRow, facts []Change, maxH HLC, cp *SnapshotCheckpoint, dropFrom *[]byte) (*HeldReport, error) {
	w, err := e.begin(tx)
	if err != nil {
		return nil, err
	}
	if w.retiredTable(table) {
		// A dropped table's rows (from a peer that had not learned the
		// drop when it took the snapshot): discarded.
		w.receiveClock(maxH)
		if err := writeCheckpoint(tx, cp); err != nil {
			return nil, err
		}
		return nil, w.commit()
	}
	t := w.effTable(table)
	if t == nil {
		return nil, malformed("snapshot rows for table %q, which its schema does not define", table)
	}
	pending := make([]pendingFact, len(facts))
	for i := range facts {
		pending[i] = pendingFact{c: &facts[i]}
	}
	h := snapshotHold{e: e, w: w, table: table}
	g, err := groupSnapshotRows(t, rows, pending, &h)
	if err != nil {
		return nil, err
	}
	if len(w.rows) == 0 {
		w.rows = make(map[string]*txRow, len(g.groups))
	}
	if err := w.prefetchKeyed(t, g.keys, g.pks); err != nil {
		return nil, err
	}
	var out applyOutcome
	for i := range g.groups {
		r := w.rows[g.groups[i].rk]
		// A replacing apply sets the row to the snapshot's (plus the
		// unsent own facts) the first time a chunk carries it: a row
		// sent in parts is below *dropFrom in its later chunks.
		if cp.Replace && r.key >= string(*dropFrom) {
			w.keepOnlyOwnAfter(r, cp.KeepOwnAfter)
		}
		w.mergeRow(r, g.groups[i].facts, &out)
	}
	if cp.Replace {
		if last := g.lastKey(); last != nil {
			end := append(slices.Clip(last), 0)
			if bytes.Compare(*dropFrom, end) < 0 {
				if _, err := w.dropAbsentRows(t, *dropFrom, end, g.heldKeys, cp.KeepOwnAfter); err != nil {
					return nil, err
				}
				*dropFrom = end
			}
		}
	}
	w.receiveClock(maxH)
	if err := writeCheckpoint(tx, cp); err != nil {
		return nil, err
	}
	return h.held, w.commit()
}

// snapshotHold holds the facts of a rows chunk that do not fit their table
// (held changes, see applySets), counting them in held.
type snapshotHold struct {
	e     *Engine
	w     *writeTx
	table string
	held  *HeldReport // nil until a fact is held
}

func (h *snapshotHold) hold(c *Change, he *holdError) error {
	e := h.e
	if h.held == nil {
		h.held = &HeldReport{Table: h.table, Reason: he.reason, Detail: he.msg, Policy: e.opts.HeldChanges, Site: c.HLC.Site}
		e.log.Warn("replica: a snapshot's row does not fit its table; the fact is held", "table", h.table, "err", he.msg)
	}
	h.held.Changes++
	if h.held.LatestHLC.Less(c.HLC) {
		h.held.LatestHLC = c.HLC
	}
	if e.opts.HeldChanges == Drop {
		return nil
	}
	return h.w.holdAs(c, heldFlags(he.reason, e.opts.HeldChanges))
}

// snapshotRowGroups is a rows chunk's facts grouped by row, in the order
// rows first appear: the row keys and primary keys for prefetchKeyed, the
// facts for mergeRow.
type snapshotRowGroups struct {
	groups []snapshotGroup
	keys   [][]byte
	pks    [][]Value
	index  map[string]int // row key -> group; built once a key comes out of order
	// heldKeys are the row keys of rows whose every fact was held: rows
	// the chunk carries all the same (a replacing apply keeps them).
	heldKeys [][]byte
}

// lastKey returns the greatest row key of the chunk's rows whose key fits
// the table (nil if none).
func (g *snapshotRowGroups) lastKey() []byte {
	var last []byte
	for _, k := range g.keys {
		if bytes.Compare(k, last) > 0 {
			last = k
		}
	}
	for _, k := range g.heldKeys {
		if bytes.Compare(k, last) > 0 {
			last = k
		}
	}
	return last
}

type snapshotGroup struct {
	rk    string
	pk    []Value
	facts []pendingFact
}

// add adds the facts of the row with key rkb. A relay sends rows in key
// order, so a key above the previous one is new; a key out of order is
// looked up (and a row sent twice merges into one). rows sizes the index.
func (g *snapshotRowGroups) add(rkb []byte, pk []Value, facts []pendingFact, rows int) {
	if len(g.groups) > 0 && (g.index != nil || string(rkb) <= g.groups[len(g.groups)-1].rk) {
		if g.index == nil {
			g.index = make(map[string]int, rows)
			for gi := range g.groups {
				g.index[g.groups[gi].rk] = gi
			}
		}
		if gi, ok := g.index[string(rkb)]; ok {
			g.groups[gi].facts = append(g.groups[gi].facts, facts...)
			return
		}
		g.index[string(rkb)] = len(g.groups)
	}
	g.groups = append(g.groups, snapshotGroup{rk: string(rkb), pk: pk, facts: facts})
	g.keys = append(g.keys, rkb)
	g.pks = append(g.pks, pk)
}

// groupSnapshotRows normalizes each row's key and facts (pending, in rows'
// order) for t and groups them by row; a fact that does not fit t goes to
// h. Any other error ends it.
func groupSnapshotRows(t *table, rows []SnapshotRow, pending []pendingFact, h *snapshotHold) (snapshotRowGroups, error) {
	g := snapshotRowGroups{
		groups: make([]snapshotGroup, 0, len(rows)),
		keys:   make([][]byte, 0, len(rows)),
		pks:    make([][]Value, 0, len(rows)),
	}
	k := 0
	for i := range rows {
		m := snapshotRowFacts(&rows[i])
		mine := pending[k : k+m : k+m]
		k += m
		pk, rkb, err := normalizeKey(t, h.table, rows[i].PK)
		if err != nil {
			var he *holdError
			if !errors.As(err, &he) {
				return g, err
			}
			for _, p := range mine {
				if err := h.hold(p.c, he); err != nil {
					return g, err
				}
			}
			continue
		}
		kept := mine[:0]
		for _, p := range mine {
			p.c.PK = pk
			if err := normalizeFact(t, p.c); err != nil {
				if errors.Is(err, errRetired) {
					continue // a dropped column's cell: discarded
				}
				var he *holdError
				if !errors.As(err, &he) {
					return g, err
				}
				if err := h.hold(p.c, he); err != nil {
					return g, err
				}
				continue
			}
			kept = append(kept, p)
		}
		if len(kept) > 0 {
			g.add(rkb, pk, kept, len(rows))
		} else {
			g.heldKeys = append(g.heldKeys, rkb)
		}
	}
	return g, nil
}

// The checkpoint is stored as the JSON encoding/json wrote for
//
//	struct {
//		SnapshotID      string   `json:"id"`
//		SiteID          []byte   `json:"site"`      // base64
//		HLC             []byte   `json:"hlc"`       // base64 of HLC.Bytes
//		Cursor          uint64   `json:"cursor"`
//		CompletedTables []string `json:"completed"` // null when nil
//		RowsApplied     int64    `json:"rows"`
//		CreatedAt       uint64   `json:"createdAt"`
//		Replace         bool     `json:"replace,omitempty"`
//		KeepOwnAfter    []byte   `json:"keepOwnAfter,omitempty"` // base64 of HLC.Bytes; only with replace
//	}
//
// (a checkpoint without "replace", stored before it existed, is a merge)
//
// (json.go writes and reads it; json_test.go checks the bytes against
// encoding/json).
func writeCheckpoint(tx kv.Tx, cp *SnapshotCheckpoint) error {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, cp.SnapshotID)
	b = append(b, `,"site":`...)
	b = jsontext.AppendBase64(b, cp.SiteID[:])
	b = append(b, `,"hlc":`...)
	b = jsontext.AppendBase64(b, cp.HLC.Bytes())
	b = append(b, `,"cursor":`...)
	b = strconv.AppendUint(b, cp.Cursor, 10)
	b = append(b, `,"completed":`...)
	b = appendJSONStrings(b, cp.CompletedTables)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, cp.RowsApplied, 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendUint(b, cp.CreatedAt, 10)
	if cp.Replace {
		b = append(b, `,"replace":true,"keepOwnAfter":`...)
		b = jsontext.AppendBase64(b, cp.KeepOwnAfter.Bytes())
	}
	b = append(b, '}')
	return tx.Put(layout.BucketMeta, layout.MetaCheckpoint, b)
}

func decodeCheckpoint(v []byte) (*SnapshotCheckpoint, error) {
	o, err := decodeJSONObject(v)
	if err != nil {
		return nil, err
	}
	cp := &SnapshotCheckpoint{}
	if cp.SnapshotID, err = o.str("id"); err != nil {
		return nil, err
	}
	site, err := o.bytes("site")
	if err != nil {
		return nil, err
	}
	if len(site) != len(cp.SiteID) {
		return nil, errors.New("site id of " + strconv.Itoa(len(site)) + " bytes")
	}
	copy(cp.SiteID[:], site)
	hb, err := o.bytes("hlc")
	if err != nil {
		return nil, err
	}
	if cp.HLC, err = HLCFromBytes(hb); err != nil {
		return nil, err
	}
	if cp.Cursor, err = o.uint("cursor"); err != nil {
		return nil, err
	}
	if cp.CompletedTables, err = o.strs("completed"); err != nil {
		return nil, err
	}
	if cp.RowsApplied, err = o.int("rows"); err != nil {
		return nil, err
	}
	if cp.CreatedAt, err = o.uint("createdAt"); err != nil {
		return nil, err
	}
	if cp.Replace, err = o.boolean("replace"); err != nil {
		return nil, err
	}
	if cp.Replace {
		kb, err := o.bytes("keepOwnAfter")
		if err != nil {
			return nil, err
		}
		if cp.KeepOwnAfter, err = HLCFromBytes(kb); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

func readCheckpoint(tx kv.Tx) (*SnapshotCheckpoint, error) {
	v, err := tx.Get(layout.BucketMeta, layout.MetaCheckpoint)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cp, err := decodeCheckpoint(v)
	if err != nil {
		return nil, fmt.Errorf("%w: stored snapshot checkpoint: %v", ErrStorageFormat, err)
	}
	return cp, nil
}

// SnapshotCheckpoint returns the checkpoint of an interrupted snapshot
// apply, or nil. While one exists the replica's data is partial: send it in
// resume_snapshot to finish the transfer (or DiscardSnapshotCheckpoint).
func (e *Engine) SnapshotCheckpoint() (*SnapshotCheckpoint, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var cp *SnapshotCheckpoint
	err := e.store.View(func(tx kv.Tx) error {
		var err error
		cp, err = readCheckpoint(tx)
		return err
	})
	return cp, err
}

// DiscardSnapshotCheckpoint abandons an interrupted snapshot apply. The rows
// it merged stay (they are valid state); only the resume position goes.
func (e *Engine) DiscardSnapshotCheckpoint() error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	e.snapMu.Lock()
	e.snap = nil
	e.snapMu.Unlock()
	return e.store.Update(func(tx kv.Tx) error { return tx.Delete(layout.BucketMeta, layout.MetaCheckpoint) })
}

// dropAbsentRows is a replacing apply's drop (ApplySnapshotOptions.Replace)
// over the rows of t with keys in [from, end): every such local row this
// transaction has not loaded (the chunk's rows are loaded, to merge) and
// not in present keeps only its unsent own facts (keepOnlyOwnAfter), so a
// row without any has its record and index entries go at the commit. No
// change-log entry is written for it (flushRows lists only the facts it
// gains). It returns the rows it changed (dropped, or stripped to their
// unsent own facts), for the RemoteChange event.
func (w *writeTx) dropAbsentRows(t *table, from, end []byte, present [][]byte, keepOwnAfter HLC) (int, error) {
	var keys [][]byte
	err := w.kv.Scan(layout.BucketRows, kv.Range{Start: from, End: end, KeysOnly: true}, func(k, _ []byte) bool {
		if _, ok := w.rows[string(k)]; ok {
			return true
		}
		for _, p := range present {
			if bytes.Equal(p, k) {
				return true
			}
		}
		keys = append(keys, bytes.Clone(k))
		return true
	})
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, k := range keys {
		_, pk, err := layout.SplitRowKey(k)
		if err != nil {
			return dropped, err
		}
		v, err := w.kv.Get(layout.BucketRows, k)
		if err != nil {
			return dropped, err
		}
		r, err := w.addRow(t, pk, string(k), v)
		if err != nil {
			return dropped, err
		}
		if w.keepOnlyOwnAfter(r, keepOwnAfter) {
			dropped++
		}
	}
	return dropped, nil
}

// keepOnlyOwnAfter is a replacing apply's treatment of a local row the
// snapshot is about to set (or, absent from it, to drop): the row keeps
// only the facts of this replica's own transactions with a base HLC above
// after (the unsent writes, which the sender cannot hold yet), its cells
// and its tombstone alike. Every other fact of the row the sender holds,
// or held and let go (a cell under a tombstone it pruned, with the
// tombstone), so the snapshot's row, merged after, is the whole truth
// about them; a foreign fact kept here would stay on this replica alone.
// It reports whether it changed the row (and marked it dirty).
func (w *writeTx) keepOnlyOwnAfter(r *txRow, after HLC) bool {
	rec := r.cur
	if rec == nil {
		return false
	}
	own := func(h HLC) bool { return h.Site == w.e.site && after.Less(h.Base()) }
	changed := false
	if rec.HasTomb && !own(rec.Tomb) {
		rec.HasTomb, rec.Tomb, rec.PriorRow = false, HLC{}, nil
		changed = true
	}
	kept := rec.Cells[:0]
	for _, c := range rec.Cells {
		if own(c.HLC) {
			kept = append(kept, c)
		}
	}
	if len(kept) != len(rec.Cells) {
		clear(rec.Cells[len(kept):])
		rec.Cells = kept
		changed = true
	}
	if changed {
		r.dirty = true
	}
	return changed
}
