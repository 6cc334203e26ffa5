//go:build js && wasm

package idbkv

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv"
)

// TestEngineSpeculating runs the engine suite over a speculating Store, as
// jsbridge opens replicas (TestEngine runs it without Speculate).
func TestEngineSpeculating(t *testing.T) {
	enginetest.Run(t, func(t testing.TB) kv.Store {
		s, _ := openT(t, openOptions{speculate: true}, engine.Buckets...)
		t.Cleanup(func() { s.Close() })
		return s
	}, enginetest.Options{Short: true, SkipConcurrency: true})
}

// TestSpeculateTwoTabsCounter: two speculating Stores over one database (two
// tabs), several goroutines each, incrementing one counter and minting a
// "clock" value (old+1) per Update. Every increment must land and no clock
// value may be minted twice.
func TestSpeculateTwoTabsCounter(t *testing.T) {
	s1, name := openT(t, specOpts, "a")
	defer s1.Close()
	s2 := openNamed(t, name, specOpts, "a")
	defer s2.Close()
	const perG = 30
	var mu sync.Mutex
	minted := map[int]int{}
	var errs []error
	step := func(s *Store) error {
		var clk int
		err := s.Update(func(tx kv.Tx) error {
			vals, err := tx.(kv.BatchGetter).GetBatch([]kv.BucketKey{{Bucket: "a", Key: []byte("clock")}, {Bucket: "a", Key: []byte("x")}})
			if err != nil {
				return err
			}
			c, n := 0, 0
			if vals[0] != nil {
				c, _ = strconv.Atoi(string(vals[0]))
			}
			if vals[1] != nil {
				n, _ = strconv.Atoi(string(vals[1]))
			}
			clk = c + 1
			if err := tx.Put("a", []byte("clock"), []byte(strconv.Itoa(clk))); err != nil {
				return err
			}
			return tx.Put("a", []byte("x"), []byte(strconv.Itoa(n+1)))
		})
		if err == nil {
			mu.Lock()
			minted[clk]++
			mu.Unlock()
		}
		return err
	}
	var wg sync.WaitGroup
	for g, s := range []*Store{s1, s1, s2, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				if err := step(s); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("g%d: %w", g, err))
					mu.Unlock()
				}
				if i%3 == g%3 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	expect(t, s1, "a", "x", strconv.Itoa(4*perG))
	for c, k := range minted {
		if k > 1 {
			t.Errorf("clock %d minted %d times", c, k)
		}
	}
}

// TestSpeculateTwoTabsEngine: two Engines, each over its own speculating
// Store on one database (two tabs), upsert and update one row at once;
// no transaction id may be minted twice and every write must be in the
// change log.
func TestSpeculateTwoTabsEngine(t *testing.T) {
	for _, o := range []openOptions{{}, specOpts} {
		t.Run(fmt.Sprint(o.speculate), func(t *testing.T) { twoTabsEngine(t, o) })
	}
}

func twoTabsEngine(t *testing.T, o openOptions) {
	s1, name := openT(t, o, engine.Buckets...)
	defer s1.Close()
	s2 := openNamed(t, name, o, engine.Buckets...)
	defer s2.Close()
	schema := &engine.Schema{Tables: []engine.TableDef{{Name: "items", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "a", Type: engine.KindInteger}, {Name: "b", Type: engine.KindText}}}}}
	clk := enginetest.NewManualClock(1_780_000_000_000)
	e1, err := engine.Open(s1, engine.Options{Schema: schema, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	e2, err := engine.Open(s2, engine.Options{Schema: schema, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	var mu sync.Mutex
	minted := map[string]int{}
	var errs []error
	n := 0
	sub := func(e *engine.Engine) {
		e.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.LocalChange && ev.ChangeSet != nil {
				mu.Lock()
				minted[ev.ChangeSet.TransactionID]++
				n++
				mu.Unlock()
			}
		})
	}
	sub(e1)
	sub(e2)
	const per = 25
	var wg sync.WaitGroup
	for g, e := range []*engine.Engine{e1, e2, e1, e2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				var err error
				switch (g + i) % 4 {
				case 0, 1:
					_, err = e.Upsert("items", map[string]any{"id": "r", "a": g*1000 + i})
				case 2:
					_, err = e.Update("items", engine.Key{"r"}, map[string]any{"b": fmt.Sprint(g, "-", i)})
					if err != nil && i < 2 {
						err = nil // row may not exist yet
					}
				case 3:
					_, err = e.Upsert("items", map[string]any{"id": fmt.Sprint("k", i%5), "a": i})
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("g%d i%d: %w", g, i, err))
					mu.Unlock()
				}
				if i%4 == 0 {
					clk.Advance(1)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	for id, k := range minted {
		if k > 1 {
			t.Errorf("transaction %s minted %d times", id, k)
		}
	}
	sets, err := e1.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cs := range sets {
		seen[cs.TransactionID]++
	}
	for id, k := range seen {
		if k > 1 {
			t.Errorf("change log: transaction %s %d times", id, k)
		}
	}
	t.Logf("%d commits, %d change sets; spec hits %d stale %d errRerun %d", n, len(sets), statSpec.Load(), statStale.Load(), statErrRerun.Load())
}

// getb is a speculating-shape read: GetBatch of keys in bucket "a".
func getb(tx kv.Tx, keys ...string) ([][]byte, error) {
	refs := make([]kv.BucketKey, len(keys))
	for i, k := range keys {
		refs[i] = kv.BucketKey{Bucket: "a", Key: []byte(k)}
	}
	return tx.(kv.BatchGetter).GetBatch(refs)
}

func put(t *testing.T, s *Store, k string, v []byte) {
	t.Helper()
	if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte(k), v) }); err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, s *Store, k string) {
	t.Helper()
	if err := s.Update(func(tx kv.Tx) error { return tx.Delete("a", []byte(k)) }); err != nil {
		t.Fatal(err)
	}
}

// TestSpeculateAdversarial: absent vs empty both ways, same length different
// bytes, no-write speculation, ABA, DeleteRange in this Store, ErrTxInactive.
func TestSpeculateAdversarial(t *testing.T) {
	s, name := openT(t, specOpts, "a")
	defer s.Close()
	o := openNamed(t, name, openOptions{}, "a")
	defer o.Close()
	// observe runs an engine-shaped Update on s reading clock and k and
	// returns what each run saw.
	observe := func(k string, write bool) []string {
		var seen []string
		err := s.Update(func(tx kv.Tx) error {
			vals, err := getb(tx, "clock", k)
			if err != nil {
				return err
			}
			d := "absent"
			if vals[1] != nil {
				d = fmt.Sprintf("%q", vals[1])
			}
			seen = append(seen, d)
			if write {
				return tx.Put("a", []byte("clock"), []byte(fmt.Sprint(len(seen))))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	put(t, s, "clock", []byte("0"))
	put(t, s, "e", []byte{})
	for _, write := range []bool{false, true} {
		observe("e", write)
		observe("n", write) // caches n absent
		del(t, o, "e")
		o.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("n"), []byte{}) })
		if got := observe("e", write); got[len(got)-1] != "absent" {
			t.Errorf("write=%v: empty cached, deleted elsewhere: runs saw %v", write, got)
		}
		if got := observe("n", write); got[len(got)-1] != `""` {
			t.Errorf("write=%v: absent cached, empty put elsewhere: runs saw %v", write, got)
		}
		put(t, o, "e", []byte("ab"))
		observe("e", write)
		put(t, o, "e", []byte("ac"))
		if got := observe("e", write); got[len(got)-1] != `"ac"` {
			t.Errorf("write=%v: same length: %v", write, got)
		}
		// ABA: cached value is current again: one run is right.
		put(t, o, "e", []byte("zz"))
		put(t, o, "e", []byte("ac"))
		if got := observe("e", write); len(got) != 1 || got[0] != `"ac"` {
			t.Errorf("write=%v: ABA: %v", write, got)
		}
		put(t, s, "e", []byte{})
		del(t, s, "n")
	}
	// DeleteRange in this Store drops cached entries.
	put(t, s, "r1", []byte("1"))
	observe("r1", true)
	if err := s.Update(func(tx kv.Tx) error { return tx.DeleteRange("a", []byte("r"), []byte("s")) }); err != nil {
		t.Fatal(err)
	}
	if got := observe("r1", true); len(got) != 1 || got[0] != "absent" {
		t.Errorf("after DeleteRange: %v", got)
	}
	// ErrTxInactive after a speculative read: nothing written, cache intact.
	observe("r2", true)
	for _, w := range foreignWaits {
		err := s.Update(func(tx kv.Tx) error {
			if _, err := getb(tx, "clock", "r2"); err != nil {
				return err
			}
			w.wait()
			return tx.Put("a", []byte("r2"), []byte("x"))
		})
		if !errors.Is(err, kv.ErrTxInactive) {
			t.Errorf("%s: Update = %v, want ErrTxInactive", w.name, err)
		}
		expect(t, s, "a", "r2", "")
		if got := observe("r2", true); len(got) != 1 || got[0] != "absent" {
			t.Errorf("%s: after inactive: %v", w.name, got)
		}
		// wait before the speculative read
		err = s.Update(func(tx kv.Tx) error {
			w.wait()
			if _, err := getb(tx, "clock", "r2"); err != nil {
				return err
			}
			return tx.Put("a", []byte("r2"), []byte("y"))
		})
		if !errors.Is(err, kv.ErrTxInactive) {
			t.Errorf("%s: Update (wait first) = %v, want ErrTxInactive", w.name, err)
		}
		expect(t, s, "a", "r2", "")
	}
}

// TestSpeculateCloseDuringStaleUpdate: Close "waits for running transactions to
// finish"; an Update that is running when Close is called must not fail
// with ErrClosed just because its speculative first attempt was stale.
func TestSpeculateCloseDuringStaleUpdate(t *testing.T) {
	s, name := openT(t, specOpts, "a")
	o := openNamed(t, name, openOptions{}, "a")
	defer o.Close()
	var seen []string
	runs := 0
	if err := s.Update(incr("x", &seen, &runs)); err != nil { // caches clock, x
		t.Fatal(err)
	}
	put(t, o, "x", []byte("41")) // another tab
	started := make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		first := true
		updated <- s.Update(func(tx kv.Tx) error {
			if first {
				first = false
				close(started)
			}
			return incr("x", &seen, &runs)(tx)
		})
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-updated; err != nil {
		t.Errorf("Update running when Close was called = %v, want nil (Close waits for running transactions)", err)
	}
	expect(t, o, "a", "x", "42")
}

// TestSpeculateNoStaleCascade: rows written without GetBatch (bulk/sync paths)
// are not cached; an upsert-shaped Update of such a row assumes it absent,
// goes stale, and the stale path clears the WHOLE cache, so rows learned
// before are lost again: visiting 10 existing rows round-robin, every
// Update costs an aborted transaction, forever.
func TestSpeculateNoStaleCascade(t *testing.T) {
	s, _ := openT(t, specOpts, "a")
	defer s.Close()
	if err := s.Update(func(tx kv.Tx) error { // bulk load: no GetBatch
		for i := 0; i < 10; i++ {
			if err := tx.Put("a", []byte(fmt.Sprint("k", i)), []byte("1")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	runs := 0
	if err := s.Update(incr("other", &seen, &runs)); err != nil { // caches clock
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		st0 := statStale.Load()
		for i := 0; i < 10; i++ {
			if err := s.Update(incr(fmt.Sprint("k", i), &seen, &runs)); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("round %d: %d of 10 Updates went stale (aborted + rerun)", round, statStale.Load()-st0)
		if round > 0 && statStale.Load()-st0 > 0 {
			t.Errorf("round %d: %d stale Updates on rows this Store already read and wrote", round, statStale.Load()-st0)
		}
	}
}

// TestSpeculateNoStaleCascadeEngine: the same through the engine: rows inserted
// in one Transact (as a bulk insert or a sync would), then single-row
// Upserts visiting them round-robin.
func TestSpeculateNoStaleCascadeEngine(t *testing.T) {
	s, _ := openT(t, specOpts, engine.Buckets...)
	defer s.Close()
	schema := &engine.Schema{Tables: []engine.TableDef{{Name: "items", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "a", Type: engine.KindInteger}}}}}
	e, err := engine.Open(s, engine.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Transact(func(tx *engine.Tx) error {
		for i := 0; i < 10; i++ {
			if _, err := tx.Insert("items", map[string]any{"id": fmt.Sprint("k", i), "a": 0}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		st0, sp0 := statStale.Load(), statSpec.Load()
		for i := 0; i < 10; i++ {
			if _, err := e.Upsert("items", map[string]any{"id": fmt.Sprint("k", i), "a": round + 1}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("round %d: %d speculative, %d stale of 10 Upserts", round, statSpec.Load()-sp0, statStale.Load()-st0)
	}
	for round := 0; round < 2; round++ {
		st0, sp0, er0 := statStale.Load(), statSpec.Load(), statErrRerun.Load()
		for i := 0; i < 10; i++ {
			if _, err := e.Update("items", engine.Key{fmt.Sprint("k", i)}, map[string]any{"a": 10 + round}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("Update round %d: %d speculative, %d stale, %d fn reruns of 10", round, statSpec.Load()-sp0, statStale.Load()-st0, statErrRerun.Load()-er0)
	}
}
