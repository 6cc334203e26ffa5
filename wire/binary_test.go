package wire

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

var binSeed = flag.Uint64("binseed", 0, "seed of TestBinaryRoundTripRandom (0: from the clock)")

// binarySamples are ChangeSets covering every part of the form: every
// value kind, prior values, deletes with and without a before-image,
// every migration type, a sealed ChangeSet, a siteId and a transactionId
// that differ from the hlc's.
func binarySamples(t testing.TB) []model.ChangeSet {
	out := sampleChangeSets(t)
	out = append(out, sampleDrops(), sampleAlters(), sampleRenames(), sampleSealed(out[0]), sampleSealed(out[1]))
	h := hlcAt(9000, 7, 3)
	odd := model.ChangeSet{SiteID: siteB, TransactionID: "custom-tx ✓", HLC: h, Changes: []model.Change{
		{Type: model.ColumnChange, Table: "t", PK: []model.Value{model.Int(-5), model.Text("a")}, Column: "r", Value: model.Real(math.Copysign(0, -1)), HLC: hlcAt(9000, 7, 9)},
		{Type: model.ColumnChange, Table: "t", PK: []model.Value{model.Int(-5), model.Text("a")}, Column: "big", Value: model.Int(math.MinInt64), HLC: hlcAt(9000, 7, 2)},
		{Type: model.ColumnChange, Table: "t", PK: []model.Value{model.Int(-5), model.Text("a")}, Column: "b", Value: model.Blob([]byte{0, 1, 0xff}), HLC: model.HLC{Wall: 3, Site: siteB, OpSeq: 1}},
		{Type: model.ColumnChange, Table: "u", PK: []model.Value{model.Bool(true)}, Column: "ts", Value: model.TimestampMillis(-62135596800000), HLC: hlcAt(9000, 7, 3)},
		{Type: model.ColumnChange, Table: "u", PK: []model.Value{model.Bool(true)}, Column: "f", Value: model.Bool(false), HLC: hlcAt(9000, 7, 4),
			HasPrior: true, PriorValue: model.Text("0193A1B2-7C3D-7E4F-8A5B-6C7D8E9F0A1B"), PriorHLC: model.HLC{}},
		{Type: model.ColumnChange, Table: "u", PK: []model.Value{model.Real(1.5)}, Column: "j", Value: mustJSON(t, `{"a":[1,2,{"b":null}]}`), HLC: hlcAt(9000, 7, 5)},
		{Type: model.RowDeletion, Table: "u", PK: []model.Value{model.Real(1.5)}, HLC: hlcAt(9000, 7, 6), PriorRow: model.Row{}},
		{Type: model.RowDeletion, Table: "t", PK: []model.Value{model.Int(1 << 60)}, HLC: hlcAt(9000, 7, 7)},
	}}
	return append(out, odd)
}

// checkBinaryRoundTrip checks that cs's binary form decodes to cs, and
// that its JSON form is the one of cs (the binary form loses nothing the
// JSON form carries).
func checkBinaryRoundTrip(t *testing.T, cs model.ChangeSet) {
	t.Helper()
	js, jerr := MarshalChangeSet(&cs)
	bin, berr := MarshalChangeSetBinary(&cs)
	if (jerr == nil) != (berr == nil) {
		t.Fatalf("JSON form error %v, binary form error %v: they must refuse alike", jerr, berr)
	}
	if berr != nil {
		if !errors.Is(berr, ErrInvalidMessage) {
			t.Fatalf("binary form error %v does not match ErrInvalidMessage", berr)
		}
		return
	}
	got, err := UnmarshalChangeSetBinary(bin)
	if err != nil {
		t.Fatalf("UnmarshalChangeSetBinary: %v\n% x", err, bin)
	}
	js2, err := MarshalChangeSet(&got)
	if err != nil {
		t.Fatalf("MarshalChangeSet of the decoded ChangeSet: %v", err)
	}
	if !bytes.Equal(js, js2) {
		t.Fatalf("JSON form changed by the binary round trip:\n%s\n%s", js, js2)
	}
	want := cs
	want.Migrations, got.Migrations = nil, nil // compared by their JSON above
	if !reflect.DeepEqual(got, want) || !kindsEqual(got, want) {
		t.Fatalf("binary round trip:\n got %+v\nwant %+v", got, want)
	}
	// The binary form must decode as UnmarshalChangeSet decodes the JSON
	// form, up to the kinds the JSON form does not keep (timestamps).
	fromJSON, err := UnmarshalChangeSet(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJSON.Changes) != len(got.Changes) || fromJSON.TransactionID != got.TransactionID || fromJSON.SiteID != got.SiteID || fromJSON.HLC != got.HLC {
		t.Fatalf("binary and JSON forms decode differently:\n%+v\n%+v", got, fromJSON)
	}
}

// kindsEqual compares values bit for bit (reflect.DeepEqual takes -0 for 0).
func kindsEqual(a, b model.ChangeSet) bool {
	for i := range a.Changes {
		x, y := &a.Changes[i], &b.Changes[i]
		if !identicalValue(x.Value, y.Value) || !identicalValue(x.PriorValue, y.PriorValue) || !identicalValues(x.PK, y.PK) {
			return false
		}
		for k, v := range x.PriorRow {
			if !identicalValue(v, y.PriorRow[k]) {
				return false
			}
		}
	}
	return true
}

func TestBinaryRoundTripSamples(t *testing.T) {
	for i, cs := range binarySamples(t) {
		checkBinaryRoundTrip(t, cs)
		bin, _ := MarshalChangeSetBinary(&cs)
		js, _ := MarshalChangeSet(&cs)
		t.Logf("sample %d: %d bytes binary, %d JSON", i, len(bin), len(js))
	}
}

// randomValue returns a value of any kind, including the edge cases of
// each (-0, ±2^63, empty text and blob, UUIDs, text that looks like one).
func randomValue(r *rand.Rand, t testing.TB) model.Value {
	switch r.IntN(12) {
	case 0:
		return model.Null
	case 1:
		return model.Bool(r.IntN(2) == 0)
	case 2:
		return model.Int([]int64{0, -1, 1 << 53, 1<<53 + 1, math.MaxInt64, math.MinInt64, r.Int64() - r.Int64()}[r.IntN(7)])
	case 3:
		return model.Real([]float64{0, math.Copysign(0, -1), 1e308, -5e-324, 0.1, r.NormFloat64() * 1e6}[r.IntN(6)])
	case 4:
		return model.TimestampMillis(r.Int64N(1<<45) - 1<<44)
	case 5:
		return model.Text([]string{"", "a", "Lisboa 🚋", "0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b", "0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1g", "\x00\n\"\\", strings.Repeat("x", 300)}[r.IntN(7)])
	case 6:
		return mustJSON(t, []string{`{}`, `[]`, `"s"`, `1.5`, `{"__bin":"AA=="}`, `[[[{"a":null}]]]`, `true`}[r.IntN(7)])
	case 7:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return model.Blob(b)
	case 8:
		var u [16]byte
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		return model.Text(formatUUID(u[:]))
	}
	return model.Int(r.Int64N(1000))
}

func randomHLC(r *rand.Rand) model.HLC {
	s := []model.SiteID{siteA, siteB}[r.IntN(2)]
	return model.HLC{Wall: r.Uint64N(1 << 50), Counter: uint16(r.Uint32()), Site: s, OpSeq: r.Uint32N(1 << 20)}
}

// randomChangeSet returns a ChangeSet of random facts: mostly of its own
// transaction, in runs of one row and one table, as engines write them,
// with the odd fact of another HLC, order or shape.
func randomChangeSet(r *rand.Rand, t testing.TB) model.ChangeSet {
	h := randomHLC(r)
	cs := model.ChangeSet{SiteID: h.Site, TransactionID: h.TransactionID(), HLC: h}
	if r.IntN(8) == 0 {
		cs.SiteID = siteB
		cs.TransactionID = []string{"tx-1", "x", "🚋"}[r.IntN(3)]
	}
	if r.IntN(6) == 0 {
		return sampleSealed(cs)
	}
	if r.IntN(5) == 0 {
		cs.Migrations = append(cs.Migrations, []model.ChangeSet{sampleDrops(), sampleAlters(), sampleRenames(), sampleChangeSets(t)[0]}[r.IntN(4)].Migrations...)
	}
	tables := []string{"cities", "t", "ü"}
	cols := []string{"id", "name", "pop", "geo", "x"}
	op := uint32(r.IntN(3))
	var pk []model.Value
	table := tables[0]
	for n := r.IntN(12); n > 0; n-- {
		if pk == nil || r.IntN(4) == 0 {
			pk = []model.Value{randomValue(r, t)}
			if r.IntN(4) == 0 {
				pk = append(pk, randomValue(r, t))
			}
		}
		if r.IntN(5) == 0 {
			table = tables[r.IntN(len(tables))]
		}
		fh := h
		fh.OpSeq = op
		switch r.IntN(6) {
		case 0:
			fh = randomHLC(r)
		case 1:
			fh.OpSeq = r.Uint32()
		}
		op++
		c := model.Change{Type: model.ColumnChange, Table: table, PK: pk, HLC: fh}
		if r.IntN(6) == 0 {
			c.Type = model.RowDeletion
			if r.IntN(2) == 0 {
				c.PriorRow = model.Row{}
				for k := r.IntN(4); k > 0; k-- {
					c.PriorRow[cols[r.IntN(len(cols))]] = randomValue(r, t)
				}
			}
		} else {
			c.Column = cols[r.IntN(len(cols))]
			c.Value = randomValue(r, t)
			if r.IntN(3) == 0 {
				c.Value = pk[0]
			}
			if r.IntN(4) == 0 {
				c.HasPrior, c.PriorValue, c.PriorHLC = true, randomValue(r, t), randomHLC(r)
			}
		}
		cs.Changes = append(cs.Changes, c)
	}
	return cs
}

// TestBinaryRoundTripRandom is the property test: random ChangeSets
// round-trip through the binary form exactly, and their JSON form is
// unchanged by it. -binseed replays a run.
func TestBinaryRoundTripRandom(t *testing.T) {
	seed := *binSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./wire -run TestBinaryRoundTripRandom -binseed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		cs := randomChangeSet(r, t)
		checkBinaryRoundTrip(t, cs)
		if t.Failed() {
			t.Fatalf("ChangeSet %d of seed %d", i, seed)
		}
	}
}

// TestBinaryRefusesLikeJSON checks that the binary encoder refuses what
// the JSON encoder refuses.
func TestBinaryRefusesLikeJSON(t *testing.T) {
	good := sampleChangeSets(t)[1]
	cases := map[string]func(*model.ChangeSet){
		"NaN":            func(cs *model.ChangeSet) { cs.Changes[0].Value = model.Real(math.NaN()) },
		"Inf":            func(cs *model.ChangeSet) { cs.Changes[0].PriorValue = model.Real(math.Inf(-1)) },
		"bad UTF-8 text": func(cs *model.ChangeSet) { cs.Changes[0].Value = model.Text("a\xffb") },
		"bad UTF-8 pk":   func(cs *model.ChangeSet) { cs.Changes[0].PK = []model.Value{model.Text("\xc3")} },
		"empty pk":       func(cs *model.ChangeSet) { cs.Changes[1].PK = nil },
		"empty table":    func(cs *model.ChangeSet) { cs.Changes[0].Table = "" },
		"empty column":   func(cs *model.ChangeSet) { cs.Changes[0].Column = "" },
		"bad column":     func(cs *model.ChangeSet) { cs.Changes[0].Column = "\xff" },
		"empty tx":       func(cs *model.ChangeSet) { cs.TransactionID = "" },
		"delete column":  func(cs *model.ChangeSet) { cs.Changes[2].Column = "x" },
		"column row":     func(cs *model.ChangeSet) { cs.Changes[0].PriorRow = model.Row{"a": model.Null} },
		"unknown type":   func(cs *model.ChangeSet) { cs.Changes[0].Type = 7 },
		"empty row key":  func(cs *model.ChangeSet) { cs.Changes[2].PriorRow = model.Row{"": model.Null} },
		"short envelope": func(cs *model.ChangeSet) { *cs = sampleSealed(*cs); cs.Envelope = cs.Envelope[:EnvelopeOverhead-1] },
		"sealed changes": func(cs *model.ChangeSet) { ch := cs.Changes; *cs = sampleSealed(*cs); cs.Changes = ch },
	}
	for name, mutate := range cases {
		cs := good
		cs.Changes = append([]model.Change(nil), good.Changes...)
		mutate(&cs)
		_, jerr := MarshalChangeSet(&cs)
		_, berr := MarshalChangeSetBinary(&cs)
		if jerr == nil || berr == nil || !errors.Is(berr, ErrInvalidMessage) {
			t.Errorf("%s: JSON error %v, binary error %v: want both to refuse", name, jerr, berr)
		}
	}
}

// TestBinaryMalformed checks that every truncation and every single-byte
// corruption of valid binary forms is refused with ErrMalformed or decodes
// to a ChangeSet that re-encodes, never panics.
func TestBinaryMalformed(t *testing.T) {
	for i, cs := range binarySamples(t) {
		bin, err := MarshalChangeSetBinary(&cs)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(bin); n++ {
			if _, err := UnmarshalChangeSetBinary(bin[:n]); err == nil || !errors.Is(err, ErrMalformed) {
				t.Fatalf("sample %d cut at %d of %d bytes: error %v, want ErrMalformed", i, n, len(bin), err)
			}
		}
		if _, err := UnmarshalChangeSetBinary(append(bin, 0)); err == nil || !strings.Contains(err.Error(), "after the ChangeSet") {
			t.Fatalf("sample %d with a byte more: %v", i, err)
		}
		for p := 0; p < len(bin); p++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				c := bytes.Clone(bin)
				c[p] ^= x
				if got, err := UnmarshalChangeSetBinary(c); err == nil {
					if _, err := MarshalChangeSetBinary(&got); err != nil {
						t.Fatalf("sample %d, byte %d ^ %#x: decoded a ChangeSet that does not encode: %v", i, p, x, err)
					}
				} else if !errors.Is(err, ErrMalformed) {
					t.Fatalf("sample %d, byte %d ^ %#x: %v does not match ErrMalformed", i, p, x, err)
				}
			}
		}
	}
}

// TestBinaryMalformedCases names the refusals of hand-made inputs.
func TestBinaryMalformedCases(t *testing.T) {
	hlc := hlcAt(0, 0, 0)
	head := append([]byte{0}, hlc.Bytes()...)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	names := []byte{2, 1, 't', 1, 'c'} // two names: t, c
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"unknown ChangeSet flag", cat([]byte{0x80}, hlc.Bytes()), "unknown ChangeSet flags"},
		{"huge name count", cat(head, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}), "exceeds"},
		{"overlong uvarint", cat(head, bytes.Repeat([]byte{0xff}, 11)), "overflows"},
		{"huge fact count", cat(head, names, []byte{0, 0xff, 0xff, 0xff, 0x7f}), "exceeds"},
		{"name index", cat(head, names, []byte{0, 1, 1, 5, 1, 3, 2, 1, 0}), "name index 5"},
		{"unknown fact type", cat(head, names, []byte{0, 1, 3}), "unknown change type"},
		{"unknown fact flag", cat(head, names, []byte{0, 1, 0x81}), "unknown change flags"},
		{"same pk first", cat(head, names, []byte{0, 1, 0x09}), "previous change"},
		{"empty pk", cat(head, names, []byte{0, 1, 1, 0, 0}), "must not be empty"},
		{"unknown value tag", cat(head, names, []byte{0, 1, 1, 0, 1, 99}), "unknown value tag 99"},
		{"pk0 in pk", cat(head, names, []byte{0, 1, 1, 0, 1, vPK0}), "only a column change's value"},
		{"NaN", cat(head, names, []byte{0, 1, 1, 0, 1, vReal, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}), "NaN"},
		{"bad text", cat(head, names, []byte{0, 1, 1, 0, 1, vText, 1, 0xff}), "not valid UTF-8"},
		{"bad JSON", cat(head, names, []byte{0, 1, 1, 0, 1, vInteger, 2, 1, vJSON, 2, '{', '{'}), "invalid JSON"},
		{"text length", cat(head, names, []byte{0, 1, 1, 0, 1, vText, 0xff, 0x7f}), "exceeds"},
		{"hlc mode 3", cat(head, names, []byte{0, 1, 0x31, 0, 1, vNull}), "unknown HLC mode"},
		{"empty name", cat(head, []byte{1, 0}), "exceeds"},
		{"short envelope", cat([]byte{csSealed}, hlc.Bytes(), []byte{2, 1, 2}), "shorter than an envelope"},
		{"bad migration", cat(head, []byte{0, 1, 2, '{', '}'}), "schemaMigrations"},
		{"prior row order", cat(head, names, []byte{0, 1, 2 | factPrior, 0, 1, vNull, 2, 1, vNull, 1, vNull}), "out of order"},
	}
	for _, c := range cases {
		_, err := UnmarshalChangeSetBinary(c.in)
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrMalformed saying %q", c.name, err, c.want)
		}
	}
}

// TestBinaryChangeBound checks that a frame of more one-byte changes than
// MaxBinaryChanges is refused before they are all decoded.
func TestBinaryChangeBound(t *testing.T) {
	hlc := hlcAt(0, 0, 0)
	b := append([]byte{0}, hlc.Bytes()...)
	b = append(b, 1, 1, 't', 0)
	n := MaxBinaryChanges + 1
	b = append(b, 0x80|byte(n&0x7f), 0x80|byte(n>>7&0x7f), byte(n>>14))
	b = append(b, 2, 0, 1, vInteger, 2) // a delete of t [1]
	b = append(b, bytes.Repeat([]byte{2 | factSameTable | factSamePK}, n-1)...)
	_, err := UnmarshalChangeSetBinary(b)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("error %v, want the change bound", err)
	}
}

// TestBinaryFrames checks the carrier: changes, apply_changes and
// push_changes with ChangeSets encode as binary frames that decode to the
// message, without as text frames, and corrupted frames are refused.
func TestBinaryFrames(t *testing.T) {
	sets := binarySamples(t)
	// Items whose length takes 1, 2 and 3 bytes (the encoder reserves 2).
	big := sets[0]
	big.Changes = append([]model.Change(nil), big.Changes...)
	big.Changes[1].Value = model.Text(strings.Repeat("🚋", 5000))
	sets = append(sets, big)
	msgs := []Message{
		&Changes{Cursor: 19, More: true, ChangeSets: sets, Chain: sampleChain(1)},
		&ApplyChanges{RequestID: "apply-1", ChangeSets: sets[:2]},
		&PushChanges{Cursor: 12, ChangeSets: sets[3:5], Chain: sampleChain(2)},
	}
	for _, m := range msgs {
		frame := mustEncode(t, m)
		if !IsBinaryFrame(frame) {
			t.Fatalf("%s: a text frame", m.Type())
		}
		got, err := Decode(frame)
		if err != nil {
			t.Fatalf("%s: %v", m.Type(), err)
		}
		again := mustEncode(t, got)
		if !bytes.Equal(again, frame) {
			t.Fatalf("%s: re-encoding differs", m.Type())
		}
		step := 1
		if len(frame) > 4096 {
			step = 61 // every cut of a big frame would take seconds
		}
		for n := 0; n < len(frame); n += step {
			if _, err := Decode(frame[:n]); err == nil {
				t.Fatalf("%s cut at %d of %d: decoded", m.Type(), n, len(frame))
			}
		}
		if _, err := Decode(append(bytes.Clone(frame), 0)); err == nil {
			t.Fatalf("%s with a trailing byte: decoded", m.Type())
		}
	}
	empty := mustEncode(t, &Changes{Cursor: 9, Chain: sampleChain(1)})
	if IsBinaryFrame(empty) || !bytes.HasSuffix(empty, []byte(`"changeSets":[]}`)) {
		t.Fatalf("empty changes: %s", empty)
	}
	// A binary frame of another message, or whose head holds an array.
	for _, bad := range [][]byte{
		BinaryFrame([]byte(`{"type":"ping"}`), []byte{1}),
		BinaryFrame([]byte(`{"type":"apply_changes","changes":[]}`), nil),
		BinaryFrame([]byte(`{"type":"apply_changes","changes":0}`), []byte{1}),
		BinaryFrame([]byte(`{"type":"apply_changes","changes":3}`), []byte{1, 0}),
		{BinaryFrameTag, 0xff},
	} {
		if _, err := Decode(bad); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: error %v, want ErrMalformed", bad, err)
		}
	}
	// The JSON form of version 13 in a text frame still decodes.
	var js []byte
	js = append(js, `{"type":"apply_changes","requestId":"r","changes":[`...)
	one, _ := MarshalChangeSet(&sets[0])
	js = append(append(js, one...), "]}"...)
	m, err := Decode(js)
	if err != nil || len(m.(*ApplyChanges).ChangeSets) != 1 {
		t.Fatalf("JSON form: %v", err)
	}
}

func FuzzUnmarshalChangeSetBinary(f *testing.F) {
	for _, cs := range binarySamples(f) {
		b, err := MarshalChangeSetBinary(&cs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := UnmarshalChangeSetBinary(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		b, err := MarshalChangeSetBinary(&cs)
		if err != nil {
			t.Fatalf("decoded a ChangeSet that does not encode: %v", err)
		}
		cs2, err := UnmarshalChangeSetBinary(b)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if _, err := MarshalChangeSet(&cs2); err != nil {
			t.Fatalf("decoded a ChangeSet whose JSON form fails: %v", err)
		}
	})
}
