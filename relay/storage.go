//go:build !js

package relay

import (
	"context"

	"github.com/replica-sync/replica/kv"
)

// Storage is where a relay keeps its databases (docs/design.md § Beyond
// one machine: PostgreSQL). Each database is one kv.Store holding
// StoreBuckets: its arrival log with the dedup index, the head (cursor and
// chain value), the horizon marks, the merged replica of a plain database
// (the engine's buckets) and the sealed checkpoints of a sealed one. The
// log, dedup, snapshot and retention rules are written once, in this
// package, over those kv transactions; a Storage supplies the stores and,
// when several relay processes share it (SharedStorage), the coordination
// between them.
//
// Implementations: the default, one bbolt file per database under
// Config.DataDir (a single process: relay.lock); Config.OpenStore's stores
// (tests, the simulator); relay/pgstore, PostgreSQL, which any number of
// relay processes share; and relay/memshared, a shared one in memory
// (tests, the simulator). The conformance suite is the relay's own: its
// tests run on bbolt files and, with REPLICA_RELAY_STORE=postgres, on
// pgstore (relay/storage_pg_test.go; make test runs both), and
// relay/pgstore's tests run several relay processes on one PostgreSQL.
type Storage interface {
	// Open opens database id's store (holding StoreBuckets), creating
	// it empty when absent. The relay closes the store when it closes
	// the database and calls Open again at its next use; the data must
	// outlive the store.
	Open(id string) (kv.Store, error)
}

// SharedStorage is a Storage several relay processes use at once. Its
// stores serialize read-write transactions across processes (kv's rule
// "read-write transactions are serialized" holds for every store of one
// database, whichever process opened it); the methods below let the relay
// keep what a single process keeps with its mutexes:
//
//   - the log's order: an apply (merge, append, fan-out) and the making of
//     a horizon mark with its pruning, several transactions long, run under
//     Lock, so cursors stay gap-free and no ChangeSet is decided between a
//     mark and its pruning;
//   - no horizon mark while any relay streams a snapshot of the database
//     (StreamStarted against HoldStreams);
//   - fan-out: after a commit the relay calls Notify (or queues the
//     notification in the commit: TxNotifier), and every other relay
//     holding connections of the database learns the new head from
//     Listen and sends them what follows.
//
// Errors of these methods are storage errors: the relay answers the
// request with a transient error (the client retries) and reports the
// store as failing on /healthz until an operation succeeds again.
type SharedStorage interface {
	Storage
	// Lock takes database id's writer lock, held by one relay process
	// (and one goroutine of it) at a time, and returns its release.
	// It waits until the lock is free or ctx ends.
	Lock(ctx context.Context, id string) (unlock func(), err error)
	// TryMaintain takes the right to run maintenance (horizon marks,
	// pruning) on database id when no other relay holds it: ok false
	// means another relay is maintaining the database now.
	TryMaintain(ctx context.Context, id string) (release func(), ok bool, err error)
	// StreamStarted registers a snapshot stream of database id by this
	// process until end is called; HoldStreams fails while any is
	// registered by any process. It waits while a HoldStreams is held.
	StreamStarted(ctx context.Context, id string) (end func(), err error)
	// HoldStreams reports, with ok, that no relay process streams a
	// snapshot of database id, and keeps new streams from starting
	// until release is called.
	HoldStreams(ctx context.Context, id string) (release func(), ok bool, err error)
	// Notify tells the other relay processes that database id's head
	// is now head (called after the commit that moved it).
	Notify(ctx context.Context, id string, head uint64) error
	// Listen calls fn for every Notify of another process, until ctx
	// ends, and fn("", 0) whenever notifications may have been lost
	// (its connection was re-established): every database may have
	// moved. It returns ctx's error, or an error when it cannot listen
	// at all.
	Listen(ctx context.Context, fn func(id string, head uint64)) error
	// Ping checks that the storage is reachable (GET /healthz).
	Ping(ctx context.Context) error
}

// funcStorage adapts Config.OpenStore.
type funcStorage func(id string) (kv.Store, error)

func (f funcStorage) Open(id string) (kv.Store, error) { return f(id) }

// TxNotifier is implemented by a SharedStorage whose stores' transactions
// can carry Notify's notification, delivered to the other relays when the
// transaction commits and never if it does not (relay/pgstore: a
// pg_notify sent in the COMMIT's pipeline, no round trip of its own). The
// relay then queues the notification of a new head in the read-write
// transaction that moves it, and calls Notify after the commit only when
// NotifyTx reports false (tx cannot carry one).
type TxNotifier interface {
	NotifyTx(tx kv.Tx, id string, head uint64) bool
}
