//go:build js && wasm

package idbkv

import (
	"errors"
	"runtime"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// TestSuspendReleasesTransactions: a Store suspended while its Update
// waits on a read (as a page frozen mid-transaction) aborts that
// transaction, so another connection to the database (another tab) writes
// at once instead of waiting for the object stores' lock; the aborted
// Update fails with ErrSuspended and wrote nothing; a transaction begun
// while suspended waits for Resume, then runs.
func TestSuspendReleasesTransactions(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			a, name := openT(t, d.opts, "b")
			defer a.Close()
			other := openNamed(t, name, d.opts, "b")
			defer other.Close()
			if err := a.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("v0")) }); err != nil {
				t.Fatal(err)
			}

			reading := make(chan struct{}, 1)
			aborted := make(chan error, 1)
			go func() {
				aborted <- a.Update(func(tx kv.Tx) error {
					reading <- struct{}{}
					if _, err := tx.Get("b", []byte("k")); err != nil {
						return err
					}
					return tx.Put("b", []byte("k"), []byte("from the suspended store"))
				})
			}()
			// The Update's goroutine runs on until it waits for its Get.
			<-reading
			if n := a.Suspend(); n != 1 {
				t.Fatalf("Suspend aborted %d transactions, want 1", n)
			}

			// Another connection is not held up by the suspended one.
			if err := other.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("v2")) }); err != nil {
				t.Fatalf("other connection's Update: %v", err)
			}
			if err := <-aborted; !errors.Is(err, ErrSuspended) {
				t.Fatalf("the suspended Update returned %v, want ErrSuspended", err)
			}

			// A View begun while suspended waits for Resume.
			viewed := make(chan string, 1)
			go func() {
				var got string
				err := a.View(func(tx kv.Tx) error {
					v, err := tx.Get("b", []byte("k"))
					got = string(v)
					return err
				})
				if err != nil {
					got = "error: " + err.Error()
				}
				viewed <- got
			}()
			// Another round trip to IndexedDB: the View has not begun.
			expect(t, other, "b", "k", "v2")
			select {
			case got := <-viewed:
				t.Fatalf("a View ran while suspended (read %q)", got)
			default:
			}
			a.Resume()
			if got := <-viewed; got != "v2" {
				t.Fatalf("after Resume, the View read %q, want v2 (the aborted write left nothing)", got)
			}
			if n := a.Suspend(); n != 0 {
				t.Errorf("Suspend with nothing running aborted %d", n)
			}
			a.Resume()
			expect(t, a, "b", "k", "v2")
		})
	}
}

// TestCloseWhileSuspended: Close of a suspended Store returns, and a
// transaction waiting to begin fails with kv.ErrClosed.
func TestCloseWhileSuspended(t *testing.T) {
	a, _ := openT(t, openOptions{}, "b")
	a.Suspend()
	done := make(chan error, 1)
	go func() { done <- a.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("v")) }) }()
	runtime.Gosched() // the Update waits to begin
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Update waiting to begin returned %v after Close, want kv.ErrClosed", err)
	}
}
