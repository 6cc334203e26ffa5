package kvtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// testError is an error type the suite returns from transaction functions to
// check that Update and View hand back exactly that error.
type testError struct{ code int }

func (e *testError) Error() string { return fmt.Sprintf("kvtest: test error %d", e.code) }

// panicValue is what the suite panics with inside transaction functions.
type panicValue struct{ msg string }

func (s *suite) testTx(t *testing.T) {
	committed := []entry{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}

	t.Run("ReadYourWrites", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		want := []entry{{"a", "1"}, {"a0", "new"}, {"b", "20"}, {"d", "4"}, {"e", "5"}}
		check := func(tx kv.Tx, when string) {
			checkGet(t, tx, bucketA, "b", "20")
			checkGet(t, tx, bucketA, "a0", "new")
			checkGet(t, tx, bucketA, "e", "5")
			checkAbsent(t, tx, bucketA, "c")
			many, err := tx.GetMany(bucketA, [][]byte{
				[]byte("a"), []byte("b"), []byte("c"), []byte("e"), []byte("zz"), []byte("a0"),
			})
			if err != nil {
				t.Errorf("%s: GetMany: %v", when, err)
			} else {
				wantMany := [][]byte{[]byte("1"), []byte("20"), nil, []byte("5"), nil, []byte("new")}
				for i := range wantMany {
					if !sameBytes(many[i], wantMany[i]) {
						t.Errorf("%s: GetMany[%d] = %q, want %q", when, i, many[i], wantMany[i])
					}
				}
			}
			got, err := scan(tx, bucketA, kv.Range{})
			if err != nil {
				t.Errorf("%s: Scan: %v", when, err)
			}
			checkEntries(t, when+": forward Scan", got, want)
			got, err = scan(tx, bucketA, kv.Range{Reverse: true})
			if err != nil {
				t.Errorf("%s: Scan: %v", when, err)
			}
			checkEntries(t, when+": reverse Scan", got, reversed(want))
			got, err = scan(tx, bucketA, kv.Range{Start: []byte("a0"), End: []byte("e"), Limit: 2})
			if err != nil {
				t.Errorf("%s: Scan: %v", when, err)
			}
			checkEntries(t, when+": bounded Scan with Limit", got, want[1:3])
			got, err = scan(tx, bucketA, kv.Range{Start: []byte("b"), End: []byte("e"), Reverse: true, Limit: 2})
			if err != nil {
				t.Errorf("%s: Scan: %v", when, err)
			}
			// The deleted "c" must not use up one of the two slots.
			checkEntries(t, when+": bounded reverse Scan with Limit", got, []entry{{"d", "4"}, {"b", "20"}})
		}
		mustUpdate(t, st, func(tx kv.Tx) error {
			// Shadow a committed value, hide a committed key, add keys
			// after the end and between committed keys.
			for _, e := range []entry{{"b", "20"}, {"e", "5"}, {"a0", "new"}} {
				if err := tx.Put(bucketA, []byte(e.key), []byte(e.value)); err != nil {
					return err
				}
			}
			if err := tx.Delete(bucketA, []byte("c")); err != nil {
				return err
			}
			check(tx, "inside Update")
			return nil
		})
		mustView(t, st, func(tx kv.Tx) error {
			check(tx, "after commit")
			return nil
		})
	})

	t.Run("OverwriteAndDeleteInOneTx", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		mustUpdate(t, st, func(tx kv.Tx) error {
			steps := []struct {
				del        bool
				key, value string
			}{
				{false, "x", "1"}, {false, "x", "2"}, {true, "x", ""}, // put, put, delete: absent
				{true, "a", ""}, {false, "a", "back"}, // delete committed, put again
				{false, "b", "tmp"}, {true, "b", ""}, // overwrite committed, then delete
				{true, "y", ""}, {false, "y", "1"}, // delete absent, then put
			}
			for _, st := range steps {
				var err error
				if st.del {
					err = tx.Delete(bucketA, []byte(st.key))
				} else {
					err = tx.Put(bucketA, []byte(st.key), []byte(st.value))
				}
				if err != nil {
					return err
				}
			}
			checkAbsent(t, tx, bucketA, "x")
			checkAbsent(t, tx, bucketA, "b")
			checkGet(t, tx, bucketA, "a", "back")
			checkGet(t, tx, bucketA, "y", "1")
			return nil
		})
		checkEntries(t, "after commit", dump(t, st, bucketA),
			[]entry{{"a", "back"}, {"c", "3"}, {"d", "4"}, {"y", "1"}})
	})

	t.Run("RollbackOnError", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		errSentinel := errors.New("kvtest: sentinel")
		wrapped := fmt.Errorf("kvtest: context: %w", errSentinel)
		typed := &testError{code: 42}
		for _, want := range []error{errSentinel, wrapped, typed} {
			err := st.Update(func(tx kv.Tx) error {
				if err := tx.Put(bucketA, []byte("b"), []byte("changed")); err != nil {
					return err
				}
				if err := tx.Put(bucketA, []byte("new"), []byte("x")); err != nil {
					return err
				}
				if err := tx.Delete(bucketA, []byte("c")); err != nil {
					return err
				}
				if err := tx.DeleteRange(bucketA, []byte("d"), nil); err != nil {
					return err
				}
				return want
			})
			if err != want {
				t.Errorf("Update returned %v (%T), want the identical error fn returned: %v (%T)", err, err, want, want)
			}
			if !errors.Is(err, errSentinel) && want != typed {
				t.Errorf("errors.Is(%v, sentinel) = false", err)
			}
			var te *testError
			if want == typed && (!errors.As(err, &te) || te != typed) {
				t.Errorf("errors.As did not give back the *testError fn returned: %v", err)
			}
			checkEntries(t, fmt.Sprintf("after rollback with %v", want), dump(t, st, bucketA), committed)
		}
	})

	t.Run("ViewReturnsFnError", func(t *testing.T) {
		st := s.store(t)
		want := &testError{code: 7}
		err := st.View(func(tx kv.Tx) error { return want })
		if err != want {
			t.Errorf("View returned %v, want the identical error fn returned", err)
		}
	})

	t.Run("AtomicAcrossBuckets", func(t *testing.T) {
		st := s.store(t)
		buckets := []string{bucketA, bucketB, bucketC}
		writeAll := func(tx kv.Tx, tag string) error {
			for i, b := range buckets {
				for j := range 3 {
					k := fmt.Appendf(nil, "%s-%d", tag, j)
					if err := tx.Put(b, k, fmt.Appendf(nil, "%s/%d", b, i)); err != nil {
						return err
					}
				}
			}
			return nil
		}
		errAbort := errors.New("kvtest: abort")
		err := st.Update(func(tx kv.Tx) error {
			if err := writeAll(tx, "aborted"); err != nil {
				return err
			}
			return errAbort
		})
		if err != errAbort {
			t.Fatalf("Update = %v, want %v", err, errAbort)
		}
		for _, b := range buckets {
			checkEntries(t, b+" after an aborted Update", dump(t, st, b), nil)
		}
		mustUpdate(t, st, func(tx kv.Tx) error { return writeAll(tx, "kept") })
		for i, b := range buckets {
			want := []entry{}
			for j := range 3 {
				want = append(want, entry{fmt.Sprintf("kept-%d", j), fmt.Sprintf("%s/%d", b, i)})
			}
			checkEntries(t, b+" after a committed Update", dump(t, st, b), want)
		}
	})

	t.Run("PanicRollsBackAndRepanics", func(t *testing.T) {
		// kv: a panic in fn rolls the transaction back and continues out of
		// Update with the same value; the store stays usable.
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		pv := &panicValue{"kvtest: deliberate panic in Update"}
		recovered := func() (r any) {
			defer func() { r = recover() }()
			err := st.Update(func(tx kv.Tx) error {
				for _, b := range []string{bucketA, bucketB, bucketC} {
					if err := tx.Put(b, []byte("panic"), []byte("written before the panic")); err != nil {
						return err
					}
				}
				if err := tx.Delete(bucketA, []byte("a")); err != nil {
					return err
				}
				panic(pv)
			})
			t.Errorf("Update returned (%v) instead of panicking", err)
			return nil
		}()
		if recovered != pv {
			t.Errorf("recovered %v, want the value fn panicked with", recovered)
		}
		checkEntries(t, bucketA+" after the panic", dump(t, st, bucketA), committed)
		checkEntries(t, bucketB+" after the panic", dump(t, st, bucketB), nil)
		// The store must still take writes (no lock left held).
		putAll(t, st, bucketB, entry{"after", "panic"})
		checkEntries(t, bucketB+" after a later Update", dump(t, st, bucketB), []entry{{"after", "panic"}})
	})

	t.Run("PanicInView", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		pv := &panicValue{"kvtest: deliberate panic in View"}
		recovered := func() (r any) {
			defer func() { r = recover() }()
			err := st.View(func(tx kv.Tx) error {
				if _, err := tx.Get(bucketA, []byte("a")); err != nil {
					return err
				}
				panic(pv)
			})
			t.Errorf("View returned (%v) instead of panicking", err)
			return nil
		}()
		if recovered != pv {
			t.Errorf("recovered %v, want the value fn panicked with", recovered)
		}
		// Readers and writers still work.
		putAll(t, st, bucketA, entry{"e", "5"})
		checkEntries(t, "after a panic in View", dump(t, st, bucketA), append(committed[:4:4], entry{"e", "5"}))
	})

	t.Run("ViewSeesCommitsNotRollbacks", func(t *testing.T) {
		st := s.store(t)
		for i := range 10 {
			want := fmt.Sprintf("v%d", i)
			err := st.Update(func(tx kv.Tx) error {
				if err := tx.Put(bucketA, []byte("k"), []byte(want)); err != nil {
					return err
				}
				if i%2 == 1 {
					return errors.New("kvtest: roll back odd rounds")
				}
				return nil
			})
			if (err != nil) != (i%2 == 1) {
				t.Fatalf("round %d: Update = %v", i, err)
			}
			if i%2 == 1 {
				want = fmt.Sprintf("v%d", i-1)
			}
			mustView(t, st, func(tx kv.Tx) error {
				checkGet(t, tx, bucketA, "k", want)
				return nil
			})
		}
	})

	t.Run("ScanMayReadAndWriteOtherBuckets", func(t *testing.T) {
		// kv: reads, and writes to other buckets, are allowed from a Scan
		// callback.
		st := s.store(t)
		putAll(t, st, bucketA, committed...)
		putAll(t, st, bucketB, entry{"b", "beta-b"})
		mustUpdate(t, st, func(tx kv.Tx) error {
			var inner error
			err := tx.Scan(bucketA, kv.Range{}, func(k, v []byte) bool {
				if _, err := tx.Get(bucketA, k); err != nil {
					inner = fmt.Errorf("Get(%q) inside Scan: %w", k, err)
					return false
				}
				if _, err := tx.Get(bucketB, k); err != nil && !errors.Is(err, kv.ErrNotFound) {
					inner = fmt.Errorf("Get(beta, %q) inside Scan: %w", k, err)
					return false
				}
				if err := tx.Put(bucketC, k, append([]byte("copy of "), v...)); err != nil {
					inner = fmt.Errorf("Put(gamma, %q) inside Scan: %w", k, err)
					return false
				}
				return true
			})
			if err != nil {
				return err
			}
			return inner
		})
		var want []entry
		for _, e := range committed {
			want = append(want, entry{e.key, "copy of " + e.value})
		}
		checkEntries(t, "bucket written from a Scan callback", dump(t, st, bucketC), want)
	})
}
