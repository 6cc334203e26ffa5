package kvtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
)

// How long tests wait for something that must happen, and how long they give
// a backend to show something that need not happen.
const (
	mustHappenWithin = 30 * time.Second
	mayHappenWithin  = time.Second
	mustNotHappenFor = 100 * time.Millisecond
)

func (s *suite) testSnapshot(t *testing.T) {
	// Single-goroutine isolation checks; the concurrent ones are in the
	// Concurrency group.
	t.Run("ViewSeesOnlyCommittedState", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k", "1"})
		mustView(t, st, func(tx kv.Tx) error { checkGet(t, tx, bucketA, "k", "1"); return nil })
		putAll(t, st, bucketA, entry{"k", "2"})
		mustView(t, st, func(tx kv.Tx) error { checkGet(t, tx, bucketA, "k", "2"); return nil })
	})

	t.Run("RepeatableReadsInView", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		mustView(t, st, func(tx kv.Tx) error {
			first, err := scan(tx, bucketA, kv.Range{})
			if err != nil {
				return err
			}
			second, err := scan(tx, bucketA, kv.Range{})
			if err != nil {
				return err
			}
			checkEntries(t, "second Scan in one View", second, first)
			return nil
		})
	})
}

func (s *suite) testConcurrency(t *testing.T) {
	t.Run("ViewSnapshotWhileUpdateCommits", func(t *testing.T) {
		// A View begun before an Update keeps seeing the old state. A backend
		// may let the Update commit while the View is open (memkv, bbolt) or
		// make it wait until the View ends; both pass, and the test logs
		// which one happened.
		st := s.store(t)
		putAll(t, st, bucketA, entry{"a", "old"}, entry{"b", "old"}, entry{"c", "old"})
		putAll(t, st, bucketB, entry{"x", "old"})
		old := []entry{{"a", "old"}, {"b", "old"}, {"c", "old"}}
		updated := make(chan error, 1)
		committedDuringView := false
		checkOld := func(tx kv.Tx, when string) {
			got, err := scan(tx, bucketA, kv.Range{})
			if err != nil {
				t.Errorf("%s: Scan: %v", when, err)
			}
			checkEntries(t, when+": View's Scan", got, old)
			vs, err := tx.GetMany(bucketA, [][]byte{[]byte("a"), []byte("d")})
			if err != nil || len(vs) != 2 || string(vs[0]) != "old" || vs[1] != nil {
				t.Errorf("%s: View's GetMany = %q, %v; want [old nil]", when, vs, err)
			}
			checkGet(t, tx, bucketB, "x", "old")
		}
		err := st.View(func(tx kv.Tx) error {
			checkOld(tx, "before the Update")
			go func() {
				updated <- st.Update(func(tx kv.Tx) error {
					if err := tx.Put(bucketA, []byte("a"), []byte("new")); err != nil {
						return err
					}
					if err := tx.Delete(bucketA, []byte("b")); err != nil {
						return err
					}
					if err := tx.Put(bucketA, []byte("d"), []byte("new")); err != nil {
						return err
					}
					return tx.Put(bucketB, []byte("x"), []byte("new"))
				})
			}()
			select {
			case err := <-updated:
				if err != nil {
					return fmt.Errorf("concurrent Update: %w", err)
				}
				committedDuringView = true
			case <-time.After(mayHappenWithin):
			}
			checkOld(tx, "after the concurrent Update")
			return nil
		})
		if err != nil {
			t.Fatalf("View: %v", err)
		}
		if committedDuringView {
			t.Log("the Update committed while the View was open")
		} else {
			t.Log("the Update waited for the View to end")
			select {
			case err := <-updated:
				if err != nil {
					t.Fatalf("Update after the View: %v", err)
				}
			case <-time.After(mustHappenWithin):
				t.Fatalf("Update did not finish within %v after the View ended", mustHappenWithin)
			}
		}
		checkEntries(t, "after both", dump(t, st, bucketA), []entry{{"a", "new"}, {"c", "old"}, {"d", "new"}})
		checkEntries(t, "after both", dump(t, st, bucketB), []entry{{"x", "new"}})
	})

	t.Run("UpdatesAreSerialized", func(t *testing.T) {
		// Read-modify-write increments from several goroutines lose none.
		const goroutines, rounds = 4, 25
		st := s.store(t)
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for r := range rounds {
					err := st.Update(func(tx kv.Tx) error {
						n := uint64(0)
						v, err := tx.Get(bucketA, []byte("counter"))
						switch {
						case err == nil && len(v) == 8:
							n = binary.BigEndian.Uint64(v)
						case errors.Is(err, kv.ErrNotFound):
						default:
							return fmt.Errorf("Get counter: %q, %v", v, err)
						}
						if err := tx.Put(bucketA, []byte("counter"), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
							return err
						}
						return tx.Put(bucketB, fmt.Appendf(nil, "g%d/r%02d", g, r), nil)
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Update: %v", err)
		}
		mustView(t, st, func(tx kv.Tx) error {
			v, err := tx.Get(bucketA, []byte("counter"))
			if err != nil {
				return err
			}
			if got := binary.BigEndian.Uint64(v); got != goroutines*rounds {
				t.Errorf("counter = %d after %d increments", got, goroutines*rounds)
			}
			got, err := scan(tx, bucketB, kv.Range{KeysOnly: true})
			if err != nil {
				return err
			}
			if len(got) != goroutines*rounds {
				t.Errorf("%d marker keys, want %d", len(got), goroutines*rounds)
			}
			return nil
		})
	})

	t.Run("ViewsSeeConsistentStateDuringUpdates", func(t *testing.T) {
		// Every Update moves one unit between two buckets; every View must
		// see the total unchanged, whatever it overlaps with.
		const total, moves, readers = 1000, 50, 2
		st := s.store(t)
		u64 := func(v []byte) uint64 { return binary.BigEndian.Uint64(v) }
		putAll(t, st, bucketA, entry{"balance", string(binary.BigEndian.AppendUint64(nil, total))})
		putAll(t, st, bucketB, entry{"balance", string(binary.BigEndian.AppendUint64(nil, 0))})
		var done atomic.Bool
		var wg sync.WaitGroup
		var views atomic.Int64
		for range readers {
			wg.Go(func() {
				for !done.Load() {
					err := st.View(func(tx kv.Tx) error {
						a, err := tx.Get(bucketA, []byte("balance"))
						if err != nil {
							return err
						}
						b, err := tx.Get(bucketB, []byte("balance"))
						if err != nil {
							return err
						}
						if u64(a)+u64(b) != total {
							return fmt.Errorf("View saw %d + %d, want a total of %d", u64(a), u64(b), total)
						}
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					views.Add(1)
				}
			})
		}
		for range moves {
			err := st.Update(func(tx kv.Tx) error {
				a, err := tx.Get(bucketA, []byte("balance"))
				if err != nil {
					return err
				}
				if err := tx.Put(bucketA, []byte("balance"), binary.BigEndian.AppendUint64(nil, u64(a)-1)); err != nil {
					return err
				}
				b, err := tx.Get(bucketB, []byte("balance"))
				if err != nil {
					return err
				}
				return tx.Put(bucketB, []byte("balance"), binary.BigEndian.AppendUint64(nil, u64(b)+1))
			})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
		}
		done.Store(true)
		wg.Wait()
		t.Logf("%d Views ran alongside %d Updates", views.Load(), moves)
		mustView(t, st, func(tx kv.Tx) error {
			checkGet(t, tx, bucketB, "balance", string(binary.BigEndian.AppendUint64(nil, moves)))
			return nil
		})
	})

	for _, kind := range []string{"View", "Update"} {
		t.Run("CloseWaitsFor"+kind, func(t *testing.T) {
			// kv: "Transactions running concurrently finish first."
			st := s.store(t)
			putAll(t, st, bucketA, entry{"k", "v"})
			started, release := make(chan struct{}), make(chan struct{})
			txDone := make(chan error, 1)
			run := st.View
			if kind == "Update" {
				run = st.Update
			}
			go func() {
				txDone <- run(func(tx kv.Tx) error {
					close(started)
					<-release
					v, err := tx.Get(bucketA, []byte("k"))
					if err != nil {
						return fmt.Errorf("Get after Close was called: %w", err)
					}
					if string(v) != "v" {
						return fmt.Errorf("Get after Close was called = %q", v)
					}
					return nil
				})
			}()
			<-started
			closed := make(chan error, 1)
			go func() { closed <- st.Close() }()
			select {
			case err := <-closed:
				t.Errorf("Close returned (%v) while a %s was running", err, kind)
				close(release)
			case <-time.After(mustNotHappenFor):
				close(release)
				select {
				case err := <-closed:
					if err != nil {
						t.Errorf("Close: %v", err)
					}
				case <-time.After(mustHappenWithin):
					t.Fatalf("Close did not return within %v after the %s ended", mustHappenWithin, kind)
				}
			}
			if err := <-txDone; err != nil {
				t.Errorf("%s running when Close was called: %v", kind, err)
			}
			checkErr(t, "View after Close", st.View(func(kv.Tx) error { return nil }), kv.ErrClosed)
		})
	}
}

func (s *suite) testClose(t *testing.T) {
	t.Run("ErrClosed", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, entry{"k", "v"})
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		called := false
		fn := func(kv.Tx) error { called = true; return nil }
		checkErr(t, "Update after Close", st.Update(fn), kv.ErrClosed)
		checkErr(t, "View after Close", st.View(fn), kv.ErrClosed)
		if called {
			t.Error("a transaction function ran after Close")
		}
	})

	t.Run("Idempotent", func(t *testing.T) {
		st := s.store(t)
		for i := range 3 {
			if err := st.Close(); err != nil {
				t.Errorf("Close #%d: %v", i+1, err)
			}
		}
		// s.store's cleanup closes it a fourth time.
	})

	t.Run("EmptyStore", func(t *testing.T) {
		st := s.store(t)
		if err := st.Close(); err != nil {
			t.Errorf("Close of an unused store: %v", err)
		}
	})
}
