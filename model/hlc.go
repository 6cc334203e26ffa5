package model

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SiteID identifies one replica: 16 random bytes generated once when the
// replica is created and persisted with it (docs/design.md § Hybrid logical clock).
// All tabs of one browser profile that open the same replica share it.
type SiteID [16]byte

// String returns the text form: base64url without padding, 22 characters.
//
//go:noinline
func (s SiteID) String() string { return base64.RawURLEncoding.EncodeToString(s[:]) }

// MarshalText returns String's form, so that encoding/json and log/slog
// (its JSON and text handlers) write a site id as its 22 characters
// rather than as 16 numbers.
func (s SiteID) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses String's form (ParseSiteID).
func (s *SiteID) UnmarshalText(text []byte) error {
	v, err := ParseSiteID(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// IsZero reports whether s is the all-zero site id (no site).
func (s SiteID) IsZero() bool { return s == SiteID{} }

// ParseSiteID parses the 22-character base64url text form. Anything else
// (padding, the standard alphabet, another length) is an error.
func ParseSiteID(text string) (SiteID, error) {
	var s SiteID
	if len(text) != 22 {
		return s, fmt.Errorf("site id %q: want 22 base64url characters, got %d", text, len(text))
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(b) != 16 {
		return s, fmt.Errorf("site id %q: not base64url without padding", text)
	}
	copy(s[:], b)
	return s, nil
}

// HLCSize is the length in bytes of an encoded HLC: 8 (wall time) + 2
// (counter) + 16 (site id) + 4 (opSeq).
const HLCSize = 30

// BaseSize is the length of an HLC's transaction base: the encoding without
// opSeq. Every fact of one local transaction shares its base.
const BaseSize = 26

// MaxDrift is how far, in milliseconds, a remote HLC's wall time may be ahead
// of the local wall clock. A remote wall time more than MaxDrift ahead is
// rejected with ErrClockDrift before anything is written; exactly MaxDrift
// ahead is accepted (docs/design.md § Clock-drift bound).
const MaxDrift = 60_000

// HLC is a hybrid logical clock timestamp (docs/design.md § Hybrid logical clock).
// HLCs order by (Wall, Counter, Site, OpSeq), lexicographically; Compare and
// the byte order of Bytes agree.
//
// One local transaction ticks the clock once: every fact it writes shares
// (Wall, Counter, Site), its base, and OpSeq numbers the facts 0, 1, 2, … in
// write order (schema migrations first). The zero HLC sorts before every
// other and means "none".
type HLC struct {
	// Wall is physical time in milliseconds since the Unix epoch.
	Wall uint64
	// Counter orders events within one millisecond (0–65535).
	Counter uint16
	// Site is the replica that minted the HLC.
	Site SiteID
	// OpSeq is the fact's position inside its transaction, from 0.
	OpSeq uint32
}

// Compare returns -1, 0 or +1 as h sorts before, equal to, or after o.
func (h HLC) Compare(o HLC) int {
	switch {
	case h.Wall != o.Wall:
		return cmp3(h.Wall < o.Wall)
	case h.Counter != o.Counter:
		return cmp3(h.Counter < o.Counter)
	}
	if c := bytes.Compare(h.Site[:], o.Site[:]); c != 0 {
		return c
	}
	if h.OpSeq != o.OpSeq {
		return cmp3(h.OpSeq < o.OpSeq)
	}
	return 0
}

func cmp3(less bool) int {
	if less {
		return -1
	}
	return 1
}

// Less reports whether h sorts before o.
func (h HLC) Less(o HLC) bool { return h.Compare(o) < 0 }

// IsZero reports whether h is the zero HLC.
func (h HLC) IsZero() bool { return h == HLC{} }

// Base returns h with OpSeq cleared: the transaction it belongs to.
func (h HLC) Base() HLC { h.OpSeq = 0; return h }

// SameTransaction reports whether h and o share a base.
func (h HLC) SameTransaction(o HLC) bool {
	return h.Wall == o.Wall && h.Counter == o.Counter && h.Site == o.Site
}

// Bytes returns the 30-byte big-endian encoding. bytes.Compare of two
// encodings equals Compare of the HLCs.
func (h HLC) Bytes() []byte {
	b := make([]byte, HLCSize)
	h.Put(b)
	return b
}

// Put writes the 30-byte encoding into b[:HLCSize].
func (h HLC) Put(b []byte) {
	_ = b[HLCSize-1]
	binary.BigEndian.PutUint64(b[0:8], h.Wall)
	binary.BigEndian.PutUint16(b[8:10], h.Counter)
	copy(b[10:26], h.Site[:])
	binary.BigEndian.PutUint32(b[26:30], h.OpSeq)
}

// PutBase writes the 26-byte base encoding (Bytes without opSeq) into
// b[:BaseSize]. Every fact of one transaction has the same base encoding.
func (h HLC) PutBase(b []byte) {
	_ = b[BaseSize-1]
	binary.BigEndian.PutUint64(b[0:8], h.Wall)
	binary.BigEndian.PutUint16(b[8:10], h.Counter)
	copy(b[10:26], h.Site[:])
}

// BaseFromBytes decodes the base encoding in b[:BaseSize] (PutBase's form):
// an HLC with OpSeq 0. b must hold at least BaseSize bytes.
func BaseFromBytes(b []byte) HLC {
	var h HLC
	h.Wall = binary.BigEndian.Uint64(b[0:8])
	h.Counter = binary.BigEndian.Uint16(b[8:10])
	copy(h.Site[:], b[10:26])
	return h
}

// HLCFromBytes decodes the 30-byte encoding. Any other length is an error.
func HLCFromBytes(b []byte) (HLC, error) {
	if len(b) != HLCSize {
		return HLC{}, fmt.Errorf("hlc: want %d bytes, got %d", HLCSize, len(b))
	}
	h := BaseFromBytes(b)
	h.OpSeq = binary.BigEndian.Uint32(b[26:30])
	return h, nil
}

// String returns a readable form, "wall.counter@site/opSeq", for logs and
// errors. It is not a wire format: the wire uses standard base64 of Bytes.
//
//go:noinline
func (h HLC) String() string {
	return fmt.Sprintf("%d.%d@%s/%d", h.Wall, h.Counter, h.Site, h.OpSeq)
}

// MarshalText returns String's form, so that encoding/json and log/slog
// write an HLC as "wall.counter@site/opSeq" rather than as an object with
// the site id's 16 numbers. It is not the wire's encoding (wire.FormatHLC).
func (h HLC) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses String's form, "wall.counter@site/opSeq".
func (h *HLC) UnmarshalText(text []byte) error {
	t := string(text)
	var v HLC
	dot, at, slash := strings.IndexByte(t, '.'), strings.IndexByte(t, '@'), strings.LastIndexByte(t, '/')
	if dot < 0 || at < dot || slash < at {
		return fmt.Errorf("hlc %q: want wall.counter@site/opSeq", t)
	}
	w, err1 := strconv.ParseUint(t[:dot], 10, 64)
	c, err2 := strconv.ParseUint(t[dot+1:at], 10, 16)
	o, err3 := strconv.ParseUint(t[slash+1:], 10, 32)
	site, err4 := ParseSiteID(t[at+1 : slash])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("hlc %q: want wall.counter@site/opSeq: %w", t, err)
	}
	v.Wall, v.Counter, v.Site, v.OpSeq = w, uint16(c), site, uint32(o)
	*h = v
	return nil
}

// TransactionID returns the deterministic id of the transaction h belongs
// to: "wall:counter:site" with the site in its base64url text form
// (docs/design.md § Transaction id). Every peer derives the same id
// from the same facts.
func (h HLC) TransactionID() string {
	// Appended, not fmt.Sprintf: it is built once per local transaction
	// (engine's localCommit), where Sprintf's reflection showed in profiles.
	b := make([]byte, 0, 20+1+5+1+22)
	b = strconv.AppendUint(b, h.Wall, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(h.Counter), 10)
	b = append(b, ':')
	b = base64.RawURLEncoding.AppendEncode(b, h.Site[:])
	return string(b)
}
