//go:build !js

package pgkv

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/kv"
)

var (
	_ kv.Store       = (*Store)(nil)
	_ kv.BatchGetter = (*tx)(nil)
	_ kv.Prefetcher  = (*tx)(nil)
)

// Errors particular to a network backend; they are the kv package's, so
// callers holding a kv.Store need not import pgkv to test for them.
var (
	// ErrUnavailable: the server cannot be reached; nothing was written.
	ErrUnavailable = kv.ErrUnavailable
	// ErrCommitUnknown: the connection was lost during COMMIT; the
	// transaction may or may not have been written.
	ErrCommitUnknown = kv.ErrCommitUnknown
)

var (
	// errTxDone is returned by Tx methods called after the transaction's
	// function returned.
	errTxDone = errors.New("pgkv: transaction used after its function returned")
	// errWriteWhileScanning is returned by a write to a bucket that a Scan of
	// the same transaction is iterating.
	errWriteWhileScanning = errors.New("pgkv: write to a bucket from inside a Scan of it")
)

// DefaultTxTimeout bounds one Update or View (waiting for the namespace lock,
// every query, the commit) when Options.TxTimeout is zero.
const DefaultTxTimeout = 30 * time.Second

// Options configures OpenWith. The zero value means the defaults.
type Options struct {
	// TxTimeout bounds each transaction from its first statement to its
	// commit; when it passes, the running query is cancelled and the
	// transaction fails with kv.ErrUnavailable (or kv.ErrCommitUnknown if
	// the commit was in flight). Zero or negative means DefaultTxTimeout.
	TxTimeout time.Duration
}

// Store is a kv.Store over one namespace of the replica_kv table. It is safe
// for concurrent use by multiple goroutines, and several Stores (in this
// process or others) may share a namespace: their Updates are serialized by
// PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	ns      string
	lockKey int64
	timeout time.Duration
	// index maps bucket names to positions in names; read-only after Open.
	index map[string]int
	names []string

	// writeMu serializes this Store's Updates in-process, so waiting writers
	// do not each hold a pool connection blocked on the advisory lock.
	writeMu sync.Mutex
	// running counts transactions in progress; Close waits for it to drain.
	runMu   sync.Mutex
	runCond *sync.Cond
	running int
	closed  atomic.Bool
}

// Open opens the namespace of the shared table as a Store with the given
// buckets, with the default Options. See OpenWith.
func Open(ctx context.Context, pool *pgxpool.Pool, namespace string, buckets []string) (*Store, error) {
	return OpenWith(ctx, pool, namespace, buckets, Options{})
}

// OpenWith runs Migrate (once per pool in this process), registers namespace
// (see Namespaces) and returns a Store over it. Buckets need no creation:
// they are the bucket column's values. The pool stays the caller's: Close
// does not close it.
func OpenWith(ctx context.Context, pool *pgxpool.Pool, namespace string, buckets []string, o Options) (*Store, error) {
	if err := migrateOnce(ctx, pool); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO replica_namespaces (ns) VALUES ($1) ON CONFLICT DO NOTHING`, namespace); err != nil {
		return nil, fmt.Errorf("pgkv: open namespace %q: %w", namespace, mapErr(err))
	}
	if o.TxTimeout <= 0 {
		o.TxTimeout = DefaultTxTimeout
	}
	s := &Store{
		pool:    pool,
		ns:      namespace,
		lockKey: LockKey(namespace),
		timeout: o.TxTimeout,
		index:   make(map[string]int, len(buckets)),
	}
	s.runCond = sync.NewCond(&s.runMu)
	for _, b := range buckets {
		if _, dup := s.index[b]; dup {
			continue
		}
		s.index[b] = len(s.names)
		s.names = append(s.names, b)
	}
	return s, nil
}

// Namespace returns the namespace the Store was opened on.
func (s *Store) Namespace() string { return s.ns }

// LockKey returns the key of the transaction-level advisory lock
// (pg_advisory_xact_lock) every Update on namespace takes first: FNV-1a 64
// of "replica_kv/" + namespace. Two namespaces with the same key only
// serialize each other's writers.
func LockKey(namespace string) int64 {
	h := fnv.New64a()
	h.Write([]byte("replica_kv/"))
	h.Write([]byte(namespace))
	return int64(h.Sum64())
}

// Update runs fn in a read-write transaction: READ COMMITTED, holding the
// namespace's advisory lock from its first statement to its end, with the
// writes buffered in memory and sent with the COMMIT. It returns
// kv.ErrClosed after Close, fn's error unchanged, or the failure of a
// statement or of the commit wrapped as "pgkv: ..." (kv.ErrUnavailable,
// kv.ErrCommitUnknown, kv.ErrQuotaExceeded where they apply). A panic in fn
// rolls back and continues.
func (s *Store) Update(fn func(kv.Tx) error) error {
	return s.run(true, fn)
}

// View runs fn in a REPEATABLE READ READ ONLY transaction: one snapshot,
// taken at its first query, for all its reads. It takes no lock and runs
// alongside Updates and other Views.
func (s *Store) View(fn func(kv.Tx) error) error {
	return s.run(false, fn)
}

func (s *Store) enter() bool {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.running++
	return true
}

func (s *Store) leave() {
	s.runMu.Lock()
	s.running--
	if s.running == 0 {
		s.runCond.Broadcast()
	}
	s.runMu.Unlock()
}

func (s *Store) run(writable bool, fn func(kv.Tx) error) (err error) {
	if !s.enter() {
		return kv.ErrClosed
	}
	var t *tx
	defer func() {
		if t == nil || !t.endsLater {
			s.leave()
		}
	}()
	if writable {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	t = &tx{s: s, ctx: ctx, writable: writable}
	finished := false
	defer func() {
		t.done = true
		if !finished {
			t.abort()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	t.done = true
	finished = true
	return t.finish()
}

// Close waits for running transactions to end; later Updates and Views
// return kv.ErrClosed. It does not close the pool. Close is idempotent and
// returns nil.
func (s *Store) Close() error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.closed.Store(true)
	for s.running > 0 {
		s.runCond.Wait()
	}
	return nil
}

// tx is a kv.Tx over one PostgreSQL transaction, begun lazily: the BEGIN
// (and, in an Update, the advisory lock) travels with the first query, and a
// transaction that only writes sends everything with its COMMIT, in one round
// trip.
type tx struct {
	s        *Store
	ctx      context.Context
	writable bool
	done     bool

	conn  *pgxpool.Conn
	begun bool
	// endsLater is set when a View's COMMIT runs after View returned.
	endsLater bool
	// committing is set while the batch carrying the COMMIT is in flight.
	committing bool
	// broken is the first database error of the transaction; PostgreSQL
	// aborts the transaction on it, so every later query and the commit
	// fail with it.
	broken error

	// over holds, per bucket (indexed like Store.names), the Puts and
	// Deletes not yet sent; nil until the bucket is written.
	over []*btree.BTreeG[*ent]
	// scanning counts, per bucket, the Scans in progress.
	scanning []int32
	// notes are the notifications Notify queued, sent before the COMMIT.
	notes [][2]string

	// pre are the keys Prefetch queued, read with the next request
	// (preSet: the same, to drop repeats); cache holds what reads of them
	// found, absent keys included, until the transaction ends. The
	// database cannot change under a transaction (a View's snapshot, an
	// Update's namespace lock), so a cached value stays right unless the
	// transaction itself writes the key: the overlay is consulted first,
	// and DeleteRange drops the cached keys of its range.
	pre    []want
	preSet map[want]struct{}
	cache  map[want]cached
}

// want names one key of one bucket (by index in Store.names).
type want struct {
	bucket int
	key    string
}

// cached is a prefetched read: the value, or ok false for an absent key.
type cached struct {
	v  []byte
	ok bool
}

// Notifier is implemented by the Tx of a pgkv Update: callers type-assert
// the kv.Tx to it.
type Notifier interface {
	// Notify queues pg_notify(channel, payload) in the transaction: it is
	// sent with the commit, and PostgreSQL delivers it to the channel's
	// listeners (LISTEN, in any process) only if the transaction commits.
	Notify(channel, payload string) error
}

var _ Notifier = (*tx)(nil)

// Notify implements Notifier. It returns kv.ErrReadOnly in a View.
func (t *tx) Notify(channel, payload string) error {
	if t.done {
		return errTxDone
	}
	if !t.writable {
		return kv.ErrReadOnly
	}
	t.notes = append(t.notes, [2]string{channel, payload})
	return nil
}

// ent is a buffered write: a value, or a deletion.
type ent struct {
	k, v []byte
	del  bool
}

func entLess(a, b *ent) bool { return string(a.k) < string(b.k) }

// emptyValue is returned for an existing empty value.
var emptyValue = []byte{}

// beginSQL returns the statements that open the transaction.
func (t *tx) beginSQL(b *pgx.Batch) int {
	if t.writable {
		b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, t.s.lockKey)
		return 2
	}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	return 1
}

// send runs the statements queue adds, preceded by the BEGIN if the
// transaction has not begun and followed by the read of the keys Prefetch
// queued, in one round trip, and passes their results to read. Any failure breaks the
// transaction.
func (t *tx) send(queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) error {
	if t.broken == nil && len(t.pre) > 0 && !t.committing {
		if ask := t.takePrefetch(); len(ask) > 0 {
			q, r := queue, read
			// After the statements: a DeleteRange's prefetched keys
			// are read as it left them.
			queue = func(b *pgx.Batch) {
				q(b)
				t.queueGet(b, ask)
			}
			read = func(br pgx.BatchResults) error {
				if err := r(br); err != nil {
					return err
				}
				return t.readGet(br, ask, nil)
			}
		}
	}
	return t.sendPlain(queue, read)
}

// sendPlain is send without the prefetched keys.
func (t *tx) sendPlain(queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) error {
	if t.broken != nil {
		return t.broken
	}
	err := t.send1(queue, read)
	if err != nil {
		t.broken = err
	}
	return err
}

func (t *tx) send1(queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) error {
	for attempt := 0; ; attempt++ {
		retry, err := t.sendOnce(queue, read)
		if err == nil || !retry || attempt > 0 || t.ctx.Err() != nil {
			return err
		}
		// A pooled connection the server had closed (a restart since it
		// was last used): nothing of the transaction ran, or what ran
		// died with the session uncommitted. Once more on a fresh one.
		t.conn.Release()
		t.conn = nil
		t.begun = false
	}
}

// sendOnce is one attempt of send1. retry reports whether the transaction's
// first batch failed because its connection was dead, in a way that leaves
// nothing written: before the COMMIT was sent, or, for a batch carrying the
// COMMIT, with an answer to the BEGIN itself.
func (t *tx) sendOnce(queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) (retry bool, err error) {
	if t.conn == nil {
		c, err := t.s.pool.Acquire(t.ctx)
		if err != nil {
			return false, fmt.Errorf("pgkv: connect: %w", mapErr(err))
		}
		t.conn = c
	}
	first := !t.begun
	deadConn := func(err error) bool {
		return first && unavailable(err) && t.conn.Conn().IsClosed()
	}
	b := &pgx.Batch{}
	nbegin := 0
	if !t.begun {
		nbegin = t.beginSQL(b)
	}
	queue(b)
	br := t.conn.SendBatch(t.ctx, b)
	for i := range nbegin {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if t.committing {
				// The COMMIT was in the same batch: only an answer to
				// the BEGIN, or nothing sent, proves it did not run.
				var pgErr *pgconn.PgError
				retry := deadConn(err) && i == 0 && (errors.As(err, &pgErr) || pgconn.SafeToRetry(err))
				return retry, fmt.Errorf("pgkv: begin: %w", commitErr(err, false))
			}
			return deadConn(err), fmt.Errorf("pgkv: begin: %w", mapErr(err))
		}
	}
	t.begun = true
	if err := read(br); err != nil {
		_ = br.Close()
		return !t.committing && deadConn(err), err
	}
	if err := br.Close(); err != nil {
		return false, fmt.Errorf("pgkv: %w", mapErr(err))
	}
	return false, nil
}

// abort rolls back (after fn failed or panicked) and releases the
// connection.
func (t *tx) abort() {
	if t.conn == nil {
		return
	}
	c := t.conn
	t.conn = nil
	if t.begun && !c.Conn().IsClosed() {
		// The transaction's context may have run out; roll back under a
		// short one of its own. If this fails, Release drops the
		// connection (it is not idle).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.Exec(ctx, "ROLLBACK")
		cancel()
	}
	c.Release()
}

// finish commits an Update (sending its buffered writes with the COMMIT) or
// ends a View, and releases the connection.
func (t *tx) finish() error {
	if !t.writable && t.begun && t.broken == nil {
		// End the snapshot after returning: the reads are done and
		// copied, and a failure here loses nothing. Close waits for it.
		t.endsLater = true
		c := t.conn
		t.conn = nil
		go func() {
			defer t.s.leave()
			ctx, cancel := context.WithTimeout(context.Background(), t.s.timeout)
			defer cancel()
			_, _ = c.Exec(ctx, "COMMIT")
			c.Release() // drops the connection if COMMIT failed
		}()
		return nil
	}
	if !t.writable || t.broken != nil {
		err := t.broken
		t.abort()
		if err != nil {
			return fmt.Errorf("pgkv: commit: the transaction failed earlier: %w", err)
		}
		return nil
	}
	stmts := t.flushStatements()
	if len(stmts) == 0 && !t.begun {
		return nil // nothing read, nothing written
	}
	committed := false
	t.committing = true
	err := t.send(func(b *pgx.Batch) {
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
		b.Queue("COMMIT")
	}, func(br pgx.BatchResults) error {
		for range stmts {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("pgkv: write: %w", commitErr(err, false))
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("pgkv: commit: %w", commitErr(err, true))
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("pgkv: commit: server answered %q", tag.String())
		}
		committed = true
		return nil
	})
	if committed {
		// The COMMIT succeeded; an error reading what follows it changes
		// nothing, and there is nothing left to roll back.
		err = nil
		t.begun = false
	}
	t.abort()
	return err
}

// stmt is one statement of a commit.
type stmt struct {
	sql  string
	args []any
}

// flushChunk bounds the bytes of values one INSERT carries (a bytea[]
// parameter is limited to 1 GiB, and smaller statements keep memory flat).
const flushChunk = 32 << 20

// flushStatements turns the buffered writes into as few statements as
// possible: one DELETE of every deleted key (all buckets) and one INSERT ...
// ON CONFLICT DO UPDATE of every put key, split when the values pass
// flushChunk bytes.
func (t *tx) flushStatements() []stmt {
	var out []stmt
	var dBuckets []string
	var dKeys [][]byte
	var pBuckets []string
	var pKeys, pVals [][]byte
	size := 0
	flushPuts := func() {
		if len(pKeys) == 0 {
			return
		}
		out = append(out, stmt{
			sql: `INSERT INTO replica_kv (ns, bucket, k, v)
SELECT $1, b, k, v FROM unnest($2::text[], $3::bytea[], $4::bytea[]) AS u(b, k, v)
ON CONFLICT (ns, bucket, k) DO UPDATE SET v = EXCLUDED.v`,
			args: []any{t.s.ns, pBuckets, pKeys, pVals},
		})
		pBuckets, pKeys, pVals, size = nil, nil, nil, 0
	}
	for i, o := range t.over {
		if o == nil {
			continue
		}
		name := t.s.names[i]
		o.Ascend(func(e *ent) bool {
			if e.del {
				dBuckets = append(dBuckets, name)
				dKeys = append(dKeys, e.k)
				return true
			}
			if size+len(e.v) > flushChunk {
				flushPuts()
			}
			pBuckets = append(pBuckets, name)
			pKeys = append(pKeys, e.k)
			pVals = append(pVals, e.v)
			size += len(e.v) + len(e.k)
			return true
		})
	}
	var del []stmt
	if len(dKeys) > 0 {
		del = []stmt{{sql: customPlans}, {
			sql: `DELETE FROM replica_kv WHERE ns = $1 AND (bucket, k) IN
(SELECT b, k FROM unnest($2::text[], $3::bytea[]) AS u(b, k))`,
			args: []any{t.s.ns, dBuckets, dKeys},
		}}
	}
	flushPuts()
	out = append(del, out...)
	if len(t.notes) > 0 {
		chans := make([]string, len(t.notes))
		payloads := make([]string, len(t.notes))
		for i, n := range t.notes {
			chans[i], payloads[i] = n[0], n[1]
		}
		out = append(out, stmt{
			sql:  `SELECT count(pg_notify(c, p)) FROM unnest($1::text[], $2::text[]) AS u(c, p)`,
			args: []any{chans, payloads},
		})
	}
	return out
}

// bucket returns the index of the named bucket.
func (t *tx) bucket(name string) (int, error) {
	if t.done {
		return 0, errTxDone
	}
	i, ok := t.s.index[name]
	if !ok {
		return 0, fmt.Errorf("pgkv: bucket %q: %w", name, kv.ErrBucketNotFound)
	}
	return i, nil
}

// writeBucket is bucket for writes: it also refuses writes in a View and to
// a bucket being scanned.
func (t *tx) writeBucket(name string) (int, error) {
	i, err := t.bucket(name)
	if err != nil {
		return 0, err
	}
	if !t.writable {
		return 0, kv.ErrReadOnly
	}
	if t.scanning != nil && t.scanning[i] > 0 {
		return 0, fmt.Errorf("bucket %q: %w", name, errWriteWhileScanning)
	}
	return i, nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > kv.MaxKeySize {
		return fmt.Errorf("pgkv: key of %d bytes (want 1 to %d): %w", len(key), kv.MaxKeySize, kv.ErrInvalidKey)
	}
	return nil
}

// overlay returns the buffered write of key in bucket i, or nil.
func (t *tx) overlay(i int, key []byte) *ent {
	if t.over == nil || t.over[i] == nil {
		return nil
	}
	e, _ := t.over[i].Get(&ent{k: key})
	return e
}

func (t *tx) setOverlay(i int, e *ent) {
	if t.over == nil {
		t.over = make([]*btree.BTreeG[*ent], len(t.s.names))
	}
	if t.over[i] == nil {
		t.over[i] = btree.NewG(16, entLess)
	}
	t.over[i].ReplaceOrInsert(e)
}

// Get returns the value of key, or kv.ErrNotFound: the buffered write if
// there is one, otherwise one query.
func (t *tx) Get(bucket string, key []byte) ([]byte, error) {
	vals, err := t.GetMany(bucket, [][]byte{key})
	if err != nil {
		return nil, err
	}
	if vals[0] == nil {
		return nil, kv.ErrNotFound
	}
	return vals[0], nil
}

// GetMany returns the values of keys in order, nil for absent ones, with one
// query (k = ANY($keys)) for the keys without a buffered write.
func (t *tx) GetMany(bucket string, keys [][]byte) ([][]byte, error) {
	i, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	bks := make([]kv.BucketKey, len(keys))
	for j, k := range keys {
		bks[j] = kv.BucketKey{Bucket: t.s.names[i], Key: k}
	}
	return t.GetBatch(bks)
}

// GetBatch implements kv.BatchGetter: the keys of several buckets in one
// query, which also carries the keys Prefetch queued.
func (t *tx) GetBatch(keys []kv.BucketKey) ([][]byte, error) {
	if t.done {
		return nil, errTxDone
	}
	idx := make([]int, len(keys))
	for j, bk := range keys {
		i, err := t.bucket(bk.Bucket)
		if err != nil {
			return nil, err
		}
		if err := checkKey(bk.Key); err != nil {
			return nil, err
		}
		idx[j] = i
	}
	out := make([][]byte, len(keys))
	// The keys to ask the database for, with the positions wanting them.
	var ask []want
	pending := map[want][]int{}
	for j, bk := range keys {
		if e := t.overlay(idx[j], bk.Key); e != nil {
			if !e.del {
				out[j] = e.v
			}
			continue
		}
		w := want{idx[j], string(bk.Key)}
		if c, ok := t.cache[w]; ok {
			out[j] = c.v
			continue
		}
		if _, ok := pending[w]; !ok {
			ask = append(ask, w)
		}
		pending[w] = append(pending[w], j)
	}
	if len(ask) == 0 {
		return out, nil
	}
	// The prefetched keys travel in the same query.
	for _, w := range t.takePrefetch() {
		if _, ok := pending[w]; !ok {
			ask = append(ask, w)
			pending[w] = nil
		}
	}
	err := t.sendPlain(func(b *pgx.Batch) { t.queueGet(b, ask) }, func(br pgx.BatchResults) error {
		return t.readGet(br, ask, func(w want, v []byte) {
			for _, j := range pending[w] {
				out[j] = v
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Prefetch implements kv.Prefetcher: the keys travel with the
// transaction's next query (GetBatch's own, a Scan page's, a DeleteRange;
// not the COMMIT, after which nothing is read).
func (t *tx) Prefetch(keys []kv.BucketKey) error {
	if t.done {
		return errTxDone
	}
	ws := make([]want, 0, len(keys))
	for _, bk := range keys {
		i, err := t.bucket(bk.Bucket)
		if err != nil {
			return err
		}
		if err := checkKey(bk.Key); err != nil {
			return err
		}
		ws = append(ws, want{i, string(bk.Key)})
	}
	for _, w := range ws {
		if _, ok := t.cache[w]; ok {
			continue
		}
		if _, ok := t.preSet[w]; ok {
			continue
		}
		if t.preSet == nil {
			t.preSet = map[want]struct{}{}
		}
		t.preSet[w] = struct{}{}
		t.pre = append(t.pre, w)
	}
	return nil
}

// takePrefetch returns the queued prefetch keys that neither the overlay
// nor the cache answers, and empties the queue.
func (t *tx) takePrefetch() []want {
	var out []want
	for _, w := range t.pre {
		if t.overlay(w.bucket, []byte(w.key)) != nil {
			continue
		}
		if _, ok := t.cache[w]; ok {
			continue
		}
		out = append(out, w)
	}
	t.pre, t.preSet = nil, nil
	return out
}

// customPlans makes the rest of the transaction plan each statement for
// its parameters. It precedes the statements that join replica_kv with
// unnest'ed keys (a read or a delete of several keys). pgx prepares each
// statement once per connection, and after five runs PostgreSQL may keep
// a generic plan, made without the parameters and kept until replica_kv's
// statistics change. For these joins, one made while the table was small
// scans the whole namespace: a read or delete of 2 keys among 300,000 rows
// read all 300,000 (84 ms instead of 0.1 ms) until autovacuum's ANALYZE
// (TestPlansFollowGrowth). Point reads and Scan's ranges keep their
// generic plans, which are index scans whatever the table's size: planning
// every statement made a single Put 20-40% slower.
const customPlans = `SET LOCAL plan_cache_mode = force_custom_plan`

// queueGet queues the query reading ask (and, for several keys,
// customPlans before it).
func (t *tx) queueGet(b *pgx.Batch, ask []want) {
	if len(ask) == 1 {
		b.Queue(`SELECT bucket, k, v FROM replica_kv WHERE ns = $1 AND bucket = $2 AND k = $3`,
			t.s.ns, t.s.names[ask[0].bucket], []byte(ask[0].key))
		return
	}
	buckets := make([]string, len(ask))
	keys := make([][]byte, len(ask))
	for i, w := range ask {
		buckets[i], keys[i] = t.s.names[w.bucket], []byte(w.key)
	}
	// Not k = ANY($keys): its generic plan filters the whole bucket.
	// This one is a nested loop of index lookups when planned for its
	// parameters, which customPlans asks for.
	b.Queue(customPlans)
	b.Queue(`SELECT bucket, k, v FROM replica_kv WHERE ns = $1 AND (bucket, k) IN
(SELECT b, k FROM unnest($2::text[], $3::bytea[]) AS u(b, k))`, t.s.ns, buckets, keys)
}

// readGet reads the result of queueGet(ask): every key of ask enters the
// cache (absent ones as absent), and found is called for each key read.
func (t *tx) readGet(br pgx.BatchResults, ask []want, found func(w want, v []byte)) error {
	if len(ask) > 1 {
		if _, err := br.Exec(); err != nil { // customPlans
			return fmt.Errorf("pgkv: get: %w", mapErr(err))
		}
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("pgkv: get: %w", mapErr(err))
	}
	defer rows.Close()
	got := make(map[want][]byte, len(ask))
	for rows.Next() {
		var b string
		var k, v []byte
		if err := rows.Scan(&b, &k, &v); err != nil {
			return fmt.Errorf("pgkv: get: %w", mapErr(err))
		}
		if v == nil {
			v = emptyValue
		}
		got[want{t.s.index[b], string(k)}] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgkv: get: %w", mapErr(err))
	}
	if t.cache == nil {
		t.cache = make(map[want]cached, len(ask))
	}
	for _, w := range ask {
		v, ok := got[w]
		t.cache[w] = cached{v: v, ok: ok}
		if ok && found != nil {
			found(w, v)
		}
	}
	return nil
}

// Put buffers key and a copy of value until the commit.
func (t *tx) Put(bucket string, key, value []byte) error {
	i, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("pgkv: value of %d bytes (max %d): %w", len(value), kv.MaxValueSize, kv.ErrValueTooLarge)
	}
	v := make([]byte, len(value)) // non-nil even when empty
	copy(v, value)
	t.setOverlay(i, &ent{k: append([]byte(nil), key...), v: v})
	return nil
}

// Delete buffers the deletion of key until the commit.
func (t *tx) Delete(bucket string, key []byte) error {
	i, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	t.setOverlay(i, &ent{k: append([]byte(nil), key...), del: true})
	return nil
}

// normRange returns the bounds of a Range (nil for unbounded) and whether it
// is empty.
func normRange(start, end []byte) ([]byte, []byte, bool) {
	if len(start) == 0 {
		start = nil
	}
	if end != nil && (len(end) == 0 || (start != nil && string(start) >= string(end))) {
		return nil, nil, true
	}
	return start, end, false
}

// DeleteRange deletes [start, end) in the database at once (one statement)
// and drops the buffered writes in the range.
func (t *tx) DeleteRange(bucket string, start, end []byte) error {
	i, err := t.writeBucket(bucket)
	if err != nil {
		return err
	}
	start, end, empty := normRange(start, end)
	if empty {
		return nil
	}
	if t.over != nil && t.over[i] != nil {
		var drop []*ent
		iter := func(e *ent) bool {
			if end != nil && string(e.k) >= string(end) {
				return false
			}
			drop = append(drop, e)
			return true
		}
		if start == nil {
			t.over[i].Ascend(iter)
		} else {
			t.over[i].AscendGreaterOrEqual(&ent{k: start}, iter)
		}
		for _, e := range drop {
			t.over[i].Delete(e)
		}
	}
	for w := range t.cache {
		if w.bucket == i && (start == nil || w.key >= string(start)) && (end == nil || w.key < string(end)) {
			delete(t.cache, w)
		}
	}
	sql := `DELETE FROM replica_kv WHERE ns = $1 AND bucket = $2`
	args := []any{t.s.ns, bucket}
	if start != nil {
		args = append(args, start)
		sql += fmt.Sprintf(" AND k >= $%d", len(args))
	}
	if end != nil {
		args = append(args, end)
		sql += fmt.Sprintf(" AND k < $%d", len(args))
	}
	return t.send(func(b *pgx.Batch) { b.Queue(sql, args...) }, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("pgkv: delete range: %w", mapErr(err))
		}
		return nil
	})
}

// Scan paging: at most scanPage rows per query; values over scanInline bytes
// are left out of the page and read one by one when the Scan reaches them,
// so a page holds at most scanPage*scanInline bytes of values (32 MiB), not
// 512 values of 8 MiB.
const (
	scanPage   = 512
	scanInline = 64 << 10
)

type row struct {
	k, v []byte
	big  bool // v was left out: over scanInline bytes
}

// Scan merges the buffered writes of the range with the database's rows,
// read with keyset pagination (WHERE k > last ORDER BY k LIMIT n); the page
// is read completely before fn sees its entries, so fn may query the same
// transaction.
func (t *tx) Scan(bucket string, r kv.Range, fn func(key, value []byte) bool) error {
	i, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	start, end, empty := normRange(r.Start, r.End)
	if empty {
		return nil
	}
	if t.writable {
		if t.scanning == nil {
			t.scanning = make([]int32, len(t.s.names))
		}
		t.scanning[i]++
		defer func() { t.scanning[i]-- }()
	}
	// The buffered writes in the range, in the scan's order. The bucket's
	// overlay cannot change during the Scan (writes to it are refused).
	var ov []*ent
	dels := 0
	if t.over != nil && t.over[i] != nil {
		iter := func(e *ent) bool {
			if end != nil && string(e.k) >= string(end) {
				return false
			}
			ov = append(ov, e)
			if e.del {
				dels++
			}
			return true
		}
		if start == nil {
			t.over[i].Ascend(iter)
		} else {
			t.over[i].AscendGreaterOrEqual(&ent{k: start}, iter)
		}
		if r.Reverse {
			for a, b := 0, len(ov)-1; a < b; a, b = a+1, b-1 {
				ov[a], ov[b] = ov[b], ov[a]
			}
		}
	}
	var (
		page   []row
		pi     int
		more   = true // the database may hold rows after page
		cursor []byte // the last database key read
		n      int    // entries visited
		oi     int
	)
	for {
		if pi == len(page) && more {
			size := scanPage
			if r.Limit > 0 {
				size = min(size, r.Limit-n+dels)
			}
			page, more, err = t.fetch(bucket, start, end, cursor, r, size)
			if err != nil {
				return err
			}
			pi = 0
			if len(page) > 0 {
				cursor = page[len(page)-1].k
			}
		}
		var d *row
		if pi < len(page) {
			d = &page[pi]
		}
		var o *ent
		if oi < len(ov) {
			o = ov[oi]
		}
		var k, v []byte
		switch {
		case d == nil && o == nil:
			return nil
		case d == nil:
			oi++
		case o == nil:
			pi++
		default:
			c := cmpKeys(o.k, d.k)
			if r.Reverse {
				c = -c
			}
			switch {
			case c < 0:
				oi++
			case c > 0:
				o = nil
				pi++
			default: // the buffered write replaces the row
				oi++
				pi++
			}
		}
		if o != nil {
			if o.del {
				continue
			}
			k, v = o.k, o.v
		} else {
			k, v = d.k, d.v
			if d.big {
				if v, err = t.fetchValue(bucket, k); err != nil {
					return err
				}
			}
		}
		if r.KeysOnly {
			v = nil
		}
		n++
		if !fn(k, v) || (r.Limit > 0 && n >= r.Limit) {
			return nil
		}
	}
}

func cmpKeys(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// fetch reads the next page of the range after cursor (before it, in
// reverse), and reports whether there may be more.
func (t *tx) fetch(bucket string, start, end, cursor []byte, r kv.Range, size int) ([]row, bool, error) {
	size = max(size, 1)
	args := []any{t.s.ns, bucket}
	where := "ns = $1 AND bucket = $2"
	bound := func(op string, b []byte) {
		args = append(args, b)
		where += fmt.Sprintf(" AND k %s $%d", op, len(args))
	}
	if r.Reverse {
		if start != nil {
			bound(">=", start)
		}
		if cursor != nil {
			bound("<", cursor)
		} else if end != nil {
			bound("<", end)
		}
	} else {
		if cursor != nil {
			bound(">", cursor)
		} else if start != nil {
			bound(">=", start)
		}
		if end != nil {
			bound("<", end)
		}
	}
	order := "k"
	if r.Reverse {
		order = "k DESC"
	}
	args = append(args, size)
	value := fmt.Sprintf("CASE WHEN octet_length(v) <= %d THEN v END", scanInline)
	if r.KeysOnly {
		value = "NULL::bytea"
	}
	sql := fmt.Sprintf(`SELECT k, %s FROM replica_kv WHERE %s ORDER BY %s LIMIT $%d`, value, where, order, len(args))
	var page []row
	err := t.send(func(b *pgx.Batch) { b.Queue(sql, args...) }, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("pgkv: scan: %w", mapErr(err))
		}
		defer rows.Close()
		fds := rows.FieldDescriptions()
		raw := len(fds) == 2 && fds[0].Format == pgx.BinaryFormatCode && fds[1].Format == pgx.BinaryFormatCode
		// With binary results a bytea is its bytes: copy every row of the
		// page into one arena instead of two allocations per row.
		var arena []byte
		for rows.Next() {
			var rw row
			if raw {
				vals := rows.RawValues()
				if arena == nil {
					arena = make([]byte, 0, size*(len(vals[0])+len(vals[1])+16))
				}
				rw.k, arena = carve(arena, vals[0])
				if vals[1] != nil {
					rw.v, arena = carve(arena, vals[1])
				}
			} else if err := rows.Scan(&rw.k, &rw.v); err != nil {
				return fmt.Errorf("pgkv: scan: %w", mapErr(err))
			}
			// v is never NULL in the table: NULL here is a value over
			// scanInline, read when the Scan reaches it.
			rw.big = rw.v == nil && !r.KeysOnly
			if page == nil {
				page = make([]row, 0, size)
			}
			page = append(page, rw)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pgkv: scan: %w", mapErr(err))
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	more := len(page) == size
	return page, more, nil
}

// fetchValue reads one value a Scan page left out. The transaction's
// snapshot (View) or the namespace lock (Update) keeps it there.
func (t *tx) fetchValue(bucket string, key []byte) ([]byte, error) {
	var v []byte
	err := t.send(func(b *pgx.Batch) {
		b.Queue(`SELECT v FROM replica_kv WHERE ns = $1 AND bucket = $2 AND k = $3`, t.s.ns, bucket, key)
	}, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&v); err == nil && v == nil {
			v = emptyValue
		} else if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("pgkv: scan: the value of %q in bucket %q vanished during the scan", key, bucket)
			}
			return fmt.Errorf("pgkv: scan: %w", mapErr(err))
		}
		return nil
	})
	return v, err
}

// carve copies b to the end of arena (a new arena when it is full, so
// earlier carvings stay valid) and returns the copy, non-nil even when
// empty.
func carve(arena, b []byte) ([]byte, []byte) {
	if cap(arena)-len(arena) < len(b) {
		arena = make([]byte, 0, max(2*cap(arena), len(b)))
	}
	n := len(arena)
	arena = append(arena, b...)
	return arena[n:len(arena):len(arena)], arena
}
