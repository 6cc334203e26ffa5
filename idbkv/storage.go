//go:build js && wasm

package idbkv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/replica-sync/replica/kv"
)

// ErrStorage is wrapped by the error of an operation that the browser's
// storage failed with an IO error (a full disk: "IO error: ...
// FILE_ERROR_NO_SPACE", a lost backing store: UnknownError). The Store
// closes itself then: every transaction waiting on the browser fails at
// once and every later Update and View returns kv.ErrClosed. Chromium may
// discard the database after such an error, which is why the Store keeps
// a margin (see Quota).
var ErrStorage = errors.New("idbkv: the browser's storage failed")

// Quota caps what the origin's storage may use, in bytes, as
// navigator.storage.estimate() counts usage: the Store refuses commits
// that would take usage above half of min(bytes, the quota estimate()
// reports). bytes <= 0: no margin (the default), and estimate() is never
// called: Chromium reports a quota of usage + 1 GiB whatever the disk's
// size, so half of it says nothing about the disk and would refuse every
// growing write once the origin uses 1 GiB. See "Storage margin" in the
// package documentation.
func Quota(bytes int64) Option { return func(o *openOptions) { o.quota = bytes } }

// Tuning of the storage margin (variables for tests).
var (
	// estimateEvery: refresh the estimate once this many bytes were
	// committed since the last one...
	estimateEvery int64 = 1 << 20
	// ... or this long after it, if anything was committed since.
	estimateMaxAge = 5 * time.Second
	// estimateRetry: after a refusal, refresh at most this often (usage
	// falls again when a compaction ends, or other tabs delete).
	estimateRetry = time.Second
	// headroomDiv: usage may reach quota/headroomDiv. LevelDB (Chromium's
	// IndexedDB) needs up to the database's size again while compacting:
	// measured in a 40 MiB profile, usage went from 22.3 MB to 35.9 MB
	// within ten 200 KB transactions, and an IO error at the disk's end
	// made Chromium discard the database.
	headroomDiv int64 = 2
)

// budget is a Store's view of the origin's storage: the last estimate()
// and the bytes this Store committed since. Safe for concurrent use.
type budget struct {
	cap int64 // Quota's bytes, 0: none

	mu       sync.Mutex
	known    bool  // an estimate arrived
	absent   bool  // navigator.storage.estimate is missing: no margin
	usage    int64 // estimate().usage
	quota    int64 // estimate().quota, capped by cap
	since    int64 // bytes committed by this Store after that estimate was asked
	at       time.Time
	inFlight bool
	refused  bool // admit refused a commit since that estimate
}

// stale reports whether the estimate should be refreshed before the next
// write.
func (b *budget) stale() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cap <= 0 || b.absent || b.inFlight {
		return false
	}
	age := time.Since(b.at)
	if !b.known { // never asked, or the last asking failed
		return b.at.IsZero() || age > estimateRetry
	}
	return b.since >= estimateEvery || (b.since > 0 && age > estimateMaxAge) ||
		(b.refused && age > estimateRetry)
}

// refresh asks navigator.storage.estimate() and waits for it. It must not be
// called inside a transaction (it waits on a foreign Promise). One runs at
// a time; a concurrent call returns at once.
func (b *budget) refresh() {
	b.mu.Lock()
	if b.inFlight || b.absent {
		b.mu.Unlock()
		return
	}
	b.inFlight = true
	asked := b.since
	b.mu.Unlock()
	usage, quota, err := estimate()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight = false
	if err != nil {
		// No estimate: none is asked again before estimateRetry (a
		// rejected estimate() must not make every write wait on one).
		b.absent = errors.Is(err, errNoEstimate)
		b.at, b.refused = time.Now(), true
		return
	}
	if b.cap > 0 && (quota <= 0 || b.cap < quota) {
		quota = b.cap
	}
	b.known, b.usage, b.quota, b.at, b.refused = true, usage, quota, time.Now(), false
	b.since -= asked // commits made while it was asked are not in it for sure
}

// admit reports kv.ErrQuotaExceeded if committing grow more bytes would
// take usage past the margin. It never waits.
func (b *budget) admit(grow int64) error {
	if grow <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cap <= 0 || !b.known || b.quota <= 0 {
		return nil
	}
	limit := b.quota / headroomDiv
	if b.usage+b.since+grow > limit {
		b.refused = true
		return fmt.Errorf("idbkv: a commit of %d bytes would take storage use to %d bytes, past %d (half the quota of %d bytes: LevelDB needs room to compact): %w",
			grow, b.usage+b.since+grow, limit, b.quota, kv.ErrQuotaExceeded)
	}
	return nil
}

// committed adds n bytes written by a commit.
func (b *budget) committed(n int64) {
	b.mu.Lock()
	b.since += n
	b.mu.Unlock()
}

var errNoEstimate = errors.New("idbkv: navigator.storage.estimate is unavailable")

// estimate calls navigator.storage.estimate() and waits for its answer.
func estimate() (usage, quota int64, err error) {
	nav := js.Global().Get("navigator")
	if nav.Type() != js.TypeObject {
		return 0, 0, errNoEstimate
	}
	st := nav.Get("storage")
	if st.Type() != js.TypeObject || st.Get("estimate").Type() != js.TypeFunction {
		return 0, 0, errNoEstimate
	}
	type answer struct {
		v  js.Value
		ok bool
	}
	ch := make(chan answer, 1)
	onOK := js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- answer{args[0], true}; return nil })
	onErr := js.FuncOf(func(_ js.Value, args []js.Value) any { ch <- answer{args[0], false}; return nil })
	defer onOK.Release()
	defer onErr.Release()
	if thrown, ok := catch(func() { st.Call("estimate").Call("then", onOK, onErr) }); !ok {
		return 0, 0, domError("estimate", thrown, nil)
	}
	a := <-ch
	if !a.ok {
		return 0, 0, domError("estimate", a.v, nil)
	}
	num := func(name string) int64 {
		if v := a.v.Get(name); v.Type() == js.TypeNumber {
			return int64(v.Float())
		}
		return 0
	}
	return num("usage"), num("quota"), nil
}

// putBytes returns the bytes t's puts write (keys and values): what its
// commit grows the database by, at most.
func (t *Tx) putBytes() int64 {
	var n int64
	t.eachWrite(func(w write) {
		if w.op == opPut {
			n += int64(len(w.key) + len(w.val))
		}
	})
	return n
}

// isIOError reports whether a browser error (its name and message) says
// the storage failed: an UnknownError (Chromium: "Connection is closing
// because of: IO error: ... FILE_ERROR_NO_SPACE"), or an AbortError or
// other error whose message names an IO error.
func isIOError(name, msg string) bool {
	return name == "UnknownError" || strings.Contains(msg, "IO error") || strings.Contains(msg, "FILE_ERROR")
}

// fail marks the Store gone for reason and fails every transaction waiting
// on the browser with kv.ErrClosed (wrapping cause), so that none waits for
// a reply the browser may never send. Later Update and View calls return
// kv.ErrClosed. Safe to call from JS callbacks (it never blocks).
func (s *Store) fail(reason string, cause error) {
	s.markGone(reason, cause)
	s.mu.Lock()
	waiting := make([]*Tx, 0, len(s.txs))
	for _, t := range s.txs {
		waiting = append(waiting, t)
	}
	s.mu.Unlock()
	for _, t := range waiting {
		t.deliver(reply{err: fmt.Errorf("idbkv: %q: %s: %w", s.name, reason, errors.Join(cause, kv.ErrClosed))})
	}
	catch(func() { s.db.Call("close") })
}
