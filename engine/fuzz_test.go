//go:build !js

package engine_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/wire"
)

// FuzzApplyChangeSet decodes a ChangeSet from JSON and applies it: nothing
// panics; a rejected batch writes nothing; an accepted one is idempotent.
func FuzzApplyChangeSet(f *testing.F) {
	src, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: enginetest.TripsSchema(), Clock: enginetest.NewManualClock(enginetest.T0)})
	if err != nil {
		f.Fatal(err)
	}
	src.Insert("trips", map[string]any{"id": "a", "title": "x", "days": 3, "tags": map[string]any{"k": []int{1}}, "photo": []byte{1, 2}})
	src.Update("trips", engine.Key{"a"}, map[string]any{"days": 4, "budget": 1.5})
	src.Insert("stops", map[string]any{"trip": "a", "pos": 1})
	src.Delete("stops", engine.Key{"a", 1})
	sets, err := src.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		f.Fatal(err)
	}
	for _, cs := range sets {
		b, err := wire.MarshalChangeSet(&cs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := wire.UnmarshalChangeSet(data)
		if err != nil {
			return
		}
		st := memkv.New(engine.Buckets...)
		e, err := engine.Open(st, engine.Options{Schema: enginetest.TripsSchema(), Clock: enginetest.NewManualClock(enginetest.T0)})
		if err != nil {
			t.Fatal(err)
		}
		before := enginetest.DumpStore(t, st)
		if _, err := e.ApplyChanges([]engine.ChangeSet{cs}); err != nil {
			if after := enginetest.DumpStore(t, st); !dumpsEqual(before, after) {
				t.Fatalf("rejected ChangeSet (%v) wrote", err)
			}
			return
		}
		after := enginetest.DumpStore(t, st)
		res, err := e.ApplyChanges([]engine.ChangeSet{cs})
		if err != nil || res.Applied != 0 {
			t.Fatalf("re-apply: %+v %v", res, err)
		}
		if again := enginetest.DumpStore(t, st); !dumpsEqual(after, again) {
			t.Fatal("re-applying changed state")
		}
		if _, err := e.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}); err != nil {
			t.Fatalf("ChangesSince after apply: %v", err)
		}
	})
}

func dumpsEqual(a, b enginetest.Dump) bool {
	for k, v := range a.Buckets {
		w := b.Buckets[k]
		if len(v) != len(w) {
			return false
		}
		for i := range v {
			if v[i] != w[i] {
				return false
			}
		}
	}
	return true
}

// TestNoSyscallJS: the engine is platform-neutral. Neither it nor any
// non-standard package it depends on imports syscall/js, in either build.
// (The standard library's syscall package uses syscall/js under js/wasm;
// that is Go's own runtime glue, not a dependency on the browser API.)
func TestNoSyscallJS(t *testing.T) {
	for _, env := range [][]string{nil, {"GOOS=js", "GOARCH=wasm"}} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}:{{join .Imports \" \"}}{{end}}", "github.com/replica-sync/replica/engine")
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", env, err, out)
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, imports, _ := strings.Cut(line, ":")
			n++
			for _, imp := range strings.Fields(imports) {
				if imp == "syscall/js" {
					t.Fatalf("%s imports syscall/js (env %v)", pkg, env)
				}
			}
		}
		if n == 0 {
			t.Fatal("go list listed no packages")
		}
	}
}
