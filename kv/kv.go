// Package kv is the ordered key-value interface every Replica storage backend
// implements and the engine stores everything through.
//
// # Model
//
// A Store holds a fixed set of named buckets, declared when the store is
// opened (IndexedDB can only create object stores in an upgrade step, so the
// set cannot change while the store is open). Each bucket maps byte-string
// keys to byte-string values, ordered by bytes.Compare of the keys. Keys are
// 1 to MaxKeySize bytes; values may be empty and up to MaxValueSize bytes.
//
// All access happens inside transactions. Update runs a read-write
// transaction, View a read-only one. A transaction spans every bucket of the
// store: a row, its metadata, its change-log entries and the clock state
// written in one Update commit together or not at all.
//
// # Transactions
//
//   - If the function passed to Update returns nil, every Put and Delete it
//     made is committed atomically. If it returns an error (or panics, or the
//     commit fails), nothing it wrote is visible, ever, to anyone; the error
//     is returned unchanged (wrapped only when the commit itself failed).
//     One exception: a network backend that lost its connection while the
//     commit was in flight returns ErrCommitUnknown, and then the
//     transaction may have been committed.
//   - If the function passed to Update or View panics, the transaction is
//     rolled back and the panic continues out of Update or View with the
//     same value, on the caller's goroutine. The Store stays usable.
//   - An error a Tx method returns (ErrNotFound, ErrInvalidKey,
//     ErrValueTooLarge, ErrBucketNotFound, ErrReadOnly) does not end the
//     transaction: the function may go on and its other writes commit if it
//     returns nil.
//   - A transaction reads its own writes: Get, GetMany and Scan inside an
//     Update see the Puts and Deletes made earlier in the same function.
//   - Read-write transactions are serialized: while one runs, another Update
//     (from this Store or, for IndexedDB, from another tab over the same
//     database) waits. View transactions see a consistent snapshot and may run
//     concurrently with each other and, depending on the backend, with an
//     Update.
//   - A Tx must not be used after its function returns, nor from another
//     goroutine than the one running the function.
//   - The function must not start another transaction (Update or View on
//     any Store over the same data): bbolt and IndexedDB may deadlock.
//   - The function must not wait on anything but the transaction's own
//     requests: no timers, no channels fed from elsewhere, no network. On
//     IndexedDB the browser commits an idle transaction by itself; the idbkv
//     backend then fails the transaction with ErrTxInactive and writes
//     nothing. Other backends do not detect this, but the rule holds for all.
//
// # Ownership of bytes
//
// Byte slices returned by Get, GetMany and passed to a Scan callback are
// owned by the store and valid only until the transaction ends (bbolt maps
// them from its file); until then they stay unchanged, even when the same
// transaction later overwrites or deletes their keys. Callers must not modify
// them and must copy anything they keep. Slices passed to Put may be reused by
// the caller once Put returns.
//
// # Concurrency
//
// A Store is safe for concurrent use by multiple goroutines. A Tx is not.
//
// # Implementations
//
// kv/memkv (memory, both builds), kv/boltkv (bbolt file, native), kv/pgkv
// (PostgreSQL, native, shared by several processes) and idbkv (IndexedDB,
// js/wasm). All of them run the conformance suite in kv/kvtest.
package kv

import (
	"errors"
)

// Limits shared by every implementation. The conformance suite checks that
// values up to MaxValueSize round-trip.
const (
	// MaxKeySize is the largest key, in bytes, a store must accept.
	MaxKeySize = 4096
	// MaxValueSize is the largest value, in bytes, a store must accept
	// (8 MiB; the engine never writes values near it).
	MaxValueSize = 8 << 20
)

// Errors returned by every implementation. Test with errors.Is: backends wrap
// them with context (the bucket, the key length, the browser's message).
var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("kv: key not found")
	// ErrBucketNotFound is returned when a transaction names a bucket the
	// store was not opened with.
	ErrBucketNotFound = errors.New("kv: bucket not found")
	// ErrReadOnly is returned by Put, Delete and DeleteRange inside View.
	ErrReadOnly = errors.New("kv: write in a read-only transaction")
	// ErrInvalidKey is returned for an empty key or one longer than
	// MaxKeySize.
	ErrInvalidKey = errors.New("kv: invalid key")
	// ErrValueTooLarge is returned by Put for a value over MaxValueSize.
	ErrValueTooLarge = errors.New("kv: value too large")
	// ErrClosed is returned by Update and View after Close, and by
	// idbkv when the browser closed the database underneath it (another tab
	// deleted or upgraded it).
	ErrClosed = errors.New("kv: store closed")
	// ErrTxInactive is returned (idbkv only) when the browser committed a
	// transaction by itself because its function waited on something other
	// than the transaction's own requests. Nothing of the transaction is
	// written.
	ErrTxInactive = errors.New("kv: transaction no longer active (it waited on something other than its own requests)")
	// ErrQuotaExceeded is returned when the backend is out of space
	// (IndexedDB's QuotaExceededError, a full disk). Nothing of the
	// transaction is written.
	ErrQuotaExceeded = errors.New("kv: storage quota exceeded")
	// ErrUnavailable is returned (by network backends: kv/pgkv) when the
	// backend cannot be reached: the connection was lost or refused, the
	// server is shutting down, or the transaction's time ran out. Nothing of
	// the transaction was written; it may be retried once the backend is back.
	// A commit whose outcome is unknown returns ErrCommitUnknown instead.
	ErrUnavailable = errors.New("kv: backend unavailable")
	// ErrCommitUnknown is returned (by network backends: kv/pgkv) when the
	// connection was lost while the commit was in flight: the transaction may
	// or may not have been written. It does not match ErrUnavailable; a
	// caller that retries must make the retry idempotent (check whether the
	// first attempt landed).
	ErrCommitUnknown = errors.New("kv: commit outcome unknown (connection lost during commit)")
)

// Store is an ordered key-value store with named buckets.
type Store interface {
	// Update runs fn in a read-write transaction and commits it if fn
	// returns nil. See the package documentation for atomicity and
	// isolation.
	Update(fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(fn func(Tx) error) error
	// Close releases the store. Transactions running concurrently finish
	// first; later calls to Update and View return ErrClosed. Close is
	// idempotent: calling it again returns nil.
	Close() error
}

// Range selects the keys a Scan visits: Start <= key < End, in ascending
// byte order, or descending if Reverse is set. A nil (or empty) Start means
// the first key of the bucket; a nil End means past the last key. A non-nil
// empty End selects nothing (no key is less than the empty string), and so
// does Start >= End; neither is an error. Limit > 0 stops after that many
// entries; 0 means no limit. KeysOnly lets a backend skip loading values (the
// callback then receives a nil value).
type Range struct {
	Start, End []byte
	Reverse    bool
	Limit      int
	KeysOnly   bool
}

// Prefix returns the Range of every key that begins with p.
func Prefix(p []byte) Range {
	return Range{Start: p, End: PrefixEnd(p)}
}

// PrefixEnd returns the smallest key greater than every key that begins with
// p, or nil if there is none (p is empty or all 0xFF).
//
//go:noinline
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Tx is a transaction over every bucket of a Store. Methods return
// ErrBucketNotFound for an unknown bucket and ErrInvalidKey for an empty or
// oversized key.
type Tx interface {
	// Get returns the value of key, or ErrNotFound. An existing empty value
	// is a non-nil empty slice.
	Get(bucket string, key []byte) ([]byte, error)
	// GetMany returns the values of keys in the same order, with nil for
	// absent keys (an existing empty value is a non-nil empty slice). It is
	// one round trip on backends where each read costs one (IndexedDB).
	GetMany(bucket string, keys [][]byte) ([][]byte, error)
	// Scan calls fn for each entry in r, in order, until fn returns false,
	// the range is exhausted or r.Limit entries were visited. Writing to the
	// scanned bucket from fn is not allowed (a backend may fail such a write
	// with an error, or visit entries unpredictably); collect keys and write
	// after Scan returns. Reads, and writes to other buckets, are allowed.
	Scan(bucket string, r Range, fn func(key, value []byte) bool) error
	// Put stores value under key, replacing any previous value.
	Put(bucket string, key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(bucket string, key []byte) error
	// DeleteRange removes every key k with start <= k < end (bounds as in
	// Range: nil start and end mean unbounded, a non-nil empty end or
	// start >= end removes nothing) and is one request on IndexedDB.
	DeleteRange(bucket string, start, end []byte) error
}

// BucketKey names one key of one bucket, for BatchGetter.
type BucketKey struct {
	Bucket string
	Key    []byte
}

// BatchGetter is implemented by transactions that read keys of several
// buckets in one round trip (idbkv: one batch of IndexedDB requests and one
// await, where a Get per bucket would cost one await each). GetBatch
// returns the values in order, nil for absent keys, with the ownership and
// read-your-writes rules of GetMany. Callers type-assert a Tx to it and fall
// back to GetMany per bucket.
type BatchGetter interface {
	GetBatch(keys []BucketKey) ([][]byte, error)
}

// Prefetcher is implemented by transactions whose reads each cost a round
// trip to a server (kv/pgkv). Prefetch queues keys of any buckets to be
// read along with the transaction's next request to the server, whatever
// it is (a Get of other keys, a Scan page); afterwards Get, GetMany and
// GetBatch answer those keys from what was read, without a request of
// their own, with the ownership and read-your-writes rules of Get (a Put
// or Delete after the prefetch wins, as it would over the stored value).
// Prefetching a key that is never read costs its share of that request
// only. It returns ErrBucketNotFound or ErrInvalidKey (nothing queued)
// for an unknown bucket or a bad key; a failure of the read itself is the
// error of the request that carried it. Callers type-assert a Tx to it
// and skip the call when absent: reads then cost what they cost.
type Prefetcher interface {
	Prefetch(keys []BucketKey) error
}
