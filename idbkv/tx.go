//go:build js && wasm

package idbkv

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall/js"

	"github.com/replica-sync/replica/kv"
)

// Scan page sizes, in entries: the first page of an unlimited Scan is small
// (many scans stop early), later ones grow 4x up to maxPage. A Scan with a
// Limit asks for what is left of the limit, up to maxPage. Variables so that
// tests can make pages tiny.
var (
	firstPage = 128
	maxPage   = 8192
)

// Tx is a kv.Tx over one IndexedDB transaction. It is not safe for concurrent
// use and must not be used after the function it was passed to returns.
type Tx struct {
	s        *Store
	id       int
	writable bool
	js       js.Value   // the driver's handle of the IndexedDB transaction
	ov       []*overlay // per bucket: buffered writes, nil until written
	scanning []int      // per bucket: Scans in progress
	ended    bool       // the function returned
	failed   error      // the transaction failed: every later call returns this

	// One asynchronous operation at a time: the goroutine running the
	// transaction sets waiting, issues requests and receives on reply; the
	// JS callback delivers one reply when waiting is set.
	waiting atomic.Bool
	reply   chan reply
	// suspended: Suspend aborted the IndexedDB transaction; its failure
	// is ErrSuspended.
	suspended atomic.Bool

	// Speculation (speculate.go): spec is set while the first operation
	// of a speculating Update may still come; expects holds what a
	// speculative read assumed, reads what GetBatch read (for the cache).
	spec    bool
	expects []assumed
	reads   []cread
}

// reply is the outcome of one asynchronous operation, delivered by a JS
// callback: ok with a payload of n bytes, or a JS error value, or a Go error.
type reply struct {
	ok    bool
	stale bool // the helper found a speculative read out of date

	val js.Value
	n   int
	err error
}

// deliver hands r to the goroutine waiting on t, if it is waiting. It never
// blocks: it runs inside JS callbacks.
func (t *Tx) deliver(r reply) {
	if t.waiting.CompareAndSwap(true, false) {
		t.reply <- r
	}
}

// wait receives the reply to the operation op and converts failures; a
// failure of the transaction makes every later call fail the same way.
func (t *Tx) wait(op string) (js.Value, int, error) {
	r := <-t.reply
	switch {
	case !r.ok && t.suspended.Load():
		t.failed = fmt.Errorf("idbkv: %s: %w", op, ErrSuspended)
	case r.err != nil:
		t.failed = r.err
	case r.stale:
		t.failed = errStale
	case !r.ok:
		gone := t.s.goneError()
		if gone == nil && t.s.closedUnderneath(r.val) {
			gone = t.s.goneError()
		}
		t.failed = domError(op, r.val, gone)
		if errors.Is(t.failed, ErrStorage) {
			// The browser closes the connection after an IO error, and
			// may never answer the transactions still waiting: fail them
			// now, and every later one.
			t.s.fail("the browser's storage failed ("+t.failed.Error()+")", ErrStorage)
		}
	default:
		return r.val, r.n, nil
	}
	return js.Value{}, 0, t.failed
}

// issue runs fn, which issues requests, with t waiting for their reply. What
// fn throws becomes the error (and fails the transaction).
func (t *Tx) issue(op string, fn func()) error {
	t.waiting.Store(true)
	if thrown, ok := catch(fn); !ok {
		t.waiting.Store(false)
		t.failed = domError(op, thrown, t.s.goneError())
		return t.failed
	}
	return nil
}

func (t *Tx) bucket(name string) (int, error) {
	t.spec = false // any operation ends the chance to speculate
	if t.ended {
		return 0, errUsedAfterEnd
	}
	si, ok := t.s.buckets[name]
	if !ok {
		return 0, fmt.Errorf("idbkv: bucket %q: %w", name, kv.ErrBucketNotFound)
	}
	return si, nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > kv.MaxKeySize {
		return fmt.Errorf("idbkv: key of %d bytes: %w", len(key), kv.ErrInvalidKey)
	}
	return nil
}

// writeTo checks that t may write to bucket and returns its overlay.
func (t *Tx) writeTo(op, bucket string) (*overlay, error) {
	if t.ended {
		return nil, errUsedAfterEnd
	}
	if !t.writable {
		return nil, fmt.Errorf("idbkv: %s: %w", op, kv.ErrReadOnly)
	}
	si, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	if t.scanning[si] > 0 {
		return nil, fmt.Errorf("idbkv: %s to bucket %q inside a Scan of it (collect the keys and write after Scan returns)", op, bucket)
	}
	if t.failed != nil {
		return nil, t.failed
	}
	if t.ov[si] == nil {
		t.ov[si] = newOverlay()
	}
	return t.ov[si], nil
}

// Get returns the value of key: the transaction's own write if it made one,
// else the stored value (one IndexedDB request, awaited). The slice is owned
// by the transaction. Errors: kv.ErrNotFound, kv.ErrInvalidKey,
// kv.ErrBucketNotFound, kv.ErrTxInactive.
func (t *Tx) Get(bucket string, key []byte) ([]byte, error) {
	vals, err := t.getMany("get", bucket, [][]byte{key})
	if err != nil {
		return nil, err
	}
	if vals[0] == nil {
		return nil, kv.ErrNotFound
	}
	return vals[0], nil
}

// GetMany returns the values of keys in order, nil for absent ones. Keys the
// transaction wrote are answered from its buffer; all others are read with
// one batch of IndexedDB requests and one await. The slices are owned by the
// transaction.
func (t *Tx) GetMany(bucket string, keys [][]byte) ([][]byte, error) {
	return t.getMany("getMany", bucket, keys)
}

// GetBatch returns the values of keys of several buckets in order, nil for
// absent ones, with one batch of IndexedDB requests and one await (it
// implements kv.BatchGetter). Ownership and errors as for GetMany.
func (t *Tx) GetBatch(keys []kv.BucketKey) ([][]byte, error) {
	spec := t.spec
	sis := make([]int, len(keys))
	ks := make([][]byte, len(keys))
	for i, k := range keys {
		si, err := t.bucket(k.Bucket)
		if err != nil {
			return nil, err
		}
		sis[i], ks[i] = si, k.Key
	}
	if t.s.cache == nil || !t.writable {
		return t.read("getBatch", sis, ks)
	}
	if spec && t.failed == nil && len(ks) > 0 {
		for _, k := range ks {
			if err := checkKey(k); err != nil {
				return nil, err
			}
		}
		if vals, ok := t.speculate(sis, ks); ok {
			return vals, nil
		}
	}
	vals, err := t.read("getBatch", sis, ks)
	if err == nil {
		t.noteReads(sis, ks, vals)
	}
	return vals, err
}

func (t *Tx) getMany(op, bucket string, keys [][]byte) ([][]byte, error) {
	si, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	sis := make([]int, len(keys))
	for i := range sis {
		sis[i] = si
	}
	return t.read(op, sis, keys)
}

// read answers keys[i] of bucket sis[i] from the transaction's own writes
// where it made one, and reads the rest in one batch.
func (t *Tx) read(op string, sis []int, keys [][]byte) ([][]byte, error) {
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	if t.failed != nil {
		return nil, t.failed
	}
	out := make([][]byte, len(keys))
	miss, missSI := keys, sis
	var at []int // indexes into out of the keys in miss, when some were answered here
	if t.hasOverlay(sis) {
		miss, missSI = nil, nil
		for i, k := range keys {
			var v []byte
			var deleted, found bool
			if o := t.ov[sis[i]]; o != nil {
				v, deleted, found = o.lookup(k)
			}
			switch {
			case !found:
				miss = append(miss, k)
				missSI = append(missSI, sis[i])
				at = append(at, i)
			case !deleted:
				out[i] = v
			}
		}
	}
	if len(miss) == 0 {
		return out, nil
	}
	vals, err := t.s.drv.getMany(t, missSI, miss, op)
	if err != nil {
		return nil, err
	}
	if at == nil {
		return vals, nil
	}
	for j, i := range at {
		out[i] = vals[j]
	}
	return out, nil
}

// hasOverlay reports whether any of the buckets has buffered writes.
func (t *Tx) hasOverlay(sis []int) bool {
	for _, si := range sis {
		if t.ov[si] != nil {
			return true
		}
	}
	return false
}

// Put buffers key=value until commit; both are copied. Errors:
// kv.ErrReadOnly, kv.ErrInvalidKey, kv.ErrValueTooLarge, kv.ErrBucketNotFound.
func (t *Tx) Put(bucket string, key, value []byte) error {
	o, err := t.writeTo("put", bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("idbkv: value of %d bytes: %w", len(value), kv.ErrValueTooLarge)
	}
	if value == nil {
		value = []byte{}
	}
	o.put(key, value)
	return nil
}

// Delete buffers the deletion of key until commit.
func (t *Tx) Delete(bucket string, key []byte) error {
	o, err := t.writeTo("delete", bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	o.del(key)
	return nil
}

// DeleteRange buffers the deletion of start <= key < end until commit, when
// it becomes one IndexedDB delete over a key range (or clear). A nil or empty
// start is unbounded; a nil end is unbounded; start >= end deletes nothing.
func (t *Tx) DeleteRange(bucket string, start, end []byte) error {
	o, err := t.writeTo("deleteRange", bucket)
	if err != nil {
		return err
	}
	if len(start) == 0 {
		start = nil
	}
	if end != nil && len(end) == 0 {
		return nil
	}
	o.deleteRange(start, end)
	return nil
}

// Scan visits the entries of r in order, merging the transaction's buffered
// writes with IndexedDB pages read with getAllRecords (or getAllKeys+getAll)
// over a key range, one request batch and one await per page. Key and value
// slices are owned by the transaction; with r.KeysOnly values are nil. fn may
// read (Get, GetMany, Scan) but must not write to the scanned bucket.
func (t *Tx) Scan(bucket string, r kv.Range, fn func(key, value []byte) bool) error {
	si, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if t.failed != nil {
		return t.failed
	}
	lo, hi := r.Start, r.End
	if len(lo) == 0 {
		lo = nil
	}
	if (hi != nil && len(hi) == 0) || !nonEmpty(lo, hi) {
		return nil
	}
	o := t.ov[si]
	ivs := o.live(lo, hi)
	if r.Reverse {
		slices.Reverse(ivs)
	}
	base := &baseIter{t: t, si: si, ivs: ivs, rev: r.Reverse, keysOnly: r.KeysOnly}
	t.scanning[si]++
	defer func() { t.scanning[si]-- }()

	var p point // next overlay point in scan order
	var pOK bool
	if r.Reverse {
		p, pOK = o.before(hi, lo)
	} else {
		p, pOK = o.first(lo, hi)
	}
	emitted := 0
	for {
		if r.Limit > 0 {
			base.want = r.Limit - emitted
		}
		bk, bv, bOK, err := base.peek()
		if err != nil {
			return err
		}
		if !bOK && !pOK {
			return nil
		}
		var k, v []byte
		takePoint := pOK
		if pOK && bOK {
			c := bytes.Compare(p.key, bk)
			if r.Reverse {
				c = -c
			}
			takePoint = c <= 0
			if c == 0 {
				base.pos++ // the transaction's write shadows the stored entry
			}
		}
		if takePoint {
			cur := p
			if r.Reverse {
				p, pOK = o.before(cur.key, lo)
			} else {
				p, pOK = o.after(cur.key, false, hi)
			}
			if cur.del {
				continue
			}
			k, v = cur.key, cur.val
		} else {
			k, v = bk, bv
			base.pos++
		}
		if r.KeysOnly {
			v = nil
		}
		emitted++
		if !fn(k, v) || (r.Limit > 0 && emitted >= r.Limit) {
			return nil
		}
	}
}

// entry is one key/value read from IndexedDB.
type entry struct{ key, val []byte }

// pageQuery asks for at most count entries of one bucket with
// lo < key (lo <= key unless loOpen) and key < hi, nil bounds unbounded.
type pageQuery struct {
	lo       []byte
	loOpen   bool
	hi       []byte
	count    int
	rev      bool
	keysOnly bool
}

// baseIter walks the entries stored in IndexedDB over a list of intervals
// (the scanned range minus the transaction's deleted spans), page by page.
type baseIter struct {
	t        *Tx
	si       int
	ivs      []span // intervals not started yet, in scan order
	rev      bool
	keysOnly bool
	want     int // entries the Scan may still emit (0: no limit)

	lo, hi []byte // remaining part of the current interval
	loOpen bool
	inIv   bool // the current interval may hold more entries
	size   int  // size of the last unlimited page
	page   []entry
	pos    int
}

// peek returns the next stored entry without consuming it (advance with
// pos++), fetching pages as needed; ok is false at the end.
func (b *baseIter) peek() (key, val []byte, ok bool, err error) {
	for b.pos >= len(b.page) {
		if !b.inIv {
			if len(b.ivs) == 0 {
				return nil, nil, false, nil
			}
			b.lo, b.hi, b.loOpen, b.inIv = b.ivs[0].lo, b.ivs[0].hi, false, true
			b.ivs = b.ivs[1:]
		}
		if !nonEmpty(b.lo, b.hi) {
			b.inIv = false
			continue
		}
		n := b.nextCount()
		page, err := b.t.s.drv.scan(b.t, b.si, pageQuery{lo: b.lo, loOpen: b.loOpen, hi: b.hi, count: n, rev: b.rev, keysOnly: b.keysOnly})
		if err != nil {
			return nil, nil, false, err
		}
		b.page, b.pos = page, 0
		if len(page) < n {
			b.inIv = false
		} else if last := page[len(page)-1].key; b.rev {
			b.hi = last
		} else {
			b.lo, b.loOpen = last, true
		}
	}
	e := b.page[b.pos]
	return e.key, e.val, true, nil
}

func (b *baseIter) nextCount() int {
	if b.want > 0 {
		return min(b.want, maxPage)
	}
	if b.size == 0 {
		b.size = firstPage
	} else {
		b.size = min(b.size*4, maxPage)
	}
	return b.size
}

// write is one buffered write, as issued at commit.
type write struct {
	op       byte // opPut, opDelete or opDeleteRange
	si       int
	key, val []byte // opPut, opDelete
	lo, hi   []byte // opDeleteRange; both nil clears the object store
}

const (
	opPut         = 1
	opDelete      = 2
	opDeleteRange = 3
	opExpect      = 4 // helper only: a value a speculative read assumed
)

// eachWrite calls fn for every buffered write in commit order: per bucket,
// the deleted spans first, then the points in key order (tombstones inside a
// deleted span are skipped: the span deletes them).
func (t *Tx) eachWrite(fn func(w write)) {
	for si, o := range t.ov {
		if o == nil {
			continue
		}
		for _, s := range o.spans {
			fn(write{op: opDeleteRange, si: si, lo: s.lo, hi: s.hi})
		}
		o.ascend(func(p point) bool {
			switch {
			case !p.del:
				fn(write{op: opPut, si: si, key: p.key, val: p.val})
			case !o.inSpan(p.key):
				fn(write{op: opDelete, si: si, key: p.key})
			}
			return true
		})
	}
}
