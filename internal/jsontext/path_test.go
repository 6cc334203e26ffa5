package jsontext

import (
	"errors"
	"testing"
)

// TestPathError: a Reader with PathErrors makes *PathError, whose path
// At, AtIndex and AtKey build innermost first; errors without a path and
// nil pass through unchanged.
func TestPathError(t *testing.T) {
	sentinel := errors.New("bad input")
	r := &Reader{Data: []byte(`{"a":x}`), Errors: PathErrors{Sentinel: sentinel}}
	err := r.FailAt(5, "want a value")
	err = At(AtKey(AtIndex(At(err, "pk"), 3), "k\""), "changes")
	if got, want := err.Error(), `bad input: changes["k\""][3].pk: want a value (at byte 5)`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%v does not match its sentinel", err)
	}
	if got := At(&PathError{Msg: "m", Offset: -1}, "").Error(); got != "m" {
		t.Errorf("empty field: %s", got)
	}
	plain := errors.New("plain")
	if At(plain, "x") != plain || AtIndex(nil, 1) != nil || AtKey(nil, "k") != nil {
		t.Error("At changed an error without a path, or nil")
	}
}

func TestSafeInt(t *testing.T) {
	for _, c := range []struct {
		lit string
		v   int64
		ok  bool
	}{{"0", 0, true}, {"-12", -12, true}, {"9007199254740992", 1 << 53, true}, {"-9007199254740992", -(1 << 53), true},
		{"9007199254740993", 0, false}, {"12345678901234567", 0, false}} {
		if v, ok := SafeInt([]byte(c.lit)); v != c.v || ok != c.ok {
			t.Errorf("SafeInt(%s) = %d, %v; want %d, %v", c.lit, v, ok, c.v, c.ok)
		}
	}
}
