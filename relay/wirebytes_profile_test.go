//go:build !js

package relay

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// (frameBreakdown) in the JSON form of version 13 and the binary form of
// version 14 (binaryBreakdown), sizes protoJSON (a denser JSON form, test
// code only, not the protocol) beside them, and measures permessage-deflate's CPU on the relay
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
// 1,000-row apply_changes of version 13, binaryBreakdown of version 14's.
// It logs the breakdowns and the forms' sizes (go test
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
	s := wireSizesOf(t, f)
	lines = append(lines, "", "| form | 1-row ChangeSets, a frame each: plain / deflated / deflated, context takeover | 1,000-row ChangeSet: plain / deflated |", "|---|---|---|")
	for _, name := range []string{"JSON (version 13)", "binary (version 14)", "protoJSON"} {
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
// (wire's apply_changes), "protoJSON".
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
