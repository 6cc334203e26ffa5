package memkv

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"

	"github.com/replica-sync/replica/kv"
)

var (
	_ kv.Store       = (*Store)(nil)
	_ kv.BatchGetter = (*tx)(nil)
)

// degree is the B-tree degree: nodes hold degree-1 to 2*degree-1 items. 32
// keeps trees shallow (three levels hold ~250,000 keys) while a copy-on-write
// node copy stays around 1 KiB (63 items of 16 bytes). 16 and 64 measured no
// better.
const degree = 32

// Errors specific to memkv. Both are programming errors; kv has no sentinel
// for them.
var (
	// errTxDone is returned by Tx methods called after the transaction's
	// function returned.
	errTxDone = errors.New("memkv: transaction used after its function returned")
	// errWriteWhileScanning is returned by a write to a bucket that a Scan of
	// the same transaction is iterating.
	errWriteWhileScanning = errors.New("memkv: write to a bucket from inside a Scan of it")
)

// item is one entry of a bucket: klen key bytes followed by vlen value bytes,
// read-only once inserted, starting at p. It is 16 bytes instead of the 48 of
// two slices, which makes the node copies of copy-on-write three times
// cheaper; the tree copies whole nodes of items on every first write under
// them in a transaction.
type item struct {
	p          *byte
	klen, vlen uint32
}

// probe returns an item for looking key up; it must not be inserted.
func probe(key []byte) item {
	return item{p: unsafe.SliceData(key), klen: uint32(len(key))}
}

func (it item) key() []byte { return unsafe.Slice(it.p, it.klen) }

// emptyValue is what value returns for an empty value: non-nil, and not a
// pointer one past the end of the entry's allocation.
var emptyValue = []byte{}

func (it item) value() []byte {
	if it.vlen == 0 {
		return emptyValue
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(it.p), it.klen)), it.vlen)
}

func lessItem(a, b item) bool { return bytes.Compare(a.key(), b.key()) < 0 }

type tree = btree.BTreeG[item]

// snapshot is one committed state of the Store: a tree per bucket, indexed
// like Store.index. Neither the slice nor the trees are modified after the
// snapshot is published.
type snapshot struct {
	trees []*tree
}

// Store is an in-memory kv.Store. It is safe for concurrent use by multiple
// goroutines. The zero value is not usable; call New.
type Store struct {
	// index maps a bucket name to its position in snapshot.trees. Read-only
	// after New.
	index map[string]int

	// root is the committed snapshot. Views load it; a committing Update
	// stores a new one while holding writer.
	root   atomic.Pointer[snapshot]
	writer sync.Mutex

	// state counts running transactions in its low bits and has closedBit
	// set once Close was called; drained is closed when both hold: closed,
	// and no transaction running.
	state   atomic.Int64
	drained chan struct{}
}

const closedBit = 1 << 62

// New returns an empty Store holding the given buckets. Bucket names may be
// any string, the empty one included; duplicates are ignored. The set of
// buckets cannot change afterwards: a transaction naming another bucket gets
// kv.ErrBucketNotFound.
func New(buckets ...string) *Store {
	s := &Store{index: make(map[string]int, len(buckets)), drained: make(chan struct{})}
	snap := &snapshot{}
	for _, b := range buckets {
		if _, dup := s.index[b]; dup {
			continue
		}
		s.index[b] = len(snap.trees)
		snap.trees = append(snap.trees, btree.NewG(degree, lessItem))
	}
	s.root.Store(snap)
	return s
}

// begin registers a transaction, or returns kv.ErrClosed.
func (s *Store) begin() error {
	for {
		v := s.state.Load()
		if v&closedBit != 0 {
			return kv.ErrClosed
		}
		if s.state.CompareAndSwap(v, v+1) {
			return nil
		}
	}
}

// end unregisters a transaction and wakes Close if it was the last one.
func (s *Store) end() {
	if s.state.Add(-1) == closedBit {
		close(s.drained)
	}
}

// Update runs fn in a read-write transaction and commits its writes if fn
// returns nil; see the package documentation and kv.Store. Updates run one
// at a time; Views run alongside. It returns kv.ErrClosed after Close,
// otherwise fn's error unchanged. A panic in fn rolls back and continues.
func (s *Store) Update(fn func(kv.Tx) error) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	s.writer.Lock()
	defer s.writer.Unlock()
	t := &tx{s: s, snap: s.root.Load(), writable: true}
	defer t.finish()
	if err := fn(t); err != nil {
		return err
	}
	t.commit()
	return nil
}

// View runs fn in a read-only transaction over the snapshot committed when
// View starts. It never waits for Updates. It returns kv.ErrClosed after
// Close, otherwise fn's error unchanged. A panic in fn continues.
func (s *Store) View(fn func(kv.Tx) error) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	t := &tx{s: s, snap: s.root.Load()}
	defer t.finish()
	return fn(t)
}

// Close waits for running transactions to finish, then makes later Updates
// and Views return kv.ErrClosed and drops the data. It always returns nil
// and may be called any number of times, from any goroutine (but not from
// inside a transaction function, where it would wait for itself).
func (s *Store) Close() error {
	old := s.state.Or(closedBit)
	if old == 0 {
		close(s.drained)
	}
	<-s.drained
	// Views hold their own snapshot pointer; dropping ours lets the GC take
	// the trees once the last of them is gone.
	s.root.Store(&snapshot{})
	return nil
}

// tx is a kv.Tx over a Store. It is used by one goroutine at a time.
type tx struct {
	s        *Store
	snap     *snapshot
	writable bool
	done     bool

	// work holds the clones this transaction writes to, indexed like
	// snap.trees; nil until the first write (and always nil in a View).
	work []*tree
	// scanning counts, per bucket, the Scans in progress; nil until the
	// first Scan in a writable transaction.
	scanning []int32

	// lastName and lastIdx cache the most recent bucket lookup.
	lastName string
	lastIdx  int
	lastOK   bool
}

// finish marks the transaction over; later method calls fail.
func (t *tx) finish() { t.done = true }

// commit publishes the clones as the Store's new snapshot.
func (t *tx) commit() {
	if t.work == nil {
		return
	}
	// work becomes the new snapshot's slice: the transaction is over and
	// nothing writes to it again.
	for i, tr := range t.snap.trees {
		if t.work[i] == nil {
			t.work[i] = tr
		}
	}
	t.s.root.Store(&snapshot{trees: t.work})
}

// bucket resolves a bucket name to its index.
func (t *tx) bucket(name string) (int, error) {
	if t.done {
		return 0, errTxDone
	}
	if t.lastOK && name == t.lastName {
		return t.lastIdx, nil
	}
	i, ok := t.s.index[name]
	if !ok {
		return 0, fmt.Errorf("memkv: bucket %q: %w", name, kv.ErrBucketNotFound)
	}
	t.lastName, t.lastIdx, t.lastOK = name, i, true
	return i, nil
}

// read returns the tree that reads of bucket i see.
func (t *tx) read(i int) *tree {
	if t.work != nil && t.work[i] != nil {
		return t.work[i]
	}
	return t.snap.trees[i]
}

// write returns the tree writes to bucket name go to, cloning it on first
// use.
func (t *tx) write(name string) (*tree, error) {
	i, err := t.bucket(name)
	if err != nil {
		return nil, err
	}
	if !t.writable {
		return nil, kv.ErrReadOnly
	}
	if t.scanning != nil && t.scanning[i] > 0 {
		return nil, fmt.Errorf("bucket %q: %w", name, errWriteWhileScanning)
	}
	if t.work == nil {
		t.work = make([]*tree, len(t.snap.trees))
	}
	w := t.work[i]
	if w == nil {
		w = t.snap.trees[i].Clone()
		t.work[i] = w
	}
	return w, nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > kv.MaxKeySize {
		return fmt.Errorf("memkv: key of %d bytes (want 1 to %d): %w", len(key), kv.MaxKeySize, kv.ErrInvalidKey)
	}
	return nil
}

// Get returns the stored value of key (read-only; see the package
// documentation), or kv.ErrNotFound. An empty value is a non-nil empty
// slice.
func (t *tx) Get(bucket string, key []byte) ([]byte, error) {
	i, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	it, ok := t.read(i).Get(probe(key))
	if !ok {
		return nil, kv.ErrNotFound
	}
	return it.value(), nil
}

// GetMany returns the stored values of keys in order, nil for absent ones.
// It validates every key before reading any.
func (t *tx) GetMany(bucket string, keys [][]byte) ([][]byte, error) {
	i, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	tr := t.read(i)
	out := make([][]byte, len(keys))
	for j, k := range keys {
		if it, ok := tr.Get(probe(k)); ok {
			out[j] = it.value()
		}
	}
	return out, nil
}

// Scan visits the entries of r in order; see kv.Tx.Scan and kv.Range.
func (t *tx) Scan(bucket string, r kv.Range, fn func(key, value []byte) bool) error {
	i, err := t.bucket(bucket)
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
			t.scanning = make([]int32, len(t.snap.trees))
		}
		t.scanning[i]++
		defer func() { t.scanning[i]-- }()
	}
	tr := t.read(i)
	n := 0
	visit := func(it item) bool {
		var v []byte
		if !r.KeysOnly {
			v = it.value()
		}
		n++
		return fn(it.key(), v) && (r.Limit <= 0 || n < r.Limit)
	}
	if !r.Reverse {
		switch {
		case start == nil && end == nil:
			tr.Ascend(visit)
		case end == nil:
			tr.AscendGreaterOrEqual(probe(start), visit)
		case start == nil:
			tr.AscendLessThan(probe(end), visit)
		default:
			tr.AscendRange(probe(start), probe(end), visit)
		}
		return nil
	}
	// Descending: btree's bounds are (greaterThan, lessOrEqual], ours
	// [start, end); skip end itself and stop below start by hand.
	rvisit := visit
	if start != nil {
		rvisit = func(it item) bool {
			return bytes.Compare(it.key(), start) >= 0 && visit(it)
		}
	}
	if end == nil {
		tr.Descend(rvisit)
	} else {
		tr.DescendLessOrEqual(probe(end), func(it item) bool {
			return bytes.Equal(it.key(), end) || rvisit(it)
		})
	}
	return nil
}

// Put stores a copy of key and value in bucket.
func (t *tx) Put(bucket string, key, value []byte) error {
	w, err := t.write(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("memkv: value of %d bytes (max %d): %w", len(value), kv.MaxValueSize, kv.ErrValueTooLarge)
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	w.ReplaceOrInsert(item{p: unsafe.SliceData(buf), klen: uint32(len(key)), vlen: uint32(len(value))})
	return nil
}

// Delete removes key from bucket; an absent key is not an error.
func (t *tx) Delete(bucket string, key []byte) error {
	w, err := t.write(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	w.Delete(probe(key))
	return nil
}

// DeleteRange removes every key in [start, end) from bucket; nil bounds as
// in kv.Range.
func (t *tx) DeleteRange(bucket string, start, end []byte) error {
	w, err := t.write(bucket)
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
		w.Clear(false)
		return nil
	}
	var dead []item
	collect := func(it item) bool {
		dead = append(dead, it)
		return true
	}
	switch {
	case end == nil:
		w.AscendGreaterOrEqual(probe(start), collect)
	case start == nil:
		w.AscendLessThan(probe(end), collect)
	default:
		w.AscendRange(probe(start), probe(end), collect)
	}
	for _, it := range dead {
		w.Delete(it)
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
