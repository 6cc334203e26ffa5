//go:build !js

package pgkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/kv"
)

// SchemaVersion is the version of the tables this package creates, recorded
// in replica_schema_version under the component "kv".
const SchemaVersion = 1

// migrateLockKey is the session advisory lock Migrate holds around its DDL.
var migrateLockKey = LockKey("\x00migrate")

// migrations[v-1] brings the schema from version v-1 to v.
var migrations = []string{
	// 1: the table of every namespace's entries, and the list of namespaces.
	`CREATE TABLE replica_kv (
	ns text NOT NULL,
	bucket text NOT NULL,
	k bytea NOT NULL,
	v bytea NOT NULL,
	PRIMARY KEY (ns, bucket, k)
);
CREATE TABLE replica_namespaces (
	ns text PRIMARY KEY,
	created timestamptz NOT NULL DEFAULT now()
)`,
}

// ErrSchemaTooNew is returned by Migrate (and Open) when the database was
// migrated by a newer version of this package.
var ErrSchemaTooNew = errors.New("pgkv: the database schema is newer than this program")

// Migrate creates or upgrades the tables (replica_kv, replica_namespaces,
// replica_schema_version). It is idempotent and safe to run from several
// processes at once: it holds a session advisory lock around the DDL, and
// each step commits together with its version number. Open runs it.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgkv: migrate: %w", mapErr(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("pgkv: migrate: %w", mapErr(err))
	}
	defer func() {
		// On a lost connection the lock went with it.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS replica_schema_version (
	component text PRIMARY KEY,
	version int NOT NULL
)`); err != nil {
		return fmt.Errorf("pgkv: migrate: %w", mapErr(err))
	}
	var v int
	err = conn.QueryRow(ctx, `SELECT version FROM replica_schema_version WHERE component = 'kv'`).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgkv: migrate: %w", mapErr(err))
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: version %d, this program knows up to %d", ErrSchemaTooNew, v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO replica_schema_version (component, version) VALUES ('kv', $1)
ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("pgkv: migrate to version %d: %w", v+1, mapErr(err))
		}
	}
	return nil
}

// migrated remembers the pools Migrate succeeded on in this process.
var migrated sync.Map // *pgxpool.Pool -> struct{}

func migrateOnce(ctx context.Context, pool *pgxpool.Pool) error {
	if _, ok := migrated.Load(pool); ok {
		return nil
	}
	if err := Migrate(ctx, pool); err != nil {
		return err
	}
	migrated.Store(pool, struct{}{})
	return nil
}

// Drop deletes every entry of namespace and removes it from Namespaces, in
// one transaction holding the namespace's lock (so it waits for a running
// Update and is not interleaved with one). Stores open on the namespace keep
// working; what they write afterwards recreates entries, not the
// registration.
func Drop(ctx context.Context, pool *pgxpool.Pool, namespace string) error {
	if err := migrateOnce(ctx, pool); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, LockKey(namespace)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replica_kv WHERE ns = $1`, namespace); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM replica_namespaces WHERE ns = $1`, namespace)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgkv: drop namespace %q: %w", namespace, mapErr(err))
	}
	return nil
}

// Namespaces returns, sorted, the namespaces opened (by Open, in any
// process) and not dropped since.
func Namespaces(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	if err := migrateOnce(ctx, pool); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT ns FROM replica_namespaces ORDER BY ns`)
	if err != nil {
		return nil, fmt.Errorf("pgkv: namespaces: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgkv: namespaces: %w", mapErr(err))
	}
	return out, nil
}

// unavailable reports whether err means the server could not be reached or
// went away: a lost or refused connection, a server shutting down or
// starting up, a timeout.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08", // connection exception
			pgErr.Code == "57P01", // admin_shutdown
			pgErr.Code == "57P02", // crash_shutdown
			pgErr.Code == "57P03", // cannot_connect_now
			pgErr.Code == "57P05", // idle_session_timeout
			pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return pgconn.Timeout(err) || errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		hasMessage(err, "conn closed") || hasMessage(err, "conn busy")
}

// hasMessage recognizes pgx's and puddle's untyped errors ("conn closed",
// "closed pool") in err's chain.
func hasMessage(err error, msg string) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == msg {
			return true
		}
	}
	return false
}

// mapErr adds the kv sentinel matching a PostgreSQL or connection error,
// keeping the original in the chain; other errors come back as they are.
func mapErr(err error) error {
	var sentinel error
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "53100": // disk_full
		sentinel = kv.ErrQuotaExceeded
	case hasMessage(err, "closed pool"): // the caller closed the pool
		sentinel = kv.ErrClosed
	case unavailable(err):
		sentinel = kv.ErrUnavailable
	default:
		return err
	}
	if errors.Is(err, sentinel) {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// commitErr maps an error of the batch carrying the writes and the COMMIT.
// The server answers a pipeline in order, so an error it sent for a
// statement before the COMMIT (a PgError, shutdowns included) means the
// COMMIT never ran: nothing was written. Otherwise, once the batch was sent,
// a lost connection (or a shutdown reported for the COMMIT itself) leaves
// the outcome unknown.
func commitErr(err error, isCommit bool) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (!isCommit || !unavailable(err)) {
		return mapErr(err)
	}
	if pgconn.SafeToRetry(err) {
		return mapErr(err) // nothing was sent
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", kv.ErrCommitUnknown, err)
	}
	return err
}
