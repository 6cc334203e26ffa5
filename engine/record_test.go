package engine

import (
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
	vals := []Value{Null, Int(-7), Real(1.5), Text("x"), Bool(true), Blob([]byte{0, 1}), TimestampMillis(3), Value{kind: KindJSON, s: `{"a":1}`}}
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
