// Package testdir holds helpers for tests that handle data directories.
package testdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Copy copies the regular files of src into dst (created), as a backup of
// a stopped relay's data directory would; the test fails on an error.
func Copy(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, d.Name()), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
