package engine

import (
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// countingStore is memkv counting its read-write and read-only
// transactions (with idbkv, each is an IndexedDB transaction).
type countingStore struct {
	kv.Store
	updates, views int
}

func (s *countingStore) Update(fn func(kv.Tx) error) error {
	s.updates++
	return s.Store.Update(fn)
}

func (s *countingStore) View(fn func(kv.Tx) error) error {
	s.views++
	return s.Store.View(fn)
}

// TestOpenTransactions: Open with a schema and nothing held costs one
// read-write transaction (the site id, the format and the declared
// schema's migrations together) and one read-only transaction (is any
// change held?), whether the store is new or opened again with the same
// schema; both opens see the same site id.
func TestOpenTransactions(t *testing.T) {
	st := &countingStore{Store: memkv.New(Buckets...)}
	first, err := Open(st, Options{Schema: replaceSchema()})
	mustDo(t, err)
	if st.updates != 1 || st.views != 1 {
		t.Errorf("Open of a new store: %d read-write and %d read-only transactions, want 1 and 1", st.updates, st.views)
	}
	st.updates, st.views = 0, 0
	again, err := Open(st, Options{Schema: replaceSchema()})
	mustDo(t, err)
	if st.updates != 1 || st.views != 1 {
		t.Errorf("Open again: %d read-write and %d read-only transactions, want 1 and 1", st.updates, st.views)
	}
	if first.SiteID() != again.SiteID() {
		t.Errorf("site id %v, then %v", first.SiteID(), again.SiteID())
	}
	if (first.SiteID() == SiteID{}) {
		t.Error("zero site id")
	}
}
