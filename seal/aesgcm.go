//go:build !js

package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"fmt"

	"github.com/replica-sync/replica/wire"
)

// Key is one AES-256-GCM key of a sealed database with its key id. The
// zero Key is not usable. A Key is safe for concurrent use.
type Key struct {
	id   wire.KeyID
	aead cipher.AEAD
}

// NewKey returns the Key of 32 raw bytes (KeySize; random from
// crypto/rand, or PassphraseKey's). It derives the AES key and the key id
// with HKDF-SHA-256 (see "Keys"); raw is not kept.
func NewKey(raw []byte) (Key, error) {
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("seal: a key is %d bytes, got %d", KeySize, len(raw))
	}
	aesKey, err := hkdf.Key(sha256.New, raw, nil, HKDFInfoAESKey, 32)
	if err != nil {
		return Key{}, fmt.Errorf("seal: deriving the AES key: %w", err)
	}
	idBytes, err := hkdf.Key(sha256.New, raw, nil, HKDFInfoKeyID, wire.EnvelopeKeyIDSize)
	if err != nil {
		return Key{}, fmt.Errorf("seal: deriving the key id: %w", err)
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return Key{}, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("seal: %w", err)
	}
	var id wire.KeyID
	copy(id[:], idBytes)
	return Key{id: id, aead: aead}, nil
}

// GenerateKey returns 32 random bytes from crypto/rand, a new key for
// NewKey. Keep them: Replica stores no key.
func GenerateKey() []byte {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

// PassphraseKey stretches a passphrase into the 32 raw bytes of a key for
// database databaseID: PBKDF2-HMAC-SHA-256 with PBKDF2Iterations
// iterations and salt PassphraseSalt(databaseID). It takes about a second
// of CPU time by design. An empty passphrase is an error.
func PassphraseKey(passphrase, databaseID string) ([]byte, error) {
	if passphrase == "" {
		return nil, fmt.Errorf("seal: empty passphrase")
	}
	if !wire.ValidDatabaseID(databaseID) {
		return nil, fmt.Errorf("seal: invalid database id %q", databaseID)
	}
	return pbkdf2.Key(sha256.New, passphrase, PassphraseSalt(databaseID), PBKDF2Iterations, KeySize)
}

// ID returns the key's id, as envelopes sealed with it carry it.
func (k Key) ID() wire.KeyID { return k.id }

func (k Key) usable() bool { return k.aead != nil }

// seal appends to dst the envelope of plaintext bound to ad, with nonce.
func (k Key) seal(ad wire.EnvelopeAD, nonce [wire.EnvelopeNonceSize]byte, plaintext []byte) ([]byte, error) {
	aad, err := ad.Append(nil, k.id)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := make([]byte, 0, wire.EnvelopeOverhead+len(plaintext))
	out = wire.AppendEnvelopeHeader(out, k.id, nonce)
	return k.aead.Seal(out, nonce[:], plaintext, aad), nil
}

// Keyring is the Go Sealer: a current Key, which seals, and older ones,
// which with it open (see "Rotation"). It is safe for concurrent use.
type Keyring struct {
	keySet[Key]
}

var _ Sealer = (*Keyring)(nil)

// NewKeyring returns a Keyring sealing with current and opening envelopes
// of current and of every older key. Keys must be usable (from NewKey);
// two keys with the same id are the same key and kept once.
func NewKeyring(current Key, older ...Key) (*Keyring, error) {
	s, err := newKeySet("Key", current, older)
	if err != nil {
		return nil, err
	}
	return &Keyring{s}, nil
}

// Seal implements Sealer: the current key, a random 96-bit nonce from
// crypto/rand.
func (r *Keyring) Seal(ad wire.EnvelopeAD, plaintext []byte) ([]byte, error) {
	var nonce [wire.EnvelopeNonceSize]byte
	_, _ = rand.Read(nonce[:])
	return r.current.seal(ad, nonce, plaintext)
}

// Open implements Sealer.
func (r *Keyring) Open(ad wire.EnvelopeAD, envelope []byte) ([]byte, error) {
	k, e, aad, err := r.opening(ad, envelope)
	if err != nil {
		return nil, err
	}
	pt, err := k.aead.Open(nil, e.Nonce[:], e.Sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: key id %s: %w", ErrEnvelopeInvalid, e.KeyID, err)
	}
	return pt, nil
}
