// Package keyenc is the engine's order-preserving key encoding of
// model Values.
//
// Row keys, secondary-index keys and table names inside keys are built from
// Values with AppendValue and AppendTuple. Every kv backend compares
// keys bytewise (bytes.Compare, bbolt, IndexedDB binary keys), so the
// encoding guarantees:
//
//   - Order: sign(bytes.Compare(enc(a), enc(b))) == sign(Compare(a, b)) for
//     all Values a and b.
//   - Prefix-freeness: no encoding is a proper prefix of another, so
//     encodings concatenate into tuples that sort lexicographically, element
//     by element, and decode without a length.
//   - Canonical decoding: DecodeValue recovers exactly the encoded Value
//     (kind included: integer 3 and real 3.0 are distinct, so are -0.0 and
//     +0.0) and accepts only bytes AppendValue produces, so a successful
//     decode re-encodes to the same bytes. Anything else is an error
//     wrapping model.ErrMalformed.
//
// # Tags
//
// Every value starts with one tag byte. Tags 0x00 and 0xFF are never used.
//
//	tag   value                  rest                                   bytes
//	0x05  null                   -                                      1
//	0x10  false                  -                                      1
//	0x11  true                   -                                      1
//	0x20  real -Inf              -                                      1
//	0x21  number < 0             ^(exponent, mantissa), see Numbers     3–13
//	0x22  integer 0              -                                      1
//	0x23  real -0                -                                      1
//	0x24  real +0                -                                      1
//	0x25  number > 0             exponent, mantissa, see Numbers        3–13
//	0x26  real +Inf              -                                      1
//	0x27  real NaN               - (never stored, see below)            1
//	0x30  timestamp              uint64(ms) ^ 1<<63, big-endian         9
//	0x40  text                   escaped UTF-8 bytes, 0x00 0x01         3+len
//	0x50  json                   escaped JSON text, 0x00 0x01           3+len
//	0x60  blob                   escaped bytes, 0x00 0x01               3+len
//
// The tags order the kinds null < boolean < number < timestamp < text <
// json < blob, as Compare does.
//
// # Numbers
//
// Integers (int64) and reals (float64) share one numeric order. A nonzero
// finite number x is ±2^E × 1.f, where f is the bit string after the
// leading 1 with trailing zeros removed (L bits: L ≤ 62 for an integer,
// L ≤ 52 for a real). Its encoding after the tag is:
//
//   - Exponent: one byte E+65 (0x01–0xFE) when -64 ≤ E ≤ 189, which covers
//     every integer; otherwise 0x00 followed by E+1074 as a big-endian
//     uint16 (E < -64), or 0xFF followed by E as a big-endian uint16
//     (E > 189).
//   - Mantissa: f in 6-bit groups, most significant first, the last group
//     padded with zero bits; at least one group, and no more than needed
//     (max(1, ⌈L/6⌉), at most 11). Each group is one byte dddddd ss, with
//     ss = 10 when another group follows; in the last group ss = 00 for an
//     integer and 01 for a real.
//   - For negative numbers the integer/real bits of the last group are
//     swapped (integer 01, real 00) and then every byte after the tag is
//     complemented (b ^ 0xFF).
//
// Why this orders correctly: for positive numbers the magnitude orders by
// (E, f); the exponent bytes are an order-preserving prefix-free code of E;
// the data bits of a group sit above its ss bits, and when two fractions
// agree up to where one ends, the ended one (ss 00 or 01) sorts before the
// continuing one (ss 10), which is larger because trailing zeros are trimmed
// (its continuation holds a 1). A numerically equal integer and real have
// the same E and f and differ only in ss: the integer sorts first.
// Complementing a prefix-free code reverses its order, which is what
// negative numbers need; the swap beforehand keeps the integer first.
//
// Sizes: a nonzero finite number takes 2 + max(1, ⌈L/6⌉) bytes, 2 more in
// the long exponent form; 0, ±0.0 and ±Inf take 1. Integers with |i| < 2^7
// take 3 bytes, < 2^13 at most 4, < 2^19 at most 5, < 2^31 at most 7,
// < 2^43 (millisecond times) at most 9, any int64 at most 13; round values
// take fewer (1000 and 2^40 take 3). Reals with at most 6 significant bits
// after the leading one (0.5, 1.25, 100) take 3 bytes, a full 52-bit
// mantissa (0.1) 11, and 13 outside 2^-64 ≤ |x| < 2^190.
//
// NaN is never stored (validation rejects it). AppendValue encodes every
// NaN as the tag 0x27, after +Inf, and Compare agrees (NaN equals NaN and
// sorts after every other number); it decodes to math.NaN(), so NaN payload
// bits are not preserved.
//
// # Timestamps
//
// Milliseconds since the Unix epoch as int64, sign bit flipped, big-endian:
// 9 bytes in all. Timestamps do not compare numerically with numbers; all
// of them sort after every number.
//
// # Text, JSON and blobs
//
// The bytes (UTF-8 for text, the compact JSON text for json) with every 0x00
// written as 0x00 0xFF, then the terminator 0x00 0x01. Escaping keeps the
// bytewise order (for text that is Unicode code-point order) and a shorter
// string that is a prefix of a longer one sorts first, because the
// terminator is below every byte that can follow. The encoding of every text
// value starting with p begins with AppendTextPrefix(nil, p): the tag and
// the escaped bytes of p without a terminator.
//
// The decoder checks structure (tags, escapes, canonical numbers), not that
// text is valid UTF-8 or JSON text valid JSON: keys are written by the
// engine from validated Values.
package keyenc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/replica-sync/replica/internal/rawvalue"
	"github.com/replica-sync/replica/model"
)

var (
	// rawValue rebuilds a text, JSON or blob Value from bytes this package
	// encoded, unchecked (see package rawvalue).
	rawValue = rawvalue.Make.(func(model.Kind, string) model.Value)
	// rawString returns a text, JSON or blob Value's bytes, uncopied.
	rawString = rawvalue.String.(func(model.Value) string)
)

// malformed returns an error wrapping model.ErrMalformed.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", model.ErrMalformed, fmt.Sprintf(format, args...))
}

// Key tags; see the package comment.
const (
	keyTagNull      = 0x05
	keyTagFalse     = 0x10
	keyTagTrue      = 0x11
	keyTagNegInf    = 0x20
	keyTagNeg       = 0x21
	keyTagZeroInt   = 0x22
	keyTagNegZero   = 0x23
	keyTagPosZero   = 0x24
	keyTagPos       = 0x25
	keyTagPosInf    = 0x26
	keyTagNaN       = 0x27
	keyTagTimestamp = 0x30
	keyTagText      = 0x40
	keyTagJSON      = 0x50
	keyTagBlob      = 0x60
)

// Binary exponents that fit the one-byte exponent form (byte E - keyExpMin + 1).
const (
	keyExpMin = -64
	keyExpMax = 189
)

// Mantissa group suffixes (the low two bits of a group byte, before the
// complement of negative numbers).
const (
	keyGroupMore = 0b10
	keyGroupInt  = 0b00
	keyGroupReal = 0b01
)

// AppendValue appends the order-preserving, self-delimiting encoding of v
// to dst and returns the extended slice. It does not allocate when dst has
// room (see the package comment for the layout and sizes). v must have a valid
// kind; NaN reals are encoded deterministically but are never stored.
func AppendValue(dst []byte, v model.Value) []byte {
	switch v.Kind() {
	case model.KindNull:
		return append(dst, keyTagNull)
	case model.KindBoolean:
		if v.Bool() {
			return append(dst, keyTagTrue)
		}
		return append(dst, keyTagFalse)
	case model.KindInteger:
		return appendKeyInt(dst, v.Int())
	case model.KindReal:
		return appendKeyReal(dst, v.Real())
	case model.KindTimestamp:
		return binary.BigEndian.AppendUint64(append(dst, keyTagTimestamp), uint64(v.Int())^(1<<63))
	case model.KindText:
		return appendKeyEscaped(append(dst, keyTagText), v.Text())
	case model.KindJSON:
		return appendKeyEscaped(append(dst, keyTagJSON), v.Text())
	case model.KindBlob:
		return appendKeyEscaped(append(dst, keyTagBlob), rawString(v))
	}
	panic("keyenc: AppendValue of a Value with invalid kind " + v.Kind().String())
}

// AppendTuple appends the encodings of vs, one after the other. The
// result sorts lexicographically by element (model.Compare), a shorter tuple
// before every longer tuple it is a prefix of.
func AppendTuple(dst []byte, vs []model.Value) []byte {
	for _, v := range vs {
		dst = AppendValue(dst, v)
	}
	return dst
}

// AppendTextPrefix appends the bytes with which the encoding of every
// text value starting with prefix begins: the text tag and the escaped bytes
// of prefix, without a terminator. A kv prefix scan over them finds exactly
// the text values (in a key position) that start with prefix.
func AppendTextPrefix(dst []byte, prefix string) []byte {
	return appendKeyEscapedBody(append(dst, keyTagText), prefix)
}

func appendKeyInt(dst []byte, i int64) []byte {
	if i == 0 {
		return append(dst, keyTagZeroInt)
	}
	neg := i < 0
	u := uint64(i)
	if neg {
		u = -u // MinInt64 becomes 1<<63
	}
	e := bits.Len64(u) - 1
	return appendKeyNumber(dst, neg, e, u<<(64-uint(e)), false) // the shift drops the leading 1
}

func appendKeyReal(dst []byte, x float64) []byte {
	b := math.Float64bits(x)
	neg := b>>63 != 0
	exp := int(b>>52) & 0x7FF
	frac := b & (1<<52 - 1)
	switch {
	case exp == 0x7FF:
		switch {
		case frac != 0:
			return append(dst, keyTagNaN)
		case neg:
			return append(dst, keyTagNegInf)
		}
		return append(dst, keyTagPosInf)
	case exp == 0:
		if frac == 0 {
			if neg {
				return append(dst, keyTagNegZero)
			}
			return append(dst, keyTagPosZero)
		}
		// Subnormal: frac × 2^-1074, leading 1 at bit p.
		p := bits.Len64(frac) - 1
		return appendKeyNumber(dst, neg, p-1074, frac<<(64-uint(p)), true)
	}
	return appendKeyNumber(dst, neg, exp-1023, frac<<12, true)
}

// appendKeyNumber appends a nonzero finite number ±2^e × 1.f, f given
// left-aligned in a uint64.
func appendKeyNumber(dst []byte, neg bool, e int, f uint64, real bool) []byte {
	var mask byte
	tag := byte(keyTagPos)
	if neg {
		tag, mask = keyTagNeg, 0xFF
	}
	switch {
	case e >= keyExpMin && e <= keyExpMax:
		dst = append(dst, tag, byte(e-keyExpMin+1)^mask)
	case e < keyExpMin:
		u := uint16(e + 1074)
		dst = append(dst, tag, 0x00^mask, byte(u>>8)^mask, byte(u)^mask)
	default:
		u := uint16(e)
		dst = append(dst, tag, 0xFF^mask, byte(u>>8)^mask, byte(u)^mask)
	}
	last := byte(keyGroupInt)
	if real != neg {
		last = keyGroupReal
	}
	for {
		d := byte(f>>58) << 2
		f <<= 6
		if f == 0 {
			return append(dst, (d|last)^mask)
		}
		dst = append(dst, (d|keyGroupMore)^mask)
	}
}

// appendKeyEscaped appends s with every 0x00 escaped as 0x00 0xFF, then
// the terminator 0x00 0x01.
func appendKeyEscaped(dst []byte, s string) []byte {
	return append(appendKeyEscapedBody(dst, s), 0x00, 0x01)
}

// appendKeyEscapedBody appends s with every 0x00 escaped as 0x00 0xFF and
// no terminator.
func appendKeyEscapedBody(dst []byte, s string) []byte {
	for {
		j := strings.IndexByte(s, 0)
		if j < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:j]...), 0x00, 0xFF)
		s = s[j+1:]
	}
}

// DecodeValue decodes the Value at the start of b and returns it with the
// bytes after its encoding. Input that AppendValue cannot have produced
// (unknown tag, truncation, a bad escape, a non-canonical number) is an
// error wrapping model.ErrMalformed. Text, JSON and blob values are copied out of
// b.
func DecodeValue(b []byte) (v model.Value, rest []byte, err error) {
	if len(b) == 0 {
		return model.Null, nil, malformed("key: empty value")
	}
	tag, b := b[0], b[1:]
	switch tag {
	case keyTagNull:
		return model.Null, b, nil
	case keyTagFalse:
		return model.Bool(false), b, nil
	case keyTagTrue:
		return model.Bool(true), b, nil
	case keyTagNegInf:
		return model.Real(math.Inf(-1)), b, nil
	case keyTagNeg:
		return decodeKeyNumber(b, true)
	case keyTagZeroInt:
		return model.Int(0), b, nil
	case keyTagNegZero:
		return model.Real(math.Copysign(0, -1)), b, nil
	case keyTagPosZero:
		return model.Real(0), b, nil
	case keyTagPos:
		return decodeKeyNumber(b, false)
	case keyTagPosInf:
		return model.Real(math.Inf(1)), b, nil
	case keyTagNaN:
		return model.Real(math.NaN()), b, nil
	case keyTagTimestamp:
		if len(b) < 8 {
			return model.Null, nil, malformed("key: truncated timestamp")
		}
		return model.TimestampMillis(int64(binary.BigEndian.Uint64(b) ^ (1 << 63))), b[8:], nil
	case keyTagText, keyTagJSON, keyTagBlob:
		s, rest, err := decodeKeyEscaped(b)
		if err != nil {
			return model.Null, nil, err
		}
		k := model.KindText
		switch tag {
		case keyTagJSON:
			k = model.KindJSON
		case keyTagBlob:
			k = model.KindBlob
		}
		return rawValue(k, s), rest, nil
	}
	return model.Null, nil, malformed("key: unknown tag 0x%02x", tag)
}

// DecodeTuple decodes n Values from the start of b and returns them with
// the remaining bytes; with n < 0 it decodes until b is empty. Errors wrap
// model.ErrMalformed.
func DecodeTuple(b []byte, n int) ([]model.Value, []byte, error) {
	if n < 0 {
		var vs []model.Value
		for len(b) > 0 {
			v, rest, err := DecodeValue(b)
			if err != nil {
				return nil, nil, err
			}
			vs = append(vs, v)
			b = rest
		}
		return vs, b, nil
	}
	if n > len(b) { // every value takes at least one byte
		return nil, nil, malformed("key: want %d values in %d bytes", n, len(b))
	}
	vs := make([]model.Value, n)
	for i := range vs {
		v, rest, err := DecodeValue(b)
		if err != nil {
			return nil, nil, err
		}
		vs[i] = v
		b = rest
	}
	return vs, b, nil
}

// decodeKeyNumber decodes the rest of a nonzero finite number after its tag.
func decodeKeyNumber(b []byte, neg bool) (model.Value, []byte, error) {
	var mask byte
	if neg {
		mask = 0xFF
	}
	if len(b) == 0 {
		return model.Null, nil, malformed("key: truncated number")
	}
	var e int
	i := 1
	switch e0 := b[0] ^ mask; e0 {
	case 0x00, 0xFF:
		if len(b) < 3 {
			return model.Null, nil, malformed("key: truncated number exponent")
		}
		u := int(b[1]^mask)<<8 | int(b[2]^mask)
		i = 3
		if e0 == 0x00 {
			e = u - 1074
			if e >= keyExpMin {
				return model.Null, nil, malformed("key: non-canonical number exponent")
			}
		} else {
			e = u
			if e <= keyExpMax || e > 1023 {
				return model.Null, nil, malformed("key: bad number exponent %d", e)
			}
		}
	default:
		e = int(e0) - 1 + keyExpMin
	}
	var acc uint64 // the fraction bits, left-aligned
	n := 0         // groups read
	var last byte
	for {
		if i >= len(b) {
			return model.Null, nil, malformed("key: truncated number mantissa")
		}
		c := b[i] ^ mask
		i++
		d := uint64(c >> 2)
		if n == 10 && d&3 != 0 || n > 10 {
			return model.Null, nil, malformed("key: number mantissa too long")
		}
		acc |= d << 58 >> (6 * n)
		n++
		if c&3 == keyGroupMore {
			continue
		}
		if c&3 == 0b11 {
			return model.Null, nil, malformed("key: bad number mantissa")
		}
		last = c & 3
		break
	}
	l := 0
	if acc != 0 {
		l = 64 - bits.TrailingZeros64(acc)
	}
	if n != max(1, (l+5)/6) {
		return model.Null, nil, malformed("key: non-canonical number mantissa")
	}
	rest := b[i:]
	if (last == keyGroupReal) == neg { // integer
		if e < 0 || e > 63 || l > e || e == 63 && (!neg || l != 0) {
			return model.Null, nil, malformed("key: integer out of range")
		}
		v := int64(uint64(1)<<e | acc>>(64-uint(e)))
		if neg {
			v = -v // 1<<63 stays MinInt64
		}
		return model.Int(v), rest, nil
	}
	var fb uint64
	if e >= -1022 {
		if l > 52 {
			return model.Null, nil, malformed("key: real mantissa too long")
		}
		fb = uint64(e+1023)<<52 | acc>>12
	} else {
		p := e + 1074 // subnormal: leading 1 at bit p of the fraction field
		if l > p {
			return model.Null, nil, malformed("key: subnormal real mantissa too long")
		}
		fb = uint64(1)<<p | acc>>(64-uint(p))
	}
	if neg {
		fb |= 1 << 63
	}
	return model.Real(math.Float64frombits(fb)), rest, nil
}

// decodeKeyEscaped decodes escaped bytes up to and including the terminator.
func decodeKeyEscaped(b []byte) (string, []byte, error) {
	j := bytes.IndexByte(b, 0)
	if j < 0 || j+1 >= len(b) {
		return "", nil, malformed("key: unterminated string")
	}
	if b[j+1] == 0x01 { // common case: no escapes
		return string(b[:j]), b[j+2:], nil
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for {
		if j < 0 || j+1 >= len(b) {
			return "", nil, malformed("key: unterminated string")
		}
		sb.Write(b[:j])
		switch b[j+1] {
		case 0x01:
			return sb.String(), b[j+2:], nil
		case 0xFF:
			sb.WriteByte(0)
		default:
			return "", nil, malformed("key: bad escape 0x00 0x%02x", b[j+1])
		}
		b = b[j+2:]
		j = bytes.IndexByte(b, 0)
	}
}
