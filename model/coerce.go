package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replica-sync/replica/internal/jsontext"
)

// CoerceValue converts a Go value given by a caller (the Go API or the JS
// bridge) into a Value of column c's type, or returns a *ValidationError
// {Table: t.Name, Column: c.Name} whose Reason reads like
// `expected integer, got text "42" (set coerce to convert)`.
//
// nil (and a nil pointer) is Null and always accepted here: NotNull is the
// caller's to check, after defaults apply. Accepted inputs are Value
// (checked and converted like its Go equivalent: Integer as int64, Real as
// float64, Text as string, Blob as []byte, Timestamp as time.Time, a JSON
// Value as json.RawMessage), bool, every int and uint type, float32,
// float64, string, []byte, time.Time, json.RawMessage, json.Number, named
// types and pointers of those kinds, and for json columns anything
// json.Marshal accepts. Rules by column type (coerce is c.Coerce ||
// t.Coerce):
//
//   - integer: integers within int64; floats without a fraction within
//     int64 (not NaN or ±Inf; 1e300 is an error). With coerce: decimal text
//     ("42", " -7 ", "1e3"), booleans as 0/1.
//   - real: finite floats; integers that float64 holds exactly (every
//     |i| ≤ 2^53, and larger ones such as 2^60). With coerce: other integers
//     rounded to nearest, decimal text, booleans as 0/1.
//   - text: valid UTF-8 strings only (invalid UTF-8 is an error even with
//     coerce). With coerce: integers and floats formatted as JavaScript and
//     encoding/json do (42, 1.5, 1e+21), booleans as "true"/"false",
//     times as RFC 3339 UTC with milliseconds.
//   - boolean: bools. With coerce: the numbers 0 and 1, the text "true" and
//     "false".
//   - blob: []byte (copied) and Blob Values.
//   - timestamp: time.Time (truncated to the millisecond, in UTC); integers
//     and integral floats as milliseconds since the Unix epoch; within
//     ±MaxTimestampMillis (a JavaScript Date's range). With coerce:
//     RFC 3339 / ISO 8601 text with a time zone ("2024-05-01T12:00:00Z",
//     "2024-05-01 12:00:00.5+02:00") or a date ("2024-05-01", UTC midnight).
//   - json: json.RawMessage and JSON Values (validated and compacted);
//     strings become JSON strings; numbers and booleans their JSON text;
//     time.Time its JSON string; anything else json.Marshal's output
//     (compact, without HTML escaping). Non-finite floats are errors, and
//     so is a value nested more than MaxJSONDepth (256) levels deep. In
//     the browser build, which leaves encoding/json out, a value whose
//     encoding encoding/json defines by methods or struct fields (a
//     struct, a MarshalJSON or MarshalText method) is an error (json.go).
func CoerceValue(t *TableDef, c *ColumnDef, in any) (Value, error) {
	// Fast paths: the Go type already matches the column.
	switch x := in.(type) {
	case nil:
		return Null, nil
	case string:
		if c.Type == KindText && utf8.ValidString(x) {
			return Text(x), nil
		}
	case float64: // every JavaScript number
		switch c.Type {
		case KindReal:
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				return Real(x), nil
			}
		case KindInteger:
			if i, ok := realAsInt(x); ok {
				return Int(i), nil
			}
		case KindTimestamp:
			if i, ok := realAsInt(x); ok && timestampInRange(i) {
				return TimestampMillis(i), nil
			}
		}
	case int64:
		if c.Type == KindInteger {
			return Int(x), nil
		}
	case int:
		if c.Type == KindInteger {
			return Int(int64(x)), nil
		}
	case bool:
		if c.Type == KindBoolean {
			return Bool(x), nil
		}
	case Value:
		switch {
		case x.kind != c.Type:
		case x.kind == KindText && !utf8.ValidString(x.s),
			x.kind == KindReal && (math.IsNaN(x.f) || math.IsInf(x.f, 0)),
			x.kind == KindJSON && jsonTooDeep(x.s),
			x.kind == KindTimestamp && !timestampInRange(x.i):
		default:
			return x, nil
		}
	}
	return coerceSlow(t, c, in)
}

// coerceSlow is CoerceValue beyond the fast paths.
func coerceSlow(t *TableDef, c *ColumnDef, in any) (Value, error) {
	co := c.Coerce || (t != nil && t.Coerce)
	x := classifyInput(in)
	if x.kind == cinNull {
		return Null, nil
	}
	v, detail, ok := convertInput(c.Type, &x, co)
	if ok && v.kind == KindJSON && jsonTooDeep(v.s) {
		table := ""
		if t != nil {
			table = t.Name
		}
		return Null, &ValidationError{Table: table, Column: c.Name, Reason: fmt.Sprintf(
			"json value nested more than %d levels deep (the sync protocol's limit)", MaxJSONDepth)}
	}
	if ok {
		return v, nil
	}
	hint := ""
	if !co {
		if _, _, ok := convertInput(c.Type, &x, true); ok {
			hint = "set coerce to convert"
		}
	}
	var b strings.Builder
	b.WriteString("expected ")
	b.WriteString(c.Type.String())
	b.WriteString(", got ")
	b.WriteString(x.describe())
	switch {
	case detail != "" && hint != "":
		b.WriteString(" (" + detail + "; " + hint + ")")
	case detail != "":
		b.WriteString(" (" + detail + ")")
	case hint != "":
		b.WriteString(" (" + hint + ")")
	}
	table := ""
	if t != nil {
		table = t.Name
	}
	return Null, &ValidationError{Table: table, Column: c.Name, Reason: b.String()}
}

// NormalizeRemote returns v, arrived from a peer for column c, in the form
// the origin's CoerceValue would have stored, without ever failing or
// losing information (the origin validated it; a value that does not fit is
// kept as it is). Wire decoding turns JSON numbers without a fraction into
// Integers, hence:
//
//   - Integer into a real column: Real, when float64 holds it exactly.
//   - Integer into a timestamp column: Timestamp (milliseconds).
//   - Real without a fraction (within int64) into an integer column:
//     Integer (-0.0 becomes 0, as CoerceValue does); into a timestamp
//     column: Timestamp.
//   - Text (valid UTF-8) into a json column: the JSON string; Integer,
//     finite Real or Boolean into a json column: its JSON text.
//
// Everything else, null included, is returned unchanged.
func NormalizeRemote(c *ColumnDef, v Value) Value {
	switch c.Type {
	case KindReal:
		if v.kind == KindInteger && intIsExactReal(v.i) {
			return Real(float64(v.i))
		}
	case KindInteger:
		if v.kind == KindReal {
			if i, ok := realAsInt(v.f); ok {
				return Int(i)
			}
		}
	case KindTimestamp:
		switch v.kind {
		case KindInteger:
			return TimestampMillis(v.i)
		case KindReal:
			if i, ok := realAsInt(v.f); ok {
				return TimestampMillis(i)
			}
		}
	case KindJSON:
		switch v.kind {
		case KindText:
			if utf8.ValidString(v.s) {
				return Value{kind: KindJSON, s: string(appendJSONString(nil, v.s, false))}
			}
		case KindInteger:
			return Value{kind: KindJSON, s: strconv.FormatInt(v.i, 10)}
		case KindReal:
			if !math.IsNaN(v.f) && !math.IsInf(v.f, 0) {
				return Value{kind: KindJSON, s: string(appendJSONFloat(nil, v.f))}
			}
		case KindBoolean:
			return Value{kind: KindJSON, s: strconv.FormatBool(v.i != 0)}
		}
	}
	return v
}

// WrongType says why v, a peer's value normalized for column c
// (NormalizeRemote), is not of c's type and cannot be stored in it — another
// kind, text that is not UTF-8, JSON nested too deeply, a timestamp outside
// a JavaScript Date's range — or returns "". Null always fits: NotNull is
// not enforced on peers' facts, as merging columns legitimately produces
// partial rows. The engine holds a change whose value is of the wrong type
// instead of storing it (engine.HeldWrongType; docs/design.md § Held
// changes).
func WrongType(c *ColumnDef, v Value) string {
	switch {
	case v.Kind() == KindNull:
		return ""
	case v.Kind() != c.Type:
		return fmt.Sprintf("%s value %s for %s %s column", v.Kind(), truncateForMessage(v.String()), article(c.Type.String()), c.Type)
	case v.Kind() == KindText && !utf8.ValidString(v.Text()):
		return "text value is not valid UTF-8"
	case v.Kind() == KindJSON && jsonTooDeep(v.Text()):
		return fmt.Sprintf("json value nested more than %d levels deep", MaxJSONDepth)
	case v.Kind() == KindTimestamp && !timestampInRange(v.Int()):
		return fmt.Sprintf("timestamp %d ms outside a JavaScript Date's range (±%d)", v.Int(), int64(MaxTimestampMillis))
	}
	return ""
}

// coerceInputKind classifies a caller's Go value.
type coerceInputKind uint8

const (
	cinNull    coerceInputKind = iota
	cinBool                    // b
	cinInt                     // i
	cinBigUint                 // u, an unsigned integer above MaxInt64
	cinFloat                   // f
	cinString                  // s
	cinBytes                   // s holds a copy of the bytes
	cinTime                    // i in ms since the epoch (ok), or out of range (!ok)
	cinJSON                    // s, JSON text: validated when from json.RawMessage, trusted when from a Value (valid)
	cinNumber                  // s, a json.Number's text
	cinOther                   // other
)

type coerceInput struct {
	kind  coerceInputKind
	b     bool
	valid bool // cinTime: within int64 ms; cinJSON: known valid and compact (a JSON Value)
	i     int64
	u     uint64
	f     float64
	s     string
	other any // cinOther, and named or pointer types: the caller's value for json.Marshal
}

func classifyInput(in any) coerceInput {
	switch x := in.(type) {
	case nil:
		return coerceInput{kind: cinNull}
	case Value:
		switch x.kind {
		case KindNull:
			return coerceInput{kind: cinNull}
		case KindBoolean:
			return coerceInput{kind: cinBool, b: x.i != 0}
		case KindInteger:
			return coerceInput{kind: cinInt, i: x.i}
		case KindReal:
			return coerceInput{kind: cinFloat, f: x.f}
		case KindTimestamp:
			return coerceInput{kind: cinTime, i: x.i, valid: true}
		case KindText:
			return coerceInput{kind: cinString, s: x.s}
		case KindJSON:
			return coerceInput{kind: cinJSON, s: x.s, valid: true}
		case KindBlob:
			return coerceInput{kind: cinBytes, s: x.s}
		}
		return coerceInput{kind: cinOther, other: in}
	case bool:
		return coerceInput{kind: cinBool, b: x}
	case int:
		return coerceInput{kind: cinInt, i: int64(x)}
	case int8:
		return coerceInput{kind: cinInt, i: int64(x)}
	case int16:
		return coerceInput{kind: cinInt, i: int64(x)}
	case int32:
		return coerceInput{kind: cinInt, i: int64(x)}
	case int64:
		return coerceInput{kind: cinInt, i: x}
	case uint:
		return classifyUint(uint64(x))
	case uint8:
		return classifyUint(uint64(x))
	case uint16:
		return classifyUint(uint64(x))
	case uint32:
		return classifyUint(uint64(x))
	case uint64:
		return classifyUint(x)
	case float32:
		return coerceInput{kind: cinFloat, f: float64(x)}
	case float64:
		return coerceInput{kind: cinFloat, f: x}
	case string:
		return coerceInput{kind: cinString, s: x}
	case []byte:
		return coerceInput{kind: cinBytes, s: string(x)}
	case json.RawMessage:
		return coerceInput{kind: cinJSON, s: string(x)}
	case json.Number:
		return coerceInput{kind: cinNumber, s: string(x)}
	case time.Time:
		return classifyTime(x)
	}
	return classifyReflect(in)
}

func classifyUint(u uint64) coerceInput {
	if u > math.MaxInt64 {
		return coerceInput{kind: cinBigUint, u: u}
	}
	return coerceInput{kind: cinInt, i: int64(u)}
}

func classifyTime(t time.Time) coerceInput {
	// UnixMilli is undefined beyond int64 milliseconds (±292 million years).
	if s := t.Unix(); s > math.MaxInt64/1000-1 || s < math.MinInt64/1000+1 {
		return coerceInput{kind: cinTime, valid: false}
	}
	return coerceInput{kind: cinTime, i: t.UnixMilli(), valid: true}
}

// classifyReflect handles named types of the basic kinds (type Status
// string) and pointers. The caller's value is kept for json.Marshal, so a
// custom MarshalJSON still applies to json columns.
func classifyReflect(in any) coerceInput {
	rv := reflect.ValueOf(in)
	var x coerceInput
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return coerceInput{kind: cinNull}
		}
		x = classifyInput(rv.Elem().Interface())
	case reflect.Bool:
		x = coerceInput{kind: cinBool, b: rv.Bool()}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = coerceInput{kind: cinInt, i: rv.Int()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x = classifyUint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		x = coerceInput{kind: cinFloat, f: rv.Float()}
	case reflect.String:
		x = coerceInput{kind: cinString, s: rv.String()}
	case reflect.Slice:
		if rv.Type().Elem().Kind() != reflect.Uint8 {
			return coerceInput{kind: cinOther, other: in}
		}
		x = coerceInput{kind: cinBytes, s: string(rv.Bytes())}
	default:
		return coerceInput{kind: cinOther, other: in}
	}
	if x.kind != cinNull {
		x.other = in
	}
	return x
}

// describe returns the input for a message: `text "42"`, `integer 42`,
// `real 1.5`, `blob (3 bytes)`, `Go value of type []int`.
func (x *coerceInput) describe() string {
	switch x.kind {
	case cinNull:
		return "null"
	case cinBool:
		return "boolean " + strconv.FormatBool(x.b)
	case cinInt:
		return "integer " + strconv.FormatInt(x.i, 10)
	case cinBigUint:
		return "integer " + strconv.FormatUint(x.u, 10)
	case cinFloat:
		return "real " + strconv.FormatFloat(x.f, 'g', -1, 64)
	case cinString:
		if !utf8.ValidString(x.s) {
			return "invalid UTF-8 text " + strconv.Quote(truncateForMessage(x.s))
		}
		return "text " + strconv.Quote(truncateForMessage(x.s))
	case cinBytes:
		return "blob (" + strconv.Itoa(len(x.s)) + " bytes)"
	case cinTime:
		if !x.valid {
			return "time out of range"
		}
		return "timestamp " + formatTimestampMillis(x.i)
	case cinJSON:
		return "json " + truncateForMessage(x.s)
	case cinNumber:
		return "number " + truncateForMessage(x.s)
	}
	return "Go value of type " + reflect.TypeOf(x.other).String()
}

// article is the indefinite article before word: "an" before a vowel
// ("an integer column"), else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func truncateForMessage(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// convertInput converts x to a Value of kind k. On failure detail explains
// beyond the type mismatch (empty for a plain mismatch).
func convertInput(k Kind, x *coerceInput, co bool) (v Value, detail string, ok bool) {
	switch k {
	case KindInteger:
		return toIntegerValue(x, co)
	case KindReal:
		return toRealValue(x, co)
	case KindText:
		return toTextValue(x, co)
	case KindBoolean:
		return toBooleanValue(x, co)
	case KindBlob:
		if x.kind == cinBytes {
			return Value{kind: KindBlob, s: x.s}, "", true
		}
	case KindTimestamp:
		return toTimestampValue(x, co)
	case KindJSON:
		return toJSONValue(x)
	default:
		return Null, "the column has invalid type " + k.String(), false
	}
	return Null, "", false
}

const (
	detailNotFinite  = "not a finite number"
	detailFraction   = "has a fraction"
	detailInt64Range = "out of int64 range"
)

func toIntegerValue(x *coerceInput, co bool) (Value, string, bool) {
	switch x.kind {
	case cinInt:
		return Int(x.i), "", true
	case cinBigUint:
		return Null, detailInt64Range, false
	case cinFloat:
		i, detail := floatToInt(x.f)
		if detail != "" {
			return Null, detail, false
		}
		return Int(i), "", true
	case cinNumber:
		i, detail := parseDecimalInt(x.s)
		if detail != "" {
			return Null, detail, false
		}
		return Int(i), "", true
	case cinBool:
		if co {
			return Int(boolToInt(x.b)), "", true
		}
	case cinString:
		if co {
			i, detail := parseDecimalInt(strings.TrimSpace(x.s))
			if detail != "" {
				return Null, detail, false
			}
			return Int(i), "", true
		}
	}
	return Null, "", false
}

func toRealValue(x *coerceInput, co bool) (Value, string, bool) {
	switch x.kind {
	case cinFloat:
		if math.IsNaN(x.f) || math.IsInf(x.f, 0) {
			return Null, detailNotFinite, false
		}
		return Real(x.f), "", true
	case cinInt:
		if co || intIsExactReal(x.i) {
			return Real(float64(x.i)), "", true
		}
		return Null, "not exactly representable as a real", false
	case cinBigUint:
		if f := float64(x.u); co || f < 0x1p64 && uint64(f) == x.u {
			return Real(float64(x.u)), "", true
		}
		return Null, "not exactly representable as a real", false
	case cinNumber:
		return parseDecimalReal(x.s, co)
	case cinBool:
		if co {
			return Real(float64(boolToInt(x.b))), "", true
		}
	case cinString:
		if co {
			return parseDecimalReal(strings.TrimSpace(x.s), true)
		}
	}
	return Null, "", false
}

func toTextValue(x *coerceInput, co bool) (Value, string, bool) {
	switch x.kind {
	case cinString:
		if !utf8.ValidString(x.s) {
			return Null, "text must be valid UTF-8", false
		}
		return Text(x.s), "", true
	}
	if !co {
		return Null, "", false
	}
	switch x.kind {
	case cinInt:
		return Text(strconv.FormatInt(x.i, 10)), "", true
	case cinBigUint:
		return Text(strconv.FormatUint(x.u, 10)), "", true
	case cinFloat:
		if math.IsNaN(x.f) || math.IsInf(x.f, 0) {
			return Null, detailNotFinite, false
		}
		return Text(string(appendJSONFloat(nil, x.f))), "", true
	case cinNumber:
		if !isDecimalNumber(x.s) {
			return Null, "not a number", false
		}
		return Text(x.s), "", true
	case cinBool:
		return Text(strconv.FormatBool(x.b)), "", true
	case cinTime:
		if !x.valid {
			return Null, "out of range", false
		}
		return Text(formatTimestampMillis(x.i)), "", true
	}
	return Null, "", false
}

func toBooleanValue(x *coerceInput, co bool) (Value, string, bool) {
	if x.kind == cinBool {
		return Bool(x.b), "", true
	}
	if !co {
		return Null, "", false
	}
	const onlyNumbers = "only the numbers 0 and 1 convert to boolean"
	switch x.kind {
	case cinInt:
		if x.i == 0 || x.i == 1 {
			return Bool(x.i == 1), "", true
		}
		return Null, onlyNumbers, false
	case cinFloat:
		if x.f == 0 || x.f == 1 {
			return Bool(x.f == 1), "", true
		}
		return Null, onlyNumbers, false
	case cinNumber:
		if f, err := strconv.ParseFloat(x.s, 64); err == nil && isDecimalNumber(x.s) && (f == 0 || f == 1) {
			return Bool(f == 1), "", true
		}
		return Null, onlyNumbers, false
	case cinBigUint:
		return Null, onlyNumbers, false
	case cinString:
		switch strings.TrimSpace(x.s) {
		case "true":
			return Bool(true), "", true
		case "false":
			return Bool(false), "", true
		}
		return Null, `only the text "true" and "false" converts to boolean`, false
	}
	return Null, "", false
}

// MaxTimestampMillis bounds the values of timestamp columns: a JavaScript
// Date holds ±8.64e15 ms around the epoch (100 million days) and nothing
// beyond, so a replica stores only what every browser can read back.
const MaxTimestampMillis = 8_640_000_000_000_000

func timestampInRange(ms int64) bool { return -MaxTimestampMillis <= ms && ms <= MaxTimestampMillis }

// toTimestampValue is toTimestampMillis checked against the Date range.
func toTimestampValue(x *coerceInput, co bool) (Value, string, bool) {
	v, detail, ok := toTimestampMillis(x, co)
	if ok && !timestampInRange(v.i) {
		return Null, "out of range: a JavaScript Date holds ±8.64e15 ms around the epoch", false
	}
	return v, detail, ok
}

func toTimestampMillis(x *coerceInput, co bool) (Value, string, bool) {
	switch x.kind {
	case cinTime:
		if !x.valid {
			return Null, "out of range", false
		}
		return TimestampMillis(x.i), "", true
	case cinInt:
		return TimestampMillis(x.i), "", true
	case cinBigUint:
		return Null, detailInt64Range, false
	case cinFloat:
		i, detail := floatToInt(x.f)
		if detail != "" {
			return Null, msDetail(detail), false
		}
		return TimestampMillis(i), "", true
	case cinNumber:
		i, detail := parseDecimalInt(x.s)
		if detail != "" {
			return Null, msDetail(detail), false
		}
		return TimestampMillis(i), "", true
	case cinString:
		if co {
			ms, detail := parseTimestampText(strings.TrimSpace(x.s))
			if detail != "" {
				return Null, detail, false
			}
			return TimestampMillis(ms), "", true
		}
	}
	return Null, "", false
}

// msDetail words a number problem for a timestamp in milliseconds.
func msDetail(detail string) string {
	if detail == detailFraction {
		return "not a whole number of milliseconds"
	}
	return detail
}

// detailUnsyncableJSON is the reason for JSON the wire refuses to carry.
const detailUnsyncableJSON = "invalid UTF-8 or an unpaired surrogate escape in a JSON string (the sync protocol cannot carry it)"

func toJSONValue(x *coerceInput) (Value, string, bool) {
	switch x.kind {
	case cinJSON:
		if x.valid {
			return Value{kind: KindJSON, s: x.s}, "", true
		}
		v, err := JSONValue([]byte(x.s))
		if errors.Is(err, errJSONUnsyncable) {
			return Null, detailUnsyncableJSON, false
		} else if err != nil {
			return Null, "invalid JSON", false
		}
		return v, "", true
	case cinString:
		if !utf8.ValidString(x.s) {
			return Null, "text must be valid UTF-8", false
		}
		if x.other != nil { // a named string type may marshal itself differently
			break
		}
		return Value{kind: KindJSON, s: string(appendJSONString(nil, x.s, false))}, "", true
	case cinInt:
		if x.other == nil {
			return Value{kind: KindJSON, s: strconv.FormatInt(x.i, 10)}, "", true
		}
	case cinBigUint:
		if x.other == nil {
			return Value{kind: KindJSON, s: strconv.FormatUint(x.u, 10)}, "", true
		}
	case cinFloat:
		if math.IsNaN(x.f) || math.IsInf(x.f, 0) {
			return Null, detailNotFinite, false
		}
		if x.other == nil {
			return Value{kind: KindJSON, s: string(appendJSONFloat(nil, x.f))}, "", true
		}
	case cinNumber:
		if !isJSONNumber(x.s) {
			return Null, "not a JSON number", false
		}
		return Value{kind: KindJSON, s: x.s}, "", true
	case cinBool:
		if x.other == nil {
			return Value{kind: KindJSON, s: strconv.FormatBool(x.b)}, "", true
		}
	case cinTime:
		if !x.valid {
			return Null, "out of range", false
		}
		return Value{kind: KindJSON, s: `"` + formatTimestampMillis(x.i) + `"`}, "", true
	case cinBytes:
		if x.other == nil {
			return Value{kind: KindJSON, s: string(jsontext.AppendBase64(nil, []byte(x.s)))}, "", true // base64, as json.Marshal writes []byte
		}
	}
	j, err := marshalJSON(x.other)
	if errors.Is(err, errJSONUnsyncable) {
		return Null, detailUnsyncableJSON, false
	} else if err != nil {
		return Null, "cannot encode as JSON: " + err.Error(), false
	}
	return Value{kind: KindJSON, s: string(j)}, "", true
}

// appendJSONFloat formats a finite f as encoding/json and JavaScript do:
// shortest round-trip digits, exponent form below 1e-6 and from 1e21.
func appendJSONFloat(b []byte, f float64) []byte { return appendJSONFloatBits(b, f, 64) }

// formatTimestampMillis formats ms since the epoch as RFC 3339 in UTC with
// milliseconds, as JavaScript's Date.toISOString does for years 0–9999.
func formatTimestampMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func boolToInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// intIsExactReal reports whether float64 holds i exactly.
func intIsExactReal(i int64) bool {
	if -1<<53 <= i && i <= 1<<53 {
		return true
	}
	f := float64(i)
	return f < 0x1p63 && int64(f) == i // 2^63 is MaxInt64 rounded up: not exact
}

// realAsInt returns f as an int64 when it has no fraction and is in range.
func realAsInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -0x1p63 || f >= 0x1p63 { // NaN and ±Inf fail the first test
		return 0, false
	}
	return int64(f), true
}

func floatToInt(f float64) (int64, string) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, detailNotFinite
	case f != math.Trunc(f):
		return 0, detailFraction
	case f < -0x1p63 || f >= 0x1p63:
		return 0, detailInt64Range
	}
	return int64(f), ""
}

// isDecimalNumber reports whether s is [+-]digits[.digits][(e|E)[+-]digits]
// (a fraction may also start at the point: ".5", "5."), with no spaces, hex,
// underscores, "Inf" or "NaN".
func isDecimalNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// parseDecimalInt parses decimal text as an int64, exactly: an integer
// literal, or a number whose fraction is zero ("1e3", "42.0",
// "9007199254740993.0"); "4.5" and "1e-400" have a fraction.
func parseDecimalInt(s string) (int64, string) {
	if !isDecimalNumber(s) {
		return 0, "not a decimal number"
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, ""
	}
	sign := ""
	if s[0] == '+' || s[0] == '-' {
		sign, s = s[:1], s[1:]
	}
	mant, exp := s, 0
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e, err := strconv.Atoi(s[k+1:])
		switch {
		case err != nil && s[k+1] == '-':
			e = math.MinInt32 // any fraction digit stays a fraction; zero stays zero
		case err != nil:
			e = math.MaxInt32
		}
		mant, exp = s[:k], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	all := intPart + frac
	digits := strings.TrimLeft(all, "0")
	point := len(intPart) - (len(all) - len(digits)) + exp // digits before the decimal point
	digits = strings.TrimRight(digits, "0")
	switch {
	case digits == "":
		return 0, ""
	case point < len(digits):
		return 0, detailFraction
	case point > 19:
		return 0, detailInt64Range
	}
	i, err := strconv.ParseInt(sign+digits+strings.Repeat("0", point-len(digits)), 10, 64)
	if err != nil {
		return 0, detailInt64Range
	}
	return i, ""
}

// parseDecimalReal parses decimal text as a float64 (rounded to nearest).
// An integer literal beyond 2^53 that float64 does not hold exactly needs
// coerce, as an integer does.
func parseDecimalReal(s string, co bool) (Value, string, bool) {
	if !isDecimalNumber(s) {
		return Null, "not a decimal number", false
	}
	if !co {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil && !intIsExactReal(i) {
			return Null, "not exactly representable as a real", false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return Null, "out of range for a real", false
	}
	return Real(f), "", true
}

// parseTimestampText parses RFC 3339 / ISO 8601 text with a time zone, or a
// date (UTC midnight), into ms since the epoch (sub-millisecond digits are
// truncated).
func parseTimestampText(s string) (int64, string) {
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	var t time.Time
	var err error
	if len(s) == len("2006-01-02") {
		t, err = time.Parse(time.DateOnly, s)
	} else {
		t, err = time.Parse(time.RFC3339Nano, s)
	}
	if err != nil {
		if _, err2 := time.Parse("2006-01-02T15:04:05.999999999", s); err2 == nil {
			return 0, "no time zone: add Z or an offset such as +02:00"
		}
		return 0, "not an RFC 3339 / ISO 8601 time"
	}
	x := classifyTime(t)
	if !x.valid {
		return 0, "out of range"
	}
	return x.i, ""
}
