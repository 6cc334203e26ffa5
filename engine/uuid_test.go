package engine

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewUUIDv7: generated keys are what github.com/google/uuid's NewV7
// makes: RFC 4122 variant, version 7, the current Unix time in
// milliseconds, in canonical lower-case text, strictly increasing.
func TestNewUUIDv7(t *testing.T) {
	prev := ""
	for range 10_000 {
		before := time.Now().UnixMilli()
		s, err := newUUIDv7()
		if err != nil {
			t.Fatal(err)
		}
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Fatalf("%q is not a canonical RFC 4122 UUIDv7 (%v)", s, err)
		}
		ms := int64(u[0])<<40 | int64(u[1])<<32 | int64(u[2])<<24 | int64(u[3])<<16 | int64(u[4])<<8 | int64(u[5])
		// Calls less than 256 ns apart advance the 12-bit sub-millisecond
		// sequence past the clock: 10,000 of them by at most 2.56 ms.
		if after := time.Now().UnixMilli(); ms < before || ms > after+3 {
			t.Fatalf("%q has time %d ms, want within [%d, %d]", s, ms, before, after+3)
		}
		if s <= prev {
			t.Fatalf("%q follows %q: not increasing", s, prev)
		}
		prev = s
	}
}
