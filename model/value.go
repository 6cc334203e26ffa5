package model

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/replica-sync/replica/internal/rawvalue"
)

// The unchecked constructor and accessor for the module's storage codecs
// (see package rawvalue).
func init() {
	rawvalue.Make = func(k Kind, s string) Value { return Value{kind: k, s: s} }
	rawvalue.String = func(v Value) string { return v.s }
}

// Kind is the type of a Value. The kinds are the column types of the schema
// plus Null.
type Kind uint8

// The kinds, in the order values of different kinds sort (Compare): null
// first, then booleans, numbers (integers and reals compare numerically with
// each other), timestamps, text, JSON, blobs.
const (
	KindNull Kind = iota
	KindBoolean
	KindInteger
	KindReal
	KindTimestamp
	KindText
	KindJSON
	KindBlob
)

var kindNames = [...]string{"null", "boolean", "integer", "real", "timestamp", "text", "json", "blob"}

// String returns the schema name of the kind ("integer", "text", …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return k.unknown()
}

// unknown is String of a kind without a name, out of line so that String's
// inlined copies carry a call rather than the formatting.
//
//go:noinline
func (k Kind) unknown() string { return fmt.Sprintf("kind(%d)", uint8(k)) }

// ParseKind parses a column type name. "null" is not a column type.
func ParseKind(name string) (Kind, error) {
	for i, n := range kindNames {
		if n == name && Kind(i) != KindNull {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown column type %q (want text, integer, real, boolean, blob, json or timestamp)", name)
}

// Value is one typed cell value. The zero Value is null. Values are
// immutable: Blob returns a slice the caller must not modify.
//
// Representation by kind:
//   - Integer: int64.
//   - Real: float64 (NaN and ±Inf are not accepted by validation).
//   - Boolean: bool.
//   - Text: a UTF-8 string.
//   - Blob: bytes.
//   - JSON: canonical JSON text (compact, as encoding/json writes it), any
//     JSON value including strings and numbers.
//   - Timestamp: int64 milliseconds since the Unix epoch, UTC (the
//     precision of a JavaScript Date). A timestamp column holds the range
//     of a JavaScript Date, ±MaxTimestampMillis (±8.64e15 ms, 100 million
//     days either side of the epoch): a local write outside it is a
//     *ValidationError, a peer's value outside it is held
//     (WrongType).
type Value struct {
	kind Kind
	i    int64   // Integer, Timestamp, Boolean (0/1)
	f    float64 // Real
	s    string  // Text, JSON, Blob (bytes held as a string)
}

// Null is the null Value.
var Null = Value{}

// Int returns an integer Value.
func Int(v int64) Value { return Value{kind: KindInteger, i: v} }

// Real returns a real Value.
func Real(v float64) Value { return Value{kind: KindReal, f: v} }

// Text returns a text Value.
func Text(v string) Value { return Value{kind: KindText, s: v} }

// Bool returns a boolean Value.
func Bool(v bool) Value {
	if v {
		return Value{kind: KindBoolean, i: 1}
	}
	return Value{kind: KindBoolean}
}

// Blob returns a blob Value holding a copy of v.
func Blob(v []byte) Value { return Value{kind: KindBlob, s: string(v)} }

// Timestamp returns a timestamp Value of t, truncated to milliseconds.
func Timestamp(t time.Time) Value { return Value{kind: KindTimestamp, i: t.UnixMilli()} }

// TimestampMillis returns a timestamp Value of ms milliseconds since the
// Unix epoch.
func TimestampMillis(ms int64) Value { return Value{kind: KindTimestamp, i: ms} }

// JSONValue returns a JSON Value of raw, which must be valid JSON; it is
// stored compacted. Invalid JSON is an error.
func JSONValue(raw []byte) (Value, error) {
	b, err := compactJSON(make([]byte, 0, len(raw)), raw)
	if err != nil {
		return Null, fmt.Errorf("invalid JSON: %w", err)
	}
	return Value{kind: KindJSON, s: string(b)}, nil
}

// JSONOf returns a JSON Value holding v marshaled as encoding/json does,
// without HTML escaping (as JavaScript's JSON.stringify writes it). In the
// browser build, values whose encoding encoding/json defines by methods or
// struct fields are an error (see json.go).
func JSONOf(v any) (Value, error) {
	b, err := marshalJSON(v)
	if err != nil {
		return Null, err
	}
	return Value{kind: KindJSON, s: string(b)}, nil
}

// Kind returns the kind of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Int returns the integer of an Integer or Timestamp value, 0 otherwise.
func (v Value) Int() int64 { return v.i }

// Real returns the float of a Real value, the integer as a float for an
// Integer value, 0 otherwise.
func (v Value) Real() float64 {
	if v.kind == KindInteger {
		return float64(v.i)
	}
	return v.f
}

// Text returns the string of a Text value and the JSON text of a JSON value,
// "" otherwise.
func (v Value) Text() string {
	if v.kind == KindText || v.kind == KindJSON {
		return v.s
	}
	return ""
}

// Len returns the length in bytes of a Text, JSON or Blob value (its UTF-8,
// its JSON text, its bytes), 0 for other kinds.
func (v Value) Len() int { return len(v.s) }

// Bool returns the bool of a Boolean value.
func (v Value) Bool() bool { return v.kind == KindBoolean && v.i != 0 }

// Blob returns the bytes of a Blob value (a fresh copy), nil otherwise.
func (v Value) Blob() []byte {
	if v.kind != KindBlob {
		return nil
	}
	return []byte(v.s)
}

// JSON returns the JSON text of a JSON value, nil otherwise.
func (v Value) JSON() []byte {
	if v.kind != KindJSON {
		return nil
	}
	return []byte(v.s)
}

// Time returns the time of a Timestamp value, in UTC.
func (v Value) Time() time.Time { return time.UnixMilli(v.i).UTC() }

// Equal reports whether v and o are the same value of the same kind (blobs
// byte-wise, reals by bits so NaN equals itself and 0 differs from -0).
func (v Value) Equal(o Value) bool {
	if v.kind != o.kind {
		return false
	}
	switch v.kind {
	case KindReal:
		return math.Float64bits(v.f) == math.Float64bits(o.f)
	case KindText, KindJSON, KindBlob:
		return v.s == o.s
	default:
		return v.i == o.i
	}
}

// String returns a readable form for messages and logs.
func (v Value) String() string {
	switch v.kind {
	case KindNull:
		return "null"
	case KindBoolean:
		return strconv.FormatBool(v.i != 0)
	case KindInteger:
		return strconv.FormatInt(v.i, 10)
	case KindReal:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case KindTimestamp:
		return v.Time().Format(time.RFC3339Nano)
	case KindText:
		return strconv.Quote(v.s)
	case KindJSON:
		return v.s
	case KindBlob:
		return fmt.Sprintf("blob(%d bytes)", len(v.s))
	}
	return "?"
}

// Any returns v as a plain Go value: nil, bool, int64, float64, string,
// []byte, time.Time, or json.RawMessage for JSON.
func (v Value) Any() any {
	switch v.kind {
	case KindBoolean:
		return v.i != 0
	case KindInteger:
		return v.i
	case KindReal:
		return v.f
	case KindTimestamp:
		return v.Time()
	case KindText:
		return v.s
	case KindJSON:
		return json.RawMessage(v.s)
	case KindBlob:
		return []byte(v.s)
	}
	return nil
}

// Row is a row's column values by column name, as read from the engine or
// carried in a deletion's before-image.
type Row map[string]Value
