package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestRecordLive checks that recordLive, which reads only a record's head,
// agrees with decodeRecord(...).visible on random records: with and
// without cells, tombstones, tombstone before-images and cell
// before-images, under both resurrection policies.
func TestRecordLive(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	site := SiteID{1, 2, 3}
	h := func() HLC {
		return HLC{Wall: 1764374400000 + uint64(rng.IntN(5)), Counter: uint16(rng.IntN(3)), Site: site, OpSeq: uint32(rng.IntN(4))}
	}
	vals := []Value{Null, Int(-7), Real(1.5), Text("x"), Bool(true), Blob([]byte{0, 1}), TimestampMillis(3), jsonV(`{"a":1}`)}
	pk := []Value{Text("k1")}
	seen := map[[3]bool]bool{}
	for i := 0; i < 2000; i++ {
		r := &record{}
		for _, c := range []string{"a", "b", "id"}[:rng.IntN(4)] {
			cl := cell{col: c, val: vals[rng.IntN(len(vals))], hlc: h()}
			if c == "id" {
				cl.val = pk[0]
			}
			if rng.IntN(3) == 0 {
				cl.prior = &cellPrior{val: vals[rng.IntN(len(vals))], hlc: h()}
			}
			r.cells = append(r.cells, cl)
		}
		if rng.IntN(2) == 0 {
			r.hasTomb, r.tomb = true, h()
			if rng.IntN(2) == 0 {
				r.priorRow = Row{"a": vals[rng.IntN(len(vals))], "b": vals[rng.IntN(len(vals))]}
			}
		}
		b := encodeRecord(nil, r, pk, []string{"id"})
		for _, allow := range []bool{false, true} {
			dec, err := decodeRecord(b, pk)
			if err != nil {
				t.Fatal(err)
			}
			want := dec.visible(allow)
			got, err := recordLive(b, allow)
			if err != nil {
				t.Fatalf("recordLive: %v", err)
			}
			if got != want {
				t.Fatalf("record %+v, allow %v: recordLive %v, visible %v", r, allow, got, want)
			}
			seen[[3]bool{allow, r.hasTomb, want}] = true
		}
	}
	if len(seen) < 6 {
		t.Fatalf("only %d of the (policy, tombstone, live) cases came up: %v", len(seen), seen)
	}
	for _, b := range [][]byte{nil, {recordVersion}, {9, 0, 0, 0}, {recordVersion, 0, 5}} {
		if _, err := recordLive(b, false); err == nil {
			t.Fatalf("recordLive(%x) accepted a corrupt record", b)
		}
	}
}

// TestInternTable checks interned names read back equal, the same string
// is handed out for the same bytes, and the table stops growing at its
// bound.
func TestInternTable(t *testing.T) {
	it := internTable{m: map[string]string{}}
	a := it.get([]byte("country"))
	b := it.get([]byte("country"))
	if a != "country" || b != "country" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("got %q and %q, not one interned string", a, b)
	}
	long := strings.Repeat("x", maxInternedLen+1)
	if got := it.get([]byte(long)); got != long || len(it.m) != 1 {
		t.Fatalf("a long name: %q, %d entries", got, len(it.m))
	}
	for i := 0; i < 2*maxInterned; i++ {
		n := fmt.Sprintf("c%d", i)
		if got := it.get([]byte(n)); got != n {
			t.Fatalf("got %q, want %q", got, n)
		}
	}
	if len(it.m) != maxInterned {
		t.Fatalf("%d entries, want the bound %d", len(it.m), maxInterned)
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
		{col: "j", val: jsonV(`{"a":[1]}`), hlc: h(12, 1)},
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

// Site ids and HLCs are text in encoding/json and in log/slog's JSON and
// text handlers (issue 10 §11: the relay's JSON logs printed a site id as 16
// numbers), and the text parses back.

func jsonV(s string) Value { return rawValue(KindJSON, s) }
