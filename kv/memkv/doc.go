// Package memkv is an in-memory kv.Store, for tests and for ephemeral
// replicas. It builds natively and for js/wasm and keeps nothing on disk:
// everything is gone when the Store is garbage collected.
//
// # Basics
//
// New(buckets...) returns an empty Store with those buckets. Each bucket is a
// copy-on-write B-tree (github.com/google/btree). The Store holds one
// committed snapshot: an immutable set of trees, one per bucket.
//
//   - View reads the snapshot current when it starts, without locks. A View
//     never blocks and is never blocked: Updates that commit while it runs
//     are invisible to it.
//   - Update takes the Store's writer mutex, so read-write transactions run
//     one at a time in the order they acquire it. The first write to a
//     bucket clones that bucket's tree (O(1); nodes are copied lazily as they
//     are modified); reads in the Update see the clone, so the transaction
//     reads its own writes. Commit publishes a new snapshot with one atomic
//     pointer store; rollback (fn returns an error or panics) drops the
//     clones. Either way nothing is half-visible.
//
// # Costs
//
// Put copies the key and value into one new allocation. Get, GetMany and Scan
// return the stored slices themselves, without copying: they are read-only
// (see Caveats). A transaction's first write to a bucket costs one clone; its
// first write under each tree node copies that node (up to 63 items of 16
// bytes). Transactions whose writes cluster in key order (a table's rows, the
// change log) amortize this; writes scattered over a large bucket pay a node
// copy each, and one-Put transactions pay a whole root-to-leaf path.
//
// # Caveats
//
// Byte slices returned by Get and GetMany and passed to Scan callbacks are
// the Store's own memory, shared with every snapshot that holds them. Writing
// to them corrupts the Store for all readers. They stay valid (unchanged) for
// as long as the caller holds them, but kv only promises that until the
// transaction ends; code that relies on more will break on other backends.
//
// A Tx used after its function returned returns an error from every method
// (it would otherwise write into a committed snapshot). A Put, Delete or
// DeleteRange on a bucket that a Scan in the same transaction is iterating
// (from inside the Scan callback) returns an error instead of corrupting the
// iteration.
//
// Calling Update from inside an Update function deadlocks; kv forbids nested
// transactions.
package memkv
