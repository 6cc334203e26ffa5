package kvtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/replica-sync/replica/kv"
)

func (s *suite) testBasics(t *testing.T) {
	t.Run("PutGet", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k1", "v1"}, entry{"k2", "v2"})
		mustView(t, st, func(tx kv.Tx) error {
			checkGet(t, tx, bucketA, "k1", "v1")
			checkGet(t, tx, bucketA, "k2", "v2")
			checkAbsent(t, tx, bucketA, "k3")
			return nil
		})
	})

	t.Run("Overwrite", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k", "first"})
		putAll(t, st, bucketA, entry{"k", "second, longer"})
		putAll(t, st, bucketA, entry{"k", "3"})
		checkEntries(t, "after three Puts of one key", dump(t, st, bucketA), []entry{{"k", "3"}})
	})

	t.Run("Delete", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k1", "v1"}, entry{"k2", "v2"})
		mustUpdate(t, st, func(tx kv.Tx) error { return tx.Delete(bucketA, []byte("k1")) })
		mustView(t, st, func(tx kv.Tx) error {
			checkAbsent(t, tx, bucketA, "k1")
			checkGet(t, tx, bucketA, "k2", "v2")
			return nil
		})
	})

	t.Run("DeleteAbsentIsNotAnError", func(t *testing.T) {
		st := s.store(t)
		mustUpdate(t, st, func(tx kv.Tx) error {
			if err := tx.Delete(bucketA, []byte("never-written")); err != nil {
				return fmt.Errorf("Delete of an absent key: %w", err)
			}
			return nil
		})
	})

	t.Run("NotFoundOnEmptyBucket", func(t *testing.T) {
		st := s.store(t)
		mustView(t, st, func(tx kv.Tx) error {
			checkAbsent(t, tx, bucketA, "k")
			return nil
		})
		mustUpdate(t, st, func(tx kv.Tx) error {
			checkAbsent(t, tx, bucketA, "k")
			return nil
		})
	})

	t.Run("EmptyValue", func(t *testing.T) {
		st := s.store(t)
		mustUpdate(t, st, func(tx kv.Tx) error {
			if err := tx.Put(bucketA, []byte("empty"), []byte{}); err != nil {
				return err
			}
			if err := tx.Put(bucketA, []byte("nil"), nil); err != nil {
				return err
			}
			// Read your own empty writes before commit too.
			checkGet(t, tx, bucketA, "empty", "")
			checkGet(t, tx, bucketA, "nil", "")
			return nil
		})
		mustView(t, st, func(tx kv.Tx) error {
			// checkGet insists on a non-nil slice.
			checkGet(t, tx, bucketA, "empty", "")
			checkGet(t, tx, bucketA, "nil", "")
			return nil
		})
		checkEntries(t, "scan of empty values", dump(t, st, bucketA),
			[]entry{{"empty", ""}, {"nil", ""}})
	})

	t.Run("BucketsAreIndependent", func(t *testing.T) {
		st := s.store(t)
		mustUpdate(t, st, func(tx kv.Tx) error {
			for _, b := range []string{bucketA, bucketB, bucketC} {
				if err := tx.Put(b, []byte("same-key"), []byte("in "+b)); err != nil {
					return err
				}
			}
			return tx.Put(bucketB, []byte("only-in-beta"), []byte("x"))
		})
		mustUpdate(t, st, func(tx kv.Tx) error { return tx.Delete(bucketC, []byte("same-key")) })
		checkEntries(t, bucketA, dump(t, st, bucketA), []entry{{"same-key", "in " + bucketA}})
		checkEntries(t, bucketB, dump(t, st, bucketB),
			[]entry{{"only-in-beta", "x"}, {"same-key", "in " + bucketB}})
		checkEntries(t, bucketC, dump(t, st, bucketC), nil)
	})

	t.Run("SingleBucketStore", func(t *testing.T) {
		st := s.store(t, "only")
		putAll(t, st, "only", entry{"k", "v"})
		checkEntries(t, "only", dump(t, st, "only"), []entry{{"k", "v"}})
		err := st.View(func(tx kv.Tx) error {
			_, err := tx.Get(bucketA, []byte("k"))
			return err
		})
		checkErr(t, "Get from a bucket the store was not opened with", err, kv.ErrBucketNotFound)
	})

	t.Run("CallerMayReuseSlices", func(t *testing.T) {
		// kv: "Slices passed to Put may be reused by the caller once Put
		// returns."
		st := s.store(t)
		key := []byte("key-1")
		val := []byte("value-1")
		mustUpdate(t, st, func(tx kv.Tx) error {
			if err := tx.Put(bucketA, key, val); err != nil {
				return err
			}
			copy(key, "XXXXX")
			copy(val, "YYYYYYY")
			checkGet(t, tx, bucketA, "key-1", "value-1")
			checkAbsent(t, tx, bucketA, "XXXXX")
			return nil
		})
		checkEntries(t, "after scribbling over the Put arguments", dump(t, st, bucketA),
			[]entry{{"key-1", "value-1"}})
	})

	t.Run("ValuesStayValidUntilTxEnd", func(t *testing.T) {
		// kv: returned slices are valid until the transaction ends. The
		// engine reads a prior value and then overwrites it in the same
		// transaction; the slice it read must not change under it.
		st := s.store(t)
		putAll(t, st, bucketA, entry{"a", "old-a"}, entry{"b", "old-b"}, entry{"c", "old-c"})
		mustUpdate(t, st, func(tx kv.Tx) error {
			a, err := tx.Get(bucketA, []byte("a"))
			if err != nil {
				return err
			}
			many, err := tx.GetMany(bucketA, [][]byte{[]byte("b")})
			if err != nil {
				return err
			}
			var scanned []byte
			if err := tx.Scan(bucketA, kv.Range{Start: []byte("c")}, func(_, v []byte) bool {
				scanned = v
				return false
			}); err != nil {
				return err
			}
			for _, k := range []string{"a", "b", "c"} {
				if err := tx.Put(bucketA, []byte(k), []byte(strings.Repeat("new", 10))); err != nil {
					return err
				}
			}
			if err := tx.Delete(bucketA, []byte("b")); err != nil {
				return err
			}
			if string(a) != "old-a" || string(many[0]) != "old-b" || string(scanned) != "old-c" {
				t.Errorf("slices read before overwriting changed within the transaction: Get %q, GetMany %q, Scan %q",
					a, many[0], scanned)
			}
			return nil
		})
	})

	t.Run("ManyTransactions", func(t *testing.T) {
		st := s.store(t)
		var want []entry
		for i := range 50 {
			e := entry{fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)}
			putAll(t, st, bucketA, e)
			want = append(want, e)
		}
		checkEntries(t, "after 50 one-Put transactions", dump(t, st, bucketA), want)
	})
}

func (s *suite) testErrors(t *testing.T) {
	t.Run("BucketNotFound", func(t *testing.T) {
		st := s.store(t)
		k := []byte("k")
		ops := []struct {
			name string
			do   func(tx kv.Tx) error
		}{
			{"Get", func(tx kv.Tx) error { _, err := tx.Get(missing, k); return err }},
			{"GetMany", func(tx kv.Tx) error { _, err := tx.GetMany(missing, [][]byte{k}); return err }},
			{"Scan", func(tx kv.Tx) error {
				return tx.Scan(missing, kv.Range{}, func(_, _ []byte) bool { return true })
			}},
			{"Put", func(tx kv.Tx) error { return tx.Put(missing, k, k) }},
			{"Delete", func(tx kv.Tx) error { return tx.Delete(missing, k) }},
			{"DeleteRange", func(tx kv.Tx) error { return tx.DeleteRange(missing, nil, nil) }},
		}
		for _, op := range ops {
			err := st.Update(op.do)
			checkErr(t, "Update: "+op.name, err, kv.ErrBucketNotFound)
		}
		for _, op := range ops[:3] {
			err := st.View(op.do)
			checkErr(t, "View: "+op.name, err, kv.ErrBucketNotFound)
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k", "v"})
		mustView(t, st, func(tx kv.Tx) error {
			checkErr(t, "Put in View", tx.Put(bucketA, []byte("k2"), []byte("v2")), kv.ErrReadOnly)
			checkErr(t, "Delete in View", tx.Delete(bucketA, []byte("k")), kv.ErrReadOnly)
			checkErr(t, "DeleteRange in View", tx.DeleteRange(bucketA, nil, nil), kv.ErrReadOnly)
			// The View goes on reading and returns nil: nothing may have
			// been written.
			checkGet(t, tx, bucketA, "k", "v")
			checkAbsent(t, tx, bucketA, "k2")
			return nil
		})
		checkEntries(t, "after refused writes in a View", dump(t, st, bucketA), []entry{{"k", "v"}})
	})

	t.Run("InvalidKey", func(t *testing.T) {
		st := s.store(t)
		long := make([]byte, kv.MaxKeySize+1)
		for _, bad := range []struct {
			name string
			key  []byte
		}{{"nil", nil}, {"empty", []byte{}}, {"MaxKeySize+1", long}} {
			check := func(tx kv.Tx, writes bool) {
				_, err := tx.Get(bucketA, bad.key)
				checkErr(t, "Get "+bad.name, err, kv.ErrInvalidKey)
				_, err = tx.GetMany(bucketA, [][]byte{[]byte("ok"), bad.key})
				checkErr(t, "GetMany "+bad.name, err, kv.ErrInvalidKey)
				if writes {
					checkErr(t, "Put "+bad.name, tx.Put(bucketA, bad.key, []byte("v")), kv.ErrInvalidKey)
					checkErr(t, "Delete "+bad.name, tx.Delete(bucketA, bad.key), kv.ErrInvalidKey)
				}
			}
			if err := st.Update(func(tx kv.Tx) error { check(tx, true); return nil }); err != nil {
				t.Fatalf("Update: %v", err)
			}
			if err := st.View(func(tx kv.Tx) error { check(tx, false); return nil }); err != nil {
				t.Fatalf("View: %v", err)
			}
		}
		checkEntries(t, "after refused Puts", dump(t, st, bucketA), nil)
	})

	t.Run("MaxKeySize", func(t *testing.T) {
		st := s.store(t)
		key := string(pattern(kv.MaxKeySize, 7))
		putAll(t, st, bucketA, entry{key, "v"})
		mustView(t, st, func(tx kv.Tx) error {
			checkGet(t, tx, bucketA, key, "v")
			return nil
		})
		checkEntries(t, "scan", dump(t, st, bucketA), []entry{{key, "v"}})
		mustUpdate(t, st, func(tx kv.Tx) error { return tx.Delete(bucketA, []byte(key)) })
		checkEntries(t, "after Delete", dump(t, st, bucketA), nil)
	})

	t.Run("ValueTooLarge", func(t *testing.T) {
		st := s.store(t)
		big := make([]byte, kv.MaxValueSize+1)
		mustUpdate(t, st, func(tx kv.Tx) error {
			checkErr(t, "Put of MaxValueSize+1 bytes", tx.Put(bucketA, []byte("k"), big), kv.ErrValueTooLarge)
			checkAbsent(t, tx, bucketA, "k")
			return nil
		})
		checkEntries(t, "after a refused Put", dump(t, st, bucketA), nil)
	})

	t.Run("TxUsableAfterError", func(t *testing.T) {
		// kv: errors from Tx methods do not end the transaction. The engine
		// relies on this for ErrNotFound above all.
		st := s.store(t)
		putAll(t, st, bucketA, entry{"existing", "v"})
		mustUpdate(t, st, func(tx kv.Tx) error {
			if err := tx.Put(bucketA, []byte("before"), []byte("1")); err != nil {
				return err
			}
			_, err := tx.Get(bucketA, []byte("absent"))
			checkErr(t, "Get absent", err, kv.ErrNotFound)
			checkErr(t, "Put empty key", tx.Put(bucketA, nil, []byte("x")), kv.ErrInvalidKey)
			checkErr(t, "Put huge value", tx.Put(bucketA, []byte("huge"), make([]byte, kv.MaxValueSize+1)), kv.ErrValueTooLarge)
			checkErr(t, "Put to missing bucket", tx.Put(missing, []byte("k"), []byte("x")), kv.ErrBucketNotFound)
			_, err = tx.Get(missing, []byte("k"))
			checkErr(t, "Get from missing bucket", err, kv.ErrBucketNotFound)
			checkGet(t, tx, bucketA, "before", "1")
			return tx.Put(bucketA, []byte("after"), []byte("2"))
		})
		checkEntries(t, "committed after errors", dump(t, st, bucketA),
			[]entry{{"after", "2"}, {"before", "1"}, {"existing", "v"}})

		mustView(t, st, func(tx kv.Tx) error {
			_, err := tx.Get(bucketA, []byte("absent"))
			checkErr(t, "View: Get absent", err, kv.ErrNotFound)
			checkErr(t, "View: Put", tx.Put(bucketA, []byte("k"), nil), kv.ErrReadOnly)
			checkGet(t, tx, bucketA, "existing", "v")
			return nil
		})
	})

	t.Run("ErrorsAreDistinct", func(t *testing.T) {
		// A backend wrapping one sentinel must not make it match another.
		st := s.store(t)
		mustUpdate(t, st, func(tx kv.Tx) error {
			_, err := tx.Get(bucketA, []byte("absent"))
			if errors.Is(err, kv.ErrBucketNotFound) || errors.Is(err, kv.ErrInvalidKey) {
				t.Errorf("ErrNotFound from Get also matches another sentinel: %v", err)
			}
			_, err = tx.Get(missing, []byte("k"))
			if errors.Is(err, kv.ErrNotFound) {
				t.Errorf("ErrBucketNotFound also matches ErrNotFound: %v", err)
			}
			_, err = tx.Get(bucketA, nil)
			if errors.Is(err, kv.ErrNotFound) {
				t.Errorf("ErrInvalidKey also matches ErrNotFound: %v", err)
			}
			return nil
		})
	})
}

func (s *suite) testGetMany(t *testing.T) {
	t.Run("OrderAndAbsent", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"a", "1"}, entry{"b", "2"}, entry{"c", "3"}, entry{"e", ""})
		keys := []string{"c", "zz", "a", "e", "b", "a", "0"}
		want := [][]byte{[]byte("3"), nil, []byte("1"), {}, []byte("2"), []byte("1"), nil}
		check := func(tx kv.Tx) error {
			in := make([][]byte, len(keys))
			for i, k := range keys {
				in[i] = []byte(k)
			}
			got, err := tx.GetMany(bucketA, in)
			if err != nil {
				return err
			}
			if len(got) != len(want) {
				t.Errorf("GetMany(%q) returned %d values, want %d", keys, len(got), len(want))
				return nil
			}
			for i := range want {
				if !sameBytes(got[i], want[i]) {
					t.Errorf("GetMany(%q)[%d] (key %q) = %q (nil: %v), want %q (nil: %v)",
						keys, i, keys[i], got[i], got[i] == nil, want[i], want[i] == nil)
				}
			}
			return nil
		}
		mustView(t, st, check)
		mustUpdate(t, st, check)
	})

	t.Run("NoKeys", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"a", "1"})
		mustView(t, st, func(tx kv.Tx) error {
			for _, in := range [][][]byte{nil, {}} {
				got, err := tx.GetMany(bucketA, in)
				if err != nil {
					return fmt.Errorf("GetMany of no keys: %w", err)
				}
				if len(got) != 0 {
					t.Errorf("GetMany of no keys returned %d values", len(got))
				}
			}
			return nil
		})
	})

	t.Run("AllAbsent", func(t *testing.T) {
		st := s.store(t)
		mustView(t, st, func(tx kv.Tx) error {
			got, err := tx.GetMany(bucketA, [][]byte{[]byte("x"), []byte("y")})
			if err != nil {
				return err
			}
			if len(got) != 2 || got[0] != nil || got[1] != nil {
				t.Errorf("GetMany on an empty bucket = %q, want [nil nil]", got)
			}
			return nil
		})
	})

	t.Run("Hundred", func(t *testing.T) {
		st := s.store(t)
		var entries []entry
		for i := 0; i < 200; i += 2 {
			entries = append(entries, entry{fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i)})
		}
		putAll(t, st, bucketA, entries...)
		mustView(t, st, func(tx kv.Tx) error {
			// Every key from k0199 down to k0000: the odd ones are absent.
			var in [][]byte
			for i := 199; i >= 0; i-- {
				in = append(in, fmt.Appendf(nil, "k%04d", i))
			}
			got, err := tx.GetMany(bucketA, in)
			if err != nil {
				return err
			}
			if len(got) != len(in) {
				t.Errorf("GetMany returned %d values, want %d", len(got), len(in))
				return nil
			}
			for j, i := 0, 199; i >= 0; j, i = j+1, i-1 {
				var want []byte
				if i%2 == 0 {
					want = fmt.Appendf(nil, "v%d", i)
				}
				if !sameBytes(got[j], want) {
					t.Errorf("GetMany[%d] (key %q) = %q, want %q", j, in[j], got[j], want)
				}
			}
			return nil
		})
	})
}

// testGetBatch runs when the store's transactions implement
// kv.BatchGetter: keys of several buckets in one call, in order, absent
// ones nil, the transaction's own writes and deletes seen.
func (s *suite) testGetBatch(t *testing.T) {
	st := s.store(t)
	putAll(t, st, bucketA, entry{"a", "1"}, entry{"k", "A"})
	putAll(t, st, bucketB, entry{"k", "B"}, entry{"e", ""})
	supported := true
	check := func(tx kv.Tx, own bool) error {
		bg, ok := tx.(kv.BatchGetter)
		if !ok {
			supported = false
			return nil
		}
		keys := []kv.BucketKey{{Bucket: bucketB, Key: []byte("k")}, {Bucket: bucketA, Key: []byte("k")}, {Bucket: bucketC, Key: []byte("k")}, {Bucket: bucketB, Key: []byte("e")}, {Bucket: bucketA, Key: []byte("a")}, {Bucket: bucketA, Key: []byte("new")}}
		want := [][]byte{[]byte("B"), []byte("A"), nil, {}, []byte("1"), nil}
		if own {
			if err := tx.Put(bucketA, []byte("new"), []byte("N")); err != nil {
				return err
			}
			if err := tx.Delete(bucketA, []byte("a")); err != nil {
				return err
			}
			want[5], want[4] = []byte("N"), nil
		}
		got, err := bg.GetBatch(keys)
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			t.Errorf("GetBatch returned %d values, want %d", len(got), len(want))
			return nil
		}
		for i := range want {
			if !sameBytes(got[i], want[i]) {
				t.Errorf("GetBatch[%d] (%s %q) = %q (nil: %v), want %q (nil: %v)", i, keys[i].Bucket, keys[i].Key, got[i], got[i] == nil, want[i], want[i] == nil)
			}
		}
		if _, err := bg.GetBatch([]kv.BucketKey{{Bucket: missing, Key: []byte("k")}}); !errors.Is(err, kv.ErrBucketNotFound) {
			t.Errorf("GetBatch of a missing bucket: %v, want ErrBucketNotFound", err)
		}
		return nil
	}
	mustView(t, st, func(tx kv.Tx) error { return check(tx, false) })
	if !supported {
		t.Skip("the store's transactions do not implement kv.BatchGetter")
	}
	if err := st.Update(func(tx kv.Tx) error {
		if err := check(tx, true); err != nil {
			return err
		}
		return errors.New("roll back")
	}); err == nil {
		t.Fatal("rolled-back Update returned nil")
	}
}

// testPrefetch runs when the store's transactions implement kv.Prefetcher:
// prefetched keys (present, absent, empty) read back as stored, through
// Get, GetMany and GetBatch, after other reads carried them; writes after
// the prefetch (Put, Delete, DeleteRange) win over what was prefetched;
// a DeleteRange carrying a prefetch of its own range reads it deleted;
// an unknown bucket or an empty key is refused.
func (s *suite) testPrefetch(t *testing.T) {
	st := s.store(t)
	putAll(t, st, bucketA, entry{"a", "1"}, entry{"b", "2"}, entry{"r1", "x"}, entry{"r2", "y"})
	putAll(t, st, bucketB, entry{"k", "B"}, entry{"e", ""})
	supported := true
	keys := []kv.BucketKey{{Bucket: bucketA, Key: []byte("a")}, {Bucket: bucketB, Key: []byte("k")}, {Bucket: bucketB, Key: []byte("e")}, {Bucket: bucketC, Key: []byte("none")}}
	check := func(tx kv.Tx, what string, want [][]byte) {
		t.Helper()
		for i, k := range keys {
			got, err := tx.Get(k.Bucket, k.Key)
			if errors.Is(err, kv.ErrNotFound) {
				got, err = nil, nil
			}
			if err != nil {
				t.Errorf("%s: Get(%s %q): %v", what, k.Bucket, k.Key, err)
			} else if !sameBytes(got, want[i]) {
				t.Errorf("%s: Get(%s %q) = %q (nil: %v), want %q (nil: %v)", what, k.Bucket, k.Key, got, got == nil, want[i], want[i] == nil)
			}
		}
		vs, err := tx.GetMany(bucketB, [][]byte{[]byte("e"), []byte("k")})
		if err != nil || len(vs) != 2 || !sameBytes(vs[0], want[2]) || !sameBytes(vs[1], want[1]) {
			t.Errorf("%s: GetMany = %q, %v; want [%q %q]", what, vs, err, want[2], want[1])
		}
	}
	stored := [][]byte{[]byte("1"), []byte("B"), {}, nil}
	mustView(t, st, func(tx kv.Tx) error {
		p, ok := tx.(kv.Prefetcher)
		if !ok {
			supported = false
			return nil
		}
		if err := p.Prefetch(keys); err != nil {
			return err
		}
		// Another read carries the prefetch.
		if v, err := tx.Get(bucketA, []byte("b")); err != nil || string(v) != "2" {
			t.Errorf("Get(b) after Prefetch = %q, %v", v, err)
		}
		check(tx, "View", stored)
		if err := p.Prefetch([]kv.BucketKey{{Bucket: missing, Key: []byte("k")}}); !errors.Is(err, kv.ErrBucketNotFound) {
			t.Errorf("Prefetch of a missing bucket: %v, want ErrBucketNotFound", err)
		}
		if err := p.Prefetch([]kv.BucketKey{{Bucket: bucketA, Key: nil}}); !errors.Is(err, kv.ErrInvalidKey) {
			t.Errorf("Prefetch of an empty key: %v, want ErrInvalidKey", err)
		}
		return nil
	})
	if !supported {
		t.Skip("the store's transactions do not implement kv.Prefetcher")
	}
	if err := st.Update(func(tx kv.Tx) error {
		p := tx.(kv.Prefetcher)
		if err := p.Prefetch(keys); err != nil {
			return err
		}
		// A Scan page carries it.
		n := 0
		if err := tx.Scan(bucketA, kv.Range{}, func(_, _ []byte) bool { n++; return true }); err != nil {
			return err
		}
		if n != 4 {
			t.Errorf("Scan saw %d entries, want 4", n)
		}
		check(tx, "Update", stored)
		if err := tx.Put(bucketA, []byte("a"), []byte("new")); err != nil {
			return err
		}
		if err := tx.Delete(bucketB, []byte("k")); err != nil {
			return err
		}
		if err := tx.Put(bucketC, []byte("none"), []byte("now")); err != nil {
			return err
		}
		check(tx, "Update after writes", [][]byte{[]byte("new"), nil, {}, []byte("now")})
		return errors.New("roll back")
	}); err == nil || err.Error() != "roll back" {
		t.Fatalf("Update: %v, want the function's error", err)
	}
	mustUpdate(t, st, func(tx kv.Tx) error {
		p := tx.(kv.Prefetcher)
		// Prefetched, then deleted by a range: absent.
		if err := p.Prefetch([]kv.BucketKey{{Bucket: bucketB, Key: []byte("e")}, {Bucket: bucketB, Key: []byte("k")}}); err != nil {
			return err
		}
		if _, err := tx.Get(bucketA, []byte("a")); err != nil {
			return err
		}
		if err := tx.DeleteRange(bucketB, []byte("e"), []byte("f")); err != nil {
			return err
		}
		if v, err := tx.Get(bucketB, []byte("e")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get(e) after DeleteRange = %q, %v; want ErrNotFound", v, err)
		}
		// Prefetched before a DeleteRange that carries the read.
		if err := p.Prefetch([]kv.BucketKey{{Bucket: bucketA, Key: []byte("r1")}, {Bucket: bucketA, Key: []byte("b")}}); err != nil {
			return err
		}
		if err := tx.DeleteRange(bucketA, []byte("r"), []byte("s")); err != nil {
			return err
		}
		if v, err := tx.Get(bucketA, []byte("r1")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get(r1) after DeleteRange = %q, %v; want ErrNotFound", v, err)
		}
		if v, err := tx.Get(bucketA, []byte("b")); err != nil || string(v) != "2" {
			t.Errorf("Get(b) = %q, %v; want 2", v, err)
		}
		if v, err := tx.Get(bucketB, []byte("k")); err != nil || string(v) != "B" {
			t.Errorf("Get(k) = %q, %v; want B", v, err)
		}
		return nil
	})
}
