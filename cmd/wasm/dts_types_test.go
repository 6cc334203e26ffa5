//go:build !js

package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

// TestColumnTypesDocumented: the .d.ts ColumnType lists exactly the column
// types the engine's schema accepts (model.ParseKind), and its value table
// has one row per column type, no more (no type the schema refuses).
func TestColumnTypesDocumented(t *testing.T) {
	dts := readFile(t, replicaDTS)
	var engineKinds []string
	for k := model.Kind(0); !strings.HasPrefix(k.String(), "kind("); k++ {
		if _, err := model.ParseKind(k.String()); err == nil {
			engineKinds = append(engineKinds, k.String())
		}
	}
	slices.Sort(engineKinds)
	if len(engineKinds) == 0 {
		t.Fatal("no column types found in package engine")
	}

	m := regexp.MustCompile(`type ColumnType =([^;]*);`).FindStringSubmatch(dts)
	if m == nil {
		t.Fatal("no ColumnType type in the .d.ts")
	}
	var declared []string
	for _, c := range regexp.MustCompile(`"([a-z]+)"`).FindAllStringSubmatch(m[1], -1) {
		declared = append(declared, c[1])
	}
	slices.Sort(declared)
	if !slices.Equal(declared, engineKinds) {
		t.Errorf("ColumnType lists %v; the engine's column types are %v", declared, engineKinds)
	}

	// The value table: "//   | column type | JS value written | ...", a
	// separator row, then one row per type.
	var rows []string
	inTable := false
	for _, line := range strings.Split(dts, "\n") {
		l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "//"))
		if strings.HasPrefix(l, "| column type") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if !strings.HasPrefix(l, "|") {
			break
		}
		cell := strings.TrimSpace(strings.Split(l, "|")[1])
		if strings.Trim(cell, "-") == "" {
			continue // the separator
		}
		rows = append(rows, cell)
	}
	slices.Sort(rows)
	if !slices.Equal(rows, engineKinds) {
		t.Errorf("the value table has rows %v; the column types are %v", rows, engineKinds)
	}
}
