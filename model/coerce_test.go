package model

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

type coerceStatus string

type coerceLevel int

type coerceMarshaler struct{}

func (coerceMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{ "custom" : true }`), nil }

// jsonTestRaw marshals itself as its text (left to encoding/json natively).
type jsonTestRaw struct{ text string }

func (r jsonTestRaw) MarshalJSON() ([]byte, error) { return []byte(r.text), nil }

func TestCoerceValue(t *testing.T) {
	negZero := math.Copysign(0, -1)
	str := "hello"
	berlin := time.FixedZone("CEST", 2*3600)
	type tc struct {
		in   any
		co   bool  // coerce on
		want Value // when err is ""
		err  string
	}
	mustJSON := func(s string) Value { return jsonV(s) }
	cases := map[Kind][]tc{
		KindInteger: {
			{in: 42, want: Int(42)},
			{in: int8(-8), want: Int(-8)},
			{in: int16(16), want: Int(16)},
			{in: int32(-32), want: Int(-32)},
			{in: int64(math.MinInt64), want: Int(math.MinInt64)},
			{in: uint(7), want: Int(7)},
			{in: uint8(255), want: Int(255)},
			{in: uint64(math.MaxInt64), want: Int(math.MaxInt64)},
			{in: uint64(math.MaxInt64 + 1), err: "expected integer, got integer 9223372036854775808 (out of int64 range)"},
			{in: 3.0, want: Int(3)},
			{in: negZero, want: Int(0)},
			{in: float32(-2), want: Int(-2)},
			{in: 1.5, err: "expected integer, got real 1.5 (has a fraction)"},
			{in: 1e300, err: "(out of int64 range)"},
			{in: 0x1p63, err: "(out of int64 range)"},
			{in: -0x1p63, want: Int(math.MinInt64)},
			{in: math.NaN(), err: "got real NaN (not a finite number)"},
			{in: math.Inf(1), err: "(not a finite number)"},
			{in: "42", err: `expected integer, got text "42" (set coerce to convert)`},
			{in: "42", co: true, want: Int(42)},
			{in: " -7 ", co: true, want: Int(-7)},
			{in: "+7", co: true, want: Int(7)},
			{in: "1e3", co: true, want: Int(1000)},
			{in: "42.0", co: true, want: Int(42)},
			{in: "9223372036854775807", co: true, want: Int(math.MaxInt64)},
			{in: "9223372036854775808", co: true, err: "out of int64 range"},
			{in: "9007199254740993.0", co: true, want: Int(1<<53 + 1)},
			{in: "-9223372036854775808.000", co: true, want: Int(math.MinInt64)},
			{in: "-92233720368547758.08e2", co: true, want: Int(math.MinInt64)},
			{in: "-9223372036854775809", co: true, err: "out of int64 range"},
			{in: "42.0000000000000000001", co: true, err: "has a fraction"},
			{in: "0.00e99999999999999999999", co: true, want: Int(0)},
			{in: "1e99999999999999999999", co: true, err: "out of int64 range"},
			{in: "1e-99999999999999999999", co: true, err: "has a fraction"},
			{in: "1000e-3", co: true, want: Int(1)},
			{in: ".5e1", co: true, want: Int(5)},
			{in: "5.", co: true, want: Int(5)},
			{in: "1e", co: true, err: "not a decimal number"},
			{in: ".", co: true, err: "not a decimal number"},
			{in: "4.5", co: true, err: "has a fraction"},
			{in: "abc", err: `expected integer, got text "abc"`},
			{in: "abc", co: true, err: `got text "abc" (not a decimal number)`},
			{in: "0x10", co: true, err: "not a decimal number"},
			{in: "1_000", co: true, err: "not a decimal number"},
			{in: "Inf", co: true, err: "not a decimal number"},
			{in: true, err: "expected integer, got boolean true (set coerce to convert)"},
			{in: true, co: true, want: Int(1)},
			{in: false, co: true, want: Int(0)},
			{in: json.Number("12"), want: Int(12)},
			{in: json.Number("12.5"), err: "has a fraction"},
			{in: Int(5), want: Int(5)},
			{in: Real(5), want: Int(5)},
			{in: Text("5"), co: true, want: Int(5)},
			{in: Text("5"), err: "set coerce to convert"},
			{in: coerceLevel(3), want: Int(3)},
			{in: &str, co: true, err: `got text "hello" (not a decimal number)`},
			{in: time.Unix(0, 0), co: true, err: "expected integer, got timestamp 1970-01-01T00:00:00.000Z"},
			{in: []byte("1"), co: true, err: "expected integer, got blob (1 bytes)"},
			{in: []int{1}, err: "expected integer, got Go value of type []int"},
		},
		KindReal: {
			{in: 1.5, want: Real(1.5)},
			{in: negZero, want: Real(negZero)},
			{in: float32(0.5), want: Real(0.5)},
			{in: 3, want: Real(3)},
			{in: int64(1 << 53), want: Real(0x1p53)},
			{in: int64(-(1 << 53)), want: Real(-0x1p53)},
			{in: int64(1<<53 + 1), err: "expected real, got integer 9007199254740993 (not exactly representable as a real; set coerce to convert)"},
			{in: int64(1<<53 + 1), co: true, want: Real(0x1p53)},
			{in: int64(1<<53 + 2), want: Real(0x1p53 + 2)},
			{in: int64(1 << 60), want: Real(0x1p60)},
			{in: int64(math.MaxInt64), err: "not exactly representable"},
			{in: int64(math.MinInt64), want: Real(-0x1p63)},
			{in: uint64(1 << 63), want: Real(0x1p63)},
			{in: uint64(math.MaxUint64), err: "not exactly representable"},
			{in: math.NaN(), err: "expected real, got real NaN (not a finite number)"},
			{in: math.Inf(-1), err: "not a finite number"},
			{in: "2.5", err: "set coerce to convert"},
			{in: "2.5", co: true, want: Real(2.5)},
			{in: "1e400", co: true, err: "out of range for a real"},
			{in: "9007199254740993", co: true, want: Real(0x1p53)},
			{in: json.Number("9007199254740993"), err: "not exactly representable as a real; set coerce to convert"},
			{in: json.Number("0.1"), want: Real(0.1)},
			{in: true, co: true, want: Real(1)},
			{in: Int(2), want: Real(2)},
		},
		KindText: {
			{in: "héllo 😀", want: Text("héllo 😀")},
			{in: "", want: Text("")},
			{in: "a\x00b", want: Text("a\x00b")},
			{in: "bad \xff", err: `expected text, got invalid UTF-8 text "bad \xff" (text must be valid UTF-8)`},
			{in: "bad \xff", co: true, err: "text must be valid UTF-8"},
			{in: Text("\xc3"), err: "text must be valid UTF-8"},
			{in: coerceStatus("open"), want: Text("open")},
			{in: &str, want: Text("hello")},
			{in: 42, err: "expected text, got integer 42 (set coerce to convert)"},
			{in: 42, co: true, want: Text("42")},
			{in: uint64(math.MaxUint64), co: true, want: Text("18446744073709551615")},
			{in: 42.0, co: true, want: Text("42")},
			{in: 1.5, co: true, want: Text("1.5")},
			{in: 1e21, co: true, want: Text("1e+21")},
			{in: 1e-7, co: true, want: Text("1e-7")},
			{in: 123456789.0, co: true, want: Text("123456789")},
			{in: math.NaN(), co: true, err: "not a finite number"},
			{in: true, co: true, want: Text("true")},
			{in: json.Number("1.50"), co: true, want: Text("1.50")},
			{in: time.Date(2024, 5, 1, 14, 0, 0, 123456789, berlin), co: true, want: Text("2024-05-01T12:00:00.123Z")},
			{in: []byte("abc"), co: true, err: "expected text, got blob (3 bytes)"},
			{in: json.RawMessage(`"a"`), co: true, err: `expected text, got json "a"`},
			{in: strings.Repeat("x", 100), want: Text(strings.Repeat("x", 100))},
		},
		KindBoolean: {
			{in: true, want: Bool(true)},
			{in: false, want: Bool(false)},
			{in: 1, err: "expected boolean, got integer 1 (set coerce to convert)"},
			{in: 1, co: true, want: Bool(true)},
			{in: 0, co: true, want: Bool(false)},
			{in: 2, co: true, err: "only the numbers 0 and 1 convert to boolean"},
			{in: 1.0, co: true, want: Bool(true)},
			{in: negZero, co: true, want: Bool(false)},
			{in: 0.5, co: true, err: "only the numbers 0 and 1"},
			{in: "true", co: true, want: Bool(true)},
			{in: "false", co: true, want: Bool(false)},
			{in: "yes", co: true, err: `only the text "true" and "false" converts to boolean`},
			{in: "true", err: "set coerce to convert"},
			{in: Bool(true), want: Bool(true)},
		},
		KindBlob: {
			{in: []byte{0, 1, 0xff}, want: Blob([]byte{0, 1, 0xff})},
			{in: []byte{}, want: Blob(nil)},
			{in: Blob([]byte("x")), want: Blob([]byte("x"))},
			{in: "abc", err: `expected blob, got text "abc"`},
			{in: "abc", co: true, err: `expected blob, got text "abc"`},
			{in: json.RawMessage(`1`), err: "expected blob, got json 1"},
		},
		KindTimestamp: {
			{in: time.Date(2024, 5, 1, 14, 0, 0, 123999999, berlin), want: TimestampMillis(1714564800123)},
			{in: time.Date(1969, 12, 31, 23, 59, 59, 999500000, time.UTC), want: TimestampMillis(-1)}, // floor
			{in: time.Time{}, want: TimestampMillis(-62135596800000)},
			{in: time.Date(300_000_000, 1, 1, 0, 0, 0, 0, time.UTC), err: "got time out of range (out of range)"},
			{in: int64(1714564800123), want: TimestampMillis(1714564800123)},
			{in: 1714564800123.0, want: TimestampMillis(1714564800123)},
			{in: 1.5, err: "not a whole number of milliseconds"},
			{in: math.Inf(1), err: "not a finite number"},
			{in: json.Number("1714564800123"), want: TimestampMillis(1714564800123)},
			{in: TimestampMillis(5), want: TimestampMillis(5)},
			{in: Int(5), want: TimestampMillis(5)},
			{in: "2024-05-01T12:00:00Z", err: `expected timestamp, got text "2024-05-01T12:00:00Z" (set coerce to convert)`},
			{in: "2024-05-01T12:00:00Z", co: true, want: TimestampMillis(1714564800000)},
			{in: "2024-05-01T14:00:00.123456+02:00", co: true, want: TimestampMillis(1714564800123)},
			{in: "2024-05-01 12:00:00.5Z", co: true, want: TimestampMillis(1714564800500)},
			{in: "2024-05-01", co: true, want: TimestampMillis(1714521600000)},
			{in: "2024-05-01T12:00:00", co: true, err: "no time zone"},
			{in: "May 1, 2024", co: true, err: "not an RFC 3339 / ISO 8601 time"},
			{in: true, co: true, err: "expected timestamp, got boolean true"},
		},
		KindJSON: {
			{in: json.RawMessage(` { "a" : [1, 2.50, "x"] } `), want: mustJSON(`{"a":[1,2.50,"x"]}`)},
			{in: json.RawMessage(`null`), want: mustJSON(`null`)},
			{in: json.RawMessage(`{"a":`), err: "expected json, got json {\"a\": (invalid JSON)"},
			{in: json.RawMessage(``), err: "invalid JSON"},
			{in: json.RawMessage(`1 2`), err: "invalid JSON"},
			// JSON to encoding/json that the wire refuses: never stored.
			{in: json.RawMessage("{\"a\":\"\xff\"}"), err: "invalid UTF-8 or an unpaired surrogate escape in a JSON string (the sync protocol cannot carry it)"},
			{in: json.RawMessage(`{"a":"\ud800"}`), err: "invalid UTF-8 or an unpaired surrogate escape"},
			{in: json.RawMessage(`["\udc00x"]`), co: true, err: "the sync protocol cannot carry it"},
			{in: json.RawMessage(`"\ud83d\ude00"`), want: mustJSON(`"\ud83d\ude00"`)},
			{in: map[string]any{"raw": json.RawMessage(`"\ud800"`)}, err: "the sync protocol cannot carry it"},
			{in: jsonTestRaw{`{"a":"\udfff"}`}, err: "the sync protocol cannot carry it"},
			{in: jsonTestRaw{"\"\xed\xa0\x80\""}, err: "the sync protocol cannot carry it"},
			{in: "a <b> & \"c\"", want: mustJSON(`"a <b> & \"c\""`)},
			{in: "bad \xff", err: "text must be valid UTF-8"},
			{in: 42, want: mustJSON(`42`)},
			{in: uint64(math.MaxUint64), want: mustJSON(`18446744073709551615`)},
			{in: 2.5, want: mustJSON(`2.5`)},
			{in: 3.0, want: mustJSON(`3`)},
			{in: 1e21, want: mustJSON(`1e+21`)},
			{in: math.NaN(), err: "not a finite number"},
			{in: true, want: mustJSON(`true`)},
			{in: json.Number("1.50"), want: mustJSON(`1.50`)},
			{in: json.Number("01"), err: "not a JSON number"},
			{in: map[string]any{"b": 1, "a": []int{1, 2}}, want: mustJSON(`{"a":[1,2],"b":1}`)},
			{in: []any{"x", nil, 1.5}, want: mustJSON(`["x",null,1.5]`)},
			{in: map[string]any{"f": math.Inf(1)}, err: "cannot encode as JSON"},
			{in: coerceMarshaler{}, want: mustJSON(`{"custom":true}`)},
			{in: coerceStatus("open"), want: mustJSON(`"open"`)},
			{in: time.Date(2024, 5, 1, 14, 0, 0, 0, berlin), want: mustJSON(`"2024-05-01T12:00:00.000Z"`)},
			{in: []byte{1, 2, 3}, want: mustJSON(`"AQID"`)},
			{in: jsonV(`{"kept":1}`), want: mustJSON(`{"kept":1}`)},
			{in: Text("s"), want: mustJSON(`"s"`)},
			{in: Int(1), want: mustJSON(`1`)},
		},
	}
	for kind, list := range cases {
		for _, c := range list {
			table := &TableDef{Name: "items"}
			col := &ColumnDef{Name: "field", Type: kind, Coerce: c.co}
			got, err := CoerceValue(table, col, c.in)
			if c.err == "" {
				if err != nil || !got.Equal(c.want) {
					t.Errorf("%s column, coerce %v, input %T %#v: got %v %v, %v; want %v %v",
						kind, c.co, c.in, c.in, got.Kind(), got, err, c.want.Kind(), c.want)
				}
				continue
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrValidation) {
				t.Errorf("%s column, coerce %v, input %T %#v: got %v %v, %v; want a *ValidationError containing %q",
					kind, c.co, c.in, c.in, got.Kind(), got, err, c.err)
				continue
			}
			if ve.Table != "items" || ve.Column != "field" || !strings.Contains(ve.Reason, c.err) ||
				!strings.HasPrefix(err.Error(), "items.field: expected "+kind.String()+", got ") {
				t.Errorf("%s column, coerce %v, input %T %#v: error %q (%+v), want one about items.field containing %q",
					kind, c.co, c.in, c.in, err, *ve, c.err)
			}
		}
	}
}

func TestCoerceNullAndTableCoerce(t *testing.T) {
	var nilStr *string
	for k := KindBoolean; k <= KindBlob; k++ {
		col := &ColumnDef{Name: "c", Type: k, NotNull: true}
		for _, in := range []any{nil, Null, nilStr} {
			if v, err := CoerceValue(&TableDef{Name: "t"}, col, in); err != nil || !v.IsNull() {
				t.Errorf("%s column, input %#v: got %v, %v; want null (NOT NULL is the caller's)", k, in, v, err)
			}
		}
	}
	// Table-wide coerce applies to every column.
	col := &ColumnDef{Name: "n", Type: KindInteger}
	if v, err := CoerceValue(&TableDef{Name: "t", Coerce: true}, col, "12"); err != nil || !v.Equal(Int(12)) {
		t.Errorf("table coerce: got %v, %v", v, err)
	}
	if _, err := CoerceValue(&TableDef{Name: "t"}, col, "12"); err == nil {
		t.Error("no coerce: text into integer accepted")
	}
}

func TestCoerceBlobIsCopied(t *testing.T) {
	b := []byte{1, 2, 3}
	v, err := CoerceValue(&TableDef{Name: "t"}, &ColumnDef{Name: "b", Type: KindBlob}, b)
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 9
	if got := v.Blob(); got[0] != 1 {
		t.Errorf("blob shares memory with the caller's slice: %v", got)
	}
}

func TestCoerceTimestampZones(t *testing.T) {
	// The same instant in any zone is the same UTC millisecond.
	utc := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	col := &ColumnDef{Name: "at", Type: KindTimestamp, Coerce: true}
	for _, in := range []any{
		utc,
		utc.In(time.FixedZone("X", -7*3600)),
		utc.In(time.FixedZone("Y", 5*3600+1800)),
		"2024-01-01T00:00:00Z",
		"2023-12-31T17:00:00-07:00",
		"2024-01-01T05:30:00+05:30",
		"2024-01-01T00:00:00.000000001Z",
	} {
		v, err := CoerceValue(&TableDef{Name: "t"}, col, in)
		if err != nil || !v.Equal(TimestampMillis(utc.UnixMilli())) {
			t.Errorf("%v: got %v, %v", in, v, err)
		}
		if v.Time().Location() != time.UTC {
			t.Errorf("%v: Time() not in UTC", in)
		}
	}
}

func TestNormalizeRemote(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		col      Kind
		in, want Value
	}{
		{KindReal, Int(3), Real(3)},
		{KindReal, Int(1 << 53), Real(0x1p53)},
		{KindReal, Int(1<<53 + 1), Int(1<<53 + 1)}, // inexact: kept
		{KindReal, Int(math.MaxInt64), Int(math.MaxInt64)},
		{KindReal, Real(2.5), Real(2.5)},
		{KindInteger, Real(4), Int(4)},
		{KindInteger, Real(negZero), Int(0)},
		{KindInteger, Real(4.5), Real(4.5)},
		{KindInteger, Real(0x1p63), Real(0x1p63)},
		{KindInteger, Real(math.Inf(1)), Real(math.Inf(1))},
		{KindInteger, Int(4), Int(4)},
		{KindTimestamp, Int(1714564800123), TimestampMillis(1714564800123)},
		{KindTimestamp, Real(1714564800123), TimestampMillis(1714564800123)},
		{KindTimestamp, Real(0.5), Real(0.5)},
		{KindJSON, Text("a\"b<"), jsonV(`"a\"b<"`)},
		{KindJSON, Text("\xff"), Text("\xff")},
		{KindJSON, Int(-7), jsonV(`-7`)},
		{KindJSON, Real(2.5), jsonV(`2.5`)},
		{KindJSON, Real(1e-7), jsonV(`1e-7`)},
		{KindJSON, Real(math.NaN()), Real(math.NaN())},
		{KindJSON, Bool(true), jsonV(`true`)},
		{KindJSON, jsonV(`{"a":1}`), jsonV(`{"a":1}`)},
		{KindJSON, Blob([]byte{1}), Blob([]byte{1})},
		{KindText, Int(1), Int(1)},
		{KindBoolean, Int(1), Int(1)},
		{KindText, Null, Null},
	} {
		got := NormalizeRemote(&ColumnDef{Name: "c", Type: tc.col}, tc.in)
		if !sameValue(got, tc.want) {
			t.Errorf("NormalizeRemote(%s column, %v %v) = %v %v, want %v %v", tc.col, tc.in.Kind(), tc.in, got.Kind(), got, tc.want.Kind(), tc.want)
		}
	}
}

// TestNormalizeRemoteMatchesOrigin: what the origin stores and what a peer
// rebuilds from the wire form (JSON numbers without a fraction arrive as
// Integers) are the same Value, so replicas converge byte for byte.
func TestNormalizeRemoteMatchesOrigin(t *testing.T) {
	for _, tc := range []struct {
		col Kind
		in  any
	}{
		{KindReal, 3.0}, {KindReal, 2.5}, {KindReal, int64(1 << 52)},
		{KindInteger, 7}, {KindInteger, 7.0},
		{KindTimestamp, int64(1714564800123)}, {KindTimestamp, time.UnixMilli(1714564800123)},
		{KindJSON, "text"}, {KindJSON, 42}, {KindJSON, 4.0}, {KindJSON, 0.25}, {KindJSON, 1e22}, {KindJSON, false},
	} {
		col := &ColumnDef{Name: "c", Type: tc.col}
		stored, err := CoerceValue(&TableDef{Name: "t"}, col, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		// The wire form: a JSON value, numbers without a fraction as Integers.
		var wire Value
		switch stored.Kind() {
		case KindReal:
			if i, ok := realAsInt(stored.Real()); ok {
				wire = Int(i)
			} else {
				wire = stored
			}
		case KindTimestamp:
			wire = Int(stored.Int())
		case KindJSON:
			wire = stored // a JSON value travels as JSON
		default:
			wire = stored
		}
		if got := NormalizeRemote(col, wire); !got.Equal(stored) {
			t.Errorf("%s column, %v: origin stored %v %v, peer rebuilt %v %v", tc.col, tc.in, stored.Kind(), stored, got.Kind(), got)
		}
		// And a JSON value's scalar, decoded as a plain Value, too.
		if stored.Kind() == KindJSON {
			var x any
			d := json.NewDecoder(strings.NewReader(stored.Text()))
			d.UseNumber()
			if err := d.Decode(&x); err != nil {
				t.Fatal(err)
			}
			var plain Value
			switch x := x.(type) {
			case string:
				plain = Text(x)
			case bool:
				plain = Bool(x)
			case json.Number:
				if i, err := x.Int64(); err == nil {
					plain = Int(i)
				} else {
					f, _ := x.Float64()
					plain = Real(f)
				}
			}
			if got := NormalizeRemote(col, plain); !got.Equal(stored) {
				t.Errorf("json column, %v: origin stored %v, peer rebuilt %v from %v %v", tc.in, stored, got, plain.Kind(), plain)
			}
		}
	}
}

func TestCoerceDoesNotAllocateForScalars(t *testing.T) {
	tbl := &TableDef{Name: "t"}
	ci := &ColumnDef{Name: "n", Type: KindInteger}
	cr := &ColumnDef{Name: "r", Type: KindReal}
	ct := &ColumnDef{Name: "s", Type: KindText}
	var in any = int64(42)
	var fin any = 2.5
	var sin any = "hello"
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = CoerceValue(tbl, ci, in)
		_, _ = CoerceValue(tbl, cr, fin)
		_, _ = CoerceValue(tbl, ct, sin)
	})
	if allocs != 0 {
		t.Errorf("CoerceValue allocates %.1f times for scalars, want 0", allocs)
	}
}

func BenchmarkCoerceValue(b *testing.B) {
	tbl := &TableDef{Name: "t"}
	for _, c := range []struct {
		name string
		col  *ColumnDef
		in   any
	}{
		{"int", &ColumnDef{Name: "n", Type: KindInteger}, int64(42)},
		{"float-to-int", &ColumnDef{Name: "n", Type: KindInteger}, 42.0},
		{"real", &ColumnDef{Name: "r", Type: KindReal}, 2.5},
		{"text", &ColumnDef{Name: "s", Type: KindText}, "01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a"},
		{"json-map", &ColumnDef{Name: "j", Type: KindJSON}, map[string]any{"a": 1, "b": "x"}},
		{"coerce-text-to-int", &ColumnDef{Name: "n", Type: KindInteger, Coerce: true}, "12345"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := CoerceValue(tbl, c.col, c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCoerceText feeds arbitrary text to every column type with coerce on:
// no panics, results of the column's kind, and integers parsed exactly
// (checked against math/big where the exponent is small).
func FuzzCoerceText(f *testing.F) {
	for _, s := range []string{"42", "-7.50e1", "1e3", "9007199254740993.0", "2024-05-01T12:00:00Z", "true", "0x10", ".5", "1e-400", "\xff"} {
		f.Add(s)
	}
	tbl := &TableDef{Name: "t", Coerce: true}
	f.Fuzz(func(t *testing.T, s string) {
		for k := KindBoolean; k <= KindBlob; k++ {
			v, err := CoerceValue(tbl, &ColumnDef{Name: "c", Type: k}, s)
			if err != nil {
				if !errors.Is(err, ErrValidation) {
					t.Fatalf("%s: %q: error %v is not a validation error", k, s, err)
				}
				continue
			}
			if v.Kind() != k {
				t.Fatalf("%s column: %q became a %s", k, s, v.Kind())
			}
			if e := strings.IndexAny(s, "eE"); k == KindInteger && len(s) < 40 && (e < 0 || len(s)-e <= 4) {
				r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
				if !ok || !r.IsInt() || r.Num().Int64() != v.Int() || !r.Num().IsInt64() {
					t.Fatalf("integer column: %q became %d", s, v.Int())
				}
			}
		}
	})
}

func jsonV(s string) Value { return Value{kind: KindJSON, s: s} }

// sameValue is Value.Equal, except that two NaN reals are the same.
func sameValue(a, b Value) bool {
	if a.kind == KindReal && b.kind == KindReal && math.IsNaN(a.f) && math.IsNaN(b.f) {
		return true
	}
	return a.Equal(b)
}

// TestWrongTypeArticle: WrongType's text reads as English before every
// column type ("an integer column", "a real column").
func TestWrongTypeArticle(t *testing.T) {
	for _, c := range []struct {
		typ  Kind
		v    Value
		want string
	}{
		{KindInteger, Real(2.5), "real value 2.5 for an integer column"},
		{KindReal, Text("x"), `text value "x" for a real column`},
	} {
		if got := WrongType(&ColumnDef{Name: "c", Type: c.typ}, c.v); got != c.want {
			t.Errorf("WrongType(%v, %v) = %q, want %q", c.typ, c.v, got, c.want)
		}
	}
}
