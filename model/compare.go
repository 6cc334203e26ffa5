package model

import (
	"math"
	"strings"
)

// keyKindRank ranks kinds in key order; integers and reals share a rank.
var keyKindRank = [...]uint8{
	KindNull:      0,
	KindBoolean:   1,
	KindInteger:   2,
	KindReal:      2,
	KindTimestamp: 3,
	KindText:      4,
	KindJSON:      5,
	KindBlob:      6,
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in the
// order of keys and indexes, a total order over all Values:
//
//   - Kinds rank null < boolean < number < timestamp < text < json < blob.
//   - false < true.
//   - Integers and reals compare numerically with each other, exactly (the
//     integer 2^53+1 is above the real 2^53; no rounding through float64).
//     -Inf is below every number and +Inf above. Numerically equal values
//     tie-break integer first, then -0.0 before +0.0: 0 < -0.0 < +0.0, and
//     3 < 3.0. NaN (never stored) sorts after +Inf and equals itself.
//   - Timestamps by milliseconds.
//   - Text, JSON text and blobs bytewise (for UTF-8 text that is Unicode
//     code-point order), a prefix first.
//
// Compare(a, b) == 0 exactly when a and b have the same key encoding (the
// engine's order-preserving encoding of keys, which sorts as Compare), which
// for non-NaN values is when a.Equal(b). It does not allocate.
func Compare(a, b Value) int {
	if a.kind == b.kind {
		switch a.kind {
		case KindNull:
			return 0
		case KindBoolean, KindInteger, KindTimestamp:
			return cmpInt64(a.i, b.i)
		case KindReal:
			return compareReals(a.f, b.f)
		default:
			return strings.Compare(a.s, b.s)
		}
	}
	ra, rb := keyKindRank[a.kind], keyKindRank[b.kind]
	if ra != rb {
		return cmpInt64(int64(ra), int64(rb))
	}
	// An integer and a real.
	if a.kind == KindInteger {
		return compareIntReal(a.i, b.f)
	}
	return -compareIntReal(b.i, a.f)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareReals orders reals numerically, -0 before +0, NaN last.
func compareReals(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		if a == 0 {
			na, nb := math.Signbit(a), math.Signbit(b)
			if na != nb {
				if na {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	// At least one NaN.
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

// compareIntReal orders the integer i against the real f exactly; never 0:
// a numerically equal integer sorts first.
func compareIntReal(i int64, f float64) int {
	switch {
	case f != f: // NaN sorts after every number
		return -1
	case f >= 0x1p63:
		return -1
	case f < -0x1p63:
		return 1
	}
	t := math.Trunc(f) // in [-2^63, 2^63): converts exactly
	if ti := int64(t); i != ti {
		return cmpInt64(i, ti)
	}
	if f > t {
		return -1
	}
	if f < t {
		return 1
	}
	return -1
}
