package engine

import (
	"testing"

	"github.com/google/uuid"
)

// TestNewUUIDv7: ids parse as UUIDv7 (RFC 9562 variant), carry the current
// millisecond, and sort in generation order even within one millisecond.
func TestNewUUIDv7(t *testing.T) {
	prev := ""
	for i := 0; i < 10000; i++ {
		before := uuid.Must(uuid.NewV7()).Time() // google/uuid, the former generator
		s, err := newUUIDv7()
		if err != nil {
			t.Fatal(err)
		}
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Fatalf("%q: version %v, variant %v, %v", s, u.Version(), u.Variant(), err)
		}
		if sec, _ := u.Time().UnixTime(); sec < 0 || u.Time() < before-10_000*1000*10 {
			t.Fatalf("%q: time %v, before %v", s, u.Time(), before)
		}
		if s <= prev {
			t.Fatalf("%q after %q: not increasing", s, prev)
		}
		prev = s
	}
}
