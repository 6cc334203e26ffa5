package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The differential test: the Reader and the Append functions against
// encoding/json, on a fixed corpus and on texts generated from a seed
// (printed; JSONTEXT_SEED=n repeats a run, JSONTEXT_N=n sets the count).

// corpus holds valid and invalid JSON texts.
var corpus = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`,
	`-12.5e+300`, `+1`, `1 2`, `1x`, `[1x]`, `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{ }`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	`{"a":[1,{"b":null}],"c":"x"}`, " \t\n\r{ \"a\" :\n[ 1 , 2.50 , \"x\" ] }\n ", `"\u00e9\ud83d\ude00"`,
	`"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\x"`, `"\u12"`, `"\u12G4"`, `"unterminated`, "\"ctl\x01\"",
	"\"tab\t\"", `"\/\b\f\n\r\t\"\\"`, "\"bad utf8 \xff\xfe\"", "\"\u2028 <&>\"", `[[[[[]]]]]`, `{"a":{"a":{"a":{}}}}`,
	`{"a":1}x`, "\x00", `[1]]`, `{"a":1}}`, `{"a":1,"a":2}`, `"\`, `"\u`, `[`, `{"a"`, `{"a":`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// check holds one text to encoding/json: Compact accepts what Valid
// accepts and writes what Compact writes; the values read with the Reader
// (SurrogateReplace) are the values encoding/json decodes; SurrogateError
// accepts the same texts except those with an unpaired surrogate escape.
// (Decoding is compared on valid UTF-8 only: the Reader copies the bytes of
// strings, encoding/json's decoder replaces invalid ones with U+FFFD.)
func check(t *testing.T, src string) {
	t.Helper()
	valid := json.Valid([]byte(src))
	var want bytes.Buffer
	werr := json.Compact(&want, []byte(src))
	got, err := Compact([]byte("prefix:"), []byte(src), SurrogateReplace)
	if (err == nil) != valid || (werr == nil) != valid {
		t.Fatalf("Compact(%.80q): err %v; encoding/json: Valid %v, Compact %v", src, err, valid, werr)
	}
	if valid && string(got) != "prefix:"+want.String() {
		t.Fatalf("Compact(%.80q) = %.80q, want %.80q", src, got, "prefix:"+want.String())
	}
	if !valid {
		if string(got) != "prefix:" {
			t.Fatalf("Compact(%.80q) failed but changed dst: %q", src, got)
		}
		return
	}
	if !utf8.ValidString(src) {
		return // the Reader copies bytes; encoding/json's decoder replaces invalid ones
	}
	r := Reader{Data: []byte(src), Surrogates: SurrogateReplace}
	v, err := tree(&r)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		t.Fatalf("Reader(%.80q): %v", src, err)
	}
	var wantV any
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	if err := dec.Decode(&wantV); err != nil {
		t.Fatal(err)
	}
	if g, w := show(v), show(wantV); g != w {
		t.Fatalf("Reader(%.80q) read %s, encoding/json %s", src, g, w)
	}
	strict := Reader{Data: []byte(src)}
	_, _, serr := strict.Skip()
	if serr == nil {
		serr = strict.End()
	}
	if serr != nil && !strings.Contains(serr.Error(), "unpaired UTF-16 surrogate") {
		t.Fatalf("SurrogateError refused %.80q: %v", src, serr)
	}
	if serr == nil && hasLoneSurrogate(src) {
		t.Fatalf("SurrogateError accepted %.80q", src)
	}
}

// hasLoneSurrogate reports whether the valid text holds an escaped
// surrogate that is not half of a pair, by decoding it with SurrogateWTF8.
func hasLoneSurrogate(src string) bool {
	r := Reader{Data: []byte(src), Surrogates: SurrogateWTF8}
	v, err := tree(&r)
	if err != nil {
		panic(err)
	}
	return strings.Contains(show(v), `"\xed`) // U+D800..U+DFFF in WTF-8 start with ED
}

// tree decodes the next value into nil, bool, string, json.Number, []any
// or map[string]any, as a decoder built on the Reader does.
func tree(r *Reader) (any, error) {
	switch c := r.Peek(); {
	case c == '{':
		m := map[string]any{}
		err := r.Members(func(k []byte) error {
			v, err := tree(r)
			m[string(k)] = v
			return err
		})
		return m, err
	case c == '[':
		l := []any{}
		err := r.Elements(func(int) error {
			v, err := tree(r)
			l = append(l, v)
			return err
		})
		return l, err
	case c == '"':
		return r.Str()
	case c == 't' || c == 'f':
		return r.Boolean()
	case c == 'n':
		if r.Null() {
			return nil, nil
		}
	}
	n, _, err := r.Number()
	return json.Number(n), err
}

// show prints a decoded tree, keys sorted, strings quoted byte for byte.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case string:
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for _, e := range x {
			b.WriteString(show(e) + ",")
		}
		return b.String() + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(strconv.Quote(k) + ":" + show(x[k]) + ",")
		}
		return b.String() + "}"
	}
	return "?"
}

// seed returns the run's seed, logged.
func seed(t *testing.T) (uint64, int) {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("JSONTEXT_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	n := 3000
	if v := os.Getenv("JSONTEXT_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	t.Logf("seed %d (JSONTEXT_SEED=%d repeats this run), %d cases", s, s, n)
	return s, n
}

// genText writes a random JSON value with random whitespace; mutated, one
// byte of it is then inserted, deleted or replaced.
func genText(rng *rand.Rand, depth int) string {
	var b []byte
	b = genValue(rng, b, depth)
	if rng.IntN(2) == 0 && len(b) > 0 {
		i := rng.IntN(len(b))
		pick := []byte(`{}[],:"\u0 1e-.+tfnx` + "\x00\x1f\xff\xed")
		switch rng.IntN(3) {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			b = append(b[:i], append([]byte{pick[rng.IntN(len(pick))]}, b[i:]...)...)
		default:
			b[i] = pick[rng.IntN(len(pick))]
		}
	}
	return string(b)
}

func genWS(rng *rand.Rand, b []byte) []byte {
	if rng.IntN(4) == 0 {
		b = append(b, " \t\n\r"[rng.IntN(4)])
	}
	return b
}

var genStrings = []string{`a`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`, `\u00e9`, `\uD83D\uDE00`, `\ud800`,
	`\udc00`, `\ud800\u0041`, "é", "😀", "\u2028", "<&>", "\xff", "\xed\xa0\x80", `\uFFFF`, ` `}

func genValue(rng *rand.Rand, b []byte, depth int) []byte {
	b = genWS(rng, b)
	k := rng.IntN(8)
	if depth <= 0 && k >= 6 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		b = append(b, []string{"null", "true", "false"}[rng.IntN(3)]...)
	case 1, 2:
		nums := []string{"0", "-0", "1", "-12", "3.25", "1e5", "1E-7", "-0.5e+10", "123456789012345678901234567890", "1e400", "5e-324"}
		b = append(b, nums[rng.IntN(len(nums))]...)
	case 3, 4, 5:
		b = append(b, '"')
		for n := rng.IntN(4); n > 0; n-- {
			b = append(b, genStrings[rng.IntN(len(genStrings))]...)
		}
		b = append(b, '"')
	case 6:
		b = append(b, '[')
		for i, n := 0, rng.IntN(4); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = genValue(rng, b, depth-1)
		}
		b = append(genWS(rng, b), ']')
	case 7:
		b = append(b, '{')
		for i, n := 0, rng.IntN(4); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = genWS(rng, b)
			b = append(b, '"')
			b = append(b, genStrings[rng.IntN(len(genStrings))]...)
			b = append(b, '"')
			b = append(genWS(rng, b), ':')
			b = genValue(rng, b, depth-1)
		}
		b = append(genWS(rng, b), '}')
	}
	return genWS(rng, b)
}

func TestReaderAgainstEncodingJSON(t *testing.T) {
	for _, src := range corpus {
		check(t, src)
	}
	s, n := seed(t)
	rng := rand.New(rand.NewPCG(s, 0))
	for range n {
		check(t, genText(rng, 4))
	}
}

func FuzzReader(f *testing.F) {
	for _, src := range corpus {
		if len(src) < 100 {
			f.Add(src)
		}
	}
	f.Fuzz(check)
}

func TestDepthLimit(t *testing.T) {
	r := Reader{Data: []byte(`[[[1]]]`), MaxDepth: 2}
	if _, _, err := r.Skip(); err == nil || !strings.Contains(err.Error(), "nesting deeper than 2 at offset 2") {
		t.Errorf("MaxDepth 2: %v", err)
	}
	r = Reader{Data: []byte(`[[1]]`), MaxDepth: 2}
	if _, _, err := r.Skip(); err != nil {
		t.Errorf("MaxDepth 2, depth 2: %v", err)
	}
	if !Deeper(`[[1]]`, 1) || Deeper(`[["[[[["]]`, 2) || Deeper([]byte(`{"a":[1]}`), 2) {
		t.Error("Deeper")
	}
}

type errorFunc func(msg string, off int) error

func (f errorFunc) NewError(msg string, off int) error { return f(msg, off) }

// TestErrorOffsets: errors give the byte offset of what went wrong, and
// Errors receives it.
func TestErrorOffsets(t *testing.T) {
	for _, c := range []struct {
		src string
		off int
		msg string
	}{
		{`{"a":1,}`, 7, "trailing comma in object"},
		{`[1,2 3]`, 5, "want ',' or ']' in array, got a number"},
		{"\"ab\x01\"", 3, "control character 0x01 in string"},
		{`"\ud800"`, 1, "unpaired UTF-16 surrogate escape"},
		{`[01]`, 1, "invalid number"},
		{`"abc`, 0, "unterminated string"},
		{`{"a" 1}`, 5, "want ':' after object key"},
		{`tru`, 0, "want a boolean, got a boolean"},
		{`?`, 0, "want a JSON value, got '?'"},
	} {
		var gotOff int
		var gotMsg string
		r := Reader{Data: []byte(c.src), Errors: errorFunc(func(msg string, off int) error {
			gotMsg, gotOff = msg, off
			return &SyntaxError{msg, off}
		})}
		if _, _, err := r.Skip(); err == nil || gotOff != c.off || gotMsg != c.msg {
			t.Errorf("%s: %v (%q at %d), want %q at %d", c.src, err, gotMsg, gotOff, c.msg, c.off)
		}
	}
	if InvalidUTF8([]byte("ab\xffc")) != 2 || InvalidUTF8String("é\xed\xa0\x80") != 2 || InvalidUTF8([]byte("é😀")) != -1 {
		t.Error("InvalidUTF8")
	}
}

var testStrings = []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f", "html <a href='x'>&amp;</a>",
	"\u2028 and \u2029", "bad \xff\xfe utf8 \xe2\x80", "é 😀 \U0010FFFF", "\xed\xa0\x80 surrogate bytes"}

// TestAppendAgainstEncodingJSON: strings, floats and bytes as
// encoding/json writes them, on fixed and seeded random inputs.
func TestAppendAgainstEncodingJSON(t *testing.T) {
	s, n := seed(t)
	rng := rand.New(rand.NewPCG(s, 1))
	strs := append([]string(nil), testStrings...)
	for range n {
		var b []byte
		for k := rng.IntN(6); k > 0; k-- {
			ts := testStrings[rng.IntN(len(testStrings))]
			b = append(b, ts[min(rng.IntN(3), len(ts)):]...)
		}
		strs = append(strs, string(b))
	}
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, EscapeHTML|EscapeLineSeparators); string(got) != string(want) {
			t.Fatalf("AppendString(%q, html) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := AppendString(nil, s, EscapeLineSeparators); string(got)+"\n" != buf.String() {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, buf.String())
		}
		if utf8.ValidString(s) && !strings.Contains(s, `\u202`) {
			unescaped := strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(string(want))
			if got := AppendString(nil, s, EscapeHTML); string(got) != unescaped {
				t.Fatalf("AppendString(%q, EscapeHTML) = %s, want %s", s, got, unescaped)
			}
		}
		// Without options: the same string to a decoder, and no escape
		// JSON does not require.
		got := AppendString(nil, s, 0)
		var back, wantBack string
		if err := json.Unmarshal(got, &back); err != nil || json.Unmarshal(want, &wantBack) != nil || back != wantBack {
			t.Fatalf("AppendString(%q, 0) = %s reads %q, %v; want %q", s, got, back, err, wantBack)
		}
		if utf8.ValidString(s) && StringLen(s) != len(got) {
			t.Fatalf("StringLen(%q) = %d, want %d", s, StringLen(s), len(got))
		}
		if utf8.ValidString(s) && strings.Contains(string(got), `\u2028`) || strings.Contains(string(got), `\u003c`) {
			t.Fatalf("AppendString(%q, 0) = %s escapes more than JSON requires", s, got)
		}
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1}
	for range n {
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
	}
	for _, f := range floats {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f, 64); string(got) != string(want) {
			t.Fatalf("AppendFloat(%v, 64) = %s, want %s", f, got, want)
		}
		if f32 := float32(f); !math.IsInf(float64(f32), 0) {
			want, _ := json.Marshal(f32)
			if got := AppendFloat(nil, float64(f32), 32); string(got) != string(want) {
				t.Fatalf("AppendFloat(%v, 32) = %s, want %s", f32, got, want)
			}
		}
	}
	for _, b := range [][]byte{nil, {}, {0}, {1, 2, 255}, []byte(strs[len(strs)-1])} {
		want, _ := json.Marshal(b)
		if got := AppendBase64(nil, b); string(got) != string(want) {
			t.Fatalf("AppendBase64(%v) = %s, want %s", b, got, want)
		}
	}
	for _, l := range [][]string{nil, {}, {"a", "<b>"}} {
		want, _ := json.Marshal(l)
		if got := AppendStrings(nil, l, EscapeHTML|EscapeLineSeparators); string(got) != string(want) {
			t.Fatalf("AppendStrings(%q) = %s, want %s", l, got, want)
		}
	}
	for _, s := range []string{"0", "-0", "1.5e+3", "01", "+1", " 1", "1.", "", "-", "1e"} {
		if got, want := IsNumber(s), json.Valid([]byte(s)) && !strings.ContainsAny(s, " "); got != want {
			t.Errorf("IsNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
