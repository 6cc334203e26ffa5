package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// json.go replaces encoding/json for json column values (for the browser
// build's size); these tests hold it to encoding/json's output and
// acceptance.

// jsonCorpus holds valid and invalid JSON texts.
var jsonCorpus = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`,
	`-12.5e+300`, `+1`, `1 2`, `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{ }`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	`{"a":[1,{"b":null}],"c":"x"}`, " \t\n\r{ \"a\" :\n[ 1 , 2.50 , \"x\" ] }\n ", `"\u00e9\ud83d\ude00"`,
	`"\ud800"`, `"\udc00x"`, `"\x"`, `"\u12"`, `"\u12G4"`, `"unterminated`, "\"ctl\x01\"", "\"tab\t\"", `"\/\b\f\n\r\t\"\\"`,
	"\"bad utf8 \xff\xfe\"", "\"\u2028 <&>\"", `[[[[[]]]]]`, `{"a":{"a":{"a":{}}}}`, `{"a":1}x`, "\x00", `[1]]`, `{"a":1}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func checkCompact(t *testing.T, src string) {
	t.Helper()
	var want bytes.Buffer
	werr := json.Compact(&want, []byte(src))
	valid := json.Valid([]byte(src))
	got, err := compactJSON([]byte("prefix:"), []byte(src))
	if (werr == nil) != valid {
		t.Fatalf("encoding/json(%.60q): Valid %v, Compact %v", src, valid, werr)
	}
	// What encoding/json accepts but the wire refuses is refused too.
	unsyncable := valid && (!utf8.ValidString(src) || loneSurrogate(src))
	if unsyncable != errors.Is(err, errJSONUnsyncable) {
		t.Errorf("compactJSON(%.60q): err %v; want errJSONUnsyncable: %v", src, err, unsyncable)
	}
	valid = valid && !unsyncable
	if (err == nil) != valid {
		t.Errorf("compactJSON(%.60q): err %v; encoding/json: Valid %v", src, err, valid)
		return
	}
	if valid && string(got) != "prefix:"+want.String() {
		t.Errorf("compactJSON(%.60q) = %.60q, want %.60q", src, got, "prefix:"+want.String())
	}
	if !valid && string(got) != "prefix:" {
		t.Errorf("compactJSON(%.60q) failed but changed dst: %q", src, got)
	}
}

// loneSurrogate reports whether the valid JSON text s has an escaped
// UTF-16 surrogate that is not half of an escaped pair.
func loneSurrogate(s string) bool {
	hex := func(i int) int { // the \uXXXX escape at s[i:], or -1
		if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
		if err != nil {
			return -1
		}
		return int(n)
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		c := hex(i)
		switch {
		case c >= 0xD800 && c < 0xDC00:
			if d := hex(i + 6); d < 0xDC00 || d > 0xDFFF {
				return true
			}
			i += 11
		case c >= 0xDC00 && c <= 0xDFFF:
			return true
		default:
			i++ // the escaped character (or 'u' of a non-surrogate)
		}
	}
	return false
}

func TestCompactJSON(t *testing.T) {
	for _, src := range jsonCorpus {
		checkCompact(t, src)
	}
}

func FuzzCompactJSON(f *testing.F) {
	for _, src := range jsonCorpus {
		if len(src) < 100 {
			f.Add(src)
		}
	}
	f.Fuzz(checkCompact)
}

var jsonStrings = []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f", "html <a href='x'>&amp;</a>",
	"\u2028 and \u2029", "bad \xff\xfe utf8 \xe2\x80", "é 😀 \U0010FFFF", "\xed\xa0\x80 surrogate bytes"}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s, true); string(got) != string(want) {
			t.Errorf("appendJSONString(%q, html) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := appendJSONString(nil, s, false); string(got)+"\n" != buf.String() {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, buf.String())
		}
	}
}

type jsonTestStatus string
type jsonTestBytes []byte
type jsonTestKey int16
type jsonTestMarshaler struct{}

func (jsonTestMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"m" : 1}`), nil }

type jsonTestText int

func (t jsonTestText) MarshalText() ([]byte, error) { return []byte("text"), nil }

type jsonTestPtrMarshaler struct{ N int }

func (*jsonTestPtrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

// TestMarshalJSON: marshalJSON writes what an encoding/json Encoder with
// SetEscapeHTML(false) writes, for the values it handles itself and for
// those it leaves to encoding/json (natively).
func TestMarshalJSON(t *testing.T) {
	one := 1
	var nilMap map[string]any
	var nilSlice []int
	var nilPtr *int
	values := []any{
		nil, true, false, 0, -42, int8(-8), uint8(200), uint64(math.MaxUint64), uintptr(7), math.MaxInt64,
		0.0, math.Copysign(0, -1), 1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
		float32(0.1), float32(1e-7), float32(3.4e38), float32(16777216),
		"", "a <b> & \"c\"\n\u2028\xff",
		[]byte(nil), []byte{}, []byte{0, 1, 2, 255}, jsonTestBytes{1, 2},
		[3]byte{1, 2, 3}, [0]int{}, []int{1, 2}, nilSlice, []string{"x"}, []any{"x", nil, 1.5, []any{}},
		map[string]any{"b": 1, "a": []int{1, 2}, "": nil, "<": ">"}, nilMap, map[string]int{},
		map[int]string{10: "ten", -1: "m", 2: "two"}, map[uint8]bool{3: true}, map[jsonTestKey]int{5: 5},
		map[jsonTestStatus]jsonTestStatus{"k": "v"}, &one, nilPtr, &[]any{&one},
		jsonTestStatus("open"), json.Number("1.50"), json.Number("-0e+1"), json.Number(""), []any{json.Number("2")},
		json.RawMessage(` { "a" : [ 1 ] } `), map[string]any{"raw": json.RawMessage(`[1, 2]`)}, json.RawMessage(nil),
		// Left to encoding/json: methods, structs.
		jsonTestMarshaler{}, []any{jsonTestMarshaler{}}, jsonTestText(1), map[jsonTestText]int{1: 1},
		struct {
			A int `json:"a,omitempty"`
			B string
		}{B: "b"}, []jsonTestPtrMarshaler{{1}}, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), []any{time.Unix(0, 0).UTC()},
	}
	for _, v := range values {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encoding/json %T %v: %v", v, v, err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		got, err := marshalJSON(v)
		if err != nil || string(got) != want {
			t.Errorf("marshalJSON(%T %#v) = %s, %v; want %s", v, v, got, err, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(-1), float32(math.Inf(1)), []any{math.NaN()}, json.Number("01"), json.Number("+1"),
		json.Number(" 1"), json.RawMessage(`{`), json.RawMessage{}, map[string]any{"c": make(chan int)}, func() {}} {
		if _, jerr := json.Marshal(v); jerr == nil {
			t.Fatalf("encoding/json accepts %T %v", v, v)
		}
		if got, err := marshalJSON(v); err == nil {
			t.Errorf("marshalJSON(%T %v) = %s, want an error", v, v, got)
		}
	}
}
