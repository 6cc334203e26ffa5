package wire

import (
	"encoding/base64"

	"github.com/replica-sync/replica/engine"
)

// hlcTextLen is the length of an HLC's wire form: standard base64 of 30
// bytes, which needs no padding.
const hlcTextLen = 40

// baseTextLen is the length of an HLC base's wire form in rows chunks:
// standard base64 of 26 bytes, padded ("=" at the end).
const baseTextLen = 36

// siteTextLen is the length of a site id's wire form: base64url without
// padding of 16 bytes.
const siteTextLen = 22

var (
	stdStrict = base64.StdEncoding.Strict()
	urlStrict = base64.RawURLEncoding.Strict()
)

// FormatHLC returns the wire form of h: the standard base64 (RFC 4648 § 4)
// of its 30-byte big-endian encoding (engine.HLC.Bytes), always 40
// characters. The zero HLC is "AAAA…A".
func FormatHLC(h engine.HLC) string { return string(appendHLCText(nil, h)) }

// ParseHLC parses the wire form of an HLC. Anything but 40 characters of
// the standard base64 alphabet that decode to 30 bytes is an error matching
// ErrMalformed.
func ParseHLC(s string) (engine.HLC, error) {
	r := newReader([]byte(s))
	return r.hlcText([]byte(s), 0)
}

func appendHLCText(b []byte, h engine.HLC) []byte {
	var raw [engine.HLCSize]byte
	h.Put(raw[:])
	return stdStrict.AppendEncode(b, raw[:])
}

func appendHLC(b []byte, h engine.HLC) []byte {
	b = append(b, '"')
	b = appendHLCText(b, h)
	return append(b, '"')
}

// hlc reads a JSON string holding an HLC.
func (r *reader) hlc() (engine.HLC, error) {
	start := r.pos
	if r.peek() != '"' {
		return engine.HLC{}, r.want("an HLC (a string)")
	}
	s, err := r.stringBytes()
	if err != nil {
		return engine.HLC{}, err
	}
	return r.hlcText(s, start)
}

func (r *reader) hlcText(s []byte, off int) (engine.HLC, error) {
	var raw [engine.HLCSize]byte
	if len(s) != hlcTextLen {
		return engine.HLC{}, r.failAt(off, "HLC: want %d base64 characters, got %d", hlcTextLen, len(s))
	}
	if n, err := stdStrict.Decode(raw[:], s); err != nil || n != engine.HLCSize {
		return engine.HLC{}, r.failAt(off, "HLC %q: not standard base64 of %d bytes", s, engine.HLCSize)
	}
	return engine.HLCFromBytes(raw[:])
}

// appendBaseText writes the base of h (its first engine.BaseSize bytes:
// wall time, counter, site) as padded standard base64, 36 characters.
func appendBaseText(b []byte, h engine.HLC) []byte {
	var raw [engine.HLCSize]byte
	h.Put(raw[:])
	return stdStrict.AppendEncode(b, raw[:engine.BaseSize])
}

// base reads a JSON string holding an HLC base; the result's OpSeq is 0.
func (r *reader) base() (engine.HLC, error) {
	start := r.pos
	if r.peek() != '"' {
		return engine.HLC{}, r.want("an HLC base (a string)")
	}
	s, err := r.stringBytes()
	if err != nil {
		return engine.HLC{}, err
	}
	var raw [engine.HLCSize + 1]byte // DecodedLen(36) is 27
	if len(s) != baseTextLen {
		return engine.HLC{}, r.failAt(start, "HLC base: want %d base64 characters, got %d", baseTextLen, len(s))
	}
	if n, err := stdStrict.Decode(raw[:], s); err != nil || n != engine.BaseSize {
		return engine.HLC{}, r.failAt(start, "HLC base %q: not padded standard base64 of %d bytes", s, engine.BaseSize)
	}
	clear(raw[engine.BaseSize:])
	return engine.HLCFromBytes(raw[:engine.HLCSize])
}

func appendSiteID(b []byte, s engine.SiteID) []byte {
	b = append(b, '"')
	b = urlStrict.AppendEncode(b, s[:])
	return append(b, '"')
}

// siteID reads a JSON string holding a site id: base64url (RFC 4648 § 5)
// without padding, 22 characters (engine.SiteID.String).
func (r *reader) siteID() (engine.SiteID, error) {
	var id engine.SiteID
	start := r.pos
	if r.peek() != '"' {
		return id, r.want("a site id (a string)")
	}
	s, err := r.stringBytes()
	if err != nil {
		return id, err
	}
	var raw [17]byte
	if len(s) != siteTextLen {
		return id, r.failAt(start, "site id: want %d base64url characters, got %d", siteTextLen, len(s))
	}
	if n, err := urlStrict.Decode(raw[:], s); err != nil || n != len(id) {
		return id, r.failAt(start, "site id %q: not base64url without padding", s)
	}
	copy(id[:], raw[:])
	return id, nil
}
