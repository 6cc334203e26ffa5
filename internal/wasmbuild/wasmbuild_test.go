//go:build !js

package wasmbuild

import (
	"os"
	"strings"
	"testing"
)

// TestMakefileAgrees checks that the Makefile's WASM_GCFLAGS are GCFlags,
// so that make wasm, make package and make bench build what the tests do.
func TestMakefileAgrees(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	want := "WASM_GCFLAGS := " + strings.Join(GCFlags, " ")
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "WASM_GCFLAGS ") || strings.HasPrefix(line, "WASM_GCFLAGS:") {
			found = true
			if line != want {
				t.Errorf("Makefile has\n\t%s\nwant (internal/wasmbuild.GCFlags)\n\t%s", line, want)
			}
		}
	}
	if !found {
		t.Errorf("the Makefile defines no WASM_GCFLAGS; want\n\t%s", want)
	}
	for _, target := range []string{"wasm:", "package:", "bench-page:", "bench-profile:"} {
		i := strings.Index(string(b), "\n"+target)
		if i < 0 {
			t.Errorf("the Makefile has no %s target", target)
			continue
		}
		rest := string(b)[i+1:]
		if j := strings.Index(rest, "\n\n"); j >= 0 {
			rest = rest[:j]
		}
		if !strings.Contains(rest, "$(WASM_GCFLAGS)") {
			t.Errorf("make %s builds replica.wasm without $(WASM_GCFLAGS)", strings.TrimSuffix(target, ":"))
		}
	}
}
