package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// A row record is the stored CRDT state of one row, under its row key in the
// rows bucket: every live cell with the HLC of the write that set it (and its
// best-effort before-image), and the tombstone if the row is deleted. Values
// and metadata share one record so a local write costs one put for the row
// (BROWSER-FACTS.md: IndexedDB costs per request).
//
// The encoding is canonical: the same logical state always encodes to the
// same bytes, whatever order the facts arrived in.
//
//	version   1 byte (recordVersion)
//	flags     1 byte: 1 = tombstone, 2 = tombstone has a before-image row
//	nbases    uvarint; then nbases × 26-byte HLC bases, ascending
//	tombstone (if flag 1) uvarint base index, uvarint opSeq;
//	          (if flag 2) uvarint n, n × (name, value), names ascending
//	ncells    uvarint; then per cell, names ascending:
//	          name (uvarint length + bytes), uvarint base index,
//	          uvarint opSeq, 1 byte cell flags (1 = value is primary-key
//	          component k, given as uvarint k instead of a value;
//	          2 = before-image follows), value, [prior value, 30-byte HLC]
//
// Values are a tag byte and a payload: null 0, false 1, true 2,
// integer 3 (zigzag varint), real 4 (8 bytes, IEEE 754 little-endian),
// timestamp 5 (zigzag varint ms), text 6, json 7, blob 8 (uvarint length +
// bytes).
const recordVersion = 1

type cell struct {
	col   string
	val   Value
	hlc   HLC
	prior *cellPrior // best-effort before-image, nil if none; never modified
}

// cellPrior is a cell's before-image: the value and HLC of the write it
// replaced. Held by pointer: most cells (every inserted or bootstrapped
// one) have none, and a cell is copied, scanned and cloned often.
type cellPrior struct {
	val Value
	hlc HLC
}

type record struct {
	cells    []cell // sorted by col
	hasTomb  bool
	tomb     HLC
	priorRow Row // tombstone before-image, may be nil
}

func (r *record) clone() *record {
	if r == nil {
		return nil
	}
	c := &record{cells: slices.Clone(r.cells), hasTomb: r.hasTomb, tomb: r.tomb, priorRow: r.priorRow}
	return c
}

// search returns the position of col in r.cells and whether it is there
// (cells are sorted by name; compared by index, not copied: a cell is large).
func (r *record) search(col string) (int, bool) {
	lo, hi := 0, len(r.cells)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.cells[m].col < col {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(r.cells) && r.cells[lo].col == col
}

// find returns the index of col in r.cells, or -1.
func (r *record) find(col string) int {
	if i, ok := r.search(col); ok {
		return i
	}
	return -1
}

// set inserts or replaces the cell for c.col.
func (r *record) set(c cell) {
	i, ok := r.search(c.col)
	if ok {
		r.cells[i] = c
		return
	}
	r.cells = slices.Insert(r.cells, i, c)
}

// visible reports whether the row is live under its table's resurrection
// policy. A tombstone kills every cell at or below it (see dropDead); cells
// above it are kept under either policy, so merged state does not depend on
// the policy: with resurrection allowed they revive the row, under
// delete-wins the row stays deleted. So a row is visible iff it has a cell
// and, under delete-wins, no tombstone.
func (r *record) visible(allowResurrection bool) bool {
	if r == nil || len(r.cells) == 0 {
		return false
	}
	return !r.hasTomb || allowResurrection
}

// dropDead removes the cells the tombstone has killed: those at or below
// it. Cells written after it stay under either policy (see visible).
func (r *record) dropDead() {
	if !r.hasTomb {
		return
	}
	r.cells = slices.DeleteFunc(r.cells, func(c cell) bool { return !r.tomb.Less(c.hlc) })
}

// bases returns the distinct transaction bases of the live facts (cells and
// tombstone), ascending. Each has one change-log entry.
func (r *record) bases() []HLC {
	if r == nil {
		return nil
	}
	return r.appendBases(make([]HLC, 0, 2))
}

// appendBases is bases appending to out[:0] (a scratch buffer).
func (r *record) appendBases(out []HLC) []HLC {
	out = out[:0]
	if r == nil {
		return out
	}
	add := func(h HLC) {
		b := h.Base()
		for _, x := range out {
			if x == b {
				return
			}
		}
		out = append(out, b)
	}
	if r.hasTomb {
		add(r.tomb)
	}
	for i := range r.cells {
		add(r.cells[i].hlc)
	}
	// Insertion sort: almost always one or two bases, and sort.Slice
	// allocates.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Less(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// maxPriorValue bounds the before-images a record keeps: a prior value
// (of a cell, or in a tombstone's row image) whose text, JSON or blob is
// longer is not kept. Before-images are best-effort; without the bound a row
// holding a value over half the kv value limit could never be updated (the
// record would carry the value and its before-image) nor, with
// resurrection, re-created after a delete.
const maxPriorValue = 4096

func priorKept(v Value) bool { return v.Len() <= maxPriorValue }

// priorImage returns row without the values too large to keep as a
// before-image (row itself when it has none).
func priorImage(row Row) Row {
	var out Row
	for n, v := range row {
		if !priorKept(v) {
			if out == nil {
				out = make(Row, len(row))
				for k, x := range row {
					out[k] = x
				}
			}
			delete(out, n)
		}
	}
	if out == nil {
		return row
	}
	return out
}

// row returns the values of the record's cells (absent columns are
// absent). Use table.rowOf for a row as callers see it.
func (r *record) row() Row {
	row := make(Row, len(r.cells))
	for i := range r.cells {
		row[r.cells[i].col] = r.cells[i].val
	}
	return row
}

// encodeRecord encodes r canonically. pk and pkCols (nil in schema-less
// mode) let primary-key cells refer to the key instead of repeating it.
func encodeRecord(dst []byte, r *record, pk []Value, pkCols []string) []byte {
	return encodeRecordBases(dst, r, r.bases(), pk, pkCols)
}

// encodeRecordBases is encodeRecord with r.bases() given.
func encodeRecordBases(dst []byte, r *record, bases []HLC, pk []Value, pkCols []string) []byte {
	dst = append(dst, recordVersion)
	var flags byte
	if r.hasTomb {
		flags |= 1
		if r.priorRow != nil {
			flags |= 2
		}
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(bases)))
	var tmp [BaseSize]byte
	for _, b := range bases {
		b.PutBase(tmp[:])
		dst = append(dst, tmp[:]...)
	}
	baseIndex := func(h HLC) uint64 {
		for i, b := range bases {
			if h.SameTransaction(b) {
				return uint64(i)
			}
		}
		panic("engine: record base missing")
	}
	if r.hasTomb {
		dst = binary.AppendUvarint(dst, baseIndex(r.tomb))
		dst = binary.AppendUvarint(dst, uint64(r.tomb.OpSeq))
		if r.priorRow != nil {
			names := make([]string, 0, len(r.priorRow))
			for n := range r.priorRow {
				names = append(names, n)
			}
			sort.Strings(names)
			dst = binary.AppendUvarint(dst, uint64(len(names)))
			for _, n := range names {
				dst = appendString(dst, n)
				dst = appendRecValue(dst, r.priorRow[n])
			}
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.cells)))
	for i := range r.cells {
		c := &r.cells[i]
		dst = appendString(dst, c.col)
		dst = binary.AppendUvarint(dst, baseIndex(c.hlc))
		dst = binary.AppendUvarint(dst, uint64(c.hlc.OpSeq))
		var cf byte
		k := -1
		for j, name := range pkCols {
			if name == c.col && j < len(pk) && pk[j].Equal(c.val) {
				k = j
				break
			}
		}
		if k >= 0 {
			cf |= 1
		}
		if c.prior != nil {
			cf |= 2
		}
		dst = append(dst, cf)
		if k >= 0 {
			dst = binary.AppendUvarint(dst, uint64(k))
		} else {
			dst = appendRecValue(dst, c.val)
		}
		if c.prior != nil {
			dst = appendRecValue(dst, c.prior.val)
			var h [HLCSize]byte
			c.prior.hlc.Put(h[:])
			dst = append(dst, h[:]...)
		}
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

const (
	recNull byte = iota
	recFalse
	recTrue
	recInt
	recReal
	recTimestamp
	recText
	recJSON
	recBlob
)

func appendRecValue(dst []byte, v Value) []byte {
	switch v.Kind() {
	case KindNull:
		return append(dst, recNull)
	case KindBoolean:
		if v.Int() != 0 {
			return append(dst, recTrue)
		}
		return append(dst, recFalse)
	case KindInteger:
		return binary.AppendVarint(append(dst, recInt), v.Int())
	case KindReal:
		return binary.LittleEndian.AppendUint64(append(dst, recReal), math.Float64bits(v.Real()))
	case KindTimestamp:
		return binary.AppendVarint(append(dst, recTimestamp), v.Int())
	case KindText:
		return appendString(append(dst, recText), v.Text())
	case KindJSON:
		return appendString(append(dst, recJSON), v.Text())
	case KindBlob:
		return appendString(append(dst, recBlob), rawString(v))
	}
	panic(fmt.Sprintf("engine: unknown value kind %d", v.Kind()))
}

// recReader decodes a record; the first error sticks.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: corrupt row record (%s)", ErrMalformed, what)
	}
	r.b = nil
}

func (r *recReader) byte() byte {
	if len(r.b) < 1 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *recReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *recReader) string() string {
	n := r.uvarint()
	return string(r.bytes(n))
}

// name reads a column name. Names repeat in every record of a table, so
// they are interned (names.get): decoding a row costs no allocation per
// cell name.
func (r *recReader) name() string {
	n := r.uvarint()
	return names.get(r.bytes(n))
}

// names interns column names read from records, up to a bound (a replica
// with more distinct names than that just allocates the rest).
var names = internTable{m: map[string]string{}}

type internTable struct {
	mu sync.Mutex
	m  map[string]string
}

const (
	maxInterned    = 4096
	maxInternedLen = 64
)

func (t *internTable) get(b []byte) string {
	if len(b) > maxInternedLen {
		return string(b)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t.m) < maxInterned {
		t.m[s] = s
	}
	return s
}

func (r *recReader) value() Value {
	switch tag := r.byte(); tag {
	case recNull:
		return Null
	case recFalse:
		return Bool(false)
	case recTrue:
		return Bool(true)
	case recInt:
		return Int(r.varint())
	case recReal:
		b := r.bytes(8)
		if b == nil {
			return Null
		}
		return Real(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case recTimestamp:
		return TimestampMillis(r.varint())
	case recText:
		return Text(r.string())
	case recJSON:
		return rawValue(KindJSON, r.string())
	case recBlob:
		return rawValue(KindBlob, r.string())
	default:
		r.fail(fmt.Sprintf("value tag %d", tag))
		return Null
	}
}

// decodeRecord decodes a row record. pk is the row's key (decoded from its
// row key) for cells stored as key references.
func decodeRecord(b []byte, pk []Value) (*record, error) {
	rd := &recReader{b: b}
	if v := rd.byte(); v != recordVersion && rd.err == nil {
		return nil, fmt.Errorf("%w: row record version %d", ErrStorageFormat, v)
	}
	flags := rd.byte()
	nb := rd.uvarint()
	if nb > uint64(len(rd.b))/BaseSize {
		rd.fail("base count")
		return nil, rd.err
	}
	bases := make([]HLC, nb)
	for i := range bases {
		if raw := rd.bytes(BaseSize); raw != nil {
			bases[i] = baseFromBytes(raw)
		}
	}
	hlcAt := func() HLC {
		i := rd.uvarint()
		op := rd.uvarint()
		if i >= uint64(len(bases)) || op > math.MaxUint32 {
			rd.fail("base index")
			return HLC{}
		}
		h := bases[i]
		h.OpSeq = uint32(op)
		return h
	}
	r := &record{}
	if flags&1 != 0 {
		r.hasTomb = true
		r.tomb = hlcAt()
		if flags&2 != 0 {
			n := rd.uvarint()
			if n > uint64(len(rd.b)) {
				rd.fail("prior row size")
				return nil, rd.err
			}
			r.priorRow = make(Row, n)
			for i := uint64(0); i < n && rd.err == nil; i++ {
				name := rd.string()
				r.priorRow[name] = rd.value()
			}
		}
	}
	n := rd.uvarint()
	if n > uint64(len(rd.b)) {
		rd.fail("cell count")
		return nil, rd.err
	}
	r.cells = make([]cell, 0, n)
	for i := uint64(0); i < n && rd.err == nil; i++ {
		var c cell
		c.col = rd.name()
		c.hlc = hlcAt()
		cf := rd.byte()
		if cf&1 != 0 {
			k := rd.uvarint()
			if k >= uint64(len(pk)) {
				rd.fail("key reference")
				break
			}
			c.val = pk[k]
		} else {
			c.val = rd.value()
		}
		if cf&2 != 0 {
			p := &cellPrior{val: rd.value()}
			if raw := rd.bytes(HLCSize); raw != nil {
				p.hlc, _ = HLCFromBytes(raw)
			}
			c.prior = p
		}
		if len(r.cells) > 0 && r.cells[len(r.cells)-1].col >= c.col {
			rd.fail("cells out of order")
			break
		}
		r.cells = append(r.cells, c)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: corrupt row record (%d trailing bytes)", ErrMalformed, len(rd.b))
	}
	return r, nil
}

// recordLive reports what decodeRecord(b, pk).visible(allowResurrection)
// reports, reading only the record's head (up to its cell count): counting
// rows needs no values.
func recordLive(b []byte, allowResurrection bool) (bool, error) {
	rd := &recReader{b: b}
	if v := rd.byte(); v != recordVersion && rd.err == nil {
		return false, fmt.Errorf("%w: row record version %d", ErrStorageFormat, v)
	}
	flags := rd.byte()
	nb := rd.uvarint()
	if nb > uint64(len(rd.b))/BaseSize {
		rd.fail("base count")
		return false, rd.err
	}
	rd.bytes(nb * BaseSize)
	if flags&1 != 0 {
		rd.uvarint()
		rd.uvarint()
		if flags&2 != 0 {
			n := rd.uvarint()
			for i := uint64(0); i < n && rd.err == nil; i++ {
				rd.string()
				rd.value()
			}
		}
	}
	n := rd.uvarint()
	if rd.err != nil {
		return false, rd.err
	}
	return n > 0 && (flags&1 == 0 || allowResurrection), nil
}

// equalRecords reports whether two records encode identically.
func equalRecords(a, b *record, pk []Value, pkCols []string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(encodeRecord(nil, a, pk, pkCols), encodeRecord(nil, b, pk, pkCols))
}

// rowOf returns the row as callers see it: every cell, the key columns from
// the key (a row revived by a partial write may lack their cells), and null
// for the table's other columns that have no cell.
func (t *table) rowOf(rec *record, pk []Value) Row {
	row := rec.row()
	for i, n := range t.pkCols {
		if _, ok := row[n]; !ok && i < len(pk) {
			row[n] = pk[i]
		}
	}
	for i := range t.def.Columns {
		if n := t.def.Columns[i].Name; row[n].IsNull() {
			row[n] = Null
		}
	}
	return row
}
