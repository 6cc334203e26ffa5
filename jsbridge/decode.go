//go:build js && wasm

package jsbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/jsontext"
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
//	{"o": n}               a row's value of at least n bytes, above engine.MaxLocalRowSize,
//	                       left in JavaScript: refused (VALIDATION) without crossing
//
// The text is machine-written, so a syntax error is an INTERNAL error; a
// value the engine cannot take is the engine's VALIDATION error.

// errSyntax reports malformed text from facade.js (a bug, never user input).
var errSyntax = errors.New("jsbridge: malformed request from facade.js")

// unsupported is a JS value no column type accepts; the caller turns it into
// a VALIDATION error naming the table and column. nonFinite: an object or
// array holding NaN or ±Infinity (what says which and where).
// tooLarge: a row's value of at least tooLarge bytes, above
// engine.MaxLocalRowSize, that facade.js kept back ({"o": n}).
type unsupported struct {
	what      string
	nonFinite bool
	tooLarge  int
}

// reader reads facade-written JSON: a jsontext.Reader whose errors wrap
// errSyntax, reading an escaped lone surrogate (JSON.stringify writes one
// as \udXXX) as its 3-byte WTF-8 form, which is not valid UTF-8, so the
// engine rejects the text instead of storing a changed string.
type reader struct {
	jsontext.Reader
	blobs []byte // the call's blob buffer
}

// maxDepth bounds the reader's nesting. The engine limits json values to
// model.MaxJSONDepth; this only keeps a runaway text from recursing
// without end, with room for the row and tag objects around a json value
// as deep as encoding/json reads.
const maxDepth = jsontext.DefaultMaxDepth + 8

// newReader returns a reader of text; blobs is the call's blob buffer.
func newReader(text, blobs []byte) *reader {
	r := &reader{blobs: blobs}
	r.Data, r.MaxDepth, r.Surrogates, r.Errors = text, maxDepth, jsontext.SurrogateWTF8, syntaxErrors{}
	return r
}

// syntaxErrors makes the reader's errors: errSyntax with the message and
// the byte offset.
type syntaxErrors struct{}

func (syntaxErrors) NewError(msg string, off int) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, msg, off)
}

// null consumes null.
func (r *reader) null() error {
	if !r.Null() {
		return r.Want("null")
	}
	return nil
}

// element moves to element i of an array opened with OpenArray; an array
// that ends before it is an error.
func (r *reader) element(i int) error {
	more, err := r.ArrayNext(i)
	if err == nil && !more {
		err = r.Fail("want element %d of a shorter array", i)
	}
	return err
}

// closeArray consumes the ']' of an array opened with OpenArray after its
// n elements were read.
func (r *reader) closeArray(n int) error {
	more, err := r.ArrayNext(n)
	if err == nil && more {
		err = r.Fail("want ']' after %d elements", n)
	}
	return err
}

// skip passes over one JSON value and returns its raw text.
func (r *reader) skip() ([]byte, error) {
	start, end, err := r.Skip()
	if err != nil {
		return nil, err
	}
	return r.Data[start:end], nil
}

// value reads one tagged input value and returns it in a form the engine's
// coercion accepts: nil, string, float64, bool, json.Number (BigInt),
// time.Time (Date), []byte, json.RawMessage, or unsupported.
func (r *reader) value() (any, error) {
	switch c := r.Peek(); {
	case c == '"':
		return r.Str()
	case c == 't' || c == 'f':
		return r.Boolean()
	case c == 'n':
		return nil, r.null()
	case c == '{':
		return r.tagged()
	}
	return r.float()
}

// float reads a number.
func (r *reader) float() (float64, error) {
	t, _, err := r.Number()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: number %q", errSyntax, t)
	}
	return f, nil
}

// tagged reads a one-key tag object (see the top of this file).
func (r *reader) tagged() (any, error) {
	if err := r.OpenObject(); err != nil {
		return nil, err
	}
	tag, more, err := r.FirstKey()
	if err != nil || !more {
		return nil, fmt.Errorf("%w: empty tag object (%v)", errSyntax, err)
	}
	var v any
	switch string(tag) {
	case "j":
		var raw []byte
		raw, err = r.skip()
		v = json.RawMessage(raw)
	case "n":
		var s string
		s, err = r.Str()
		v = json.Number(s)
	case "d":
		v, err = r.date()
	case "b":
		v, err = r.blob()
	case "f":
		v, err = r.special()
	case "x", "i":
		var s string
		s, err = r.Str()
		v = unsupported{what: s, nonFinite: tag[0] == 'i'}
	case "o":
		var n int
		n, err = r.int()
		v = unsupported{what: "a value too large", tooLarge: n}
	default:
		return nil, fmt.Errorf("%w: unknown tag %q", errSyntax, tag)
	}
	if err != nil {
		return nil, err
	}
	if _, more, err = r.ObjectMore(); err != nil || more {
		return nil, fmt.Errorf("%w: a tag object has one key (%v)", errSyntax, err)
	}
	return v, nil
}

// date reads {"d": ms} or {"d": null} (an invalid Date).
func (r *reader) date() (any, error) {
	if r.Null() {
		return unsupported{what: "an invalid Date"}, nil
	}
	t, _, err := r.Number()
	if err != nil {
		return nil, err
	}
	ms, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: Date %q", errSyntax, t)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// blob reads {"b": [offset, len]}: bytes of the call's blob buffer.
func (r *reader) blob() ([]byte, error) {
	var span [2]int
	err := r.Elements(func(i int) (err error) {
		if i < 2 {
			span[i], err = r.int()
			return err
		}
		return fmt.Errorf("%w: a blob is [offset, len]", errSyntax)
	})
	if err != nil {
		return nil, err
	}
	off, n := span[0], span[1]
	if off < 0 || n < 0 || off+n > len(r.blobs) {
		return nil, fmt.Errorf("%w: blob [%d,%d] outside a %d-byte buffer", errSyntax, off, n, len(r.blobs))
	}
	return r.blobs[off : off+n : off+n], nil
}

// special reads {"f": "-0"|"NaN"|"Infinity"|"-Infinity"}.
func (r *reader) special() (float64, error) {
	s, err := r.Str()
	if err != nil {
		return 0, err
	}
	switch s {
	case "-0":
		return math.Copysign(0, -1), nil
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return 0, fmt.Errorf("%w: number tag %q", errSyntax, s)
}

func (r *reader) int() (int, error) {
	t, _, err := r.Number()
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
	if r.Null() {
		return nil
	}
	return r.Members(func(key []byte) error { return fn(string(key)) })
}

// optString reads a string into *dst, or null (leaving *dst nil); any
// other value is an INVALID_ARGUMENT error naming what.
func (r *reader) optString(dst **string, what string) error {
	switch r.Peek() {
	case 'n':
		*dst = nil
		return r.null()
	case '"':
		s, err := r.Str()
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
	switch r.Peek() {
	case 'n':
		*dst = nil
		return r.null()
	case 't', 'f':
		b, err := r.Boolean()
		*dst = &b
		return err
	}
	raw, err := r.skip()
	if err != nil {
		return err
	}
	return argError("%s must be a boolean, got %s", what, raw)
}

// optNumber reads a number into *dst, or null (leaving *dst nil).
func (r *reader) optNumber(dst **float64, what string) error {
	switch c := r.Peek(); {
	case c == 'n':
		*dst = nil
		return r.null()
	case c == '-' || (c >= '0' && c <= '9'):
		t, _, err := r.Number()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return argError("%s must be a number, got %s", what, t)
		}
		*dst = &f
		return nil
	}
	raw, err := r.skip()
	if err != nil {
		return err
	}
	return argError("%s must be a number, got %s", what, raw)
}

// decodeRow parses a row object written by facade.js: column name to
// tagged value. A value no column accepts is a VALIDATION error.
func decodeRow(table, text string, blobs []byte) (map[string]any, error) {
	r := newReader([]byte(text), blobs)
	row, err := r.row(table)
	if err != nil {
		return nil, err
	}
	return row, r.End()
}

// row reads one row object (see decodeRow). After a VALIDATION error the
// reader has still passed over the whole object.
func (r *reader) row(table string) (map[string]any, error) { return r.rowNamed(table, nil) }

// rowNamed is row with the table's column names, if known: a key equal to
// one of them is that string rather than a new one.
func (r *reader) rowNamed(table string, names []string) (map[string]any, error) {
	row := make(map[string]any, max(8, len(names)))
	var bad error
	err := r.Members(func(key []byte) error {
		v, err := r.value()
		if err != nil {
			return err
		}
		col := internName(key, names)
		if u, isBad := v.(unsupported); isBad {
			if bad == nil {
				bad = unsupportedError(table, col, u)
			}
			return nil
		}
		row[col] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return row, nil
}

// internName returns key as a string: the element of names equal to it,
// if any, else a new string.
func internName(key []byte, names []string) string {
	for _, n := range names {
		if n == string(key) {
			return n
		}
	}
	return string(key)
}

// decodeTables parses insertMany's JSON array of table names (strings); a
// name equal to the one before it shares its string.
func decodeTables(text string) ([]string, error) {
	r := newReader([]byte(text), nil)
	var out []string
	err := r.Elements(func(int) error {
		if r.Peek() != '"' {
			return r.Want("a table name")
		}
		b, err := r.StringBytes()
		if err != nil {
			return err
		}
		if n := len(out); n > 0 && out[n-1] == string(b) {
			out = append(out, out[n-1])
		} else {
			out = append(out, string(b))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, r.End()
}

// decodeList parses an array of tagged values (a primary key).
func decodeList(table, what, text string, blobs []byte) ([]any, error) {
	r := newReader([]byte(text), blobs)
	out, err := r.list(table, what)
	if err != nil {
		return nil, err
	}
	return out, r.End()
}

func (r *reader) list(table, what string) ([]any, error) {
	var out []any
	err := r.Elements(func(int) error {
		v, err := r.value()
		if err != nil {
			return err
		}
		if u, bad := v.(unsupported); bad {
			return unsupportedError(table, what, u)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func unsupportedError(table, col string, u unsupported) error {
	if u.tooLarge > 0 {
		return &bridgeError{code: codeValidation, table: table, column: col,
			msg: fmt.Sprintf("%s.%s: a value of at least %d bytes is too large for a local write (a row a local write leaves is at most %d bytes: MaxLocalRowSize)", table, col, u.tooLarge, engine.MaxLocalRowSize)}
	}
	if u.nonFinite {
		return &bridgeError{code: codeValidation, table: table, column: col,
			msg: fmt.Sprintf("%s.%s: a json value holding %s (JSON has no NaN or ±Infinity, and JSON.stringify would write null)", table, col, u.what)}
	}
	return &bridgeError{code: codeValidation, table: table, column: col,
		msg: fmt.Sprintf("%s.%s: %s is not a value Replica stores (use a string, number, boolean, null, BigInt, Date, Uint8Array, or a plain object or array for json)", table, col, u.what)}
}
