//go:build !js

package seal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Bad input to the opener: every field the associated data binds, moved;
// envelopes truncated, extended, of another version or kind; a ChangeSet
// whose inside is not the ChangeSet it travels as.

func testRing(t *testing.T, b byte) *Keyring {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testChangeSet(site model.SiteID, wall uint64) model.ChangeSet {
	h := model.HLC{Wall: wall, Site: site, OpSeq: 1}
	pk := []model.Value{model.Text("r1")}
	return model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h, Changes: []model.Change{
		{Type: model.ColumnChange, Table: "t", PK: pk, Column: "id", Value: model.Text("r1"), HLC: model.HLC{Wall: wall, Site: site, OpSeq: 0}},
		{Type: model.ColumnChange, Table: "t", PK: pk, Column: "v", Value: model.Text("secret"), HLC: h},
	}}
}

// TestOpenRefusesMovedEnvelopes: an envelope opens only under the exact
// associated data it was sealed with: any field changed (database, site,
// transaction or checkpoint id, HLC, kind, cursor, part, last) gives
// ErrEnvelopeInvalid, never a plaintext.
func TestOpenRefusesMovedEnvelopes(t *testing.T) {
	r := testRing(t, 1)
	site := model.SiteID{1, 2, 3}
	other := model.SiteID{9, 9, 9}
	h := model.HLC{Wall: 1764374400000, Site: site, OpSeq: 3}
	base := []wire.EnvelopeAD{
		{Kind: wire.EnvelopeChangeSet, DatabaseID: "vault", SiteID: site, TransactionID: h.TransactionID(), HLC: h},
		{Kind: wire.EnvelopeCheckpoint, DatabaseID: "vault", SiteID: site, TransactionID: "c41-00", HLC: h, Cursor: 41, Part: 2, Last: false},
	}
	moves := map[string]func(a *wire.EnvelopeAD){
		"database":       func(a *wire.EnvelopeAD) { a.DatabaseID = "vault2" },
		"database case":  func(a *wire.EnvelopeAD) { a.DatabaseID = "Vault" },
		"site":           func(a *wire.EnvelopeAD) { a.SiteID = other },
		"transaction id": func(a *wire.EnvelopeAD) { a.TransactionID += "x" },
		"hlc wall":       func(a *wire.EnvelopeAD) { a.HLC.Wall++ },
		"hlc counter":    func(a *wire.EnvelopeAD) { a.HLC.Counter++ },
		"hlc opSeq":      func(a *wire.EnvelopeAD) { a.HLC.OpSeq++ },
		"hlc site":       func(a *wire.EnvelopeAD) { a.HLC.Site = other },
		"kind": func(a *wire.EnvelopeAD) {
			a.Kind = map[wire.EnvelopeKind]wire.EnvelopeKind{wire.EnvelopeChangeSet: wire.EnvelopeCheckpoint, wire.EnvelopeCheckpoint: wire.EnvelopeChangeSet}[a.Kind]
		},
		"cursor":   func(a *wire.EnvelopeAD) { a.Cursor++ },
		"part":     func(a *wire.EnvelopeAD) { a.Part++ },
		"last":     func(a *wire.EnvelopeAD) { a.Last = !a.Last },
		"part max": func(a *wire.EnvelopeAD) { a.Part = 1<<32 - 1 },
	}
	for _, ad := range base {
		env, err := r.Seal(ad, []byte("plaintext"))
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := r.Open(ad, env); err != nil || string(pt) != "plaintext" {
			t.Fatalf("kind %d: the untouched envelope: %q, %v", ad.Kind, pt, err)
		}
		for name, move := range moves {
			moved := ad
			move(&moved)
			if moved == ad {
				continue // a checkpoint-only field of a ChangeSet: not bound, and not changed
			}
			if ad.Kind == wire.EnvelopeChangeSet && moved.Kind == wire.EnvelopeChangeSet && (name == "cursor" || name == "part" || name == "last" || name == "part max") {
				continue // ChangeSet envelopes do not bind these (they have none)
			}
			pt, err := r.Open(moved, env)
			if !errors.Is(err, ErrEnvelopeInvalid) || pt != nil {
				t.Errorf("kind %d moved (%s): %q, %v; want ErrEnvelopeInvalid", ad.Kind, name, pt, err)
			}
		}
	}
}

// TestOpenMalformedEnvelopes: truncated, extended, bit-flipped, of another
// version: refused with the right error, never a panic or a plaintext.
func TestOpenMalformedEnvelopes(t *testing.T) {
	r := testRing(t, 2)
	site := model.SiteID{4}
	h := model.HLC{Wall: 1764374400000, Site: site}
	ad := wire.EnvelopeAD{Kind: wire.EnvelopeChangeSet, DatabaseID: "vault", SiteID: site, TransactionID: h.TransactionID(), HLC: h}
	env, err := r.Seal(ad, bytes.Repeat([]byte("x"), 100))
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 100+wire.EnvelopeOverhead || env[0] != wire.EnvelopeVersion {
		t.Fatalf("envelope of %d bytes, version %d", len(env), env[0])
	}
	for n := 0; n < len(env); n++ {
		if pt, err := r.Open(ad, env[:n]); !errors.Is(err, ErrEnvelopeInvalid) || pt != nil {
			t.Fatalf("truncated to %d bytes: %q, %v; want ErrEnvelopeInvalid", n, pt, err)
		}
	}
	if _, err := r.Open(ad, append(append([]byte(nil), env...), 0)); !errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("one byte appended: %v", err)
	}
	for i := wire.EnvelopeHeaderSize - wire.EnvelopeNonceSize; i < len(env); i++ { // nonce, ciphertext, tag
		bad := append([]byte(nil), env...)
		bad[i] ^= 0x01
		if pt, err := r.Open(ad, bad); !errors.Is(err, ErrEnvelopeInvalid) || pt != nil {
			t.Fatalf("bit flipped at byte %d: %q, %v; want ErrEnvelopeInvalid", i, pt, err)
		}
	}
	for _, v := range []byte{0, 2, 0xff} {
		bad := append([]byte(nil), env...)
		bad[0] = v
		if _, err := r.Open(ad, bad); !errors.Is(err, ErrDecryptFailed) {
			t.Fatalf("version %d: %v; want ErrDecryptFailed (a newer peer's, held)", v, err)
		}
	}
	// Another key's envelope: DECRYPT_FAILED, not ENVELOPE_INVALID.
	other, err := testRing(t, 3).Seal(ad, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ad, other); !errors.Is(err, ErrDecryptFailed) || errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("another key's envelope: %v; want ErrDecryptFailed only", err)
	}
}

// TestSealNonces: every envelope gets a fresh nonce (random; never the
// same twice in many), under the current key's id.
func TestSealNonces(t *testing.T) {
	r := testRing(t, 5)
	site := model.SiteID{5}
	h := model.HLC{Wall: 1764374400000, Site: site}
	ad := wire.EnvelopeAD{Kind: wire.EnvelopeChangeSet, DatabaseID: "vault", SiteID: site, TransactionID: h.TransactionID(), HLC: h}
	seen := map[[wire.EnvelopeNonceSize]byte]bool{}
	var zero [wire.EnvelopeNonceSize]byte
	for range 20000 {
		env, err := r.Seal(ad, []byte("same plaintext"))
		if err != nil {
			t.Fatal(err)
		}
		e, err := wire.ParseEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		if e.KeyID != r.Current() {
			t.Fatalf("sealed under key id %s, the current is %s", e.KeyID, r.Current())
		}
		if e.Nonce == zero || seen[e.Nonce] {
			t.Fatalf("nonce %x repeated (or zero) after %d envelopes", e.Nonce, len(seen))
		}
		seen[e.Nonce] = true
	}
}

// TestOpenChangeSetIdentity: a ChangeSet opens only to itself. An
// envelope whose inside names another transaction, site or HLC than the
// visible members it travels under (only a key holder can seal one),
// nests another envelope, or is no ChangeSet at all is refused
// (ErrEnvelopeInvalid); so is a plaintext ChangeSet where an envelope is
// due, and one opened as another database's.
func TestOpenChangeSetIdentity(t *testing.T) {
	r := testRing(t, 6)
	site := model.SiteID{6}
	cs := testChangeSet(site, 1764374400000)
	sealed, err := SealChangeSet(r, "vault", &cs)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := OpenChangeSet(r, "vault", &sealed); err != nil || got.TransactionID != cs.TransactionID || len(got.Changes) != 2 {
		t.Fatalf("OpenChangeSet: %+v, %v", got, err)
	}
	if _, err := OpenChangeSet(r, "vault2", &sealed); !errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("opened as another database's: %v", err)
	}
	if _, err := OpenChangeSet(r, "vault", &cs); !errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("a plaintext ChangeSet where an envelope is due: %v", err)
	}
	if _, err := SealChangeSet(r, "vault", &sealed); err == nil {
		t.Fatal("SealChangeSet sealed a sealed ChangeSet")
	}

	// A key holder seals a ChangeSet whose inside differs from the
	// visible members it travels under (the associated data binds the
	// visible ones): refused at the opener.
	inner := testChangeSet(site, 1764374400001) // another transaction
	js, err := wire.MarshalChangeSet(&inner)
	if err != nil {
		t.Fatal(err)
	}
	sealAs := func(visible *model.ChangeSet, plaintext []byte) model.ChangeSet {
		env, err := r.Seal(wire.ChangeSetAD("vault", visible), plaintext)
		if err != nil {
			t.Fatal(err)
		}
		return model.ChangeSet{SiteID: visible.SiteID, TransactionID: visible.TransactionID, HLC: visible.HLC, Envelope: env}
	}
	nested, err := wire.MarshalChangeSet(&sealed)
	if err != nil {
		t.Fatal(err)
	}
	otherSite := testChangeSet(model.SiteID{7}, cs.HLC.Wall)
	otherSiteJS, _ := wire.MarshalChangeSet(&otherSite)
	bin := func(cs *model.ChangeSet) []byte {
		b, err := wire.MarshalChangeSetBinary(cs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, pt := range map[string][]byte{
		"another transaction":          js,
		"another site":                 otherSiteJS,
		"a nested envelope":            nested,
		"no ChangeSet":                 []byte(`{"type":"ping"}`),
		"empty":                        nil,
		"another transaction (binary)": bin(&inner),
		"another site (binary)":        bin(&otherSite),
		"a nested envelope (binary)":   bin(&sealed),
		"a cut binary ChangeSet":       bin(&cs)[:40],
		"bytes":                        {0x07, 1, 2, 3},
	} {
		bad := sealAs(&cs, pt)
		if got, err := OpenChangeSet(r, "vault", &bad); !errors.Is(err, ErrEnvelopeInvalid) {
			t.Errorf("inside %s: %+v, %v; want ErrEnvelopeInvalid", name, got, err)
		}
	}
}

// TestOpenChangeSetForms: SealChangeSet seals the binary form (protocol
// version 14), and an envelope of the JSON form, as sealed before and
// stored by relays and in checkpoints, opens to the same ChangeSet.
func TestOpenChangeSetForms(t *testing.T) {
	r := testRing(t, 9)
	cs := testChangeSet(model.SiteID{9}, 1764374400000)
	sealed, err := SealChangeSet(r, "vault", &cs)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := r.Open(wire.ChangeSetAD("vault", &sealed), sealed.Envelope)
	if err != nil || len(pt) == 0 || pt[0] == '{' {
		t.Fatalf("the sealed plaintext is not the binary form: %q %v", pt, err)
	}
	fromBinary, err := OpenChangeSet(r, "vault", &sealed)
	if err != nil {
		t.Fatal(err)
	}
	js, err := wire.MarshalChangeSet(&cs)
	if err != nil {
		t.Fatal(err)
	}
	env, err := r.Seal(wire.ChangeSetAD("vault", &cs), js)
	if err != nil {
		t.Fatal(err)
	}
	old := model.ChangeSet{SiteID: cs.SiteID, TransactionID: cs.TransactionID, HLC: cs.HLC, Envelope: env}
	fromJSON, err := OpenChangeSet(r, "vault", &old)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := wire.MarshalChangeSet(&fromBinary)
	b, _ := wire.MarshalChangeSet(&fromJSON)
	if string(a) != string(js) || string(b) != string(js) {
		t.Fatalf("opened forms differ:\n%s\n%s\n%s", a, b, js)
	}
	if len(sealed.Envelope) >= len(env) {
		t.Errorf("binary envelope %d bytes, JSON envelope %d", len(sealed.Envelope), len(env))
	}
}

// TestOpenCheckpointPartKinds: a checkpoint part opens only to a
// snapshot_chunk frame, and a ChangeSet's envelope never opens as a part.
func TestOpenCheckpointPartKinds(t *testing.T) {
	r := testRing(t, 8)
	site := model.SiteID{8}
	cs := testChangeSet(site, 1764374400000)
	p := &wire.CheckpointPart{CheckpointID: cs.TransactionID, SiteID: site, HLC: cs.HLC, Cursor: 0, Part: 0}
	sealed, err := SealChangeSet(r, "vault", &cs)
	if err != nil {
		t.Fatal(err)
	}
	p.Envelope = sealed.Envelope
	if _, err := OpenCheckpointPart(r, "vault", p); !errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("a ChangeSet's envelope as a checkpoint part: %v", err)
	}
	env, err := r.Seal(wire.CheckpointAD("vault", p), []byte(`{"type":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	p.Envelope = env
	if _, err := OpenCheckpointPart(r, "vault", p); !errors.Is(err, ErrEnvelopeInvalid) {
		t.Fatalf("a part sealing another frame than snapshot_chunk: %v", err)
	}
	footer := model.SnapshotChunk{Type: model.ChunkFooter, Footer: &model.SnapshotFooter{Tables: 1, Rows: 2}}
	p.Last = true
	if err := SealCheckpointPart(r, "vault", p, footer); err != nil {
		t.Fatal(err)
	}
	if got, err := OpenCheckpointPart(r, "vault", p); err != nil || got.Type != model.ChunkFooter || got.Footer.Rows != 2 {
		t.Fatalf("OpenCheckpointPart: %+v, %v", got, err)
	}
}
