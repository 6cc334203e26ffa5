package engine

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

func jsonV(s string) Value { return rawValue(KindJSON, s) }

func cmpInt64(a, b int64) int { return cmp.Compare(a, b) }

// ascendingKeys lists Values in strictly ascending key order.
var ascendingKeys = []Value{
	Null,
	Bool(false),
	Bool(true),

	Real(math.Inf(-1)),
	Real(-math.MaxFloat64),
	Real(-1e300),
	Real(-0x1p190), // long exponent form
	Real(-0x1p189), // short exponent form
	Real(-0x1p64),
	Int(math.MinInt64),
	Real(-0x1p63), // = MinInt64: the integer sorts first
	Int(math.MinInt64 + 1),
	Int(-(1 << 53) - 1),
	Int(-(1 << 53)),
	Real(-0x1p53),
	Int(-(1 << 53) + 1),
	Real(-1e15 - 0.5),
	Int(-1000),
	Int(-129),
	Int(-128),
	Int(-127),
	Real(-1.5),
	Int(-1),
	Real(-1),
	Real(-0.9999999999999999),
	Real(-0.5),
	Real(-0x1p-64),
	Real(-0x1p-65),
	Real(-0x1p-1022), // smallest normal
	Real(-0x1p-1073),
	Real(-math.SmallestNonzeroFloat64),
	Int(0),
	Real(math.Copysign(0, -1)),
	Real(0),
	Real(math.SmallestNonzeroFloat64),
	Real(0x1p-1073),
	Real(0x1p-1073 + 0x1p-1074),
	Real(0x1p-1022 - 0x1p-1074), // largest subnormal
	Real(0x1p-1022),
	Real(1e-300),
	Real(0x1p-65),
	Real(0x1p-64),
	Real(1e-6),
	Real(0.1),
	Real(0.5),
	Int(1),
	Real(1),
	Real(1.0000000000000002),
	Real(1.5),
	Int(2),
	Int(3),
	Real(3),
	Real(3.5),
	Int(63),
	Int(64),
	Int(127),
	Int(128),
	Int(129),
	Real(129.5),
	Int(1000),
	Int(1<<53 - 1),
	Real(0x1p53 - 1),
	Int(1 << 53),
	Real(0x1p53),
	Int(1<<53 + 1), // between two reals, above 2^53
	Int(1<<53 + 2),
	Real(0x1p53 + 2),
	Int(1<<53 + 3),
	Int(1<<62 - 1),
	Int(1 << 62),
	Real(0x1p62),
	Int(1<<62 + 1),
	Int(math.MaxInt64 - 1024),
	Real(0x1p63 - 1024), // the largest real below 2^63
	Int(math.MaxInt64 - 1022),
	Int(math.MaxInt64),
	Real(0x1p63), // above MaxInt64, which float64 rounds to it
	Real(0x1p64),
	Real(0x1p189),
	Real(0x1p190),
	Real(1e300),
	Real(math.MaxFloat64),
	Real(math.Inf(1)),
	Real(math.NaN()),

	TimestampMillis(math.MinInt64),
	TimestampMillis(-1),
	TimestampMillis(0),
	TimestampMillis(1),
	TimestampMillis(1_700_000_000_000),
	TimestampMillis(math.MaxInt64),

	Text(""),
	Text("\x00"),
	Text("\x00\x00"),
	Text("\x00\x01"),
	Text("\x00\xff"),
	Text("\x01"),
	Text("A"),
	Text("Z"),
	Text("a"),
	Text("a\x00"),
	Text("a\x00\x00"),
	Text("a\x00b"),
	Text("a\x01"),
	Text("ab"),
	Text("abc"),
	Text("b"),
	Text("\u007f"),
	Text("é"),
	Text("\uff61"),     // U+FF61, BMP: 3 UTF-8 bytes, below every non-BMP character
	Text("\U0001F600"), // U+1F600 (UTF-16 would put its surrogates below U+FF61)
	Text("\U0001F600a"),
	Text("\U0010FFFF"),

	jsonV(`""`),
	jsonV(`"a"`),
	jsonV(`-1`),
	jsonV(`1`),
	jsonV(`[]`),
	jsonV(`null`),
	jsonV(`{"a":1}`),

	Blob(nil),
	Blob([]byte{0x00}),
	Blob([]byte{0x00, 0x00}),
	Blob([]byte{0x00, 0x01}),
	Blob([]byte{0x00, 0xff}),
	Blob([]byte{0x01}),
	Blob([]byte{0xfe, 0xff}),
	Blob([]byte{0xff}),
	Blob([]byte{0xff, 0x00}),
	Blob([]byte{0xff, 0xff}),
}

func sameValue(a, b Value) bool {
	if a.Kind() == KindReal && b.Kind() == KindReal && math.IsNaN(a.Real()) && math.IsNaN(b.Real()) {
		return true
	}
	return a.Equal(b)
}

func TestKeyOrderTable(t *testing.T) {
	enc := make([][]byte, len(ascendingKeys))
	for i, v := range ascendingKeys {
		enc[i] = appendKeyValue(nil, v)
	}
	for i := range ascendingKeys {
		for j := range ascendingKeys {
			want := cmpInt64(int64(i), int64(j))
			if got := Compare(ascendingKeys[i], ascendingKeys[j]); got != want {
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
		b := appendKeyValue([]byte("prefix"), v)[len("prefix"):]
		got, rest, err := decodeKeyValue(append(b, 0x99))
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
		v    Value
		size int
	}{
		{Null, 1},
		{Bool(true), 1},
		{Int(0), 1},
		{Real(0), 1},
		{Real(math.Inf(1)), 1},
		{Int(1), 3},
		{Int(-1), 3},
		{Int(127), 3},
		{Int(-127), 3},
		{Int(128), 3},
		{Int(129), 4},
		{Int(1<<13 - 1), 4},
		{Int(1<<19 - 1), 5},
		{Int(1<<31 - 1), 7},
		{Int(1_700_000_000_123), 9},
		{Int(math.MaxInt64), 13},
		{Int(math.MinInt64), 3},
		{Real(0.5), 3},
		{Real(1.25), 3},
		{Real(100), 3},
		{Int(1000), 3},
		{Int(1 << 40), 3},
		{Int(1_700_000_000_000), 7}, // 17 × 2^11 × 5^11: 29 fraction bits
		{Real(0.1), 11},
		{Real(math.MaxFloat64), 13},
		{Real(math.SmallestNonzeroFloat64), 5},
		{TimestampMillis(1_700_000_000_000), 9},
		{Text(""), 3},
		{Text("abc"), 6},
		{Text("a\x00b"), 7},
		{Blob([]byte{0, 0}), 7},
	} {
		if got := len(appendKeyValue(nil, tc.v)); got != tc.size {
			t.Errorf("len(enc(%v %v)) = %d, want %d (%x)", tc.v.Kind(), tc.v, got, tc.size, appendKeyValue(nil, tc.v))
		}
	}
}

func TestKeyEncodingBytes(t *testing.T) {
	// Pin the format: stored keys depend on it.
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Null, "05"},
		{Bool(false), "10"},
		{Bool(true), "11"},
		{Int(0), "22"},
		{Int(1), "2541" + "00"},          // E=0 → 0x41; one empty group, integer
		{Real(1), "2541" + "01"},         // same, real
		{Int(-1), "21be" + "fe"},         // complemented; integer 01 → fe
		{Real(-1), "21be" + "ff"},        // real 00 → ff
		{Int(3), "2542" + "80"},          // 3 = 2^1 × 1.1: group 100000 00
		{Int(1000), "254a" + "f4"},       // 1000 = 2^9 × 1.111101 (trailing zeros trimmed): 111101 00
		{Int(129), "2548" + "02" + "80"}, // 129 = 2^7 × 1.0000001: 000000 10, 100000 00
		{Real(math.Inf(-1)), "20"},
		{Real(math.Copysign(0, -1)), "23"},
		{Real(0), "24"},
		{Real(math.Inf(1)), "26"},
		{Real(0x1p-65), "25" + "0003f1" + "01"},
		{Real(0x1p190), "25" + "ff00be" + "01"},
		{TimestampMillis(0), "30" + "8000000000000000"},
		{TimestampMillis(-1), "30" + "7fffffffffffffff"},
		{Text(""), "40" + "0001"},
		{Text("a\x00"), "40" + "6100ff" + "0001"},
		{jsonV("1"), "50" + "31" + "0001"},
		{Blob([]byte{0xff}), "60" + "ff" + "0001"},
	} {
		if got := fmt.Sprintf("%x", appendKeyValue(nil, tc.v)); got != tc.want {
			t.Errorf("enc(%v %v) = %s, want %s", tc.v.Kind(), tc.v, got, tc.want)
		}
	}
}

func TestKeyTextPrefix(t *testing.T) {
	strs := []string{"", "a", "ab", "abc", "a\x00", "a\x00b", "a\x01", "b", "\x00", "\x00\x00", "é", "\U0001F600"}
	for _, p := range strs {
		pre := appendKeyTextPrefix(nil, p)
		for _, s := range strs {
			enc := appendKeyValue(nil, Text(s))
			if got, want := bytes.HasPrefix(enc, pre), strings.HasPrefix(s, p); got != want {
				t.Errorf("enc(%q) has prefix enc-prefix(%q): %v, want %v", s, p, got, want)
			}
		}
		// Other kinds never match a text prefix.
		for _, v := range []Value{jsonV(`"` + p + `"`), Blob([]byte(p)), Int(1)} {
			if bytes.HasPrefix(appendKeyValue(nil, v), pre) {
				t.Errorf("enc(%v %v) matches text prefix %q", v.Kind(), v, p)
			}
		}
	}
}

func TestKeyTupleOrder(t *testing.T) {
	tuples := [][]Value{
		{},
		{Null},
		{Null, Int(1)},
		{Int(1)},
		{Int(1), Null},
		{Int(1), Text("")},
		{Int(1), Text("a")},
		{Real(1)},
		{Real(1), Int(0)},
		{Int(2)},
		{Text("a")},
		{Text("a"), Text("b")},
		{Text("a\x00")},
		{Text("ab")},
		{Text("ab"), Null},
	}
	for i := range tuples {
		ei := appendKeyTuple(nil, tuples[i])
		dec, rest, err := decodeKeyTuple(ei, -1)
		if err != nil || len(rest) != 0 || len(dec) != len(tuples[i]) {
			t.Fatalf("decodeKeyTuple(%x, -1) = %v, %x, %v", ei, dec, rest, err)
		}
		for k := range dec {
			if !dec[k].Equal(tuples[i][k]) {
				t.Errorf("tuple %d element %d: decoded %v, want %v", i, k, dec[k], tuples[i][k])
			}
		}
		for j := range tuples {
			ej := appendKeyTuple(nil, tuples[j])
			if got, want := bytes.Compare(ei, ej), cmpInt64(int64(i), int64(j)); got != want {
				t.Errorf("tuple %v vs %v: bytes.Compare = %d, want %d", tuples[i], tuples[j], got, want)
			}
		}
	}
	// Decoding a counted prefix leaves the rest.
	b := appendKeyTuple(nil, []Value{Text("t"), Int(7), Real(2.5)})
	vs, rest, err := decodeKeyTuple(b, 2)
	if err != nil || len(vs) != 2 || !vs[1].Equal(Int(7)) {
		t.Fatalf("decodeKeyTuple(n=2) = %v, %v", vs, err)
	}
	if v, r, err := decodeKeyValue(rest); err != nil || !v.Equal(Real(2.5)) || len(r) != 0 {
		t.Fatalf("rest decodes to %v, %x, %v", v, r, err)
	}
	if _, _, err := decodeKeyTuple(b, 9); !errors.Is(err, ErrMalformed) {
		t.Errorf("decodeKeyTuple(n too large) error %v, want ErrMalformed", err)
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
		vs, _, err := decodeKeyTuple(b, -1)
		if tc == "" {
			_, _, err = decodeKeyValue(b)
		}
		if tc == "254105" || tc == "257f00" || tc == "25fe01" {
			// Valid encodings, listed to document their neighbours.
			if err != nil {
				t.Errorf("decode %s: %v", tc, err)
			} else if re := appendKeyTuple(nil, vs); !bytes.Equal(re, b) {
				t.Errorf("decode %s = %v re-encodes to %x", tc, vs, re)
			}
			continue
		}
		if !errors.Is(err, ErrMalformed) {
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
func refCompare(a, b Value) int {
	rank := func(v Value) int {
		switch v.Kind() {
		case KindInteger, KindReal:
			return 2
		case KindTimestamp:
			return 3
		case KindText:
			return 4
		case KindJSON:
			return 5
		case KindBlob:
			return 6
		}
		return int(v.Kind())
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return cmpInt64(int64(ra), int64(rb))
	}
	switch a.Kind() {
	case KindNull:
		return 0
	case KindBoolean, KindTimestamp:
		return cmpInt64(a.Int(), b.Int())
	case KindText, KindJSON, KindBlob:
		return bytes.Compare([]byte(rawString(a)), []byte(rawString(b)))
	}
	num := func(v Value) *big.Float {
		if v.Kind() == KindInteger {
			return new(big.Float).SetInt64(v.Int())
		}
		return new(big.Float).SetFloat64(v.Real())
	}
	if c := num(a).Cmp(num(b)); c != 0 {
		return c
	}
	tie := func(v Value) int {
		switch {
		case v.Kind() == KindInteger:
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
func randKeyValue(r *rand.Rand) Value {
	switch r.IntN(12) {
	case 0:
		return Null
	case 1:
		return Bool(r.IntN(2) == 1)
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
		return Int(i)
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
		return Real(f)
	case 7:
		return TimestampMillis(int64(r.Uint64() >> r.IntN(64)))
	default:
		alphabet := []string{"\x00", "\x01", "a", "b", "\xff", "é", "\U0001F600"}
		var sb strings.Builder
		for n := r.IntN(5); n > 0; n-- {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return rawValue([...]Kind{KindText, KindText, KindJSON, KindBlob}[r.IntN(4)], sb.String())
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
		if got := Compare(a, b); got != want {
			t.Fatalf("Compare(%v %v, %v %v) = %d, want %d", a.Kind(), a, b.Kind(), b, got, want)
		}
		ea, eb = appendKeyValue(ea[:0], a), appendKeyValue(eb[:0], b)
		if got := bytes.Compare(ea, eb); got != want {
			t.Fatalf("bytes.Compare(enc(%v %v) = %x, enc(%v %v) = %x) = %d, want %d", a.Kind(), a, ea, b.Kind(), b, eb, got, want)
		}
		dec, rest, err := decodeKeyValue(ea)
		if err != nil || len(rest) != 0 || !sameValue(dec, a) {
			t.Fatalf("decode(enc(%v %v) = %x) = %v %v, %x, %v", a.Kind(), a, ea, dec.Kind(), dec, rest, err)
		}
		// Tuples order lexicographically.
		ta := []Value{a, randKeyValue(r)}
		tb := []Value{b, randKeyValue(r)}
		tw := want
		if tw == 0 {
			tw = refCompare(ta[1], tb[1])
		}
		if got := bytes.Compare(appendKeyTuple(nil, ta), appendKeyTuple(nil, tb)); got != tw {
			t.Fatalf("tuples %v vs %v: bytes.Compare = %d, want %d", ta, tb, got, tw)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	for _, v := range ascendingKeys {
		f.Add(appendKeyValue(nil, v))
	}
	f.Add(appendKeyTuple(nil, []Value{Text("todos"), Int(42), Real(-2.5)}))
	f.Add([]byte{0x25, 0x41, 0x02, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, rest, err := decodeKeyTuple(b, -1)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("decode %x: error %v does not wrap ErrMalformed", b, err)
			}
			return
		}
		if len(rest) != 0 {
			t.Fatalf("decode %x: rest %x", b, rest)
		}
		if re := appendKeyTuple(nil, vs); !bytes.Equal(re, b) {
			t.Fatalf("decode %x = %v re-encodes to %x", b, vs, re)
		}
		for i := 1; i < len(vs); i++ {
			c := Compare(vs[i-1], vs[i])
			if got := bytes.Compare(appendKeyValue(nil, vs[i-1]), appendKeyValue(nil, vs[i])); got != c {
				t.Fatalf("Compare(%v, %v) = %d but encodings compare %d", vs[i-1], vs[i], c, got)
			}
		}
	})
}

func TestKeyAppendDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	vals := []Value{Int(123456789), Real(3.14159), Text("hello\x00world"), TimestampMillis(1_700_000_000_000), Blob([]byte{1, 0, 2})}
	allocs := testing.AllocsPerRun(100, func() {
		b := buf[:0]
		for _, v := range vals {
			b = appendKeyValue(b, v)
		}
		_ = Compare(vals[0], vals[1])
		_ = Compare(vals[1], vals[0])
		_ = Compare(vals[2], vals[2])
	})
	if allocs != 0 {
		t.Errorf("appendKeyValue and Compare allocate %.1f times per run, want 0", allocs)
	}
}

func BenchmarkAppendKeyValue(b *testing.B) {
	for _, v := range []Value{Int(42), Int(1_700_000_000_000), Real(3.14159), Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a"), TimestampMillis(1_700_000_000_000)} {
		b.Run(v.Kind().String()+"/"+v.String(), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for b.Loop() {
				buf = appendKeyValue(buf[:0], v)
			}
		})
	}
}

func BenchmarkDecodeKeyValue(b *testing.B) {
	for _, v := range []Value{Int(42), Real(3.14159), Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a")} {
		enc := appendKeyValue(nil, v)
		b.Run(v.Kind().String(), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := decodeKeyValue(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompare(b *testing.B) {
	pairs := []struct {
		name string
		a, b Value
	}{
		{"int-int", Int(42), Int(43)},
		{"int-real", Int(1<<53 + 1), Real(0x1p53)},
		{"real-real", Real(3.14159), Real(2.71828)},
		{"text", Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9a"), Text("01890f3a-7c2b-7d4e-9b1a-3f5e6d7c8b9b")},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				_ = Compare(p.a, p.b)
			}
		})
	}
}
