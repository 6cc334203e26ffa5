//go:build !js

// Package pgstore keeps a relay's databases in PostgreSQL, shared by any
// number of relay processes (docs/design.md § Beyond one machine:
// PostgreSQL; relay/doc.go § Several relays on PostgreSQL).
//
// # What it stores
//
// Each relay database is one namespace of kv/pgkv's table: the arrival log
// with its dedup index, the head, the horizon marks, the merged replica of
// a plain database (the engine over pgkv) and the sealed checkpoints of a
// sealed one, exactly the buckets the bbolt file holds. The relay's log
// rules run unchanged over it; what one process keeps with mutexes, the
// relays keep with PostgreSQL advisory locks, and LISTEN/NOTIFY carries the
// fan-out between them:
//
//   - every read-write kv transaction of a database takes its
//     transaction-level advisory lock first (pgkv), so a head read and
//     moved inside one is gap-free across relays, and an acknowledgment
//     is sent only after its COMMIT returned;
//   - Lock (session-level, key (1, h(id))): an apply, and a horizon mark
//     with its pruning, several transactions long;
//   - StreamStarted / HoldStreams (shared / exclusive, key (3, h(id))): a
//     snapshot stream on any relay keeps every relay from making a mark;
//   - TryMaintain (key (2, h(id))): one relay at a time maintains a
//     database;
//   - NotifyTx queues pg_notify('replica_relay', "<relay instance> <cursor>
//     <database id>") in the transaction that moves a database's head, so
//     it leaves with the COMMIT (Notify sends it on its own); Listen holds
//     one connection LISTENing and reports the other instances'
//     notifications.
//
// A session-level lock is held on a pooled connection for as long as it is
// held; a connection lost meanwhile releases it on the server. The
// two-key advisory locks used here never conflict with pgkv's one-key
// transaction locks.
//
// # Errors
//
// PostgreSQL unreachable, restarted or shutting down: kv.ErrUnavailable
// (nothing written) or kv.ErrCommitUnknown (the connection was lost during
// COMMIT) from the stores, and wrapped pgx errors from the methods here.
// The relay answers with transient errors meanwhile; the pool reconnects
// by itself.
//
// # Benchmarks
//
// bench_test.go measures push throughput, cross-relay latency and round
// trips to PostgreSQL per apply for one relay on bbolt, one on PostgreSQL
// and three on one PostgreSQL, in one run (make bench-go); relay/doc.go §
// Several relays on PostgreSQL gives the figures. relational_bench_test.go
// measures the merged replica this package stores (the engine over pgkv)
// against relational cells with the LWW rule in SQL, built there in test
// code: applying the same ChangeSets of 1 and 100 rows, and reading a
// 10,000-row table as a snapshot's rows; the same section gives the
// figures and why the engine over pgkv stays.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/pgkv"
	"github.com/replica-sync/replica/relay"
)

// channel is the LISTEN/NOTIFY channel of relay commits.
const channel = "replica_relay"

// Advisory lock classes (the first key of the two-key form).
const (
	classLock     = 1
	classMaintain = 2
	classStreams  = 3
)

// DefaultMaxConns is the size of each of a Store's two pools when the
// URL sets no pool_max_conns: one runs the kv transactions (and LISTEN),
// the other holds the session-level advisory locks (an apply's writer
// lock, a database's snapshot streams, maintenance). Two pools, so that
// lock holders waiting for a transaction's connection can never use up
// the connections transactions need. A relay thus opens up to 2 ×
// DefaultMaxConns connections: size PostgreSQL's max_connections for
// every relay on it (relay/doc.go § Several relays on PostgreSQL).
const DefaultMaxConns = 16

// Store is a relay.SharedStorage on one PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool // kv transactions, NOTIFY, LISTEN
	locks    *pgxpool.Pool // session-level advisory locks
	ownPool  bool
	instance string // this process's name in notifications

	mu      sync.Mutex
	streams map[string]*streamHold // database id → this process's shared stream lock
}

var _ relay.SharedStorage = (*Store)(nil)

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// libpq key=value string; pool_max_conns is honoured, default
// DefaultMaxConns), creates or migrates pgkv's tables, and returns the
// Store. Close closes the pool.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	locks, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s, err := New(ctx, pool, locks)
	if err != nil {
		pool.Close()
		locks.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// New returns a Store over pool (kv transactions) and locks (the
// advisory locks; see DefaultMaxConns), which the caller closes after the
// Store's users, creating or migrating pgkv's tables. They may be one
// pool only if it can never be used up by lock holders.
func New(ctx context.Context, pool, locks *pgxpool.Pool) (*Store, error) {
	if err := pgkv.Migrate(ctx, pool); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Store{pool: pool, locks: locks, instance: hex.EncodeToString(b[:]), streams: map[string]*streamHold{}}, nil
}

// Pool returns the Store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool when Open made it.
func (s *Store) Close() error {
	if s.ownPool {
		s.pool.Close()
		s.locks.Close()
	}
	return nil
}

// Open opens database id's store: namespace id of pgkv's table.
func (s *Store) Open(id string) (kv.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return pgkv.Open(ctx, s.pool, id, relay.StoreBuckets())
}

// key is the second advisory-lock key of database id.
func key(id string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int32(h.Sum32())
}

// session holds an advisory lock on a pooled connection. Its release
// unlocks and returns the connection to the pool; with async it returns at
// once and does that in the background (a later lock of the same key, by
// any process, waits for the unlock on the server, and the connection is
// not reused before it).
func (s *Store) session(ctx context.Context, sql string, class int32, id string, async bool) (release func(), ok bool, err error) {
	c, err := s.locks.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	k := key(id)
	if err := c.QueryRow(ctx, sql, class, k).Scan(&ok); err != nil {
		c.Release()
		return nil, false, err
	}
	if !ok {
		c.Release()
		return nil, false, nil
	}
	unlock := "SELECT pg_advisory_unlock($1, $2)"
	if strings.Contains(sql, "_shared") {
		unlock = "SELECT pg_advisory_unlock_shared($1, $2)"
	}
	var once sync.Once
	do := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Exec(ctx, unlock, class, k); err != nil {
			// The lock may still be held on this connection:
			// close it, which releases it on the server.
			_ = c.Conn().Close(ctx)
		}
		c.Release()
	}
	return func() {
		once.Do(func() {
			if async {
				go do()
			} else {
				do()
			}
		})
	}, true, nil
}

// Lock takes database id's writer lock (see relay.SharedStorage). Its
// release returns at once, the unlock's round trip left to the
// background: the next holder, in this process or another, is served
// once the server has it, and the apply that released it answers its
// client meanwhile.
func (s *Store) Lock(ctx context.Context, id string) (func(), error) {
	release, _, err := s.session(ctx, "SELECT pg_advisory_lock($1, $2) IS NOT NULL", classLock, id, true)
	if err != nil {
		return nil, fmt.Errorf("pgstore: lock %q: %w", id, err)
	}
	return release, nil
}

// TryMaintain takes database id's maintenance right if free.
func (s *Store) TryMaintain(ctx context.Context, id string) (func(), bool, error) {
	release, ok, err := s.session(ctx, "SELECT pg_try_advisory_lock($1, $2)", classMaintain, id, false)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: maintenance lock %q: %w", id, err)
	}
	return release, ok, nil
}

// streamHold is this process's shared stream lock on one database, held
// while any of its snapshot streams runs.
type streamHold struct {
	n       int
	ready   chan struct{} // closed once the lock is taken (or failed)
	err     error
	release func()
}

// StreamStarted registers a snapshot stream of database id: the first
// stream of this process takes the shared stream lock, the last one's
// end releases it.
func (s *Store) StreamStarted(ctx context.Context, id string) (func(), error) {
	s.mu.Lock()
	h := s.streams[id]
	if h == nil {
		h = &streamHold{ready: make(chan struct{})}
		s.streams[id] = h
		h.n++
		s.mu.Unlock()
		h.release, _, h.err = s.session(ctx, "SELECT pg_advisory_lock_shared($1, $2) IS NOT NULL", classStreams, id, false)
		close(h.ready)
	} else {
		h.n++
		s.mu.Unlock()
		<-h.ready
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			s.mu.Lock()
			h.n--
			last := h.n == 0
			if last && s.streams[id] == h {
				delete(s.streams, id)
			}
			s.mu.Unlock()
			if last && h.release != nil {
				h.release()
			}
		})
	}
	if h.err != nil {
		end()
		return func() {}, fmt.Errorf("pgstore: stream lock %q: %w", id, h.err)
	}
	return end, nil
}

// HoldStreams reports whether no relay streams a snapshot of database id,
// and keeps streams from starting until release.
func (s *Store) HoldStreams(ctx context.Context, id string) (func(), bool, error) {
	release, ok, err := s.session(ctx, "SELECT pg_try_advisory_lock($1, $2)", classStreams, id, false)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: stream lock %q: %w", id, err)
	}
	return release, ok, nil
}

var _ relay.TxNotifier = (*Store)(nil)

// Notify tells the other relays that database id's head is head.
func (s *Store) Notify(ctx context.Context, id string, head uint64) error {
	_, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, s.payload(id, head))
	return err
}

// NotifyTx queues Notify's notification in tx, a transaction of one of
// the Store's stores (pgkv.Notifier): it is sent in the COMMIT's pipeline
// and delivered only if the transaction commits. It reports false for a
// transaction that cannot carry it.
func (s *Store) NotifyTx(tx kv.Tx, id string, head uint64) bool {
	n, ok := tx.(pgkv.Notifier)
	return ok && n.Notify(channel, s.payload(id, head)) == nil
}

// payload is the notification of database id's head: "<instance> <head>
// <id>".
func (s *Store) payload(id string, head uint64) string {
	return s.instance + " " + strconv.FormatUint(head, 10) + " " + id
}

// Listen reports the other relays' notifications (see
// relay.SharedStorage).
func (s *Store) Listen(ctx context.Context, fn func(id string, head uint64)) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool: a LISTENing session is not
	// handed to anyone else.
	conn := c.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	fn("", 0) // what was notified before this LISTEN is not known
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		inst, rest, ok1 := strings.Cut(n.Payload, " ")
		hs, id, ok2 := strings.Cut(rest, " ")
		head, err := strconv.ParseUint(hs, 10, 64)
		if !ok1 || !ok2 || err != nil || id == "" {
			continue // not ours
		}
		if inst == s.instance {
			continue
		}
		fn(id, head)
	}
}

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return errors.Join(kv.ErrUnavailable, err)
	}
	return nil
}
