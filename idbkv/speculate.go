//go:build js && wasm

package idbkv

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Counters of speculation outcomes since the program started, read by
// tests: Updates whose first GetBatch was answered from the cache
// (statSpec), of those the ones whose commit check found a changed value
// and reran for real (statStale), and reruns after fn failed on an assumed
// value (statErrRerun).
var statSpec, statStale, statErrRerun atomic.Int64

// Speculative first reads (see "Speculative reads" in the package
// documentation). A Store opened with Speculate keeps a bounded cache of the
// values that its Updates read with GetBatch and then committed. An Update
// whose first operation is a GetBatch with at least one cached key answers
// it from the cache (uncached keys read as absent) without awaiting
// IndexedDB; the values it assumed go to the helper with the commit, which
// reads them again inside the same IndexedDB transaction before the writes
// and commits only if every one is unchanged. Otherwise the transaction is
// aborted (nothing written) and the Update runs again without speculation.

// cacheMax bounds the cache in bytes of keys and values; past it, entries
// are dropped until it holds cacheLow.
const (
	cacheMax = 4 << 20
	cacheLow = 3 << 20
)

// errStale: a value the transaction assumed from the cache was not the
// stored one when the helper read it back; the transaction was aborted.
var errStale = errors.New("idbkv: speculative read was stale")

// cval is a cached value: the bytes (never modified) or absent.
type cval struct {
	val    []byte
	absent bool
}

// readCache maps bucket index + key to the value last read or committed.
type readCache struct {
	mu    sync.Mutex
	m     map[string]cval
	bytes int
}

func newReadCache() *readCache { return &readCache{m: map[string]cval{}} }

func cacheKey(si int, key []byte) string {
	b := make([]byte, 0, 1+len(key))
	b = append(b, byte(si))
	return string(append(b, key...))
}

// setLocked records v for k; the caller holds c.mu.
func (c *readCache) setLocked(k string, v cval) {
	if old, ok := c.m[k]; ok {
		c.bytes -= len(k) + len(old.val)
	}
	c.m[k] = v
	c.bytes += len(k) + len(v.val)
}

// forget drops the entries for the keys in as.
func (c *readCache) forget(as []assumed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range as {
		k := cacheKey(a.si, a.key)
		if v, ok := c.m[k]; ok {
			delete(c.m, k)
			c.bytes -= len(k) + len(v.val)
		}
	}
}

func (c *readCache) clear() {
	c.mu.Lock()
	c.m, c.bytes = map[string]cval{}, 0
	c.mu.Unlock()
}

// assumed is a value a speculative read assumed: checked at commit.
type assumed struct {
	si       int
	key, val []byte // val nil: assumed absent
}

// cread is a key an Update read with GetBatch and the value it got.
type cread struct {
	si       int
	key, val []byte // val nil: absent
}

// speculate answers a GetBatch from the cache if it holds at least one of
// the keys; keys it lacks read as absent. ok is false when it holds none.
func (t *Tx) speculate(sis []int, keys [][]byte) (vals [][]byte, ok bool) {
	c := t.s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := false
	var buf []byte
	for i, k := range keys {
		buf = append(append(buf[:0], byte(sis[i])), k...)
		if _, in := c.m[string(buf)]; in {
			hit = true
			break
		}
	}
	if !hit {
		return nil, false
	}
	statSpec.Add(1)
	vals = make([][]byte, len(keys))
	for i, k := range keys {
		buf = append(append(buf[:0], byte(sis[i])), k...)
		v := c.m[string(buf)]
		key := clone(k)
		vals[i] = v.val // nil when absent or not cached
		t.expects = append(t.expects, assumed{si: sis[i], key: key, val: v.val})
		t.reads = append(t.reads, cread{si: sis[i], key: key, val: v.val})
	}
	return vals, true
}

// noteReads records what a real GetBatch read, for the cache.
func (t *Tx) noteReads(sis []int, keys, vals [][]byte) {
	for i, k := range keys {
		t.reads = append(t.reads, cread{si: sis[i], key: clone(k), val: clone(vals[i])})
	}
}

// committed brings the cache up to date after t committed: the keys it read
// with GetBatch take their values as of the commit, and its writes replace
// or drop the entries they touch.
func (c *readCache) committed(t *Tx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(t.reads) == 0 && len(c.m) == 0 {
		return
	}
	for _, r := range t.reads {
		c.setLocked(cacheKey(r.si, r.key), cval{val: r.val, absent: r.val == nil})
	}
	var buf []byte
	t.eachWrite(func(w write) {
		if w.op == opPut || w.op == opDelete {
			buf = append(append(buf[:0], byte(w.si)), w.key...)
			if _, ok := c.m[string(buf)]; !ok {
				return
			}
		}
		switch w.op {
		case opPut:
			c.setLocked(string(buf), cval{val: w.val})
		case opDelete:
			c.setLocked(string(buf), cval{absent: true})
		case opDeleteRange:
			// Compared as strings: no copy of each cached key (the
			// cache holds thousands).
			lo, hi := string(w.lo), string(w.hi)
			for k, v := range c.m {
				if int(k[0]) != w.si {
					continue
				}
				key := k[1:]
				if (w.lo == nil || key >= lo) && (w.hi == nil || key < hi) {
					delete(c.m, k)
					c.bytes -= len(k) + len(v.val)
				}
			}
		}
	})
	if c.bytes > cacheMax {
		for k, v := range c.m {
			delete(c.m, k)
			c.bytes -= len(k) + len(v.val)
			if c.bytes <= cacheLow {
				break
			}
		}
	}
}

// reset forgets everything fn did in t, so that fn can run again in the same
// IndexedDB transaction, without speculation.
func (t *Tx) reset() {
	for i := range t.ov {
		t.ov[i] = nil
	}
	t.spec = false
	t.expects, t.reads = nil, nil
}
