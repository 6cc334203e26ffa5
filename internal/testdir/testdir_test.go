package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopy: the files of src are in dst, created, with their contents.
func TestCopy(t *testing.T) {
	src := t.TempDir()
	for name, text := range map[string]string{"a.db": "alpha", "b.db": "beta"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "backup")
	Copy(t, src, dst)
	for name, want := range map[string]string{"a.db": "alpha", "b.db": "beta"} {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}
