package engine

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// JSON without encoding/json's machinery. The engine handles JSON in three
// places: values of json columns (validated and compacted, or marshaled
// from Go values), stored schema migrations and the stored snapshot
// checkpoint. encoding/json does all of it by reflection, and in the
// browser build that is about 0.9 MB of replica.wasm's 6.5 MB (220 KB
// gzipped), so the engine does it here, matching encoding/json's output
// and acceptance byte for byte (json_test.go checks them against it). Only
// json.RawMessage and json.Number are used from encoding/json, as types.
//
// What stays with encoding/json is marshaling Go values whose encoding it
// defines by methods or struct fields (structs, types with MarshalJSON or
// MarshalText) into json columns: marshalJSONFallback, which natively is
// encoding/json and in the browser build an error (json_js.go). The
// JavaScript API never produces such values; it hands objects and arrays
// over as json.RawMessage.

// maxJSONDepth is encoding/json's nesting limit, which the scanner shares
// (json_test.go holds it to encoding/json's acceptance).
const maxJSONDepth = 10000

// MaxJSONDepth is the deepest nesting of arrays and objects a value of a
// json column may have (1 for [1], 2 for [[1]]). It is the sync protocol's
// limit (wire.MaxJSONDepth is this constant): a deeper value could be
// stored but never pushed, so a local write of one is refused with a
// *ValidationError.
const MaxJSONDepth = 256

// jsonTooDeep reports whether the valid JSON text s nests arrays and
// objects deeper than MaxJSONDepth.
func jsonTooDeep(s string) bool {
	if len(s) < 2*(MaxJSONDepth+1) { // each level takes two bytes
		return false
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > MaxJSONDepth {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// errJSONMethods is returned by appendJSONOf for a value whose encoding
// encoding/json defines by methods or struct fields.
var errJSONMethods = errors.New("needs encoding/json")

// jsonSyntaxError is an invalid JSON text.
type jsonSyntaxError struct {
	msg    string
	offset int
}

func (e *jsonSyntaxError) Error() string {
	return e.msg + " at offset " + strconv.Itoa(e.offset)
}

// jsonScanner reads one JSON text. It accepts what encoding/json's Valid
// accepts: RFC 8259, without checking strings for valid UTF-8 or escaped
// surrogates for pairing, nested at most maxJSONDepth deep.
type jsonScanner struct {
	src   []byte
	pos   int
	depth int
}

func (s *jsonScanner) fail(msg string) error {
	return &jsonSyntaxError{msg: msg, offset: s.pos}
}

func (s *jsonScanner) ws() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.pos < len(s.src) {
		return s.src[s.pos]
	}
	return 0
}

// end checks that only whitespace remains.
func (s *jsonScanner) end() error {
	if s.peek() != 0 || s.pos < len(s.src) {
		return s.fail("unexpected data after the JSON value")
	}
	return nil
}

// enter consumes the '{' or '[' at pos.
func (s *jsonScanner) enter() error {
	if s.depth++; s.depth > maxJSONDepth {
		return s.fail("JSON nested too deeply")
	}
	s.pos++
	return nil
}

// next is called after an element or member: it consumes ',' (more true)
// or the closing byte.
func (s *jsonScanner) next(closing byte) (more bool, err error) {
	switch s.peek() {
	case ',':
		s.pos++
		return true, nil
	case closing:
		s.pos++
		s.depth--
		return false, nil
	}
	return false, s.fail("want ',' or '" + string(closing) + "'")
}

// empty consumes the closing byte of an empty object or array.
func (s *jsonScanner) empty(closing byte) bool {
	if s.peek() == closing {
		s.pos++
		s.depth--
		return true
	}
	return false
}

// key reads `"name":` and returns the quoted name.
func (s *jsonScanner) key() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("want an object key")
	}
	q, err := s.quoted()
	if err != nil {
		return nil, err
	}
	if s.peek() != ':' {
		return nil, s.fail("want ':' after an object key")
	}
	s.pos++
	return q, nil
}

// quoted consumes the string at pos and returns it, quotes included.
func (s *jsonScanner) quoted() ([]byte, error) {
	start := s.pos
	for i := start + 1; i < len(s.src); {
		switch c := s.src[i]; {
		case c == '"':
			s.pos = i + 1
			return s.src[start:s.pos], nil
		case c < 0x20:
			s.pos = i
			return nil, s.fail("control character in string")
		case c != '\\':
			i++
			continue
		}
		if i+1 >= len(s.src) {
			break
		}
		switch s.src[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if _, ok := jsonHex4(s.src, i+2); !ok {
				s.pos = i
				return nil, s.fail("invalid \\u escape")
			}
			i += 6
		default:
			s.pos = i
			return nil, s.fail("invalid escape in string")
		}
	}
	return nil, s.fail("unterminated string")
}

// number consumes the number at pos and returns its text.
func (s *jsonScanner) number() ([]byte, error) {
	start, i, d := s.pos, s.pos, s.src
	digits := func() int {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		return nil, s.fail("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return nil, s.fail("invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, s.fail("invalid number")
		}
	}
	s.pos = i
	return d[start:i], nil
}

// literal consumes true, false or null.
func (s *jsonScanner) literal() ([]byte, error) {
	w := "null"
	switch s.src[s.pos] {
	case 't':
		w = "true"
	case 'f':
		w = "false"
	}
	if len(s.src)-s.pos < len(w) || string(s.src[s.pos:s.pos+len(w)]) != w {
		return nil, s.fail("invalid literal")
	}
	s.pos += len(w)
	return s.src[s.pos-len(w) : s.pos], nil
}

// compact appends the next value to dst without insignificant whitespace.
func (s *jsonScanner) compact(dst []byte) ([]byte, error) {
	var tok []byte
	var err error
	switch c := s.peek(); {
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if err := s.enter(); err != nil {
			return dst, err
		}
		dst = append(dst, c)
		for more := !s.empty(closing); more; {
			if c == '{' {
				k, err := s.key()
				if err != nil {
					return dst, err
				}
				dst = append(append(dst, k...), ':')
			}
			if dst, err = s.compact(dst); err != nil {
				return dst, err
			}
			if more, err = s.next(closing); err != nil {
				return dst, err
			}
			if more {
				dst = append(dst, ',')
			}
		}
		return append(dst, closing), nil
	case c == '"':
		tok, err = s.quoted()
	case c == 't' || c == 'f' || c == 'n':
		tok, err = s.literal()
	case c == '-' || '0' <= c && c <= '9':
		tok, err = s.number()
	case c == 0 && s.pos == len(s.src):
		err = s.fail("unexpected end of JSON input")
	default:
		err = s.fail("invalid character " + strconv.QuoteRune(rune(c)) + " looking for a value")
	}
	return append(dst, tok...), err
}

// compactJSON appends src, which must be exactly one JSON value (see
// jsonScanner), to dst without insignificant whitespace, as
// encoding/json's Compact does; strings are copied unchanged. On error dst
// is returned as given.
func compactJSON(dst, src []byte) ([]byte, error) {
	s := jsonScanner{src: src}
	out, err := s.compact(dst)
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// isJSONNumber reports whether s is exactly a JSON number literal.
func isJSONNumber(s string) bool {
	sc := jsonScanner{src: []byte(s)}
	n, err := sc.number()
	return err == nil && len(n) == len(s)
}

func jsonHex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// unquoteJSON decodes a quoted string (as quoted returns it) as
// encoding/json does: invalid UTF-8 and unpaired surrogate escapes become
// U+FFFD.
func unquoteJSON(q []byte) string {
	q = q[1 : len(q)-1]
	if !slices.Contains(q, '\\') && utf8.Valid(q) {
		return string(q)
	}
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); {
		c := q[i]
		if c != '\\' {
			r, n := utf8.DecodeRune(q[i:])
			out = utf8.AppendRune(out, r)
			i += n
			continue
		}
		e := q[i+1]
		i += 2
		switch e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := jsonHex4(q, i)
			i += 4
			if 0xD800 <= r && r < 0xDC00 && i+6 <= len(q) && q[i] == '\\' && q[i+1] == 'u' {
				if lo, ok := jsonHex4(q, i+2); ok && 0xDC00 <= lo && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			out = utf8.AppendRune(out, r) // a lone surrogate appends U+FFFD
		default: // '"', '\\', '/'
			out = append(out, e)
		}
	}
	return string(out)
}

// jsonNumber is a number's text in a decoded JSON tree.
type jsonNumber string

// tree decodes the next value into nil, bool, string, jsonNumber, []any or
// map[string]any (a repeated key: the last wins, as in encoding/json).
func (s *jsonScanner) tree() (any, error) {
	switch c := s.peek(); {
	case c == '{':
		if err := s.enter(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for more := !s.empty('}'); more; {
			k, err := s.key()
			if err != nil {
				return nil, err
			}
			if m[unquoteJSON(k)], err = s.tree(); err != nil {
				return nil, err
			}
			if more, err = s.next('}'); err != nil {
				return nil, err
			}
		}
		return m, nil
	case c == '[':
		if err := s.enter(); err != nil {
			return nil, err
		}
		l := []any{}
		for more := !s.empty(']'); more; {
			v, err := s.tree()
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			if more, err = s.next(']'); err != nil {
				return nil, err
			}
		}
		return l, nil
	case c == '"':
		q, err := s.quoted()
		if err != nil {
			return nil, err
		}
		return unquoteJSON(q), nil
	case c == 't' || c == 'f' || c == 'n':
		w, err := s.literal()
		if err != nil || w[0] == 'n' {
			return nil, err
		}
		return w[0] == 't', nil
	}
	n, err := s.number()
	return jsonNumber(n), err
}

// decodeJSONObject decodes src, which must be one JSON object (or null: an
// empty object).
func decodeJSONObject(src []byte) (jsonObject, error) {
	s := jsonScanner{src: src}
	v, err := s.tree()
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// jsonObject reads the members of a decoded object with encoding/json's
// rules for struct fields: an absent or null member is the zero value, a
// member of another JSON type is an error, unknown members are ignored.
// (Keys match exactly: encoding/json also matched them case-insensitively,
// which the engine's own stored records never needed.)
type jsonObject map[string]any

func jsonTypeError(key string, want string) error {
	return errors.New("member " + strconv.Quote(key) + ": want " + want)
}

func (o jsonObject) str(key string) (string, error) {
	switch v := o[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", jsonTypeError(key, "a string")
}

func (o jsonObject) boolean(key string) (bool, error) {
	switch v := o[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	}
	return false, jsonTypeError(key, "a boolean")
}

// bytes reads a base64 (standard encoding) string, as encoding/json reads
// a []byte.
func (o jsonObject) bytes(key string) ([]byte, error) {
	s, err := o.str(key)
	if err != nil || o[key] == nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, jsonTypeError(key, "base64")
	}
	return b, nil
}

func (o jsonObject) uint(key string) (uint64, error) {
	n, _ := o[key].(jsonNumber)
	if o[key] == nil {
		return 0, nil
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		return 0, jsonTypeError(key, "an unsigned integer")
	}
	return u, nil
}

func (o jsonObject) int(key string) (int64, error) {
	n, _ := o[key].(jsonNumber)
	if o[key] == nil {
		return 0, nil
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, jsonTypeError(key, "an integer")
	}
	return i, nil
}

// list returns an array member, nil when absent or null.
func (o jsonObject) list(key string) ([]any, error) {
	switch v := o[key].(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	}
	return nil, jsonTypeError(key, "an array")
}

// strs reads an array of strings: nil when absent or null, empty for [].
func (o jsonObject) strs(key string) ([]string, error) {
	l, err := o.list(key)
	if err != nil || l == nil {
		return nil, err
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, ok := v.(string)
		if !ok {
			return nil, jsonTypeError(key, "an array of strings")
		}
		out[i] = s
	}
	return out, nil
}

// obj reads an object member, nil when absent or null.
func (o jsonObject) obj(key string) (jsonObject, error) {
	switch v := o[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	return nil, jsonTypeError(key, "an object")
}

// objs reads an array of objects: nil when absent or null.
func (o jsonObject) objs(key string) ([]jsonObject, error) {
	l, err := o.list(key)
	if err != nil || l == nil {
		return nil, err
	}
	out := make([]jsonObject, len(l))
	for i, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, jsonTypeError(key, "an array of objects")
		}
		out[i] = m
	}
	return out, nil
}

// appendJSONString appends s as a JSON string as encoding/json writes it:
// '"', '\\' and control characters escaped (\b \f \n \r \t or \u00xx),
// U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd; with html also '<',
// '>' and '&' (json.Marshal's default; json column values are written
// without, as JavaScript's JSON.stringify writes them).
func appendJSONString(dst []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
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
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
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

// appendJSONBytes appends b as encoding/json writes a []byte: a base64
// (standard encoding) string, null for nil.
func appendJSONBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendJSONStrings appends a []string as encoding/json writes it (null
// for nil), strings HTML-escaped.
func appendJSONStrings(dst []byte, l []string) []byte {
	if l == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s, true)
	}
	return append(dst, ']')
}

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	jsonMarshalerType = reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()
	textMarshalerType = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// hasJSONMethods reports whether encoding/json would encode a value of t
// through a MarshalJSON or MarshalText method (of t or of *t).
func hasJSONMethods(t reflect.Type) bool {
	if t.Name() == "" && t.Kind() != reflect.Pointer && t.Kind() != reflect.Struct {
		return false // no methods
	}
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		p.Implements(jsonMarshalerType) || p.Implements(textMarshalerType)
}

// marshalJSON returns v as encoding/json's Marshal writes it without HTML
// escaping (an Encoder with SetEscapeHTML(false), without the newline). It
// writes booleans, numbers, strings, []byte, json.RawMessage, json.Number,
// slices, arrays, maps with string or integer keys, pointers and
// interfaces of those itself, and leaves values that involve structs or
// MarshalJSON/MarshalText methods to marshalJSONFallback.
func marshalJSON(v any) ([]byte, error) {
	switch x := v.(type) { // the common cases, without reflection
	case string:
		return appendJSONString(nil, x, false), nil
	case []byte:
		return appendJSONBytes(nil, x), nil
	}
	b, err := appendJSONOf(nil, reflect.ValueOf(v), 0)
	if errors.Is(err, errJSONMethods) {
		return marshalJSONFallback(v)
	}
	return b, err
}

// appendJSONOf appends v for marshalJSON, or fails with errJSONMethods.
func appendJSONOf(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	if !v.IsValid() {
		return append(dst, "null"...), nil
	}
	if depth > maxJSONDepth {
		return dst, errors.New("json: value nested too deeply (a cycle?)")
	}
	t := v.Type()
	switch t {
	case rawMessageType:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		out, err := compactJSON(dst, v.Bytes())
		if err != nil {
			return dst, errors.New("json: error calling MarshalJSON for type json.RawMessage: " + err.Error())
		}
		return out, nil
	case numberType:
		s := v.String()
		if s == "" {
			s = "0" // as encoding/json writes an empty Number
		}
		if !isJSONNumber(s) {
			return dst, errors.New("json: invalid number literal " + strconv.Quote(s))
		}
		return append(dst, s...), nil
	}
	if hasJSONMethods(t) {
		return dst, errJSONMethods
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		bits := t.Bits()
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, bits))
		}
		return appendJSONFloatBits(dst, f, bits), nil
	case reflect.String:
		return appendJSONString(dst, v.String(), false), nil
	case reflect.Slice:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 && !hasJSONMethods(t.Elem()) {
			return appendJSONBytes(dst, v.Bytes()), nil
		}
		return appendJSONElems(dst, v, depth)
	case reflect.Array:
		return appendJSONElems(dst, v, depth)
	case reflect.Map:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendJSONMap(dst, v, depth)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendJSONOf(dst, v.Elem(), depth+1)
	}
	return dst, errJSONMethods // structs; chan, func and complex, which encoding/json rejects
}

func appendJSONElems(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	dst = append(dst, '[')
	for i := range v.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendJSONOf(dst, v.Index(i), depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendJSONMap writes a map's members sorted by key, as encoding/json
// does; keys of integer kinds are written in decimal.
func appendJSONMap(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	kt := v.Type().Key()
	type member struct {
		key string
		val reflect.Value
	}
	members := make([]member, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		k := it.Key()
		var ks string
		switch {
		case kt.Kind() == reflect.String:
			ks = k.String()
		case hasJSONMethods(kt):
			return dst, errJSONMethods
		case k.CanInt():
			ks = strconv.FormatInt(k.Int(), 10)
		case k.CanUint():
			ks = strconv.FormatUint(k.Uint(), 10)
		default:
			return dst, errJSONMethods // encoding/json rejects the key type
		}
		members = append(members, member{ks, it.Value()})
	}
	// sort.Slice rather than slices.SortFunc: one more instantiation of
	// the generic sort is ~20 KB of the browser build, for a cold path.
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, m.key, false)
		dst = append(dst, ':')
		var err error
		if dst, err = appendJSONOf(dst, m.val, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendJSONFloatBits formats a finite f of the given bit size as
// encoding/json does: shortest round-trip digits for that size, exponent
// form below 1e-6 and from 1e21.
func appendJSONFloatBits(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' { // e-07 → e-7, as encoding/json and JavaScript write it
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
