//go:build !js

package boltkv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/replica-sync/replica/kv"
)

var (
	_ kv.Store       = (*Store)(nil)
	_ kv.BatchGetter = (*tx)(nil)
)

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// ErrLocked is returned by Open when another Store, in this process or
// another, holds the file and did not release it within Options.Timeout.
var ErrLocked = errors.New("boltkv: database file is locked by another Store or process")

var (
	// errTxDone is returned by Tx methods called after the transaction's
	// function returned.
	errTxDone = errors.New("boltkv: transaction used after its function returned")
	// errWriteWhileScanning is returned by a write to a bucket that a Scan of
	// the same transaction is iterating.
	errWriteWhileScanning = errors.New("boltkv: write to a bucket from inside a Scan of it")
)

// Options configures Open. A nil *Options means all zero values.
type Options struct {
	// Timeout is how long Open waits for another holder of the file to
	// release it before failing with ErrLocked. Zero or negative means
	// DefaultTimeout.
	Timeout time.Duration
	// NoSync skips fsync on commit. Commits are then not durable across an
	// operating-system crash or power loss, and the file may be corrupt
	// afterwards. For tests and benchmarks only; the default (false) syncs.
	NoSync bool
	// Mode is the permission of a newly created file. Zero means 0600.
	Mode os.FileMode
	// MaxSize caps the file, in bytes: a commit that would grow it further
	// fails with kv.ErrQuotaExceeded and writes nothing. Zero or negative
	// means no cap (only the disk's). Space freed by deletes is reused
	// before the file grows.
	MaxSize int
}

// Store is a kv.Store over one bbolt file. It is safe for concurrent use by
// multiple goroutines.
type Store struct {
	db   *bolt.DB
	path string
	// index maps bucket names to positions in names; read-only after Open.
	index map[string]int
	names [][]byte

	closed    atomic.Bool
	closeMu   sync.Mutex
	closeDone bool
}

// Open opens the bbolt file at path, creating it (mode Options.Mode) if it
// does not exist, and creates every bucket in buckets it lacks. Bucket names
// must be non-empty; duplicates are ignored. It fails with ErrLocked (and
// bbolt's ErrTimeout) if another Store holds the file for longer than
// Options.Timeout, and with the file system's or bbolt's error, wrapped with
// the path, if the file cannot be opened or is not a bbolt file.
func Open(path string, buckets []string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	db, err := bolt.Open(path, o.Mode, &bolt.Options{Timeout: o.Timeout, NoSync: o.NoSync, MaxSize: max(o.MaxSize, 0)})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltkv: open %q: %w (bbolt: %w after %v)", path, ErrLocked, err, o.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltkv: open %q: %w", path, mapErr(err))
	}
	s := &Store{db: db, path: path, index: make(map[string]int, len(buckets))}
	for _, b := range buckets {
		if _, dup := s.index[b]; dup {
			continue
		}
		s.index[b] = len(s.names)
		s.names = append(s.names, []byte(b))
	}
	err = db.Update(func(btx *bolt.Tx) error {
		for _, name := range s.names {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %q: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltkv: open %q: %w", path, mapErr(err))
	}
	return s, nil
}

// Path returns the file path the Store was opened with.
func (s *Store) Path() string { return s.path }

// Update runs fn in a bbolt read-write transaction and commits (and, unless
// Options.NoSync, fsyncs) it if fn returns nil. It returns kv.ErrClosed after
// Close, fn's error unchanged, or the commit's error wrapped as
// "boltkv: commit: ..." (kv.ErrQuotaExceeded when the disk is full). A panic
// in fn rolls back and continues.
func (s *Store) Update(fn func(kv.Tx) error) error {
	return s.run(true, fn)
}

// View runs fn in a bbolt read-only transaction. It returns kv.ErrClosed
// after Close, otherwise fn's error unchanged. A panic in fn continues after
// the transaction is released.
func (s *Store) View(fn func(kv.Tx) error) error {
	return s.run(false, fn)
}

func (s *Store) run(writable bool, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	btx, err := s.db.Begin(writable)
	if err != nil {
		return fmt.Errorf("boltkv: begin: %w", mapErr(err))
	}
	t := &tx{s: s, btx: btx, writable: writable}
	finished := false
	defer func() {
		t.done = true
		if !finished {
			_ = btx.Rollback()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if !writable {
		return nil
	}
	// Commit rolls back by itself when it fails.
	finished = true
	t.done = true
	if err := btx.Commit(); err != nil {
		return fmt.Errorf("boltkv: commit: %w", mapErr(err))
	}
	return nil
}

// Close waits for running transactions to end and closes the file. Later
// Updates and Views return kv.ErrClosed. The first call returns the error
// from closing the file, if any; later calls return nil.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeDone {
		return nil
	}
	s.closeDone = true
	s.closed.Store(true)
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltkv: close %q: %w", s.path, err)
	}
	return nil
}

// mapErr adds the kv sentinel matching a bbolt or system error, keeping the
// original in the chain; errors with no kv meaning come back as they are.
func mapErr(err error) error {
	var sentinel error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrBucketNotFound):
		sentinel = kv.ErrBucketNotFound
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		sentinel = kv.ErrClosed
	case errors.Is(err, berrors.ErrTxNotWritable), errors.Is(err, berrors.ErrDatabaseReadOnly):
		sentinel = kv.ErrReadOnly
	case errors.Is(err, berrors.ErrKeyRequired), errors.Is(err, berrors.ErrKeyTooLarge):
		sentinel = kv.ErrInvalidKey
	case errors.Is(err, berrors.ErrValueTooLarge):
		sentinel = kv.ErrValueTooLarge
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, berrors.ErrMaxSizeReached),
		// bbolt formats some file errors with %s, dropping the chain.
		strings.Contains(err.Error(), syscall.ENOSPC.Error()):
		sentinel = kv.ErrQuotaExceeded
	default:
		return err
	}
	if errors.Is(err, sentinel) {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// tx is a kv.Tx over a bbolt transaction. It is used by one goroutine at a
// time.
type tx struct {
	s        *Store
	btx      *bolt.Tx
	writable bool
	done     bool
	// buckets caches bbolt's bucket handles and a cursor for point reads,
	// indexed like Store.names; allocated on first use.
	buckets []bucketState
	// scanning counts, per bucket, the Scans in progress.
	scanning []int32
}

// bucketState is a bucket handle and the cursor Get and GetMany seek with
// (bbolt's Bucket.Get allocates a cursor per call; a reused one does not).
// Scans use cursors of their own, so reads from a Scan callback do not move
// the Scan's.
type bucketState struct {
	b      *bolt.Bucket
	lookup *bolt.Cursor
}

// emptyValue is returned for an existing empty value should bbolt hand back
// nil for one.
var emptyValue = []byte{}

// get returns the value of key in bucket i, or nil if it is absent.
func (t *tx) get(i int, key []byte) []byte {
	st := &t.buckets[i]
	if st.lookup == nil {
		st.lookup = st.b.Cursor()
	}
	k, v := st.lookup.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	if v == nil {
		return emptyValue
	}
	return v
}

// bucket returns the index and handle of the named bucket.
func (t *tx) bucket(name string) (int, *bolt.Bucket, error) {
	if t.done {
		return 0, nil, errTxDone
	}
	i, ok := t.s.index[name]
	if !ok {
		return 0, nil, fmt.Errorf("boltkv: bucket %q: %w", name, kv.ErrBucketNotFound)
	}
	if t.buckets == nil {
		t.buckets = make([]bucketState, len(t.s.names))
	}
	b := t.buckets[i].b
	if b == nil {
		b = t.btx.Bucket(t.s.names[i])
		if b == nil {
			// Open created it; only a file changed underneath gets here.
			return 0, nil, fmt.Errorf("boltkv: bucket %q missing from %q: %w", name, t.s.path, kv.ErrBucketNotFound)
		}
		t.buckets[i].b = b
	}
	return i, b, nil
}

// writeBucket is bucket for writes: it also refuses writes in a View and to
// a bucket being scanned.
func (t *tx) writeBucket(name string) (int, *bolt.Bucket, error) {
	i, b, err := t.bucket(name)
	if err != nil {
		return 0, nil, err
	}
	if !t.writable {
		return 0, nil, kv.ErrReadOnly
	}
	if t.scanning != nil && t.scanning[i] > 0 {
		return 0, nil, fmt.Errorf("bucket %q: %w", name, errWriteWhileScanning)
	}
	return i, b, nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > kv.MaxKeySize {
		return fmt.Errorf("boltkv: key of %d bytes (want 1 to %d): %w", len(key), kv.MaxKeySize, kv.ErrInvalidKey)
	}
	return nil
}

// Get returns the value of key, valid until the transaction ends, or
// kv.ErrNotFound.
func (t *tx) Get(bucket string, key []byte) ([]byte, error) {
	i, _, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	v := t.get(i, key)
	if v == nil {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// GetMany returns the values of keys in order, nil for absent ones. It
// validates every key before reading any.
func (t *tx) GetMany(bucket string, keys [][]byte) ([][]byte, error) {
	i, _, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	out := make([][]byte, len(keys))
	for j, k := range keys {
		out[j] = t.get(i, k)
	}
	return out, nil
}

// Scan visits the entries of r in order with a bbolt cursor.
func (t *tx) Scan(bucket string, r kv.Range, fn func(key, value []byte) bool) error {
	i, b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	start, end := r.Start, r.End
	if len(start) == 0 {
		start = nil
	}
	if end != nil && (len(end) == 0 || (start != nil && bytes.Compare(start, end) >= 0)) {
		return nil // empty range
	}
	if t.writable {
		if t.scanning == nil {
			t.scanning = make([]int32, len(t.s.names))
		}
		t.scanning[i]++
		defer func() { t.scanning[i]-- }()
	}
	c := b.Cursor()
	var k, v []byte
	switch {
	case !r.Reverse && start == nil:
		k, v = c.First()
	case !r.Reverse:
		k, v = c.Seek(start)
	case end == nil:
		k, v = c.Last()
	default:
		// The last key < end: Seek finds the first >= end, step back.
		if k, _ = c.Seek(end); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	for n := 0; k != nil; n++ {
		if r.Limit > 0 && n >= r.Limit {
			return nil
		}
		if r.Reverse {
			if start != nil && bytes.Compare(k, start) < 0 {
				return nil
			}
		} else if end != nil && bytes.Compare(k, end) >= 0 {
			return nil
		}
		if r.KeysOnly {
			v = nil
		}
		if !fn(k, v) {
			return nil
		}
		if r.Reverse {
			k, v = c.Prev()
		} else {
			k, v = c.Next()
		}
	}
	return nil
}

// Put stores key and a copy of value (bbolt would otherwise keep the
// caller's slice until commit).
func (t *tx) Put(bucket string, key, value []byte) error {
	_, b, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("boltkv: value of %d bytes (max %d): %w", len(value), kv.MaxValueSize, kv.ErrValueTooLarge)
	}
	v := make([]byte, len(value)) // non-nil even when empty
	copy(v, value)
	if err := b.Put(key, v); err != nil {
		return fmt.Errorf("boltkv: put in bucket %q: %w", bucket, mapErr(err))
	}
	return nil
}

// Delete removes key; an absent key is not an error.
func (t *tx) Delete(bucket string, key []byte) error {
	_, b, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("boltkv: delete in bucket %q: %w", bucket, mapErr(err))
	}
	return nil
}

// DeleteRange removes every key in [start, end). The whole bucket (nil, nil)
// is dropped and recreated, which frees its pages at once; otherwise keys are
// deleted one by one.
func (t *tx) DeleteRange(bucket string, start, end []byte) error {
	i, b, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	if len(start) == 0 {
		start = nil
	}
	if end != nil && (len(end) == 0 || (start != nil && bytes.Compare(start, end) >= 0)) {
		return nil
	}
	if start == nil && end == nil {
		name := t.s.names[i]
		if err := t.btx.DeleteBucket(name); err != nil {
			return fmt.Errorf("boltkv: clear bucket %q: %w", bucket, mapErr(err))
		}
		nb, err := t.btx.CreateBucket(name)
		if err != nil {
			return fmt.Errorf("boltkv: clear bucket %q: %w", bucket, mapErr(err))
		}
		t.buckets[i] = bucketState{b: nb}
		return nil
	}
	c := b.Cursor()
	first := func() []byte {
		if start == nil {
			k, _ := c.First()
			return k
		}
		k, _ := c.Seek(start)
		return k
	}
	// Cursor.Delete followed by Next can skip keys in bbolt; seek afresh
	// after every delete instead.
	for k := first(); k != nil && (end == nil || bytes.Compare(k, end) < 0); k = first() {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("boltkv: delete range in bucket %q: %w", bucket, mapErr(err))
		}
	}
	return nil
}

// GetBatch implements kv.BatchGetter: the values of keys of several buckets,
// in order, nil for absent ones (a GetMany per key; there is no round trip
// to save here, it exists so callers need no fallback).
func (t *tx) GetBatch(keys []kv.BucketKey) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		vals, err := t.GetMany(k.Bucket, [][]byte{k.Key})
		if err != nil {
			return nil, err
		}
		out[i] = vals[0]
	}
	return out, nil
}
