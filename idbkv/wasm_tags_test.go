//go:build !js

package idbkv

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// browserOnlyDirs are the packages that only build for GOOS=js GOARCH=wasm,
// relative to this package's directory. A directory with no Go files yet is
// skipped.
var browserOnlyDirs = []string{".", "../jsbridge"}

// TestWasmBuildTags fails when a Go file of a browser-only package lacks the
// `//go:build js && wasm` constraint: natively such a file would either break
// the build (syscall/js) or, worse, compile into a package that cannot work.
// This file is the exception: it is the native test that does the checking.
func TestWasmBuildTags(t *testing.T) {
	for _, dir := range browserOnlyDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Logf("%s: no Go files yet, skipped", dir)
			continue
		}
		checked := 0
		for _, path := range files {
			if dir == "." && filepath.Base(path) == "wasm_tags_test.go" {
				continue
			}
			expr, err := buildConstraint(path)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if expr == nil || expr.String() != "js && wasm" {
				got := "none"
				if expr != nil {
					got = "//go:build " + expr.String()
				}
				t.Errorf("%s: build constraint is %s, want //go:build js && wasm", path, got)
			}
			checked++
		}
		if dir == "." && checked == 0 {
			t.Errorf("%s: no browser files checked; is the glob wrong?", dir)
		}
	}
}

// buildConstraint returns the file's //go:build expression, or nil if it has
// none. Only comments before the package clause count, as for the go command.
func buildConstraint(path string) (constraint.Expr, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	for _, group := range f.Comments {
		if group.Pos() >= f.Package {
			break
		}
		for _, c := range group.List {
			if constraint.IsGoBuild(c.Text) {
				return constraint.Parse(strings.TrimSpace(c.Text))
			}
		}
	}
	return nil, nil
}
