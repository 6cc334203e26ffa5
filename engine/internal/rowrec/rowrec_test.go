package rowrec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/replica-sync/replica/model"
)

// TestRecordLive checks that recordLive, which reads only a record's head,
// agrees with decodeRecord(...).visible on random records: with and
// without cells, tombstones, tombstone before-images and cell
// before-images, under both resurrection policies.
func TestRecordLive(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	site := model.SiteID{1, 2, 3}
	h := func() model.HLC {
		return model.HLC{Wall: 1764374400000 + uint64(rng.IntN(5)), Counter: uint16(rng.IntN(3)), Site: site, OpSeq: uint32(rng.IntN(4))}
	}
	vals := []model.Value{model.Null, model.Int(-7), model.Real(1.5), model.Text("x"), model.Bool(true), model.Blob([]byte{0, 1}), model.TimestampMillis(3), jsonV(`{"a":1}`)}
	pk := []model.Value{model.Text("k1")}
	seen := map[[3]bool]bool{}
	for i := 0; i < 2000; i++ {
		r := &Record{}
		for _, c := range []string{"a", "b", "id"}[:rng.IntN(4)] {
			cl := Cell{Col: c, Val: vals[rng.IntN(len(vals))], HLC: h()}
			if c == "id" {
				cl.Val = pk[0]
			}
			if rng.IntN(3) == 0 {
				cl.Prior = &Prior{Val: vals[rng.IntN(len(vals))], HLC: h()}
			}
			r.Cells = append(r.Cells, cl)
		}
		if rng.IntN(2) == 0 {
			r.HasTomb, r.Tomb = true, h()
			if rng.IntN(2) == 0 {
				r.PriorRow = model.Row{"a": vals[rng.IntN(len(vals))], "b": vals[rng.IntN(len(vals))]}
			}
		}
		b := Encode(nil, r, pk, []string{"id"})
		for _, allow := range []bool{false, true} {
			dec, err := Decode(b, pk)
			if err != nil {
				t.Fatal(err)
			}
			want := dec.Visible(allow)
			got, err := Live(b, allow)
			if err != nil {
				t.Fatalf("recordLive: %v", err)
			}
			if got != want {
				t.Fatalf("record %+v, allow %v: recordLive %v, visible %v", r, allow, got, want)
			}
			seen[[3]bool{allow, r.HasTomb, want}] = true
		}
	}
	if len(seen) < 6 {
		t.Fatalf("only %d of the (policy, tombstone, live) cases came up: %v", len(seen), seen)
	}
	for _, b := range [][]byte{nil, {recordVersion}, {9, 0, 0, 0}, {recordVersion, 0, 5}} {
		if _, err := Live(b, false); err == nil {
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
	site := model.SiteID{7}
	h := func(w uint64, op uint32) model.HLC { return model.HLC{Wall: w, Site: site, OpSeq: op} }
	cells := []Cell{
		{Col: "a", Val: model.Int(-5), HLC: h(10, 0)},
		{Col: "b", Val: model.Text("x"), HLC: h(10, 1), Prior: &Prior{Val: model.Text("w"), HLC: h(5, 3)}},
		{Col: "c", Val: model.Real(1.5), HLC: h(12, 0)},
		{Col: "id", Val: model.Text("k"), HLC: h(10, 2)},
		{Col: "j", Val: jsonV(`{"a":[1]}`), HLC: h(12, 1)},
		{Col: "z", Val: model.Blob([]byte{0, 255}), HLC: h(9, 0)},
		{Col: "t", Val: model.TimestampMillis(-3), HLC: h(9, 1)},
		{Col: "n", Val: model.Null, HLC: h(9, 2)},
		{Col: "f", Val: model.Bool(false), HLC: h(9, 3)},
	}
	pk := []model.Value{model.Text("k")}
	var ref []byte
	for trial := 0; trial < 20; trial++ {
		r := &Record{HasTomb: true, Tomb: h(8, 0), PriorRow: model.Row{"a": model.Int(1), "b": model.Null}}
		perm := rand.Perm(len(cells))
		for _, i := range perm {
			r.Set(cells[i])
		}
		enc := Encode(nil, r, pk, []string{"id"})
		if ref == nil {
			ref = enc
		} else if !bytes.Equal(enc, ref) {
			t.Fatalf("encoding depends on insertion order")
		}
		dec, err := Decode(enc, pk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(Encode(nil, dec, pk, []string{"id"}), enc) {
			t.Fatal("decode/encode is not the identity")
		}
		if dec.Find("id") < 0 || !dec.Cells[dec.Find("id")].Val.Equal(model.Text("k")) {
			t.Fatal("key cell not restored from the key")
		}
	}
	// Truncations and garbage are errors, never panics.
	for i := 0; i < len(ref); i++ {
		if _, err := Decode(ref[:i], pk); err == nil {
			t.Fatalf("truncated record (%d of %d bytes) decoded", i, len(ref))
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	r := &Record{}
	r.Set(Cell{Col: "a", Val: model.Text("x"), HLC: model.HLC{Wall: 1}})
	f.Add(Encode(nil, r, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b, []model.Value{model.Int(1)})
		if err != nil {
			return
		}
		enc := Encode(nil, rec, []model.Value{model.Int(1)}, nil)
		if _, err := Decode(enc, []model.Value{model.Int(1)}); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func jsonV(s string) model.Value { return rawValue(model.KindJSON, s) }
