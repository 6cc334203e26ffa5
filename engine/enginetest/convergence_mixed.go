package enginetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// mixedSchema is convergenceSchema with a timestamp column (it travels as an
// integer on the wire) and, for v2, a real column with an index that
// replicas add by reopening. withPairs=false leaves out "pairs", which such
// a replica learns from its peers (its changes are held until then).
func mixedSchema(v2, withPairs bool) *engine.Schema {
	items := engine.TableDef{Name: "items", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText},
		{Name: "a", Type: engine.KindInteger},
		{Name: "b", Type: engine.KindText},
		{Name: "c", Type: engine.KindReal},
		{Name: "d", Type: engine.KindBoolean},
		{Name: "t", Type: engine.KindTimestamp},
	}, Indexes: []engine.IndexDef{{Name: "by_a", Columns: []string{"a"}}, {Name: "by_b_c", Columns: []string{"b", "c"}}, {Name: "by_t", Columns: []string{"t"}}}}
	if v2 {
		items.Columns = append(items.Columns, engine.ColumnDef{Name: "e", Type: engine.KindReal})
		items.Indexes = append(items.Indexes, engine.IndexDef{Name: "by_e", Columns: []string{"e", "a"}})
	}
	s := &engine.Schema{Tables: []engine.TableDef{items}}
	if withPairs {
		s.Tables = append(s.Tables, engine.TableDef{Name: "pairs", Columns: []engine.ColumnDef{
			{Name: "x", Type: engine.KindInteger},
			{Name: "y", Type: engine.KindText},
			{Name: "v", Type: engine.KindText},
		}, PrimaryKey: []string{"x", "y"}})
	}
	return s
}

// wireForm rewrites a ChangeSet as it reads back from the wire when it came
// from a JavaScript peer: timestamps and integral reals arrive as integers.
// Receivers normalize by column type, so this must not change the outcome.
func wireForm(cs engine.ChangeSet) engine.ChangeSet {
	out := cs
	out.Changes = make([]engine.Change, len(cs.Changes))
	conv := func(v engine.Value) engine.Value {
		switch v.Kind() {
		case engine.KindTimestamp:
			return engine.Int(v.Int())
		case engine.KindReal:
			if f := v.Real(); f == math.Trunc(f) && math.Abs(f) < 1<<53 && !(f == 0 && math.Signbit(f)) {
				return engine.Int(int64(f))
			}
		}
		return v
	}
	for i, c := range cs.Changes {
		c.Value = conv(c.Value)
		if c.HasPrior {
			c.PriorValue = conv(c.PriorValue)
		}
		out.Changes[i] = c
	}
	return out
}

// testConvergenceMixed extends testConvergence with every other way facts
// travel: key moves, staged transactions, snapshots (whole, interrupted and
// resumed, interrupted and abandoned) merged into replicas that already hold
// data, a schema-less relay forwarding ChangesSince output, wire-form
// values, a replica that learns a table late (its changes held, then replayed), and
// replicas that add a column and an index by reopening mid-run. Every
// replica must end byte-identical.
func (s *suite) testConvergenceMixed(t *testing.T) {
	seed := s.seed(t)
	cases, ops := 16, 150
	if s.o.Short || testing.Short() {
		cases, ops = 4, 100
	}
	for i := 0; i < cases; i++ {
		allow := i%2 == 1
		rng := rand.New(rand.NewPCG(seed, uint64(1000+i)))
		n := 3 + rng.IntN(2)
		t.Run(fmt.Sprintf("case%d/replicas%d/resurrection=%v", i, n, allow), func(t *testing.T) {
			s.convergeMixedOnce(t, rng, n, ops, allow)
		})
		if t.Failed() {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
}

type mixedReplica struct {
	*replica
	v2    bool
	pairs bool
	disp  engine.HeldPolicy // for the replica that learns "pairs" late
}

func (s *suite) convergeMixedOnce(t *testing.T, rng *rand.Rand, n, ops int, allow bool) {
	var pool []engine.ChangeSet
	mod := func(o *engine.Options) { o.AllowResurrection = allow }
	open := func(m *mixedReplica) {
		opts := engine.Options{Schema: mixedSchema(m.v2, m.pairs), Clock: m.clock, AllowResurrection: allow, HeldChanges: m.disp}
		e, err := engine.Open(m.store, opts)
		if err != nil {
			t.Fatalf("open %s: %v", m.name, err)
		}
		t.Cleanup(func() { e.Close() })
		m.Engine = e
		e.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.LocalChange && ev.ChangeSet != nil {
				pool = append(pool, *ev.ChangeSet)
			}
		})
		// Migrations recorded by Open came before the subscription.
		pool = append(pool, must(e.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)...)
	}
	reps := make([]*mixedReplica, n)
	for i := range reps {
		r := s.newReplica(t, fmt.Sprintf("r%d", i), mixedSchema(false, i != 0), mod)
		r.Close()
		r.clock.Set(T0 + uint64(rng.IntN(2000)))
		reps[i] = &mixedReplica{replica: r, pairs: i != 0}
		if i == 0 && rng.IntN(2) == 0 {
			reps[i].disp = engine.HoldAndForward // re-offers what it holds
		}
		open(reps[i])
	}
	relay := s.newReplica(t, "relay", nil, mod)
	ids := []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"}
	randItem := func(m *mixedReplica) map[string]any {
		v := map[string]any{}
		if rng.IntN(3) > 0 {
			v["a"] = rng.IntN(5)
		}
		if rng.IntN(3) > 0 {
			v["b"] = []string{"x", "y", "z", ""}[rng.IntN(4)]
		}
		if rng.IntN(3) > 0 {
			v["c"] = float64(rng.IntN(4)) / 2
		}
		if rng.IntN(4) == 0 {
			v["d"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) == 0 {
			v["t"] = int64(T0 + rng.IntN(3)*1000)
		}
		if m.v2 && rng.IntN(3) == 0 {
			v["e"] = float64(rng.IntN(3))
		}
		if rng.IntN(6) == 0 {
			v["b"] = nil
		}
		return v
	}
	type writer interface {
		Insert(string, map[string]any) (engine.Row, error)
		Update(string, engine.Key, map[string]any) (engine.Row, error)
		Upsert(string, map[string]any) (engine.Row, error)
		Delete(string, engine.Key) (bool, error)
	}
	op := func(m *mixedReplica, w writer) {
		id := ids[rng.IntN(len(ids))]
		switch k := rng.IntN(12); {
		case k < 3:
			v := randItem(m)
			v["id"] = id
			w.Insert("items", v)
		case k < 6:
			w.Update("items", engine.Key{id}, randItem(m))
		case k < 7:
			v := randItem(m)
			v["id"] = id
			w.Upsert("items", v)
		case k < 8:
			w.Delete("items", engine.Key{id})
		case k < 9: // key move
			w.Update("items", engine.Key{id}, map[string]any{"id": ids[rng.IntN(len(ids))]})
		case k < 10:
			w.Upsert("pairs", map[string]any{"x": rng.IntN(3), "y": ids[rng.IntN(3)], "v": ids[rng.IntN(8)]})
		case k < 11: // composite key move
			w.Update("pairs", engine.Key{rng.IntN(3), ids[rng.IntN(3)]}, map[string]any{"y": ids[rng.IntN(3)]})
		default:
			w.Delete("pairs", engine.Key{rng.IntN(3), ids[rng.IntN(3)]})
		}
	}
	sample := func() []engine.ChangeSet {
		k := rng.IntN(len(pool) + 1)
		batch := make([]engine.ChangeSet, 0, k)
		for j := 0; j < k; j++ {
			cs := pool[rng.IntN(len(pool))]
			if rng.IntN(2) == 0 {
				cs = wireForm(cs)
			}
			batch = append(batch, cs)
		}
		return batch
	}
	snapshot := func(dst *mixedReplica, src *replica) {
		chunks := collect(t, src, engine.SnapshotOptions{ChunkRows: 1 + rng.IntN(4)})
		cut := len(chunks)
		if rng.IntN(3) == 0 {
			cut = 1 + rng.IntN(len(chunks))
		}
		for _, c := range chunks[:cut] {
			if _, err := dst.ApplySnapshotChunk(c); err != nil {
				t.Fatalf("snapshot %s→%s: %v", src.name, dst.name, err)
			}
		}
		if cut == len(chunks) {
			return
		}
		cp := must(dst.SnapshotCheckpoint())(t)
		if cp == nil || rng.IntN(2) == 0 {
			must(0, dst.DiscardSnapshotCheckpoint())(t)
			return
		}
		for _, c := range collect(t, src, engine.SnapshotOptions{ChunkRows: 2, Resume: cp}) {
			if _, err := dst.ApplySnapshotChunk(c); err != nil {
				t.Fatalf("resumed snapshot %s→%s: %v", src.name, dst.name, err)
			}
		}
	}
	for step := 0; step < ops; step++ {
		m := reps[rng.IntN(n)]
		switch k := rng.IntN(20); {
		case k < 9:
			m.clock.Advance(uint64(rng.IntN(4)))
			if rng.IntN(20) == 0 {
				m.clock.Set(m.clock.Now() - 500)
			}
			_, err := m.Transact(func(tx *engine.Tx) error {
				for j := 1 + rng.IntN(3); j > 0; j-- {
					op(m, tx)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("write on %s: %v", m.name, err)
			}
		case k < 10:
			m.clock.Advance(uint64(rng.IntN(4)))
			st := m.Stage()
			for j := 1 + rng.IntN(3); j > 0; j-- {
				op(m, st)
			}
			st.Commit() // may conflict: then it writes nothing
		case k < 13:
			if _, err := m.ApplyChanges(sample()); err != nil {
				t.Fatalf("apply to %s: %v", m.name, err)
			}
		case k < 15:
			pull(t, m.replica, reps[rng.IntN(n)].replica)
		case k < 16:
			if _, err := relay.ApplyChanges(sample()); err != nil {
				t.Fatalf("apply to the relay: %v", err)
			}
			pull(t, relay, reps[rng.IntN(n)].replica)
		case k < 17:
			pull(t, m.replica, relay)
		case k < 18:
			src := reps[rng.IntN(n)].replica
			if rng.IntN(3) == 0 {
				src = relay
			}
			if src != m.replica {
				snapshot(m, src)
			}
		default:
			if !m.v2 && rng.IntN(3) == 0 {
				m.Close()
				m.clock.Advance(3)
				m.v2 = true
				open(m)
			}
		}
	}
	// Final exchange: everything to everyone, shuffled, with duplicates
	// and wire forms, then pulls from every peer and from the relay.
	for _, m := range reps {
		all := append(append([]engine.ChangeSet(nil), pool...), pool[:len(pool)/3]...)
		for i := range all {
			if rng.IntN(2) == 0 {
				all[i] = wireForm(all[i])
			}
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		if _, err := m.ApplyChanges(all); err != nil {
			t.Fatalf("final apply to %s: %v", m.name, err)
		}
	}
	for _, m := range reps {
		for _, p := range reps {
			if p != m {
				pull(t, m.replica, p.replica)
			}
		}
		pull(t, m.replica, relay)
	}
	ref := DumpStore(t, reps[0].store)
	if q := ref.Buckets["quarantine"]; len(q) != 0 { // the held changes (the bucket's stored name)
		t.Fatalf("%s still holds %d changes after learning every table", reps[0].name, len(q))
	}
	for _, m := range reps[1:] {
		if d := diffDumps(ref, DumpStore(t, m.store)); d != "" {
			t.Fatalf("%s and %s diverged: %s", reps[0].name, m.name, d)
		}
	}
	// The relay, which stores values as received, holds the same live rows.
	for _, m := range reps {
		pull(t, relay, m.replica)
	}
	for _, tb := range []string{"items", "pairs"} {
		want := must(reps[0].Query(tb, engine.Query{}))(t)
		got := must(relay.Query(tb, engine.Query{}))(t)
		if len(got) != len(want) {
			t.Fatalf("relay has %d live %s rows, replicas %d", len(got), tb, len(want))
		}
	}
}
