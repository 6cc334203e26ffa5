// Package rowrec is the engine's row-record codec: the stored CRDT state of
// one row (Record: its cells, tombstone and before-images) and its canonical
// byte encoding, plus the value encoding and Reader that the engine's other
// stored forms (held changes, own change-log entries, legacy migrations)
// share. It knows nothing of tables, schemas or merging; the engine decides
// what a record holds.
//
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
package rowrec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/replica-sync/replica/internal/rawvalue"
	"github.com/replica-sync/replica/model"
)

// recordVersion is a record's first byte.
const recordVersion = 1

// ErrStorageFormat is engine.ErrStorageFormat: Decode returns it for a
// record of another version.
var ErrStorageFormat = errors.New("unsupported storage format")

var (
	// rawValue rebuilds a text, JSON or blob Value from bytes this package
	// encoded, unchecked (see package rawvalue).
	rawValue = rawvalue.Make.(func(model.Kind, string) model.Value)
	// rawString returns a text, JSON or blob Value's bytes, uncopied.
	rawString = rawvalue.String.(func(model.Value) string)
)

// Cell is one live cell of a row: its column, value and the HLC of the
// write that set it.
type Cell struct {
	Col   string
	Val   model.Value
	HLC   model.HLC
	Prior *Prior // best-effort before-image, nil if none; never modified
}

// Prior is a cell's before-image: the value and HLC of the write it
// replaced. Held by pointer: most cells (every inserted or bootstrapped
// one) have none, and a cell is copied, scanned and cloned often.
type Prior struct {
	Val model.Value
	HLC model.HLC
}

// Record is the stored state of one row.
type Record struct {
	Cells    []Cell // sorted by Col
	HasTomb  bool
	Tomb     model.HLC
	PriorRow model.Row // tombstone before-image, may be nil
}

// Clone returns a copy of r whose cells can be changed without changing
// r's (nil for nil).
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := &Record{Cells: slices.Clone(r.Cells), HasTomb: r.HasTomb, Tomb: r.Tomb, PriorRow: r.PriorRow}
	return c
}

// Search returns the position of col in r.Cells and whether it is there
// (cells are sorted by name; compared by index, not copied: a cell is large).
func (r *Record) Search(col string) (int, bool) {
	lo, hi := 0, len(r.Cells)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.Cells[m].Col < col {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(r.Cells) && r.Cells[lo].Col == col
}

// Find returns the index of col in r.Cells, or -1.
func (r *Record) Find(col string) int {
	if i, ok := r.Search(col); ok {
		return i
	}
	return -1
}

// Set inserts or replaces the cell for c.Col.
func (r *Record) Set(c Cell) {
	i, ok := r.Search(c.Col)
	if ok {
		r.Cells[i] = c
		return
	}
	// What slices.Insert does for one element, without its instantiation
	// for Cell (about 6 KB of wasm code with rotateLeft).
	r.Cells = append(r.Cells, Cell{})
	copy(r.Cells[i+1:], r.Cells[i:])
	r.Cells[i] = c
}

// Visible reports whether the row is live under its table's resurrection
// policy. A tombstone kills every cell at or below it (see DropDead); cells
// above it are kept under either policy, so merged state does not depend on
// the policy: with resurrection allowed they revive the row, under
// delete-wins the row stays deleted. So a row is visible iff it has a cell
// and, under delete-wins, no tombstone.
func (r *Record) Visible(allowResurrection bool) bool {
	if r == nil || len(r.Cells) == 0 {
		return false
	}
	return !r.HasTomb || allowResurrection
}

// DropDead removes the cells the tombstone has killed: those at or below
// it. Cells written after it stay under either policy (see Visible).
func (r *Record) DropDead() {
	if !r.HasTomb {
		return
	}
	// What slices.DeleteFunc does (the removed tail zeroed), without its
	// instantiation for Cell.
	kept := r.Cells[:0]
	for _, c := range r.Cells {
		if r.Tomb.Less(c.HLC) {
			kept = append(kept, c)
		}
	}
	clear(r.Cells[len(kept):])
	r.Cells = kept
}

// Bases returns the distinct transaction bases of the live facts (cells and
// tombstone), ascending. Each has one change-log entry.
func (r *Record) Bases() []model.HLC {
	if r == nil {
		return nil
	}
	return r.AppendBases(make([]model.HLC, 0, 2))
}

// AppendBases is Bases appending to out[:0] (a scratch buffer).
func (r *Record) AppendBases(out []model.HLC) []model.HLC {
	out = out[:0]
	if r == nil {
		return out
	}
	add := func(h model.HLC) {
		b := h.Base()
		for _, x := range out {
			if x == b {
				return
			}
		}
		out = append(out, b)
	}
	if r.HasTomb {
		add(r.Tomb)
	}
	for i := range r.Cells {
		add(r.Cells[i].HLC)
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

// Row returns the values of the record's cells (absent columns are
// absent). The engine's table.rowOf gives a row as callers see it.
func (r *Record) Row() model.Row {
	row := make(model.Row, len(r.Cells))
	for i := range r.Cells {
		row[r.Cells[i].Col] = r.Cells[i].Val
	}
	return row
}

// Encode encodes r canonically. pk and pkCols (nil in schema-less
// mode) let primary-key cells refer to the key instead of repeating it.
func Encode(dst []byte, r *Record, pk []model.Value, pkCols []string) []byte {
	return EncodeBases(dst, r, r.Bases(), pk, pkCols)
}

// EncodeBases is Encode with r.Bases() given.
func EncodeBases(dst []byte, r *Record, bases []model.HLC, pk []model.Value, pkCols []string) []byte {
	dst = append(dst, recordVersion)
	var flags byte
	if r.HasTomb {
		flags |= 1
		if r.PriorRow != nil {
			flags |= 2
		}
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(bases)))
	var tmp [model.BaseSize]byte
	for _, b := range bases {
		b.PutBase(tmp[:])
		dst = append(dst, tmp[:]...)
	}
	baseIndex := func(h model.HLC) uint64 {
		for i, b := range bases {
			if h.SameTransaction(b) {
				return uint64(i)
			}
		}
		panic("engine: record base missing")
	}
	if r.HasTomb {
		dst = binary.AppendUvarint(dst, baseIndex(r.Tomb))
		dst = binary.AppendUvarint(dst, uint64(r.Tomb.OpSeq))
		if r.PriorRow != nil {
			names := make([]string, 0, len(r.PriorRow))
			for n := range r.PriorRow {
				names = append(names, n)
			}
			sort.Strings(names)
			dst = binary.AppendUvarint(dst, uint64(len(names)))
			for _, n := range names {
				dst = AppendString(dst, n)
				dst = AppendValue(dst, r.PriorRow[n])
			}
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Cells)))
	for i := range r.Cells {
		c := &r.Cells[i]
		dst = AppendString(dst, c.Col)
		dst = binary.AppendUvarint(dst, baseIndex(c.HLC))
		dst = binary.AppendUvarint(dst, uint64(c.HLC.OpSeq))
		var cf byte
		k := -1
		for j, name := range pkCols {
			if name == c.Col && j < len(pk) && pk[j].Equal(c.Val) {
				k = j
				break
			}
		}
		if k >= 0 {
			cf |= 1
		}
		if c.Prior != nil {
			cf |= 2
		}
		dst = append(dst, cf)
		if k >= 0 {
			dst = binary.AppendUvarint(dst, uint64(k))
		} else {
			dst = AppendValue(dst, c.Val)
		}
		if c.Prior != nil {
			dst = AppendValue(dst, c.Prior.Val)
			var h [model.HLCSize]byte
			c.Prior.HLC.Put(h[:])
			dst = append(dst, h[:]...)
		}
	}
	return dst
}

// AppendString appends s as a uvarint length and its bytes.
func AppendString(dst []byte, s string) []byte {
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

// AppendValue appends v in the record value encoding: a tag byte and a
// payload (see the package comment). Reader.Value reads it back.
func AppendValue(dst []byte, v model.Value) []byte {
	switch v.Kind() {
	case model.KindNull:
		return append(dst, recNull)
	case model.KindBoolean:
		if v.Int() != 0 {
			return append(dst, recTrue)
		}
		return append(dst, recFalse)
	case model.KindInteger:
		return binary.AppendVarint(append(dst, recInt), v.Int())
	case model.KindReal:
		return binary.LittleEndian.AppendUint64(append(dst, recReal), math.Float64bits(v.Real()))
	case model.KindTimestamp:
		return binary.AppendVarint(append(dst, recTimestamp), v.Int())
	case model.KindText:
		return AppendString(append(dst, recText), v.Text())
	case model.KindJSON:
		return AppendString(append(dst, recJSON), v.Text())
	case model.KindBlob:
		return AppendString(append(dst, recBlob), rawString(v))
	}
	panic(fmt.Sprintf("engine: unknown value kind %d", v.Kind()))
}

// Reader decodes a record, or another stored form built of AppendString,
// AppendValue and uvarints; the first error sticks, and every read after it
// returns a zero value.
type Reader struct {
	b   []byte
	err error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first error, nil if none.
func (r *Reader) Err() error { return r.err }

// Len returns the number of bytes not yet read.
func (r *Reader) Len() int { return len(r.b) }

// Fail records a "corrupt row record (what)" error wrapping
// model.ErrMalformed, unless an error is recorded already, and drops the
// rest of the input.
func (r *Reader) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: corrupt row record (%s)", model.ErrMalformed, what)
	}
	r.b = nil
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) < 1 {
		r.Fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Uvarint reads a uvarint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a zigzag varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bytes reads n bytes, uncopied.
func (r *Reader) Bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.Fail("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// Str reads a string written by AppendString.
func (r *Reader) Str() string {
	n := r.Uvarint()
	return string(r.Bytes(n))
}

// Name reads a column name. Names repeat in every record of a table, so
// they are interned (names.get): decoding a row costs no allocation per
// cell name.
func (r *Reader) Name() string {
	n := r.Uvarint()
	return names.get(r.Bytes(n))
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

// Value reads a value written by AppendValue.
func (r *Reader) Value() model.Value {
	switch tag := r.Byte(); tag {
	case recNull:
		return model.Null
	case recFalse:
		return model.Bool(false)
	case recTrue:
		return model.Bool(true)
	case recInt:
		return model.Int(r.Varint())
	case recReal:
		b := r.Bytes(8)
		if b == nil {
			return model.Null
		}
		return model.Real(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case recTimestamp:
		return model.TimestampMillis(r.Varint())
	case recText:
		return model.Text(r.Str())
	case recJSON:
		return rawValue(model.KindJSON, r.Str())
	case recBlob:
		return rawValue(model.KindBlob, r.Str())
	default:
		r.Fail(fmt.Sprintf("value tag %d", tag))
		return model.Null
	}
}

// Decode decodes a row record. pk is the row's key (decoded from its
// row key) for cells stored as key references.
func Decode(b []byte, pk []model.Value) (*Record, error) {
	rd := &Reader{b: b}
	if v := rd.Byte(); v != recordVersion && rd.err == nil {
		return nil, fmt.Errorf("%w: row record version %d", ErrStorageFormat, v)
	}
	flags := rd.Byte()
	nb := rd.Uvarint()
	if nb > uint64(len(rd.b))/model.BaseSize {
		rd.Fail("base count")
		return nil, rd.err
	}
	bases := make([]model.HLC, nb)
	for i := range bases {
		if raw := rd.Bytes(model.BaseSize); raw != nil {
			bases[i] = model.BaseFromBytes(raw)
		}
	}
	hlcAt := func() model.HLC {
		i := rd.Uvarint()
		op := rd.Uvarint()
		if i >= uint64(len(bases)) || op > math.MaxUint32 {
			rd.Fail("base index")
			return model.HLC{}
		}
		h := bases[i]
		h.OpSeq = uint32(op)
		return h
	}
	r := &Record{}
	if flags&1 != 0 {
		r.HasTomb = true
		r.Tomb = hlcAt()
		if flags&2 != 0 {
			n := rd.Uvarint()
			if n > uint64(len(rd.b)) {
				rd.Fail("prior row size")
				return nil, rd.err
			}
			r.PriorRow = make(model.Row, n)
			for i := uint64(0); i < n && rd.err == nil; i++ {
				name := rd.Str()
				r.PriorRow[name] = rd.Value()
			}
		}
	}
	n := rd.Uvarint()
	if n > uint64(len(rd.b)) {
		rd.Fail("cell count")
		return nil, rd.err
	}
	r.Cells = make([]Cell, 0, n)
	for i := uint64(0); i < n && rd.err == nil; i++ {
		var c Cell
		c.Col = rd.Name()
		c.HLC = hlcAt()
		cf := rd.Byte()
		if cf&1 != 0 {
			k := rd.Uvarint()
			if k >= uint64(len(pk)) {
				rd.Fail("key reference")
				break
			}
			c.Val = pk[k]
		} else {
			c.Val = rd.Value()
		}
		if cf&2 != 0 {
			p := &Prior{Val: rd.Value()}
			if raw := rd.Bytes(model.HLCSize); raw != nil {
				p.HLC, _ = model.HLCFromBytes(raw)
			}
			c.Prior = p
		}
		if len(r.Cells) > 0 && r.Cells[len(r.Cells)-1].Col >= c.Col {
			rd.Fail("cells out of order")
			break
		}
		r.Cells = append(r.Cells, c)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: corrupt row record (%d trailing bytes)", model.ErrMalformed, len(rd.b))
	}
	return r, nil
}

// Live reports what Decode(b, pk).Visible(allowResurrection)
// reports, reading only the record's head (up to its cell count): counting
// rows needs no values.
func Live(b []byte, allowResurrection bool) (bool, error) {
	rd := &Reader{b: b}
	if v := rd.Byte(); v != recordVersion && rd.err == nil {
		return false, fmt.Errorf("%w: row record version %d", ErrStorageFormat, v)
	}
	flags := rd.Byte()
	nb := rd.Uvarint()
	if nb > uint64(len(rd.b))/model.BaseSize {
		rd.Fail("base count")
		return false, rd.err
	}
	rd.Bytes(nb * model.BaseSize)
	if flags&1 != 0 {
		rd.Uvarint()
		rd.Uvarint()
		if flags&2 != 0 {
			n := rd.Uvarint()
			for i := uint64(0); i < n && rd.err == nil; i++ {
				rd.Str()
				rd.Value()
			}
		}
	}
	n := rd.Uvarint()
	if rd.err != nil {
		return false, rd.err
	}
	return n > 0 && (flags&1 == 0 || allowResurrection), nil
}

// Equal reports whether two records encode identically.
func Equal(a, b *Record, pk []model.Value, pkCols []string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(Encode(nil, a, pk, pkCols), Encode(nil, b, pk, pkCols))
}
