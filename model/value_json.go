package model

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/replica-sync/replica/internal/jsontext"
)

// The JSON form of values and HLCs that the sync protocol carries (wire's
// "Values": wire/doc.go) and the engine stores in its migrations (column
// defaults). The Append functions' errors are *jsontext.PathError matching
// ErrUnencodable; the Read functions' errors are made by the Reader's
// Errors. Both carry the JSON path below the value (jsontext.At).

// The tags of wrapped values: an object whose only key is one of them is
// never a JSON value but the tagged value.
const (
	TagBin    = "__bin"    // {"__bin":"<standard base64>"}: a blob
	TagBigint = "__bigint" // {"__bigint":"<decimal>"}: an integer beyond ±2^53
	TagJSON   = "__json"   // {"__json":<JSON>}: a json value not written bare
)

// maxSafe is 2^53: integers of larger magnitude travel as {"__bigint"}.
const maxSafe = 1 << 53

var stdStrict = base64.StdEncoding.Strict()

// unencodableErrors makes the errors of jsonBare's Reader (one value, so
// that a Reader does not box a new one).
var unencodableErrors jsontext.ErrorMaker = jsontext.PathErrors{Sentinel: ErrUnencodable}

// unencodable returns an ErrUnencodable error.
//
//go:noinline
func unencodable(format string, args ...any) error {
	return &jsontext.PathError{Sentinel: ErrUnencodable, Msg: fmt.Sprintf(format, args...), Offset: -1}
}

// AppendValueJSON appends the JSON form of v: null, a boolean, a number
// (an integer of magnitude above 2^53 as {"__bigint":"<decimal>"}, a real
// with ".0" when it would read back as an integer), a string, a blob as
// {"__bin":"<base64>"}, a json value bare when it is an array or an
// object that is not tag-like, else as {"__json":…}. A NaN or infinite
// real, text that is not valid UTF-8 and a json value nested deeper than
// MaxJSONDepth are errors (ErrUnencodable).
func AppendValueJSON(b []byte, v Value) ([]byte, error) {
	switch v.Kind() {
	case KindNull:
		return append(b, "null"...), nil
	case KindBoolean:
		return strconv.AppendBool(b, v.Bool()), nil
	case KindInteger, KindTimestamp:
		return AppendIntJSON(b, v.Int()), nil
	case KindReal:
		return appendRealJSON(b, v.Real())
	case KindText:
		return AppendTextJSON(b, v.Text())
	case KindBlob:
		b = append(b, `{"`+TagBin+`":"`...)
		b = stdStrict.AppendEncode(b, v.Blob())
		return append(b, `"}`...), nil
	case KindJSON:
		text := v.JSON()
		bare, err := jsonBare(text)
		if err != nil {
			return b, err
		}
		if bare {
			return append(b, text...), nil
		}
		b = append(b, `{"`+TagJSON+`":`...)
		b = append(b, text...)
		return append(b, '}'), nil
	}
	return b, unencodable("value of unknown kind %v", v.Kind())
}

// AppendIntJSON appends an integer as a JSON number when its magnitude is
// at most 2^53, else as {"__bigint":"<decimal>"}.
func AppendIntJSON(b []byte, i int64) []byte {
	if -maxSafe <= i && i <= maxSafe {
		return strconv.AppendInt(b, i, 10)
	}
	b = append(b, `{"`+TagBigint+`":"`...)
	b = strconv.AppendInt(b, i, 10)
	return append(b, `"}`...)
}

// appendRealJSON writes a finite float as a JSON number that reads back as
// a real: the shortest form that round-trips, in the notation JavaScript's
// Number.prototype.toString picks (jsontext.AppendFloat), with ".0" added
// when that form has neither a fraction nor an exponent.
func appendRealJSON(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, unencodable("real %v cannot be encoded", f)
	}
	start := len(b)
	b = jsontext.AppendFloat(b, f, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' {
			return b, nil
		}
	}
	return append(b, ".0"...), nil
}

// AppendTextJSON appends s as a JSON string, escaping only '"', '\' and
// the control characters below U+0020 (jsontext.AppendString without
// options). Text that is not valid UTF-8 is an error (ErrUnencodable):
// the sync protocol refuses it rather than change it.
func AppendTextJSON(b []byte, s string) ([]byte, error) {
	if i := jsontext.InvalidUTF8String(s); i >= 0 {
		return b, unencodable("text is not valid UTF-8 (byte %d)", i)
	}
	return jsontext.AppendString(b, s, 0), nil
}

// jsonBare checks the JSON text of a JSON-kind value and reports whether it
// may be written bare: it is an object or an array, and not an object whose
// only key is a tag. Everything else (strings, numbers, booleans, null,
// tag-like objects) is wrapped in {"__json": …}.
func jsonBare(text []byte) (bool, error) {
	r := &jsontext.Reader{Data: text, MaxDepth: 2 * MaxJSONDepth, Errors: unencodableErrors}
	if err := r.CheckUTF8(); err != nil {
		return false, err
	}
	var err error
	bare := false
	switch r.Peek() {
	case '{':
		var tag bool
		tag, err = skipObjectTagged(r)
		bare = !tag
	case '[':
		_, _, err = r.Skip()
		bare = true
	default:
		_, _, err = r.Skip()
	}
	if err == nil {
		err = r.End()
	}
	if err == nil && jsontext.Deeper(text, MaxJSONDepth) {
		err = unencodable("nested deeper than %d", MaxJSONDepth)
	}
	if err != nil {
		return false, jsontext.At(err, "JSON value")
	}
	return bare, nil
}

func isTag(key []byte) bool {
	switch string(key) {
	case TagBin, TagBigint, TagJSON:
		return true
	}
	return false
}

// skipObjectTagged consumes an object and reports whether it has exactly
// one member whose key is a tag.
func skipObjectTagged(r *jsontext.Reader) (bool, error) {
	if err := r.OpenObject(); err != nil {
		return false, err
	}
	key, more, err := r.FirstKey()
	if err != nil || !more {
		return false, err
	}
	tag := isTag(key)
	for n := 0; more; n++ {
		if _, _, err := r.Skip(); err != nil {
			return false, err
		}
		if n > 0 {
			tag = false
		}
		if _, more, err = r.ObjectMore(); err != nil {
			return false, err
		}
	}
	return tag, nil
}

// ReadValueJSON reads one value in the form AppendValueJSON writes,
// without a schema: an integer literal within ±2^53 is an Integer, any
// other number a Real, a string Text, an array or untagged object a JSON
// value, a tagged object the tagged value. The Reader's input must be
// valid UTF-8 (Reader.CheckUTF8). With arena not nil, short text values
// share the allocation of *arena's blocks (ArenaText).
func ReadValueJSON(r *jsontext.Reader, arena *[]byte) (Value, error) {
	switch c := r.Peek(); {
	case c == 'n':
		if r.Null() {
			return Null, nil
		}
	case c == 't' || c == 'f':
		b, err := r.Boolean()
		return Bool(b), err
	case c == '"':
		s, err := r.StringBytes()
		if err != nil {
			return Null, err
		}
		return Text(ArenaText(arena, s)), nil
	case c == '-' || ('0' <= c && c <= '9'):
		start := r.Pos
		lit, isInt, err := r.Number()
		if err != nil {
			return Null, err
		}
		if isInt {
			if i, ok := jsontext.SafeInt(lit); ok {
				return Int(i), nil
			}
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil || math.IsInf(f, 0) {
			return Null, r.FailAt(start, "number %s out of range", lit)
		}
		return Real(f), nil
	case c == '[':
		start, end, err := r.Skip()
		if err != nil {
			return Null, err
		}
		return readJSONSpan(r, start, end)
	case c == '{':
		return readObjectValue(r)
	}
	return Null, r.Want("a value")
}

// ArenaBlock is the size of an ArenaText block: an arena starts as
// make([]byte, 0, ArenaBlock).
const ArenaBlock = 16 << 10

// ArenaText returns b as a string. With an arena, short strings are
// copied into it and share its allocation (a snapshot chunk's thousands
// of names and codes cost a few allocations, not one each: allocation is
// dear in WebAssembly); a block is only ever appended to, so the strings
// it holds never change. With a nil arena (or *arena nil), it is string(b).
func ArenaText(arena *[]byte, b []byte) string {
	if arena == nil || *arena == nil || len(b) == 0 || len(b) > ArenaBlock/8 {
		return string(b)
	}
	if cap(*arena)-len(*arena) < len(b) {
		*arena = make([]byte, 0, ArenaBlock)
	}
	start := len(*arena)
	*arena = append(*arena, b...)
	return unsafe.String(&(*arena)[start], len(b))
}

func readJSONSpan(r *jsontext.Reader, start, end int) (Value, error) {
	v, err := JSONValue(r.Data[start:end])
	if err != nil {
		return Null, r.FailAt(start, "%v", err)
	}
	if jsontext.Deeper(v.JSON(), MaxJSONDepth) {
		return Null, r.FailAt(start, "JSON value nested deeper than %d", MaxJSONDepth)
	}
	return v, nil
}

// readObjectValue reads an object: a tagged value when its only key is a
// tag, else a JSON value.
func readObjectValue(r *jsontext.Reader) (Value, error) {
	start := r.Pos
	if err := r.OpenObject(); err != nil {
		return Null, err
	}
	key, more, err := r.FirstKey()
	if err != nil {
		return Null, err
	}
	if !more {
		return readJSONSpan(r, start, r.Pos)
	}
	tag := ""
	if isTag(key) {
		tag = string(key)
	}
	vstart, vend, err := r.Skip()
	if err != nil {
		return Null, jsontext.At(err, tag)
	}
	_, more, err = r.ObjectMore()
	for more && err == nil {
		tag = ""
		if _, _, err = r.Skip(); err == nil {
			_, more, err = r.ObjectMore()
		}
	}
	if err != nil {
		return Null, err
	}
	switch tag {
	case "":
		return readJSONSpan(r, start, r.Pos)
	case TagJSON:
		v, err := readJSONSpan(r, vstart, vend)
		return v, jsontext.At(err, tag)
	}
	end := r.Pos
	r.Pos = vstart
	s, err := r.Str()
	r.Pos = end
	if err != nil {
		return Null, jsontext.At(err, tag)
	}
	if tag == TagBin {
		// Go's decoder skips '\r' and '\n'; the length check rejects them.
		out := make([]byte, stdStrict.DecodedLen(len(s)))
		n, err := stdStrict.Decode(out, []byte(s))
		if err != nil || stdStrict.EncodedLen(n) != len(s) {
			return Null, jsontext.At(r.FailAt(vstart, "not padded standard base64"), tag)
		}
		return Blob(out[:n]), nil
	}
	// TagBigint: canonical decimal of an int64.
	if !canonicalDecimal(s) {
		return Null, jsontext.At(r.FailAt(vstart, "%q is not a canonical decimal integer", s), tag)
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Null, jsontext.At(r.FailAt(vstart, "%s does not fit a 64-bit integer", s), tag)
	}
	return Int(i), nil
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

// hlcTextLen is the length of an HLC's JSON text: standard base64 of 30
// bytes, which needs no padding.
const hlcTextLen = 40

// AppendHLCText appends the text form of h that the sync protocol and
// the stored migrations use: the standard base64 (RFC 4648 § 4) of its
// 30-byte encoding (HLC.Bytes), always 40 characters, unquoted.
func AppendHLCText(b []byte, h HLC) []byte {
	var raw [HLCSize]byte
	h.Put(raw[:])
	return stdStrict.AppendEncode(b, raw[:])
}

// AppendHLCJSON appends AppendHLCText's form of h as a JSON string.
func AppendHLCJSON(b []byte, h HLC) []byte {
	b = append(b, '"')
	b = AppendHLCText(b, h)
	return append(b, '"')
}

// ReadHLCJSON reads a JSON string holding an HLC (AppendHLCJSON).
func ReadHLCJSON(r *jsontext.Reader) (HLC, error) {
	start := r.Pos
	if r.Peek() != '"' {
		return HLC{}, r.Want("an HLC (a string)")
	}
	s, err := r.StringBytes()
	if err != nil {
		return HLC{}, err
	}
	return ParseHLCText(r, s, start)
}

// ParseHLCText parses the text s of an HLC (AppendHLCText); errors are
// made by r at byte offset off: anything but 40 characters of the
// standard base64 alphabet that decode to 30 bytes.
func ParseHLCText(r *jsontext.Reader, s []byte, off int) (HLC, error) {
	var raw [HLCSize]byte
	if len(s) != hlcTextLen {
		return HLC{}, r.FailAt(off, "HLC: want %d base64 characters, got %d", hlcTextLen, len(s))
	}
	if n, err := stdStrict.Decode(raw[:], s); err != nil || n != HLCSize {
		return HLC{}, r.FailAt(off, "HLC %q: not standard base64 of %d bytes", s, HLCSize)
	}
	return HLCFromBytes(raw[:])
}
