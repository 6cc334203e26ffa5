//go:build js && wasm

package jsbridge

import (
	"math"
	"sort"
	"strconv"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// Output values go to JavaScript as one JSON text per result, `[holders,
// fixes]`, plus at most one Uint8Array holding every blob's bytes, so a
// result of many rows costs one string and one JSON.parse, not a crossing
// per value (BROWSER-FACTS: 2–4.5 µs per JS value created from Go).
//
// holders is an array of objects or arrays (the rows); each value is plain
// JSON where JSON can carry it exactly: text, booleans, null, integers
// within ±(2^53−1), reals (-0 included: JSON.parse("-0") is -0), and json
// values embedded as their own JSON text. The others are written as a
// placeholder and listed in fixes, five entries each:
//
//	holder index, key, kind, a, b
//
// kind 1: Date — the placeholder is the ms number;
// kind 2: BigInt — the placeholder is the decimal string;
// kind 3: Uint8Array — bytes a..a+b of the blob buffer (a copy per value).
//
// facade.js's decode applies them after JSON.parse.
const (
	fixDate   = 1
	fixBigInt = 2
	fixBlob   = 3
)

// maxSafe is Number.MAX_SAFE_INTEGER: integers up to it in magnitude come
// back as numbers, beyond it as BigInt.
const maxSafe = 1<<53 - 1

type encoder struct {
	b     []byte // holders being written
	fix   []byte // fixes, without the brackets
	blobs []byte
	hold  int // index of the holder being written
}

func newEncoder() *encoder {
	e := &encoder{b: make([]byte, 0, 256)}
	e.b = append(e.b, "[["...)
	return e
}

// beginHolder starts holder number n (0-based, in order).
func (e *encoder) beginHolder(n int, open byte) {
	if n > 0 {
		e.b = append(e.b, ',')
	}
	e.hold = n
	e.b = append(e.b, open)
}

// finish returns the JSON text and the blob buffer (nil if none).
func (e *encoder) finish() (string, []byte) {
	e.b = append(e.b, "],["...)
	e.b = append(e.b, e.fix...)
	e.b = append(e.b, "]]"...)
	return string(e.b), e.blobs
}

// finishWith is finish with a third element: errs, the text of a JSON
// array's members (insertMany's [index, error, ...]).
func (e *encoder) finishWith(errs []byte) (string, []byte) {
	e.b = append(e.b, "],["...)
	e.b = append(e.b, e.fix...)
	e.b = append(e.b, "],["...)
	e.b = append(e.b, errs...)
	e.b = append(e.b, "]]"...)
	return string(e.b), e.blobs
}

// value appends v; key is the JSON text of its key in the current holder
// (a quoted column name, or an array index).
func (e *encoder) value(key []byte, v model.Value) {
	switch v.Kind() {
	case model.KindNull:
		e.b = append(e.b, "null"...)
	case model.KindBoolean:
		e.b = strconv.AppendBool(e.b, v.Bool())
	case model.KindInteger:
		i := v.Int()
		if i >= -maxSafe && i <= maxSafe {
			e.b = strconv.AppendInt(e.b, i, 10)
			return
		}
		e.b = append(e.b, '"')
		e.b = strconv.AppendInt(e.b, i, 10)
		e.b = append(e.b, '"')
		e.addFix(key, fixBigInt, 0, 0)
	case model.KindReal:
		f := v.Real()
		if math.IsNaN(f) || math.IsInf(f, 0) { // never stored; be safe
			e.b = append(e.b, "null"...)
			return
		}
		e.b = jsontext.AppendFloat(e.b, f, 64)
	case model.KindTimestamp:
		e.b = strconv.AppendInt(e.b, v.Int(), 10)
		e.addFix(key, fixDate, 0, 0)
	case model.KindText:
		e.b = appendString(e.b, v.Text())
	case model.KindJSON:
		e.b = append(e.b, v.Text()...)
	case model.KindBlob:
		s := v.Blob()
		if e.blobs == nil { // an empty blob still needs a buffer to slice
			e.blobs = make([]byte, 0, len(s))
		}
		off := len(e.blobs)
		e.blobs = append(e.blobs, s...)
		e.b = append(e.b, '0')
		e.addFix(key, fixBlob, off, len(s))
	default:
		e.b = append(e.b, "null"...)
	}
}

func (e *encoder) addFix(key []byte, kind, a, b int) {
	if len(e.fix) > 0 {
		e.fix = append(e.fix, ',')
	}
	e.fix = strconv.AppendInt(e.fix, int64(e.hold), 10)
	e.fix = append(e.fix, ',')
	e.fix = append(e.fix, key...)
	e.fix = append(e.fix, ',')
	e.fix = strconv.AppendInt(e.fix, int64(kind), 10)
	e.fix = append(e.fix, ',')
	e.fix = strconv.AppendInt(e.fix, int64(a), 10)
	e.fix = append(e.fix, ',')
	e.fix = strconv.AppendInt(e.fix, int64(b), 10)
}

// row appends one row as a holder, its columns in the order of cols (the
// table's columns), then any others sorted by name.
func (e *encoder) row(n int, row model.Row, cols []string) {
	e.beginHolder(n, '{')
	first := true
	put := func(c string, v model.Value) {
		if !first {
			e.b = append(e.b, ',')
		}
		first = false
		start := len(e.b)
		e.b = appendString(e.b, c)
		key := e.b[start:len(e.b):len(e.b)]
		e.b = append(e.b, ':')
		e.value(key, v)
	}
	seen := 0
	for _, c := range cols {
		if v, ok := row[c]; ok {
			put(c, v)
			seen++
		}
	}
	if seen < len(row) {
		var extra []string
		for c := range row {
			if !contains(cols, c) {
				extra = append(extra, c)
			}
		}
		sort.Strings(extra)
		for _, c := range extra {
			put(c, row[c])
		}
	}
	e.b = append(e.b, '}')
}

// list appends vals as an array holder.
func (e *encoder) list(n int, vals []model.Value) {
	e.beginHolder(n, '[')
	for i, v := range vals {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.value(strconv.AppendInt(nil, int64(i), 10), v)
	}
	e.b = append(e.b, ']')
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// encodeRows returns rows as facade.js's decode reads them.
func encodeRows(rows []model.Row, cols []string) (string, []byte) {
	e := newEncoder()
	for i, r := range rows {
		e.row(i, r, cols)
	}
	return e.finish()
}

// jsonObject writes one JSON object for facade.js's JSON.parse (event
// payloads, errors, the sync state), members in call order.
type jsonObject struct{ b []byte }

// key starts the member k.
func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = appendString(o.b, v)
}

func (o *jsonObject) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

// raw writes v, which is JSON text, as the value of k.
func (o *jsonObject) raw(k, v string) {
	o.key(k)
	o.b = append(o.b, v...)
}

// done returns the object's text.
func (o *jsonObject) done() string {
	if len(o.b) == 0 {
		return "{}"
	}
	return string(append(o.b, '}'))
}

// result resolves a call (or fires an event) with the object.
func (o *jsonObject) result() result { return result{kind: kindJSON, text: o.done()} }

// appendString appends s as a JSON string for JSON.parse: only what JSON
// requires is escaped (jsontext.AppendString without options); a byte
// that is not UTF-8, which engine text never holds, becomes U+FFFD.
func appendString(b []byte, s string) []byte { return jsontext.AppendString(b, s, 0) }
