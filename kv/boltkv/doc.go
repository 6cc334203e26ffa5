//go:build !js

// Package boltkv is a kv.Store in one bbolt file (go.etcd.io/bbolt), for
// native replicas and the relay. It does not build for js/wasm.
//
// # Basics
//
// Open(path, buckets, opts) opens or creates the file and creates any of the
// buckets it lacks (buckets already in the file and not named are left alone
// and are invisible: transactions naming them get kv.ErrBucketNotFound).
// Each kv bucket is a top-level bbolt bucket; keys and values are stored as
// they are.
//
// Update is a bbolt read-write transaction and View a read-only one. bbolt
// allows one writer at a time and any number of readers; readers see the
// state committed when they began and do not block the writer, except that a
// commit which must grow the memory map waits for open readers to finish.
//
// # Durability
//
// By default every commit fsyncs (fdatasync on Linux) the written pages and
// then the meta page before Update returns, so a committed Update survives a
// crash or power loss, and a torn commit is rolled back on the next Open.
// Options.NoSync skips both syncs: an operating-system crash may then lose
// recent commits or corrupt the file. It exists for tests and benchmarks
// only.
//
// # One file, one Store
//
// Open takes an exclusive flock on the file, so a second Open of the same
// file, from this process or another, waits Options.Timeout (DefaultTimeout
// if zero) and then fails with ErrLocked instead of hanging.
//
// # Errors
//
// Errors carry kv's sentinels (test with errors.Is) and, where bbolt or the
// operating system produced them, the original error too: a full disk
// (ENOSPC) or bbolt's size limit is kv.ErrQuotaExceeded, bbolt's
// ErrDatabaseNotOpen is kv.ErrClosed, and so on. A failed commit is returned
// as "boltkv: commit: ..." and nothing of the transaction is written.
//
// # Caveats
//
// Byte slices returned by Get and GetMany and passed to Scan callbacks point
// into bbolt's read-only memory map and are valid only until the transaction
// ends; writing to one crashes the program, and reading one after the
// transaction may crash it or return other data. Copy what you keep.
//
// Put copies the value (bbolt itself would keep the caller's slice until
// commit). A Tx used after its function returned returns an error from every
// method. A write to a bucket from inside a Scan callback of the same bucket
// returns an error (a bbolt cursor does not survive it).
package boltkv
