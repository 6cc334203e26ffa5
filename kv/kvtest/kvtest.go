// Package kvtest is the conformance suite every kv.Store implementation runs
// (memkv, boltkv natively; idbkv in headless Chromium).
//
// # Usage
//
// A backend's test file calls Run with an Opener that makes a fresh, empty
// store, and Bench from a benchmark:
//
//	func TestConformance(t *testing.T) {
//		kvtest.Run(t, func(t testing.TB, buckets []string) kv.Store {
//			return memkv.New(buckets...)
//		})
//	}
//
//	func BenchmarkMemkv(b *testing.B) { kvtest.Bench(b, open) }
//
// Every check is a t.Run subtest named Group/Case (for example
// Scan/Bounds/start_end_reverse), so `go test -run 'Conformance/Scan'`
// selects a part of the suite.
//
// # What the suite assumes
//
// The suite follows the kv package documentation and nothing more. In
// particular it copies every byte slice it keeps past the transaction that
// returned it (backends may hand out slices that are only valid until then),
// and it never relies on a value staying valid after its transaction ends.
// It does rely on returned slices staying valid (unchanged) until the end of
// their transaction, even across later Puts and Deletes of the same keys in
// that transaction, as kv documents.
//
// Inside a transaction function the suite reports failures with t.Errorf and
// returns errors, never t.Fatal, so it works whichever goroutine a backend
// runs the function on.
//
// # Browsers
//
// The suite builds and runs under GOOS=js GOARCH=wasm: it uses no files, no
// processes and no t.Parallel. Only the Concurrency group runs transactions
// from several goroutines at once, and one of its tests waits, inside a View
// function, for another goroutine's Update; that breaks IndexedDB's rule that
// a transaction function waits only on its own requests. A backend that cannot
// do this (idbkv) calls RunWith with Options.SkipConcurrency set.
package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// Opener opens a fresh, empty store holding exactly the given buckets. The
// suite closes every store it opens (through t.Cleanup, so an Opener may
// register its own cleanups, for example t.TempDir, before returning). An
// Opener that cannot open a store calls t.Fatal.
type Opener func(t testing.TB, buckets []string) kv.Store

// Options adjusts the suite for a backend's limits. The zero value runs
// everything.
type Options struct {
	// SkipConcurrency skips the Concurrency group: tests that run
	// transactions from several goroutines at once and that wait inside a
	// transaction for another goroutine's transaction. Set it for backends
	// whose transactions end by themselves when their function waits on
	// anything else (IndexedDB in js/wasm).
	SkipConcurrency bool
}

// Run runs the whole conformance suite against stores from open, with the
// zero Options.
func Run(t *testing.T, open Opener) {
	RunWith(t, open, Options{})
}

// RunWith runs the conformance suite against stores from open, adjusted by o.
func RunWith(t *testing.T, open Opener, o Options) {
	s := &suite{open: open, opts: o}
	t.Run("Basics", s.testBasics)
	t.Run("Errors", s.testErrors)
	t.Run("GetMany", s.testGetMany)
	t.Run("GetBatch", s.testGetBatch)
	t.Run("Prefetch", s.testPrefetch)
	t.Run("Tx", s.testTx)
	t.Run("Scan", s.testScan)
	t.Run("Order", s.testOrder)
	t.Run("DeleteRange", s.testDeleteRange)
	t.Run("Large", s.testLarge)
	t.Run("Snapshot", s.testSnapshot)
	t.Run("Concurrency", func(t *testing.T) {
		if o.SkipConcurrency {
			t.Skip("kvtest: Options.SkipConcurrency is set")
		}
		s.testConcurrency(t)
	})
	t.Run("Close", s.testClose)
}

// Bucket names the suite opens stores with.
const (
	bucketA = "alpha"
	bucketB = "beta"
	bucketC = "gamma"
	// missing is never among a store's buckets.
	missing = "no-such-bucket"
)

type suite struct {
	open Opener
	opts Options
}

// store opens a store with buckets (alpha, beta, gamma when none are given)
// and closes it when t ends, failing t if Close fails.
func (s *suite) store(t testing.TB, buckets ...string) kv.Store {
	t.Helper()
	if len(buckets) == 0 {
		buckets = []string{bucketA, bucketB, bucketC}
	}
	st := s.open(t, buckets)
	if st == nil {
		t.Fatal("kvtest: Opener returned a nil Store")
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

// entry is a key and value copied out of a store, as strings so they compare
// with == and print with %q.
type entry struct {
	key, value string
}

func (e entry) String() string { return fmt.Sprintf("%q=%q", e.key, e.value) }

// mustUpdate runs fn in an Update and fails t if it returns an error.
func mustUpdate(t testing.TB, st kv.Store, fn func(tx kv.Tx) error) {
	t.Helper()
	if err := st.Update(fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// mustView runs fn in a View and fails t if it returns an error.
func mustView(t testing.TB, st kv.Store, fn func(tx kv.Tx) error) {
	t.Helper()
	if err := st.View(fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// putAll commits entries to bucket in one Update.
func putAll(t testing.TB, st kv.Store, bucket string, entries ...entry) {
	t.Helper()
	mustUpdate(t, st, func(tx kv.Tx) error {
		for _, e := range entries {
			if err := tx.Put(bucket, []byte(e.key), []byte(e.value)); err != nil {
				return fmt.Errorf("Put(%q, %q): %w", bucket, e.key, err)
			}
		}
		return nil
	})
}

// scan collects (copies of) the entries Scan visits.
func scan(tx kv.Tx, bucket string, r kv.Range) ([]entry, error) {
	var got []entry
	err := tx.Scan(bucket, r, func(k, v []byte) bool {
		got = append(got, entry{string(k), string(v)})
		return true
	})
	return got, err
}

// dump returns the whole content of bucket, in order, in a new View.
func dump(t testing.TB, st kv.Store, bucket string) []entry {
	t.Helper()
	var got []entry
	mustView(t, st, func(tx kv.Tx) error {
		var err error
		got, err = scan(tx, bucket, kv.Range{})
		return err
	})
	return got
}

// checkEntries reports a mismatch between got and want with t.Errorf.
func checkEntries(t testing.TB, what string, got, want []entry) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// checkGet reports with t.Errorf unless tx.Get(bucket, key) returns want.
func checkGet(t testing.TB, tx kv.Tx, bucket, key, want string) {
	t.Helper()
	v, err := tx.Get(bucket, []byte(key))
	if err != nil {
		t.Errorf("Get(%q, %q): %v, want %q", bucket, key, err, want)
		return
	}
	if v == nil {
		t.Errorf("Get(%q, %q) = nil slice, want %q (non-nil)", bucket, key, want)
		return
	}
	if string(v) != want {
		t.Errorf("Get(%q, %q) = %q, want %q", bucket, key, v, want)
	}
}

// checkAbsent reports with t.Errorf unless tx.Get(bucket, key) returns
// ErrNotFound.
func checkAbsent(t testing.TB, tx kv.Tx, bucket, key string) {
	t.Helper()
	v, err := tx.Get(bucket, []byte(key))
	if !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Get(%q, %q) = %q, %v; want ErrNotFound", bucket, key, v, err)
	}
}

// checkErr reports with t.Errorf unless errors.Is(err, want).
func checkErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

// pattern returns n bytes that depend on seed and on their position, so a
// truncated, shifted or mixed-up value does not compare equal.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i>>8) ^ seed
	}
	return b
}

// keysOf returns the keys of entries.
func keysOf(entries []entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.key
	}
	return out
}

// reversed returns a reversed copy of s.
func reversed[S ~[]E, E any](s S) S {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// sameBytes reports whether got is want, telling nil from empty.
func sameBytes(got, want []byte) bool {
	return (got == nil) == (want == nil) && bytes.Equal(got, want)
}
