package jsontext

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit of a Reader whose MaxDepth is zero:
// encoding/json's.
const DefaultMaxDepth = 10000

// Surrogates says what a Reader reads an escaped UTF-16 surrogate that is
// not half of a pair as (see the package documentation).
type Surrogates uint8

const (
	// SurrogateError refuses the text: "unpaired UTF-16 surrogate escape".
	SurrogateError Surrogates = iota
	// SurrogateReplace reads U+FFFD, as encoding/json does.
	SurrogateReplace
	// SurrogateWTF8 reads the surrogate's 3-byte WTF-8 form (not UTF-8).
	SurrogateWTF8
)

// SyntaxError is a Reader's error when its Errors is nil: Msg, at byte
// Offset of the input.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string { return e.Msg + " at offset " + strconv.Itoa(e.Offset) }

// Reader is a pull parser over one JSON text, Data. Pos is the byte offset
// of the next token, Depth the number of arrays and objects open at Pos; a
// caller may save both and restore them to read a part of the text again.
// The zero Reader with Data set is ready to use.
type Reader struct {
	Data  []byte
	Pos   int
	Depth int
	// MaxDepth is the deepest nesting of arrays and objects accepted;
	// DefaultMaxDepth when zero.
	MaxDepth int
	// Surrogates says how an unpaired escaped surrogate reads.
	Surrogates Surrogates
	// Errors, when not nil, makes the Reader's errors from a message and
	// a byte offset; else they are *SyntaxError.
	Errors ErrorMaker
}

// ErrorMaker makes a Reader's errors in its caller's error type (an
// interface rather than a func field so that a caller can pass itself
// without allocating a closure per Reader).
type ErrorMaker interface {
	NewError(msg string, offset int) error
}

// Fail returns an error at Pos with a message formatted as by fmt.Sprintf.
//
//go:noinline
func (r *Reader) Fail(format string, args ...any) error {
	return r.errorAt(r.Pos, fmt.Sprintf(format, args...))
}

// FailAt returns an error at byte offset off.
//
//go:noinline
func (r *Reader) FailAt(off int, format string, args ...any) error {
	return r.errorAt(off, fmt.Sprintf(format, args...))
}

func (r *Reader) errorAt(off int, msg string) error {
	if r.Errors != nil {
		return r.Errors.NewError(msg, off)
	}
	return &SyntaxError{Msg: msg, Offset: off}
}

// InvalidUTF8 returns the offset of the first byte of b that is not part
// of valid UTF-8, or -1 when b is valid UTF-8.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		c, n := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// CheckUTF8 checks that the whole input is valid UTF-8: else "invalid
// UTF-8" at the offset of the first bad byte.
func (r *Reader) CheckUTF8() error {
	if i := InvalidUTF8(r.Data); i >= 0 {
		return r.FailAt(i, "invalid UTF-8")
	}
	return nil
}

// InvalidUTF8String is InvalidUTF8 for a string.
func InvalidUTF8String(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

func (r *Reader) ws() {
	for r.Pos < len(r.Data) {
		switch r.Data[r.Pos] {
		case ' ', '\t', '\n', '\r':
			r.Pos++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte, or 0 at the end.
func (r *Reader) Peek() byte {
	r.ws()
	if r.Pos < len(r.Data) {
		return r.Data[r.Pos]
	}
	return 0
}

// End checks that only whitespace remains.
func (r *Reader) End() error {
	r.ws()
	if r.Pos != len(r.Data) {
		return r.Fail("unexpected data after the JSON value")
	}
	return nil
}

// kindAt names the JSON kind starting with byte c, for error messages:
// "an object", "a string", "the end of input" (c == 0), ...
func kindAt(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		return "the end of input"
	}
	if c == '-' || ('0' <= c && c <= '9') {
		return "a number"
	}
	return fmt.Sprintf("%q", c)
}

// Want returns a type-mismatch error: "want a string, got null".
//
//go:noinline
func (r *Reader) Want(what string) error {
	return r.Fail("want %s, got %s", what, kindAt(r.Peek()))
}

// OpenObject consumes '{'.
func (r *Reader) OpenObject() error {
	if r.Peek() != '{' {
		return r.Want("an object")
	}
	return r.enter()
}

// OpenArray consumes '['.
func (r *Reader) OpenArray() error {
	if r.Peek() != '[' {
		return r.Want("an array")
	}
	return r.enter()
}

func (r *Reader) enter() error {
	r.Depth++
	max := r.MaxDepth
	if max == 0 {
		max = DefaultMaxDepth
	}
	if r.Depth > max {
		return r.Fail("nesting deeper than %d", max)
	}
	r.Pos++
	return nil
}

// leave consumes the closing byte at Pos.
func (r *Reader) leave() {
	r.Pos++
	r.Depth--
}

// FirstKey is called right after OpenObject: it returns the first key and
// more = true, or more = false after consuming the '}' of an empty object.
// A key is a slice of the input when it has no escapes; callers must not
// keep it.
func (r *Reader) FirstKey() (key []byte, more bool, err error) {
	if r.Peek() == '}' {
		r.leave()
		return nil, false, nil
	}
	return r.key()
}

// key reads `"name" :` and returns the name.
func (r *Reader) key() ([]byte, bool, error) {
	if r.Peek() != '"' {
		return nil, false, r.Want("an object key")
	}
	k, err := r.StringBytes()
	if err != nil {
		return nil, false, err
	}
	if r.Peek() != ':' {
		return nil, false, r.Fail("want ':' after object key")
	}
	r.Pos++
	return k, true, nil
}

// ObjectMore is called after a member's value: it consumes ',' and returns
// the next key, or consumes '}' and returns more = false.
func (r *Reader) ObjectMore() (key []byte, more bool, err error) {
	switch r.Peek() {
	case ',':
		r.Pos++
		if r.Peek() == '}' {
			return nil, false, r.Fail("trailing comma in object")
		}
		return r.key()
	case '}':
		r.leave()
		return nil, false, nil
	}
	return nil, false, r.Fail("want ',' or '}' in object, got %s", kindAt(r.Peek()))
}

// Members iterates over an object's members, calling fn with each key
// positioned at its value; fn must consume the value.
func (r *Reader) Members(fn func(key []byte) error) error {
	if err := r.OpenObject(); err != nil {
		return err
	}
	key, more, err := r.FirstKey()
	for ; more && err == nil; key, more, err = r.ObjectMore() {
		if err := fn(key); err != nil {
			return err
		}
	}
	return err
}

// ArrayNext is called before each element of an array opened with
// OpenArray (i is the element's index): it returns true when an element
// follows, or false after consuming the closing ']'.
func (r *Reader) ArrayNext(i int) (bool, error) {
	c := r.Peek()
	if c == ']' && i == 0 {
		r.leave()
		return false, nil
	}
	if i == 0 {
		return true, nil
	}
	switch c {
	case ',':
		r.Pos++
		if r.Peek() == ']' {
			return false, r.Fail("trailing comma in array")
		}
		return true, nil
	case ']':
		r.leave()
		return false, nil
	}
	return false, r.Fail("want ',' or ']' in array, got %s", kindAt(c))
}

// Elements iterates over an array, calling fn at each element with its
// index; fn must consume the element.
func (r *Reader) Elements(fn func(i int) error) error {
	if err := r.OpenArray(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := r.ArrayNext(i)
		if err != nil || !more {
			return err
		}
		if err := fn(i); err != nil {
			return err
		}
	}
}

// literal consumes the literal word (true, false, null) if present.
func (r *Reader) literal(word string) bool {
	if len(r.Data)-r.Pos >= len(word) && string(r.Data[r.Pos:r.Pos+len(word)]) == word {
		r.Pos += len(word)
		return true
	}
	return false
}

// Null consumes null if it comes next and reports whether it did.
func (r *Reader) Null() bool {
	return r.Peek() == 'n' && r.literal("null")
}

// Boolean reads true or false.
func (r *Reader) Boolean() (bool, error) {
	switch r.Peek() {
	case 't':
		if r.literal("true") {
			return true, nil
		}
	case 'f':
		if r.literal("false") {
			return false, nil
		}
	}
	return false, r.Want("a boolean")
}

// Str reads a string and returns it as a new Go string.
func (r *Reader) Str() (string, error) {
	if r.Peek() != '"' {
		return "", r.Want("a string")
	}
	b, err := r.StringBytes()
	return string(b), err
}

// NonEmptyStr reads a string that must not be empty.
func (r *Reader) NonEmptyStr() (string, error) {
	start := r.Pos
	s, err := r.Str()
	if err == nil && s == "" {
		err = r.FailAt(start, "must not be empty")
	}
	return s, err
}

// StringBytes reads the string at Pos (which must be '"') and returns its
// decoded bytes: a slice of the input when the string has no escapes, else
// a new buffer.
func (r *Reader) StringBytes() ([]byte, error) {
	return r.scanString(true)
}

// scanString reads the string at Pos. With decode it returns the decoded
// bytes; without, it only checks the string (and returns nil when the
// string has escapes).
func (r *Reader) scanString(decode bool) ([]byte, error) {
	start := r.Pos + 1
	for i := start; i < len(r.Data); i++ {
		switch c := r.Data[i]; {
		case c == '"':
			r.Pos = i + 1
			return r.Data[start:i], nil
		case c == '\\':
			return r.escapedString(start, i, decode)
		case c < 0x20:
			return nil, r.FailAt(i, "control character %#02x in string", c)
		}
	}
	return nil, r.FailAt(r.Pos, "unterminated string")
}

// escapedString reads a string with escapes; Data[start:i] has none.
func (r *Reader) escapedString(start, i int, decode bool) ([]byte, error) {
	var buf []byte
	if decode {
		buf = append(make([]byte, 0, i-start+16), r.Data[start:i]...)
	}
	for i < len(r.Data) {
		c := r.Data[i]
		switch {
		case c == '"':
			r.Pos = i + 1
			return buf, nil
		case c < 0x20:
			return nil, r.FailAt(i, "control character %#02x in string", c)
		case c != '\\':
			if decode {
				buf = append(buf, c)
			}
			i++
			continue
		}
		if i+1 >= len(r.Data) {
			break
		}
		e := r.Data[i+1]
		if e == 'u' {
			var err error
			if buf, i, err = r.unicodeEscape(buf, i, decode); err != nil {
				return nil, err
			}
			continue
		}
		d := unescape(e)
		if d == 0 {
			return nil, r.FailAt(i, "invalid escape \\%c", e)
		}
		if decode {
			buf = append(buf, d)
		}
		i += 2
	}
	return nil, r.FailAt(start-1, "unterminated string")
}

// unescape returns the byte the escape \e stands for, 0 for none (\u is
// read by unicodeEscape).
func unescape(e byte) byte {
	switch e {
	case '"', '\\', '/':
		return e
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// unicodeEscape reads the \uXXXX escape at Data[i] (and a second one when
// the two form a surrogate pair), appends what it stands for to buf when
// decoding, and returns the offset after it.
func (r *Reader) unicodeEscape(buf []byte, i int, decode bool) ([]byte, int, error) {
	c1, ok := hex4(r.Data, i+2)
	if !ok {
		return nil, i, r.FailAt(i, "invalid \\u escape")
	}
	at := i
	i += 6
	if 0xD800 <= c1 && c1 < 0xE000 {
		if c1 < 0xDC00 && i+1 < len(r.Data) && r.Data[i] == '\\' && r.Data[i+1] == 'u' {
			if c2, ok := hex4(r.Data, i+2); ok && 0xDC00 <= c2 && c2 < 0xE000 {
				if decode {
					buf = utf8.AppendRune(buf, 0x10000+(c1-0xD800)<<10+(c2-0xDC00))
				}
				return buf, i + 6, nil
			}
		}
		switch r.Surrogates {
		case SurrogateError:
			return nil, i, r.FailAt(at, "unpaired UTF-16 surrogate escape")
		case SurrogateWTF8:
			if decode {
				buf = append(buf, 0xE0|byte(c1>>12), 0x80|byte(c1>>6)&0x3F, 0x80|byte(c1)&0x3F)
			}
			return buf, i, nil
		}
		// SurrogateReplace: utf8.AppendRune writes U+FFFD for a surrogate.
	}
	if decode {
		buf = utf8.AppendRune(buf, c1)
	}
	return buf, i, nil
}

// hex4 reads the four hex digits at b[i:] (either case).
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// Number reads a number literal and reports whether it is an integer
// literal (no fraction, no exponent). The literal is a slice of the input.
func (r *Reader) Number() (lit []byte, isInt bool, err error) {
	c := r.Peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, false, r.Want("a number")
	}
	start := r.Pos
	end, isInt, msg := scanNumber(r.Data, start)
	if msg != "" {
		return nil, false, r.FailAt(start, "%s", msg)
	}
	r.Pos = end
	return r.Data[start:end], isInt, nil
}

// scanNumber scans the number literal at d[i:] and returns its end, or a
// message saying what is wrong with it. A literal followed directly by a
// letter, digit, '.', '+' or '-' is invalid ("01", "1x", "1.5.2").
func scanNumber(d []byte, i int) (end int, isInt bool, msg string) {
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
		return 0, false, "invalid number"
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		if digits() == 0 {
			return 0, false, "invalid number: no digits after '.'"
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false, "invalid number: no digits in exponent"
		}
	}
	if i < len(d) && isWordByte(d[i]) {
		return 0, false, "invalid number"
	}
	return i, isInt, ""
}

func isWordByte(c byte) bool {
	return c == '.' || c == '+' || c == '-' || ('0' <= c && c <= '9') ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// IsNumber reports whether s is exactly one JSON number literal.
func IsNumber(s string) bool {
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return false
	}
	end, _, msg := scanNumber([]byte(s), 0)
	return msg == "" && end == len(s)
}

// Skip consumes one value of any kind, checking it, and returns its span
// in the input.
func (r *Reader) Skip() (start, end int, err error) {
	c := r.Peek()
	start = r.Pos
	switch {
	case c == '{':
		err = r.Members(func([]byte) error {
			_, _, err := r.Skip()
			return err
		})
	case c == '[':
		err = r.Elements(func(int) error {
			_, _, err := r.Skip()
			return err
		})
	case c == '"':
		_, err = r.scanString(false)
	case c == 't' || c == 'f':
		_, err = r.Boolean()
	case c == 'n':
		if !r.Null() {
			err = r.Want("a JSON value")
		}
	case c == '-' || ('0' <= c && c <= '9'):
		_, _, err = r.Number()
	default:
		err = r.Want("a JSON value")
	}
	return start, r.Pos, err
}

// Compact appends the next value to dst without insignificant whitespace,
// as encoding/json's Compact does; strings are copied unchanged.
func (r *Reader) Compact(dst []byte) ([]byte, error) {
	switch c := r.Peek(); c {
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if err := r.enter(); err != nil {
			return dst, err
		}
		dst = append(dst, c)
		for i := 0; ; i++ {
			more, err := r.compactNext(c, i)
			if err != nil || !more {
				return append(dst, closing), err
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			if c == '{' {
				start := r.Pos
				if _, err := r.scanString(false); err != nil {
					return dst, err
				}
				dst = append(append(dst, r.Data[start:r.Pos]...), ':')
				if r.Peek() != ':' {
					return dst, r.Fail("want ':' after object key")
				}
				r.Pos++
			}
			if dst, err = r.Compact(dst); err != nil {
				return dst, err
			}
		}
	}
	start, end, err := r.Skip()
	return append(dst, r.Data[start:end]...), err
}

// compactNext is ArrayNext for an array (open == '[') or, for an object,
// the same step leaving the reader at the next key.
func (r *Reader) compactNext(open byte, i int) (bool, error) {
	if open == '[' {
		return r.ArrayNext(i)
	}
	c := r.Peek()
	switch {
	case c == '}' && i == 0:
		r.leave()
		return false, nil
	case i == 0:
	case c == ',':
		r.Pos++
	case c == '}':
		r.leave()
		return false, nil
	default:
		return false, r.Fail("want ',' or '}' in object, got %s", kindAt(c))
	}
	if r.Peek() != '"' {
		return false, r.Want("an object key")
	}
	return true, nil
}

// Compact appends src, which must be exactly one JSON value, to dst
// without insignificant whitespace (see Reader.Compact). On error dst is
// returned as given.
func Compact(dst, src []byte, surrogates Surrogates) ([]byte, error) {
	r := Reader{Data: src, Surrogates: surrogates}
	out, err := r.Compact(dst)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// Deeper reports whether the valid JSON text s nests arrays and objects
// deeper than max (1 for [1], 2 for [[1]]).
func Deeper[T ~string | ~[]byte](s T, max int) bool {
	if len(s) < 2*(max+1) { // each level takes two bytes
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
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
