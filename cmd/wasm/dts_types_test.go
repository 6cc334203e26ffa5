//go:build !js

package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
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

// TestHeldNamesDocumented: the .d.ts HeldReason and HeldPolicy types list
// exactly the names the engine gives its held-change reasons
// (engine.HeldReason.String, the held event's reason) and policies
// (engine.HeldPolicy.String, the heldChanges option, which
// engine.ParseHeldPolicy reads back).
func TestHeldNamesDocumented(t *testing.T) {
	dts := readFile(t, replicaDTS)
	declared := func(typ string) []string {
		m := regexp.MustCompile(`type ` + typ + ` =([^;]*);`).FindStringSubmatch(dts)
		if m == nil {
			t.Fatalf("no %s type in the .d.ts", typ)
		}
		var out []string
		for _, c := range regexp.MustCompile(`"([a-zA-Z-]+)"`).FindAllStringSubmatch(m[1], -1) {
			out = append(out, c[1])
		}
		slices.Sort(out)
		return out
	}
	var reasons []string
	for r := engine.HeldReason(1); r.String() != "invalid"; r++ {
		reasons = append(reasons, r.String())
	}
	slices.Sort(reasons)
	if got := declared("HeldReason"); len(reasons) == 0 || !slices.Equal(got, reasons) {
		t.Errorf("HeldReason lists %v; the engine's reasons are %v", got, reasons)
	}
	var policies []string
	for p := engine.HeldPolicy(0); p.String() != "invalid"; p++ {
		if q, err := engine.ParseHeldPolicy(p.String()); err != nil || q != p {
			t.Errorf("ParseHeldPolicy(%q) = %v, %v", p, q, err)
		}
		policies = append(policies, p.String())
	}
	slices.Sort(policies)
	if got := declared("HeldPolicy"); len(policies) == 0 || !slices.Equal(got, policies) {
		t.Errorf("HeldPolicy lists %v; the engine's policies are %v", got, policies)
	}
}
