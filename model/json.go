package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	"github.com/replica-sync/replica/internal/jsontext"
)

// JSON without encoding/json's machinery, for values of json columns:
// JSONValue validates and compacts a JSON text, JSONOf and CoerceValue
// marshal Go values. encoding/json does this by reflection, and in the
// browser build that machinery is about 0.9 MB of replica.wasm (220 KB
// gzipped), so this file does it with internal/jsontext, matching
// encoding/json's output and acceptance byte for byte. Only json.RawMessage and json.Number are used
// from encoding/json, as types.
//
// What stays with encoding/json is marshaling Go values whose encoding it
// defines by methods or struct fields (structs, types with MarshalJSON or
// MarshalText): marshalJSONFallback, which natively is encoding/json and in
// the browser build an error (json_js.go). The JavaScript API never
// produces such values; it hands objects and arrays over as
// json.RawMessage.

// maxJSONDepth is encoding/json's nesting limit, which JSONValue shares
// (jsontext.DefaultMaxDepth).
const maxJSONDepth = jsontext.DefaultMaxDepth

// MaxJSONDepth is the deepest nesting of arrays and objects a value of a
// json column may have (1 for [1], 2 for [[1]]). It is the sync protocol's
// limit (wire.MaxJSONDepth is this constant): a deeper value could be
// stored but never pushed, so a local write of one is refused with a
// *ValidationError.
const MaxJSONDepth = 256

// jsonTooDeep reports whether the valid JSON text s nests arrays and
// objects deeper than MaxJSONDepth.
//
//go:noinline
func jsonTooDeep(s string) bool { return jsontext.Deeper(s, MaxJSONDepth) }

// errJSONMethods is returned by appendJSONOf for a value whose encoding
// encoding/json defines by methods or struct fields.
var errJSONMethods = errors.New("needs encoding/json")

// errJSONUnsyncable is wrapped by compactJSON's error for a text that is
// JSON to encoding/json but that the sync protocol refuses to carry: a
// string with invalid UTF-8 or an unpaired surrogate escape (\ud800 alone,
// which JavaScript's JSON.stringify writes for a lone surrogate). Such a
// value could be stored but never pushed, so it is refused at write.
var errJSONUnsyncable = errors.New("the sync protocol cannot carry it")

// compactJSON appends src, which must be exactly one JSON value, to dst
// without insignificant whitespace, as encoding/json's Compact does;
// strings are copied unchanged. It accepts what encoding/json's Valid
// accepts except what the wire refuses (errJSONUnsyncable): invalid UTF-8
// and unpaired surrogate escapes. On error dst is returned as given.
func compactJSON(dst, src []byte) ([]byte, error) {
	out, err := jsontext.Compact(dst, src, jsontext.SurrogateError)
	if err != nil {
		// Only on error: is it JSON to encoding/json (an unpaired surrogate)?
		if _, jerr := jsontext.Compact(nil, src, jsontext.SurrogateReplace); jerr == nil {
			err = fmt.Errorf("%v (%w)", err, errJSONUnsyncable)
		}
		return dst, err
	}
	if i := jsontext.InvalidUTF8(out[len(dst):]); i >= 0 { // in a string
		return dst, fmt.Errorf("invalid UTF-8 in a string (%w)", errJSONUnsyncable)
	}
	return out, nil
}

// isJSONNumber reports whether s is exactly a JSON number literal.
func isJSONNumber(s string) bool { return jsontext.IsNumber(s) }

// appendJSONString appends s as a JSON string as an encoding/json Encoder
// with SetEscapeHTML(false) writes it (jsontext.AppendString with
// EscapeLineSeparators); with html, as json.Marshal's default.
func appendJSONString(dst []byte, s string, html bool) []byte {
	if html {
		return jsontext.AppendString(dst, s, jsontext.EscapeHTML|jsontext.EscapeLineSeparators)
	}
	return jsontext.AppendString(dst, s, jsontext.EscapeLineSeparators)
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
		return jsontext.AppendBase64(nil, x), nil
	}
	b, err := appendJSONOf(nil, reflect.ValueOf(v), 0)
	if errors.Is(err, errJSONMethods) {
		if b, err = marshalJSONFallback(v); err == nil {
			// A MarshalJSON method may write what the wire refuses.
			return compactJSON(make([]byte, 0, len(b)), b)
		}
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
			return dst, fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
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
			return jsontext.AppendBase64(dst, v.Bytes()), nil
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
// encoding/json does (jsontext.AppendFloat).
func appendJSONFloatBits(b []byte, f float64, bits int) []byte {
	return jsontext.AppendFloat(b, f, bits)
}
