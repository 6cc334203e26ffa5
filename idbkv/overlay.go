//go:build js && wasm

package idbkv

import (
	"bytes"
	"sort"

	"github.com/google/btree"
)

// overlay holds the writes of one bucket in one Update until commit, so that
// the transaction reads its own writes without issuing a request per write
// (see "The auto-commit hazard" in the package documentation).
//
// Two structures describe the bucket as the transaction sees it:
//   - points: keys Put or Deleted, each with its latest value or a tombstone.
//     A point always wins over IndexedDB and over spans.
//   - spans: the DeleteRange calls, merged into sorted, disjoint half-open
//     intervals. A DeleteRange drops the points it covers, so any point inside
//     a span was written after that span and is live (or a tombstone).
//
// A key not in points and not in a span reads through to IndexedDB. At commit
// the spans are deleted first, then the points are put or deleted, which
// leaves IndexedDB exactly as the overlay describes it.
//
// Keys written in ascending order (a bulk insert's rows, a snapshot's)
// skip the tree: a point whose key sorts after every key written so far
// joins tail, a sorted list, and the tree takes the tail's points only
// when a write lands below its end or an operation needs the tree
// (settle). Every key in tail sorts after every key in points.
type overlay struct {
	points *btree.BTreeG[point]
	tail   []point
	// top is the greatest key ever written (nil: none): an upper bound of
	// the keys in points and tail, so that a key above it can be
	// appended to tail.
	top   []byte
	spans []span
}

// point is one written key: its value (owned by the overlay) or, if del is
// set, a tombstone.
type point struct {
	key, val []byte
	del      bool
}

// span is the half-open interval lo <= key < hi; nil lo is unbounded below,
// nil hi unbounded above.
type span struct {
	lo, hi []byte
}

func newOverlay() *overlay {
	return &overlay{points: btree.NewG(16, func(a, b point) bool { return bytes.Compare(a.key, b.key) < 0 })}
}

// put records key=val; key and val are copied.
func (o *overlay) put(key, val []byte) {
	o.write(point{key: clone(key), val: clone(val)})
}

// del records a tombstone for key; key is copied.
func (o *overlay) del(key []byte) {
	o.write(point{key: clone(key), del: true})
}

// write records p (its key and value owned by the overlay): appended to
// tail when its key sorts after every key written, else into the tree.
func (o *overlay) write(p point) {
	if o.top == nil || bytes.Compare(p.key, o.top) > 0 {
		o.tail = append(o.tail, p)
		o.top = p.key
		return
	}
	o.settle()
	o.points.ReplaceOrInsert(p)
}

// settle moves the tail's points into the tree.
func (o *overlay) settle() {
	if o == nil || len(o.tail) == 0 {
		return
	}
	for _, p := range o.tail {
		o.points.ReplaceOrInsert(p)
	}
	clear(o.tail)
	o.tail = o.tail[:0]
}

// ascend calls fn for every point in key order until fn returns false.
func (o *overlay) ascend(fn func(p point) bool) {
	more := true
	o.points.Ascend(func(p point) bool {
		more = fn(p)
		return more
	})
	for i := 0; more && i < len(o.tail); i++ {
		more = fn(o.tail[i])
	}
}

// deleteRange records the deletion of lo <= key < hi (nil bounds unbounded)
// and drops the points it covers.
func (o *overlay) deleteRange(lo, hi []byte) {
	if !nonEmpty(lo, hi) {
		return
	}
	o.settle()
	var covered []point
	visit := func(p point) bool {
		if hi != nil && bytes.Compare(p.key, hi) >= 0 {
			return false
		}
		covered = append(covered, p)
		return true
	}
	if lo == nil {
		o.points.Ascend(visit)
	} else {
		o.points.AscendGreaterOrEqual(point{key: lo}, visit)
	}
	for _, p := range covered {
		o.points.Delete(p)
	}
	o.addSpan(span{lo: clone(lo), hi: clone(hi)})
}

// lookup reports what the overlay knows of key: found is false when the read
// must go to IndexedDB; otherwise deleted tells whether the key is absent and
// val is its value.
func (o *overlay) lookup(key []byte) (val []byte, deleted, found bool) {
	if n := len(o.tail); n > 0 && bytes.Compare(key, o.tail[0].key) >= 0 {
		// Only the tail can hold it: the tree's keys sort before it.
		i := sort.Search(n, func(i int) bool { return bytes.Compare(o.tail[i].key, key) >= 0 })
		if i < n && bytes.Equal(o.tail[i].key, key) {
			p := o.tail[i]
			return p.val, p.del, true
		}
	} else if p, ok := o.points.Get(point{key: key}); ok {
		return p.val, p.del, true
	}
	if o.inSpan(key) {
		return nil, true, true
	}
	return nil, false, false
}

// inSpan reports whether key lies in a deleted span.
func (o *overlay) inSpan(key []byte) bool {
	for _, s := range o.spans {
		if s.lo != nil && bytes.Compare(key, s.lo) < 0 {
			return false // spans are sorted: no later one can hold key
		}
		if s.hi == nil || bytes.Compare(key, s.hi) < 0 {
			return true
		}
	}
	return false
}

// addSpan merges s into the sorted, disjoint list of spans, joining spans
// that overlap or touch.
func (o *overlay) addSpan(s span) {
	out := make([]span, 0, len(o.spans)+1)
	placed := false
	for _, x := range o.spans {
		switch {
		case !placed && x.hi != nil && s.lo != nil && bytes.Compare(x.hi, s.lo) < 0:
			out = append(out, x) // x ends before s begins
		case !placed && (s.hi == nil || x.lo == nil || bytes.Compare(x.lo, s.hi) <= 0):
			// x overlaps or touches s: absorb it.
			if x.lo == nil || (s.lo != nil && bytes.Compare(x.lo, s.lo) < 0) {
				s.lo = x.lo
			}
			if s.hi != nil && (x.hi == nil || bytes.Compare(x.hi, s.hi) > 0) {
				s.hi = x.hi
			}
		default:
			if !placed {
				out = append(out, s)
				placed = true
			}
			out = append(out, x)
		}
	}
	if !placed {
		out = append(out, s)
	}
	o.spans = out
}

// live returns the parts of lo <= key < hi not covered by a deleted span, in
// ascending order: the intervals whose keys must still be read from IndexedDB.
func (o *overlay) live(lo, hi []byte) []span {
	if o == nil || len(o.spans) == 0 {
		if !nonEmpty(lo, hi) {
			return nil
		}
		return []span{{lo, hi}}
	}
	var out []span
	cur := lo
	for _, s := range o.spans {
		if !nonEmpty(cur, s.hi) {
			continue // s ends at or before cur
		}
		if !nonEmpty(s.lo, hi) {
			break // s begins at or after hi
		}
		if s.lo != nil && (cur == nil || bytes.Compare(cur, s.lo) < 0) {
			out = append(out, span{cur, s.lo})
		}
		if s.hi == nil {
			return out
		}
		cur = s.hi
	}
	if nonEmpty(cur, hi) {
		out = append(out, span{cur, hi})
	}
	return out
}

// first returns the smallest point with lo <= key < hi (tombstones
// included), or ok false.
func (o *overlay) first(lo, hi []byte) (p point, ok bool) {
	return o.after(lo, true, hi)
}

// after returns the smallest point with key > k (or >= k if inclusive; nil k
// is unbounded below) and key < hi.
func (o *overlay) after(k []byte, inclusive bool, hi []byte) (p point, ok bool) {
	if o == nil {
		return point{}, false
	}
	o.settle()
	visit := func(x point) bool {
		if !inclusive && k != nil && bytes.Equal(x.key, k) {
			return true
		}
		if hi == nil || bytes.Compare(x.key, hi) < 0 {
			p, ok = x, true
		}
		return false
	}
	if k == nil {
		o.points.Ascend(visit)
	} else {
		o.points.AscendGreaterOrEqual(point{key: k}, visit)
	}
	return p, ok
}

// before returns the largest point with key < k (nil k is unbounded above)
// and key >= lo (nil lo is unbounded below).
func (o *overlay) before(k, lo []byte) (p point, ok bool) {
	if o == nil {
		return point{}, false
	}
	o.settle()
	visit := func(x point) bool {
		if k != nil && bytes.Equal(x.key, k) {
			return true
		}
		if lo == nil || bytes.Compare(x.key, lo) >= 0 {
			p, ok = x, true
		}
		return false
	}
	if k == nil {
		o.points.Descend(visit)
	} else {
		o.points.DescendLessOrEqual(point{key: k}, visit)
	}
	return p, ok
}

// nonEmpty reports whether lo < hi, nil bounds being unbounded: whether the
// half-open interval [lo, hi) can hold a key, and whether IndexedDB accepts it
// as a key range.
//
//go:noinline
func nonEmpty(lo, hi []byte) bool {
	return lo == nil || hi == nil || bytes.Compare(lo, hi) < 0
}

// clone copies b; nil stays nil and an empty slice stays empty but non-nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
