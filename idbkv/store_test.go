//go:build js && wasm

package idbkv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall/js"
	"testing"
	"time"

	"github.com/hack-pad/go-indexeddb/idb"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/kvtest"
)

// driverCase is one way a Store issues requests.
type driverCase struct {
	name string
	opts openOptions
}

// drivers are the helper driver without and with speculation; most tests
// run with both.
var drivers = []driverCase{
	{"helper", openOptions{}},
	{"helper-speculate", openOptions{speculate: true}},
}

// allDrivers adds the paths taken on browsers without getAllRecords
// (getAllKeys+getAll ascending, a cursor descending).
var allDrivers = append(slices.Clip(drivers),
	driverCase{"helper-noGetAllRecords", openOptions{noGetAllRecords: true}},
)

var dbSeq atomic.Int64

// dbName returns a database name not used before in this run.
func dbName(t testing.TB) string {
	n := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("idbkv-test-%d-%s", dbSeq.Add(1), n)
}

// openT opens a store over a fresh database that is deleted when t ends (the
// store must be closed by then, or the deletion closes it).
func openT(t testing.TB, o openOptions, buckets ...string) (*Store, string) {
	t.Helper()
	name := dbName(t)
	t.Cleanup(func() { deleteDB(t, name) })
	return openNamed(t, name, o, buckets...), name
}

func openNamed(t testing.TB, name string, o openOptions, buckets ...string) *Store {
	t.Helper()
	s, err := open(context.Background(), name, buckets, o)
	if err != nil {
		t.Fatalf("open %q: %v", name, err)
	}
	return s
}

// deleteDB deletes the database name, as another tab would.
func deleteDB(t testing.TB, name string) {
	t.Helper()
	req, err := idb.Global().DeleteDatabase(name)
	if err == nil {
		err = req.Await(context.Background())
	}
	if err != nil {
		t.Errorf("deleteDatabase(%q): %v", name, err)
	}
}

func TestConformance(t *testing.T) {
	// helper-noGetAllRecords differs from helper only in how Scan reads
	// pages, which TestRandomAgainstModel covers; it is left out for time.
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			kvtest.RunWith(t, func(t testing.TB, buckets []string) kv.Store {
				s, _ := openT(t, d.opts, buckets...)
				return s
			}, kvtest.Options{SkipConcurrency: true})
		})
	}
}

// TestConformanceSmallPages runs the suite with pages of a few entries, so
// that merges of buffered writes with IndexedDB results also cross page
// boundaries.
func TestConformanceSmallPages(t *testing.T) {
	defer func(f, m int) { firstPage, maxPage = f, m }(firstPage, maxPage)
	firstPage, maxPage = 2, 16
	for _, d := range allDrivers[:1] {
		t.Run(d.name, func(t *testing.T) {
			kvtest.RunWith(t, func(t testing.TB, buckets []string) kv.Store {
				s, _ := openT(t, d.opts, buckets...)
				return s
			}, kvtest.Options{SkipConcurrency: true})
		})
	}
}

// TestHelperWithoutEval: a Content-Security-Policy without 'unsafe-eval'
// makes new Function throw an EvalError (simulated here by replacing the
// global Function). Open then fails, unless the page passes its own copy of
// helper.js with Helper, as web/replica.js does; that Store works.
func TestHelperWithoutEval(t *testing.T) {
	global := js.Global()
	orig := global.Get("Function")
	copied := orig.New("cb", "opts", HelperSource()) // the page's copy
	refuse := orig.New("throw new EvalError(\"Refused to evaluate a string as JavaScript because 'unsafe-eval' is not an allowed source\")")
	global.Set("Function", refuse)
	name := dbName(t)
	t.Cleanup(func() { deleteDB(t, name) })
	_, err := open(context.Background(), name, []string{"a"}, openOptions{})
	var dom *DOMError
	if !errors.As(err, &dom) || dom.Name != "EvalError" {
		global.Set("Function", orig)
		t.Fatalf("open without eval and without Helper: %v, want an EvalError", err)
	}
	p, err := open(context.Background(), name, []string{"a"}, openOptions{helper: copied})
	global.Set("Function", orig)
	if err != nil {
		t.Fatalf("open with Helper: %v", err)
	}
	defer p.Close()
	if err := p.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("Update with the page's helper: %v", err)
	}
	p.Close()
	q := openNamed(t, name, openOptions{}, "a")
	defer q.Close()
	expect(t, q, "a", "k", "v")
}

// expect fails t unless bucket holds key=want (want "" means absent).
func expect(t testing.TB, s kv.Store, bucket, key, want string) {
	t.Helper()
	err := s.View(func(tx kv.Tx) error {
		v, err := tx.Get(bucket, []byte(key))
		switch {
		case want == "" && errors.Is(err, kv.ErrNotFound):
			return nil
		case err != nil:
			return err
		case string(v) != want:
			return fmt.Errorf("Get(%q, %q) = %q, want %q", bucket, key, v, want)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// Waits that end an IndexedDB transaction: each returns to the event loop
// until something other than the transaction's own requests happens. Each
// is repeated until the event loop has run a task (see untilEventLoopTurned).
var foreignWaits = untilEventLoopTurned([]struct {
	name string
	wait func()
}{
	{"time.Sleep", func() { time.Sleep(5 * time.Millisecond) }},
	{"time.After", func() { <-time.After(5 * time.Millisecond) }},
	{"timer goroutine", func() {
		c := make(chan int)
		go func() { time.Sleep(time.Millisecond); c <- 1 }()
		<-c
	}},
	{"JS promise", func() {
		// A Promise resolved by a timer, as a fetch or WebCrypto would be.
		executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
			js.Global().Call("setTimeout", args[0], 1)
			return nil
		})
		defer executor.Release() // the Promise constructor calls it at once
		awaitJS(js.Global().Get("Promise").New(executor))
	}},
})

// untilEventLoopTurned makes each wait repeat until the browser's event loop
// has run a task queued before it began, so that the IndexedDB transaction
// has certainly lost its activity. A Go timer that has already expired when
// the scheduler looks (a slow or loaded machine) makes its goroutine
// runnable without returning to the event loop; the transaction then stays
// active and the Update rightly succeeds, which is not what the tests of
// foreign waits are about (CI saw "Update with no writes that waited =
// <nil>" under load).
func untilEventLoopTurned(waits []struct {
	name string
	wait func()
}) []struct {
	name string
	wait func()
} {
	for i := range waits {
		once := waits[i].wait
		waits[i].wait = func() {
			turned := js.Global().Get("Object").New()
			// setTimeout passes its extra arguments to the callback:
			// Reflect.set(turned, "yes", true) runs in a later task.
			js.Global().Call("setTimeout", js.Global().Get("Reflect").Get("set"), 0, turned, "yes", true)
			for {
				once()
				if turned.Get("yes").Truthy() {
					return
				}
			}
		}
	}
	return waits
}

// awaitJS waits for promise p from Go.
func awaitJS(p js.Value) {
	done := make(chan struct{})
	f := js.FuncOf(func(js.Value, []js.Value) any { close(done); return nil })
	defer f.Release()
	p.Call("then", f)
	<-done
}

func TestTxInactive(t *testing.T) {
	for _, d := range drivers {
		for _, w := range foreignWaits {
			t.Run(d.name+"/"+w.name, func(t *testing.T) {
				s, _ := openT(t, d.opts, "a", "b")
				defer s.Close()
				if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("old"), []byte("1")) }); err != nil {
					t.Fatal(err)
				}

				// The wait comes after some writes, in two buckets.
				err := s.Update(func(tx kv.Tx) error {
					for _, b := range []string{"a", "b"} {
						if err := tx.Put(b, []byte("k"), []byte("v")); err != nil {
							return err
						}
					}
					if err := tx.Delete("a", []byte("old")); err != nil {
						return err
					}
					w.wait()
					return nil
				})
				if !errors.Is(err, kv.ErrTxInactive) {
					t.Errorf("Update that waited after its Puts = %v, want ErrTxInactive", err)
				}

				// The wait comes first, after a read that made the
				// transaction start.
				err = s.Update(func(tx kv.Tx) error {
					if _, err := tx.Get("a", []byte("old")); err != nil {
						return err
					}
					w.wait()
					return tx.Put("a", []byte("k2"), []byte("v"))
				})
				if !errors.Is(err, kv.ErrTxInactive) {
					t.Errorf("Update that waited before its Put = %v, want ErrTxInactive", err)
				}

				// A read after the wait fails; the function returns its
				// error.
				var readErr error
				err = s.Update(func(tx kv.Tx) error {
					if err := tx.Put("a", []byte("k3"), []byte("v")); err != nil {
						return err
					}
					w.wait()
					_, readErr = tx.Get("a", []byte("old"))
					return readErr
				})
				if !errors.Is(readErr, kv.ErrTxInactive) {
					t.Errorf("Get after the wait = %v, want ErrTxInactive", readErr)
				}
				if !errors.Is(err, kv.ErrTxInactive) {
					t.Errorf("Update whose read failed = %v, want ErrTxInactive", err)
				}

				// A wait with no writes at all still fails the Update.
				err = s.Update(func(tx kv.Tx) error { w.wait(); return nil })
				if !errors.Is(err, kv.ErrTxInactive) {
					t.Errorf("Update with no writes that waited = %v, want ErrTxInactive", err)
				}

				// In a View, reads after the wait fail.
				err = s.View(func(tx kv.Tx) error {
					w.wait()
					var scanned int
					if err := tx.Scan("a", kv.Range{}, func(_, _ []byte) bool { scanned++; return true }); !errors.Is(err, kv.ErrTxInactive) {
						t.Errorf("Scan in a View after the wait = %v (%d entries), want ErrTxInactive", err, scanned)
					}
					_, err := tx.GetMany("a", [][]byte{[]byte("old")})
					return err
				})
				if !errors.Is(err, kv.ErrTxInactive) {
					t.Errorf("View whose GetMany came after the wait = %v, want ErrTxInactive", err)
				}

				// Nothing of any of them was written.
				expect(t, s, "a", "old", "1")
				for _, k := range []string{"k", "k2", "k3"} {
					expect(t, s, "a", k, "")
				}
				expect(t, s, "b", "k", "")

				// The store still works.
				if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("later")) }); err != nil {
					t.Fatalf("Update after the failures: %v", err)
				}
				expect(t, s, "a", "k", "later")
			})
		}
	}
}

// TestWaitsThatKeepTheTransaction checks the other side of the rule: waiting
// on a goroutine that does no JS wait, or on a microtask, is fine.
func TestWaitsThatKeepTheTransaction(t *testing.T) {
	waits := []struct {
		name string
		wait func()
	}{
		{"goroutine handoff", func() {
			c := make(chan int)
			go func() { c <- 1 }()
			<-c
		}},
		{"microtask", func() { awaitJS(js.Global().Get("Promise").Call("resolve", 1)) }},
	}
	for _, d := range drivers {
		for _, w := range waits {
			t.Run(d.name+"/"+w.name, func(t *testing.T) {
				s, _ := openT(t, d.opts, "a")
				defer s.Close()
				err := s.Update(func(tx kv.Tx) error {
					if err := tx.Put("a", []byte("k1"), []byte("v")); err != nil {
						return err
					}
					if _, err := tx.Get("a", []byte("k0")); !errors.Is(err, kv.ErrNotFound) {
						return fmt.Errorf("Get before the wait: %v", err)
					}
					w.wait()
					if _, err := tx.Get("a", []byte("k0")); !errors.Is(err, kv.ErrNotFound) {
						return fmt.Errorf("Get after the wait: %v", err)
					}
					return tx.Put("a", []byte("k2"), []byte("v"))
				})
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
				expect(t, s, "a", "k1", "v")
				expect(t, s, "a", "k2", "v")
			})
		}
	}
}

// TestTwoStoresOneDatabase opens the same database twice, as two tabs would,
// and increments one counter from both concurrently, reading it inside each
// Update: IndexedDB must serialize the transactions so no increment is lost.
func TestTwoStoresOneDatabase(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			a, name := openT(t, d.opts, "counters", "log")
			defer a.Close()
			b := openNamed(t, name, d.opts, "counters", "log")
			defer b.Close()

			const workers, rounds = 4, 15
			key := []byte("n")
			incr := func(s *Store, who string) error {
				return s.Update(func(tx kv.Tx) error {
					n := 0
					v, err := tx.Get("counters", key)
					switch {
					case errors.Is(err, kv.ErrNotFound):
					case err != nil:
						return err
					default:
						fmt.Sscan(string(v), &n)
					}
					n++
					if err := tx.Put("log", fmt.Appendf(nil, "%06d", n), []byte(who)); err != nil {
						return err
					}
					return tx.Put("counters", key, fmt.Appendf(nil, "%d", n))
				})
			}
			errs := make(chan error, 2*workers)
			for w := range 2 * workers {
				s, who := a, "a"
				if w%2 == 1 {
					s, who = b, "b"
				}
				go func() {
					for range rounds {
						if err := incr(s, who); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 2 * workers {
				if err := <-errs; err != nil {
					t.Fatalf("Update: %v", err)
				}
			}
			want := fmt.Sprint(2 * workers * rounds)
			expect(t, a, "counters", "n", want)
			expect(t, b, "counters", "n", want)
			// Every increment left one log entry, from both stores.
			seen := map[string]int{}
			err := b.View(func(tx kv.Tx) error {
				return tx.Scan("log", kv.Range{}, func(_, v []byte) bool { seen[string(v)]++; return true })
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen["a"] != workers*rounds || seen["b"] != workers*rounds {
				t.Errorf("log entries by store = %v, want %d each", seen, workers*rounds)
			}
		})
	}
}

// TestClosedElsewhere deletes or upgrades the database from another
// connection, as another tab would: the Store closes its connection on
// versionchange and fails every later call with ErrClosed.
func TestClosedElsewhere(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name+"/deleteDatabase", func(t *testing.T) {
			s, name := openT(t, d.opts, "a")
			defer s.Close()
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			deleteDB(t, name) // would block forever if s kept its connection
			fn := func(tx kv.Tx) error { return tx.Put("a", []byte("k2"), []byte("v")) }
			if err := s.Update(fn); !errors.Is(err, kv.ErrClosed) || errors.Is(err, ErrStorage) {
				t.Errorf("Update after deleteDatabase = %v, want ErrClosed (and not ErrStorage: nothing failed)", err)
			}
			if err := s.View(func(kv.Tx) error { return nil }); !errors.Is(err, kv.ErrClosed) {
				t.Errorf("View after deleteDatabase = %v, want ErrClosed", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		t.Run(d.name+"/upgrade", func(t *testing.T) {
			s, name := openT(t, d.opts, "a")
			defer s.Close()
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			// Another tab with a newer schema adds a bucket.
			s2 := openNamed(t, name, d.opts, "a", "b")
			defer s2.Close()
			if err := s.View(func(kv.Tx) error { return nil }); !errors.Is(err, kv.ErrClosed) {
				t.Errorf("View after an upgrade elsewhere = %v, want ErrClosed", err)
			}
			expect(t, s2, "a", "k", "v")
		})
	}
}

// TestClosedByBrowser: a close event (the browser closed the connection on
// its own: an IO error, a full disk, storage cleared) fails every later call
// with ErrStorage as well as kv.ErrClosed, so the page learns its storage
// failed, not only that the Store is closed. (Before, a transaction begun
// after Chromium closed the connection on a full disk failed with a bare
// kv.ErrClosed: CLOSED in JS.)
func TestClosedByBrowser(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			s, _ := openT(t, d.opts, "a")
			defer s.Close()
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			// The event Chromium fires after an IO error; a real forced
			// close needs a failing disk (e2e TestFullDiskUnguarded).
			s.db.Call("dispatchEvent", js.Global().Get("Event").New("close"))
			err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k2"), []byte("v")) })
			if !errors.Is(err, ErrStorage) || !errors.Is(err, kv.ErrClosed) {
				t.Errorf("Update after the close event = %v, want ErrStorage and kv.ErrClosed", err)
			}
			if err := s.View(func(kv.Tx) error { return nil }); !errors.Is(err, ErrStorage) {
				t.Errorf("View after the close event = %v, want ErrStorage", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestBinaryKeyOrder checks that keys compare as bytes: as JS strings
// U+1F600 (UTF-16 D83D DE00) would sort before U+FF61, as UTF-8 (F0... vs
// EF...) it sorts after.
func TestBinaryKeyOrder(t *testing.T) {
	want := []string{"\x00", "\x00\x00", "\x01", "a", "a\x00", "ab", "a\xff", "\x7f", "\x80", "\u00e9", "\uff61", "\U0001F600", "\xff", "\xff\xff"}
	if !slices.IsSortedFunc(want, strings.Compare) || strings.Compare("\uff61", "\U0001F600") >= 0 {
		t.Fatal("test keys are not in bytewise order")
	}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			s, _ := openT(t, d.opts, "a")
			defer s.Close()
			err := s.Update(func(tx kv.Tx) error {
				for i := len(want) - 1; i >= 0; i-- {
					if err := tx.Put("a", []byte(want[i]), []byte{byte(i)}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, rev := range []bool{false, true} {
				var got []string
				err := s.View(func(tx kv.Tx) error {
					return tx.Scan("a", kv.Range{Reverse: rev}, func(k, v []byte) bool {
						got = append(got, string(k))
						return true
					})
				})
				if err != nil {
					t.Fatal(err)
				}
				w := want
				if rev {
					w = make([]string, len(want))
					for i := range want {
						w[i] = want[len(want)-1-i]
					}
				}
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", w) {
					t.Errorf("Scan(reverse=%v) order:\n got  %q\n want %q", rev, got, w)
				}
			}
			// A range between the two characters holds only the ones
			// between them bytewise.
			var got []string
			err = s.View(func(tx kv.Tx) error {
				return tx.Scan("a", kv.Range{Start: []byte("\uff61"), End: []byte("\U0001F601")}, func(k, _ []byte) bool {
					got = append(got, string(k))
					return true
				})
			})
			if err != nil || len(got) != 2 || got[0] != "\uff61" || got[1] != "\U0001F600" {
				t.Errorf("Scan[U+FF61, U+1F601) = %q, %v; want [U+FF61 U+1F600]", got, err)
			}
		})
	}
}

func TestPersistence(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			s, name := openT(t, d.opts, "a", "b")
			err := s.Update(func(tx kv.Tx) error {
				if err := tx.Put("a", []byte("k"), []byte("in a")); err != nil {
					return err
				}
				return tx.Put("b", []byte("k"), []byte{})
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			s = openNamed(t, name, d.opts, "a", "b")
			expect(t, s, "a", "k", "in a")
			err = s.View(func(tx kv.Tx) error {
				v, err := tx.Get("b", []byte("k"))
				if err == nil && (v == nil || len(v) != 0) {
					err = fmt.Errorf("empty value came back as %q (nil: %v)", v, v == nil)
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
			s.Close()

			// Reopening with a new bucket upgrades the database and keeps
			// the data; reopening with fewer buckets leaves the rest alone.
			s = openNamed(t, name, d.opts, "a", "b", "c")
			expect(t, s, "a", "k", "in a")
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("c", []byte("k"), []byte("in c")) }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = openNamed(t, name, d.opts, "c")
			expect(t, s, "c", "k", "in c")
			if err := s.View(func(tx kv.Tx) error { _, err := tx.Get("a", []byte("k")); return err }); !errors.Is(err, kv.ErrBucketNotFound) {
				t.Errorf("Get from a bucket the store was not opened with = %v, want ErrBucketNotFound", err)
			}
			s.Close()
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, buckets := range [][]string{nil, {""}, {"a", "a"}} {
		if s, err := Open(context.Background(), dbName(t), buckets); err == nil {
			s.Close()
			t.Errorf("Open with buckets %q succeeded", buckets)
		}
	}
}

func TestDOMErrorMapping(t *testing.T) {
	newDOM := func(name string) js.Value {
		return js.Global().Get("DOMException").New("browser says "+name, name)
	}
	cases := []struct {
		name string
		gone error
		want error
	}{
		{"QuotaExceededError", nil, kv.ErrQuotaExceeded},
		{"TransactionInactiveError", nil, kv.ErrTxInactive},
		{"InvalidStateError", nil, kv.ErrTxInactive},
		{"InvalidStateError", kv.ErrClosed, kv.ErrClosed},
		{"AbortError", kv.ErrClosed, kv.ErrClosed},
		{"AbortError", errors.Join(ErrStorage, kv.ErrClosed), ErrStorage},
		{"AbortError", nil, nil},
		{"DataError", nil, nil},
	}
	for _, c := range cases {
		err := domError("commit", newDOM(c.name), c.gone)
		var de *DOMError
		if !errors.As(err, &de) || de.Name != c.name || de.Message != "browser says "+c.name {
			t.Errorf("%s: %#v", c.name, err)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s (gone %v) = %v, want %v", c.name, c.gone, err, c.want)
		}
		if c.want == nil && errors.Unwrap(err) != nil {
			t.Errorf("%s (gone %v) wraps %v, want nothing", c.name, c.gone, errors.Unwrap(err))
		}
		if !strings.Contains(err.Error(), "browser says") {
			t.Errorf("%s: message lost: %v", c.name, err)
		}
	}
}

// TestValuesStoredExactly reads values back with plain JS: each must be a
// Uint8Array whose buffer holds exactly the value (a subarray of the commit's
// packed buffer would make the structured clone store all of it), and keys
// must come back as binary keys (ArrayBuffer).
func TestValuesStoredExactly(t *testing.T) {
	check := js.Global().Get("Function").New("db", `
		return new Promise((ok, fail) => {
			const tx = db.transaction(["a"], "readonly");
			const r = tx.objectStore("a").openCursor();
			const out = [];
			r.onsuccess = () => {
				const c = r.result;
				if (!c) { ok(out.join(",")); return; }
				const v = c.value;
				out.push((c.key instanceof ArrayBuffer ? "ab" : typeof c.key) + ":" +
					(v instanceof Uint8Array ? "u8" : typeof v) + ":" + v.byteLength + "/" + v.buffer.byteLength);
				c.continue();
			};
			r.onerror = () => fail(r.error);
		});`)
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			s, _ := openT(t, d.opts, "a")
			defer s.Close()
			err := s.Update(func(tx kv.Tx) error {
				for i, n := range []int{0, 3, 1000} {
					if err := tx.Put("a", []byte{byte('k' + i)}, make([]byte, n)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 1)
			f := js.FuncOf(func(_ js.Value, args []js.Value) any { got <- args[0].String(); return nil })
			defer f.Release()
			check.Invoke(s.db).Call("then", f, f)
			if g, want := <-got, "ab:u8:0/0,ab:u8:3/3,ab:u8:1000/1000"; g != want {
				t.Errorf("stored key type:value type:length/buffer length = %s, want %s", g, want)
			}
		})
	}
}

// TestCloseWaitsForRunningUpdate calls Close while an Update waits for its
// own read (the only wait allowed inside a transaction): Close returns after
// the Update committed, and the Update's writes are kept.
func TestCloseWaitsForRunningUpdate(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			s, name := openT(t, d.opts, "a")
			started := make(chan struct{})
			updated := make(chan error, 1)
			go func() {
				updated <- s.Update(func(tx kv.Tx) error {
					if err := tx.Put("a", []byte("k"), []byte("v")); err != nil {
						return err
					}
					close(started)
					// Close runs while this read is pending.
					if _, err := tx.Get("a", []byte("other")); !errors.Is(err, kv.ErrNotFound) {
						return fmt.Errorf("Get: %v", err)
					}
					return tx.Put("a", []byte("k2"), []byte("v2"))
				})
			}()
			<-started
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case err := <-updated:
				if err != nil {
					t.Fatalf("Update running during Close: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the Update running during Close did not return")
			}
			if err := s.View(func(kv.Tx) error { return nil }); !errors.Is(err, kv.ErrClosed) {
				t.Errorf("View after Close = %v, want ErrClosed", err)
			}
			r := openNamed(t, name, d.opts, "a")
			defer r.Close()
			expect(t, r, "a", "k", "v")
			expect(t, r, "a", "k2", "v2")
		})
	}
}
