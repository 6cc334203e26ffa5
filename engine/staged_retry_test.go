//go:build !js

package engine

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// failingUpdates is a store whose next Update fails before running its
// function (as idbkv fails a transaction a page freeze aborted).
type failingUpdates struct {
	kv.Store
	fail int
}

var errAborted = errors.New("test: transaction aborted")

func (s *failingUpdates) Update(fn func(kv.Tx) error) error {
	if s.fail > 0 {
		s.fail--
		return errAborted
	}
	return s.Store.Update(fn)
}

// TestStagedCommitAgainAfterStoreFailure: a staged transaction whose
// Commit failed in the store wrote nothing and can be committed again
// (jsbridge commits again a transaction a page freeze aborted); after a
// successful Commit it is finished.
func TestStagedCommitAgainAfterStoreFailure(t *testing.T) {
	st := &failingUpdates{Store: memkv.New(Buckets...)}
	e, err := Open(st, Options{Schema: citySchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Stage()
	if _, err := s.Insert("cities", map[string]any{"id": 1, "name": "Lyon", "country": "FR"}); err != nil {
		t.Fatal(err)
	}
	st.fail = 1
	if _, err := s.Commit(); !errors.Is(err, errAborted) {
		t.Fatalf("first Commit: %v, want the store's error", err)
	}
	if n, err := e.Count("cities", nil); err != nil || n != 0 {
		t.Fatalf("after the failed Commit: %d rows (%v), want 0", n, err)
	}
	if _, err := s.Commit(); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if n, err := e.Count("cities", nil); err != nil || n != 1 {
		t.Fatalf("after the second Commit: %d rows (%v), want 1", n, err)
	}
	if _, err := s.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after success: %v, want ErrClosed", err)
	}
}
