//go:build !js

package seal_test

import (
	"fmt"
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// benchChangeSet is one row of the GeoNames cities shape (a UUIDv7-like id
// and six columns) as a ChangeSet: about 1.2 KB on the wire.
func benchChangeSet() model.ChangeSet {
	site := model.SiteID{7, 7, 7}
	base := model.HLC{Wall: 1764374400000, Site: site}
	pk := []model.Value{model.Text("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")}
	cols := []struct {
		name string
		v    model.Value
	}{{"id", pk[0]}, {"name", model.Text("Lisboa")}, {"lat", model.Real(38.71667)}, {"lon", model.Real(-9.13333)},
		{"country", model.Text("PT")}, {"admin", model.Text("14")}, {"tz", model.Text("Europe/Lisbon")}}
	cs := model.ChangeSet{SiteID: site, TransactionID: base.TransactionID()}
	for i, c := range cols {
		h := base
		h.OpSeq = uint32(i)
		cs.Changes = append(cs.Changes, model.Change{Type: model.ColumnChange, Table: "cities", PK: pk, Column: c.name, Value: c.v, HLC: h})
		cs.HLC = h
	}
	return cs
}

// BenchmarkSealChangeSet and BenchmarkOpenChangeSet measure what sealing
// adds to a push and to an apply, per ChangeSet (wire form, AES-256-GCM).
func BenchmarkSealChangeSet(b *testing.B) {
	ring := benchRing(b)
	cs := benchChangeSet()
	js, _ := wire.MarshalChangeSet(&cs)
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		if _, err := seal.SealChangeSet(ring, "bench", &cs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenChangeSet(b *testing.B) {
	ring := benchRing(b)
	cs := benchChangeSet()
	sealed, err := seal.SealChangeSet(ring, "bench", &cs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(sealed.Envelope)))
	for b.Loop() {
		if _, err := seal.OpenChangeSet(ring, "bench", &sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassphraseKey measures PBKDF2-SHA-256 at 600,000 iterations.
func BenchmarkPassphraseKey(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		if _, err := seal.PassphraseKey(fmt.Sprint("passphrase ", i), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRing(b *testing.B) *seal.Keyring {
	k, err := seal.NewKey(seal.GenerateKey())
	if err != nil {
		b.Fatal(err)
	}
	r, err := seal.NewKeyring(k)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
