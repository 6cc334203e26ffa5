//go:build js && wasm

package idbkv

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
)

//go:embed helper.js
var helperJS string

// HelperSource returns the source of helper.js, the body of the function
// (cb, opts) that runs idbkv's IndexedDB batches. A page whose
// Content-Security-Policy forbids 'unsafe-eval' carries a copy of it as a
// function in its own scripts and passes that function to Open with Helper
// (web/replica.js carries one for the Replica API).
func HelperSource() string { return helperJS }

// Helper makes the Store use fn, helper.js compiled by the page: a function
// (cb, opts) whose body is HelperSource(), verbatim. Without it the Store
// compiles HelperSource with new Function, which a Content-Security-Policy
// without 'unsafe-eval' forbids (Open then fails). A value that is not a
// function is ignored.
func Helper(fn js.Value) Option { return func(o *openOptions) { o.helper = fn } }

var jsObject = js.Global().Get("Object")

// none marks an absent key bound or value in packed buffers.
const none = 0xFFFFFFFF

// Scratch buffer sizes for the helper driver: requests are copied into one
// Uint8Array per Store, grown in powers of two from scratchMin up to
// scratchMax; a larger request (a big commit) gets a one-off array.
const (
	scratchMin = 64 << 10
	scratchMax = 1 << 20
)

var uint8Array = js.Global().Get("Uint8Array")

// helperDriver issues a Store's IndexedDB requests: it hands each batch to
// helper.js as one packed Uint8Array (one Go->JS call) and gets each result
// back as one packed Uint8Array (one callback). The methods that read or
// commit wait for the browser: they set t.waiting, issue the requests and
// receive the reply that the JS callback delivers.
type helperDriver struct {
	s                                    *Store
	cb                                   js.Func // cb(id, status, payload, n), called by the helper
	beginFn, getManyFn, scanFn, commitFn js.Value
	abortFn, finishFn                    js.Value
	mu                                   sync.Mutex // guards scratch
	scratch                              js.Value
	scratchCap                           int
}

// newHelperDriver calls the page's copy of helper.js (o.helper), or else
// compiles helper.js with new Function. That throws (an EvalError) on pages
// whose Content-Security-Policy lacks 'unsafe-eval'.
func newHelperDriver(s *Store, o openOptions) (*helperDriver, error) {
	d := &helperDriver{s: s}
	d.cb = js.FuncOf(d.onReply)
	var h js.Value
	thrown, ok := catch(func() {
		opts := jsObject.New()
		opts.Set("noGetAllRecords", o.noGetAllRecords)
		if o.durability != "" && o.durability != "default" {
			opts.Set("durability", o.durability)
		}
		factory := o.helper
		if factory.Type() != js.TypeFunction {
			factory = js.Global().Get("Function").New("cb", "opts", helperJS)
		}
		h = factory.Invoke(d.cb, opts)
	})
	if !ok {
		d.cb.Release()
		return nil, domError("compile helper", thrown, nil)
	}
	d.beginFn, d.getManyFn, d.scanFn = h.Get("begin"), h.Get("getMany"), h.Get("scan")
	d.commitFn, d.abortFn, d.finishFn = h.Get("commit"), h.Get("abort"), h.Get("finish")
	return d, nil
}

// onReply is the helper's callback: it hands the outcome to the transaction.
func (d *helperDriver) onReply(_ js.Value, args []js.Value) any {
	var t *Tx
	defer func() {
		if r := recover(); r != nil && t != nil {
			t.deliver(reply{err: fmt.Errorf("idbkv: panic in IndexedDB callback: %v", r)})
		}
	}()
	if len(args) < 4 {
		return nil
	}
	if t = d.s.tx(args[0].Int()); t != nil {
		st := args[1].Int()
		t.deliver(reply{ok: st == 0, stale: st == 2, val: args[2], n: args[3].Int()})
	}
	return nil
}

// call copies req into the scratch buffer and invokes fn(t, si?, buffer, ...)
// while holding it: the helper reads the buffer synchronously.
func (d *helperDriver) call(t *Tx, op string, fn js.Value, req []byte, args func(buf js.Value) []any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	buf := d.scratch
	if len(req) > d.scratchCap || d.scratchCap == 0 {
		if len(req) > scratchMax {
			buf = uint8Array.New(len(req))
		} else {
			c := scratchMin
			for c < len(req) {
				c *= 2
			}
			d.scratch, d.scratchCap = uint8Array.New(c), c
			buf = d.scratch
		}
	}
	js.CopyBytesToJS(buf, req)
	return t.issue(op, func() { fn.Invoke(args(buf)...) })
}

// begin creates the IndexedDB transaction of t over every object store
// of the Store, in mode ("readwrite" or "readonly").
func (d *helperDriver) begin(t *Tx, mode js.Value) error {
	thrown, ok := catch(func() { t.js = d.beginFn.Invoke(d.s.db, d.s.jsNames, mode, t.id) })
	if !ok {
		return domError("begin", thrown, d.s.goneError())
	}
	return nil
}

// getMany returns the stored values of keys, key i in bucket si[i] (nil
// where absent), reading them all with one await.
func (d *helperDriver) getMany(t *Tx, si []int, keys [][]byte, op string) ([][]byte, error) {
	n := 4
	for _, k := range keys {
		n += 8 + len(k)
	}
	req := make([]byte, 0, n)
	req = binary.LittleEndian.AppendUint32(req, uint32(len(keys)))
	for i, k := range keys {
		req = binary.LittleEndian.AppendUint32(req, uint32(si[i]))
		req = binary.LittleEndian.AppendUint32(req, uint32(len(k)))
		req = append(req, k...)
	}
	if err := d.call(t, op, d.getManyFn, req, func(buf js.Value) []any { return []any{t.js, buf} }); err != nil {
		return nil, err
	}
	out, err := receive(t, op)
	if err != nil {
		return nil, err
	}
	vals := make([][]byte, len(keys))
	for i := range vals {
		var v []byte
		if v, out, err = field(out); err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// scan returns one page: at most q.count entries, in q's order.
func (d *helperDriver) scan(t *Tx, si int, q pageQuery) ([]entry, error) {
	req := appendRange(nil, q.lo, q.hi)
	flags := 0
	if q.loOpen {
		flags |= 1
	}
	if q.rev {
		flags |= 2
	}
	if q.keysOnly {
		flags |= 4
	}
	if err := d.call(t, "scan", d.scanFn, req, func(buf js.Value) []any { return []any{t.js, si, buf, q.count, flags} }); err != nil {
		return nil, err
	}
	out, err := receive(t, "scan")
	if err != nil {
		return nil, err
	}
	if len(out) < 4 {
		return nil, errMalformed
	}
	n := int(binary.LittleEndian.Uint32(out))
	out = out[4:]
	if n > len(out)/8 {
		return nil, errMalformed
	}
	page := make([]entry, n)
	for i := range page {
		if page[i].key, out, err = field(out); err != nil {
			return nil, err
		}
		if page[i].val, out, err = field(out); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// commit issues every buffered write of t at once and returns when the
// transaction completed or failed. If the first request throws (the
// transaction has finished), nothing was written.
func (d *helperDriver) commit(t *Tx) error {
	size := 0
	for _, e := range t.expects {
		size += 13 + len(e.key) + len(e.val)
	}
	t.eachWrite(func(w write) {
		switch w.op {
		case opPut:
			size += 13 + len(w.key) + len(w.val)
		case opDelete:
			size += 9 + len(w.key)
		case opDeleteRange:
			size += 13 + len(w.lo) + len(w.hi)
		}
	})
	req := make([]byte, 0, size)
	for _, e := range t.expects { // first: the helper checks them before writing
		req = append(req, opExpect)
		req = binary.LittleEndian.AppendUint32(req, uint32(e.si))
		req = binary.LittleEndian.AppendUint32(req, uint32(len(e.key)))
		req = append(req, e.key...)
		if e.val == nil {
			req = binary.LittleEndian.AppendUint32(req, none)
		} else {
			req = binary.LittleEndian.AppendUint32(req, uint32(len(e.val)))
			req = append(req, e.val...)
		}
	}
	t.eachWrite(func(w write) {
		req = append(req, w.op)
		req = binary.LittleEndian.AppendUint32(req, uint32(w.si))
		switch w.op {
		case opPut:
			req = binary.LittleEndian.AppendUint32(req, uint32(len(w.key)))
			req = append(req, w.key...)
			req = binary.LittleEndian.AppendUint32(req, uint32(len(w.val)))
			req = append(req, w.val...)
		case opDelete:
			req = binary.LittleEndian.AppendUint32(req, uint32(len(w.key)))
			req = append(req, w.key...)
		case opDeleteRange:
			req = appendRange(req, w.lo, w.hi)
		}
	})
	if err := d.call(t, "commit", d.commitFn, req, func(buf js.Value) []any { return []any{t.js, buf, len(req)} }); err != nil {
		return err
	}
	_, _, err := t.wait("commit")
	return err
}

// abort rolls t back; a no-op once it finished.
func (d *helperDriver) abort(t *Tx) {
	t.waiting.Store(false)
	catch(func() { d.abortFn.Invoke(t.js) })
}

// finish ends a read-only transaction.
func (d *helperDriver) finish(t *Tx) {
	t.waiting.Store(false)
	catch(func() { d.finishFn.Invoke(t.js) })
}

// close frees what the driver holds for the Store.
func (d *helperDriver) close() { d.cb.Release() }

// receive waits for the reply to op and copies its payload into Go.
func receive(t *Tx, op string) ([]byte, error) {
	v, n, err := t.wait(op)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if n > 0 {
		js.CopyBytesToGo(out, v)
	}
	return out, nil
}

var errMalformed = errors.New("idbkv: malformed reply from the JS helper")

// field splits [u32 len|none][bytes] off the front of b; an absent field is
// nil, an empty one a non-nil empty slice (sharing b's memory).
func field(b []byte) (f, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errMalformed
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if n == none {
		return nil, b, nil
	}
	if uint64(n) > uint64(len(b)) {
		return nil, nil, errMalformed
	}
	return b[:n:n], b[n:], nil
}

// appendRange appends [u32 lolen|none][lo][u32 hilen|none][hi].
func appendRange(b, lo, hi []byte) []byte {
	for _, k := range [][]byte{lo, hi} {
		if k == nil {
			b = binary.LittleEndian.AppendUint32(b, none)
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
	}
	return b
}
