package engine

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestHLCClock walks the clock through tables of steps: (wall time, tick or
// receive, input, expected state), in the manner of cockroachdb's
// TestHLCClock.
func TestHLCClock(t *testing.T) {
	site := SiteID{1}
	type step struct {
		wall   uint64
		recv   *HLC // nil: a local tick
		want   clockState
		errDft bool
	}
	remote := func(wall uint64, counter uint16) *HLC { return &HLC{Wall: wall, Counter: counter, Site: SiteID{2}} }
	cases := []struct {
		name  string
		steps []step
	}{
		{"tick advances with the wall clock", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1005, want: clockState{1005, 0}},
		}},
		{"tick within a millisecond counts", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1000, want: clockState{1000, 1}},
			{wall: 1000, want: clockState{1000, 2}},
		}},
		{"backward wall clock never goes back", []step{
			{wall: 5000, want: clockState{5000, 0}},
			{wall: 4000, want: clockState{5000, 1}},
			{wall: 1, want: clockState{5000, 2}},
			{wall: 5001, want: clockState{5001, 0}},
		}},
		{"receive max-merges", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1000, recv: remote(1500, 7), want: clockState{1500, 7}},
			{wall: 1000, want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1200, 3), want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1500, 8), want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1500, 9), want: clockState{1500, 9}},
		}},
		{"drift edge: exactly 60 000 ms accepted, 60 001 refused", []step{
			{wall: 10_000, recv: remote(70_000, 0), want: clockState{70_000, 0}},
			{wall: 10_000, recv: remote(70_001, 0), want: clockState{70_000, 0}, errDft: true},
		}},
		{"drift is measured against the wall clock, not the HLC", []step{
			{wall: 10_000, recv: remote(69_000, 0), want: clockState{69_000, 0}},
			{wall: 10_000, recv: remote(71_000, 0), want: clockState{69_000, 0}, errDft: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s clockState
			for i, st := range c.steps {
				if st.recv == nil {
					s = s.tick(st.wall)
				} else {
					err := checkDrift(*st.recv, st.wall)
					if (err != nil) != st.errDft {
						t.Fatalf("step %d: drift error %v, want error=%v", i, err, st.errDft)
					}
					if err == nil {
						s = s.receive(*st.recv)
					}
				}
				if s != st.want {
					t.Fatalf("step %d: state %+v, want %+v", i, s, st.want)
				}
				_ = site
			}
		})
	}
}

func TestHLCCounterRollover(t *testing.T) {
	s := clockState{Wall: 1000, Counter: 0xFFFE}
	s = s.tick(1000)
	if s != (clockState{1000, 0xFFFF}) {
		t.Fatalf("got %+v", s)
	}
	s = s.tick(1000)
	if s != (clockState{1001, 0}) {
		t.Fatalf("past 0xFFFF: got %+v, want the next millisecond", s)
	}
	// And the wall clock catching up does not move it back.
	if s = s.tick(1001); s != (clockState{1001, 1}) {
		t.Fatalf("got %+v", s)
	}
}

// TestHLCEncodingOrder: the byte order of the 30-byte encoding is the HLC
// order, and encoding round-trips.
func TestHLCEncodingOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	gen := func() HLC {
		var h HLC
		h.Wall = uint64(rng.IntN(4))
		if rng.IntN(4) == 0 {
			h.Wall = rng.Uint64()
		}
		h.Counter = uint16(rng.IntN(3))
		h.Site[rng.IntN(16)] = byte(rng.IntN(3))
		h.OpSeq = uint32(rng.IntN(3))
		if rng.IntN(4) == 0 {
			h.OpSeq = rng.Uint32()
		}
		return h
	}
	for i := 0; i < 20000; i++ {
		a, b := gen(), gen()
		if got, want := bytes.Compare(a.Bytes(), b.Bytes()), a.Compare(b); got != want {
			t.Fatalf("%s vs %s: bytes %d, Compare %d", a, b, got, want)
		}
		d, err := HLCFromBytes(a.Bytes())
		if err != nil || d != a {
			t.Fatalf("round trip %s: %s %v", a, d, err)
		}
	}
	if len((HLC{}).Bytes()) != HLCSize {
		t.Fatal("encoding is not 30 bytes")
	}
}

func TestSiteIDText(t *testing.T) {
	s := SiteID{0xfb, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0xff}
	text := s.String()
	if len(text) != 22 {
		t.Fatalf("%q is not 22 characters", text)
	}
	back, err := ParseSiteID(text)
	if err != nil || back != s {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for _, bad := range []string{"", text + "A", text[:21], "+/" + text[2:], text[:20] + "=="} {
		if _, err := ParseSiteID(bad); err == nil {
			t.Errorf("ParseSiteID(%q) accepted", bad)
		}
	}
}

// TestRecordCanonical: the record encoding round-trips and depends only on
// the logical state, not on the order cells were set.
func TestRecordCanonical(t *testing.T) {
	site := SiteID{7}
	h := func(w uint64, op uint32) HLC { return HLC{Wall: w, Site: site, OpSeq: op} }
	cells := []cell{
		{col: "a", val: Int(-5), hlc: h(10, 0)},
		{col: "b", val: Text("x"), hlc: h(10, 1), prior: &cellPrior{val: Text("w"), hlc: h(5, 3)}},
		{col: "c", val: Real(1.5), hlc: h(12, 0)},
		{col: "id", val: Text("k"), hlc: h(10, 2)},
		{col: "j", val: Value{kind: KindJSON, s: `{"a":[1]}`}, hlc: h(12, 1)},
		{col: "z", val: Blob([]byte{0, 255}), hlc: h(9, 0)},
		{col: "t", val: TimestampMillis(-3), hlc: h(9, 1)},
		{col: "n", val: Null, hlc: h(9, 2)},
		{col: "f", val: Bool(false), hlc: h(9, 3)},
	}
	pk := []Value{Text("k")}
	var ref []byte
	for trial := 0; trial < 20; trial++ {
		r := &record{hasTomb: true, tomb: h(8, 0), priorRow: Row{"a": Int(1), "b": Null}}
		perm := rand.Perm(len(cells))
		for _, i := range perm {
			r.set(cells[i])
		}
		enc := encodeRecord(nil, r, pk, []string{"id"})
		if ref == nil {
			ref = enc
		} else if !bytes.Equal(enc, ref) {
			t.Fatalf("encoding depends on insertion order")
		}
		dec, err := decodeRecord(enc, pk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encodeRecord(nil, dec, pk, []string{"id"}), enc) {
			t.Fatal("decode/encode is not the identity")
		}
		if dec.find("id") < 0 || !dec.cells[dec.find("id")].val.Equal(Text("k")) {
			t.Fatal("key cell not restored from the key")
		}
	}
	// Truncations and garbage are errors, never panics.
	for i := 0; i < len(ref); i++ {
		if _, err := decodeRecord(ref[:i], pk); err == nil {
			t.Fatalf("truncated record (%d of %d bytes) decoded", i, len(ref))
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	r := &record{}
	r.set(cell{col: "a", val: Text("x"), hlc: HLC{Wall: 1}})
	f.Add(encodeRecord(nil, r, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b, []Value{Int(1)})
		if err != nil {
			return
		}
		enc := encodeRecord(nil, rec, []Value{Int(1)}, nil)
		if _, err := decodeRecord(enc, []Value{Int(1)}); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}
