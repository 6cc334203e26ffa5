package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/replica-sync/replica/model"
)

// The envelope layout ("Envelopes" in the package documentation). This file
// holds the byte layout only, no cryptography: package seal seals and opens
// envelopes (natively with Go's crypto/aes and crypto/cipher; in the
// browser with WebCrypto: seal.WebKeyring), so the browser build of wire links no
// cipher.
const (
	// EnvelopeVersion is the first byte of every envelope this version
	// writes and the only one it opens.
	EnvelopeVersion = 1
	// EnvelopeKeyIDSize is the length in bytes of an envelope's key id.
	EnvelopeKeyIDSize = 8
	// EnvelopeNonceSize is the length in bytes of an envelope's AES-GCM
	// nonce (96 bits, random per envelope).
	EnvelopeNonceSize = 12
	// EnvelopeTagSize is the length in bytes of the AES-GCM tag that ends
	// an envelope.
	EnvelopeTagSize = 16
	// EnvelopeHeaderSize is the length of the header before the
	// ciphertext: version, key id, nonce.
	EnvelopeHeaderSize = 1 + EnvelopeKeyIDSize + EnvelopeNonceSize
	// EnvelopeOverhead is what an envelope adds to its plaintext: header
	// and tag, 37 bytes. An envelope is never shorter.
	EnvelopeOverhead = EnvelopeHeaderSize + EnvelopeTagSize
)

// EnvelopeADLabel opens every envelope's associated data (16 ASCII bytes).
const EnvelopeADLabel = "replica-envelope"

// EnvelopeKind says what an envelope seals; it is part of the associated
// data, so an envelope of one kind never opens as another.
type EnvelopeKind byte

const (
	// EnvelopeChangeSet seals one ChangeSet's wire form.
	EnvelopeChangeSet EnvelopeKind = 1
	// EnvelopeCheckpoint seals one part of a sealed checkpoint: the frame
	// of one snapshot_chunk of the uploader's snapshot.
	EnvelopeCheckpoint EnvelopeKind = 2
)

// KeyID names a key in an envelope without revealing it: the first 8 bytes
// of HKDF-SHA-256 of the key (see "Envelopes"). The zero KeyID names none.
type KeyID [EnvelopeKeyIDSize]byte

// String returns the key id as 16 lower-case hex digits.
func (k KeyID) String() string { return fmt.Sprintf("%x", k[:]) }

// EnvelopeAD is what an envelope's associated data binds it to: the
// database, and the ChangeSet's site id, transactionId and HLC as they
// travel visibly beside the envelope. An envelope moved to another
// database, re-attributed to another site or transaction, or given another
// HLC does not open.
//
// A sealed checkpoint's part (Kind EnvelopeCheckpoint) is bound to the
// uploader's site id, the checkpoint's id (in TransactionID), its HLC, and
// besides to its cursor, its part number and whether it is the last part,
// so that parts cannot be reordered, dropped, repeated, truncated at the
// end, or moved to another cursor or checkpoint.
type EnvelopeAD struct {
	Kind          EnvelopeKind
	DatabaseID    string
	SiteID        model.SiteID
	TransactionID string
	HLC           model.HLC
	// Checkpoint parts only (Kind EnvelopeCheckpoint).
	Cursor uint64
	Part   uint32
	Last   bool
}

// ChangeSetAD returns the associated data fields of a (sealed or plain)
// ChangeSet of database databaseID.
func ChangeSetAD(databaseID string, cs *model.ChangeSet) EnvelopeAD {
	return EnvelopeAD{Kind: EnvelopeChangeSet, DatabaseID: databaseID, SiteID: cs.SiteID, TransactionID: cs.TransactionID, HLC: cs.HLC}
}

// ErrEnvelope is matched (errors.Is) by every error of ParseEnvelope and
// EnvelopeAD.Append.
var ErrEnvelope = errors.New("wire: invalid envelope")

// Append appends the associated data of an envelope with key id keyID
// bound to a: the label "replica-envelope", the version byte, the kind
// byte, the key id (8), the database id (2-byte big-endian length, then its
// bytes), the site id (16), the transactionId (2-byte big-endian length,
// then its UTF-8), the HLC (30 bytes, model.HLC.Bytes). It fails (matching
// ErrEnvelope) on an invalid database id, an empty transactionId or one
// longer than 65535 bytes, or one that is not UTF-8.
func (a EnvelopeAD) Append(b []byte, keyID KeyID) ([]byte, error) {
	if !ValidDatabaseID(a.DatabaseID) {
		return b, fmt.Errorf("%w: database id %q", ErrEnvelope, a.DatabaseID)
	}
	if a.TransactionID == "" || len(a.TransactionID) > 0xffff || !utf8.ValidString(a.TransactionID) {
		return b, fmt.Errorf("%w: transactionId %q", ErrEnvelope, a.TransactionID)
	}
	b = append(b, EnvelopeADLabel...)
	b = append(b, EnvelopeVersion, byte(a.Kind))
	b = append(b, keyID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.DatabaseID)))
	b = append(b, a.DatabaseID...)
	b = append(b, a.SiteID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.TransactionID)))
	b = append(b, a.TransactionID...)
	var h [model.HLCSize]byte
	a.HLC.Put(h[:])
	b = append(b, h[:]...)
	if a.Kind == EnvelopeCheckpoint {
		b = binary.BigEndian.AppendUint64(b, a.Cursor)
		b = binary.BigEndian.AppendUint32(b, a.Part)
		last := byte(0)
		if a.Last {
			last = 1
		}
		b = append(b, last)
	}
	return b, nil
}

// CheckpointAD returns the associated data fields of part p of a sealed
// checkpoint of database databaseID.
func CheckpointAD(databaseID string, p *CheckpointPart) EnvelopeAD {
	return EnvelopeAD{Kind: EnvelopeCheckpoint, DatabaseID: databaseID, SiteID: p.SiteID, TransactionID: p.CheckpointID,
		HLC: p.HLC, Cursor: p.Cursor, Part: p.Part, Last: p.Last}
}

// Envelope is an envelope taken apart (ParseEnvelope). Sealed is the
// AES-GCM ciphertext followed by its tag; it aliases the parsed bytes.
type Envelope struct {
	Version byte
	KeyID   KeyID
	Nonce   [EnvelopeNonceSize]byte
	Sealed  []byte
}

// ParseEnvelope splits an envelope into its header and sealed part:
//
//	version (1) ‖ key id (8) ‖ nonce (12) ‖ ciphertext ‖ tag (16)
//
// It fails (matching ErrEnvelope) when b is shorter than EnvelopeOverhead.
// It does not check the version: an opener refuses a version it does not
// know (a newer peer's) differently from a damaged envelope.
func ParseEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) < EnvelopeOverhead {
		return e, fmt.Errorf("%w: %d bytes, shorter than the %d of header and tag", ErrEnvelope, len(b), EnvelopeOverhead)
	}
	e.Version = b[0]
	copy(e.KeyID[:], b[1:])
	copy(e.Nonce[:], b[1+EnvelopeKeyIDSize:])
	e.Sealed = b[EnvelopeHeaderSize:]
	return e, nil
}

// AppendEnvelopeHeader appends an envelope's header (version
// EnvelopeVersion, keyID, nonce); the sealer appends ciphertext and tag.
func AppendEnvelopeHeader(b []byte, keyID KeyID, nonce [EnvelopeNonceSize]byte) []byte {
	b = append(b, EnvelopeVersion)
	b = append(b, keyID[:]...)
	return append(b, nonce[:]...)
}
