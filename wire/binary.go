package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// This file is the binary form of a ChangeSet (version 14), the form
// ChangeSets take in binary frames ("Binary ChangeSets" in the package
// documentation, which gives the byte layout this code implements).

// The flags of a binary ChangeSet's first byte.
const (
	csSealed   = 1 << 0 // an envelope follows instead of names, migrations and facts
	csSite     = 1 << 1 // the siteId differs from the hlc's site: 16 bytes follow
	csTx       = 1 << 2 // the transactionId differs from the hlc's: a string follows
	csAllFlags = csSealed | csSite | csTx
)

// The flags of a binary fact's first byte.
const (
	factTypeMask  = 0x03 // 1: column, 2: delete
	factSameTable = 1 << 2
	factSamePK    = 1 << 3
	factHLCShift  = 4 // bits 4–5: hlcNext, hlcOpSeq or hlcFull
	factHLCMask   = 0x03 << factHLCShift
	factPrior     = 1 << 6 // column: priorValue and priorHlc follow; delete: priorRow follows
	factAllFlags  = factTypeMask | factSameTable | factSamePK | factHLCMask | factPrior
)

// The HLC modes of a fact.
const (
	hlcNext  = 0 // the ChangeSet's base, opSeq one above the previous fact's (the first: 0)
	hlcOpSeq = 1 // the ChangeSet's base, opSeq as a uvarint
	hlcFull  = 2 // 30 bytes
)

// The value tags.
const (
	vNull      = 0
	vFalse     = 1
	vTrue      = 2
	vInteger   = 3  // zigzag varint
	vReal      = 4  // 8 bytes, IEEE 754 binary64, big-endian
	vTimestamp = 5  // zigzag varint, ms since the Unix epoch
	vText      = 6  // uvarint length, UTF-8
	vJSON      = 7  // uvarint length, JSON text
	vBlob      = 8  // uvarint length, bytes
	vUUID      = 9  // 16 bytes: text that is a UUID in canonical lowercase form
	vPK0       = 10 // nothing: the fact's pk[0] (a column fact's value only)
)

// MarshalChangeSetBinary returns the binary form of one ChangeSet (see
// "Binary ChangeSets" in the package documentation). It refuses what
// MarshalChangeSet refuses, with errors matching ErrInvalidMessage.
func MarshalChangeSetBinary(cs *model.ChangeSet) ([]byte, error) {
	return appendChangeSetBinary(nil, cs)
}

// UnmarshalChangeSetBinary decodes the binary form of one ChangeSet,
// checking what UnmarshalChangeSet checks. Errors match ErrMalformed and
// name the offending field and byte offset; no input makes it panic or
// allocate more than a small multiple of len(data).
func UnmarshalChangeSetBinary(data []byte) (model.ChangeSet, error) {
	d := binDecoder{data: data}
	cs, err := d.changeSet()
	if err == nil && d.pos != len(data) {
		err = d.fail("%d bytes after the ChangeSet", len(data)-d.pos)
	}
	return cs, err
}

// TranscodeChangeSet appends the binary form of the ChangeSet whose wire
// JSON (MarshalChangeSet's form) is js to b: how a relay serves ChangeSets
// it stored as JSON in binary frames.
func TranscodeChangeSet(b, js []byte) ([]byte, error) {
	cs, err := UnmarshalChangeSet(js)
	if err != nil {
		return b, err
	}
	return appendChangeSetBinary(b, &cs)
}

// ---- encoding ----

func appendChangeSetBinary(b []byte, cs *model.ChangeSet) ([]byte, error) {
	if cs.TransactionID == "" {
		return b, at(invalid("must not be empty"), "transactionId")
	}
	if jsontext.InvalidUTF8String(cs.TransactionID) >= 0 {
		return b, at(invalid("text is not valid UTF-8"), "transactionId")
	}
	var flags byte
	if cs.Sealed() {
		flags |= csSealed
		if len(cs.Changes) > 0 || len(cs.Migrations) > 0 {
			return b, at(invalid("a sealed ChangeSet carries no changes or migrations beside its envelope"), "envelope")
		}
		if len(cs.Envelope) < EnvelopeOverhead {
			return b, at(invalid("%d bytes, shorter than an envelope's %d of header and tag", len(cs.Envelope), EnvelopeOverhead), "envelope")
		}
	}
	if cs.SiteID != cs.HLC.Site {
		flags |= csSite
	}
	if !isDefaultTransactionID(cs.TransactionID, cs.HLC) {
		flags |= csTx
	}
	b = append(b, flags)
	var h [model.HLCSize]byte
	cs.HLC.Put(h[:])
	b = append(b, h[:]...)
	if flags&csSite != 0 {
		b = append(b, cs.SiteID[:]...)
	}
	if flags&csTx != 0 {
		b = appendBinString(b, cs.TransactionID)
	}
	if cs.Sealed() {
		return appendBinString(b, string(cs.Envelope)), nil
	}

	// Name table: table and column names, first use first.
	var names []string
	index := make(map[string]int, 8)
	name := func(s string) int {
		i, ok := index[s]
		if !ok {
			i = len(names)
			index[s] = i
			names = append(names, s)
		}
		return i
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		name(c.Table)
		if c.Type == model.ColumnChange {
			name(c.Column)
		}
		if len(c.PriorRow) > 0 {
			keys := make([]string, 0, len(c.PriorRow))
			for k := range c.PriorRow {
				keys = append(keys, k)
			}
			sortStrings(keys) // deterministic: names in order of first use
			for _, k := range keys {
				name(k)
			}
		}
	}
	for i, s := range names {
		if s == "" || jsontext.InvalidUTF8String(s) >= 0 {
			// Find the fact naming it, for the error's path.
			for j := range cs.Changes {
				c := &cs.Changes[j]
				switch {
				case c.Table == s:
					return b, at(atIndex(at(invalid("must not be empty, valid UTF-8"), "table"), j), "changes")
				case c.Type == model.ColumnChange && c.Column == s:
					return b, at(atIndex(at(invalid("must not be empty, valid UTF-8"), "column"), j), "changes")
				}
			}
			return b, at(invalid("name %d must not be empty, valid UTF-8", i), "changes")
		}
	}
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, s := range names {
		b = appendBinString(b, s)
	}

	b = binary.AppendUvarint(b, uint64(len(cs.Migrations)))
	var scratch []byte
	for i := range cs.Migrations {
		var err error
		scratch, err = appendMigration(scratch[:0], &cs.Migrations[i])
		if err != nil {
			return b, at(atIndex(err, i), "schemaMigrations")
		}
		b = appendBinString(b, string(scratch))
	}

	b = binary.AppendUvarint(b, uint64(len(cs.Changes)))
	prevOp := int64(-1)
	var prev *model.Change
	for i := range cs.Changes {
		c := &cs.Changes[i]
		var err error
		b, err = appendFactBinary(b, c, prev, cs.HLC, prevOp, index)
		if err != nil {
			return b, at(atIndex(err, i), "changes")
		}
		prev, prevOp = c, int64(c.HLC.OpSeq)
	}
	return b, nil
}

func appendFactBinary(b []byte, c, prev *model.Change, base model.HLC, prevOp int64, index map[string]int) ([]byte, error) {
	var flags byte
	switch c.Type {
	case model.ColumnChange:
		if c.PriorRow != nil {
			return b, at(invalid("only a delete carries a before-image row"), "priorRow")
		}
		flags = 1
		if c.HasPrior {
			flags |= factPrior
		}
	case model.RowDeletion:
		if c.Column != "" || !c.Value.IsNull() || c.HasPrior {
			return b, invalid("a delete carries no column, value, priorValue or priorHlc")
		}
		flags = 2
		if c.PriorRow != nil {
			flags |= factPrior
		}
	default:
		return b, at(invalid("unknown change type %d", c.Type), "type")
	}
	if len(c.PK) == 0 {
		return b, at(invalid("primary key must not be empty"), "pk")
	}
	if prev != nil && prev.Table == c.Table {
		flags |= factSameTable
	}
	if prev != nil && identicalValues(prev.PK, c.PK) {
		flags |= factSamePK
	}
	mode := hlcFull
	if c.HLC.SameTransaction(base) {
		mode = hlcOpSeq
		if int64(c.HLC.OpSeq) == prevOp+1 {
			mode = hlcNext
		}
	}
	flags |= byte(mode) << factHLCShift
	b = append(b, flags)
	if flags&factSameTable == 0 {
		b = binary.AppendUvarint(b, uint64(index[c.Table]))
	}
	if flags&factSamePK == 0 {
		b = binary.AppendUvarint(b, uint64(len(c.PK)))
		for i, v := range c.PK {
			var err error
			if b, err = appendValueBinary(b, v); err != nil {
				return b, at(atIndex(err, i), "pk")
			}
		}
	}
	switch mode {
	case hlcOpSeq:
		b = binary.AppendUvarint(b, uint64(c.HLC.OpSeq))
	case hlcFull:
		b = appendHLCBinary(b, c.HLC)
	}
	var err error
	if c.Type == model.ColumnChange {
		b = binary.AppendUvarint(b, uint64(index[c.Column]))
		if identicalValue(c.Value, c.PK[0]) {
			b = append(b, vPK0)
		} else if b, err = appendValueBinary(b, c.Value); err != nil {
			return b, at(err, "value")
		}
		if c.HasPrior {
			if b, err = appendValueBinary(b, c.PriorValue); err != nil {
				return b, at(err, "priorValue")
			}
			b = appendHLCBinary(b, c.PriorHLC)
		}
		return b, nil
	}
	if c.PriorRow != nil {
		keys := make([]string, 0, len(c.PriorRow))
		for k := range c.PriorRow {
			keys = append(keys, k)
		}
		sortStrings(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(index[k]))
			if b, err = appendValueBinary(b, c.PriorRow[k]); err != nil {
				return b, at(atKey(err, k), "priorRow")
			}
		}
	}
	return b, nil
}

func appendHLCBinary(b []byte, h model.HLC) []byte {
	var raw [model.HLCSize]byte
	h.Put(raw[:])
	return append(b, raw[:]...)
}

func appendBinString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendValueBinary appends a value's tag and payload. It refuses what the
// JSON form refuses: NaN and infinite reals, text that is not valid UTF-8,
// JSON that is invalid or nested deeper than MaxJSONDepth.
func appendValueBinary(b []byte, v model.Value) ([]byte, error) {
	switch v.Kind() {
	case model.KindNull:
		return append(b, vNull), nil
	case model.KindBoolean:
		if v.Bool() {
			return append(b, vTrue), nil
		}
		return append(b, vFalse), nil
	case model.KindInteger:
		return binary.AppendVarint(append(b, vInteger), v.Int()), nil
	case model.KindTimestamp:
		return binary.AppendVarint(append(b, vTimestamp), v.Int()), nil
	case model.KindReal:
		f := v.Real()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, invalid("real %v cannot be encoded", f)
		}
		return binary.BigEndian.AppendUint64(append(b, vReal), math.Float64bits(f)), nil
	case model.KindText:
		s := v.Text()
		if u, ok := parseUUID(s); ok {
			return append(append(b, vUUID), u[:]...), nil
		}
		if i := jsontext.InvalidUTF8String(s); i >= 0 {
			return b, invalid("text is not valid UTF-8 (byte %d)", i)
		}
		return appendBinString(append(b, vText), s), nil
	case model.KindJSON:
		if _, err := model.AppendValueJSON(nil, v); err != nil {
			return b, wireErr(err)
		}
		return appendBinString(append(b, vJSON), string(v.JSON())), nil
	case model.KindBlob:
		return appendBinString(append(b, vBlob), string(v.Blob())), nil
	}
	return b, invalid("value of unknown kind %v", v.Kind())
}

// identicalValue reports whether a and b are the same value of the same
// kind, bit for bit (a real -0 is not 0).
func identicalValue(a, b model.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case model.KindNull:
		return true
	case model.KindBoolean:
		return a.Bool() == b.Bool()
	case model.KindInteger, model.KindTimestamp:
		return a.Int() == b.Int()
	case model.KindReal:
		return math.Float64bits(a.Real()) == math.Float64bits(b.Real())
	case model.KindText:
		return a.Text() == b.Text()
	case model.KindJSON:
		return bytes.Equal(a.JSON(), b.JSON())
	case model.KindBlob:
		return bytes.Equal(a.Blob(), b.Blob())
	}
	return false
}

func identicalValues(a, b []model.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !identicalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

const hexDigits = "0123456789abcdef"

// parseUUID returns the 16 bytes of s when s is a UUID in canonical
// lowercase form (8-4-4-4-12 hex digits).
func parseUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return u, false
		}
		u[j] = byte(hi<<4 | lo)
		j++
		i += 2
	}
	return u, true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}

func formatUUID(u []byte) string {
	var s [36]byte
	j := 0
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[u[i]>>4], hexDigits[u[i]&15]
		j += 2
	}
	return string(s[:])
}

// isDefaultTransactionID reports whether id is h.TransactionID(), without
// formatting it.
func isDefaultTransactionID(id string, h model.HLC) bool {
	var buf [64]byte
	return string(appendTransactionID(buf[:0], h)) == id
}

// appendTransactionID appends h.TransactionID(): "wall:counter:site".
func appendTransactionID(b []byte, h model.HLC) []byte {
	b = strconv.AppendUint(b, h.Wall, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(h.Counter), 10)
	b = append(b, ':')
	return urlStrict.AppendEncode(b, h.Site[:])
}

// ---- decoding ----

// binDecoder reads binary ChangeSets. Its errors are *pathError matching
// ErrMalformed with the byte offset in data.
type binDecoder struct {
	data []byte
	pos  int
	base int // offset of data in the frame, for errors
	// facts counts the changes and migrations decoded so far from one
	// frame, bounded by MaxBinaryChanges.
	facts int
}

// MaxBinaryChanges is the most changes plus schema migrations one binary
// frame (or one UnmarshalChangeSetBinary input) may carry: 2^20, ten times
// a relay's default MaxChangesPerApply. A binary change can take one byte
// and decodes to a model.Change of about 200, so the bound keeps a hostile
// frame from making the decoder allocate more than a few hundred MiB
// whatever the frame size limit is.
const MaxBinaryChanges = 1 << 20

//go:noinline
func (d *binDecoder) fail(format string, args ...any) error {
	return &pathError{sentinel: ErrMalformed, msg: fmt.Sprintf(format, args...), offset: d.base + d.pos}
}

func (d *binDecoder) byte1(what string) (byte, error) {
	if d.pos >= len(d.data) {
		return 0, d.fail("truncated: want %s", what)
	}
	c := d.data[d.pos]
	d.pos++
	return c, nil
}

func (d *binDecoder) take(n int, what string) ([]byte, error) {
	if n < 0 || n > len(d.data)-d.pos {
		return nil, d.fail("truncated: want %d bytes of %s, %d left", n, what, len(d.data)-d.pos)
	}
	b := d.data[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *binDecoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, d.fail("truncated: want %s (a uvarint)", what)
		}
		return 0, d.fail("%s: uvarint overflows 64 bits", what)
	}
	d.pos += n
	return v, nil
}

// count reads a uvarint count of items each at least min bytes long and
// refuses one the rest of the input cannot hold, so a hostile count never
// makes the decoder allocate.
func (d *binDecoder) count(what string, min int) (int, error) {
	start := d.pos
	v, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if left := uint64(len(d.data) - d.pos); v > left/uint64(min) {
		d.pos = start
		return 0, d.fail("%s: count %d exceeds the %d bytes left", what, v, left)
	}
	return int(v), nil
}

func (d *binDecoder) bytesField(what string) ([]byte, error) {
	start := d.pos
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.data)-d.pos) {
		d.pos = start
		return nil, d.fail("%s: length %d exceeds the %d bytes left", what, n, len(d.data)-d.pos)
	}
	return d.take(int(n), what)
}

// text reads a uvarint-prefixed UTF-8 string.
func (d *binDecoder) text(what string) (string, error) {
	start := d.pos
	b, err := d.bytesField(what)
	if err != nil {
		return "", err
	}
	if i := jsontext.InvalidUTF8(b); i >= 0 {
		d.pos = start
		return "", d.fail("%s is not valid UTF-8 (byte %d)", what, i)
	}
	return string(b), nil
}

func (d *binDecoder) hlc(what string) (model.HLC, error) {
	b, err := d.take(model.HLCSize, what)
	if err != nil {
		return model.HLC{}, err
	}
	return model.HLCFromBytes(b)
}

func (d *binDecoder) changeSet() (model.ChangeSet, error) {
	var cs model.ChangeSet
	flags, err := d.byte1("the ChangeSet's flags")
	if err != nil {
		return cs, err
	}
	if flags&^csAllFlags != 0 {
		d.pos--
		return cs, d.fail("unknown ChangeSet flags %#x", flags&^csAllFlags)
	}
	if cs.HLC, err = d.hlc("hlc"); err != nil {
		return cs, at(err, "hlc")
	}
	cs.SiteID = cs.HLC.Site
	if flags&csSite != 0 {
		b, err := d.take(16, "siteId")
		if err != nil {
			return cs, at(err, "siteId")
		}
		copy(cs.SiteID[:], b)
	}
	if flags&csTx != 0 {
		start := d.pos
		if cs.TransactionID, err = d.text("transactionId"); err != nil {
			return cs, at(err, "transactionId")
		}
		if cs.TransactionID == "" {
			d.pos = start
			return cs, at(d.fail("must not be empty"), "transactionId")
		}
	} else {
		cs.TransactionID = string(appendTransactionID(make([]byte, 0, 48), cs.HLC))
	}
	if flags&csSealed != 0 {
		start := d.pos
		env, err := d.bytesField("envelope")
		if err != nil {
			return cs, at(err, "envelope")
		}
		if len(env) < EnvelopeOverhead {
			d.pos = start
			return cs, at(d.fail("%d bytes, shorter than an envelope's %d of header and tag", len(env), EnvelopeOverhead), "envelope")
		}
		cs.Envelope = bytes.Clone(env)
		return cs, nil
	}

	nNames, err := d.count("names", 2)
	if err != nil {
		return cs, err
	}
	names := make([]string, nNames)
	for i := range names {
		start := d.pos
		if names[i], err = d.text("name"); err != nil {
			return cs, atIndex(err, i)
		}
		if names[i] == "" {
			d.pos = start
			return cs, atIndex(d.fail("empty name"), i)
		}
	}

	nMig, err := d.count("schemaMigrations", 2)
	if err != nil {
		return cs, err
	}
	if nMig > 0 {
		cs.Migrations = make([]model.SchemaMigration, nMig)
	}
	for i := range cs.Migrations {
		start := d.pos
		js, err := d.bytesField("migration")
		if err != nil {
			return cs, at(atIndex(err, i), "schemaMigrations")
		}
		r := newReader(js)
		err = checkUTF8(r)
		if err == nil {
			cs.Migrations[i], err = r.migration()
		}
		if err == nil {
			err = r.End()
		}
		if err != nil {
			if pe, ok := err.(*pathError); ok {
				pe.offset += d.base + start
			}
			return cs, at(atIndex(err, i), "schemaMigrations")
		}
	}

	nFacts, err := d.count("changes", 1)
	if err != nil {
		return cs, err
	}
	if d.facts += nFacts + nMig; d.facts > MaxBinaryChanges {
		return cs, at(d.fail("more than %d changes and migrations in one frame", MaxBinaryChanges), "changes")
	}
	if nFacts > 0 {
		cs.Changes = make([]model.Change, nFacts)
	}
	prevOp := int64(-1)
	for i := range cs.Changes {
		c := &cs.Changes[i]
		var prev *model.Change
		if i > 0 {
			prev = &cs.Changes[i-1]
		}
		if err := d.fact(c, prev, cs.HLC, prevOp, names); err != nil {
			return cs, at(atIndex(err, i), "changes")
		}
		prevOp = int64(c.HLC.OpSeq)
	}
	return cs, nil
}

func (d *binDecoder) name(names []string, what string) (string, error) {
	start := d.pos
	i, err := d.uvarint(what)
	if err != nil {
		return "", err
	}
	if i >= uint64(len(names)) {
		d.pos = start
		return "", d.fail("%s: name index %d outside the ChangeSet's %d names", what, i, len(names))
	}
	return names[i], nil
}

func (d *binDecoder) fact(c *model.Change, prev *model.Change, base model.HLC, prevOp int64, names []string) error {
	flags, err := d.byte1("a change's flags")
	if err != nil {
		return err
	}
	if flags&^factAllFlags != 0 {
		d.pos--
		return d.fail("unknown change flags %#x", flags&^factAllFlags)
	}
	switch flags & factTypeMask {
	case 1:
		c.Type = model.ColumnChange
	case 2:
		c.Type = model.RowDeletion
	default:
		d.pos--
		return at(d.fail("unknown change type %d (want 1, column, or 2, delete)", flags&factTypeMask), "type")
	}
	if flags&(factSameTable|factSamePK) != 0 && prev == nil {
		d.pos--
		return d.fail("the first change refers to a previous change's table or pk")
	}
	if flags&factSameTable != 0 {
		c.Table = prev.Table
	} else if c.Table, err = d.name(names, "table"); err != nil {
		return at(err, "table")
	}
	if flags&factSamePK != 0 {
		c.PK = prev.PK
	} else {
		start := d.pos
		n, err := d.count("pk", 1)
		if err != nil {
			return at(err, "pk")
		}
		if n == 0 {
			d.pos = start
			return at(d.fail("primary key must not be empty"), "pk")
		}
		c.PK = make([]model.Value, n)
		for i := range c.PK {
			if c.PK[i], err = d.value(nil); err != nil {
				return at(atIndex(err, i), "pk")
			}
		}
	}
	switch int(flags&factHLCMask) >> factHLCShift {
	case hlcNext:
		if prevOp+1 > math.MaxUint32 {
			return at(d.fail("opSeq overflows"), "hlc")
		}
		c.HLC = base
		c.HLC.OpSeq = uint32(prevOp + 1)
	case hlcOpSeq:
		start := d.pos
		op, err := d.uvarint("opSeq")
		if err != nil {
			return at(err, "hlc")
		}
		if op > math.MaxUint32 {
			d.pos = start
			return at(d.fail("opSeq %d out of range", op), "hlc")
		}
		c.HLC = base
		c.HLC.OpSeq = uint32(op)
	case hlcFull:
		if c.HLC, err = d.hlc("hlc"); err != nil {
			return at(err, "hlc")
		}
	default:
		d.pos--
		return at(d.fail("unknown HLC mode 3"), "hlc")
	}
	if c.Type == model.ColumnChange {
		if c.Column, err = d.name(names, "column"); err != nil {
			return at(err, "column")
		}
		if c.Value, err = d.value(c.PK); err != nil {
			return at(err, "value")
		}
		if flags&factPrior != 0 {
			c.HasPrior = true
			if c.PriorValue, err = d.value(nil); err != nil {
				return at(err, "priorValue")
			}
			if c.PriorHLC, err = d.hlc("priorHlc"); err != nil {
				return at(err, "priorHlc")
			}
		}
		return nil
	}
	if flags&factPrior != 0 {
		n, err := d.count("priorRow", 2)
		if err != nil {
			return at(err, "priorRow")
		}
		c.PriorRow = make(model.Row, n)
		last := ""
		for i := 0; i < n; i++ {
			start := d.pos
			k, err := d.name(names, "priorRow column")
			if err != nil {
				return at(err, "priorRow")
			}
			if i > 0 && k <= last {
				d.pos = start
				return at(d.fail("column %q out of order or repeated (keys ascend)", k), "priorRow")
			}
			last = k
			if c.PriorRow[k], err = d.value(nil); err != nil {
				return at(atKey(err, k), "priorRow")
			}
		}
	}
	return nil
}

// value reads a tagged value; pk, when not nil, allows vPK0.
func (d *binDecoder) value(pk []model.Value) (model.Value, error) {
	start := d.pos
	tag, err := d.byte1("a value's tag")
	if err != nil {
		return model.Null, err
	}
	switch tag {
	case vNull:
		return model.Null, nil
	case vFalse:
		return model.Bool(false), nil
	case vTrue:
		return model.Bool(true), nil
	case vInteger, vTimestamp:
		v, n := binary.Varint(d.data[d.pos:])
		if n <= 0 {
			return model.Null, d.fail("truncated or overlong varint")
		}
		d.pos += n
		if tag == vTimestamp {
			return model.TimestampMillis(v), nil
		}
		return model.Int(v), nil
	case vReal:
		b, err := d.take(8, "a real")
		if err != nil {
			return model.Null, err
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.pos = start
			return model.Null, d.fail("real %v is not allowed (NaN and infinities are not encodable)", f)
		}
		return model.Real(f), nil
	case vText:
		s, err := d.text("text")
		return model.Text(s), err
	case vUUID:
		b, err := d.take(16, "a UUID")
		if err != nil {
			return model.Null, err
		}
		return model.Text(formatUUID(b)), nil
	case vJSON:
		b, err := d.bytesField("JSON")
		if err != nil {
			return model.Null, err
		}
		if i := jsontext.InvalidUTF8(b); i >= 0 {
			d.pos = start
			return model.Null, d.fail("JSON is not valid UTF-8 (byte %d)", i)
		}
		if jsontext.Deeper(b, MaxJSONDepth) {
			d.pos = start
			return model.Null, d.fail("JSON nested deeper than %d", MaxJSONDepth)
		}
		v, err := model.JSONValue(b)
		if err != nil {
			d.pos = start
			return model.Null, d.fail("%v", err)
		}
		return v, nil
	case vBlob:
		b, err := d.bytesField("blob")
		if err != nil {
			return model.Null, err
		}
		return model.Blob(b), nil // Blob copies
	case vPK0:
		if pk == nil {
			d.pos = start
			return model.Null, d.fail("tag 10 (the pk's first value) is only a column change's value")
		}
		return pk[0], nil
	}
	d.pos = start
	return model.Null, d.fail("unknown value tag %d", tag)
}

// ---- frames ----

// BinaryFrameTag is the first byte of a binary frame (version 14). A text
// frame starts with '{'.
const BinaryFrameTag = 0xB1

// IsBinaryFrame reports whether frame is a binary frame (it starts with
// BinaryFrameTag): a sender sends it as a binary WebSocket message, a
// text frame as a text message.
func IsBinaryFrame(frame []byte) bool { return len(frame) > 0 && frame[0] == BinaryFrameTag }

// finishChangeSets ends the JSON object b holds (a changes, apply_changes
// or push_changes frame up to its ChangeSets) with the member key holding
// css: with none, the text frame's empty array; else the count, and makes
// b the head of a binary frame whose tail holds css in binary form.
func finishChangeSets(b []byte, key string, css []model.ChangeSet) ([]byte, error) {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	if len(css) == 0 {
		return append(b, "[]}"...), nil
	}
	b = strconv.AppendInt(b, int64(len(css)), 10)
	b = append(b, '}')
	var tail []byte
	var err error
	if tail, err = AppendChangeSetsBinary(make([]byte, 0, 256*len(css)), css); err != nil {
		return nil, at(err, key)
	}
	return BinaryFrame(b, tail), nil
}

// AppendChangeSetsBinary appends the tail of a binary frame carrying css:
// each ChangeSet's binary form after its length as a uvarint.
func AppendChangeSetsBinary(b []byte, css []model.ChangeSet) ([]byte, error) {
	for i := range css {
		var err error
		if b, err = AppendChangeSetBinaryItem(b, &css[i]); err != nil {
			return b, atIndex(err, i)
		}
	}
	return b, nil
}

// AppendChangeSetBinaryItem appends one element of a binary frame's tail:
// the uvarint length of cs's binary form, then the form.
func AppendChangeSetBinaryItem(b []byte, cs *model.ChangeSet) ([]byte, error) {
	// Reserve the length's most likely size (2 bytes: < 16 KiB), and move
	// the form when it takes another.
	start := len(b)
	b = append(b, 0, 0)
	b, err := appendChangeSetBinary(b, cs)
	if err != nil {
		return b[:start], err
	}
	return fixLength(b, start, 2), nil
}

// AppendTranscodedItem is AppendChangeSetBinaryItem for a ChangeSet held
// in its JSON wire form js (TranscodeChangeSet).
func AppendTranscodedItem(b, js []byte) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0)
	b, err := TranscodeChangeSet(b, js)
	if err != nil {
		return b[:start], err
	}
	return fixLength(b, start, 2), nil
}

// fixLength writes at b[start:] the uvarint length of what follows the
// reserved bytes there, moving it when the uvarint takes another size.
func fixLength(b []byte, start, reserved int) []byte {
	n := len(b) - start - reserved
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	switch {
	case k > reserved:
		b = slices.Insert(b, start+reserved, make([]byte, k-reserved)...)
	case k < reserved:
		b = append(b[:start+k], b[start+reserved:]...)
	}
	copy(b[start:], l[:k])
	return b
}

// BinaryFrame assembles a binary frame from its head (the message's JSON
// object, its ChangeSets member holding their count) and its tail
// (AppendChangeSetsBinary): BinaryFrameTag, the head's length as a
// uvarint, the head, the tail.
func BinaryFrame(head, tail []byte) []byte {
	out := make([]byte, 0, 1+binary.MaxVarintLen32+len(head)+len(tail))
	out = append(out, BinaryFrameTag)
	out = binary.AppendUvarint(out, uint64(len(head)))
	out = append(out, head...)
	return append(out, tail...)
}

// splitBinaryFrame returns the head and the tail of a binary frame, and the
// tail's offset in it.
func splitBinaryFrame(frame []byte) (head, tail []byte, off int, err error) {
	n, k := binary.Uvarint(frame[1:])
	if k <= 0 || n > uint64(len(frame)-1-k) {
		return nil, nil, 0, &pathError{sentinel: ErrMalformed, msg: "binary frame: truncated or bad head length", offset: 1}
	}
	off = 1 + k + int(n)
	return frame[1+k : off], frame[off:], off, nil
}

// binaryChangeSets reads the ChangeSets of a binary frame: its head holds
// their count, its tail the ChangeSets.
func (r *reader) binaryChangeSets() ([]model.ChangeSet, error) {
	start := r.Pos
	if c := r.Peek(); c < '0' || c > '9' {
		return nil, r.Want("the count of the binary frame's ChangeSets (a number)")
	}
	n, err := r.uint(MaxCursor)
	if err != nil {
		return nil, err
	}
	d := r.bin
	if r.binUsed {
		return nil, r.FailAt(start, "a binary frame carries one set of ChangeSets")
	}
	r.binUsed = true
	if n == 0 || n > uint64(len(d.data)-d.pos) {
		return nil, r.FailAt(start, "count %d: want 1 to %d (the tail's bytes)", n, len(d.data)-d.pos)
	}
	out := make([]model.ChangeSet, 0, min(n, 1024))
	for i := 0; i < int(n); i++ {
		item, err := d.bytesField("ChangeSet")
		if err != nil {
			return out, atIndex(err, i)
		}
		sub := binDecoder{data: item, base: d.base + d.pos - len(item), facts: d.facts}
		cs, err := sub.changeSet()
		if err == nil && sub.pos != len(item) {
			err = sub.fail("%d bytes after the ChangeSet", len(item)-sub.pos)
		}
		if err != nil {
			return out, atIndex(err, i)
		}
		d.facts = sub.facts
		out = append(out, cs)
	}
	if d.pos != len(d.data) {
		return out, d.fail("%d bytes after the frame's %d ChangeSets", len(d.data)-d.pos, n)
	}
	return out, nil
}

// FrameHead returns the JSON object of a frame: a text frame itself, the
// head of a binary frame (nil when its head length does not parse). A
// receiver that cannot decode a frame reads its type and requestId there.
func FrameHead(frame []byte) []byte {
	if !IsBinaryFrame(frame) {
		return frame
	}
	head, _, _, err := splitBinaryFrame(frame)
	if err != nil {
		return nil
	}
	return head
}
