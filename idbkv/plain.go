//go:build js && wasm

package idbkv

import (
	"fmt"
	"syscall/js"
)

// plainDriver makes the same requests as helper.js, from Go through
// syscall/js: the fallback for pages whose Content-Security-Policy forbids
// new Function. It still awaits once per batch (the last request's success,
// or the transaction's complete/abort event), but crosses the Go<->JS
// boundary once per request and per item read, so it costs more per item
// than the helper; and without getAllRecords a descending Scan iterates a
// cursor from Go, one callback per entry.
type plainDriver struct {
	s       *Store
	records bool // use getAllRecords
}

// plainTx is the plain driver's state of one transaction.
type plainTx struct {
	tx     js.Value   // the IDBTransaction
	stores []js.Value // object stores, fetched on first use
	ok     js.Func    // request success and transaction complete
	fail   js.Func    // transaction abort (a failed request aborts it)
}

var (
	jsArrayBuffer  = js.Global().Get("ArrayBuffer")
	jsIDBKeyRange  = js.Global().Get("IDBKeyRange")
	jsObject       = js.Global().Get("Object")
	plainHasCommit = hasMethod("IDBTransaction", "commit")
	hasGetAllRecs  = hasMethod("IDBObjectStore", "getAllRecords")
)

func hasMethod(class, method string) bool {
	c := js.Global().Get(class)
	return c.Type() == js.TypeFunction && c.Get("prototype").Get(method).Type() == js.TypeFunction
}

func (d *plainDriver) begin(t *Tx, mode js.Value) error {
	p := &plainTx{stores: make([]js.Value, len(d.s.names))}
	thrown, ok := catch(func() { p.tx = d.s.db.Call("transaction", d.s.jsNames, mode) })
	if !ok {
		return domError("begin", thrown, d.s.isGone())
	}
	p.ok = js.FuncOf(func(_ js.Value, _ []js.Value) any {
		defer recoverInto(t)
		t.deliver(reply{ok: true})
		return nil
	})
	p.fail = js.FuncOf(func(_ js.Value, _ []js.Value) any {
		defer recoverInto(t)
		e := p.tx.Get("error")
		if e.IsNull() || e.IsUndefined() {
			e = js.Global().Get("DOMException").New("idbkv: transaction aborted", "AbortError")
		}
		t.deliver(reply{val: e})
		return nil
	})
	p.tx.Set("oncomplete", p.ok)
	p.tx.Set("onabort", p.fail)
	t.plain, t.js = p, p.tx
	return nil
}

// recoverInto turns a panic in a JS callback into an error for t: a panic
// escaping a callback would kill the Go runtime.
func recoverInto(t *Tx) {
	if r := recover(); r != nil {
		t.deliver(reply{err: fmt.Errorf("idbkv: panic in IndexedDB callback: %v", r)})
	}
}

func (p *plainTx) store(s *Store, si int) js.Value {
	if p.stores[si].IsUndefined() {
		p.stores[si] = p.tx.Call("objectStore", s.names[si])
	}
	return p.stores[si]
}

func (d *plainDriver) getMany(t *Tx, si []int, keys [][]byte, op string) ([][]byte, error) {
	reqs := make([]js.Value, len(keys))
	err := t.issue(op, func() {
		for i, k := range keys {
			reqs[i] = t.plain.store(d.s, si[i]).Call("get", jsBytes(k))
		}
		reqs[len(reqs)-1].Set("onsuccess", t.plain.ok)
	})
	if err != nil {
		return nil, err
	}
	if _, _, err := t.wait(op); err != nil {
		return nil, err
	}
	vals := make([][]byte, len(keys))
	for i, r := range reqs {
		v := r.Get("result")
		if v.IsUndefined() {
			continue
		}
		if vals[i], err = goBytes(v); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

func (d *plainDriver) scan(t *Tx, si int, q pageQuery) ([]entry, error) {
	var reqs [2]js.Value // records, or keys and values
	var cursor js.Value  // a descending cursor when getAllRecords is missing
	dir := "next"
	if q.rev {
		dir = "prev"
	}
	err := t.issue("scan", func() {
		st := t.plain.store(d.s, si)
		r := keyRange(q.lo, q.loOpen, q.hi)
		switch {
		case d.records && !q.keysOnly:
			opts := jsObject.New()
			opts.Set("count", q.count)
			opts.Set("direction", dir)
			if !r.IsUndefined() {
				opts.Set("query", r)
			}
			reqs[0] = st.Call("getAllRecords", opts)
			reqs[0].Set("onsuccess", t.plain.ok)
		case !q.rev:
			reqs[0] = st.Call("getAllKeys", r, q.count)
			last := reqs[0]
			if !q.keysOnly {
				reqs[1] = st.Call("getAll", r, q.count)
				last = reqs[1]
			}
			last.Set("onsuccess", t.plain.ok)
		case q.keysOnly:
			cursor = st.Call("openKeyCursor", r, dir)
			cursor.Set("onsuccess", t.plain.ok)
		default:
			cursor = st.Call("openCursor", r, dir)
			cursor.Set("onsuccess", t.plain.ok)
		}
	})
	if err != nil {
		return nil, err
	}
	if _, _, err := t.wait("scan"); err != nil {
		return nil, err
	}
	var page []entry
	switch {
	case !cursor.IsUndefined():
		for {
			c := cursor.Get("result")
			if c.IsNull() {
				break
			}
			var e entry
			if e.key, err = goBytes(c.Get("key")); err != nil {
				return nil, err
			}
			if !q.keysOnly {
				if e.val, err = goBytes(c.Get("value")); err != nil {
					return nil, err
				}
			}
			page = append(page, e)
			if len(page) == q.count {
				break
			}
			if err := t.issue("scan", func() { c.Call("continue") }); err != nil {
				return nil, err
			}
			if _, _, err := t.wait("scan"); err != nil {
				return nil, err
			}
		}
	case d.records && !q.keysOnly:
		recs := reqs[0].Get("result")
		page = make([]entry, recs.Length())
		for i := range page {
			rec := recs.Index(i)
			if page[i].key, err = goBytes(rec.Get("key")); err != nil {
				return nil, err
			}
			if page[i].val, err = goBytes(rec.Get("value")); err != nil {
				return nil, err
			}
		}
	default:
		ks := reqs[0].Get("result")
		page = make([]entry, ks.Length())
		var vs js.Value
		if !q.keysOnly {
			vs = reqs[1].Get("result")
		}
		for i := range page {
			if page[i].key, err = goBytes(ks.Index(i)); err != nil {
				return nil, err
			}
			if !q.keysOnly {
				if page[i].val, err = goBytes(vs.Index(i)); err != nil {
					return nil, err
				}
			}
		}
	}
	return page, nil
}

func (d *plainDriver) commit(t *Tx) error {
	issued := false
	err := t.issue("commit", func() {
		defer func() {
			if r := recover(); r != nil {
				if issued {
					catch(func() { t.plain.tx.Call("abort") })
				}
				panic(r)
			}
		}()
		t.eachWrite(func(w write) {
			st := t.plain.store(d.s, w.si)
			switch w.op {
			case opPut:
				st.Call("put", jsBytes(w.val), jsBytes(w.key))
			case opDelete:
				st.Call("delete", jsBytes(w.key))
			case opDeleteRange:
				if r := keyRange(w.lo, false, w.hi); r.IsUndefined() {
					st.Call("clear")
				} else {
					st.Call("delete", r)
				}
			}
			issued = true
		})
		if !issued { // learn whether the transaction is still active
			t.plain.store(d.s, 0).Call("get", jsBytes(nil))
		}
		if plainHasCommit {
			t.plain.tx.Call("commit")
		}
	})
	if err != nil {
		return err
	}
	_, _, err = t.wait("commit")
	return err
}

func (d *plainDriver) abort(t *Tx) {
	t.waiting.Store(false)
	catch(func() { t.plain.tx.Call("abort") })
}

func (d *plainDriver) finish(t *Tx) {
	t.waiting.Store(false)
	if plainHasCommit {
		catch(func() { t.plain.tx.Call("commit") })
	}
}

func (d *plainDriver) release(t *Tx) {
	p := t.plain
	if p == nil {
		return
	}
	catch(func() {
		p.tx.Set("oncomplete", js.Null())
		p.tx.Set("onabort", js.Null())
	})
	p.ok.Release()
	p.fail.Release()
}

func (d *plainDriver) close() {}

// keyRange returns the IDBKeyRange lo <= key < hi (lo < key if loOpen), or
// undefined when both bounds are nil. The caller ensures lo < hi.
func keyRange(lo []byte, loOpen bool, hi []byte) js.Value {
	switch {
	case lo != nil && hi != nil:
		return jsIDBKeyRange.Call("bound", jsBytes(lo), jsBytes(hi), loOpen, true)
	case lo != nil:
		return jsIDBKeyRange.Call("lowerBound", jsBytes(lo), loOpen)
	case hi != nil:
		return jsIDBKeyRange.Call("upperBound", jsBytes(hi), true)
	}
	return js.Undefined()
}

// jsBytes returns a new Uint8Array holding a copy of b: as a key it compares
// bytewise; as a value its structured clone holds exactly these bytes.
func jsBytes(b []byte) js.Value {
	a := uint8Array.New(len(b))
	if len(b) > 0 {
		js.CopyBytesToJS(a, b)
	}
	return a
}

// goBytes copies a Uint8Array, ArrayBuffer (how binary keys come back) or
// other ArrayBuffer view into Go; anything else is not idbkv's data.
func goBytes(v js.Value) ([]byte, error) {
	switch {
	case v.InstanceOf(uint8Array):
	case v.InstanceOf(jsArrayBuffer):
		v = uint8Array.New(v)
	case v.Type() == js.TypeObject && jsArrayBuffer.Call("isView", v).Bool():
		v = uint8Array.New(v.Get("buffer"), v.Get("byteOffset"), v.Get("byteLength"))
	default:
		return nil, fmt.Errorf("idbkv: stored key or value is not binary (%s)", v.Type())
	}
	b := make([]byte, v.Length())
	if len(b) > 0 {
		js.CopyBytesToGo(b, v)
	}
	return b, nil
}
