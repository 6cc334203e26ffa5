package keyenc

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

// keysTestSeed returns the seed for a property test: REPLICA_SEED when set,
// the clock otherwise. It logs the seed so a failure can be replayed.
func keysTestSeed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REPLICA_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REPLICA_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with REPLICA_SEED=%d)", seed, seed)
	return seed
}

func jsonV(s string) model.Value { return rawValue(model.KindJSON, s) }

func cmpInt64(a, b int64) int { return cmp.Compare(a, b) }

// ascendingKeys lists Values in strictly ascending key order.
var ascendingKeys = []model.Value{
	model.Null,
	model.Bool(false),
	model.Bool(true),

	model.Real(math.Inf(-1)),
	model.Real(-math.MaxFloat64),
	model.Real(-1e300),
	model.Real(-0x1p190), // long exponent form
	model.Real(-0x1p189), // short exponent form
	model.Real(-0x1p64),
	model.Int(math.MinInt64),
	model.Real(-0x1p63), // = MinInt64: the integer sorts first
	model.Int(math.MinInt64 + 1),
	model.Int(-(1 << 53) - 1),
	model.Int(-(1 << 53)),
	model.Real(-0x1p53),
	model.Int(-(1 << 53) + 1),
	model.Real(-1e15 - 0.5),
	model.Int(-1000),
	model.Int(-129),
	model.Int(-128),
	model.Int(-127),
	model.Real(-1.5),
	model.Int(-1),
	model.Real(-1),
	model.Real(-0.9999999999999999),
	model.Real(-0.5),
	model.Real(-0x1p-64),
	model.Real(-0x1p-65),
	model.Real(-0x1p-1022), // smallest normal
	model.Real(-0x1p-1073),
	model.Real(-math.SmallestNonzeroFloat64),
	model.Int(0),
	model.Real(math.Copysign(0, -1)),
	model.Real(0),
	model.Real(math.SmallestNonzeroFloat64),
	model.Real(0x1p-1073),
	model.Real(0x1p-1073 + 0x1p-1074),
	model.Real(0x1p-1022 - 0x1p-1074), // largest subnormal
	model.Real(0x1p-1022),
	model.Real(1e-300),
	model.Real(0x1p-65),
	model.Real(0x1p-64),
	model.Real(1e-6),
	model.Real(0.1),
	model.Real(0.5),
	model.Int(1),
	model.Real(1),
	model.Real(1.0000000000000002),
	model.Real(1.5),
	model.Int(2),
	model.Int(3),
	model.Real(3),
	model.Real(3.5),
	model.Int(63),
	model.Int(64),
	model.Int(127),
	model.Int(128),
	model.Int(129),
	model.Real(129.5),
	model.Int(1000),
	model.Int(1<<53 - 1),
	model.Real(0x1p53 - 1),
	model.Int(1 << 53),
	model.Real(0x1p53),
	model.Int(1<<53 + 1), // between two reals, above 2^53
	model.Int(1<<53 + 2),
	model.Real(0x1p53 + 2),
	model.Int(1<<53 + 3),
	model.Int(1<<62 - 1),
	model.Int(1 << 62),
	model.Real(0x1p62),
	model.Int(1<<62 + 1),
	model.Int(math.MaxInt64 - 1024),
	model.Real(0x1p63 - 1024), // the largest real below 2^63
	model.Int(math.MaxInt64 - 1022),
	model.Int(math.MaxInt64),
	model.Real(0x1p63), // above MaxInt64, which float64 rounds to it
	model.Real(0x1p64),
	model.Real(0x1p189),
	model.Real(0x1p190),
	model.Real(1e300),
	model.Real(math.MaxFloat64),
	model.Real(math.Inf(1)),
	model.Real(math.NaN()),

	model.TimestampMillis(math.MinInt64),
	model.TimestampMillis(-1),
	model.TimestampMillis(0),
	model.TimestampMillis(1),
	model.TimestampMillis(1_700_000_000_000),
	model.TimestampMillis(math.MaxInt64),

	model.Text(""),
	model.Text("\x00"),
	model.Text("\x00\x00"),
	model.Text("\x00\x01"),
	model.Text("\x00\xff"),
	model.Text("\x01"),
	model.Text("A"),
	model.Text("Z"),
	model.Text("a"),
	model.Text("a\x00"),
	model.Text("a\x00\x00"),
	model.Text("a\x00b"),
	model.Text("a\x01"),
	model.Text("ab"),
	model.Text("abc"),
	model.Text("b"),
	model.Text("\u007f"),
	model.Text("é"),
	model.Text("\uff61"),     // U+FF61, BMP: 3 UTF-8 bytes, below every non-BMP character
	model.Text("\U0001F600"), // U+1F600 (UTF-16 would put its surrogates below U+FF61)
	model.Text("\U0001F600a"),
	model.Text("\U0010FFFF"),

	jsonV(`""`),
	jsonV(`"a"`),
	jsonV(`-1`),
	jsonV(`1`),
	jsonV(`[]`),
	jsonV(`null`),
	jsonV(`{"a":1}`),

	model.Blob(nil),
	model.Blob([]byte{0x00}),
	model.Blob([]byte{0x00, 0x00}),
	model.Blob([]byte{0x00, 0x01}),
	model.Blob([]byte{0x00, 0xff}),
	model.Blob([]byte{0x01}),
	model.Blob([]byte{0xfe, 0xff}),
	model.Blob([]byte{0xff}),
	model.Blob([]byte{0xff, 0x00}),
	model.Blob([]byte{0xff, 0xff}),
}

func sameValue(a, b model.Value) bool {
	if a.Kind() == model.KindReal && b.Kind() == model.KindReal && math.IsNaN(a.Real()) && math.IsNaN(b.Real()) {
		return true
	}
	return a.Equal(b)
}

func TestKeyOrderTable(t *testing.T) {
	enc := make([][]byte, len(ascendingKeys))
	for i, v := range ascendingKeys {
		enc[i] = AppendValue(nil, v)
	}
	for i := range ascendingKeys {
		for j := range ascendingKeys {
			want := cmpInt64(int64(i), int64(j))
			if got := model.Compare(ascendingKeys[i], ascendingKeys[j]); got != want {
				t.Errorf("Compare(%v %v, %v %v) = %d, want %d", ascendingKeys[i].Kind(), ascendingKeys[i], ascendingKeys[j].Kind(), ascendingKeys[j], got, want)
			}
			if got := bytes.Compare(enc[i], enc[j]); got != want {
				t.Errorf("bytes.Compare(enc(%v %v) = %x, enc(%v %v) = %x) = %d, want %d",
					ascendingKeys[i].Kind(), ascendingKeys[i], enc[i], ascendingKeys[j].Kind(), ascendingKeys[j], enc[j], got, want)
			}
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	for _, v := range ascendingKeys {
		b := AppendValue([]byte("prefix"), v)[len("prefix"):]
		got, rest, err := DecodeValue(append(b, 0x99))
		if err != nil {
			t.Errorf("decode(enc(%v %v) = %x): %v", v.Kind(), v, b, err)
			continue
		}
		if !sameValue(got, v) || !bytes.Equal(rest, []byte{0x99}) {
			t.Errorf("decode(enc(%v %v)) = %v %v, rest %x", v.Kind(), v, got.Kind(), got, rest)
		}
	}
}

func TestKeySizes(t *testing.T) {
	for _, tc := range []struct {
		v    model.Value
		size int
	}{
		{model.Null, 1},
		{model.Bool(true), 1},
		{model.Int(0), 1},
		{model.Real(0), 1},
		{model.Real(math.Inf(1)), 1},
		{model.Int(1), 3},
		{model.Int(-1), 3},
		{model.Int(127), 3},
		{model.Int(-127), 3},
		{model.Int(128), 3},
		{model.Int(129), 4},
		{model.Int(1<<13 - 1), 4},
		{model.Int(1<<19 - 1), 5},
		{model.Int(1<<31 - 1), 7},
		{model.Int(1_700_000_000_123), 9},
		{model.Int(math.MaxInt64), 13},
		{model.Int(math.MinInt64), 3},
		{model.Real(0.5), 3},
		{model.Real(1.25), 3},
		{model.Real(100), 3},
		{model.Int(1000), 3},
		{model.Int(1 << 40), 3},
		{model.Int(1_700_000_000_000), 7}, // 17 × 2^11 × 5^11: 29 fraction bits
		{model.Real(0.1), 11},
		{model.Real(math.MaxFloat64), 13},
		{model.Real(math.SmallestNonzeroFloat64), 5},
		{model.TimestampMillis(1_700_000_000_000), 9},
		{model.Text(""), 3},
		{model.Text("abc"), 6},
		{model.Text("a\x00b"), 7},
		{model.Blob([]byte{0, 0}), 7},
	} {
		if got := len(AppendValue(nil, tc.v)); got != tc.size {
			t.Errorf("len(enc(%v %v)) = %d, want %d (%x)", tc.v.Kind(), tc.v, got, tc.size, AppendValue(nil, tc.v))
		}
	}
}

func TestKeyEncodingBytes(t *testing.T) {
	// Pin the format: stored keys depend on it.
	for _, tc := range []struct {
		v    model.Value
		want string
	}{
		{model.Null, "05"},
		{model.Bool(false), "10"},
		{model.Bool(true), "11"},
		{model.Int(0), "22"},
		{model.Int(1), "2541" + "00"},          // E=0 → 0x41; one empty group, integer
		{model.Real(1), "2541" + "01"},         // same, real
		{model.Int(-1), "21be" + "fe"},         // complemented; integer 01 → fe
		{model.Real(-1), "21be" + "ff"},        // real 00 → ff
		{model.Int(3), "2542" + "80"},          // 3 = 2^1 × 1.1: group 100000 00
		{model.Int(1000), "254a" + "f4"},       // 1000 = 2^9 × 1.111101 (trailing zeros trimmed): 111101 00
		{model.Int(129), "2548" + "02" + "80"}, // 129 = 2^7 × 1.0000001: 000000 10, 100000 00
		{model.Real(math.Inf(-1)), "20"},
		{model.Real(math.Copysign(0, -1)), "23"},
		{model.Real(0), "24"},
		{model.Real(math.Inf(1)), "26"},
		{model.Real(0x1p-65), "25" + "0003f1" + "01"},
		{model.Real(0x1p190), "25" + "ff00be" + "01"},
		{model.TimestampMillis(0), "30" + "8000000000000000"},
		{model.TimestampMillis(-1), "30" + "7fffffffffffffff"},
		{model.Text(""), "40" + "0001"},
		{model.Text("a\x00"), "40" + "6100ff" + "0001"},
		{jsonV("1"), "50" + "31" + "0001"},
		{model.Blob([]byte{0xff}), "60" + "ff" + "0001"},
	} {
		if got := fmt.Sprintf("%x", AppendValue(nil, tc.v)); got != tc.want {
			t.Errorf("enc(%v %v) = %s, want %s", tc.v.Kind(), tc.v, got, tc.want)
		}
	}
}

func TestKeyTextPrefix(t *testing.T) {
	strs := []string{"", "a", "ab", "abc", "a\x00", "a\x00b", "a\x01", "b", "\x00", "\x00\x00", "é", "\U0001F600"}
	for _, p := range strs {
		pre := AppendTextPrefix(nil, p)
		for _, s := range strs {
			enc := AppendValue(nil, model.Text(s))
			if got, want := bytes.HasPrefix(enc, pre), strings.HasPrefix(s, p); got != want {
				t.Errorf("enc(%q) has prefix enc-prefix(%q): %v, want %v", s, p, got, want)
			}
		}
		// Other kinds never match a text prefix.
		for _, v := range []model.Value{jsonV(`"` + p + `"`), model.Blob([]byte(p)), model.Int(1)} {
			if bytes.HasPrefix(AppendValue(nil, v), pre) {
				t.Errorf("enc(%v %v) matches text prefix %q", v.Kind(), v, p)
			}
		}
	}
}

func TestKeyTupleOrder(t *testing.T) {
	tuples := [][]model.Value{
		{},
		{model.Null},
		{model.Null, model.Int(1)},
		{model.Int(1)},
		{model.Int(1), model.Null},
		{model.Int(1), model.Text("")},
		{model.Int(1), model.Text("a")},
		{model.Real(1)},
		{model.Real(1), model.Int(0)},
		{model.Int(2)},
		{model.Text("a")},
		{model.Text("a"), model.Text("b")},
		{model.Text("a\x00")},
		{model.Text("ab")},
		{model.Text("ab"), model.Null},
	}
	for i := range tuples {
		ei := AppendTuple(nil, tuples[i])
		dec, rest, err := DecodeTuple(ei, -1)
		if err != nil || len(rest) != 0 || len(dec) != len(tuples[i]) {
			t.Fatalf("DecodeTuple(%x, -1) = %v, %x, %v", ei, dec, rest, err)
		}
		for k := range dec {
			if !dec[k].Equal(tuples[i][k]) {
				t.Errorf("tuple %d element %d: decoded %v, want %v", i, k, dec[k], tuples[i][k])
			}
		}
		for j := range tuples {
			ej := AppendTuple(nil, tuples[j])
			if got, want := bytes.Compare(ei, ej), cmpInt64(int64(i), int64(j)); got != want {
				t.Errorf("tuple %v vs %v: bytes.Compare = %d, want %d", tuples[i], tuples[j], got, want)
			}
		}
	}
	// Decoding a counted prefix leaves the rest.
	b := AppendTuple(nil, []model.Value{model.Text("t"), model.Int(7), model.Real(2.5)})
	vs, rest, err := DecodeTuple(b, 2)
	if err != nil || len(vs) != 2 || !vs[1].Equal(model.Int(7)) {
		t.Fatalf("DecodeTuple(n=2) = %v, %v", vs, err)
	}
	if v, r, err := DecodeValue(rest); err != nil || !v.Equal(model.Real(2.5)) || len(r) != 0 {
		t.Fatalf("rest decodes to %v, %x, %v", v, r, err)
	}
	if _, _, err := DecodeTuple(b, 9); !errors.Is(err, model.ErrMalformed) {
		t.Errorf("DecodeTuple(n too large) error %v, want ErrMalformed", err)
	}
}

func TestKeyDecodeErrors(t *testing.T) {
	for _, tc := range []string{
		"",                 // empty
		"00",               // unused tag
		"ff",               // unused tag
		"25",               // number without exponent
		"2541",             // number without mantissa
		"254102",           // mantissa continues past the end
		"254103",           // bad suffix 11
		"254104",           // integer 2^0 × 1.000001: not an integer
		"254105",           // …as a real it is fine (valid, below)
		"254180",           // integer 2^0 × 1.1 = 1.5: not an integer
		"25410200",         // trailing empty group: non-canonical
		"2500000000",       // long exponent form for E = -1074 … with an integer
		"2500040001",       // long exponent form for E = -50: must be the short form
		"25ff00bd01",       // long exponent form for E = 189: must be the short form
		"25ff040001",       // E = 1024: too large
		"257f00",           // integer 2^62 is fine (valid), 2^63 (E=63, 0x80) is not:
		"258000",           // positive integer 2^63 overflows
		"25fe01",           // real 2^189 is fine (valid)
		"25fe00",           // integer 2^189 is not
		"3000",             // truncated timestamp
		"40",               // unterminated text
		"4061",             // unterminated text
		"406100",           // truncated escape
		"40610002",         // bad escape
		"50610000",         // bad escape
		"600001" + "00",    // tuple: good blob then a bad tag
		"25" + "0000" + "", // truncated long exponent
	} {
		b, err := hexBytes(tc)
		if err != nil {
			t.Fatal(err)
		}
		vs, _, err := DecodeTuple(b, -1)
		if tc == "" {
			_, _, err = DecodeValue(b)
		}
		if tc == "254105" || tc == "257f00" || tc == "25fe01" {
			// Valid encodings, listed to document their neighbours.
			if err != nil {
				t.Errorf("decode %s: %v", tc, err)
			} else if re := AppendTuple(nil, vs); !bytes.Equal(re, b) {
				t.Errorf("decode %s = %v re-encodes to %x", tc, vs, re)
			}
			continue
		}
		if !errors.Is(err, model.ErrMalformed) {
			t.Errorf("decode %s = %v, %v; want an ErrMalformed error", tc, vs, err)
		}
	}
}

func hexBytes(s string) ([]byte, error) {
	b := make([]byte, len(s)/2)
	for i := range b {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, err
		}
		b[i] = byte(v)
	}
	return b, nil
}

// refCompare is Compare's order computed independently: exact numeric
// comparison with math/big, then the tie-breaks.
func refCompare(a, b model.Value) int {
	rank := func(v model.Value) int {
		switch v.Kind() {
		case model.KindInteger, model.KindReal:
			return 2
		case model.KindTimestamp:
			return 3
		case model.KindText:
			return 4
		case model.KindJSON:
			return 5
		case model.KindBlob:
			return 6
		}
		return int(v.Kind())
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return cmpInt64(int64(ra), int64(rb))
	}
	switch a.Kind() {
	case model.KindNull:
		return 0
	case model.KindBoolean, model.KindTimestamp:
		return cmpInt64(a.Int(), b.Int())
	case model.KindText, model.KindJSON, model.KindBlob:
		return bytes.Compare([]byte(rawString(a)), []byte(rawString(b)))
	}
	num := func(v model.Value) *big.Float {
		if v.Kind() == model.KindInteger {
			return new(big.Float).SetInt64(v.Int())
		}
		return new(big.Float).SetFloat64(v.Real())
	}
	if c := num(a).Cmp(num(b)); c != 0 {
		return c
	}
	tie := func(v model.Value) int {
		switch {
		case v.Kind() == model.KindInteger:
			return 0
		case v.Real() == 0 && math.Signbit(v.Real()):
			return 1
		}
		return 2
	}
	return cmpInt64(int64(tie(a)), int64(tie(b)))
}

// randKeyValue returns a random Value of any kind, biased to edge cases:
// powers of two and their neighbours, integers and reals near each other,
// strings over a tiny alphabet with 0x00 and 0xFF.
func randKeyValue(r *rand.Rand) model.Value {
	switch r.IntN(12) {
	case 0:
		return model.Null
	case 1:
		return model.Bool(r.IntN(2) == 1)
	case 2, 3:
		var i int64
		switch r.IntN(4) {
		case 0:
			i = r.Int64N(2001) - 1000
		case 1:
			i = int64(r.Uint64())
		default:
			i = int64(uint64(1)<<r.IntN(64)) + r.Int64N(5) - 2
			if r.IntN(2) == 0 {
				i = -i
			}
		}
		return model.Int(i)
	case 4, 5, 6:
		var f float64
		switch r.IntN(6) {
		case 0:
			f = math.Float64frombits(r.Uint64())
			if math.IsNaN(f) {
				f = math.Inf(1)
			}
		case 1:
			f = float64(r.Int64N(2001)-1000) / float64(int64(1)<<r.IntN(8))
		case 2:
			f = math.Ldexp(1, r.IntN(2098)-1074)
		case 3:
			f = float64(int64(uint64(1)<<r.IntN(64)) + r.Int64N(5) - 2)
		case 4:
			f = math.Nextafter(math.Ldexp(1, r.IntN(140)-70), math.Inf(2*r.IntN(2)-1))
		default:
			f = [...]float64{0, 0x1p63, -0x1p63, 0x1p53, math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}[r.IntN(8)]
		}
		if r.IntN(2) == 0 {
			f = -f
		}
		return model.Real(f)
	case 7:
		return model.TimestampMillis(int64(r.Uint64() >> r.IntN(64)))
	default:
		alphabet := []string{"\x00", "\x01", "a", "b", "\xff", "é", "\U0001F600"}
		var sb strings.Builder
		for n := r.IntN(5); n > 0; n-- {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return rawValue([...]model.Kind{model.KindText, model.KindText, model.KindJSON, model.KindBlob}[r.IntN(4)], sb.String())
	}
}

func TestKeyOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(keysTestSeed(t), 0x6b657973))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	var ea, eb []byte
	for range n {
		a, b := randKeyValue(r), randKeyValue(r)
		if r.IntN(8) == 0 {
			b = a // equal values too
		}
		want := refCompare(a, b)
		if got := model.Compare(a, b); got != want {
			t.Fatalf("Compare(%v %v, %v %v) = %d, want %d", a.Kind(), a, b.Kind(), b, got, want)
		}
		ea, eb = AppendValue(ea[:0], a), AppendValue(eb[:0], b)
		if got := bytes.Compare(ea, eb); got != want {
			t.Fatalf("bytes.Compare(enc(%v %v) = %x, enc(%v %v) = %x) = %d, want %d", a.Kind(), a, ea, b.Kind(), b, eb, got, want)
		}
		dec, rest, err := DecodeValue(ea)
		if err != nil || len(rest) != 0 || !sameValue(dec, a) {
			t.Fatalf("decode(enc(%v %v) = %x) = %v %v, %x, %v", a.Kind(), a, ea, dec.Kind(), dec, rest, err)
		}
		// Tuples order lexicographically.
		ta := []model.Value{a, randKeyValue(r)}
		tb := []model.Value{b, randKeyValue(r)}
		tw := want
		if tw == 0 {
			tw = refCompare(ta[1], tb[1])
		}
		if got := bytes.Compare(AppendTuple(nil, ta), AppendTuple(nil, tb)); got != tw {
			t.Fatalf("tuples %v vs %v: bytes.Compare = %d, want %d", ta, tb, got, tw)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	for _, v := range ascendingKeys {
		f.Add(AppendValue(nil, v))
	}
	f.Add(AppendTuple(nil, []model.Value{model.Text("todos"), model.Int(42), model.Real(-2.5)}))
	f.Add([]byte{0x25, 0x41, 0x02, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, rest, err := DecodeTuple(b, -1)
		if err != nil {
			if !errors.Is(err, model.ErrMalformed) {
				t.Fatalf("decode %x: error %v does not wrap ErrMalformed", b, err)
			}
			return
		}
		if len(rest) != 0 {
			t.Fatalf("decode %x: rest %x", b, rest)
		}
		if re := AppendTuple(nil, vs); !bytes.Equal(re, b) {
			t.Fatalf("decode %x = %v re-encodes to %x", b, vs, re)
		}
		for i := 1; i < len(vs); i++ {
			c := model.Compare(vs[i-1], vs[i])
			if got := bytes.Compare(AppendValue(nil, vs[i-1]), AppendValue(nil, vs[i])); got != c {
				t.Fatalf("Compare(%v, %v) = %d but encodings compare %d", vs[i-1], vs[i], c, got)
			}
		}
	})
}

func TestKeyAppendDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	vals := []model.Value{model.Int(123456789), model.Real(3.14159), model.Text("hello\x00world"), model.TimestampMillis(1_700_000_000_000), model.Blob([]byte{1, 0, 2})}
	allocs := testing.AllocsPerRun(100, func() {
		b := buf[:0]
		for _, v := range vals {
			b = AppendValue(b, v)
		}
		_ = model.Compare(vals[0], vals[1])
		_ = model.Compare(vals[1], vals[0])
		_ = model.Compare(vals[2], vals[2])
	})
	if allocs != 0 {
		t.Errorf("AppendValue and Compare allocate %.1f times per run, want 0", allocs)
	}
}

func BenchmarkAppendKeyValue(b *testing.B) {
	for _, v := range []model.Value{model.Int(42), model.Int(1_700_000_000_000), model.Real(3.14159), model.Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a"), model.TimestampMillis(1_700_000_000_000)} {
		b.Run(v.Kind().String()+"/"+v.String(), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for b.Loop() {
				buf = AppendValue(buf[:0], v)
			}
		})
	}
}

func BenchmarkDecodeKeyValue(b *testing.B) {
	for _, v := range []model.Value{model.Int(42), model.Real(3.14159), model.Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a")} {
		enc := AppendValue(nil, v)
		b.Run(v.Kind().String(), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := DecodeValue(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompare(b *testing.B) {
	pairs := []struct {
		name string
		a, b model.Value
	}{
		{"int-int", model.Int(42), model.Int(43)},
		{"int-real", model.Int(1<<53 + 1), model.Real(0x1p53)},
		{"real-real", model.Real(3.14159), model.Real(2.71828)},
		{"text", model.Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a"), model.Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9b")},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				_ = model.Compare(p.a, p.b)
			}
		})
	}
}
