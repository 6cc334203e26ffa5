package engine

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewUUIDv7: generated keys, the browser build's (uuidV7) and this
// build's (newKey), are what github.com/google/uuid's NewV7 makes: RFC 4122 variant, version 7, the current Unix time in
// milliseconds, in canonical lower-case text, strictly increasing.
func TestNewUUIDv7(t *testing.T) {
	for name, gen := range map[string]func() (string, error){"uuidV7": uuidV7, "newKey": newKey} {
		t.Run(name, func(t *testing.T) { checkUUIDv7s(t, gen) })
	}
}

func checkUUIDv7s(t *testing.T, gen func() (string, error)) {
	prev := ""
	for range 10_000 {
		before := time.Now().UnixMilli()
		s, err := gen()
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
