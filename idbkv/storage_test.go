//go:build js && wasm

package idbkv

import (
	"bytes"
	"errors"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// TestStorageMargin: a Store opened with Quota refuses, with
// kv.ErrQuotaExceeded and before writing anything, a commit that would take
// the origin's usage (navigator.storage.estimate()) past half the quota;
// reads, deletes and commits that fit still succeed.
func TestStorageMargin(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			usage, _, err := estimate()
			if err != nil {
				t.Fatalf("estimate: %v", err)
			}
			o := d.opts
			// Room for ~1 MB more below half the quota.
			o.quota = 2 * (usage + 1<<20)
			s, _ := openT(t, o, "b")
			defer s.Close()
			small := bytes.Repeat([]byte{7}, 1000)
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("small"), small) }); err != nil {
				t.Fatalf("a 1 KB commit: %v", err)
			}
			big := bytes.Repeat([]byte{9}, 2<<20)
			err = s.Update(func(tx kv.Tx) error {
				if err := tx.Put("b", []byte("big"), big); err != nil {
					return err
				}
				return tx.Put("b", []byte("other"), small)
			})
			if !errors.Is(err, kv.ErrQuotaExceeded) {
				t.Fatalf("a 2 MiB commit past the margin: %v, want kv.ErrQuotaExceeded", err)
			}
			t.Logf("refused: %v", err)
			if err := s.View(func(tx kv.Tx) error {
				for _, k := range []string{"big", "other"} {
					if _, err := tx.Get("b", []byte(k)); !errors.Is(err, kv.ErrNotFound) {
						t.Errorf("%s after the refused commit: %v, want not found", k, err)
					}
				}
				v, err := tx.Get("b", []byte("small"))
				if err != nil || !bytes.Equal(v, small) {
					t.Errorf("small: %d bytes, %v", len(v), err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.Update(func(tx kv.Tx) error { return tx.Delete("b", []byte("small")) }); err != nil {
				t.Errorf("a delete after the refusal: %v", err)
			}
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("again"), small) }); err != nil {
				t.Errorf("a 1 KB commit after the refusal: %v", err)
			}
		})
	}
}

// TestStorageErrorClosesStore: an IO error reported for a transaction
// (Chromium's UnknownError "... IO error: ... FILE_ERROR_NO_SPACE") is
// ErrStorage; the Store fails the other transaction waiting on the browser
// at once, and every later Update and View returns kv.ErrClosed.
func TestStorageErrorClosesStore(t *testing.T) {
	s, _ := openT(t, openOptions{}, "b")
	defer s.Close()
	// A transaction waiting on the browser, as one would be when the
	// connection is lost: registered, waiting, its reply never coming.
	stuck, err := s.begin(false, false)
	if err != nil {
		t.Fatal(err)
	}
	stuck.waiting.Store(true)
	got := make(chan error, 1)
	go func() { _, _, err := stuck.wait("get"); got <- err }()

	failing, err := s.begin(true, false)
	if err != nil {
		t.Fatal(err)
	}
	failing.waiting.Store(true)
	ioErr := jsObject.New()
	ioErr.Set("name", "UnknownError")
	ioErr.Set("message", "Connection is closing because of: IO error: .../000040.ldb: FILE_ERROR_NO_SPACE (ChromeMethodBFE: 3::WritableFileAppend::8)")
	failing.deliver(reply{val: ioErr})
	_, _, err = failing.wait("commit")
	if !errors.Is(err, ErrStorage) {
		t.Errorf("the failed commit: %v, want ErrStorage", err)
	}
	if err := <-got; !errors.Is(err, ErrStorage) || !errors.Is(err, kv.ErrClosed) {
		t.Errorf("the transaction waiting meanwhile: %v, want ErrStorage and kv.ErrClosed", err)
	}
	s.end(stuck)
	s.end(failing)
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("b", []byte("k"), []byte("v")) }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Update after the IO error: %v, want kv.ErrClosed", err)
	}
	if err := s.View(func(kv.Tx) error { return nil }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("View after the IO error: %v, want kv.ErrClosed", err)
	}
}
