//go:build !js

package relay

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// This file profiles what fills the bytes of a ChangeSet on the wire
// (frameBreakdown), sizes two prototypes of a denser ChangeSet form for
// the next wire format (protoJSON, protoBinary: test code only, not the
// protocol), and measures permessage-deflate's CPU on the relay
// (BenchmarkDeflate). The rows are GeoNames cities inserted through the
// engine as an app inserts them (UUIDv7 ids).

// wireFixture is real frames of cities rows.
type wireFixture struct {
	single []model.ChangeSet // one ChangeSet per row, 300 rows
	bulk   model.ChangeSet   // one ChangeSet of 1,000 rows
	chunk  []byte            // the first snapshot rows chunk frame (1,000 rows) of bulk's rows
}

var (
	wireFixtureOnce sync.Once
	wireFixtureData *wireFixture
	wireFixtureErr  error
)

// newWireFixture returns the fixture, built once per test binary (the
// benchmarks run several times): the first 300 cities inserted one
// transaction each into one engine, cities 300–1,299 in one transaction
// into another, whose snapshot gives the rows chunk. It skips tb when the
// cities data set is absent.
func newWireFixture(tb testing.TB) *wireFixture {
	tb.Helper()
	wireFixtureOnce.Do(func() { wireFixtureData, wireFixtureErr = buildWireFixture() })
	if errors.Is(wireFixtureErr, cities.ErrAbsent) {
		tb.Skip(wireFixtureErr)
	}
	if wireFixtureErr != nil {
		tb.Fatal(wireFixtureErr)
	}
	return wireFixtureData
}

func buildWireFixture() (*wireFixture, error) {
	all, err := cities.Load(1300)
	if err != nil {
		return nil, err
	}
	open := func() (*engine.Engine, error) {
		schema, err := wire.ParseSchema([]byte(wireSchema))
		if err != nil {
			return nil, err
		}
		return engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &schema, Logger: discardLogger})
	}
	f := &wireFixture{}
	db, err := open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, c := range all[:300] {
		cs, err := db.Transact(func(tx *engine.Tx) error { _, err := tx.Insert("cities", wireRow(c)); return err })
		if err != nil {
			return nil, err
		}
		f.single = append(f.single, *cs)
	}
	bulk, err := open()
	if err != nil {
		return nil, err
	}
	defer bulk.Close()
	cs, err := bulk.Transact(func(tx *engine.Tx) error {
		for _, c := range all[300:1300] {
			if _, err := tx.Insert("cities", wireRow(c)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.bulk = *cs
	for ch, err := range bulk.Snapshot(engine.SnapshotOptions{RowBytes: wire.SnapshotRowSize}) {
		if err != nil {
			return nil, err
		}
		if ch.Type == model.ChunkRows {
			if f.chunk, err = wire.Encode(&wire.SnapshotChunk{Chunk: ch}); err != nil {
				return nil, err
			}
			break
		}
	}
	return f, nil
}

func mustEncodeFrame(tb testing.TB, m wire.Message) []byte {
	tb.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// pushFrame is the apply_changes frame a client sends for sets (version
// 14: a binary frame).
func pushFrame(tb testing.TB, sets ...model.ChangeSet) []byte {
	return mustEncodeFrame(tb, &wire.ApplyChanges{RequestID: "apply-12", ChangeSets: sets})
}

// jsonPushFrame is the apply_changes frame of version 13 for sets: the
// ChangeSets as JSON (wire.MarshalChangeSet) in a text frame, which a
// receiver of version 14 still reads. It is the baseline of the binary
// form.
func jsonPushFrame(tb testing.TB, sets ...model.ChangeSet) []byte {
	tb.Helper()
	b := []byte(`{"type":"apply_changes","requestId":"apply-12","changes":[`)
	for i := range sets {
		if i > 0 {
			b = append(b, ',')
		}
		js, err := wire.MarshalChangeSet(&sets[i])
		if err != nil {
			tb.Fatal(err)
		}
		b = append(b, js...)
	}
	return append(b, "]}"...)
}

// binaryBreakdown attributes every byte of a binary apply_changes frame of
// one ChangeSet to the parts of the binary form ("Binary ChangeSets" in
// the wire package documentation): the frame's head, the ChangeSet's
// length, flags and hlc, its name table, and its facts (flags, indexes and
// values; the form has no per-fact HLC unless one leaves the transaction).
func binaryBreakdown(tb testing.TB, frame []byte) map[string]int {
	tb.Helper()
	head := wire.FrameHead(frame)
	off := len(frame) - len(frame[bytes.Index(frame, head)+len(head):])
	rest := frame[off:]
	_, k := binary.Uvarint(rest) // the ChangeSet's length
	out := map[string]int{"frame head (tag, length, JSON head)": off, "ChangeSet length, flags, hlc": k + 1 + model.HLCSize}
	p := k + 1 + model.HLCSize
	n, m := binary.Uvarint(rest[p:])
	q := p + m
	for i := uint64(0); i < n; i++ {
		l, m := binary.Uvarint(rest[q:])
		q += m + int(l)
	}
	out["name table"] = q - p
	out["facts (flags, indexes, values)"] = len(rest) - q
	return out
}

// The categories of frameBreakdown, in the order tables list them.
var breakdownCategories = []string{
	"values",           // the cells' values, quotes excluded: the row's own data
	"pk",               // the primary key repeated in every fact, quotes excluded
	"fact hlc",         // each fact's 40-character HLC, quotes excluded
	"column names",     // each fact's "column" value, quotes excluded
	"table names",      // each fact's "table" value, quotes excluded
	"fact type",        // each fact's "type" value ("column"), quotes excluded
	"member names",     // every "name": of every object
	"quotes",           // the two quotes of every string value
	"punctuation",      // braces, brackets and commas
	"ChangeSet header", // siteId, transactionId, hlc of each ChangeSet, quotes excluded
	"frame header",     // the frame's type and requestId, quotes excluded
}

// frameBreakdown attributes every byte of an apply_changes, changes or
// push_changes frame (wire's encoding: no whitespace) to one of
// breakdownCategories. The counts add up to len(frame).
func frameBreakdown(frame []byte) (map[string]int, error) {
	out := map[string]int{}
	err := walkObject(frame, out, func(key string) (string, func([]byte) error) {
		switch key {
		case "changes", "changeSets":
			return "", func(cs []byte) error {
				return walkObject(cs, out, func(key string) (string, func([]byte) error) {
					if key != "changes" {
						return "ChangeSet header", nil
					}
					return "", func(ch []byte) error {
						return walkObject(ch, out, func(key string) (string, func([]byte) error) {
							switch key {
							case "type":
								return "fact type", nil
							case "table":
								return "table names", nil
							case "column":
								return "column names", nil
							case "hlc", "priorHlc":
								return "fact hlc", nil
							case "pk":
								return "pk", nil
							}
							return "values", nil
						})
					}
				})
			}
		}
		return "frame header", nil
	})
	return out, err
}

// walkObject attributes the bytes of the JSON object raw to out: member
// names, punctuation, and each member's value to the category classify
// names for its key, or, when classify returns a function, the braces and
// commas of the member's array to punctuation and each element to the
// function.
func walkObject(raw []byte, out map[string]int, classify func(key string) (string, func([]byte) error)) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return err
	}
	out["punctuation"] += 2 + len(members) - 1 // {}, and the commas between members
	for key, v := range members {
		out["member names"] += len(key) + 3 // "key":
		cat, elem := classify(key)
		if elem == nil {
			walkValue(v, cat, out)
			continue
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		out["punctuation"] += 2 + max(len(elems)-1, 0)
		for _, e := range elems {
			if err := elem(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkValue attributes a value's bytes to cat, but for a string's quotes
// and an array's punctuation (objects, as {"__bin":…}, go to cat whole).
func walkValue(v []byte, cat string, out map[string]int) {
	switch v[0] {
	case '"':
		out["quotes"] += 2
		out[cat] += len(v) - 2
	case '[':
		var elems []json.RawMessage
		_ = json.Unmarshal(v, &elems)
		out["punctuation"] += 2 + max(len(elems)-1, 0)
		for _, e := range elems {
			walkValue(e, cat, out)
		}
	default:
		out[cat] += len(v)
	}
}

// protoJSON encodes sets in a denser JSON form, the direction of issue
// 17's W11 (column names and the HLC base once per ChangeSet, not per
// fact), as the apply_changes frame it would make: each ChangeSet as its
// siteId, transactionId and hlc, then its facts as one snapshot rows
// chunk of wire's ("rows": per-chunk tables of column names and HLC
// bases; each cell [column index, value], its HLC the previous cell's
// plus one opSeq), the way snapshots already travel. Test code only, a
// size estimate: column changes only (no deletes, prior values or
// migrations: cities inserts have none), no decoder.
func protoJSON(tb testing.TB, sets []model.ChangeSet) []byte {
	tb.Helper()
	b := []byte(`{"type":"apply_changes","requestId":"apply-12","changes":[`)
	for i, cs := range sets {
		var rows []model.SnapshotRow
		for _, c := range cs.Changes {
			if c.Type != model.ColumnChange || c.HasPrior {
				tb.Fatalf("protoJSON: a %s change is not covered", c.Type)
			}
			cell := model.SnapshotCell{Column: c.Column, Value: c.Value, HLC: c.HLC}
			if k := len(rows) - 1; k >= 0 && slices.EqualFunc(rows[k].PK, c.PK, model.Value.Equal) {
				rows[k].Cells = append(rows[k].Cells, cell)
				continue
			}
			rows = append(rows, model.SnapshotRow{PK: c.PK, Cells: []model.SnapshotCell{cell}})
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"siteId":"%s","transactionId":"%s","hlc":"%s","rows":`, cs.SiteID, cs.TransactionID, wire.FormatHLC(cs.HLC))
		chunk := mustEncodeFrame(tb, &wire.SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: cs.Changes[0].Table, Rows: rows}})
		b = append(b, chunk[len(`{"type":"snapshot_chunk","chunk":`):]...) // {"type":"rows",…}}: the ChangeSet's closing brace
	}
	return append(b, "]}"...)
}

// The value tags of protoBinary.
const (
	tagNull byte = iota
	tagFalse
	tagTrue
	tagInt       // zigzag varint
	tagReal      // 8 bytes, IEEE 754 big-endian
	tagTimestamp // zigzag varint, ms
	tagText      // uvarint length, UTF-8
	tagJSON      // uvarint length, JSON text
	tagBlob      // uvarint length, bytes
	tagUUID      // 16 bytes: text that is a UUID in canonical lowercase form
	tagPK0       // nothing: the value of the fact's pk[0] (a key column's own fact)
)

// protoBinary encodes sets in a binary prototype of a ChangeSet form
// (test code only; it sizes the binary direction of issue 17's W11):
//
//	frame     = uvarint count, changeSet*
//	changeSet = hlc (30 bytes: wall, counter, site, opSeq of the highest
//	            fact; siteId and transactionId follow from it), uvarint
//	            names, (uvarint length, UTF-8)* (table and column names,
//	            first use first), uvarint facts, fact*
//	fact      = flags (1: same table as the previous fact, 2: same pk, 4:
//	            opSeq is the previous fact's + 1), [uvarint table name],
//	            [uvarint pk values, value*], uvarint column name, value,
//	            [uvarint opSeq]
//	value     = tag byte, then as the tag says (tagNull …): text that is
//	            a UUID in canonical lowercase form as its 16 bytes, a
//	            fact's value equal to its pk's first value as tagPK0 alone
//
// Every fact's HLC is the ChangeSet's base with its opSeq. Column changes
// only, like protoJSON.
func protoBinary(sets []model.ChangeSet) ([]byte, error) {
	b := binary.AppendUvarint(nil, uint64(len(sets)))
	for _, cs := range sets {
		if len(cs.Migrations) > 0 || cs.Envelope != nil {
			return nil, errors.New("protoBinary: migrations and envelopes are not covered")
		}
		b = append(b, cs.HLC.Bytes()...)
		var names []string
		index := map[string]int{}
		name := func(s string) int {
			i, ok := index[s]
			if !ok {
				i = len(names)
				index[s] = i
				names = append(names, s)
			}
			return i
		}
		var facts []byte
		var prev *model.Change
		for i := range cs.Changes {
			c := &cs.Changes[i]
			if c.Type != model.ColumnChange || c.HasPrior || !c.HLC.SameTransaction(cs.HLC) {
				return nil, fmt.Errorf("protoBinary: fact %d is not covered", i)
			}
			var flags byte
			if prev != nil && prev.Table == c.Table {
				flags |= 1
			}
			if prev != nil && slices.EqualFunc(prev.PK, c.PK, model.Value.Equal) {
				flags |= 2
			}
			if prev != nil && c.HLC.OpSeq == prev.HLC.OpSeq+1 || prev == nil && c.HLC.OpSeq == 0 {
				flags |= 4
			}
			facts = append(facts, flags)
			if flags&1 == 0 {
				facts = binary.AppendUvarint(facts, uint64(name(c.Table)))
			}
			if flags&2 == 0 {
				facts = binary.AppendUvarint(facts, uint64(len(c.PK)))
				for _, v := range c.PK {
					facts = appendProtoValue(facts, v)
				}
			}
			facts = binary.AppendUvarint(facts, uint64(name(c.Column)))
			if c.Value.Kind() == c.PK[0].Kind() && c.Value.Equal(c.PK[0]) {
				facts = append(facts, tagPK0)
			} else {
				facts = appendProtoValue(facts, c.Value)
			}
			if flags&4 == 0 {
				facts = binary.AppendUvarint(facts, uint64(c.HLC.OpSeq))
			}
			prev = c
		}
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, s := range names {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		b = binary.AppendUvarint(b, uint64(len(cs.Changes)))
		b = append(b, facts...)
	}
	return b, nil
}

func appendProtoValue(b []byte, v model.Value) []byte {
	switch v.Kind() {
	case model.KindNull:
		return append(b, tagNull)
	case model.KindBoolean:
		if v.Bool() {
			return append(b, tagTrue)
		}
		return append(b, tagFalse)
	case model.KindInteger:
		return binary.AppendVarint(append(b, tagInt), v.Int())
	case model.KindTimestamp:
		return binary.AppendVarint(append(b, tagTimestamp), v.Int())
	case model.KindReal:
		return binary.BigEndian.AppendUint64(append(b, tagReal), math.Float64bits(v.Real()))
	case model.KindText:
		if u, ok := uuidBytes(v.Text()); ok {
			return append(append(b, tagUUID), u[:]...)
		}
		return appendProtoBytes(append(b, tagText), v.Text())
	case model.KindJSON:
		return appendProtoBytes(append(b, tagJSON), string(v.JSON()))
	default: // blob
		return appendProtoBytes(append(b, tagBlob), string(v.Blob()))
	}
}

// uuidBytes returns the 16 bytes of s when s is a UUID in canonical
// lowercase form (8-4-4-4-12 hex digits), the form hex.EncodeToString
// gives back.
func uuidBytes(s string) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil || hex.EncodeToString(u[:]) != h {
		return u, false
	}
	return u, true
}

func appendProtoBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// protoReader reads protoBinary's form.
type protoReader struct {
	b   []byte
	err error
}

func (r *protoReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *protoReader) take(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *protoReader) fail() {
	if r.err == nil {
		r.err = io.ErrUnexpectedEOF
	}
	r.b = nil
}

func (r *protoReader) value() model.Value {
	tag := r.take(1)
	if tag == nil {
		return model.Null
	}
	switch tag[0] {
	case tagNull:
		return model.Null
	case tagFalse, tagTrue:
		return model.Bool(tag[0] == tagTrue)
	case tagInt, tagTimestamp:
		v, n := binary.Varint(r.b)
		if n <= 0 {
			r.fail()
			return model.Null
		}
		r.b = r.b[n:]
		if tag[0] == tagInt {
			return model.Int(v)
		}
		return model.TimestampMillis(v)
	case tagReal:
		return model.Real(math.Float64frombits(binary.BigEndian.Uint64(r.take(8))))
	case tagText:
		return model.Text(string(r.take(r.uvarint())))
	case tagJSON:
		v, err := model.JSONValue(r.take(r.uvarint()))
		if err != nil && r.err == nil {
			r.err = err
		}
		return v
	case tagBlob:
		return model.Blob(r.take(r.uvarint()))
	case tagUUID:
		h := hex.EncodeToString(r.take(16))
		if len(h) != 32 {
			return model.Null
		}
		return model.Text(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
	}
	r.err = fmt.Errorf("unknown tag %d", tag[0])
	return model.Null
}

// protoBinaryDecode reads what protoBinary wrote (its round trip shows
// the form loses nothing of what it covers).
func protoBinaryDecode(b []byte) ([]model.ChangeSet, error) {
	r := &protoReader{b: b}
	sets := make([]model.ChangeSet, r.uvarint())
	for i := range sets {
		h, err := model.HLCFromBytes(r.take(model.HLCSize))
		if err != nil {
			return nil, err
		}
		cs := model.ChangeSet{SiteID: h.Site, TransactionID: h.TransactionID(), HLC: h}
		names := make([]string, r.uvarint())
		for j := range names {
			names[j] = string(r.take(r.uvarint()))
		}
		nm := func() string {
			j := r.uvarint()
			if j >= uint64(len(names)) {
				r.fail()
				return ""
			}
			return names[j]
		}
		cs.Changes = make([]model.Change, r.uvarint())
		for j := range cs.Changes {
			flags := r.take(1)
			if flags == nil {
				return nil, r.err
			}
			c := model.Change{Type: model.ColumnChange, HLC: h.Base()}
			if flags[0]&1 != 0 && j > 0 {
				c.Table = cs.Changes[j-1].Table
			} else {
				c.Table = nm()
			}
			if flags[0]&2 != 0 && j > 0 {
				c.PK = cs.Changes[j-1].PK
			} else {
				c.PK = make([]model.Value, r.uvarint())
				for k := range c.PK {
					c.PK[k] = r.value()
				}
			}
			c.Column = nm()
			if len(r.b) > 0 && r.b[0] == tagPK0 && len(c.PK) > 0 {
				r.b = r.b[1:]
				c.Value = c.PK[0]
			} else {
				c.Value = r.value()
			}
			switch {
			case flags[0]&4 != 0 && j > 0:
				c.HLC.OpSeq = cs.Changes[j-1].HLC.OpSeq + 1
			case flags[0]&4 != 0:
				c.HLC.OpSeq = 0
			default:
				c.HLC.OpSeq = uint32(r.uvarint())
			}
			cs.Changes[j] = c
		}
		sets[i] = cs
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errors.New("trailing bytes")
	}
	return sets, r.err
}

// deflated is the size of b compressed as a permessage-deflate message
// without context takeover: flate at BestSpeed (coder/websocket's level),
// flushed, less the 4-byte tail the extension strips.
func deflated(b []byte) int {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write(b)
	_ = w.Flush()
	return buf.Len() - 4
}

// deflatedStream is the mean size of each of frames compressed as
// consecutive permessage-deflate messages with context takeover.
func deflatedStream(frames [][]byte) float64 {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	for _, f := range frames {
		_, _ = w.Write(f)
		_ = w.Flush()
	}
	return float64(buf.Len()-4*len(frames)) / float64(len(frames))
}

// wireSizes is the sizes, per row, of one form of the fixture's pushes.
type wireSizes struct {
	single, singleDeflate, singleStream float64 // 1-row ChangeSets, a frame each: plain, deflated alone, deflated with context takeover
	bulk, bulkDeflate                   float64 // the 1,000-row ChangeSet in one frame: plain, deflated
}

// TestWireBreakdown checks the profile's instruments on real cities
// frames: frameBreakdown accounts for every byte of a 1-row and a
// 1,000-row apply_changes, and protoBinary's form decodes to the same
// ChangeSets. It logs the breakdown and the prototypes' sizes (go test
// -v -run TestWireBreakdown ./relay), the table in relay/doc.go.
func TestWireBreakdown(t *testing.T) {
	f := newWireFixture(t)
	one, bulk := jsonPushFrame(t, f.single[0]), jsonPushFrame(t, f.bulk)
	var lines []string
	bd := map[string]map[string]int{}
	for _, fr := range []struct {
		name  string
		frame []byte
	}{{"1 row", one}, {"1,000 rows", bulk}} {
		got, err := frameBreakdown(fr.frame)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for k, v := range got {
			if !slices.Contains(breakdownCategories, k) {
				t.Errorf("%s: category %q is not listed", fr.name, k)
			}
			sum += v
		}
		if sum != len(fr.frame) {
			t.Fatalf("%s: the breakdown accounts for %d bytes of %d", fr.name, sum, len(fr.frame))
		}
		bd[fr.name] = got
	}
	if bd["1 row"]["values"] == 0 || bd["1 row"]["fact hlc"] != 7*40 {
		t.Fatalf("1 row: values %d, fact hlc %d bytes; want 7 HLCs of 40", bd["1 row"]["values"], bd["1 row"]["fact hlc"])
	}
	lines = append(lines, "| part | 1-row ChangeSet, bytes | 1,000-row ChangeSet, bytes per row |", "|---|---|---|")
	for _, k := range breakdownCategories {
		lines = append(lines, fmt.Sprintf("| %s | %d | %.1f |", k, bd["1 row"][k], float64(bd["1,000 rows"][k])/1000))
	}
	lines = append(lines, fmt.Sprintf("| total (the version 13 apply_changes frame) | %d | %.1f |", len(one), float64(len(bulk))/1000))
	bin1, binN := binaryBreakdown(t, pushFrame(t, f.single[0])), binaryBreakdown(t, pushFrame(t, f.bulk))
	lines = append(lines, "", "| part of the binary frame (version 14) | 1-row ChangeSet, bytes | 1,000-row ChangeSet, bytes per row |", "|---|---|---|")
	sum1, sumN := 0, 0
	for _, k := range []string{"frame head (tag, length, JSON head)", "ChangeSet length, flags, hlc", "name table", "facts (flags, indexes, values)"} {
		lines = append(lines, fmt.Sprintf("| %s | %d | %.1f |", k, bin1[k], float64(binN[k])/1000))
		sum1, sumN = sum1+bin1[k], sumN+binN[k]
	}
	if b1 := pushFrame(t, f.single[0]); sum1 != len(b1) || sumN != len(pushFrame(t, f.bulk)) {
		t.Fatalf("the binary breakdown accounts for %d of %d bytes", sum1, len(b1))
	}
	lines = append(lines, fmt.Sprintf("| total (the binary apply_changes frame) | %d | %.1f |", sum1, float64(sumN)/1000))
	for _, sets := range [][]model.ChangeSet{f.single[:5], {f.bulk}} {
		b, err := protoBinary(sets)
		if err != nil {
			t.Fatal(err)
		}
		back, err := protoBinaryDecode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, sets) {
			t.Fatalf("protoBinary's round trip of %d ChangeSets changed them", len(sets))
		}
	}
	s := wireSizesOf(t, f)
	lines = append(lines, "", "| form | 1-row ChangeSets, a frame each: plain / deflated / deflated, context takeover | 1,000-row ChangeSet: plain / deflated |", "|---|---|---|")
	for _, name := range []string{"JSON (version 13)", "binary (version 14)", "protoJSON", "protoBinary"} {
		x := s[name]
		lines = append(lines, fmt.Sprintf("| %s | %.0f / %.0f / %.0f | %.0f / %.0f |", name, x.single, x.singleDeflate, x.singleStream, x.bulk, x.bulkDeflate))
	}
	lines = append(lines, fmt.Sprintf("| rows chunk (snapshot) | | %.0f / %.0f |", float64(len(f.chunk))/1000, float64(deflated(f.chunk))/1000))
	// Sealed: the envelope of the binary form (version 14) in a binary
	// frame, against the envelope of the JSON form in a JSON frame
	// (version 13), for the first 1-row ChangeSet and the 1,000-row one.
	kr := testKeyring(t, 7)
	for _, x := range []struct {
		name string
		cs   model.ChangeSet
		rows float64
	}{{"1 row", f.single[0], 1}, {"1,000 rows", f.bulk, 1000}} {
		sealed := sealAll(t, kr, "wire", []model.ChangeSet{x.cs})
		js, err := wire.MarshalChangeSet(&x.cs)
		if err != nil {
			t.Fatal(err)
		}
		env, err := kr.Seal(wire.ChangeSetAD("wire", &x.cs), js)
		if err != nil {
			t.Fatal(err)
		}
		old := model.ChangeSet{SiteID: x.cs.SiteID, TransactionID: x.cs.TransactionID, HLC: x.cs.HLC, Envelope: env}
		v14, v13 := pushFrame(t, sealed...), jsonPushFrame(t, old)
		lines = append(lines, fmt.Sprintf("| sealed, %s: binary (version 14) / JSON (version 13), bytes per row | %.0f / %.0f | deflated %.0f / %.0f |",
			x.name, float64(len(v14))/x.rows, float64(len(v13))/x.rows, float64(deflated(v14))/x.rows, float64(deflated(v13))/x.rows))
	}
	t.Logf("bytes of cities rows as apply_changes frames (compact JSON of the rows: %.1f B/row)\n%s", jsonPerRow(f), strings.Join(lines, "\n"))
}

// jsonPerRow is the mean compact JSON of the fixture's 1-row ChangeSets'
// rows (json.Marshal of the row's map).
func jsonPerRow(f *wireFixture) float64 {
	n := 0
	for _, cs := range f.single {
		m := map[string]any{}
		for _, c := range cs.Changes {
			switch c.Value.Kind() {
			case model.KindReal:
				m[c.Column] = c.Value.Real()
			default:
				m[c.Column] = c.Value.Text()
			}
		}
		j, _ := json.Marshal(m)
		n += len(j)
	}
	return float64(n) / float64(len(f.single))
}

// wireSizesOf sizes the fixture's pushes per row in each form: "JSON
// (version 13)" (the JSON form of apply_changes), "binary (version 14)"
// (wire's apply_changes), "protoJSON", "protoBinary".
func wireSizesOf(tb testing.TB, f *wireFixture) map[string]wireSizes {
	tb.Helper()
	out := map[string]wireSizes{}
	form := func(name string, frame func([]model.ChangeSet) []byte) {
		var frames [][]byte
		var s wireSizes
		for _, cs := range f.single {
			fr := frame([]model.ChangeSet{cs})
			frames = append(frames, fr)
			s.single += float64(len(fr))
			s.singleDeflate += float64(deflated(fr))
		}
		n := float64(len(f.single))
		s.single /= n
		s.singleDeflate /= n
		s.singleStream = deflatedStream(frames)
		fr := frame([]model.ChangeSet{f.bulk})
		s.bulk, s.bulkDeflate = float64(len(fr))/1000, float64(deflated(fr))/1000
		out[name] = s
	}
	form("JSON (version 13)", func(sets []model.ChangeSet) []byte { return jsonPushFrame(tb, sets...) })
	form("binary (version 14)", func(sets []model.ChangeSet) []byte { return pushFrame(tb, sets...) })
	form("protoJSON", func(sets []model.ChangeSet) []byte { return protoJSON(tb, sets) })
	form("protoBinary", func(sets []model.ChangeSet) []byte {
		b, err := protoBinary(sets)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	})
	return out
}

// BenchmarkDeflate measures permessage-deflate's CPU per frame on the
// relay, as coder/websocket spends it: flate at BestSpeed, one message a
// flush. Frames: push-1row (the push_changes of a 1-row cities
// ChangeSet, 300 different ones in turn), push-1000rows (of one
// 1,000-row ChangeSet), chunk-1000rows (a snapshot rows chunk of 1,000
// rows). For each: encode (wire.Encode of the frame, which the relay does
// once per frame, the baseline), compress/nocontext (a pooled compressor
// reset per frame: the relay's write of each frame, once per receiving
// connection), compress/context (one compressor per connection, kept
// between frames), decompress (the relay's read of a compressed frame of
// that size, as a push). ns/op is per frame; cpu-ns/frame is the
// process's CPU time per frame (GC included; meaningful on a loaded
// machine); MB/s counts the uncompressed frame; out-B/frame is the
// compressed size.
func BenchmarkDeflate(b *testing.B) {
	f := newWireFixture(b)
	var single []wire.Message
	for _, cs := range f.single {
		single = append(single, &wire.PushChanges{Cursor: 4211, ChangeSets: []model.ChangeSet{cs}})
	}
	chunk, err := wire.Decode(f.chunk)
	if err != nil {
		b.Fatal(err)
	}
	for _, fr := range []struct {
		name string
		msgs []wire.Message
	}{
		{"push-1row", single},
		{"push-1000rows", []wire.Message{&wire.PushChanges{Cursor: 4211, ChangeSets: []model.ChangeSet{f.bulk}}}},
		{"chunk-1000rows", []wire.Message{chunk}},
	} {
		var frames [][]byte
		size := 0
		for _, m := range fr.msgs {
			frames = append(frames, mustEncodeFrame(b, m))
			size += len(frames[len(frames)-1])
		}
		run := func(name string, op func(i int) int) {
			b.Run(fr.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(size / len(frames)))
				out := 0
				cpu := processCPU()
				for i := 0; b.Loop(); i++ {
					out += op(i % len(frames))
				}
				if cpu := processCPU() - cpu; cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/frame")
				}
				if out > 0 {
					b.ReportMetric(float64(out)/float64(b.N), "out-B/frame")
				}
			})
		}
		run("encode", func(i int) int {
			if _, err := wire.Encode(fr.msgs[i]); err != nil {
				b.Fatal(err)
			}
			return 0
		})
		var buf bytes.Buffer
		pooled, _ := flate.NewWriter(&buf, flate.BestSpeed)
		run("compress/nocontext", func(i int) int {
			buf.Reset()
			pooled.Reset(&buf)
			_, _ = pooled.Write(frames[i])
			_ = pooled.Flush()
			return buf.Len() - 4
		})
		kept, _ := flate.NewWriter(&buf, flate.BestSpeed)
		run("compress/context", func(i int) int {
			buf.Reset()
			_, _ = kept.Write(frames[i])
			_ = kept.Flush()
			return buf.Len() - 4
		})
		var packed [][]byte
		for _, x := range frames {
			var pb bytes.Buffer
			w, _ := flate.NewWriter(&pb, flate.BestSpeed)
			_, _ = w.Write(x)
			_ = w.Flush()
			packed = append(packed, pb.Bytes())
		}
		r := flate.NewReader(bytes.NewReader(nil))
		run("decompress", func(i int) int {
			_ = r.(flate.Resetter).Reset(bytes.NewReader(packed[i]), nil)
			n, err := io.Copy(io.Discard, r)
			if n != int64(len(frames[i])) && !errors.Is(err, io.ErrUnexpectedEOF) {
				b.Fatalf("inflated %d bytes of %d: %v", n, len(frames[i]), err)
			}
			return 0
		})
	}
}

// BenchmarkChangeSetCodec compares the CPU of the binary ChangeSet form
// (version 14) with the JSON form (version 13) on cities ChangeSets:
// 1row (the 300 1-row ChangeSets in turn) and 1000rows (one ChangeSet of
// 1,000 rows). encode and decode are wire's MarshalChangeSet(Binary) and
// UnmarshalChangeSet(Binary); transcode is the relay's serving path
// (stored JSON to binary: wire.TranscodeChangeSet). ns/op is per
// ChangeSet; compare the forms within one run.
func BenchmarkChangeSetCodec(b *testing.B) {
	f := newWireFixture(b)
	for _, sc := range []struct {
		name string
		sets []model.ChangeSet
	}{{"1row", f.single}, {"1000rows", []model.ChangeSet{f.bulk}}} {
		var js, bin [][]byte
		for i := range sc.sets {
			j, err := wire.MarshalChangeSet(&sc.sets[i])
			if err != nil {
				b.Fatal(err)
			}
			x, err := wire.MarshalChangeSetBinary(&sc.sets[i])
			if err != nil {
				b.Fatal(err)
			}
			js, bin = append(js, j), append(bin, x)
		}
		run := func(name string, bytes [][]byte, op func(i int) error) {
			b.Run(sc.name+"/"+name, func(b *testing.B) {
				n := 0
				for _, x := range bytes {
					n += len(x)
				}
				b.SetBytes(int64(n / len(bytes)))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := op(i % len(sc.sets)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		run("json/encode", js, func(i int) error { _, err := wire.MarshalChangeSet(&sc.sets[i]); return err })
		run("binary/encode", bin, func(i int) error { _, err := wire.MarshalChangeSetBinary(&sc.sets[i]); return err })
		run("json/decode", js, func(i int) error { _, err := wire.UnmarshalChangeSet(js[i]); return err })
		run("binary/decode", bin, func(i int) error { _, err := wire.UnmarshalChangeSetBinary(bin[i]); return err })
		run("transcode", bin, func(i int) error { _, err := wire.TranscodeChangeSet(nil, js[i]); return err })
	}
}
