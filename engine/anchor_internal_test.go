package engine

import (
	"testing"
	"unicode"
)

// TestAnchorSafe checks the constant table anchorSafe against a scan of
// every rune (what it replaced at package init): an ASCII byte is safe
// unless some rune above ASCII lower-cases to it; 0 is never safe.
func TestAnchorSafe(t *testing.T) {
	var want [128]bool
	for c := 1; c < 128; c++ {
		want[c] = true
	}
	for r := rune(128); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < 128 {
			want[l] = false
		}
	}
	for c := range want {
		if anchorSafe[c] != want[c] {
			t.Errorf("anchorSafe[%q] = %v, the Unicode tables say %v", rune(c), anchorSafe[c], want[c])
		}
	}
}
