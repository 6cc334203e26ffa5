package wire

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/replica-sync/replica/engine"
)

// The tags of wrapped values: an object whose only key is one of them is
// never a JSON value but the tagged value.
const (
	tagBin    = "__bin"
	tagBigint = "__bigint"
	tagJSON   = "__json"
)

// maxSafe is 2^53: integers of larger magnitude travel as {"__bigint"}.
const maxSafe = 1 << 53

// MarshalValue returns the wire form of v (see "Values" in the package
// documentation). A NaN or infinite real, and text that is not valid UTF-8,
// are errors matching ErrInvalidMessage.
func MarshalValue(v engine.Value) ([]byte, error) {
	return appendValue(nil, v)
}

// UnmarshalValue decodes the wire form of one value, without a schema: an
// integer literal within ±2^53 is an Integer, any other number a Real,
// a string Text, and so on (see "Values" in the package documentation).
// Errors match ErrMalformed.
func UnmarshalValue(data []byte) (engine.Value, error) {
	r := newReader(data)
	if err := checkUTF8(r); err != nil {
		return engine.Null, err
	}
	v, err := r.value()
	if err == nil {
		err = r.end()
	}
	return v, err
}

// appendValue appends the wire form of v.
func appendValue(b []byte, v engine.Value) ([]byte, error) {
	switch v.Kind() {
	case engine.KindNull:
		return append(b, "null"...), nil
	case engine.KindBoolean:
		return strconv.AppendBool(b, v.Bool()), nil
	case engine.KindInteger, engine.KindTimestamp:
		return appendInt(b, v.Int()), nil
	case engine.KindReal:
		return appendReal(b, v.Real())
	case engine.KindText:
		return appendString(b, v.Text())
	case engine.KindBlob:
		b = append(b, `{"`+tagBin+`":"`...)
		b = stdStrict.AppendEncode(b, v.Blob())
		return append(b, `"}`...), nil
	case engine.KindJSON:
		text := v.JSON()
		bare, err := jsonBare(text)
		if err != nil {
			return b, err
		}
		if bare {
			return append(b, text...), nil
		}
		b = append(b, `{"`+tagJSON+`":`...)
		b = append(b, text...)
		return append(b, '}'), nil
	}
	return b, invalid("value of unknown kind %v", v.Kind())
}

// appendInt writes an integer as a JSON number when its magnitude is at
// most 2^53, else as {"__bigint":"<decimal>"}.
func appendInt(b []byte, i int64) []byte {
	if -maxSafe <= i && i <= maxSafe {
		return strconv.AppendInt(b, i, 10)
	}
	b = append(b, `{"`+tagBigint+`":"`...)
	b = strconv.AppendInt(b, i, 10)
	return append(b, `"}`...)
}

// appendReal writes a finite float as a JSON number that reads back as a
// real: the shortest form that round-trips, in the notation JavaScript's
// Number.prototype.toString picks (exponent below 1e-6 and from 1e21 on),
// with ".0" added when that form has neither a fraction nor an exponent.
func appendReal(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, invalid("real %v cannot be encoded", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as JavaScript writes it.
		n := len(b)
		if n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b, nil
	}
	for _, c := range b[start:] {
		if c == '.' {
			return b, nil
		}
	}
	return append(b, ".0"...), nil
}

// appendString writes s as a JSON string, escaping only '"', '\' and the
// control characters below U+0020. Text that is not valid UTF-8 is an
// error.
func appendString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			if _, size := utf8.DecodeRuneInString(s[i:]); size > 1 {
				i += size
				continue
			}
			return b, invalid("text is not valid UTF-8 (byte %d)", i)
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

// jsonBare checks the JSON text of a JSON-kind value and reports whether it
// may be written bare: it is an object or an array, and not an object whose
// only key is a tag. Everything else (strings, numbers, booleans, null,
// tag-like objects) is wrapped in {"__json": …}.
func jsonBare(text []byte) (bool, error) {
	r := newReader(text)
	r.errSentinel = ErrInvalidMessage
	if err := checkUTF8(r); err != nil {
		return false, err
	}
	c := r.peek()
	var err error
	bare := false
	switch c {
	case '{':
		var tag bool
		tag, err = r.skipObjectTagged()
		bare = !tag
	case '[':
		_, _, err = r.skip()
		bare = true
	default:
		_, _, err = r.skip()
	}
	if err == nil {
		err = r.end()
	}
	if err == nil && jsonDepth(text) > MaxJSONDepth {
		err = invalid("nested deeper than %d", MaxJSONDepth)
	}
	if err != nil {
		return false, at(err, "JSON value")
	}
	return bare, nil
}

func isTag(key []byte) bool {
	switch string(key) {
	case tagBin, tagBigint, tagJSON:
		return true
	}
	return false
}

// skipObjectTagged consumes an object and reports whether it has exactly
// one member whose key is a tag.
func (r *reader) skipObjectTagged() (bool, error) {
	if err := r.openObject(); err != nil {
		return false, err
	}
	key, more, err := r.firstKey()
	if err != nil || !more {
		return false, err
	}
	tag := isTag(key)
	for n := 0; more; n++ {
		if _, _, err := r.skip(); err != nil {
			return false, err
		}
		if n > 0 {
			tag = false
		}
		if _, more, err = r.objectMore(); err != nil {
			return false, err
		}
	}
	return tag, nil
}

// value reads one value without a schema.
func (r *reader) value() (engine.Value, error) {
	switch c := r.peek(); {
	case c == 'n':
		if r.null() {
			return engine.Null, nil
		}
	case c == 't' || c == 'f':
		b, err := r.boolean()
		return engine.Bool(b), err
	case c == '"':
		s, err := r.stringBytes()
		if err != nil {
			return engine.Null, err
		}
		return engine.Text(r.text(s)), nil
	case c == '-' || ('0' <= c && c <= '9'):
		start := r.pos
		lit, isInt, err := r.number()
		if err != nil {
			return engine.Null, err
		}
		if isInt {
			if i, ok := smallInt(lit); ok {
				return engine.Int(i), nil
			}
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil || math.IsInf(f, 0) {
			return engine.Null, r.failAt(start, "number %s out of range", lit)
		}
		return engine.Real(f), nil
	case c == '[':
		start, end, err := r.skip()
		if err != nil {
			return engine.Null, err
		}
		return r.jsonValue(start, end)
	case c == '{':
		return r.objectValue()
	}
	return engine.Null, r.want("a value")
}

func (r *reader) jsonValue(start, end int) (engine.Value, error) {
	v, err := engine.JSONValue(r.data[start:end])
	if err != nil {
		return engine.Null, r.failAt(start, "%v", err)
	}
	if jsonDepth(v.JSON()) > MaxJSONDepth {
		return engine.Null, r.failAt(start, "JSON value nested deeper than %d", MaxJSONDepth)
	}
	return v, nil
}

// jsonDepth returns the deepest nesting of arrays and objects in a valid
// JSON text: 0 for a scalar, 1 for [1], 2 for [[1]].
func jsonDepth(text []byte) int {
	depth, max := 0, 0
	inString := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > max {
				max = depth
			}
		case ']', '}':
			depth--
		}
	}
	return max
}

// objectValue reads an object: a tagged value when its only key is a tag,
// else a JSON value.
func (r *reader) objectValue() (engine.Value, error) {
	start := r.pos
	if err := r.openObject(); err != nil {
		return engine.Null, err
	}
	key, more, err := r.firstKey()
	if err != nil {
		return engine.Null, err
	}
	if !more {
		return r.jsonValue(start, r.pos)
	}
	tag := ""
	if isTag(key) {
		tag = string(key)
	}
	vstart, vend, err := r.skip()
	if err != nil {
		return engine.Null, at(err, tag)
	}
	_, more, err = r.objectMore()
	for more && err == nil {
		tag = ""
		if _, _, err = r.skip(); err == nil {
			_, more, err = r.objectMore()
		}
	}
	if err != nil {
		return engine.Null, err
	}
	switch tag {
	case "":
		return r.jsonValue(start, r.pos)
	case tagJSON:
		v, err := r.jsonValue(vstart, vend)
		return v, at(err, tag)
	}
	end := r.pos
	r.pos = vstart
	s, err := r.str()
	r.pos = end
	if err != nil {
		return engine.Null, at(err, tag)
	}
	if tag == tagBin {
		// Go's decoder skips '\r' and '\n'; the length check rejects them.
		out := make([]byte, stdStrict.DecodedLen(len(s)))
		n, err := stdStrict.Decode(out, []byte(s))
		if err != nil || stdStrict.EncodedLen(n) != len(s) {
			return engine.Null, at(r.failAt(vstart, "not padded standard base64"), tag)
		}
		return engine.Blob(out[:n]), nil
	}
	// tagBigint: canonical decimal of an int64.
	if !canonicalDecimal(s) {
		return engine.Null, at(r.failAt(vstart, "%q is not a canonical decimal integer", s), tag)
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return engine.Null, at(r.failAt(vstart, "%s does not fit a 64-bit integer", s), tag)
	}
	return engine.Int(i), nil
}

// canonicalDecimal reports whether s matches -?(0|[1-9][0-9]*) and is not
// "-0".
func canonicalDecimal(s string) bool {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if d == "" || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}
