//go:build js && wasm

package wire_test

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// The browser's Sealer (seal.WebKeyring, WebCrypto) against the shared
// envelope vectors that the native Keyring produced (seal's
// TestEnvelopeVectors): the same key ids from raw keys and from a
// passphrase, and every envelope opens to its plaintext or fails with its
// code. It lives here, in wire's tests, because only they can embed
// testdata/envelopes.json; it runs in headless Chromium (make
// test-browser).

//go:embed testdata/envelopes.json
var envelopeVectors []byte

type webVectors struct {
	Keys []struct {
		Name, Raw, KeyID string
	} `json:"keys"`
	Passphrases []struct {
		Passphrase string `json:"passphrase"`
		DatabaseID string `json:"databaseId"`
		KeyID      string `json:"keyId"`
	} `json:"passphrases"`
	Envelopes []struct {
		Name          string `json:"name"`
		Raw           string `json:"raw"`
		DatabaseID    string `json:"databaseId"`
		SiteID        string `json:"siteId"`
		TransactionID string `json:"transactionId"`
		HLC           string `json:"hlc"`
		Kind          int    `json:"kind"`
		Cursor        uint64 `json:"cursor"`
		Part          uint32 `json:"part"`
		Last          bool   `json:"last"`
		Plaintext     string `json:"plaintext"`
		Envelope      string `json:"envelope"`
		Error         string `json:"error"`
	} `json:"envelopes"`
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWebCryptoVectors(t *testing.T) {
	var vf webVectors
	if err := json.Unmarshal(envelopeVectors, &vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Keys) == 0 || len(vf.Passphrases) == 0 || len(vf.Envelopes) < 5 {
		t.Fatalf("vectors file too small")
	}
	for _, kv := range vf.Keys {
		k, err := seal.ImportWebKey(unhex(t, kv.Raw))
		if err != nil {
			t.Fatal(err)
		}
		if id := k.ID(); id.String() != kv.KeyID {
			t.Errorf("key %s: id %s, want %s", kv.Name, id, kv.KeyID)
		}
		if k.CryptoKey().Get("extractable").Bool() {
			t.Errorf("key %s: the CryptoKey is extractable", kv.Name)
		}
	}
	for _, pv := range vf.Passphrases {
		k, err := seal.PassphraseWebKey(pv.Passphrase, pv.DatabaseID)
		if err != nil {
			t.Fatal(err)
		}
		if id := k.ID(); id.String() != pv.KeyID {
			t.Errorf("passphrase key id %s, want %s", id, pv.KeyID)
		}
	}
	for _, ev := range vf.Envelopes {
		t.Run(ev.Name, func(t *testing.T) {
			key, err := seal.ImportWebKey(unhex(t, ev.Raw))
			if err != nil {
				t.Fatal(err)
			}
			ring, err := seal.NewWebKeyring(key)
			if err != nil {
				t.Fatal(err)
			}
			site, err := model.ParseSiteID(ev.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			h, err := wire.ParseHLC(ev.HLC)
			if err != nil {
				t.Fatal(err)
			}
			ad := wire.EnvelopeAD{Kind: wire.EnvelopeKind(ev.Kind), DatabaseID: ev.DatabaseID, SiteID: site, TransactionID: ev.TransactionID, HLC: h,
				Cursor: ev.Cursor, Part: ev.Part, Last: ev.Last}
			pt, err := ring.Open(ad, unhex(t, ev.Envelope))
			if ev.Error != "" {
				want := map[string]error{seal.CodeEnvelopeInvalid: seal.ErrEnvelopeInvalid, seal.CodeDecryptFailed: seal.ErrDecryptFailed}[ev.Error]
				if !errors.Is(err, want) {
					t.Fatalf("Open: %v, want %s", err, ev.Error)
				}
				return
			}
			if err != nil || string(pt) != ev.Plaintext {
				t.Fatalf("Open: %q, %v; want %q", pt, err, ev.Plaintext)
			}
			// A fresh envelope of the same plaintext opens, and differs
			// (a new random nonce) from the vector's.
			env, err := ring.Seal(ad, []byte(ev.Plaintext))
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(env) == ev.Envelope || len(env) != len(unhex(t, ev.Envelope)) {
				t.Errorf("Seal: %d bytes, same as the vector: %v", len(env), hex.EncodeToString(env) == ev.Envelope)
			}
			if pt, err := ring.Open(ad, env); err != nil || string(pt) != ev.Plaintext {
				t.Fatalf("Open(Seal): %q, %v", pt, err)
			}
			other := ad
			other.DatabaseID += "x"
			if _, err := ring.Open(other, env); !errors.Is(err, seal.ErrEnvelopeInvalid) {
				t.Errorf("Open under another database: %v, want ENVELOPE_INVALID", err)
			}
		})
	}
}

// TestWebKeyRotation: a WebKeyring seals with its current key and opens
// envelopes of its older ones; one without a key fails DECRYPT_FAILED.
func TestWebKeyRotation(t *testing.T) {
	raw1, raw2 := make([]byte, 32), make([]byte, 32)
	raw2[0] = 1
	k1, err := seal.ImportWebKey(raw1)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := seal.ImportWebKey(raw2)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := seal.NewWebKeyring(k1)
	rotated, _ := seal.NewWebKeyring(k2, k1)
	onlyNew, _ := seal.NewWebKeyring(k2)
	ad := wire.EnvelopeAD{Kind: wire.EnvelopeChangeSet, DatabaseID: "d", SiteID: model.SiteID{1}, TransactionID: "1:0:x"}
	env, err := old.Seal(ad, []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := rotated.Open(ad, env); err != nil || string(pt) != "before" {
		t.Errorf("rotated ring opening an old envelope: %q, %v", pt, err)
	}
	if _, err := onlyNew.Open(ad, env); !errors.Is(err, seal.ErrDecryptFailed) {
		t.Errorf("ring without the old key: %v, want DECRYPT_FAILED", err)
	}
	env2, _ := rotated.Seal(ad, []byte("after"))
	if e, _ := wire.ParseEnvelope(env2); e.KeyID != k2.ID() {
		t.Errorf("rotated ring sealed with %s, want the new key %s", e.KeyID, k2.ID())
	}
	if _, err := old.Open(ad, env2); !errors.Is(err, seal.ErrDecryptFailed) {
		t.Errorf("old ring opening a new envelope: %v, want DECRYPT_FAILED", err)
	}
	// A CryptoKey taken back from a WebKey (as an app keeps it) makes the same key.
	again, err := seal.NewWebKey(k1.ID(), k1.CryptoKey())
	if err != nil {
		t.Fatal(err)
	}
	r, _ := seal.NewWebKeyring(again)
	if pt, err := r.Open(ad, env); err != nil || string(pt) != "before" {
		t.Errorf("NewWebKey of a stored CryptoKey: %q, %v", pt, err)
	}
}
