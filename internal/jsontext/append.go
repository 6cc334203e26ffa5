package jsontext

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"
)

// Escape selects the optional escapes of AppendString.
type Escape uint8

const (
	// EscapeLineSeparators writes U+2028 and U+2029 as \u2028 and \u2029.
	EscapeLineSeparators Escape = 1 << iota
	// EscapeHTML writes '<', '>' and '&' as \u003c, \u003e and \u0026.
	EscapeHTML
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: '"', '\\' and control
// characters escaped (\b \f \n \r \t, else \u00XX), each byte not part of
// valid UTF-8 as \ufffd, and the escapes esc selects (see the package
// documentation).
func AppendString(dst []byte, s string, esc Escape) []byte {
	html := esc&EscapeHTML != 0
	if esc&EscapeLineSeparators == 0 && utf8.ValidString(s) {
		return appendASCIIEscapes(dst, s, html)
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && !(html && (c == '<' || c == '>' || c == '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscape(dst, c)
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case (r == '\u2028' || r == '\u2029') && esc&EscapeLineSeparators != 0:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// StringLen returns len(AppendString(nil, s, 0)) for s of valid UTF-8:
// s quoted, two bytes for each '"', '\\', \n, \r, \t, \b and \f, six for
// the other control characters (\u00XX). (An invalid byte, written as
// \ufffd, is counted as one.)
func StringLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// appendASCIIEscapes is AppendString for valid UTF-8 without
// EscapeLineSeparators: only ASCII bytes are escaped, so multi-byte
// characters are copied without decoding them.
func appendASCIIEscapes(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && !(html && (c == '<' || c == '>' || c == '&')) {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscape(dst, c)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscape appends the escape of the ASCII byte c.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// AppendStrings appends l as an array of strings (null for nil).
func AppendStrings(dst []byte, l []string, esc Escape) []byte {
	if l == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s, esc)
	}
	return append(dst, ']')
}

// AppendBase64 appends b as encoding/json writes a []byte: a string of
// its standard (padded) base64 encoding, null for nil.
func AppendBase64(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// AppendFloat appends the finite f, of the given bit size (32 or 64), as
// encoding/json and JavaScript write numbers: the shortest digits that
// read back as f at that size, in exponent form below 1e-6 and from 1e21
// ("1e-7", "1e+21", never "1e-07"). It does not check for NaN or ±Inf.
func AppendFloat(dst []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' { // e-07 → e-7
		n := len(dst)
		if n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
