//go:build !js

package boltkv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/kvtest"
)

// opener returns a kvtest.Opener making a new file in a fresh temp dir.
func opener(opts *Options) kvtest.Opener {
	return func(t testing.TB, buckets []string) kv.Store {
		s, err := Open(filepath.Join(t.TempDir(), "kv.db"), buckets, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// The suite runs with the default, durable settings: the fsyncs are part of
// what is being tested.
func TestConformance(t *testing.T) { kvtest.Run(t, opener(nil)) }

func BenchmarkBoltkv(b *testing.B) { kvtest.Bench(b, opener(nil)) }

// BenchmarkBoltkvNoSync shows what the fsyncs cost.
func BenchmarkBoltkvNoSync(b *testing.B) { kvtest.Bench(b, opener(&Options{NoSync: true})) }

func put(t *testing.T, s *Store, bucket, key, value string) {
	t.Helper()
	if err := s.Update(func(tx kv.Tx) error { return tx.Put(bucket, []byte(key), []byte(value)) }); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func get(t *testing.T, s *Store, bucket, key string) (string, error) {
	t.Helper()
	var out string
	err := s.View(func(tx kv.Tx) error {
		v, err := tx.Get(bucket, []byte(key))
		out = string(v)
		return err
	})
	return out, err
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	s, err := Open(path, []string{"a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "k", "v")
	put(t, s, "b", "empty", "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen with one bucket dropped from the list and one added.
	s, err = Open(path, []string{"a", "c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := get(t, s, "a", "k"); err != nil || v != "v" {
		t.Errorf("after reopening, a/k = %q, %v; want v", v, err)
	}
	if _, err := get(t, s, "b", "empty"); !errors.Is(err, kv.ErrBucketNotFound) {
		t.Errorf("bucket left out of the list: %v, want ErrBucketNotFound", err)
	}
	if _, err := get(t, s, "c", "k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("new bucket: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The bucket that was left out still holds its data.
	s, err = Open(path, []string{"b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.View(func(tx kv.Tx) error {
		v, err := tx.Get("b", []byte("empty"))
		if err == nil && (v == nil || len(v) != 0) {
			t.Errorf("empty value after reopening = %q (nil: %v)", v, v == nil)
		}
		return err
	})
	if err != nil {
		t.Errorf("b/empty after reopening: %v", err)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	s, err := Open(path, []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "k", "v")

	begin := time.Now()
	s2, err := Open(path, []string{"a"}, &Options{Timeout: 200 * time.Millisecond})
	took := time.Since(begin)
	if err == nil {
		s2.Close()
		t.Fatal("second Open of a file held by a Store succeeded")
	}
	if !errors.Is(err, ErrLocked) || !errors.Is(err, berrors.ErrTimeout) {
		t.Errorf("second Open: %v; want ErrLocked wrapping bbolt's ErrTimeout", err)
	}
	// bbolt gives up one 50ms retry interval early.
	if took < 100*time.Millisecond || took > 10*time.Second {
		t.Errorf("second Open failed after %v, want about the 200ms timeout", took)
	}
	t.Logf("second Open: %v (after %v)", err, took.Round(time.Millisecond))

	// The first Store is unaffected, and once it closes the file opens.
	if v, err := get(t, s, "a", "k"); err != nil || v != "v" {
		t.Errorf("first Store after the failed Open: %q, %v", v, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(path, []string{"a"}, &Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	s3.Close()
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing-dir", "kv.db"), []string{"a"}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open in a missing directory: %v, want fs.ErrNotExist", err)
	}
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(junk, []string{"a"}, nil); err == nil {
		s.Close()
		t.Error("Open of a file that is not a bbolt database succeeded")
	}
	if s, err := Open(filepath.Join(dir, "kv.db"), []string{"a", ""}, nil); err == nil {
		s.Close()
		t.Error("Open with an empty bucket name succeeded")
	}
	// The failed Open released the file.
	s, err := Open(filepath.Join(dir, "kv.db"), []string{"a"}, &Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after a failed Open: %v", err)
	}
	s.Close()
}

func TestFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode, want os.FileMode
	}{{0, 0o600}, {0o640, 0o640}} {
		path := filepath.Join(dir, c.want.String()+".db")
		s, err := Open(path, []string{"a"}, &Options{Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm() &^ 0o022; got != c.want&^0o022 {
			t.Errorf("Mode %v: file has %v, want %v", c.mode, fi.Mode().Perm(), c.want)
		}
	}
}

func TestMapErr(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "/x/kv.db", Err: syscall.ENOSPC}
	for _, c := range []struct {
		in   error
		want error
	}{
		{enospc, kv.ErrQuotaExceeded},
		{errors.New("file resize error: " + syscall.ENOSPC.Error()), kv.ErrQuotaExceeded},
		{berrors.ErrMaxSizeReached, kv.ErrQuotaExceeded},
		{berrors.ErrBucketNotFound, kv.ErrBucketNotFound},
		{berrors.ErrDatabaseNotOpen, kv.ErrClosed},
		{berrors.ErrTxNotWritable, kv.ErrReadOnly},
		{berrors.ErrKeyRequired, kv.ErrInvalidKey},
		{berrors.ErrKeyTooLarge, kv.ErrInvalidKey},
		{berrors.ErrValueTooLarge, kv.ErrValueTooLarge},
	} {
		got := mapErr(c.in)
		if !errors.Is(got, c.want) || !errors.Is(got, c.in) {
			t.Errorf("mapErr(%v) = %v; want it to match both %v and the original", c.in, got, c.want)
		}
	}
	if !errors.Is(mapErr(enospc), syscall.ENOSPC) {
		t.Error("mapErr dropped the errno")
	}
	other := errors.New("something else")
	if got := mapErr(other); got != other {
		t.Errorf("mapErr(unrelated) = %v, want it unchanged", got)
	}
	if mapErr(nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

func TestTxUsedAfterReturn(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "kv.db"), []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "k", "v")
	var leaked kv.Tx
	if err := s.View(func(tx kv.Tx) error {
		leaked = tx
		_, err := tx.Get("a", []byte("k")) // caches the bucket handle
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Without the check this would read bbolt's memory after the
	// transaction released it.
	if _, err := leaked.Get("a", []byte("k")); !errors.Is(err, errTxDone) {
		t.Errorf("Get on a finished Tx = %v, want errTxDone", err)
	}
	if err := leaked.Put("a", []byte("k"), nil); !errors.Is(err, errTxDone) {
		t.Errorf("Put on a finished Tx = %v, want errTxDone", err)
	}
}

func TestWriteWhileScanningSameBucket(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "kv.db"), []string{"a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "1", "")
	err = s.Update(func(tx kv.Tx) error {
		var putErr error
		if err := tx.Scan("a", kv.Range{}, func(k, _ []byte) bool {
			putErr = tx.Put("a", []byte("2"), nil)
			return true
		}); err != nil {
			return err
		}
		if !errors.Is(putErr, errWriteWhileScanning) {
			t.Errorf("Put to the scanned bucket = %v, want errWriteWhileScanning", putErr)
		}
		return tx.Put("a", []byte("3"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, s, "a", "2"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("refused write landed: %v", err)
	}
	if _, err := get(t, s, "a", "3"); err != nil {
		t.Errorf("write after the Scan: %v", err)
	}
}

// TestClearBucketThenWrite covers DeleteRange(nil, nil), which drops and
// recreates the bbolt bucket: the handle the transaction caches must follow.
func TestClearBucketThenWrite(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "kv.db"), []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "old", "x")
	err = s.Update(func(tx kv.Tx) error {
		if _, err := tx.Get("a", []byte("old")); err != nil {
			return err
		}
		if err := tx.DeleteRange("a", nil, nil); err != nil {
			return err
		}
		if _, err := tx.Get("a", []byte("old")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("Get after clearing: %v", err)
		}
		return tx.Put("a", []byte("new"), []byte("y"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := get(t, s, "a", "new"); err != nil || v != "y" {
		t.Errorf("a/new = %q, %v", v, err)
	}
	if _, err := get(t, s, "a", "old"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("a/old after clearing: %v", err)
	}
}

// TestCommitFailsPastMaxSize covers a failing commit: the error says so and
// carries kv.ErrQuotaExceeded, nothing of the transaction is written, and the
// store keeps working.
func TestCommitFailsPastMaxSize(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "kv.db"), []string{"a", "b"}, &Options{MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, "a", "small", "v")
	err = s.Update(func(tx kv.Tx) error {
		if err := tx.Put("b", []byte("also"), []byte("x")); err != nil {
			return err
		}
		return tx.Put("a", []byte("big"), make([]byte, 2<<20))
	})
	if !errors.Is(err, kv.ErrQuotaExceeded) || !errors.Is(err, berrors.ErrMaxSizeReached) {
		t.Fatalf("Update growing the file past MaxSize = %v; want ErrQuotaExceeded wrapping bbolt's ErrMaxSizeReached", err)
	}
	if !strings.HasPrefix(err.Error(), "boltkv: commit: ") {
		t.Errorf("commit error %q does not say it is one", err)
	}
	if _, err := get(t, s, "a", "big"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("a/big after the failed commit: %v", err)
	}
	if _, err := get(t, s, "b", "also"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("b/also after the failed commit: %v", err)
	}
	put(t, s, "a", "after", "w")
	if v, err := get(t, s, "a", "small"); err != nil || v != "v" {
		t.Errorf("a/small = %q, %v", v, err)
	}
}
