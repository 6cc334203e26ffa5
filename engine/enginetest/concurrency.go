package enginetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// testConcurrency calls an Engine from many goroutines at once — inserts
// from several writers and from a second Engine over the same store (a
// second tab), ApplyChanges of a peer's changes, snapshots, ChangesSince,
// queries, staged commits, subscriptions coming and going — and then checks
// that every write landed once, no HLC was minted twice, the change log
// matches the state and a peer that receives everything converges. Run it
// with -race.
func (s *suite) testConcurrency(t *testing.T) {
	if s.o.SkipConcurrency {
		t.Skip("Options.SkipConcurrency: spinning readers starve writers on one JS thread")
	}
	st := s.open(t)
	clk := NewManualClock(T0)
	a := must(engine.Open(st, engine.Options{Schema: convergenceSchema(), Clock: clk}))(t)
	defer a.Close()
	a2 := must(engine.Open(st, engine.Options{Schema: convergenceSchema(), Clock: clk}))(t)
	defer a2.Close()
	ra := &replica{Engine: a, store: st, clock: clk, name: "a"}
	peer := s.newReplica(t, "peer", convergenceSchema(), nil)
	perWriter := 40
	if s.o.Short {
		perWriter = 15
	}
	for i := 0; i < perWriter; i++ {
		must(peer.Insert("items", map[string]any{"id": fmt.Sprintf("p%d", i), "a": i}))(t)
	}
	peerSets := must(peer.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)

	var mu sync.Mutex
	minted := map[string]bool{}
	var errs []error
	record := func(cs *engine.ChangeSet, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		if cs == nil {
			return
		}
		if minted[cs.TransactionID] {
			errs = append(errs, fmt.Errorf("transaction %s minted twice", cs.TransactionID))
		}
		minted[cs.TransactionID] = true
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	writers := []*engine.Engine{a, a, a2}
	for w, e := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				record(e.Transact(func(tx *engine.Tx) error {
					if _, err := tx.Insert("items", map[string]any{"id": id, "a": i, "b": "x"}); err != nil {
						return err
					}
					_, err := tx.Upsert("pairs", map[string]any{"x": w, "y": fmt.Sprint(i % 3), "v": id})
					return err
				}))
				if i%4 == 0 {
					clk.Advance(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // a staged writer
		defer wg.Done()
		for i := 0; i < perWriter/2; i++ {
			stg := a.Stage()
			stg.Insert("items", map[string]any{"id": fmt.Sprintf("s%d", i), "a": i})
			record(stg.Commit())
		}
	}()
	wg.Add(1)
	go func() { // the peer's changes, in batches, some twice
		defer wg.Done()
		for i := 0; i < len(peerSets); i += 3 {
			end := min(i+5, len(peerSets))
			if _, err := a.ApplyChanges(peerSets[i:end]); err != nil {
				record(nil, err)
			}
		}
	}()
	readers := []func(){
		func() {
			for _, err := range a.Snapshot(engine.SnapshotOptions{ChunkRows: 7}) {
				if err != nil {
					record(nil, err)
					return
				}
			}
		},
		func() {
			if _, err := a2.ChangesSince(engine.HLC{}, 25, engine.ChangesFilter{}); err != nil {
				record(nil, err)
			}
		},
		func() {
			if _, err := a.Query("items", engine.Query{Where: []engine.Filter{{Column: "a", Op: engine.Ge, Value: 3}}, OrderBy: []engine.Order{{Column: "a", Desc: true}}, Limit: 5}); err != nil {
				record(nil, err)
			}
		},
		func() {
			un := a.Subscribe(func(ev engine.Event) {
				if ev.Type == engine.LocalChange {
					a.Get("items", engine.Key{"w0-0"}) // reads from inside a callback are allowed
				}
			})
			un()
		},
	}
	var rwg sync.WaitGroup
	for _, f := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					f()
					// js/wasm has no preemption, and returns to the
					// browser's event loop (where IndexedDB answers)
					// only when every goroutine is blocked: a loop
					// that never blocks would starve everything.
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	// Let the writers finish, then stop the readers.
	wg.Wait()
	close(stop)
	rwg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	want := len(writers)*perWriter + perWriter/2 + perWriter
	if n := must(a.Count("items", nil))(t); n != want {
		t.Fatalf("%d items, want %d", n, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	checkChangeLog(t, ra, rng, []engine.SiteID{peer.SiteID()})
	other := s.newReplica(t, "other", convergenceSchema(), nil)
	pull(t, other, ra)
	pull(t, other, peer)
	sameVisible(t, ra, other, "items", "pairs")
}
