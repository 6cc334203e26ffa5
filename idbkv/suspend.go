//go:build js && wasm

package idbkv

import (
	"errors"
	"syscall/js"
)

// ErrSuspended is returned (wrapped) by Update and View, and by a Tx's
// operations, for a transaction that Suspend aborted: nothing of it was
// written. Run it again after Resume (Resumed says when).
var ErrSuspended = errors.New("idbkv: transaction aborted because the page was suspended (frozen or hidden); nothing of it was written")

// Suspend aborts every transaction of the Store that is still running and
// holds new ones (Update and View wait, without starting an IndexedDB
// transaction) until Resume. It is for a page about to be frozen (the
// Page Lifecycle freeze and pagehide events): a frozen page runs no
// callbacks, so a transaction it left open (its requests' results queued,
// the function that would go on and commit not running) would hold the
// object stores' locks for the whole freeze, and every other tab's
// transactions over them would wait (Chromium aborts such a transaction
// only after 60 s of inactivity). Call it from the event's handler: it
// does not block.
//
// A transaction that already committed (IndexedDB refuses the abort) is
// left to complete. An aborted one fails, once the page runs again, with
// ErrSuspended; callers run it again (nothing of it was written, so that
// is safe). It returns the number of transactions aborted. Suspend on a
// suspended Store aborts whatever began since (nothing can) and keeps it
// suspended.
func (s *Store) Suspend() int {
	s.mu.Lock()
	if s.resumed == nil {
		s.resumed = make(chan struct{})
	}
	txs := make([]*Tx, 0, len(s.txs))
	for _, t := range s.txs {
		txs = append(txs, t)
	}
	s.mu.Unlock()
	n := 0
	for _, t := range txs {
		tx := t.idbTx()
		if tx.Type() != js.TypeObject {
			continue
		}
		t.suspended.Store(true)
		if _, ok := catch(func() { tx.Call("abort") }); ok {
			n++
		} else {
			// Finished or committing: IndexedDB completes it without
			// this page (a commit needs no callback of ours).
			t.suspended.Store(false)
		}
	}
	return n
}

// Resume lets transactions begin again after Suspend (those waiting
// begin now). A no-op when the Store is not suspended.
func (s *Store) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resumed != nil {
		close(s.resumed)
		s.resumed = nil
	}
}

// Resumed returns a channel that is closed once the Store is not
// suspended (at once when it is not).
func (s *Store) Resumed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resumed != nil {
		return s.resumed
	}
	return closedChan
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// waitResumed waits, with s.mu held (and released while waiting), until
// the Store is not suspended or is closed.
func (s *Store) waitResumedLocked() {
	for s.resumed != nil && !s.closed {
		ch := s.resumed
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
}

// idbTx returns t's IDBTransaction, or undefined.
func (t *Tx) idbTx() js.Value {
	if t.js.Type() == js.TypeObject {
		return t.js.Get("tx")
	}
	return js.Undefined()
}
