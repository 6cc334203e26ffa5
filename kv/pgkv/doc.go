//go:build !js

// Package pgkv is a kv.Store on PostgreSQL (github.com/jackc/pgx/v5), for
// several relay processes sharing one database. Each Store is one namespace
// (a relay database's id) of one shared table; any number of Stores, in any
// number of processes, may be open on the same namespace.
//
//	pool, err := pgxpool.New(ctx, "postgres://relay@db/replica")
//	s, err := pgkv.Open(ctx, pool, "db-42", []string{"log", "meta"})
//	defer s.Close() // the pool stays open: it is the caller's
//
// # Tables
//
// Open runs Migrate, which creates (idempotently, under a session advisory
// lock, so processes starting together do not race) three tables:
//
//	replica_kv (ns text, bucket text, k bytea, v bytea NOT NULL,
//	            PRIMARY KEY (ns, bucket, k))
//	replica_namespaces (ns text PRIMARY KEY, created timestamptz)
//	replica_schema_version (component text PRIMARY KEY, version int)
//
// One table for every namespace and bucket keeps the schema fixed: buckets
// and namespaces are values, so opening a new relay database is an INSERT
// into replica_namespaces, not DDL, and a Store's bucket set may change
// between opens without migrations. The primary key's B-tree is the only
// index: point reads, GetMany's join with the unnest'ed keys and Scan's
// ranges all are index scans on (ns, bucket, k), and bytea compares as
// bytes.Compare does, so SQL order is kv order. The joins (a read or a
// delete of several keys) run with plan_cache_mode = force_custom_plan for
// the rest of their transaction: a prepared statement's generic plan, made
// while the table was small, scanned the whole namespace once the table
// had grown, until the next ANALYZE (TestPlansFollowGrowth). Text ns and bucket cost their length in every index entry; a
// relay's namespace ids and bucket names are short, and a numeric
// indirection would cost a join or a cache to save a few bytes a row.
// replica_schema_version holds the version of this layout ("kv" = 1) so a
// later version can migrate it; Migrate fails with ErrSchemaTooNew on a
// database a newer version migrated.
//
// Namespaces lists replica_namespaces (every namespace Open registered);
// Drop deletes a namespace's rows and registration, holding its lock.
//
// # Isolation and locking
//
// Update runs a READ COMMITTED transaction whose first statement is
// pg_advisory_xact_lock(LockKey(namespace)): Updates on one namespace are
// serialized across every process (the kv contract, and the relay's
// gap-free cursors, rely on it), and since each statement of a READ
// COMMITTED transaction reads the latest committed state, an Update sees
// everything the previous lock holder committed. (REPEATABLE READ would be
// wrong here: its snapshot could predate the previous holder's commit.)
// Within a Store, Updates also queue on a mutex, so waiting writers do not
// each hold a connection. Updates on different namespaces do not wait for
// each other.
//
// View runs a REPEATABLE READ READ ONLY transaction: one snapshot, taken
// at its first query, serves all its reads. It takes no lock; Views run
// alongside each other and alongside Updates.
//
// Transactions begin lazily: the BEGIN (and the lock) travel in one pipeline
// with the first query, and a transaction that reads nothing costs nothing
// until its commit.
//
// # Reads and writes
//
// Put and Delete are buffered in memory, in an ordered overlay per bucket,
// and sent with the COMMIT in one pipeline (one round trip): one DELETE of
// every deleted key, one INSERT ... SELECT FROM unnest(...) ON CONFLICT DO
// UPDATE of every put key (split every 32 MiB of values), then COMMIT. An
// Update that only writes is therefore one round trip in all; every read is
// one.
//
// Reads consult the overlay first (read-your-writes), then what the
// transaction read already (a key is read from the database once per
// transaction: its snapshot, or the namespace lock, keeps it). Get and
// GetMany are one query for all the keys neither answers ((bucket, k) IN
// unnest(...), for GetBatch across buckets too). Prefetch (kv.Prefetcher)
// queues keys that travel in the transaction's next pipeline, whatever
// its query (a Get of other keys, a Scan page, a DeleteRange, read after
// it): a caller that knows what it will read, such as the relay's apply,
// pays one round trip for all of it. DeleteRange runs
// its DELETE at once and drops the overlay's entries in the range. Scan
// merges the overlay with the database's rows in key order (Reverse, Limit
// and KeysOnly included), reading the database with keyset pagination: at
// most 512 rows a query (WHERE k > last ORDER BY k LIMIT 512), with values
// over 64 KiB left out of the page and read one by one when the Scan reaches
// them, so a scan of a huge bucket, or of 8 MiB values, holds at most one
// page (32 MiB of values) in memory. (Capping a page by a running
// sum(octet_length(v)) in a window function did the same in one query but
// cost the server about half again as much per page.) Each page is read whole before the callback sees it, so
// the callback may Get (and Put to other buckets) through the same
// transaction.
//
// Returned slices are copies, valid as long as the caller keeps them.
//
// # Notifications
//
// The Tx of an Update implements Notifier: tx.(pgkv.Notifier).Notify(channel,
// payload) queues a pg_notify sent with the commit, so listeners (LISTEN on
// any connection, in any process) hear of a write exactly when it commits:
// the relays' fan-out.
//
// # Errors
//
//   - kv.ErrClosed after Close, or when the pool given to Open was closed.
//   - kv.ErrUnavailable: the server cannot be reached, the connection was
//     lost, the server is shutting down or starting (SQLSTATE class 08,
//     57P01, 57P02, 57P03, 53300), or the transaction's time (Options.TxTimeout,
//     30 s by default, which also bounds the wait for the namespace lock) ran
//     out. Nothing of the transaction was written; the pool reconnects on a
//     later transaction. A pooled connection that died while idle (a server
//     restart) is retried once, on a fresh connection, when the
//     transaction's first pipeline fails on it and nothing can have been
//     written: a read-write transaction does not notice; a write-only one
//     notices only when the COMMIT had been sent.
//   - kv.ErrCommitUnknown: the connection was lost after the pipeline
//     carrying the COMMIT was sent and before its answer arrived. The
//     transaction may or may not have been written; it does not match
//     kv.ErrUnavailable. An error the server answered for a statement before
//     the COMMIT means the COMMIT never ran, and is reported as such. The
//     classification is conservative: a connection lost while pgx prepares
//     the commit's statements (first use of a statement on a connection)
//     also reports ErrCommitUnknown, though nothing was sent.
//   - kv.ErrQuotaExceeded: the server's disk is full (SQLSTATE 53100).
//   - Any database error breaks the transaction (PostgreSQL aborts it):
//     later reads return the same error and the commit fails with it, even
//     if fn returns nil. The kv errors of Tx methods (ErrNotFound,
//     ErrInvalidKey, ...) are checked in Go and do not break it.
//   - A panic in fn rolls back and continues on the caller's goroutine; a
//     Store keeps working.
//
// Close waits for running transactions, then makes Update and View return
// kv.ErrClosed; it never closes the pool.
//
// # What is measured
//
// pgkv_test.go runs the kvtest conformance suite (its concurrency group
// included) on a private cluster from internal/pgtest, plus: two Stores on
// one namespace through two pools incrementing one counter concurrently
// lose no increment; namespaces are isolated and Drop and Namespaces work;
// Migrate from 8 pools at once; a server restart gives ErrUnavailable while
// it is down and loses nothing committed; Scan's merge of the overlay with
// several database pages matches memkv on random operations; a Scan
// callback reading and writing through its transaction across pages; a
// connection lost after the COMMIT was sent (a proxy dropping the server's
// answer) giving ErrCommitUnknown, and after a read ErrUnavailable;
// TxTimeout bounding the wait for the namespace lock.
//
// The kvtest benchmarks run on pgkv and on bbolt in the same binary
// (BenchmarkPgkv, BenchmarkBoltkv, BenchmarkBoltkvNoSync):
//
//	go test -run '^$' -bench . -count=3 ./kv/pgkv
//
// On the loopback test server (PostgreSQL 15, fsync=off,
// synchronous_commit=off) on two cores shared with other work (load average
// 3 to 4 during the run), medians of three, pgkv against bbolt (fsync on)
// and bbolt NoSync in the same run:
//
//	                   pgkv        vs bbolt   vs NoSync
//	PutSingle          240 µs      0.6x       5.9x    (one round trip)
//	Put1000            19 µs/put   0.8x       1.3x    (one INSERT ... unnest)
//	ReadModifyWrite100 248 µs/rmw  6.1x       12x     (a round trip per Get)
//	Get (one View)     372 µs      149x       187x
//	GetMany100         1.7 ms      76x        62x     (one query)
//	Scan10000          24 ms       103x       107x    (20 pages of 512)
//
// The relay's own figures on pgkv (round trips per apply, throughput and
// cross-relay latency) are relay/pgstore's benchmarks (relay/doc.go §
// Several relays on PostgreSQL).
//
// Figures that are mostly round trips move by half with the machine's load:
// on a quieter run ReadModifyWrite100 was 98 µs/rmw (2.1x bbolt) and Get
// 206 µs.
// A round trip costs 100 to 250 µs here; reads pay it each, so callers batch
// them (GetMany, kv.BatchGetter) where they can. Writes cost no round trip
// until the commit. A production server syncing its WAL adds its fsync to
// every commit, as bbolt's does.
package pgkv
