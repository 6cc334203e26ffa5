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

	"github.com/replica-sync/replica/kv"
)

// DefaultSnapshotChunkRows is the number of rows per rows chunk when
// SnapshotOptions.ChunkRows is 0.
const DefaultSnapshotChunkRows = 1000

// SnapshotOptions tune Snapshot.
type SnapshotOptions struct {
	// ChunkRows bounds the rows per rows chunk; 0 means
	// DefaultSnapshotChunkRows.
	ChunkRows int
	// Cursor is stamped into the header (the relay's delivery cursor,
	// taken before the snapshot starts).
	Cursor uint64
	// Resume continues an interrupted transfer: the stream keeps the
	// checkpoint's snapshot id and skips its completed tables.
	Resume *SnapshotCheckpoint
}

// Snapshot streams this replica's whole state (sync-protocol.md § Streaming
// Snapshot API): header, schema, then per table its rows (every live cell
// with its HLC, and tombstones) in chunks of at most ChunkRows rows, then a
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
		chunkRows := opts.ChunkRows
		if chunkRows <= 0 {
			chunkRows = DefaultSnapshotChunkRows
		}
		var hdr SnapshotHeader
		var migs []SchemaMigration
		var tables []string
		var schema *schemaState
		err := e.store.View(func(tx kv.Tx) error {
			m, err := readMeta(tx)
			if err != nil {
				return err
			}
			schema, err = e.schemaFor(tx, m.schemaVer)
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
				err := tx.Scan(bucketRows, kv.Range{Start: tableKey(t), End: kv.PrefixEnd(tableKey(t)), KeysOnly: true}, func(_, _ []byte) bool {
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
			if !yield(SnapshotChunk{Type: ChunkTableStart, Table: name}, nil) {
				return
			}
			t := schema.table(name)
			tk := tableKey(name)
			start, end := tk, kv.PrefixEnd(tk)
			for {
				var rows []SnapshotRow
				var cells []SnapshotCell // slab the rows' cells are carved from
				var last []byte
				err := e.store.View(func(tx kv.Tx) error {
					rows = make([]SnapshotRow, 0, chunkRows)
					cells = nil
					var derr error
					err := tx.Scan(bucketRows, kv.Range{Start: start, End: end, Limit: chunkRows}, func(k, v []byte) bool {
						last = k
						_, pk, err := splitRowKey(k)
						if err != nil {
							derr = err
							return false
						}
						rec, err := decodeRecord(v, pk)
						if err != nil {
							derr = err
							return false
						}
						sr := SnapshotRow{PK: pk, HasTombstone: rec.hasTomb, Tombstone: rec.tomb}
						if n := len(rec.cells); n > 0 {
							if cap(cells)-len(cells) < n {
								cells = make([]SnapshotCell, 0, max(n, 8*min(chunkRows, 1024)))
							}
							first := len(cells)
							for _, c := range rec.cells {
								cells = append(cells, SnapshotCell{Column: c.col, Value: c.val, HLC: c.hlc})
							}
							sr.Cells = cells[first:len(cells):len(cells)]
						}
						rows = append(rows, sr)
						return true
					})
					if err == nil {
						err = derr
					}
					if last != nil {
						last = bytes.Clone(last)
					}
					return err
				})
				if err != nil {
					yield(SnapshotChunk{}, err)
					return
				}
				if len(rows) > 0 {
					_ = t
					total += int64(len(rows))
					if !yield(SnapshotChunk{Type: ChunkRows, Table: name, Rows: rows}, nil) {
						return
					}
				}
				if len(rows) < chunkRows {
					break
				}
				start = append(last, 0)
			}
			if !yield(SnapshotChunk{Type: ChunkTableEnd, Table: name}, nil) {
				return
			}
		}
		yield(SnapshotChunk{Type: ChunkFooter, Footer: &SnapshotFooter{Tables: len(tables), Rows: total}}, nil)
	}
}

// rowTables lists the tables to snapshot: the schema's in creation order,
// then any other table holding rows (schema-less replicas), by name.
func rowTables(tx kv.Tx, s *schemaState) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range s.migrations {
		if m.Type == CreateTable && !seen[m.TableName] {
			seen[m.TableName] = true
			out = append(out, m.TableName)
		}
	}
	var extra []string
	var start []byte
	for {
		var k []byte
		err := tx.Scan(bucketRows, kv.Range{Start: start, Limit: 1, KeysOnly: true}, func(key, _ []byte) bool {
			k = bytes.Clone(key)
			return false
		})
		if err != nil {
			return nil, err
		}
		if k == nil {
			break
		}
		tv, _, err := decodeKeyValue(k)
		if err != nil {
			return nil, err
		}
		if !seen[tv.Text()] {
			seen[tv.Text()] = true
			extra = append(extra, tv.Text())
		}
		start = kv.PrefixEnd(tableKey(tv.Text()))
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
	rows    int64 // rows applied in this stream
	tables  int   // tables finished in this stream
	inTable int64
	facts   []Change // scratch of applySnapshotRows, empty between chunks
}

// ApplySnapshotChunk applies one chunk of a snapshot stream, in stream order
// (sync-protocol.md § applySnapshotStream). The snapshot is merged into the
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
func (e *Engine) ApplySnapshotChunk(c SnapshotChunk) (SnapshotProgress, error) {
	if err := e.checkOpen(); err != nil {
		return SnapshotProgress{}, err
	}
	// Events and quarantine replays run after snapMu is released:
	// subscribers may call back into the engine (DiscardSnapshotCheckpoint
	// takes snapMu).
	var after []func()
	e.snapMu.Lock()
	p, err := e.applySnapshotChunk(c, &after)
	e.snapMu.Unlock()
	for _, f := range after {
		f()
	}
	return p, err
}

// drainAfterSnapshot replays the changes held for tables a snapshot created.
func (e *Engine) drainAfterSnapshot(tables []string) {
	if len(tables) == 0 || e.declared == nil {
		return
	}
	if _, err := e.DrainQuarantine(tables...); err != nil {
		e.log.Warn("replica: replaying quarantined changes after a snapshot failed; they stay held", "tables", tables, "err", err)
	}
}

func (e *Engine) applySnapshotChunk(c SnapshotChunk, after *[]func()) (SnapshotProgress, error) {
	s := e.snap
	if c.Type != ChunkHeader && s == nil {
		return SnapshotProgress{}, malformed("snapshot %s chunk before a header", c.Type)
	}
	if c.Type != ChunkHeader && s.broken {
		return SnapshotProgress{}, malformed("snapshot %s chunk after a failed chunk (start again with a header)", c.Type)
	}
	switch c.Type {
	case ChunkHeader:
		if c.Header == nil {
			return SnapshotProgress{}, malformed("header chunk without a header")
		}
		h := *c.Header
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
			} else {
				ns.cp = SnapshotCheckpoint{SnapshotID: h.SnapshotID, SiteID: h.SiteID, HLC: h.HLC, Cursor: h.Cursor, CreatedAt: e.clock.Now()}
			}
			return writeCheckpoint(tx, &ns.cp)
		})
		if err != nil {
			return SnapshotProgress{}, err
		}
		e.snap = ns
		return ns.progress(), nil
	case ChunkSchema:
		if s.stage != ChunkHeader {
			return SnapshotProgress{}, malformed("schema chunk after %s", s.stage)
		}
		var maxH HLC
		for i := range c.Migrations {
			if err := validateMigration(&c.Migrations[i]); err != nil {
				return SnapshotProgress{}, err
			}
			if c.Migrations[i].HLC.Site.IsZero() {
				return SnapshotProgress{}, malformed("snapshot migration %s of %q without a site", c.Migrations[i].Type, c.Migrations[i].TableName)
			}
			if maxH.Less(c.Migrations[i].HLC) {
				maxH = c.Migrations[i].HLC
			}
		}
		if err := checkDrift(maxH, e.clock.Now()); err != nil {
			return SnapshotProgress{}, err
		}
		var out applyOutcome
		err := e.store.Update(func(tx kv.Tx) error {
			w, err := e.begin(tx)
			if err != nil {
				return err
			}
			before := columnCounts(w.schema)
			out = applyOutcome{}
			for i := range c.Migrations {
				m := c.Migrations[i]
				k := migrationKey(classOf(m.HLC.Site, e.site), m.HLC)
				if _, err := tx.Get(bucketMigrations, k); err == nil {
					continue
				} else if !errors.Is(err, kv.ErrNotFound) {
					return err
				}
				if err := w.storeMigration(&m, classOf(m.HLC.Site, e.site)); err != nil {
					return err
				}
			}
			out.created = grownTables(before, w.schema)
			// The clock max-merges every HLC received, migrations too, so
			// local facts (a local add_column) are stamped above them.
			if !maxH.IsZero() {
				if c := w.clock.receive(maxH); c != w.clock {
					w.clock, w.clockDirty = c, true
				}
			}
			return w.commit()
		})
		if err != nil {
			return SnapshotProgress{}, err
		}
		s.stage = ChunkSchema
		e.snapCreated = append(e.snapCreated, out.created...)
		// Held changes for the tables that just appeared replay now, not
		// at the footer: a snapshot abandoned or interrupted by a restart
		// never reaches it, and nothing else would drain them. (The footer
		// drains again, for a replay that failed here.)
		created := out.created
		*after = append(*after, func() { e.drainAfterSnapshot(created) })
		return s.progress(), nil
	case ChunkTableStart:
		if s.stage != ChunkSchema && s.stage != ChunkTableEnd {
			return SnapshotProgress{}, malformed("table_start after %s", s.stage)
		}
		if !ValidName(c.Table) {
			return SnapshotProgress{}, malformed("snapshot table %q", c.Table)
		}
		// The stream carries the tables its header announced, in order: a
		// stream that skips one would otherwise end "complete" without it.
		if hs := s.hdr.Tables; s.tables >= len(hs) || hs[s.tables] != c.Table {
			return SnapshotProgress{}, malformed("table_start of %q, but the header announced %v and %d are done", c.Table, hs, s.tables)
		}
		s.stage, s.table, s.inTable = ChunkTableStart, c.Table, 0
		return s.progress(), nil
	case ChunkRows:
		if (s.stage != ChunkTableStart && s.stage != ChunkRows) || c.Table != s.table {
			return SnapshotProgress{}, malformed("rows of %q after %s of %q", c.Table, s.stage, s.table)
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
		ev := Event{Type: RemoteChange, Tables: []string{c.Table}}
		*after = append(*after, func() { e.emit(ev) })
		if held != nil {
			u := *held
			*after = append(*after, func() { e.emit(Event{Type: UnknownTableSeen, Tables: []string{u.Table}, UnknownTable: &u}) })
		}
		return s.progress(), nil
	case ChunkTableEnd:
		if (s.stage != ChunkTableStart && s.stage != ChunkRows) || c.Table != s.table {
			return SnapshotProgress{}, malformed("table_end of %q after %s of %q", c.Table, s.stage, s.table)
		}
		cp := s.cp
		cp.CompletedTables = append(slices.Clone(cp.CompletedTables), c.Table)
		cp.RowsApplied = s.cp.RowsApplied
		if err := e.store.Update(func(tx kv.Tx) error { return writeCheckpoint(tx, &cp) }); err != nil {
			return SnapshotProgress{}, err
		}
		s.cp = cp
		s.stage, s.table = ChunkTableEnd, ""
		s.tables++
		return s.progress(), nil
	case ChunkFooter:
		if s.stage != ChunkSchema && s.stage != ChunkTableEnd {
			return SnapshotProgress{}, malformed("footer after %s", s.stage)
		}
		if c.Footer == nil {
			return SnapshotProgress{}, malformed("footer chunk without a footer")
		}
		if c.Footer.Rows != s.rows || c.Footer.Tables != s.tables || s.tables != len(s.hdr.Tables) {
			return SnapshotProgress{}, malformed("snapshot footer counts %d tables and %d rows, the stream carried %d and %d (the header announced %d tables)",
				c.Footer.Tables, c.Footer.Rows, s.tables, s.rows, len(s.hdr.Tables))
		}
		if err := e.store.Update(func(tx kv.Tx) error { return tx.Delete(bucketMeta, metaCheckpoint) }); err != nil {
			return SnapshotProgress{}, err
		}
		p := s.progress()
		p.Done = true
		e.snap = nil
		created := e.snapCreated
		e.snapCreated = nil
		*after = append(*after, func() { e.drainAfterSnapshot(created) })
		return p, nil
	}
	return SnapshotProgress{}, malformed("unknown snapshot chunk type %q", c.Type)
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
// A fact that does not fit the local table (a misfit: its key's columns or
// types, its value's type, its column) is held as ApplyChanges holds it,
// not applied, and the chunk applies without it: refusing the chunk would
// keep every new device from bootstrapping off a relay that stores one bad
// row. held reports the facts held (nil if none), for an UnknownTableSeen
// event.
func (e *Engine) applySnapshotRows(s *snapApply, rows []SnapshotRow) (held *UnknownTable, err error) {
	now := e.clock.Now()
	var maxH HLC
	n := 0
	for i := range rows {
		r := &rows[i]
		if len(r.PK) == 0 {
			return nil, malformed("snapshot row of %s without a key", s.table)
		}
		for _, v := range r.PK {
			if v.IsNull() {
				return nil, malformed("snapshot row of %s with a null key value", s.table)
			}
		}
		n += len(r.Cells)
		if r.HasTombstone {
			n++
		}
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
	for i := range rows {
		r := &rows[i]
		if r.HasTombstone {
			facts = append(facts, Change{Type: RowDeletion, Table: s.table, PK: r.PK, HLC: r.Tombstone})
		}
		for _, c := range r.Cells {
			facts = append(facts, Change{Type: ColumnChange, Table: s.table, PK: r.PK, Column: c.Column, Value: c.Value, HLC: c.HLC})
		}
	}
	// Every fact passes the checks a change from a peer passes (finite
	// values and key, key size, names) and names the site that minted it:
	// a fact without one would be state ChangesSince can never return.
	k := 0
	for i := range rows {
		if err := validateChangeKey(s.table, rows[i].PK); err != nil {
			return nil, fmt.Errorf("snapshot row of %s: %w", s.table, err)
		}
		m := len(rows[i].Cells)
		if rows[i].HasTombstone {
			m++
		}
		for j := k; j < k+m; j++ {
			f := &facts[j]
			if err := validateChangeBody(f); err != nil {
				return nil, fmt.Errorf("snapshot row of %s: %w", s.table, err)
			}
			if f.HLC.Site.IsZero() {
				return nil, malformed("snapshot fact of %s %s without a site", s.table, fmtKey(f.PK))
			}
			if maxH.Less(f.HLC) {
				maxH = f.HLC
			}
		}
		k += m
	}
	if err := checkDrift(maxH, now); err != nil {
		return nil, err
	}
	cp := s.cp
	cp.RowsApplied += int64(len(rows))
	err = e.store.Update(func(tx kv.Tx) error {
		held = nil
		w, err := e.begin(tx)
		if err != nil {
			return err
		}
		t := w.effTable(s.table)
		if t == nil {
			return malformed("snapshot rows for table %q, which its schema does not define", s.table)
		}
		type rowFacts struct {
			rk    string
			pk    []Value
			facts []pendingFact
		}
		pending := make([]pendingFact, len(facts))
		for i := range facts {
			pending[i] = pendingFact{c: &facts[i]}
		}
		groups := make([]rowFacts, 0, len(rows))
		keys := make([][]byte, 0, len(rows))
		pks := make([][]Value, 0, len(rows))
		// hold holds a fact that does not fit t (see applySets).
		hold := func(c *Change, mf *misfitError) error {
			if held == nil {
				held = &UnknownTable{Table: s.table, Disposition: e.opts.UnknownTables, Site: c.HLC.Site, Reason: mf.msg}
				e.log.Warn("replica: a snapshot's row does not fit its table; the fact is held", "table", s.table, "err", mf.msg)
			}
			held.Changes++
			if held.LatestHLC.Less(c.HLC) {
				held.LatestHLC = c.HLC
			}
			if e.opts.UnknownTables == Ignore {
				return nil
			}
			flags := heldMisfit
			if mf.unknownColumn {
				flags = 0
				if e.opts.UnknownTables == StoreAndForward {
					flags = heldForward
				}
			}
			return w.holdAs(c, flags)
		}
		// A relay sends rows in key order, so a key above the previous one
		// is new; a key out of order is looked up (and a row sent twice
		// merges into one).
		var index map[string]int
		k := 0
		for i := range rows {
			m := len(rows[i].Cells)
			if rows[i].HasTombstone {
				m++
			}
			mine := pending[k : k+m : k+m]
			k += m
			pk, rkb, err := normalizeKey(t, s.table, rows[i].PK)
			if err != nil {
				var mf *misfitError
				if !errors.As(err, &mf) {
					return err
				}
				for _, p := range mine {
					if err := hold(p.c, mf); err != nil {
						return err
					}
				}
				continue
			}
			kept := mine[:0]
			for _, p := range mine {
				p.c.PK = pk
				if err := normalizeFact(t, p.c); err != nil {
					var mf *misfitError
					if !errors.As(err, &mf) {
						return err
					}
					if err := hold(p.c, mf); err != nil {
						return err
					}
					continue
				}
				kept = append(kept, p)
			}
			if mine = kept; len(mine) == 0 {
				continue
			}
			if len(groups) > 0 && (index != nil || string(rkb) <= groups[len(groups)-1].rk) {
				if index == nil {
					index = make(map[string]int, len(rows))
					for gi := range groups {
						index[groups[gi].rk] = gi
					}
				}
				if gi, ok := index[string(rkb)]; ok {
					groups[gi].facts = append(groups[gi].facts, mine...)
					continue
				}
				index[string(rkb)] = len(groups)
			}
			groups = append(groups, rowFacts{rk: string(rkb), pk: pk, facts: mine})
			keys = append(keys, rkb)
			pks = append(pks, pk)
		}
		if len(w.rows) == 0 {
			w.rows = make(map[string]*txRow, len(groups))
		}
		if err := w.prefetchKeyed(t, keys, pks); err != nil {
			return err
		}
		var out applyOutcome
		for i := range groups {
			w.mergeRow(w.rows[groups[i].rk], groups[i].facts, &out)
		}
		if !maxH.IsZero() {
			if c := w.clock.receive(maxH); c != w.clock {
				w.clock, w.clockDirty = c, true
			}
		}
		if err := writeCheckpoint(tx, &cp); err != nil {
			return err
		}
		return w.commit()
	})
	if err != nil {
		return nil, err
	}
	s.cp = cp
	return held, nil
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
//	}
//
// (json.go writes and reads it; json_test.go checks the bytes against
// encoding/json).
func writeCheckpoint(tx kv.Tx, cp *SnapshotCheckpoint) error {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, cp.SnapshotID, true)
	b = append(b, `,"site":`...)
	b = appendJSONBytes(b, cp.SiteID[:])
	b = append(b, `,"hlc":`...)
	b = appendJSONBytes(b, cp.HLC.Bytes())
	b = append(b, `,"cursor":`...)
	b = strconv.AppendUint(b, cp.Cursor, 10)
	b = append(b, `,"completed":`...)
	b = appendJSONStrings(b, cp.CompletedTables)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, cp.RowsApplied, 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendUint(b, cp.CreatedAt, 10)
	b = append(b, '}')
	return tx.Put(bucketMeta, metaCheckpoint, b)
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
	return cp, nil
}

func readCheckpoint(tx kv.Tx) (*SnapshotCheckpoint, error) {
	v, err := tx.Get(bucketMeta, metaCheckpoint)
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
	return e.store.Update(func(tx kv.Tx) error { return tx.Delete(bucketMeta, metaCheckpoint) })
}
