package wire

import (
	"math"
	"slices"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// ---- encoding ----

// appendChunk writes one snapshot chunk. Fields that do not belong to the
// chunk's type must be zero.
func appendChunk(b []byte, c *model.SnapshotChunk) ([]byte, error) {
	var err error
	has := func(header, migrations, table, rows, footer bool) error {
		switch {
		case (c.Header != nil) != header:
			return at(invalid("header must be set exactly for a header chunk"), "header")
		case len(c.Migrations) > 0 && !migrations:
			return at(invalid("migrations may only be set in a schema chunk"), "schemaMigrations")
		case (c.Table != "") != table:
			return at(invalid("table must be set exactly for table_start, rows and table_end chunks"), "table")
		case len(c.Rows) > 0 && !rows:
			return at(invalid("rows may only be set in a rows chunk"), "rows")
		case (c.Footer != nil) != footer:
			return at(invalid("footer must be set exactly for a footer chunk"), "footer")
		}
		return nil
	}
	switch c.Type {
	case model.ChunkHeader:
		if err = has(true, false, false, false, false); err != nil {
			return b, err
		}
		return appendHeader(b, c.Header)
	case model.ChunkSchema:
		if err = has(false, true, false, false, false); err != nil {
			return b, err
		}
		b = append(b, `{"type":"schema","schemaMigrations":`...)
		if c.Migrations == nil {
			b = append(b, "[]"...)
		} else if b, err = appendMigrations(b, c.Migrations); err != nil {
			return b, at(err, "schemaMigrations")
		}
		return append(b, '}'), nil
	case model.ChunkTableStart, model.ChunkTableEnd:
		if err = has(false, false, true, false, false); err != nil {
			return b, err
		}
		if c.Offset != 0 && c.Type == model.ChunkTableStart {
			return b, at(invalid("a table_start chunk has no offset"), "offset")
		}
		if c.Offset < 0 || c.Offset > MaxCursor {
			return b, at(invalid("%d outside [0, 2^53]", c.Offset), "offset")
		}
		b = append(b, `{"type":"`...)
		b = append(b, c.Type...)
		b = append(b, `","table":`...)
		if b, err = appendString(b, c.Table); err != nil {
			return b, at(err, "table")
		}
		b = appendOffset(b, c.Offset)
		return append(b, '}'), nil
	case model.ChunkRows:
		if err = has(false, false, true, true, false); err != nil {
			return b, err
		}
		if c.Offset < 0 || c.Offset > MaxCursor {
			return b, at(invalid("%d outside [0, 2^53]", c.Offset), "offset")
		}
		return appendRowsChunk(b, c.Table, c.Offset, c.Rows)
	case model.ChunkFooter:
		if err = has(false, false, false, false, true); err != nil {
			return b, err
		}
		f := c.Footer
		if f.Tables < 0 || f.Tables > math.MaxInt32 || f.Rows < 0 || f.Rows > MaxCursor {
			return b, at(invalid("tableCount must lie in [0, 2^31), rowCount in [0, 2^53]"), "footer")
		}
		b = append(b, `{"type":"footer","tableCount":`...)
		b = appendUint(b, uint64(f.Tables))
		b = append(b, `,"rowCount":`...)
		b = appendUint(b, uint64(f.Rows))
		return append(b, '}'), nil
	}
	return b, at(invalid("unknown chunk type %q", c.Type), "type")
}

// appendUint appends v as a JSON number (out of line, so that appendInt is
// inlined here once rather than at each of appendUint's call sites).
//
//go:noinline
func appendUint(b []byte, v uint64) []byte {
	return appendInt(b, int64(v))
}

func appendHeader(b []byte, h *model.SnapshotHeader) ([]byte, error) {
	var err error
	switch {
	case h.Format < 0 || h.Format > math.MaxInt32:
		return b, at(invalid("format %d out of range", h.Format), "format")
	case h.SnapshotID == "":
		return b, at(invalid("must not be empty"), "snapshotId")
	case h.Rows < 0 || h.Rows > MaxCursor:
		return b, at(invalid("%d out of range [0, 2^53]", h.Rows), "rowCount")
	case h.Cursor > MaxCursor:
		return b, at(invalid("%d above 2^53", h.Cursor), "cursor")
	case h.Horizon > MaxCursor:
		return b, at(invalid("%d above 2^53", h.Horizon), "horizon")
	}
	b = append(b, `{"type":"header","format":`...)
	b = appendUint(b, uint64(h.Format))
	b = append(b, `,"snapshotId":`...)
	if b, err = appendString(b, h.SnapshotID); err != nil {
		return b, at(err, "snapshotId")
	}
	b = append(b, `,"siteId":`...)
	b = appendSiteID(b, h.SiteID)
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, h.HLC)
	b = append(b, `,"tables":`...)
	if b, err = appendNames(b, h.Tables); err != nil {
		return b, at(err, "tables")
	}
	b = append(b, `,"rowCount":`...)
	b = appendUint(b, uint64(h.Rows))
	b = append(b, `,"cursor":`...)
	b = appendUint(b, h.Cursor)
	if h.Horizon != 0 {
		b = append(b, `,"horizon":`...)
		b = appendUint(b, h.Horizon)
	}
	return append(b, '}'), nil
}

// rowsEncoder holds the per-chunk tables of a rows chunk.
type rowsEncoder struct {
	columns   map[string]int
	colNames  []string
	bases     map[model.HLC]int
	baseList  []model.HLC
	lastBase  model.HLC
	lastIndex int
}

// column returns the index of a column name; guess is the likely index
// (rows usually list their cells in the same column order).
func (e *rowsEncoder) column(name string, guess int) int {
	if guess < len(e.colNames) && e.colNames[guess] == name {
		return guess
	}
	if i, ok := e.columns[name]; ok {
		return i
	}
	i := len(e.colNames)
	e.columns[name] = i
	e.colNames = append(e.colNames, name)
	return i
}

func (e *rowsEncoder) base(h model.HLC) int {
	h = h.Base()
	if len(e.baseList) > 0 && h == e.lastBase {
		return e.lastIndex
	}
	i, ok := e.bases[h]
	if !ok {
		i = len(e.baseList)
		e.bases[h] = i
		e.baseList = append(e.baseList, h)
	}
	e.lastBase, e.lastIndex = h, i
	return i
}

// appendRowsChunk writes the compact rows chunk:
//
//	{"type":"rows","table":T,"columns":[name…],"key":[c…],"bases":[base…],"rows":[row…]}
//
// with each row [pk, cells] or [pk, cells, tombstone] (pk null when the key
// columns' cells give it), each cell [c, v] or [c, v, b, s], and a
// tombstone [b, s] (see "Snapshot chunks" in the package documentation).
// The rows are written first, into a separate buffer, because they build
// the column and base tables.
// appendOffset appends `,"offset":n` when n is not 0 (a chunk's offset,
// version 4; omitted, it reads as 0).
func appendOffset(b []byte, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(b, `,"offset":`...)
	return appendUint(b, uint64(n))
}

func appendRowsChunk(b []byte, table string, offset int64, rows []model.SnapshotRow) ([]byte, error) {
	e := rowsEncoder{columns: map[string]int{}, bases: map[model.HLC]int{}}
	keyCols := keyColumns(rows)
	body := make([]byte, 0, 160*len(rows)+16)
	var prev model.HLC
	havePrev := false
	var err error
	body = append(body, '[')
	for i := range rows {
		row := &rows[i]
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, '[')
		if keyCols != nil && pkFromCells(row, keyCols) {
			body = append(body, "null"...)
		} else if body, err = appendPK(body, row.PK); err != nil {
			return b, at(atIndex(at(err, "pk"), i), "rows")
		}
		body = append(body, ",["...)
		for j := range row.Cells {
			cell := &row.Cells[j]
			if j > 0 {
				body = append(body, ',')
			}
			if cell.Column == "" {
				return b, at(atIndex(invalid("cell %d: empty column name", j), i), "rows")
			}
			body = append(body, '[')
			body = appendUint(body, uint64(e.column(cell.Column, j)))
			body = append(body, ',')
			if body, err = appendValue(body, cell.Value); err != nil {
				return b, at(atIndex(atIndex(err, j), i), "rows")
			}
			h := cell.HLC
			if !(havePrev && h.SameTransaction(prev) && prev.OpSeq != math.MaxUint32 && h.OpSeq == prev.OpSeq+1) {
				body = append(body, ',')
				body = appendUint(body, uint64(e.base(h)))
				body = append(body, ',')
				body = appendUint(body, uint64(h.OpSeq))
			}
			body = append(body, ']')
			prev, havePrev = h, true
		}
		body = append(body, ']')
		if row.HasTombstone {
			body = append(body, ",["...)
			body = appendUint(body, uint64(e.base(row.Tombstone)))
			body = append(body, ',')
			body = appendUint(body, uint64(row.Tombstone.OpSeq))
			body = append(body, ']')
		} else if !row.Tombstone.IsZero() {
			return b, at(atIndex(invalid("tombstone HLC set without HasTombstone"), i), "rows")
		}
		body = append(body, ']')
	}
	body = append(body, ']')

	b = slices.Grow(b, len(body)+64*len(e.colNames)+40*len(e.baseList)+64)
	b = append(b, `{"type":"rows","table":`...)
	if b, err = appendString(b, table); err != nil {
		return b, at(err, "table")
	}
	b = appendOffset(b, offset)
	b = append(b, `,"columns":[`...)
	for i, n := range e.colNames {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, n); err != nil {
			return b, at(atIndex(err, i), "columns")
		}
	}
	b = append(b, `],"key":[`...)
	for i, n := range keyCols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUint(b, uint64(e.columns[n]))
	}
	b = append(b, `],"bases":[`...)
	for i, h := range e.baseList {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = appendBaseText(b, h)
		b = append(b, '"')
	}
	b = append(b, `],"rows":`...)
	b = append(b, body...)
	return append(b, '}'), nil
}

// keyColumns infers the columns that hold the primary key, so that rows
// need not repeat it: from the first row with cells, for each primary-key
// value the column of the first cell holding an equal value. It returns nil
// when that row's cells do not hold its key.
func keyColumns(rows []model.SnapshotRow) []string {
	for i := range rows {
		row := &rows[i]
		if len(row.Cells) == 0 {
			continue
		}
		cols := make([]string, len(row.PK))
		for k, v := range row.PK {
			found := false
			for _, c := range row.Cells {
				if c.Value.Equal(v) && c.Column != "" {
					cols[k], found = c.Column, true
					break
				}
			}
			if !found {
				return nil
			}
		}
		if len(cols) == 0 {
			return nil
		}
		return cols
	}
	return nil
}

// pkFromCells reports whether row's primary key is exactly the values of
// the first cells of keyCols, in order.
func pkFromCells(row *model.SnapshotRow, keyCols []string) bool {
	if len(row.PK) != len(keyCols) {
		return false
	}
	for k, col := range keyCols {
		c := cellOf(row.Cells, col)
		if c == nil || !c.Value.Equal(row.PK[k]) {
			return false
		}
	}
	return true
}

// cellOf returns the first cell of column col, or nil.
func cellOf(cells []model.SnapshotCell, col string) *model.SnapshotCell {
	for i := range cells {
		if cells[i].Column == col {
			return &cells[i]
		}
	}
	return nil
}

// appendCheckpoint writes a snapshot checkpoint.
func appendCheckpoint(b []byte, c *model.SnapshotCheckpoint) ([]byte, error) {
	var err error
	switch {
	case c.SnapshotID == "":
		return b, at(invalid("must not be empty"), "snapshotId")
	case c.Cursor > MaxCursor:
		return b, at(invalid("%d above 2^53", c.Cursor), "cursor")
	case c.RowsApplied < 0 || c.RowsApplied > MaxCursor:
		return b, at(invalid("%d out of range [0, 2^53]", c.RowsApplied), "rowsApplied")
	case c.CreatedAt > MaxCursor:
		return b, at(invalid("%d above 2^53", c.CreatedAt), "createdAt")
	}
	b = append(b, `{"snapshotId":`...)
	if b, err = appendString(b, c.SnapshotID); err != nil {
		return b, at(err, "snapshotId")
	}
	b = append(b, `,"siteId":`...)
	b = appendSiteID(b, c.SiteID)
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, c.HLC)
	b = append(b, `,"cursor":`...)
	b = appendUint(b, c.Cursor)
	b = append(b, `,"completedTables":`...)
	if b, err = appendNames(b, c.CompletedTables); err != nil {
		return b, at(err, "completedTables")
	}
	b = append(b, `,"rowsApplied":`...)
	b = appendUint(b, uint64(c.RowsApplied))
	b = append(b, `,"createdAt":`...)
	b = appendUint(b, c.CreatedAt)
	return append(b, '}'), nil
}

// ---- decoding ----

// peekType returns the "type" member of the object at r.Pos without
// consuming anything. When the object does not start with it, the object is
// scanned (and its syntax checked) to find it.
func (r *reader) peekType() (string, error) {
	pos, depth := r.Pos, r.Depth
	defer func() { r.Pos, r.Depth = pos, depth }()
	if err := r.OpenObject(); err != nil {
		return "", err
	}
	key, more, err := r.FirstKey()
	for ; more && err == nil; key, more, err = r.ObjectMore() {
		if string(key) == "type" {
			t, err := r.Str()
			return t, at(err, "type")
		}
		if _, _, err = r.Skip(); err != nil {
			return "", err
		}
	}
	if err != nil {
		return "", err
	}
	return "", r.Fail(`missing required field "type"`)
}

// typeField consumes the value of a "type" member already read by peekType.
func (r *reader) typeField(seen *fields, key []byte) error {
	if err := seen.See(&r.Reader, 1, key); err != nil {
		return err
	}
	_, err := r.Str()
	return err
}

func (r *reader) chunk() (model.SnapshotChunk, error) {
	var c model.SnapshotChunk
	t, err := r.peekType()
	if err != nil {
		return c, err
	}
	c.Type = model.ChunkType(t)
	switch c.Type {
	case model.ChunkHeader:
		var h model.SnapshotHeader
		h, err = r.header()
		c.Header = &h
	case model.ChunkSchema:
		var seen fields
		err = r.Members(func(key []byte) error {
			switch string(key) {
			case "type":
				return r.typeField(&seen, key)
			case "schemaMigrations":
				err := seen.See(&r.Reader, 2, key)
				if err == nil {
					c.Migrations, err = r.migrations()
				}
				return at(err, "schemaMigrations")
			}
			return r.UnknownKey(key)
		})
		if err == nil {
			err = seen.Require(&r.Reader, 2, "type", "schemaMigrations")
		}
	case model.ChunkTableStart, model.ChunkTableEnd:
		var seen fields
		err = r.Members(func(key []byte) error {
			switch string(key) {
			case "type":
				return r.typeField(&seen, key)
			case "table":
				err := seen.See(&r.Reader, 2, key)
				if err == nil {
					c.Table, err = r.NonEmptyStr()
				}
				return at(err, "table")
			case "offset":
				if c.Type != model.ChunkTableEnd {
					break
				}
				err := seen.See(&r.Reader, 4, key)
				if err == nil {
					c.Offset, err = r.offset()
				}
				return at(err, "offset")
			}
			return r.UnknownKey(key)
		})
		if err == nil {
			err = seen.Require(&r.Reader, 2, "type", "table")
		}
	case model.ChunkRows:
		c.Table, c.Offset, c.Rows, err = r.rowsChunk()
	case model.ChunkFooter:
		var f model.SnapshotFooter
		var seen fields
		err = r.Members(func(key []byte) error {
			var err error
			switch string(key) {
			case "type":
				return r.typeField(&seen, key)
			case "tableCount":
				if err = seen.See(&r.Reader, 2, key); err == nil {
					var n uint64
					n, err = r.uint(math.MaxInt32)
					f.Tables = int(n)
				}
			case "rowCount":
				if err = seen.See(&r.Reader, 4, key); err == nil {
					var n uint64
					n, err = r.uint(MaxCursor)
					f.Rows = int64(n)
				}
			default:
				return r.UnknownKey(key)
			}
			return at(err, string(key))
		})
		if err == nil {
			err = seen.Require(&r.Reader, 2|4, "type", "tableCount", "rowCount")
		}
		c.Footer = &f
	default:
		return c, at(r.Fail("unknown chunk type %q", t), "type")
	}
	return c, err
}

func (r *reader) header() (model.SnapshotHeader, error) {
	var h model.SnapshotHeader
	var seen fields
	const (
		fType fields = 1 << iota
		fFormat
		fID
		fSite
		fHLC
		fTables
		fRows
		fCursor
		fHorizon
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "format":
			if err = seen.See(&r.Reader, fFormat, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxInt32)
				h.Format = int(n)
			}
		case "snapshotId":
			if err = seen.See(&r.Reader, fID, key); err == nil {
				h.SnapshotID, err = r.NonEmptyStr()
			}
		case "siteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				h.SiteID, err = r.siteID()
			}
		case "hlc":
			if err = seen.See(&r.Reader, fHLC, key); err == nil {
				h.HLC, err = r.hlc()
			}
		case "tables":
			if err = seen.See(&r.Reader, fTables, key); err == nil {
				h.Tables, err = r.names()
			}
		case "rowCount":
			if err = seen.See(&r.Reader, fRows, key); err == nil {
				var n uint64
				n, err = r.uint(MaxCursor)
				h.Rows = int64(n)
			}
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				h.Cursor, err = r.uint(MaxCursor)
			}
		case "horizon":
			if err = seen.See(&r.Reader, fHorizon, key); err == nil {
				h.Horizon, err = r.uint(MaxCursor)
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fFormat|fID|fSite|fHLC|fTables|fRows|fCursor,
			"type", "format", "snapshotId", "siteId", "hlc", "tables", "rowCount", "cursor")
	}
	return h, err
}

// rowsChunk reads a rows chunk. Rows refer to the columns and bases tables;
// when "rows" comes before them, it is checked for syntax and read once the
// object has been read.
// offset reads a chunk's offset: an integer in [0, 2^53].
func (r *reader) offset() (int64, error) {
	n, err := r.uint(MaxCursor)
	return int64(n), err
}

func (r *reader) rowsChunk() (string, int64, []model.SnapshotRow, error) {
	var (
		offset    int64
		table     string
		columns   []string
		key       []int
		bases     []model.HLC
		rows      []model.SnapshotRow
		seen      fields
		rowsStart = -1
		rowsDepth int
	)
	const (
		fType fields = 1 << iota
		fTable
		fColumns
		fKey
		fBases
		fRows
		fOffset
	)
	err := r.Members(func(name []byte) error {
		var err error
		switch string(name) {
		case "type":
			return r.typeField(&seen, name)
		case "table":
			if err = seen.See(&r.Reader, fTable, name); err == nil {
				table, err = r.NonEmptyStr()
			}
		case "offset":
			if err = seen.See(&r.Reader, fOffset, name); err == nil {
				offset, err = r.offset()
			}
		case "key":
			if err = seen.See(&r.Reader, fKey, name); err == nil {
				err = r.elements(func(int) error {
					c, err := r.uint(MaxCursor)
					key = append(key, int(c))
					return err
				})
			}
		case "columns":
			if err = seen.See(&r.Reader, fColumns, name); err == nil {
				start := r.Pos
				if columns, err = r.names(); err == nil {
					err = checkDistinct(r, start, columns)
				}
			}
		case "bases":
			if err = seen.See(&r.Reader, fBases, name); err == nil {
				err = r.elements(func(int) error {
					h, err := r.base()
					bases = append(bases, h)
					return err
				})
			}
		case "rows":
			if err = seen.See(&r.Reader, fRows, name); err == nil {
				if seen&(fColumns|fKey|fBases) == fColumns|fKey|fBases {
					if err = r.checkKey(key, columns); err != nil {
						return err
					}
					rows, err = r.snapshotRows(columns, key, bases)
				} else {
					rowsStart, rowsDepth = r.Pos, r.Depth
					_, _, err = r.Skip()
				}
			}
		default:
			return r.UnknownKey(name)
		}
		return at(err, string(name))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fTable|fColumns|fKey|fBases|fRows, "type", "table", "columns", "key", "bases", "rows")
	}
	if err == nil {
		err = r.checkKey(key, columns)
	}
	if err == nil && rowsStart >= 0 {
		end, depth := r.Pos, r.Depth
		r.Pos, r.Depth = rowsStart, rowsDepth
		rows, err = r.snapshotRows(columns, key, bases)
		err = at(err, "rows")
		r.Pos, r.Depth = end, depth
	}
	return table, offset, rows, err
}

// checkKey checks that the key's column indexes lie in the columns table.
func (r *reader) checkKey(key []int, columns []string) error {
	for i, c := range key {
		if c >= len(columns) {
			return at(atIndex(r.Fail("column index %d out of range (%d columns)", c, len(columns)), i), "key")
		}
	}
	return nil
}

func checkDistinct(r *reader, start int, names []string) error {
	seen := make(map[string]struct{}, len(names))
	for _, n := range names {
		if _, dup := seen[n]; dup {
			return r.FailAt(start, "duplicate column %q", n)
		}
		seen[n] = struct{}{}
	}
	return nil
}

// snapshotRows reads the rows array of a rows chunk. It is the hot path of
// a snapshot transfer: it avoids closures, the rows' primary keys and
// cells are carved out of shared slabs (each row's slices are capped, so
// appending to one never touches another), and text values share arena
// blocks (reader.text).
// The key's column indexes must be in range (checkKey).
func (r *reader) snapshotRows(columns []string, key []int, bases []model.HLC) ([]model.SnapshotRow, error) {
	if err := r.OpenArray(); err != nil {
		return nil, err
	}
	r.arena = make([]byte, 0, arenaBlock)
	defer func() { r.arena = nil }()
	var rows []model.SnapshotRow
	var s rowSlabs
	for i := 0; ; i++ {
		more, err := r.ArrayNext(i)
		if err != nil || !more {
			return rows, err
		}
		if rows == nil {
			// Size the slabs from the input left, assuming rows of
			// about 128 bytes, within reason.
			n := min((len(r.Data)-r.Pos)/128+1, 1024)
			rows = make([]model.SnapshotRow, 0, n)
			s.cells = make([]model.SnapshotCell, 0, 4*n)
			s.pks = make([]model.Value, 0, n)
		}
		row, err := r.snapshotRow(&s, columns, key, bases)
		if err != nil {
			return rows, atIndex(err, i)
		}
		rows = append(rows, row)
	}
}

// rowSlabs is snapshotRows' state across rows: the slabs rows' primary
// keys and cells are carved out of, and the HLC of the last cell read
// (a cell without base and opSeq follows it).
type rowSlabs struct {
	cells    []model.SnapshotCell
	pks      []model.Value
	prev     model.HLC
	havePrev bool
}

// snapshotRow reads one row: [pk, cells] or [pk, cells, tombstone].
func (r *reader) snapshotRow(s *rowSlabs, columns []string, key []int, bases []model.HLC) (model.SnapshotRow, error) {
	var row model.SnapshotRow
	if err := r.OpenArray(); err != nil {
		return row, err
	}
	pkStart := r.Pos
	pkFromCells, err := r.rowPK(s, &row, key)
	if err != nil {
		return row, err
	}
	if r.Peek() != ',' {
		return row, r.Fail("want the row's cells after its primary key")
	}
	r.Pos++
	if row.Cells, err = r.rowCells(s, columns, bases); err != nil {
		return row, err
	}
	if pkFromCells {
		first := len(s.pks)
		for _, c := range key {
			cell := cellOf(row.Cells, columns[c])
			if cell == nil {
				return row, r.FailAt(pkStart, "primary key is null but the row has no cell for key column %q", columns[c])
			}
			s.pks = append(s.pks, cell.Value)
		}
		row.PK = s.pks[first:len(s.pks):len(s.pks)]
	}
	// tombstone
	if r.Peek() == ',' {
		r.Pos++
		if err := r.OpenArray(); err != nil {
			return row, err
		}
		h, err := r.hlcRef(bases)
		if err == nil {
			err = r.closeArray("a tombstone is [base, opSeq]")
		}
		if err != nil {
			return row, err
		}
		row.HasTombstone, row.Tombstone = true, h
	}
	return row, r.closeArray("a row is [pk, cells] or [pk, cells, tombstone]")
}

// rowPK reads a row's primary key into row.PK: an array of values, or null
// when the chunk has a key (fromCells: the key columns' cells give it, and
// the slab has room for it).
func (r *reader) rowPK(s *rowSlabs, row *model.SnapshotRow, key []int) (fromCells bool, err error) {
	if len(s.pks)+len(key) >= cap(s.pks) {
		s.pks = make([]model.Value, 0, max(64, cap(s.pks), len(key)))
	}
	first, start := len(s.pks), r.Pos
	switch c := r.Peek(); {
	case c == 'n' && len(key) > 0 && r.Null():
		return true, nil
	case c != '[':
		return false, r.Want("a primary key (an array, or null when the chunk has a key)")
	}
	if err := r.OpenArray(); err != nil {
		return false, err
	}
	for j := 0; ; j++ {
		more, err := r.ArrayNext(j)
		if err != nil {
			return false, err
		}
		if !more {
			break
		}
		v, err := r.value()
		if err != nil {
			return false, atIndex(err, j)
		}
		s.pks = append(s.pks, v)
	}
	if len(s.pks) == first {
		return false, r.FailAt(start, "primary key must not be empty")
	}
	row.PK = s.pks[first:len(s.pks):len(s.pks)]
	return false, nil
}

// rowCells reads a row's cells array into the cells slab.
func (r *reader) rowCells(s *rowSlabs, columns []string, bases []model.HLC) ([]model.SnapshotCell, error) {
	if err := r.OpenArray(); err != nil {
		return nil, err
	}
	first := len(s.cells)
	for j := 0; ; j++ {
		more, err := r.ArrayNext(j)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		cell, err := r.snapshotCell(columns, bases, s.prev, s.havePrev)
		if err != nil {
			return nil, atIndex(err, j)
		}
		if len(s.cells) == cap(s.cells) {
			// Move this row's cells so far to a new slab.
			slab := make([]model.SnapshotCell, 0, max(256, 2*(len(s.cells)-first)))
			s.cells = append(slab, s.cells[first:]...)
			first = 0
		}
		s.cells = append(s.cells, cell)
		s.prev, s.havePrev = cell.HLC, true
	}
	if len(s.cells) > first {
		return s.cells[first:len(s.cells):len(s.cells)], nil
	}
	return nil, nil
}

// snapshotCell reads [c, v] or [c, v, b, s].
func (r *reader) snapshotCell(columns []string, bases []model.HLC, prev model.HLC, havePrev bool) (model.SnapshotCell, error) {
	var cell model.SnapshotCell
	if err := r.OpenArray(); err != nil {
		return cell, err
	}
	if r.Peek() == ']' {
		return cell, r.Fail("a cell is [column, value] or [column, value, base, opSeq]")
	}
	start := r.Pos
	c, err := r.uint(MaxCursor)
	if err != nil {
		return cell, err
	}
	if c >= uint64(len(columns)) {
		return cell, r.FailAt(start, "column index %d out of range (%d columns)", c, len(columns))
	}
	cell.Column = columns[c]
	if r.Peek() != ',' {
		return cell, r.Fail("a cell is [column, value] or [column, value, base, opSeq]")
	}
	r.Pos++
	if cell.Value, err = r.value(); err != nil {
		return cell, err
	}
	switch r.Peek() {
	case ']':
		r.Pos++
		r.Depth--
		if !havePrev {
			return cell, r.Fail("the first cell of a chunk must carry its base and opSeq")
		}
		if prev.OpSeq == math.MaxUint32 {
			return cell, r.Fail("opSeq overflows: the cell must carry its base and opSeq")
		}
		cell.HLC = prev
		cell.HLC.OpSeq++
		return cell, nil
	case ',':
		r.Pos++
		if cell.HLC, err = r.hlcRef(bases); err != nil {
			return cell, err
		}
		return cell, r.closeArray("a cell is [column, value] or [column, value, base, opSeq]")
	}
	return cell, r.Fail("a cell is [column, value] or [column, value, base, opSeq]")
}

// hlcRef reads `b, s`: an index into the bases table and an opSeq.
func (r *reader) hlcRef(bases []model.HLC) (model.HLC, error) {
	start := r.Pos
	b, err := r.uint(MaxCursor)
	if err != nil {
		return model.HLC{}, err
	}
	if b >= uint64(len(bases)) {
		return model.HLC{}, r.FailAt(start, "base index %d out of range (%d bases)", b, len(bases))
	}
	if r.Peek() != ',' {
		return model.HLC{}, r.Fail("want ',' and an opSeq after the base index")
	}
	r.Pos++
	s, err := r.uint(math.MaxUint32)
	if err != nil {
		return model.HLC{}, err
	}
	h := bases[b]
	h.OpSeq = uint32(s)
	return h, nil
}

// closeArray consumes the ']' that must come next.
func (r *reader) closeArray(shape string) error {
	if r.Peek() != ']' {
		return r.Fail("%s", shape)
	}
	r.Pos++
	r.Depth--
	return nil
}

func (r *reader) checkpoint() (model.SnapshotCheckpoint, error) {
	var c model.SnapshotCheckpoint
	var seen fields
	const (
		fID fields = 1 << iota
		fSite
		fHLC
		fCursor
		fTables
		fRows
		fCreated
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "snapshotId":
			if err = seen.See(&r.Reader, fID, key); err == nil {
				c.SnapshotID, err = r.NonEmptyStr()
			}
		case "siteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				c.SiteID, err = r.siteID()
			}
		case "hlc":
			if err = seen.See(&r.Reader, fHLC, key); err == nil {
				c.HLC, err = r.hlc()
			}
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				c.Cursor, err = r.uint(MaxCursor)
			}
		case "completedTables":
			if err = seen.See(&r.Reader, fTables, key); err == nil {
				c.CompletedTables, err = r.names()
			}
		case "rowsApplied":
			if err = seen.See(&r.Reader, fRows, key); err == nil {
				var n uint64
				n, err = r.uint(MaxCursor)
				c.RowsApplied = int64(n)
			}
		case "createdAt":
			if err = seen.See(&r.Reader, fCreated, key); err == nil {
				c.CreatedAt, err = r.uint(MaxCursor)
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fID|fSite|fHLC|fCursor|fTables|fRows|fCreated,
			"snapshotId", "siteId", "hlc", "cursor", "completedTables", "rowsApplied", "createdAt")
	}
	return c, err
}

// ---- sizing ----

// MaxRowsChunkOverhead bounds the bytes of a rows chunk's snapshot_chunk
// frame outside its rows' shares: the frame holding rows is at most
// MaxRowsChunkOverhead plus the sum of SnapshotRowSize over them (for a
// table name of at most model.MaxNameLen bytes, as every valid name is).
const MaxRowsChunkOverhead = 512

// Upper bounds of the pieces of a rows chunk a row adds (see
// appendRowsChunk): a cell [c,v,b,s] with its separator, its column-table
// entry beside its name, and its bases-table entry; a tombstone ,[b,s] with
// its bases-table entry; a key-table index.
const (
	sizeIndex     = 16 // digits of an index or opSeq (at most 2^53)
	sizeBaseEntry = baseTextLen + 3
	sizeCell      = 5 + 2*sizeIndex + 10 + sizeBaseEntry + 1
	sizeTombstone = 4 + sizeIndex + 10 + sizeBaseEntry
	sizeRowFrame  = 6
)

// SnapshotRowSize returns an upper bound, in bytes, of what row adds to the
// snapshot_chunk frame of a rows chunk: its own encoding and its share of
// the chunk's column, key and bases tables, as if each of its cells brought
// a new column and a new base. The relay passes it as
// engine.SnapshotOptions.RowBytes so that chunks fit the frame limit (see
// "Snapshot chunks" in the package documentation). It does not check the
// row: a value that does not encode (invalid UTF-8 text, a NaN) is counted
// as if it did.
func SnapshotRowSize(row *model.SnapshotRow) int {
	pk := 2
	for _, v := range row.PK {
		pk += valueSize(v) + 1 + sizeIndex + 1 // the value, and a key-table index
	}
	n := sizeRowFrame + max(pk, 4)
	for i := range row.Cells {
		c := &row.Cells[i]
		n += sizeCell + jsontext.StringLen(c.Column) + 1 + valueSize(c.Value)
	}
	if row.HasTombstone {
		n += sizeTombstone
	}
	return n
}

// valueSize returns an upper bound of len(appendValue(v)).
func valueSize(v model.Value) int {
	switch v.Kind() {
	case model.KindText:
		return jsontext.StringLen(v.Text())
	case model.KindBlob:
		return len(`{"`+tagBin+`":""}`) + (len(v.Blob())+2)/3*4
	case model.KindJSON:
		return len(`{"`+tagJSON+`":}`) + len(v.JSON())
	case model.KindInteger, model.KindTimestamp:
		return len(`{"` + tagBigint + `":"-9223372036854775808"}`)
	case model.KindReal:
		return 32 // "-1.2345678901234567e-308", or 21 digits and ".0"
	}
	return 5 // null, true, false
}
