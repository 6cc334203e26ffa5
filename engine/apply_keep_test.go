package engine

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
)

// prefetchStore is memkv whose transactions implement kv.Prefetcher by
// recording the keys.
type prefetchStore struct {
	kv.Store
	got [][]kv.BucketKey
}

type prefetchTx struct {
	kv.Tx
	s *prefetchStore
}

func (t prefetchTx) Prefetch(keys []kv.BucketKey) error {
	t.s.got = append(t.s.got, keys)
	return nil
}

func (s *prefetchStore) Update(fn func(kv.Tx) error) error {
	return s.Store.Update(func(tx kv.Tx) error { return fn(prefetchTx{tx, s}) })
}

// TestApplyKeepPrefetch: ApplyOptions.Keep leaves the ChangeSets it flags
// false out of the merge and of the result, inside the transaction; its
// error aborts the batch unchanged; a slice of another length is refused.
// ApplyOptions.Prefetch reaches a kv.Prefetcher transaction before Keep
// runs, with the keys of the rows the batch changes.
func TestApplyKeepPrefetch(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	author, err := Open(memkv.New(Buckets...), Options{Schema: replaceSchema(), Clock: clock})
	mustDo(t, err)
	for i := int64(1); i <= 3; i++ {
		clock.ms++
		_, err := author.Insert("items", map[string]any{"id": i, "name": "n"})
		mustDo(t, err)
	}
	sets, err := author.ChangesSince(HLC{}, 0, ChangesFilter{})
	mustDo(t, err)
	n := len(sets) // the schema's, then one per row

	st := &prefetchStore{Store: memkv.New(append(append([]string(nil), Buckets...), "extra")...)}
	dev, err := Open(st, Options{Schema: replaceSchema(), Clock: clock})
	mustDo(t, err)

	boom := errors.New("boom")
	if _, err := dev.Apply(sets, ApplyOptions{Keep: func(kv.Tx) ([]bool, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Fatalf("Keep's error: Apply returned %v", err)
	}
	if _, err := dev.Apply(sets, ApplyOptions{Keep: func(kv.Tx) ([]bool, error) { return []bool{true}, nil }}); err == nil {
		t.Fatal("Keep of the wrong length: Apply returned nil")
	}
	if rows, _ := dev.Query("items", Query{}); len(rows) != 0 {
		t.Fatalf("aborted applies left %d rows", len(rows))
	}

	want := []kv.BucketKey{{Bucket: "extra", Key: []byte("k")}}
	prefetched := false
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = i != n-2 // all but row 2
	}
	res, err := dev.Apply(sets, ApplyOptions{
		Prefetch: want,
		Keep: func(kv.Tx) ([]bool, error) {
			prefetched = len(st.got) > 0
			return keep, nil
		},
		ExtraSets: func(_ kv.Tx, _ ApplyResult, changed []bool) error {
			if len(changed) != n-1 {
				t.Errorf("ExtraSets got %d flags, want %d (the kept ChangeSets)", len(changed), n-1)
			}
			return nil
		},
	})
	mustDo(t, err)
	// The caller's key, and the rows the batch changes (guessRowKeys).
	var extra, nrows int
	if len(st.got) > 0 {
		for _, k := range st.got[len(st.got)-1] {
			switch k.Bucket {
			case "extra":
				extra++
			case layout.BucketRows:
				nrows++
			}
		}
	}
	if !prefetched || extra != 1 || nrows != 3 {
		t.Errorf("Prefetch before Keep: %v; the transaction was given %d caller's keys (want 1) and %d row keys (want 3): %v", prefetched, extra, nrows, st.got)
	}
	if res.Transactions != n-1 {
		t.Errorf("result counts %d transactions, want %d", res.Transactions, n-1)
	}
	rows, err := dev.Query("items", Query{})
	mustDo(t, err)
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r["id"].Int())
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 3 {
		t.Errorf("rows %v, want [1 3]", ids)
	}
}
