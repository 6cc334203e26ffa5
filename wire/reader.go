package wire

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// reader is a strict pull parser over one JSON text. It accepts exactly
// RFC 8259 JSON (no comments, no trailing commas, no leading zeros, no raw
// control characters in strings) and leaves the meaning of objects to its
// callers, which reject unknown and duplicate keys. The input must already
// be valid UTF-8 (checkUTF8).
type reader struct {
	data  []byte
	pos   int
	depth int
	// errSentinel is the sentinel the reader's errors wrap: ErrMalformed for
	// frames, engine.ErrSchema for ParseSchema.
	errSentinel error
	// arena, when not nil, holds the bytes of the text values read (see
	// text): set while reading the rows of a snapshot chunk.
	arena []byte
}

// arenaBlock is the size of a text arena block.
const arenaBlock = 16 << 10

// text returns b as a string. With an arena, short strings are copied
// into it and share its allocation (a snapshot chunk's thousands of
// names and codes cost a few allocations, not one each: allocation is
// dear in WebAssembly); a block is only ever appended to, so the strings
// it holds never change. Without an arena, it is string(b).
func (r *reader) text(b []byte) string {
	if r.arena == nil || len(b) == 0 || len(b) > arenaBlock/8 {
		return string(b)
	}
	if cap(r.arena)-len(r.arena) < len(b) {
		r.arena = make([]byte, 0, arenaBlock)
	}
	start := len(r.arena)
	r.arena = append(r.arena, b...)
	return unsafe.String(&r.arena[start], len(b))
}

func newReader(data []byte) *reader {
	return &reader{data: data, errSentinel: ErrMalformed}
}

// fail returns a malformed-input error at the current position.
//
//go:noinline
func (r *reader) fail(format string, args ...any) error {
	return &pathError{sentinel: r.errSentinel, msg: fmt.Sprintf(format, args...), offset: r.pos}
}

// failAt returns a malformed-input error at byte offset off.
//
//go:noinline
func (r *reader) failAt(off int, format string, args ...any) error {
	return &pathError{sentinel: r.errSentinel, msg: fmt.Sprintf(format, args...), offset: off}
}

func checkUTF8(r *reader) error {
	if !utf8.Valid(r.data) {
		for i := 0; i < len(r.data); {
			c, n := utf8.DecodeRune(r.data[i:])
			if c == utf8.RuneError && n == 1 {
				return r.failAt(i, "invalid UTF-8")
			}
			i += n
		}
	}
	return nil
}

func (r *reader) ws() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (r *reader) peek() byte {
	r.ws()
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// end checks that only whitespace remains.
func (r *reader) end() error {
	r.ws()
	if r.pos != len(r.data) {
		return r.fail("unexpected data after the JSON value")
	}
	return nil
}

// kindAt names the JSON kind starting with byte c, for error messages.
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

// want returns a type-mismatch error: "want a string, got null".
//
//go:noinline
func (r *reader) want(what string) error {
	return r.fail("want %s, got %s", what, kindAt(r.peek()))
}

// openObject consumes '{'.
func (r *reader) openObject() error {
	if r.peek() != '{' {
		return r.want("an object")
	}
	return r.enter()
}

// openArray consumes '['.
func (r *reader) openArray() error {
	if r.peek() != '[' {
		return r.want("an array")
	}
	return r.enter()
}

func (r *reader) enter() error {
	r.depth++
	if r.depth > MaxDepth {
		return r.fail("nesting deeper than %d", MaxDepth)
	}
	r.pos++
	return nil
}

// firstKey is called right after openObject: it returns the first key and
// more = true, or more = false after consuming the '}' of an empty object.
// Keys are slices of the input when they have no escapes; callers must not
// keep them.
func (r *reader) firstKey() (key []byte, more bool, err error) {
	if r.peek() == '}' {
		r.pos++
		r.depth--
		return nil, false, nil
	}
	return r.key()
}

// key reads `"name" :` and returns the name.
func (r *reader) key() ([]byte, bool, error) {
	if r.peek() != '"' {
		return nil, false, r.want("an object key")
	}
	k, err := r.stringBytes()
	if err != nil {
		return nil, false, err
	}
	if r.peek() != ':' {
		return nil, false, r.fail("want ':' after object key")
	}
	r.pos++
	return k, true, nil
}

// objectMore is called after a member's value: it consumes ',' and returns
// the next key, or consumes '}' and returns more = false.
func (r *reader) objectMore() (key []byte, more bool, err error) {
	switch r.peek() {
	case ',':
		r.pos++
		if r.peek() == '}' {
			return nil, false, r.fail("trailing comma in object")
		}
		return r.key()
	case '}':
		r.pos++
		r.depth--
		return nil, false, nil
	}
	return nil, false, r.fail("want ',' or '}' in object, got %s", kindAt(r.peek()))
}

// members iterates over an object's members, calling fn with each key
// positioned at its value; fn must consume the value.
func (r *reader) members(fn func(key []byte) error) error {
	if err := r.openObject(); err != nil {
		return err
	}
	key, more, err := r.firstKey()
	for ; more && err == nil; key, more, err = r.objectMore() {
		if err := fn(key); err != nil {
			return err
		}
	}
	return err
}

// arrayNext is called before each element of an array opened with
// openArray (i is the element's index): it returns true when an element
// follows, or false after consuming the closing ']'.
func (r *reader) arrayNext(i int) (bool, error) {
	c := r.peek()
	if i == 0 {
		if c == ']' {
			r.pos++
			r.depth--
			return false, nil
		}
		return true, nil
	}
	switch c {
	case ',':
		r.pos++
		if r.peek() == ']' {
			return false, r.fail("trailing comma in array")
		}
		return true, nil
	case ']':
		r.pos++
		r.depth--
		return false, nil
	}
	return false, r.fail("want ',' or ']' in array, got %s", kindAt(c))
}

// elements iterates over an array, calling fn at each element with its
// index; fn must consume the element.
func (r *reader) elements(fn func(i int) error) error {
	if err := r.openArray(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := r.arrayNext(i)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if err := fn(i); err != nil {
			return atIndex(err, i)
		}
	}
}

// literal consumes the literal word (true, false, null) if present.
func (r *reader) literal(word string) bool {
	if len(r.data)-r.pos >= len(word) && string(r.data[r.pos:r.pos+len(word)]) == word {
		r.pos += len(word)
		return true
	}
	return false
}

// null consumes null if it comes next and reports whether it did.
func (r *reader) null() bool {
	return r.peek() == 'n' && r.literal("null")
}

// boolean reads true or false.
func (r *reader) boolean() (bool, error) {
	switch r.peek() {
	case 't':
		if r.literal("true") {
			return true, nil
		}
	case 'f':
		if r.literal("false") {
			return false, nil
		}
	}
	return false, r.want("a boolean")
}

// str reads a JSON string and returns it as a new Go string.
func (r *reader) str() (string, error) {
	if r.peek() != '"' {
		return "", r.want("a string")
	}
	b, err := r.stringBytes()
	return string(b), err
}

// nonEmptyStr reads a JSON string that must not be empty.
func (r *reader) nonEmptyStr() (string, error) {
	start := r.pos
	s, err := r.str()
	if err == nil && s == "" {
		err = r.failAt(start, "must not be empty")
	}
	return s, err
}

// stringBytes reads the string at r.pos (which is '"'). It returns a slice
// of the input when the string has no escapes, else a new buffer.
func (r *reader) stringBytes() ([]byte, error) {
	start := r.pos + 1
	i := start
	for i < len(r.data) {
		c := r.data[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return r.data[start:i], nil
		case c == '\\':
			return r.escapedString(start, i)
		case c < 0x20:
			return nil, r.failAt(i, "control character %#02x in string", c)
		}
		i++
	}
	return nil, r.failAt(r.pos, "unterminated string")
}

// escapedString decodes a string with escapes; data[start:i] has none.
func (r *reader) escapedString(start, i int) ([]byte, error) {
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, r.data[start:i]...)
	for i < len(r.data) {
		c := r.data[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return buf, nil
		case c < 0x20:
			return nil, r.failAt(i, "control character %#02x in string", c)
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(r.data) {
			break
		}
		switch e := r.data[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			c1, ok := hex4(r.data, i+2)
			if !ok {
				return nil, r.failAt(i, "invalid \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(c1) {
				c2, ok := rune(0), false
				if i+1 < len(r.data) && r.data[i] == '\\' && r.data[i+1] == 'u' {
					c2, ok = hex4(r.data, i+2)
				}
				dec := utf16.DecodeRune(c1, c2)
				if !ok || dec == utf8.RuneError {
					return nil, r.failAt(i-6, "unpaired UTF-16 surrogate escape")
				}
				c1 = dec
				i += 6
			}
			buf = utf8.AppendRune(buf, c1)
			continue
		default:
			return nil, r.failAt(i, "invalid escape \\%c", e)
		}
		i += 2
	}
	return nil, r.failAt(start-1, "unterminated string")
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
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

// number reads a JSON number literal and reports whether it is an integer
// literal (no fraction, no exponent). The literal is a slice of the input.
func (r *reader) number() (lit []byte, isInt bool, err error) {
	c := r.peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, false, r.want("a number")
	}
	start := r.pos
	i := start
	d := r.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		return nil, false, r.failAt(start, "invalid number")
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false, r.failAt(start, "invalid number: no digits after '.'")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false, r.failAt(start, "invalid number: no digits in exponent")
		}
	}
	if start == i || (i < len(d) && isWordByte(d[i])) {
		return nil, false, r.failAt(start, "invalid number")
	}
	r.pos = i
	return d[start:i], isInt, nil
}

func isWordByte(c byte) bool {
	return c == '.' || c == '+' || c == '-' || ('0' <= c && c <= '9') ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// smallInt parses an integer literal of magnitude at most 2^53. ok is false
// for a larger magnitude (the literal is then still a valid number).
func smallInt(lit []byte) (v int64, ok bool) {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) > 16 {
		return 0, false
	}
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if v > 1<<53 {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// uint reads a non-negative integer literal no larger than max (at most
// MaxCursor). Fractions, exponents and "-0" are rejected.
func (r *reader) uint(max uint64) (uint64, error) {
	start := r.pos
	lit, isInt, err := r.number()
	if err != nil {
		return 0, err
	}
	if !isInt || lit[0] == '-' {
		return 0, r.failAt(start, "want a non-negative integer, got %s", lit)
	}
	v, ok := smallInt(lit)
	if !ok || uint64(v) > max {
		return 0, r.failAt(start, "%s is above the limit %d", lit, max)
	}
	return uint64(v), nil
}

// integer reads an integer literal in [-MaxCursor, MaxCursor].
func (r *reader) integer() (int64, error) {
	start := r.pos
	lit, isInt, err := r.number()
	if err != nil {
		return 0, err
	}
	v, ok := smallInt(lit)
	if !isInt || !ok {
		return 0, r.failAt(start, "want an integer within ±2^53, got %s", lit)
	}
	return v, nil
}

// skip consumes one JSON value of any kind, validating it, and returns its
// span in the input.
func (r *reader) skip() (start, end int, err error) {
	c := r.peek()
	start = r.pos
	switch {
	case c == '{':
		err = r.members(func([]byte) error {
			_, _, err := r.skip()
			return err
		})
	case c == '[':
		err = r.elements(func(int) error {
			_, _, err := r.skip()
			return err
		})
	case c == '"':
		_, err = r.stringBytes()
	case c == 't' || c == 'f':
		_, err = r.boolean()
	case c == 'n':
		if !r.null() {
			err = r.want("a JSON value")
		}
	case c == '-' || ('0' <= c && c <= '9'):
		_, _, err = r.number()
	default:
		err = r.want("a JSON value")
	}
	return start, r.pos, err
}

// fields tracks which members of a struct-like object were seen, to reject
// duplicates and report missing required members.
type fields uint32

// see marks field bit as seen; a second sighting is an error.
func (f *fields) see(r *reader, bit fields, key []byte) error {
	if *f&bit != 0 {
		return r.fail("duplicate key %q", key)
	}
	*f |= bit
	return nil
}

// unknownKey returns the error for a member this object does not have.
//
//go:noinline
func (r *reader) unknownKey(key []byte) error {
	return r.fail("unknown field %q", key)
}

// require returns an error naming the first required member not seen.
// names[i] is the JSON name of bit 1<<i.
func (f fields) require(r *reader, need fields, names ...string) error {
	for i, n := range names {
		if need&(1<<i) != 0 && f&(1<<i) == 0 {
			return r.fail("missing required field %q", n)
		}
	}
	return nil
}
