package wire

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/internal/rawvalue"
	"github.com/replica-sync/replica/model"
)

func TestValueEncoding(t *testing.T) {
	const maxSafeInt = 1 << 53
	tests := []struct {
		name string
		v    model.Value
		json string
		// back is what the JSON decodes to without a schema, when it is
		// not v itself.
		back *model.Value
	}{
		{"null", model.Null, `null`, nil},
		{"true", model.Bool(true), `true`, nil},
		{"false", model.Bool(false), `false`, nil},
		{"zero", model.Int(0), `0`, nil},
		{"negative", model.Int(-42), `-42`, nil},
		{"2^53", model.Int(maxSafeInt), `9007199254740992`, nil},
		{"-2^53", model.Int(-maxSafeInt), `-9007199254740992`, nil},
		{"2^53+1", model.Int(maxSafeInt + 1), `{"__bigint":"9007199254740993"}`, nil},
		{"-(2^53+1)", model.Int(-maxSafeInt - 1), `{"__bigint":"-9007199254740993"}`, nil},
		{"MaxInt64", model.Int(math.MaxInt64), `{"__bigint":"9223372036854775807"}`, nil},
		{"MinInt64", model.Int(math.MinInt64), `{"__bigint":"-9223372036854775808"}`, nil},
		{"real", model.Real(1.5), `1.5`, nil},
		{"integral real", model.Real(1), `1.0`, nil},
		{"negative zero", model.Real(math.Copysign(0, -1)), `-0.0`, nil},
		{"real 1e20", model.Real(1e20), `100000000000000000000.0`, nil},
		{"real 1e21", model.Real(1e21), `1e+21`, nil},
		{"real 1e-7", model.Real(1e-7), `1e-7`, nil},
		{"real 0.1", model.Real(0.1), `0.1`, nil},
		{"real 2^53+2", model.Real(maxSafeInt + 2), `9007199254740994.0`, nil},
		{"max float", model.Real(math.MaxFloat64), `1.7976931348623157e+308`, nil},
		{"min subnormal", model.Real(5e-324), `5e-324`, nil},
		{"empty text", model.Text(""), `""`, nil},
		{"text", model.Text("héllo"), `"héllo"`, nil},
		{"non-BMP text", model.Text("🚋 𝄞 𠜎"), `"🚋 𝄞 𠜎"`, nil},
		{"escapes", model.Text("a\"b\\c\nd\re\tf\bg\fh\x00\x1f\u2028/<>&"), `"a\"b\\c\nd\re\tf\bg\fh\u0000\u001f` + "\u2028" + `/<>&"`, nil},
		{"text that looks like a number", model.Text("42"), `"42"`, nil},
		{"empty blob", model.Blob(nil), `{"__bin":""}`, nil},
		{"blob", model.Blob([]byte{0, 1, 0xfe, 0xff}), `{"__bin":"AAH+/w=="}`, nil},
		{"json object", mustJSON(t, `{"a": [1, "x"]}`), `{"a":[1,"x"]}`, nil},
		{"json array", mustJSON(t, `[1,{"b":null}]`), `[1,{"b":null}]`, nil},
		{"json empty object", mustJSON(t, `{}`), `{}`, nil},
		{"json string", mustJSON(t, `"s"`), `{"__json":"s"}`, nil},
		{"json number", mustJSON(t, `1`), `{"__json":1}`, nil},
		{"json null", mustJSON(t, `null`), `{"__json":null}`, nil},
		{"json true", mustJSON(t, `true`), `{"__json":true}`, nil},
		{"json like a blob", mustJSON(t, `{"__bin":"AA=="}`), `{"__json":{"__bin":"AA=="}}`, nil},
		{"json like a bigint", mustJSON(t, `{"__bigint":"1"}`), `{"__json":{"__bigint":"1"}}`, nil},
		{"json like a wrapper", mustJSON(t, `{"__json":1}`), `{"__json":{"__json":1}}`, nil},
		{"json with a tag and more", mustJSON(t, `{"__bin":"x","y":1}`), `{"__bin":"x","y":1}`, nil},
		{"json with a tag inside", mustJSON(t, `[{"__bin":"x"}]`), `[{"__bin":"x"}]`, nil},
		{"timestamp", model.TimestampMillis(1764374400123), `1764374400123`, ptr(model.Int(1764374400123))},
		{"timestamp from time", model.Timestamp(time.UnixMilli(-5)), `-5`, ptr(model.Int(-5))},
		{"far timestamp", model.TimestampMillis(math.MaxInt64), `{"__bigint":"9223372036854775807"}`, ptr(model.Int(math.MaxInt64))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MarshalValue(tt.v)
			if err != nil {
				t.Fatalf("MarshalValue(%v): %v", tt.v, err)
			}
			if string(got) != tt.json {
				t.Fatalf("MarshalValue(%v) = %s, want %s", tt.v, got, tt.json)
			}
			back, err := UnmarshalValue(got)
			if err != nil {
				t.Fatalf("UnmarshalValue(%s): %v", got, err)
			}
			want := tt.v
			if tt.back != nil {
				want = *tt.back
			}
			if !back.Equal(want) {
				t.Fatalf("UnmarshalValue(%s) = %v (%v), want %v (%v)", got, back, back.Kind(), want, want.Kind())
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestValueDecoding covers input a Go encoder never writes but a peer may.
func TestValueDecoding(t *testing.T) {
	tests := []struct {
		json string
		want model.Value
	}{
		{`1`, model.Int(1)},
		{`-0`, model.Int(0)},
		{`1.0`, model.Real(1)},
		{`-0.0`, model.Real(math.Copysign(0, -1))},
		{`1e2`, model.Real(100)},
		{`1E+2`, model.Real(100)},
		{`2.5e-3`, model.Real(0.0025)},
		// Beyond ±2^53 an integer literal is a real: JavaScript could not
		// have held it exactly.
		{`9007199254740993`, model.Real(9007199254740992)},
		{`-9007199254740993`, model.Real(-9007199254740992)},
		{`100000000000000000000`, model.Real(1e20)},
		{`1e-400`, model.Real(0)},
		{`{"__bigint":"5"}`, model.Int(5)},
		{`{"__bigint":"-9007199254740992"}`, model.Int(-1 << 53)},
		{`{"__json":{"__bin":"x"}}`, mustJSON(t, `{"__bin":"x"}`)},
		{`{"__json":{"a":1}}`, mustJSON(t, `{"a":1}`)},
		{`{"__json":"1"}`, mustJSON(t, `"1"`)},
		{` { "a" : [ 1 , 2 ] } `, mustJSON(t, `{"a":[1,2]}`)},
		{`{"__bin":"x","__bigint":"y"}`, mustJSON(t, `{"__bin":"x","__bigint":"y"}`)},
		{`{"a":1,"__bin":"x"}`, mustJSON(t, `{"a":1,"__bin":"x"}`)},
		{`{"a":1,"a":2}`, mustJSON(t, `{"a":1,"a":2}`)}, // a JSON value's own keys are its business
		{`"\u00e9\ud83d\ude8b\/"`, model.Text("é🚋/")},
		{`["\u00e9"]`, mustJSON(t, `["\u00e9"]`)}, // JSON text is kept as written
		{`{"__bin":"\u0041\u0041=="}`, model.Blob([]byte{0})},
	}
	for _, tt := range tests {
		got, err := UnmarshalValue([]byte(tt.json))
		if err != nil {
			t.Errorf("UnmarshalValue(%s): %v", tt.json, err)
			continue
		}
		if !got.Equal(tt.want) {
			t.Errorf("UnmarshalValue(%s) = %v (%v), want %v (%v)", tt.json, got, got.Kind(), tt.want, tt.want.Kind())
		}
	}
}

func TestValueDecodeErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	tests := []struct {
		json, mention string
	}{
		{`{"__bigint":"9223372036854775808"}`, "does not fit"},
		{`{"__bigint":"-9223372036854775809"}`, "does not fit"},
		{`{"__bigint":"01"}`, "canonical"},
		{`{"__bigint":"-0"}`, "canonical"},
		{`{"__bigint":"+1"}`, "canonical"},
		{`{"__bigint":""}`, "canonical"},
		{`{"__bigint":"1e3"}`, "canonical"},
		{`{"__bigint":" 1"}`, "canonical"},
		{`{"__bigint":1}`, "__bigint: want a string, got a number"},
		{`{"__bigint":null}`, "__bigint: want a string, got null"},
		{`{"__bin":"aGk"}`, "base64"},
		{`{"__bin":"aGl="}`, "base64"}, // non-zero padding bits
		{`{"__bin":"aG k="}`, "base64"},
		{`{"__bin":"_-8="}`, "base64"},
		{`{"__bin":"aGk=\n"}`, "base64"},
		{`{"__bin":"aG\nk="}`, "base64"},
		{`{"__bin":null}`, "__bin: want a string, got null"},
		{`{"__bin":["aGk="]}`, "want a string"},
		{`1e400`, "out of range"},
		{`-1e400`, "out of range"},
		{`NaN`, "want a value"},
		{`Infinity`, "want a value"},
		{`01`, "invalid number"},
		{`1.`, "invalid number"},
		{`.5`, "want a value"},
		{`+1`, "want a value"},
		{`-`, "invalid number"},
		{`1e`, "invalid number"},
		{`0x10`, "invalid number"},
		{`"\ud800"`, "unpaired"},
		{`"\udc00\ud800"`, "unpaired"},
		{`"\ud83dx"`, "unpaired"},
		{"\"a\x01b\"", "control character"},
		{"\"\xff\"", "invalid UTF-8"},
		{`"\x"`, "invalid escape"},
		{`"\u12"`, `invalid \u escape`},
		{`"abc`, "unterminated"},
		{`[1,]`, "trailing comma"},
		{`{"a":1,}`, "trailing comma"},
		{`[1 2]`, "want ',' or ']'"},
		{`{"a" 1}`, "want ':'"},
		{`{a:1}`, "want an object key"},
		{`nul`, "want a value"},
		{`truee`, "unexpected data"},
		{`1 2`, "unexpected data"},
		{``, "want a value, got the end of input"},
		{deep, "nested deeper"},
		{strings.Repeat("[", MaxDepth+1), "nesting deeper"},
	}
	for _, tt := range tests {
		v, err := UnmarshalValue([]byte(tt.json))
		if err == nil {
			t.Errorf("UnmarshalValue(%.40s) = %v, want an error", tt.json, v)
			continue
		}
		if !errors.Is(err, ErrMalformed) || !errors.Is(err, model.ErrMalformed) {
			t.Errorf("UnmarshalValue(%.40s): %v does not match ErrMalformed", tt.json, err)
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("UnmarshalValue(%.40s): error %q does not mention %q", tt.json, err, tt.mention)
		}
	}
}

// storedJSON is a JSON Value holding s unchecked, as the engine rebuilds
// one from storage.
func storedJSON(s string) model.Value {
	return rawvalue.Make.(func(model.Kind, string) model.Value)(model.KindJSON, s)
}

func TestValueEncodeErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	okDeep := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	for _, v := range []model.Value{
		model.Real(math.NaN()),
		model.Real(math.Inf(1)),
		model.Real(math.Inf(-1)),
		model.Text("bad \xff utf-8"),
		model.Text("\xed\xa0\x80"), // a surrogate encoded in UTF-8
		mustJSON(t, deep),
		// Values model.JSONValue refuses (an older database may hold them):
		storedJSON(`"\ud800"`),
		storedJSON("[\"\xff\"]"),
	} {
		b, err := MarshalValue(v)
		if err == nil {
			t.Errorf("MarshalValue(%v) = %s, want an error", v, b)
			continue
		}
		if !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("MarshalValue(%v): %v does not match ErrInvalidMessage", v, err)
		}
	}
	// The deepest JSON value Encode accepts decodes, bare and wrapped.
	for _, frame := range []string{okDeep, `{"__json":` + okDeep + `}`} {
		if _, err := UnmarshalValue([]byte(frame)); err != nil {
			t.Errorf("UnmarshalValue of a %d-deep JSON value: %v", MaxJSONDepth, err)
		}
	}
}

func TestHLCText(t *testing.T) {
	h := model.HLC{Wall: 1764374400123, Counter: 65535, Site: siteB, OpSeq: 4294967295}
	s := FormatHLC(h)
	if len(s) != 40 {
		t.Fatalf("FormatHLC = %q, %d characters, want 40", s, len(s))
	}
	if s != "AAABmszozHv///v/vwAQgxBRhyCSizDTj0H/////" { // checked with Python base64
		t.Fatalf("FormatHLC = %q", s)
	}
	back, err := ParseHLC(s)
	if err != nil || back != h {
		t.Fatalf("ParseHLC(%q) = %v, %v, want %v", s, back, err, h)
	}
	if z := FormatHLC(model.HLC{}); z != strings.Repeat("A", 40) {
		t.Fatalf("FormatHLC(zero) = %q", z)
	}
	for _, bad := range []string{
		s[:39],          // too short
		s + "A",         // too long
		s[:39] + "=",    // padding where there is none
		s[:36] + "AA==", // padded: 29 bytes
		"AAABmszozHv___v_vwAQgxBRhyCSizDTj0H_____", // base64url alphabet
		s[:20] + " " + s[21:],                      // a space
		s[:20] + "\n" + s[21:],                     // a newline, which Go's decoder would skip
		"",
	} {
		if h, err := ParseHLC(bad); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseHLC(%q) = %v, %v, want ErrMalformed", bad, h, err)
		}
	}
}

func TestSiteIDText(t *testing.T) {
	s := siteB.String()
	if s != "-_-_ABCDEFGHIJKLMNOPQQ" {
		t.Fatalf("site id text %q", s)
	}
	dec := func(text string) error {
		frame := `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"d","siteId":"` + text + `"}`
		m, err := Decode([]byte(frame))
		if err == nil && m.(*Handshake).SiteID != siteB {
			t.Fatalf("decoded %v, want %v", m.(*Handshake).SiteID, siteB)
		}
		return err
	}
	if err := dec(s); err != nil {
		t.Fatalf("valid site id: %v", err)
	}
	for _, bad := range []string{
		s + "==",                 // padded
		"+/+/ABCDEFGHIJKLMNOPQQ", // standard alphabet
		s[:21],                   // short
		s + "A",                  // long
		s[:21] + "R",             // non-zero trailing bits
		"",
	} {
		if err := dec(bad); err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "siteId") {
			t.Errorf("site id %q: got %v, want ErrMalformed naming siteId", bad, err)
		}
	}
}
