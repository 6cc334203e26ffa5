package memkv

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/kvtest"
)

func open(t testing.TB, buckets []string) kv.Store { return New(buckets...) }

func TestConformance(t *testing.T) { kvtest.Run(t, open) }

func BenchmarkMemkv(b *testing.B) { kvtest.Bench(b, open) }

func mustUpdate(t *testing.T, s *Store, fn func(kv.Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func get(t *testing.T, s *Store, bucket, key string) string {
	t.Helper()
	var out string
	err := s.View(func(tx kv.Tx) error {
		v, err := tx.Get(bucket, []byte(key))
		out = string(v)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return "<absent>"
	}
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", bucket, key, err)
	}
	return out
}

// TestViewNeverWaitsForUpdate pins down what the conformance suite leaves
// open: in memkv an Update commits while a View is open, and the View keeps
// its snapshot.
func TestViewNeverWaitsForUpdate(t *testing.T) {
	s := New("b")
	defer s.Close()
	mustUpdate(t, s, func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("old")) })
	err := s.View(func(tx kv.Tx) error {
		done := make(chan error, 1)
		go func() {
			done <- s.Update(func(tx kv.Tx) error {
				if err := tx.Put("b", []byte("k"), []byte("new")); err != nil {
					return err
				}
				return tx.Put("b", []byte("k2"), []byte("new"))
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-time.After(10 * time.Second):
			return errors.New("Update blocked behind an open View")
		}
		if v, err := tx.Get("b", []byte("k")); err != nil || string(v) != "old" {
			t.Errorf("View's Get after a concurrent commit = %q, %v; want old", v, err)
		}
		if _, err := tx.Get("b", []byte("k2")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("View sees a key committed after it began: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "b", "k"); got != "new" {
		t.Errorf("after the View, k = %q, want new", got)
	}
}

// TestOldSnapshotSurvivesManyCommits keeps one View open across commits that
// overwrite, delete and clear its bucket, checking copy-on-write never
// touches nodes the View shares.
func TestOldSnapshotSurvivesManyCommits(t *testing.T) {
	s := New("b")
	defer s.Close()
	const n = 5000
	key := func(i int) []byte { return fmt.Appendf(nil, "%05d", i) }
	mustUpdate(t, s, func(tx kv.Tx) error {
		for i := range n {
			if err := tx.Put("b", key(i), key(i)); err != nil {
				return err
			}
		}
		return nil
	})
	err := s.View(func(old kv.Tx) error {
		for round := range 20 {
			mustUpdate(t, s, func(tx kv.Tx) error {
				for i := round; i < n; i += 7 {
					if err := tx.Put("b", key(i), []byte("overwritten")); err != nil {
						return err
					}
				}
				if err := tx.DeleteRange("b", key(round*100), key(round*100+50)); err != nil {
					return err
				}
				if round == 19 {
					return tx.DeleteRange("b", nil, nil)
				}
				return nil
			})
		}
		i := 0
		if err := old.Scan("b", kv.Range{}, func(k, v []byte) bool {
			if string(k) != string(key(i)) || string(v) != string(key(i)) {
				t.Errorf("old snapshot entry %d = %q=%q", i, k, v)
				return false
			}
			i++
			return true
		}); err != nil {
			return err
		}
		if i != n {
			t.Errorf("old snapshot has %d entries, want %d", i, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "b", "00001"); got != "<absent>" {
		t.Errorf("after clearing the bucket, 00001 = %q", got)
	}
}

// TestRolledBackCloneIsDropped checks a rolled-back Update's clone does not
// leak into the next Update, which clones the committed tree afresh.
func TestRolledBackCloneIsDropped(t *testing.T) {
	s := New("b")
	defer s.Close()
	mustUpdate(t, s, func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("committed")) })
	errAbort := errors.New("abort")
	if err := s.Update(func(tx kv.Tx) error {
		if err := tx.Put("b", []byte("k"), []byte("aborted")); err != nil {
			return err
		}
		return errAbort
	}); err != errAbort {
		t.Fatalf("Update = %v", err)
	}
	mustUpdate(t, s, func(tx kv.Tx) error {
		v, err := tx.Get("b", []byte("k"))
		if err != nil || string(v) != "committed" {
			t.Errorf("next Update reads %q, %v; want committed", v, err)
		}
		return tx.Put("b", []byte("k2"), []byte("x"))
	})
	if got := get(t, s, "b", "k"); got != "committed" {
		t.Errorf("k = %q, want committed", got)
	}
}

func TestTxUsedAfterReturn(t *testing.T) {
	s := New("b")
	defer s.Close()
	var leaked kv.Tx
	mustUpdate(t, s, func(tx kv.Tx) error {
		leaked = tx
		return tx.Put("b", []byte("k"), []byte("v"))
	})
	if err := leaked.Put("b", []byte("k"), []byte("late")); !errors.Is(err, errTxDone) {
		t.Errorf("Put on a finished Tx = %v, want errTxDone", err)
	}
	if err := leaked.DeleteRange("b", nil, nil); !errors.Is(err, errTxDone) {
		t.Errorf("DeleteRange on a finished Tx = %v, want errTxDone", err)
	}
	if _, err := leaked.Get("b", []byte("k")); !errors.Is(err, errTxDone) {
		t.Errorf("Get on a finished Tx = %v, want errTxDone", err)
	}
	if got := get(t, s, "b", "k"); got != "v" {
		t.Errorf("k = %q after writes through a finished Tx, want v", got)
	}
}

func TestWriteWhileScanningSameBucket(t *testing.T) {
	s := New("a", "b")
	defer s.Close()
	mustUpdate(t, s, func(tx kv.Tx) error {
		for _, k := range []string{"1", "2", "3"} {
			if err := tx.Put("a", []byte(k), nil); err != nil {
				return err
			}
		}
		return nil
	})
	mustUpdate(t, s, func(tx kv.Tx) error {
		var putErr, otherErr error
		if err := tx.Scan("a", kv.Range{}, func(k, _ []byte) bool {
			putErr = tx.Put("a", append(k, 'x'), nil)
			otherErr = tx.Put("b", k, nil)
			return false
		}); err != nil {
			return err
		}
		if !errors.Is(putErr, errWriteWhileScanning) {
			t.Errorf("Put to the scanned bucket = %v, want errWriteWhileScanning", putErr)
		}
		if otherErr != nil {
			t.Errorf("Put to another bucket during Scan = %v", otherErr)
		}
		// After the Scan, writing is fine again.
		return tx.Put("a", []byte("4"), nil)
	})
	if got := get(t, s, "a", "1x"); got != "<absent>" {
		t.Errorf("refused write landed: %q", got)
	}
	if got := get(t, s, "a", "4"); got != "" {
		t.Errorf("write after the Scan: %q", got)
	}
}

func TestDuplicateBucketNames(t *testing.T) {
	s := New("a", "a", "")
	defer s.Close()
	mustUpdate(t, s, func(tx kv.Tx) error {
		if err := tx.Put("a", []byte("k"), []byte("1")); err != nil {
			return err
		}
		return tx.Put("", []byte("k"), []byte("2"))
	})
	if a, e := get(t, s, "a", "k"), get(t, s, "", "k"); a != "1" || e != "2" {
		t.Errorf("buckets a and \"\" hold %q and %q, want 1 and 2", a, e)
	}
}
