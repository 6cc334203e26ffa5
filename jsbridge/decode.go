//go:build js && wasm

package jsbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Input values arrive from facade.js as JSON text in which every value is a
// plain JSON string, finite number (never -0), true, false or null, or a
// one-key tag object:
//
//	{"j": <json>}          a plain object or array for a json column (raw JSON text)
//	{"n": "digits"}        a BigInt
//	{"d": ms}              a Date (ms since the epoch); {"d": null} an invalid Date
//	{"b": [offset, len]}   bytes (Uint8Array, ArrayBuffer, other views) in the call's blob buffer
//	{"f": "-0"|"NaN"|"Infinity"|"-Infinity"}   numbers JSON cannot write
//	{"x": "what"}          a value the API does not accept (a function, a Symbol, a Map, ...)
//	{"i": "NaN at .a[2]"}  an object or array holding NaN or ±Infinity (JSON.stringify
//	                       would write null): refused, naming the number and where
//
// The text is machine-written, so a syntax error is an INTERNAL error; a
// value the engine cannot take is the engine's VALIDATION error.

// errSyntax reports malformed text from facade.js (a bug, never user input).
var errSyntax = errors.New("jsbridge: malformed request from facade.js")

// unsupported is a JS value no column type accepts; the caller turns it into
// a VALIDATION error naming the table and column. nonFinite: an object or
// array holding NaN or ±Infinity (what says which and where).
type unsupported struct {
	what      string
	nonFinite bool
}

// reader is a cursor over facade-written JSON.
type reader struct {
	b     []byte
	i     int
	blobs []byte // the call's blob buffer
}

func (r *reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *reader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

func (r *reader) expect(c byte) error {
	if r.peek() != c {
		return fmt.Errorf("%w: want %q at offset %d", errSyntax, c, r.i)
	}
	r.i++
	return nil
}

// more reports whether a list continues: it consumes a ',' or the closing
// byte end (returning false).
func (r *reader) more(end byte, first bool) (bool, error) {
	c := r.peek()
	if c == end {
		r.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, fmt.Errorf("%w: want ',' or %q at offset %d", errSyntax, end, r.i)
		}
		r.i++
	}
	return true, nil
}

// str reads a JSON string. Escaped lone surrogates (JSON.stringify writes
// them as \udXXX) are kept as their 3-byte WTF-8 form, which is not valid
// UTF-8: the engine then rejects the text instead of silently changing it.
func (r *reader) str() (string, error) {
	if err := r.expect('"'); err != nil {
		return "", err
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		}
		if c == '\\' {
			return r.strSlow(start)
		}
		r.i++
	}
	return "", fmt.Errorf("%w: unterminated string", errSyntax)
}

func (r *reader) strSlow(start int) (string, error) {
	out := append([]byte(nil), r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return string(out), nil
		case c != '\\':
			out = append(out, c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.b) {
			break
		}
		e := r.b[r.i+1]
		r.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
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
			u, ok := r.hex4()
			if !ok {
				return "", fmt.Errorf("%w: bad \\u escape", errSyntax)
			}
			if u >= 0xD800 && u < 0xDC00 && r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
				save := r.i
				r.i += 2
				if lo, ok := r.hex4(); ok && lo >= 0xDC00 && lo < 0xE000 {
					out = utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
					continue
				}
				r.i = save
			}
			if u >= 0xD800 && u < 0xE000 { // lone surrogate: WTF-8
				out = append(out, 0xE0|byte(u>>12), 0x80|byte(u>>6)&0x3F, 0x80|byte(u)&0x3F)
				continue
			}
			out = utf8.AppendRune(out, u)
		default:
			return "", fmt.Errorf("%w: bad escape", errSyntax)
		}
	}
	return "", fmt.Errorf("%w: unterminated string", errSyntax)
}

func (r *reader) hex4() (rune, bool) {
	if r.i+4 > len(r.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(r.b[r.i:r.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	r.i += 4
	return rune(v), true
}

// number reads a JSON number as text.
func (r *reader) number() ([]byte, error) {
	r.ws()
	start := r.i
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			r.i++
			continue
		}
		break
	}
	if r.i == start {
		return nil, fmt.Errorf("%w: want a value at offset %d", errSyntax, start)
	}
	return r.b[start:r.i], nil
}

func (r *reader) lit(word string) error {
	r.ws()
	if len(r.b)-r.i < len(word) || string(r.b[r.i:r.i+len(word)]) != word {
		return fmt.Errorf("%w: want %s at offset %d", errSyntax, word, r.i)
	}
	r.i += len(word)
	return nil
}

// skip passes over one JSON value and returns its raw text.
func (r *reader) skip() ([]byte, error) {
	r.ws()
	start := r.i
	if err := r.skipValue(0); err != nil {
		return nil, err
	}
	return r.b[start:r.i], nil
}

func (r *reader) skipValue(depth int) error {
	if depth > 10000 {
		return fmt.Errorf("%w: json nested too deeply", errSyntax)
	}
	switch c := r.peek(); c {
	case '"':
		_, err := r.str()
		return err
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		r.i++
		for first := true; ; first = false {
			ok, err := r.more(end, first)
			if err != nil || !ok {
				return err
			}
			if c == '{' {
				if _, err := r.str(); err != nil {
					return err
				}
				if err := r.expect(':'); err != nil {
					return err
				}
			}
			if err := r.skipValue(depth + 1); err != nil {
				return err
			}
		}
	case 't':
		return r.lit("true")
	case 'f':
		return r.lit("false")
	case 'n':
		return r.lit("null")
	}
	_, err := r.number()
	return err
}

// value reads one tagged input value and returns it in a form the engine's
// coercion accepts: nil, string, float64, bool, json.Number (BigInt),
// time.Time (Date), []byte, json.RawMessage, or unsupported.
func (r *reader) value() (any, error) {
	switch c := r.peek(); {
	case c == '"':
		return r.str()
	case c == 't':
		return true, r.lit("true")
	case c == 'f':
		return false, r.lit("false")
	case c == 'n':
		return nil, r.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		t, err := r.number()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: number %q", errSyntax, t)
		}
		return f, nil
	case c == '{':
		return r.tagged()
	}
	return nil, fmt.Errorf("%w: unexpected byte at offset %d", errSyntax, r.i)
}

func (r *reader) tagged() (any, error) {
	if err := r.expect('{'); err != nil {
		return nil, err
	}
	tag, err := r.str()
	if err != nil {
		return nil, err
	}
	if err := r.expect(':'); err != nil {
		return nil, err
	}
	var v any
	switch tag {
	case "j":
		raw, err := r.skip()
		if err != nil {
			return nil, err
		}
		v = json.RawMessage(raw)
	case "n":
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		v = json.Number(s)
	case "d":
		if r.peek() == 'n' {
			if err := r.lit("null"); err != nil {
				return nil, err
			}
			v = unsupported{what: "an invalid Date"}
			break
		}
		t, err := r.number()
		if err != nil {
			return nil, err
		}
		ms, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: Date %q", errSyntax, t)
		}
		v = time.UnixMilli(ms).UTC()
	case "b":
		if err := r.expect('['); err != nil {
			return nil, err
		}
		off, err := r.int()
		if err != nil {
			return nil, err
		}
		if err := r.expect(','); err != nil {
			return nil, err
		}
		n, err := r.int()
		if err != nil {
			return nil, err
		}
		if err := r.expect(']'); err != nil {
			return nil, err
		}
		if off < 0 || n < 0 || off+n > len(r.blobs) {
			return nil, fmt.Errorf("%w: blob [%d,%d] outside a %d-byte buffer", errSyntax, off, n, len(r.blobs))
		}
		v = r.blobs[off : off+n : off+n]
	case "f":
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		switch s {
		case "-0":
			v = math.Copysign(0, -1)
		case "NaN":
			v = math.NaN()
		case "Infinity":
			v = math.Inf(1)
		case "-Infinity":
			v = math.Inf(-1)
		default:
			return nil, fmt.Errorf("%w: number tag %q", errSyntax, s)
		}
	case "x":
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		v = unsupported{what: s}
	case "i":
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		v = unsupported{what: s, nonFinite: true}
	default:
		return nil, fmt.Errorf("%w: unknown tag %q", errSyntax, tag)
	}
	return v, r.expect('}')
}

func (r *reader) int() (int, error) {
	t, err := r.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(t))
	if err != nil {
		return 0, fmt.Errorf("%w: integer %q", errSyntax, t)
	}
	return n, nil
}

// object reads a JSON object (null reads as an empty one, as
// encoding/json read it into a map), calling fn with each key positioned at
// its value; fn must consume the value (r.skip() ignores it).
func (r *reader) object(fn func(key string) error) error {
	if r.peek() == 'n' {
		return r.lit("null")
	}
	if err := r.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := r.more('}', first)
		if err != nil || !ok {
			return err
		}
		key, err := r.str()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
	}
}

// optString reads a string into *dst, or null (leaving *dst nil); any
// other value is an INVALID_ARGUMENT error naming what.
func (r *reader) optString(dst **string, what string) error {
	switch r.peek() {
	case 'n':
		*dst = nil
		return r.lit("null")
	case '"':
		s, err := r.str()
		*dst = &s
		return err
	}
	raw, err := r.skip()
	if err != nil {
		return err
	}
	return argError("%s must be a string, got %s", what, raw)
}

// optBool reads a boolean into *dst, or null (leaving *dst nil).
func (r *reader) optBool(dst **bool, what string) error {
	var b bool
	switch r.peek() {
	case 'n':
		*dst = nil
		return r.lit("null")
	case 't':
		b = true
		if err := r.lit("true"); err != nil {
			return err
		}
	case 'f':
		if err := r.lit("false"); err != nil {
			return err
		}
	default:
		raw, err := r.skip()
		if err != nil {
			return err
		}
		return argError("%s must be a boolean, got %s", what, raw)
	}
	*dst = &b
	return nil
}

func (r *reader) end() error {
	if r.peek() != 0 {
		return fmt.Errorf("%w: trailing data at offset %d", errSyntax, r.i)
	}
	return nil
}

// decodeRow parses a row object written by facade.js: column name to
// tagged value. A value no column accepts is a VALIDATION error.
func decodeRow(table, text string, blobs []byte) (map[string]any, error) {
	r := &reader{b: []byte(text), blobs: blobs}
	row, err := r.row(table)
	if err != nil {
		return nil, err
	}
	return row, r.end()
}

// row reads one row object (see decodeRow). After a VALIDATION error the
// reader has still passed over the whole object.
func (r *reader) row(table string) (map[string]any, error) {
	if err := r.expect('{'); err != nil {
		return nil, err
	}
	row := make(map[string]any, 8)
	var bad error
	for first := true; ; first = false {
		ok, err := r.more('}', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		col, err := r.str()
		if err != nil {
			return nil, err
		}
		if err := r.expect(':'); err != nil {
			return nil, err
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if u, isBad := v.(unsupported); isBad {
			if bad == nil {
				bad = unsupportedError(table, col, u)
			}
			continue
		}
		row[col] = v
	}
	if bad != nil {
		return nil, bad
	}
	return row, nil
}

// decodeList parses an array of tagged values (a primary key).
func decodeList(table, what, text string, blobs []byte) ([]any, error) {
	r := &reader{b: []byte(text), blobs: blobs}
	out, err := r.list(table, what)
	if err != nil {
		return nil, err
	}
	return out, r.end()
}

func (r *reader) list(table, what string) ([]any, error) {
	if err := r.expect('['); err != nil {
		return nil, err
	}
	var out []any
	for first := true; ; first = false {
		ok, err := r.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if u, bad := v.(unsupported); bad {
			return nil, unsupportedError(table, what, u)
		}
		out = append(out, v)
	}
}

func unsupportedError(table, col string, u unsupported) error {
	if u.nonFinite {
		return &bridgeError{code: codeValidation, table: table, column: col,
			msg: fmt.Sprintf("%s.%s: a json value holding %s (JSON has no NaN or ±Infinity, and JSON.stringify would write null)", table, col, u.what)}
	}
	return &bridgeError{code: codeValidation, table: table, column: col,
		msg: fmt.Sprintf("%s.%s: %s is not a value Replica stores (use a string, number, boolean, null, BigInt, Date, Uint8Array, or a plain object or array for json)", table, col, u.what)}
}
