//go:build js && wasm

package idbkv

import (
	"errors"
	"strconv"
	"testing"

	"github.com/replica-sync/replica/kv"
)

var specOpts = openOptions{speculate: true}

// incr is an Update function in the engine's shape: its first operation is
// a GetBatch, then it writes what it computed from the values read. It
// increments the counter under key k and records in *seen what it read.
func incr(k string, seen *[]string, runs *int) func(kv.Tx) error {
	return func(tx kv.Tx) error {
		*runs++
		vals, err := tx.(kv.BatchGetter).GetBatch([]kv.BucketKey{{Bucket: "a", Key: []byte("clock")}, {Bucket: "a", Key: []byte(k)}})
		if err != nil {
			return err
		}
		n := 0
		if vals[1] != nil {
			if n, err = strconv.Atoi(string(vals[1])); err != nil {
				return err
			}
		}
		*seen = append(*seen, string(vals[1]))
		if err := tx.Put("a", []byte("clock"), []byte(strconv.Itoa(*runs))); err != nil {
			return err
		}
		return tx.Put("a", []byte(k), []byte(strconv.Itoa(n+1)))
	}
}

// TestSpeculateStale: another Store (another tab) writes keys this Store
// has cached; the speculative Update must notice at commit, write nothing
// from its stale view, and run again on the stored values. Without the
// check, the counter would lose the other Store's increments.
func TestSpeculateStale(t *testing.T) {
	s, name := openT(t, specOpts, "a")
	defer s.Close()
	other := openNamed(t, name, openOptions{}, "a")
	defer other.Close()
	var seen []string
	runs := 0
	for i := 0; i < 3; i++ { // fills the cache with clock and x
		if err := s.Update(incr("x", &seen, &runs)); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 3 {
		t.Fatalf("%d runs for 3 Updates with nothing stale, want 3", runs)
	}
	// The other Store increments x twice.
	var oseen []string
	oruns := 0
	for i := 0; i < 2; i++ {
		if err := other.Update(incr("x", &oseen, &oruns)); err != nil {
			t.Fatal(err)
		}
	}
	seen, runs = nil, 0
	if err := s.Update(incr("x", &seen, &runs)); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "a", "x", "6")
	if runs != 2 || seen[0] != "3" || seen[1] != "5" {
		t.Errorf("after another Store's writes: runs %d reading %q, want a speculative run reading the cached 3, then one reading 5", runs, seen)
	}
	// The cache learned 6: the next Update speculates right, in one run.
	seen, runs = nil, 0
	if err := s.Update(incr("x", &seen, &runs)); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "a", "x", "7")
	if runs != 1 || seen[0] != "6" {
		t.Errorf("runs %d reading %q, want one run reading 6", runs, seen)
	}
}

// TestSpeculateAbsent: a key the cache lacks reads as absent in a
// speculative GetBatch. If it exists, the commit check catches it; if fn
// fails on the assumption, fn runs again reading for real, in the same
// transaction.
func TestSpeculateAbsent(t *testing.T) {
	s, name := openT(t, specOpts, "a")
	defer s.Close()
	other := openNamed(t, name, openOptions{}, "a")
	defer other.Close()
	var seen []string
	runs := 0
	if err := s.Update(incr("x", &seen, &runs)); err != nil { // caches clock
		t.Fatal(err)
	}
	if err := other.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("y"), []byte("40")) }); err != nil {
		t.Fatal(err)
	}
	// y exists but is not cached: assumed absent, caught at commit.
	seen, runs = nil, 0
	if err := s.Update(incr("y", &seen, &runs)); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "a", "y", "41")
	if runs != 2 || seen[0] != "" || seen[1] != "40" {
		t.Errorf("runs %d reading %q, want a speculative run reading nothing, then one reading 40", runs, seen)
	}

	// fn fails on the assumption (an update of a row it believes absent).
	if err := other.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("z"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	errAbsent := errors.New("z is absent")
	var got []string
	runs = 0
	err := s.Update(func(tx kv.Tx) error {
		runs++
		vals, err := tx.(kv.BatchGetter).GetBatch([]kv.BucketKey{{Bucket: "a", Key: []byte("y")}, {Bucket: "a", Key: []byte("z")}})
		if err != nil {
			return err
		}
		got = append(got, string(vals[1]))
		if vals[1] == nil {
			return errAbsent
		}
		return tx.Put("a", []byte("z"), []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, s, "a", "z", "2")
	if runs != 2 || got[0] != "" || got[1] != "1" {
		t.Errorf("runs %d reading %q, want a speculative run reading nothing, then one reading 1", runs, got)
	}

	// A real absence still fails the Update with fn's error, nothing
	// written.
	err = s.Update(func(tx kv.Tx) error {
		vals, err := tx.(kv.BatchGetter).GetBatch([]kv.BucketKey{{Bucket: "a", Key: []byte("y")}, {Bucket: "a", Key: []byte("nope")}})
		if err != nil {
			return err
		}
		if err := tx.Put("a", []byte("w"), []byte("1")); err != nil {
			return err
		}
		if vals[1] == nil {
			return errAbsent
		}
		return nil
	})
	if !errors.Is(err, errAbsent) {
		t.Errorf("Update = %v, want fn's error", err)
	}
	expect(t, s, "a", "w", "")
}
