// Package seal seals and opens the envelopes of sealed databases
// (docs/design.md § Sealed databases; the envelope format is wire's
// "Envelopes", the threat model docs/SECURITY.md): every ChangeSet a
// sealed replica pushes leaves the device as an AES-GCM-256 envelope under
// a key the relay never sees, and is opened on the receiving device before
// its apply transaction; devices upload sealed checkpoints, their
// snapshots sealed part by part (SealCheckpointPart, OpenCheckpointPart).
//
// Sealing and opening sit behind Sealer, so that the browser build can seal
// with WebCrypto (asynchronous: a Sealer may block its goroutine while a
// Promise settles; callers never call it inside a kv transaction or from a
// js.FuncOf callback). This file builds for both; the Go implementation,
// Keyring over crypto/aes and crypto/cipher, is native only (aesgcm.go,
// //go:build !js), so that the browser build links no cipher of Go's; the
// browser's, WebKeyring over WebCrypto with non-extractable CryptoKeys, is
// js/wasm only (webcrypto_js.go). Both derive the same key ids and AES
// keys and read and write the same envelopes (wire/testdata/envelopes.json).
//
// # Keys
//
// A key is 32 bytes: random (crypto/rand), or derived from a passphrase
// with PBKDF2-HMAC-SHA-256, PBKDF2Iterations (600,000) iterations, salt
// PassphraseSalt(databaseID) (public, derived from the database id, so the
// relay need store nothing; a passphrase gives another key in every
// database). From the key, HKDF-SHA-256 (RFC 5869, empty salt) derives
// the AES-256 key (info "replica aes-256-gcm v1", 32 bytes) and the key id
// (info "replica key id v1", first 8 bytes), which envelopes carry so a
// device knows which of its keys opens one; the key id reveals nothing of
// the key, but the same key gives the same id in every database.
//
// Replica never sends a key and never stores one: the application keeps it
// (or its passphrase) and gives it to every Connect.
//
// # Rotation
//
// A Keyring holds a current key and older ones: it seals with the current
// key and opens envelopes of any of them. To rotate, give every device the
// new key as current and the old one as older; devices that still seal
// with the old key stay readable. A new device bootstraps from the newest
// sealed checkpoint and the log after it, so the old key can be dropped
// once every device has the new one and a checkpoint uploaded after the
// rotation (sealed with the new key) has let the relay prune the log
// before it. A leaked key stays able to open every envelope sealed with
// it: rotation protects only what is sealed after it (docs/SECURITY.md).
package seal

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Key derivation parameters (see "Keys"). The browser implementation must
// use the same.
const (
	// KeySize is the length of a key in bytes (AES-256).
	KeySize = 32
	// PBKDF2Iterations is the PBKDF2-HMAC-SHA-256 iteration count for a
	// passphrase (OWASP's 2023 figure for PBKDF2-SHA-256).
	PBKDF2Iterations = 600_000
	// PassphraseSaltPrefix starts a passphrase's salt; the database id
	// follows.
	PassphraseSaltPrefix = "replica passphrase v1 "
	// HKDFInfoAESKey and HKDFInfoKeyID are the HKDF-SHA-256 info strings
	// of the AES-256 key and of the key id.
	HKDFInfoAESKey = "replica aes-256-gcm v1"
	HKDFInfoKeyID  = "replica key id v1"
	// MaxEnvelopesPerKey is how many envelopes one key may seal with
	// random 96-bit nonces (NIST SP 800-38D § 8.3: at most 2^32
	// invocations, keeping the chance of a repeated nonce below 2^-32),
	// counted over every device sealing with the key. Replica does not
	// count them; rotate keys well before (see "Rotation").
	MaxEnvelopesPerKey = 1 << 32
)

// PassphraseSalt returns the PBKDF2 salt of a passphrase for database
// databaseID: PassphraseSaltPrefix followed by the database id, as bytes.
func PassphraseSalt(databaseID string) []byte {
	return []byte(PassphraseSaltPrefix + databaseID)
}

// Errors of opening an envelope. Error values wrap one of them
// (errors.Is).
var (
	// ErrDecryptFailed (code DECRYPT_FAILED) is returned when no key of
	// the Sealer opens an envelope: its key id names none of them (a
	// wrong key was given, or a key another device rotated to was not
	// given yet), or its version is newer than this build. The envelope
	// is sound as far as can be told; a client holds it until the right
	// key is given.
	ErrDecryptFailed = errors.New("DECRYPT_FAILED: no key given opens the envelope")
	// ErrEnvelopeInvalid (code ENVELOPE_INVALID) is returned when an
	// envelope names a key the Sealer holds but does not authenticate
	// (altered on the way, or moved to another database, site,
	// transaction or HLC than its associated data binds), is too short,
	// or opens to something other than the ChangeSet it stands for. A
	// client refuses it and reports it.
	ErrEnvelopeInvalid = errors.New("ENVELOPE_INVALID: the envelope does not authenticate")
)

// Codes of the errors above, as they appear in reports (jsbridge's error
// codes).
const (
	CodeDecryptFailed   = "DECRYPT_FAILED"
	CodeEnvelopeInvalid = "ENVELOPE_INVALID"
)

// Sealer seals and opens envelopes (wire's "Envelopes"). Implementations
// are safe for concurrent use. Seal and Open may block (the browser's
// awaits WebCrypto): call them outside kv transactions, from a goroutine.
type Sealer interface {
	// Seal returns a new envelope of plaintext bound to ad, under the
	// current key, with a fresh random nonce. The caller owns the result.
	Seal(ad wire.EnvelopeAD, plaintext []byte) ([]byte, error)
	// Open returns the plaintext of envelope, which must be bound to ad.
	// Errors wrap ErrDecryptFailed (no key opens it) or
	// ErrEnvelopeInvalid (it does not authenticate).
	Open(ad wire.EnvelopeAD, envelope []byte) ([]byte, error)
	// KeyIDs returns the ids of the keys it opens envelopes of, the
	// current key's (the one Seal uses) first. A client compares them
	// with the key ids its sealed database is known to use before it
	// pushes anything sealed (client's "Sealed databases").
	KeyIDs() []wire.KeyID
}

// SealChangeSet returns cs (plain) as a sealed ChangeSet of database
// databaseID: its site id, transactionId and HLC, and the envelope of its
// binary wire form (wire.MarshalChangeSetBinary, protocol version 14;
// before, its JSON form) bound to them.
func SealChangeSet(s Sealer, databaseID string, cs *model.ChangeSet) (model.ChangeSet, error) {
	if cs.Sealed() {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s is sealed already", cs.TransactionID)
	}
	js, err := wire.MarshalChangeSetBinary(cs)
	if err != nil {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s: %w", cs.TransactionID, err)
	}
	env, err := s.Seal(wire.ChangeSetAD(databaseID, cs), js)
	if err != nil {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s: %w", cs.TransactionID, err)
	}
	return model.ChangeSet{SiteID: cs.SiteID, TransactionID: cs.TransactionID, HLC: cs.HLC, Envelope: env}, nil
}

// OpenChangeSet returns the plain ChangeSet a sealed ChangeSet of database
// databaseID stands for. The plaintext is the ChangeSet's binary wire form
// (sealed since protocol version 14) or its JSON form (sealed before, kept
// by relays and in checkpoints): JSON starts with '{', the binary form
// with a flags byte below 8. The opened ChangeSet must carry the sealed one's
// site id, transactionId and HLC. Errors wrap ErrDecryptFailed or
// ErrEnvelopeInvalid, and name the transaction.
func OpenChangeSet(s Sealer, databaseID string, cs *model.ChangeSet) (model.ChangeSet, error) {
	if !cs.Sealed() {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s of site %s is not sealed: %w", cs.TransactionID, cs.SiteID, ErrEnvelopeInvalid)
	}
	js, err := s.Open(wire.ChangeSetAD(databaseID, cs), cs.Envelope)
	if err != nil {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s of site %s: %w", cs.TransactionID, cs.SiteID, err)
	}
	var in model.ChangeSet
	if len(js) > 0 && js[0] == '{' {
		in, err = wire.UnmarshalChangeSet(js)
	} else {
		in, err = wire.UnmarshalChangeSetBinary(js)
	}
	if err != nil {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s of site %s opens to no ChangeSet (%v): %w", cs.TransactionID, cs.SiteID, err, ErrEnvelopeInvalid)
	}
	if in.Sealed() || in.SiteID != cs.SiteID || in.TransactionID != cs.TransactionID || in.HLC != cs.HLC {
		return model.ChangeSet{}, fmt.Errorf("seal: ChangeSet %s of site %s opens to another ChangeSet (%s of site %s): %w",
			cs.TransactionID, cs.SiteID, in.TransactionID, in.SiteID, ErrEnvelopeInvalid)
	}
	return in, nil
}

// SealCheckpointPart fills p.Envelope with the envelope of chunk, one
// chunk of a snapshot stream, as part p.Part of the sealed checkpoint
// p describes (database databaseID): the plaintext is the chunk's
// snapshot_chunk frame (wire.EncodeSnapshotChunk), bound to p's checkpoint id, site id,
// HLC, cursor, part number and last flag (wire's "Envelopes", kind 2).
func SealCheckpointPart(s Sealer, databaseID string, p *wire.CheckpointPart, chunk model.SnapshotChunk) error {
	frame, err := wire.EncodeSnapshotChunk(chunk)
	if err != nil {
		return fmt.Errorf("seal: checkpoint %s part %d: %w", p.CheckpointID, p.Part, err)
	}
	env, err := s.Seal(wire.CheckpointAD(databaseID, p), frame)
	if err != nil {
		return fmt.Errorf("seal: checkpoint %s part %d: %w", p.CheckpointID, p.Part, err)
	}
	p.Envelope = env
	return nil
}

// OpenCheckpointPart returns the snapshot chunk part p of a sealed
// checkpoint of database databaseID seals. Errors wrap ErrDecryptFailed
// or ErrEnvelopeInvalid (which also covers a plaintext that is not a
// snapshot_chunk frame).
func OpenCheckpointPart(s Sealer, databaseID string, p *wire.CheckpointPart) (model.SnapshotChunk, error) {
	frame, err := s.Open(wire.CheckpointAD(databaseID, p), p.Envelope)
	if err != nil {
		return model.SnapshotChunk{}, fmt.Errorf("seal: checkpoint %s part %d: %w", p.CheckpointID, p.Part, err)
	}
	m, err := wire.DecodeServer(frame)
	sc, ok := m.(*wire.SnapshotChunk)
	if err != nil || !ok {
		return model.SnapshotChunk{}, fmt.Errorf("seal: checkpoint %s part %d opens to no snapshot chunk (%v): %w", p.CheckpointID, p.Part, err, ErrEnvelopeInvalid)
	}
	return sc.Chunk, nil
}
