//go:build js && wasm

package idbkv

import (
	"errors"
	"fmt"
	"syscall/js"

	"github.com/replica-sync/replica/kv"
)

// DOMError is a browser error (a DOMException, or a JS Error) that failed an
// idbkv operation. It wraps the kv sentinel it corresponds to, if any, so
// callers test errors.Is(err, kv.ErrQuotaExceeded) and the like, and use
// errors.As only when they need the browser's own name or message.
//
// Mapping, by Name:
//   - QuotaExceededError: kv.ErrQuotaExceeded.
//   - TransactionInactiveError: kv.ErrTxInactive.
//   - InvalidStateError: kv.ErrClosed once the browser closed the connection
//     (joined with ErrStorage when it closed it on its own, not for a
//     versionchange), kv.ErrTxInactive otherwise (the transaction had
//     finished).
//   - UnknownError, and any error whose message names an IO error
//     ("IO error: ... FILE_ERROR_NO_SPACE"): ErrStorage (the Store then
//     closes itself; see ErrStorage).
//   - AbortError: as InvalidStateError once the browser closed the
//     connection; otherwise no sentinel.
//   - anything else: no sentinel.
type DOMError struct {
	Op      string // what idbkv was doing: "get", "scan", "commit", "begin", ...
	Name    string // the DOMException name, e.g. "QuotaExceededError"
	Message string // the browser's message
	Err     error  // the kv sentinel it maps to, or nil
}

func (e *DOMError) Error() string {
	s := "idbkv: " + e.Op + ": "
	if e.Err != nil {
		s += e.Err.Error() + ": "
	}
	s += e.Name
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the kv sentinel the error maps to, or nil.
func (e *DOMError) Unwrap() error { return e.Err }

// domError converts the JS error value v, thrown or reported while doing op,
// into a *DOMError. gone is nil while the connection is open, else what the
// Store fails with once gone (Store.goneError: kv.ErrClosed, possibly joined
// with ErrStorage).
func domError(op string, v js.Value, gone error) error {
	name, msg := "Error", ""
	if v.Type() == js.TypeObject {
		if n := v.Get("name"); n.Type() == js.TypeString {
			name = n.String()
		}
		if m := v.Get("message"); m.Type() == js.TypeString {
			msg = m.String()
		}
	} else if v.Type() == js.TypeString {
		msg = v.String()
	}
	e := &DOMError{Op: op, Name: name, Message: msg}
	switch name {
	case "QuotaExceededError":
		e.Err = kv.ErrQuotaExceeded
	case "TransactionInactiveError":
		e.Err = kv.ErrTxInactive
	case "InvalidStateError":
		if gone != nil {
			e.Err = gone
		} else {
			e.Err = kv.ErrTxInactive
		}
	case "AbortError", "UnknownError":
		if gone != nil {
			e.Err = gone
		}
	}
	if name != "QuotaExceededError" && isIOError(name, msg) {
		e.Err = ErrStorage
	}
	return e
}

// catch runs fn, which calls into JS, and returns what JS threw as a
// js.Value (syscall/js panics with js.Error when a called function throws).
// Other panics propagate.
func catch(fn func()) (thrown js.Value, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			var jsErr js.Error
			if e, isErr := r.(error); isErr && errors.As(e, &jsErr) {
				thrown, ok = jsErr.Value, false
				return
			}
			panic(r)
		}
	}()
	fn()
	return js.Undefined(), true
}

// errUsedAfterEnd is returned by Tx methods called after the function passed
// to Update or View returned.
var errUsedAfterEnd = fmt.Errorf("idbkv: transaction used after its function returned: %w", kv.ErrTxInactive)
