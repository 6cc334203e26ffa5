package wire

import (
	"encoding/base64"

	"github.com/replica-sync/replica/model"
)

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
// of its 30-byte big-endian encoding (model.HLC.Bytes), always 40
// characters. The zero HLC is "AAAA…A".
func FormatHLC(h model.HLC) string { return string(appendHLCText(nil, h)) }

// ParseHLC parses the wire form of an HLC. Anything but 40 characters of
// the standard base64 alphabet that decode to 30 bytes is an error matching
// ErrMalformed.
func ParseHLC(s string) (model.HLC, error) {
	r := newReader([]byte(s))
	return r.hlcText([]byte(s), 0)
}

func appendHLCText(b []byte, h model.HLC) []byte { return model.AppendHLCText(b, h) }

func appendHLC(b []byte, h model.HLC) []byte { return model.AppendHLCJSON(b, h) }

// hlc reads a JSON string holding an HLC.
func (r *reader) hlc() (model.HLC, error) { return model.ReadHLCJSON(&r.Reader) }

func (r *reader) hlcText(s []byte, off int) (model.HLC, error) {
	return model.ParseHLCText(&r.Reader, s, off)
}

// appendBaseText writes the base of h (its first model.BaseSize bytes:
// wall time, counter, site) as padded standard base64, 36 characters.
func appendBaseText(b []byte, h model.HLC) []byte {
	var raw [model.HLCSize]byte
	h.Put(raw[:])
	return stdStrict.AppendEncode(b, raw[:model.BaseSize])
}

// base reads a JSON string holding an HLC base; the result's OpSeq is 0.
func (r *reader) base() (model.HLC, error) {
	start := r.Pos
	if r.Peek() != '"' {
		return model.HLC{}, r.Want("an HLC base (a string)")
	}
	s, err := r.StringBytes()
	if err != nil {
		return model.HLC{}, err
	}
	var raw [model.HLCSize + 1]byte // DecodedLen(36) is 27
	if len(s) != baseTextLen {
		return model.HLC{}, r.FailAt(start, "HLC base: want %d base64 characters, got %d", baseTextLen, len(s))
	}
	if n, err := stdStrict.Decode(raw[:], s); err != nil || n != model.BaseSize {
		return model.HLC{}, r.FailAt(start, "HLC base %q: not padded standard base64 of %d bytes", s, model.BaseSize)
	}
	clear(raw[model.BaseSize:])
	return model.HLCFromBytes(raw[:model.HLCSize])
}

func appendSiteID(b []byte, s model.SiteID) []byte {
	b = append(b, '"')
	b = urlStrict.AppendEncode(b, s[:])
	return append(b, '"')
}

// siteID reads a JSON string holding a site id: base64url (RFC 4648 § 5)
// without padding, 22 characters (model.SiteID.String).
func (r *reader) siteID() (model.SiteID, error) {
	var id model.SiteID
	start := r.Pos
	if r.Peek() != '"' {
		return id, r.Want("a site id (a string)")
	}
	s, err := r.StringBytes()
	if err != nil {
		return id, err
	}
	var raw [17]byte
	if len(s) != siteTextLen {
		return id, r.FailAt(start, "site id: want %d base64url characters, got %d", siteTextLen, len(s))
	}
	if n, err := urlStrict.Decode(raw[:], s); err != nil || n != len(id) {
		return id, r.FailAt(start, "site id %q: not base64url without padding", s)
	}
	copy(id[:], raw[:])
	return id, nil
}
