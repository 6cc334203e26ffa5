package engine_test

import (
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// ParseHeldPolicy reads the policies' names, the empty string (the
// default) and, for one release, the names of the release before (the
// JavaScript option unknownTableDisposition's values, which apps still
// pass); anything else is an error naming the valid ones.
func TestParseHeldPolicy(t *testing.T) {
	for s, want := range map[string]engine.HeldPolicy{
		"":                  engine.Hold,
		"hold":              engine.Hold,
		"drop":              engine.Drop,
		"hold-and-forward":  engine.HoldAndForward,
		"quarantine":        engine.Hold,
		"ignore":            engine.Drop,
		"store-and-forward": engine.HoldAndForward,
	} {
		if got, err := engine.ParseHeldPolicy(s); err != nil || got != want {
			t.Errorf("ParseHeldPolicy(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"Hold", "discard", "store_and_forward", " hold"} {
		_, err := engine.ParseHeldPolicy(s)
		if err == nil || !strings.Contains(err.Error(), "hold, drop or hold-and-forward") {
			t.Errorf("ParseHeldPolicy(%q): %v, want an error naming the policies", s, err)
		}
	}
}
