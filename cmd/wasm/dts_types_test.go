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

// TestEventsAndPayloadsDocumented: the .d.ts declares exactly what the
// runtime does for the names that carry events and options: EventMap's
// keys are the events db.on accepts (facade.js EVENTS), OpenOptions's
// members the options Replica.open reads (jsbridge/db.go parseOpenOptions),
// HeldEvent's members the fields of the held payload (jsbridge/events.go
// heldResult), UnknownTableEvent's those of its deprecated alias
// (facade.js heldAlias) and LoadOptions's the options Replica.configure
// accepts (web/replica.js LOAD_OPTIONS).
func TestEventsAndPayloadsDocumented(t *testing.T) {
	ifaces := parseDTS(readFile(t, replicaDTS))
	members := func(name string) []string {
		i := ifaces[name]
		if i == nil {
			t.Fatalf("no interface %s in the .d.ts", name)
		}
		var out []string
		for _, m := range i.members {
			out = append(out, m.name)
		}
		slices.Sort(out)
		return out
	}
	// body returns the text that starts with head in src and ends before
	// end: a function's body up to its closing brace, a const's line.
	body := func(src, head, end string) string {
		i := strings.Index(src, head)
		if i < 0 {
			t.Fatalf("%q not found", head)
		}
		src = src[i:]
		if j := strings.Index(src, end); j >= 0 {
			src = src[:j]
		}
		return src
	}
	found := func(src, re string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	facade := readFile(t, facadePath)
	for _, c := range []struct {
		iface, where string
		runtime      []string
		min          int // names the pattern must find at least (default 3)
	}{
		{"EventMap", "facade.js EVENTS", found(body(facade, "const EVENTS = ", "\n"), `"(\w+)"`), 0},
		{"OpenOptions", "jsbridge/db.go parseOpenOptions", found(body(readFile(t, "../../jsbridge/db.go"), "func parseOpenOptions(", "\n}\n"), `case "(\w+)":`), 0},
		{"HeldEvent", "jsbridge/events.go heldResult", found(body(readFile(t, "../../jsbridge/events.go"), "func heldResult(", "\n}\n"), `o\.\w+\("(\w+)"`), 0},
		{"UnknownTableEvent", "facade.js heldAlias", found(body(facade, "function heldAlias(", "\n}\n"), `(?:\{ |o\.)(\w+)(?::| =)`), 0},
		{"LoadOptions", "web/replica.js LOAD_OPTIONS", found(body(readFile(t, replicaJS), "const LOAD_OPTIONS = ", "\n"), `"(\w+)"`), 2},
	} {
		min := c.min
		if min == 0 {
			min = 3
		}
		if len(c.runtime) < min {
			t.Errorf("%s: found only %v; is the pattern stale?", c.where, c.runtime)
			continue
		}
		if got := members(c.iface); !slices.Equal(got, c.runtime) {
			t.Errorf("the .d.ts %s declares %v; %s has %v", c.iface, got, c.where, c.runtime)
		}
	}
}
