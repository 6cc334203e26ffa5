package engine

import (
	"encoding/base64"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// The engine's own JSON: its snapshot checkpoint, the bytes encoding/json
// once wrote for it, and the legacy form of stored migrations (storage
// format 1, read only to upgrade: migrate.go), read and written with
// internal/jsontext (json column values, and the migrations of format 2,
// are model's: model/json.go, model/migration_json.go). json_test.go
// checks the bytes against encoding/json.

// MaxJSONDepth is the deepest nesting of arrays and objects a value of a
// json column may have (model.MaxJSONDepth, the sync protocol's limit).
const MaxJSONDepth = model.MaxJSONDepth

// The engine reads stored JSON as encoding/json read it: an unpaired
// surrogate escape as U+FFFD (which its writers never produce).
const engineSurrogates = jsontext.SurrogateReplace

// jsonNumber is a number's text in a decoded JSON tree.
type jsonNumber string

// jsonTree decodes the next value into nil, bool, string, jsonNumber,
// []any or map[string]any (a repeated key: the last wins, as in
// encoding/json).
func jsonTree(r *jsontext.Reader) (any, error) {
	switch c := r.Peek(); {
	case c == '{':
		m := map[string]any{}
		err := r.Members(func(k []byte) error {
			key := jsonString(k)
			v, err := jsonTree(r)
			m[key] = v
			return err
		})
		return m, err
	case c == '[':
		l := []any{}
		err := r.Elements(func(int) error {
			v, err := jsonTree(r)
			l = append(l, v)
			return err
		})
		return l, err
	case c == '"':
		b, err := r.StringBytes()
		return jsonString(b), err
	case c == 't' || c == 'f':
		return r.Boolean()
	case c == 'n':
		if r.Null() {
			return nil, nil
		}
	}
	n, _, err := r.Number()
	return jsonNumber(n), err
}

// jsonString is the decoded string b as encoding/json reads it: each byte
// not part of valid UTF-8 becomes U+FFFD (the Reader copies them).
func jsonString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		out = utf8.AppendRune(out, r)
		i += n
	}
	return string(out)
}

// decodeJSONObject decodes src, which must be one JSON object (or null: an
// empty object).
func decodeJSONObject(src []byte) (jsonObject, error) {
	r := jsontext.Reader{Data: src, Surrogates: engineSurrogates}
	v, err := jsonTree(&r)
	if err == nil {
		err = r.End()
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

// The snapshot checkpoint keeps the bytes json.Marshal wrote: HTML characters and U+2028/U+2029 escaped.
const storedEscape = jsontext.EscapeHTML | jsontext.EscapeLineSeparators

// appendJSONString appends s as a JSON string as json.Marshal writes it
// by default (jsontext.AppendString with storedEscape).
func appendJSONString(dst []byte, s string) []byte {
	return jsontext.AppendString(dst, s, storedEscape)
}

// appendJSONStrings appends a []string as json.Marshal writes it (null for
// nil).
func appendJSONStrings(dst []byte, l []string) []byte {
	return jsontext.AppendStrings(dst, l, storedEscape)
}
