package wire

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

// TestCoercedValuesRoundTrip: every value a local write can store (what
// model.CoerceValue accepts for a column of each kind, with coerce off and
// on) is one the wire carries: MarshalValue accepts it, and UnmarshalValue
// followed by model.NormalizeRemote for the column gives it back. A value
// that coercion accepts and the wire refuses would be acknowledged locally
// and never sync. Random inputs of every Go type coercion takes, biased to
// the edges (invalid UTF-8, surrogate escapes and WTF-8 bytes, NaN and
// infinities, int64 and timestamp bounds, deep JSON); the seed is printed
// (WIRE_COERCE_SEED=N repeats a run).
func TestCoercedValuesRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WIRE_COERCE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (WIRE_COERCE_SEED=%d repeats this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	kinds := []model.Kind{model.KindInteger, model.KindReal, model.KindText, model.KindBoolean,
		model.KindBlob, model.KindTimestamp, model.KindJSON}
	accepted := map[model.Kind]int{}
	for i := 0; i < 20000; i++ {
		in := randomInput(rng)
		for _, k := range kinds {
			col := &model.ColumnDef{Name: "c", Type: k, Coerce: rng.IntN(2) == 0}
			v, err := model.CoerceValue(nil, col, in)
			if err != nil || v.IsNull() {
				continue
			}
			accepted[k]++
			b, err := MarshalValue(v)
			if err != nil {
				t.Fatalf("%v column (coerce %v), input %T %#v: coerced to %v, which MarshalValue refuses: %v",
					k, col.Coerce, in, in, v, err)
			}
			u, err := UnmarshalValue(b)
			if err != nil {
				t.Fatalf("%v column, input %T %#v: UnmarshalValue(%s): %v", k, in, in, b, err)
			}
			if got := model.NormalizeRemote(col, u); !got.Equal(v) || got.Kind() != v.Kind() {
				t.Fatalf("%v column, input %T %#v: coerced %v, wire %s, read back %v", k, in, in, v, b, got)
			}
		}
	}
	for _, k := range kinds {
		if accepted[k] < 100 {
			t.Errorf("only %d inputs accepted for %v columns: the generator misses them", accepted[k], k)
		}
	}
}

// randomInput returns a random value of a Go type coercion accepts.
func randomInput(rng *rand.Rand) any {
	switch rng.IntN(12) {
	case 0:
		return randomInt(rng)
	case 1:
		return randomFloat(rng)
	case 2:
		return randomString(rng)
	case 3:
		return rng.IntN(2) == 0
	case 4:
		return []byte(randomString(rng))
	case 5:
		return time.UnixMilli(randomInt(rng) % (model.MaxTimestampMillis + 2))
	case 6:
		return json.RawMessage(randomJSON(rng, 0))
	case 7:
		return json.Number(strconv.FormatFloat(randomFloat(rng), 'g', -1, 64))
	case 8:
		return model.Text(randomString(rng))
	case 9:
		return model.Real(randomFloat(rng))
	case 10:
		return map[string]any{randomString(rng): randomString(rng), "n": randomFloat(rng)}
	}
	return strconv.FormatInt(randomInt(rng), 10)
}

func randomInt(rng *rand.Rand) int64 {
	edges := []int64{0, 1, -1, 1 << 53, 1<<53 + 1, -(1 << 53) - 1, math.MaxInt64, math.MinInt64,
		model.MaxTimestampMillis, -model.MaxTimestampMillis, model.MaxTimestampMillis + 1}
	if rng.IntN(3) == 0 {
		return edges[rng.IntN(len(edges))]
	}
	return int64(rng.Uint64()) >> rng.IntN(64)
}

func randomFloat(rng *rand.Rand) float64 {
	edges := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64,
		math.SmallestNonzeroFloat64, 1 << 53, 1e21, 1e-7, 0.1}
	if rng.IntN(3) == 0 {
		return edges[rng.IntN(len(edges))]
	}
	return math.Float64frombits(rng.Uint64())
}

// randomString mixes ASCII, controls, multi-byte characters, U+2028,
// invalid bytes and the WTF-8 form of a lone surrogate.
func randomString(rng *rand.Rand) string {
	parts := []string{"a", "Z", "1", " ", "\"", "\\", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028", "\xff",
		"\xed\xa0\x80", "\xe2\x80", "__bin", "{", "12.5", "2024-05-01T12:00:00Z"}
	var b strings.Builder
	for n := rng.IntN(8); n > 0; n-- {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// randomJSON returns a JSON text (mostly valid to encoding/json) with
// escapes the wire refuses now and then.
func randomJSON(rng *rand.Rand, depth int) string {
	switch n := rng.IntN(10); {
	case n == 0 && depth < 300:
		return "[" + randomJSON(rng, depth+1) + "]"
	case n == 1 && depth < 300:
		return `{"` + []string{"k", "__json", "__bin", "__bigint"}[rng.IntN(4)] + `":` + randomJSON(rng, depth+1) + "}"
	case n == 2:
		return []string{`"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`, `"\u0000"`, `"\u2028"`, "\"\xff\"", `"\/"`}[rng.IntN(7)]
	case n == 3:
		return strconv.Quote(randomString(rng)) // Go escapes: \x.. is not JSON
	case n == 4:
		return string(jsonString(randomString(rng)))
	case n == 5:
		return []string{"null", "true", "1", "-0", "1e400", "2.50", "9007199254740993"}[rng.IntN(7)]
	case n == 6:
		return "[" + randomJSON(rng, depth+1) + "," + randomJSON(rng, depth+1) + "]"
	}
	return `{"a":` + randomJSON(rng, depth+1) + `}`
}

// jsonString writes s as encoding/json does (invalid bytes become U+FFFD).
func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
