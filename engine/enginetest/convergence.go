package enginetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// Seed returns the seed for a property test: Options.Seed, else the
// REPLICA_SEED environment variable, else the time. It is always logged so a
// failure can be replayed.
func (s *suite) seed(t *testing.T) uint64 {
	seed := s.o.Seed
	if seed == 0 {
		if v := os.Getenv("REPLICA_SEED"); v != "" {
			seed, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with REPLICA_SEED=%d)", seed, seed)
	return seed
}

func convergenceSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{
		{Name: "items", Columns: []engine.ColumnDef{
			{Name: "id", Type: engine.KindText},
			{Name: "a", Type: engine.KindInteger},
			{Name: "b", Type: engine.KindText},
			{Name: "c", Type: engine.KindReal},
			{Name: "d", Type: engine.KindBoolean},
		}, Indexes: []engine.IndexDef{{Name: "by_a", Columns: []string{"a"}}, {Name: "by_b_c", Columns: []string{"b", "c"}}}},
		{Name: "pairs", Columns: []engine.ColumnDef{
			{Name: "x", Type: engine.KindInteger},
			{Name: "y", Type: engine.KindText},
			{Name: "v", Type: engine.KindText},
		}, PrimaryKey: []string{"x", "y"}},
	}}
}

// testConvergence: replicas make random concurrent edits (inserts, updates
// of random column subsets, deletes, multi-row transactions, the same cells
// edited on several replicas), exchange them in random order with
// duplicates and re-deliveries, and must end byte-identical, under both
// resurrection policies.
func (s *suite) testConvergence(t *testing.T) {
	seed := s.seed(t)
	cases, ops := 24, 160
	if s.o.Short || testing.Short() {
		cases, ops = 4, 120
	}
	totalOps := 0
	for i := 0; i < cases; i++ {
		allow := i%2 == 1
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		n := 3 + rng.IntN(3)
		t.Run(fmt.Sprintf("case%d/replicas%d/resurrection=%v", i, n, allow), func(t *testing.T) {
			totalOps += s.convergeOnce(t, rng, n, ops, allow)
		})
		if t.Failed() {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
	t.Logf("%d cases, %d operations", cases, totalOps)
}

func (s *suite) convergeOnce(t *testing.T, rng *rand.Rand, n, ops int, allow bool) int {
	mod := func(o *engine.Options) { o.AllowResurrection = allow }
	s.convergeRun(t, rng, n, ops, func(int) (*engine.Schema, func(*engine.Options)) { return convergenceSchema(), mod })
	return ops
}

// convergeRun is testConvergence's run: replica i opens with
// declare(i)'s schema and options. It returns the converged replicas and
// every ChangeSet minted.
func (s *suite) convergeRun(t *testing.T, rng *rand.Rand, n, ops int, declare func(i int) (*engine.Schema, func(*engine.Options))) ([]*replica, []engine.ChangeSet) {
	reps := make([]*replica, n)
	var pool []engine.ChangeSet
	for i := range reps {
		schema, mod := declare(i)
		reps[i] = s.newReplica(t, fmt.Sprintf("r%d", i), schema, mod)
		reps[i].clock.Set(T0 + uint64(rng.IntN(2000)))
		reps[i].Subscribe(func(ev engine.Event) {
			if ev.Type == engine.LocalChange && ev.ChangeSet != nil {
				pool = append(pool, *ev.ChangeSet)
			}
		})
	}
	// The schema transactions happened before the subscriptions: seed the
	// pool with them.
	for _, r := range reps {
		pool = append(pool, must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)...)
	}
	ids := []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"}
	randItem := func() map[string]any {
		m := map[string]any{}
		if rng.IntN(3) > 0 {
			m["a"] = rng.IntN(5)
		}
		if rng.IntN(3) > 0 {
			m["b"] = []string{"x", "y", "z", ""}[rng.IntN(4)]
		}
		if rng.IntN(3) > 0 {
			m["c"] = float64(rng.IntN(4)) / 2
		}
		if rng.IntN(4) == 0 {
			m["d"] = rng.IntN(2) == 0
		}
		if rng.IntN(6) == 0 {
			m["b"] = nil
		}
		return m
	}
	op := func(tx *engine.Tx) {
		id := ids[rng.IntN(len(ids))]
		switch k := rng.IntN(10); {
		case k < 3:
			m := randItem()
			m["id"] = id
			tx.Insert("items", m)
		case k < 6:
			tx.Update("items", engine.Key{id}, randItem())
		case k < 7:
			m := randItem()
			m["id"] = id
			tx.Upsert("items", m)
		case k < 8:
			tx.Delete("items", engine.Key{id})
		case k < 9:
			tx.Upsert("pairs", map[string]any{"x": rng.IntN(3), "y": ids[rng.IntN(3)], "v": ids[rng.IntN(8)]})
		default:
			tx.Delete("pairs", engine.Key{rng.IntN(3), ids[rng.IntN(3)]})
		}
	}
	deliver := func(r *replica) {
		// A random sample of everything ever minted, shuffled, with
		// duplicates.
		k := rng.IntN(len(pool) + 1)
		batch := make([]engine.ChangeSet, 0, k+2)
		for j := 0; j < k; j++ {
			batch = append(batch, pool[rng.IntN(len(pool))])
		}
		if _, err := r.ApplyChanges(batch); err != nil {
			t.Fatalf("apply to %s: %v", r.name, err)
		}
	}
	for step := 0; step < ops; step++ {
		r := reps[rng.IntN(n)]
		switch k := rng.IntN(10); {
		case k < 6:
			r.clock.Advance(uint64(rng.IntN(4)))
			if rng.IntN(20) == 0 {
				r.clock.Set(r.clock.Now() - 500) // wall clock steps back
			}
			_, err := r.Transact(func(tx *engine.Tx) error {
				m := 1
				if rng.IntN(4) == 0 {
					m = 2 + rng.IntN(3)
				}
				for j := 0; j < m; j++ {
					op(tx)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("write on %s: %v", r.name, err)
			}
		case k < 8:
			deliver(r)
		default:
			pull(t, r, reps[rng.IntN(n)])
		}
	}
	// Final exchange: every replica gets everything, shuffled and
	// duplicated, then pulls from every peer (relayed facts included).
	for _, r := range reps {
		all := append(append([]engine.ChangeSet(nil), pool...), pool[:len(pool)/3]...)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		if _, err := r.ApplyChanges(all); err != nil {
			t.Fatalf("final apply to %s: %v", r.name, err)
		}
	}
	for _, r := range reps {
		for _, p := range reps {
			if p != r {
				pull(t, r, p)
			}
		}
	}
	ref := DumpStore(t, reps[0].store)
	for _, r := range reps[1:] {
		if d := diffDumps(ref, DumpStore(t, r.store)); d != "" {
			t.Fatalf("%s and %s diverged: %s", reps[0].name, r.name, d)
		}
	}
	rows0 := must(reps[0].Query("items", engine.Query{}))(t)
	for _, r := range reps[1:] {
		rows := must(r.Query("items", engine.Query{}))(t)
		if len(rows) != len(rows0) {
			t.Fatalf("%s has %d live items, %s has %d", r.name, len(rows), reps[0].name, len(rows0))
		}
		for i := range rows {
			if !rowsEqual(rows[i], rows0[i]) {
				t.Fatalf("row %d differs: %s vs %s", i, fmtRow(rows[i]), fmtRow(rows0[i]))
			}
		}
	}
	return reps, pool
}
