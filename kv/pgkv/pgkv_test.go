//go:build !js

package pgkv

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/kv/kvtest"
	"github.com/replica-sync/replica/kv/memkv"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newPool returns a pool on a fresh database, closed when t ends.
func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func randomNamespace() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "ns-" + hex.EncodeToString(b[:])
}

func open(t testing.TB, pool *pgxpool.Pool, ns string, buckets ...string) *Store {
	t.Helper()
	s, err := Open(context.Background(), pool, ns, buckets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// opener returns a kvtest.Opener making a store on a new namespace of one
// database.
func opener(t testing.TB) kvtest.Opener {
	pool := newPool(t, pgtest.NewDatabase(t)+os.Getenv("PGKV_URL_SUFFIX"))
	return func(t testing.TB, buckets []string) kv.Store {
		s, err := Open(context.Background(), pool, randomNamespace(), buckets)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) { kvtest.Run(t, opener(t)) }

// BenchmarkPgkv runs the kv benchmarks on a local PostgreSQL (127.0.0.1,
// fsync=off, synchronous_commit=off: see pgtest). BenchmarkBoltkv runs the
// same ones on bbolt in the same binary, for ratios.
func BenchmarkPgkv(b *testing.B) { kvtest.Bench(b, opener(b)) }

func BenchmarkBoltkv(b *testing.B) { kvtest.Bench(b, boltOpener(nil)) }

// BenchmarkBoltkvNoSync is bbolt without fsync, closer to the test server's
// fsync=off.
func BenchmarkBoltkvNoSync(b *testing.B) { kvtest.Bench(b, boltOpener(&boltkv.Options{NoSync: true})) }

func boltOpener(o *boltkv.Options) kvtest.Opener {
	return func(t testing.TB, buckets []string) kv.Store {
		s, err := boltkv.Open(filepath.Join(t.TempDir(), "kv.db"), buckets, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func increment(s kv.Store) error {
	return s.Update(func(tx kv.Tx) error {
		var n uint64
		v, err := tx.Get("b", []byte("counter"))
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		default:
			n = binary.BigEndian.Uint64(v)
		}
		return tx.Put("b", []byte("counter"), binary.BigEndian.AppendUint64(nil, n+1))
	})
}

func counter(t *testing.T, s kv.Store) uint64 {
	t.Helper()
	var n uint64
	if err := s.View(func(tx kv.Tx) error {
		v, err := tx.Get("b", []byte("counter"))
		if err == nil {
			n = binary.BigEndian.Uint64(v)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two Stores on one namespace through two pools (two processes, as far as
// PostgreSQL can tell) serialize their Updates: no increment is lost.
func TestTwoProcessesSerialized(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ns := randomNamespace()
	stores := []*Store{open(t, newPool(t, url), ns, "b"), open(t, newPool(t, url), ns, "b")}
	const perStore, goroutines = 100, 3
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*goroutines)
	for _, s := range stores {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perStore / goroutines {
					if err := increment(s); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := uint64(len(stores) * (perStore / goroutines) * goroutines)
	for i, s := range stores {
		if got := counter(t, s); got != want {
			t.Errorf("store %d sees counter %d, want %d", i, got, want)
		}
	}
}

func TestNamespaces(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, pgtest.NewDatabase(t))
	a := open(t, pool, "a", "x", "y")
	b := open(t, pool, "b", "x", "y")
	for _, s := range []*Store{a, b} {
		if err := s.Update(func(tx kv.Tx) error {
			if err := tx.Put("x", []byte("k"), []byte(s.Namespace())); err != nil {
				return err
			}
			return tx.Put("y", []byte("only-"+s.Namespace()), nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{a, b} {
		if err := s.View(func(tx kv.Tx) error {
			v, err := tx.Get("x", []byte("k"))
			if err != nil || string(v) != s.Namespace() {
				t.Errorf("%s: x/k = %q, %v", s.Namespace(), v, err)
			}
			var keys []string
			err = tx.Scan("y", kv.Range{}, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
			if !slices.Equal(keys, []string{"only-" + s.Namespace()}) {
				t.Errorf("%s: bucket y holds %q", s.Namespace(), keys)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	names, err := Namespaces(ctx, pool)
	if err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Namespaces = %q, %v", names, err)
	}
	if err := Drop(ctx, pool, "a"); err != nil {
		t.Fatal(err)
	}
	names, err = Namespaces(ctx, pool)
	if err != nil || !slices.Equal(names, []string{"b"}) {
		t.Fatalf("Namespaces after Drop(a) = %q, %v", names, err)
	}
	if err := a.View(func(tx kv.Tx) error {
		_, err := tx.Get("x", []byte("k"))
		return err
	}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("a/x/k after Drop: %v, want ErrNotFound", err)
	}
	if n := counterOrZero(b, "x", "k"); n != "b" {
		t.Errorf("b/x/k after Drop(a) = %q", n)
	}
}

func counterOrZero(s kv.Store, bucket, key string) string {
	var out string
	_ = s.View(func(tx kv.Tx) error {
		v, err := tx.Get(bucket, []byte(key))
		out = string(v)
		return err
	})
	return out
}

func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		pool := newPool(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Migrate(context.Background(), pool)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A PostgreSQL restart fails transactions with ErrUnavailable (or, for a
// commit in flight, ErrCommitUnknown) while the server is down; afterwards
// the pool reconnects and every committed write is there.
func TestServerRestart(t *testing.T) {
	pool := newPool(t, pgtest.NewDatabase(t))
	s, err := OpenWith(context.Background(), pool, "r", []string{"b"}, Options{TxTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 10 {
		if err := increment(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgtest.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = pgtest.Start()
		}
	}()
	err = increment(s)
	t.Logf("read-write Update with the server down: %v", err)
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("read-write Update with the server down: %v, want ErrUnavailable", err)
	}
	err = s.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("blind"), []byte("x")) })
	t.Logf("write-only Update with the server down: %v", err)
	if !errors.Is(err, kv.ErrUnavailable) && !errors.Is(err, kv.ErrCommitUnknown) {
		t.Errorf("write-only Update with the server down: %v, want ErrUnavailable or ErrCommitUnknown", err)
	}
	if err := s.View(func(tx kv.Tx) error { _, err := tx.Get("b", []byte("counter")); return err }); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("View with the server down: %v, want ErrUnavailable", err)
	}
	if err := pgtest.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	for range 10 {
		if err := increment(s); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	}
	if got := counter(t, s); got != 20 {
		t.Errorf("counter after restart = %d, want 20", got)
	}
}

// Scan's merge of buffered writes with database pages, compared with memkv
// on random operations: several pages (pgkv reads 512 rows per query),
// Reverse, Limit, KeysOnly, bounds.
func TestScanMergeMatchesMemkv(t *testing.T) {
	pool := newPool(t, pgtest.NewDatabase(t))
	pg := open(t, pool, randomNamespace(), "b")
	mem := memkv.New("b")
	rng := mrand.New(mrand.NewPCG(1, 2))
	apply := func(ops func(tx kv.Tx) error) {
		for _, s := range []kv.Store{pg, mem} {
			if err := s.Update(ops); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(func(tx kv.Tx) error {
		for i := range 1500 {
			if err := tx.Put("b", fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
				return err
			}
		}
		return nil
	})
	for round := range 20 {
		// The same random operations on both, scanned before commit.
		seed := rng.Uint64()
		var results [2][]string
		for si, s := range []kv.Store{pg, mem} {
			r := mrand.New(mrand.NewPCG(seed, 0))
			rkey := func() []byte { return fmt.Appendf(nil, "k%04d", r.IntN(2000)) }
			err := s.Update(func(tx kv.Tx) error {
				for range 300 {
					var err error
					switch r.IntN(10) {
					case 0:
						a, b := rkey(), rkey()
						if string(a) > string(b) {
							a, b = b, a
						}
						err = tx.DeleteRange("b", a, b)
					case 1, 2, 3:
						err = tx.Delete("b", rkey())
					default:
						err = tx.Put("b", rkey(), fmt.Appendf(nil, "r%d", round))
					}
					if err != nil {
						return err
					}
				}
				for range 6 {
					rg := kv.Range{Reverse: r.IntN(2) == 0, KeysOnly: r.IntN(3) == 0}
					if r.IntN(2) == 0 {
						rg.Start = rkey()
					}
					if r.IntN(2) == 0 {
						rg.End = rkey()
					}
					if r.IntN(2) == 0 {
						rg.Limit = 1 + r.IntN(700)
					}
					var got []string
					if err := tx.Scan("b", rg, func(k, v []byte) bool {
						if rg.KeysOnly && v != nil {
							t.Errorf("KeysOnly Scan passed a value")
						}
						got = append(got, string(k)+"="+string(v))
						return true
					}); err != nil {
						return err
					}
					results[si] = append(results[si], fmt.Sprintf("%+v: %d %q", rg, len(got), got))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(results[0], results[1]) {
			for i := range results[0] {
				if results[0][i] != results[1][i] {
					t.Fatalf("round %d: pgkv and memkv differ:\npgkv  %.400s\nmemkv %.400s", round, results[0][i], results[1][i])
				}
			}
		}
	}
	// And the committed states agree.
	dump := func(s kv.Store) (out []string) {
		_ = s.View(func(tx kv.Tx) error {
			return tx.Scan("b", kv.Range{}, func(k, v []byte) bool { out = append(out, string(k)+"="+string(v)); return true })
		})
		return out
	}
	if a, b := dump(pg), dump(mem); !slices.Equal(a, b) {
		t.Fatalf("committed states differ: pgkv %d entries, memkv %d", len(a), len(b))
	}
}

// Values over scanInline are read one by one, in order, whatever the direction.
func TestScanLargeValues(t *testing.T) {
	pool := newPool(t, pgtest.NewDatabase(t))
	s := open(t, pool, randomNamespace(), "b")
	big := make([]byte, 1<<20)
	const n = 13
	if err := s.Update(func(tx kv.Tx) error {
		for i := range n {
			big[0] = byte(i)
			if err := tx.Put("b", []byte{'k', byte(i)}, big); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []bool{false, true} {
		var seen []byte
		if err := s.View(func(tx kv.Tx) error {
			return tx.Scan("b", kv.Range{Reverse: rev}, func(k, v []byte) bool {
				if len(v) != len(big) || v[0] != k[1] {
					t.Errorf("key %q: value of %d bytes starting %d", k, len(v), v[0])
				}
				seen = append(seen, k[1])
				return true
			})
		}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != n {
			t.Errorf("reverse=%v: %d entries, want %d", rev, len(seen), n)
		}
	}
}

// The callback of a Scan may read and write (other buckets) through the same
// transaction, across page boundaries.
func TestScanCallbackUsesTx(t *testing.T) {
	pool := newPool(t, pgtest.NewDatabase(t))
	s := open(t, pool, randomNamespace(), "a", "b")
	if err := s.Update(func(tx kv.Tx) error {
		for i := range 1200 {
			if err := tx.Put("a", fmt.Appendf(nil, "%05d", i), []byte("x")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx kv.Tx) error {
		var inner error
		err := tx.Scan("a", kv.Range{}, func(k, v []byte) bool {
			if _, inner = tx.Get("a", k); inner != nil {
				return false
			}
			inner = tx.Put("b", k, v)
			return inner == nil
		})
		if err != nil {
			return err
		}
		return inner
	}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.View(func(tx kv.Tx) error {
		return tx.Scan("b", kv.Range{KeysOnly: true}, func(k, v []byte) bool { n++; return true })
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1200 {
		t.Fatalf("copied %d entries, want 1200", n)
	}
}

func TestClosedPool(t *testing.T) {
	pool := newPool(t, pgtest.NewDatabase(t))
	s := open(t, pool, randomNamespace(), "b")
	pool.Close()
	err := s.View(func(tx kv.Tx) error { _, err := tx.Get("b", []byte("k")); return err })
	if !errors.Is(err, kv.ErrClosed) {
		t.Errorf("View on a closed pool: %v, want ErrClosed", err)
	}
}

// proxy forwards TCP connections to addr; while drop is set, the first
// bytes the server sends close the client's connection instead of reaching
// it, as if the network failed after the server got the request.
type proxy struct {
	l    net.Listener
	addr string
	drop atomic.Bool
	mu   sync.Mutex
	open []net.Conn
}

// cut closes every connection the proxy carries.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
	p.open = nil
}

func newProxy(t *testing.T, addr string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, addr: addr}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.open = append(p.open, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if p.drop.Load() {
							s.Close()
							return
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// A connection lost after the COMMIT was sent gives ErrCommitUnknown (and
// here the commit did land); one lost after a read gives ErrUnavailable and
// writes nothing.
func TestCommitUnknown(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port))
	_, port, _ := net.SplitHostPort(p.l.Addr().String())
	cfg.ConnConfig.Port = uint16(mustAtoi(t, port))
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := open(t, pool, "n", "b")
	put := func(k string) error {
		return s.Update(func(tx kv.Tx) error { return tx.Put("b", []byte(k), []byte("v")) })
	}
	if err := put("warm-up"); err != nil { // prepares the statements
		t.Fatal(err)
	}
	// A pooled connection that died while idle (the server restarted, a
	// firewall dropped it) costs a read-write Update nothing: its first
	// batch goes again on a fresh connection.
	p.cut()
	if err := increment(s); err != nil {
		t.Fatalf("Update on a pooled connection that died idle: %v", err)
	}
	p.cut()
	if err := s.View(func(tx kv.Tx) error { _, err := tx.Get("b", []byte("counter")); return err }); err != nil {
		t.Fatalf("View on a pooled connection that died idle: %v", err)
	}
	if err := s.Update(func(tx kv.Tx) error { return tx.Delete("b", []byte("counter")) }); err != nil {
		t.Fatal(err)
	}
	if err := put("warm-up"); err != nil { // prepares the INSERT on the new connection
		t.Fatal(err)
	}

	p.drop.Store(true)
	err = put("landed")
	p.drop.Store(false)
	if !errors.Is(err, kv.ErrCommitUnknown) || errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("connection lost after the COMMIT was sent: %v, want ErrCommitUnknown (only)", err)
	}
	p.drop.Store(true)
	err = increment(s)
	p.drop.Store(false)
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("connection lost after a read: %v, want ErrUnavailable", err)
	}
	if got := counterOrZero(s, "b", "landed"); got != "v" {
		t.Errorf("the commit whose answer was lost: landed = %q, want v (it did commit)", got)
	}
	if err := s.View(func(tx kv.Tx) error { _, err := tx.Get("b", []byte("counter")); return err }); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("the Update that failed on its read wrote: %v", err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TxTimeout bounds the wait for the namespace lock.
func TestTxTimeout(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, pgtest.NewDatabase(t))
	s, err := OpenWith(ctx, pool, "n", []string{"b"}, Options{TxTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, LockKey("n")); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err = increment(s)
	if took := time.Since(begin); !errors.Is(err, kv.ErrUnavailable) || took > 5*time.Second {
		t.Errorf("Update while another session holds the lock: %v after %v, want ErrUnavailable after about 300ms", err, took)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, LockKey("n")); err != nil {
		t.Fatal(err)
	}
	if err := increment(s); err != nil {
		t.Errorf("Update after the lock was released: %v", err)
	}
}

// Notify is delivered to listeners when the Update commits, and not when it
// rolls back.
func TestNotify(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, pgtest.NewDatabase(t))
	s := open(t, pool, "n", "b")
	listener, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, `LISTEN replica_test`); err != nil {
		t.Fatal(err)
	}
	notify := func(payload string, fail error) error {
		return s.Update(func(tx kv.Tx) error {
			if err := tx.Put("b", []byte("k"), []byte(payload)); err != nil {
				return err
			}
			if err := tx.(Notifier).Notify("replica_test", payload); err != nil {
				return err
			}
			return fail
		})
	}
	if err := notify("rolled back", errors.New("no")); err == nil {
		t.Fatal("want the function's error")
	}
	if err := notify("first", nil); err != nil {
		t.Fatal(err)
	}
	if err := notify("second", nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "second"} {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := listener.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		if n.Channel != "replica_test" || n.Payload != want {
			t.Errorf("notification %q on %q, want %q", n.Payload, n.Channel, want)
		}
	}
	if err := s.View(func(tx kv.Tx) error { return tx.(Notifier).Notify("replica_test", "x") }); !errors.Is(err, kv.ErrReadOnly) {
		t.Errorf("Notify in a View: %v, want ErrReadOnly", err)
	}
}

// tripTracer counts round trips: queries and pipelined batches.
type tripTracer struct{ n atomic.Int64 }

func (c *tripTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// Prefetched keys cost no round trip of their own: an Update that
// prefetches keys of three buckets, then reads another key, then reads
// the prefetched ones (present and absent, twice) and writes is two round
// trips (BEGIN with the reads, then the writes with the COMMIT); a Scan
// page carries a prefetch likewise; a repeated Get is answered from what
// the first read found.
func TestPrefetchRoundTrips(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &tripTracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := open(t, pool, "p", "a", "b", "c")
	if err := s.Update(func(tx kv.Tx) error {
		for _, b := range []string{"a", "b", "c"} {
			if err := tx.Put(b, []byte("k"), []byte(b)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	keys := []kv.BucketKey{{Bucket: "a", Key: []byte("k")}, {Bucket: "b", Key: []byte("k")}, {Bucket: "c", Key: []byte("none")}}
	trips := func(fn func(tx kv.Tx) error) int64 {
		t.Helper()
		before := tr.n.Load()
		if err := s.Update(fn); err != nil {
			t.Fatal(err)
		}
		return tr.n.Load() - before
	}
	n := trips(func(tx kv.Tx) error {
		if err := tx.(kv.Prefetcher).Prefetch(keys); err != nil {
			return err
		}
		if v, err := tx.Get("c", []byte("k")); err != nil || string(v) != "c" {
			t.Errorf("Get(c k) = %q, %v", v, err)
		}
		for range 2 {
			for _, k := range keys {
				v, err := tx.Get(k.Bucket, k.Key)
				switch {
				case k.Bucket == "c" && !errors.Is(err, kv.ErrNotFound):
					t.Errorf("Get(c none) = %q, %v; want ErrNotFound", v, err)
				case k.Bucket != "c" && (err != nil || string(v) != k.Bucket):
					t.Errorf("Get(%s k) = %q, %v", k.Bucket, v, err)
				}
			}
		}
		if v, err := tx.Get("c", []byte("k")); err != nil || string(v) != "c" {
			t.Errorf("Get(c k) again = %q, %v", v, err)
		}
		return tx.Put("a", []byte("k2"), []byte("x"))
	})
	if n != 2 {
		t.Errorf("Update with a prefetch: %d round trips, want 2", n)
	}
	n = trips(func(tx kv.Tx) error {
		if err := tx.(kv.Prefetcher).Prefetch(keys); err != nil {
			return err
		}
		if err := tx.Scan("a", kv.Range{}, func(_, _ []byte) bool { return true }); err != nil {
			return err
		}
		_, err := tx.(kv.BatchGetter).GetBatch(keys)
		return err
	})
	if n != 2 { // BEGIN with the Scan page and the prefetch; COMMIT
		t.Errorf("Scan carrying a prefetch: %d round trips, want 2", n)
	}
}

// TestPlansFollowGrowth checks that a multi-key read and a multi-key delete
// stay index lookups after the table grows under a connection that ran
// them while it was small. A prepared statement's generic plan, chosen by
// PostgreSQL after five runs and kept until the table's statistics change,
// was a scan of the whole namespace: 84 ms instead of 0.1 ms for 2 keys of
// 300,000 rows, until autovacuum's ANALYZE. The test counts the tuples
// PostgreSQL fetched from replica_kv (pg_stat_user_tables, flushed with
// pg_stat_force_next_flush on the one connection the pool has).
func TestPlansFollowGrowth(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := open(t, pool, "grow", "rows")
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%07d", i)) }
	if err := s.Update(func(tx kv.Tx) error {
		for i := range 20 {
			if err := tx.Put("rows", key(i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		if err := s.View(func(tx kv.Tx) error {
			vals, err := tx.GetMany("rows", [][]byte{key(1), key(2), key(999_999)})
			if err == nil && (string(vals[0]) != "v" || string(vals[1]) != "v" || vals[2] != nil) {
				t.Errorf("GetMany = %q", vals)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	del := func() {
		t.Helper()
		if err := s.Update(func(tx kv.Tx) error {
			for _, k := range [][]byte{key(999_998), key(999_999)} {
				if err := tx.Delete("rows", k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 { // past the five custom plans after which a generic one may be kept
		read()
		del()
	}
	if _, err := pool.Exec(ctx, `INSERT INTO replica_kv (ns, bucket, k, v)
SELECT 'grow', 'rows', convert_to('k' || lpad(g::text, 7, '0'), 'UTF8'), '\x76'::bytea
FROM generate_series(20, 299999) g`); err != nil {
		t.Fatal(err)
	}
	fetched := func() int64 {
		t.Helper()
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
FROM pg_stat_user_tables WHERE relname = 'replica_kv'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for name, op := range map[string]func(){"GetMany": read, "Delete": del} {
		before := fetched()
		op()
		if n := fetched() - before; n > 1000 {
			t.Errorf("%s of 2-3 keys after growth to 300,000 rows fetched %d tuples: the statement ran under a plan made for the small table", name, n)
		}
	}
}
