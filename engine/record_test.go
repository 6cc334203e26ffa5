package engine

import (
	"math/rand/v2"
	"testing"
	"time"
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
