package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// dropsSchema is convergenceSchema plus what the drops of testDrops
// retire: items.e and its index by_e, and the table notes. Replicas
// declare parts of it (concurrent definitions of the same names).
func dropsSchema(i int) *engine.Schema {
	s := convergenceSchema()
	items := &s.Tables[0]
	if i%2 == 0 {
		items.Columns = append(items.Columns, engine.ColumnDef{Name: "e", Type: engine.KindText})
		items.Indexes = append(items.Indexes, engine.IndexDef{Name: "by_e", Columns: []string{"e"}})
	}
	if i%3 != 1 {
		items.Indexes = append(items.Indexes, engine.IndexDef{Name: "by_d", Columns: []string{"d"}})
	}
	if i%3 != 1 {
		s.Tables = append(s.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{
			{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}, {Name: "n", Type: engine.KindInteger},
		}, Indexes: []engine.IndexDef{{Name: "by_n", Columns: []string{"n"}}}})
	}
	return s
}

// The drops testDrops issues, each at most once per replica (a replica
// that no longer holds the thing gets an error, which is fine).
var dropOps = []struct {
	kind        engine.MigrationType
	table, name string
}{
	{engine.DropIndex, "items", "by_a"},
	{engine.DropIndex, "items", "by_d"},
	{engine.DropColumn, "items", "b"}, // by_b_c goes with it
	{engine.DropColumn, "items", "e"}, // by_e goes with it
	{engine.DropColumn, "notes", "n"}, // by_n goes with it
	{engine.DropTable, "notes", ""},
	{engine.DropTable, "pairs", ""},
}

// testDrops: replicas declaring overlapping schemas make random concurrent
// edits and drop indexes, columns and tables at random moments (so drops
// race with the definitions and the data of what they drop), exchange
// everything in random orders with duplicates, re-open with their
// original declarations (which must not bring a dropped name back), and
// one bootstraps a fresh replica from a snapshot; all must end
// byte-identical, with every dropped thing gone everywhere ("most
// destructive wins", docs/design.md § Schema migrations).
func (s *suite) testDrops(t *testing.T) {
	seed := s.seed(t)
	cases, ops := 24, 160
	if s.o.Short || testing.Short() {
		cases, ops = 6, 120
	}
	drops := 0
	for i := 0; i < cases; i++ {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		n := 3 + rng.IntN(3)
		t.Run(fmt.Sprintf("case%d/replicas%d", i, n), func(t *testing.T) {
			drops += s.dropsOnce(t, rng, n, ops, i%2 == 1)
		})
		if t.Failed() {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
	t.Logf("%d cases of %d operations, %d drops", cases, ops, drops)
}

func (s *suite) dropsOnce(t *testing.T, rng *rand.Rand, n, ops int, allow bool) int {
	reps := make([]*replica, n)
	var pool []engine.ChangeSet
	subscribe := func(r *replica) {
		r.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.LocalChange && ev.ChangeSet != nil {
				pool = append(pool, *ev.ChangeSet)
			}
		})
	}
	open := func(i int) engine.Options {
		return engine.Options{Schema: dropsSchema(i), AllowResurrection: allow}
	}
	for i := range reps {
		o := open(i)
		reps[i] = s.newReplica(t, fmt.Sprintf("r%d", i), o.Schema, func(x *engine.Options) { x.AllowResurrection = allow })
		reps[i].clock.Set(T0 + uint64(rng.IntN(2000)))
		subscribe(reps[i])
		pool = append(pool, must(reps[i].ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)...)
	}
	ids := []string{"i0", "i1", "i2", "i3", "i4", "i5"}
	write := func(tx *engine.Tx) {
		id := ids[rng.IntN(len(ids))]
		m := map[string]any{}
		for _, c := range []string{"a", "b", "c", "e"} {
			if rng.IntN(3) == 0 {
				switch c {
				case "a":
					m[c] = rng.IntN(4)
				case "c":
					m[c] = float64(rng.IntN(4)) / 2
				default:
					m[c] = []string{"x", "y", ""}[rng.IntN(3)]
				}
			}
		}
		// Errors are expected (a dropped column or table, a deleted
		// row): a failed statement writes nothing.
		switch k := rng.IntN(10); {
		case k < 3:
			m["id"] = id
			tx.Insert("items", m)
		case k < 5:
			tx.Update("items", engine.Key{id}, m)
		case k < 6:
			tx.Delete("items", engine.Key{id})
		case k < 7:
			tx.Upsert("pairs", map[string]any{"x": rng.IntN(3), "y": ids[rng.IntN(3)], "v": ids[rng.IntN(6)]})
		case k < 8:
			tx.Delete("notes", engine.Key{ids[rng.IntN(3)]})
		default:
			tx.Upsert("notes", map[string]any{"id": ids[rng.IntN(3)], "body": ids[rng.IntN(6)], "n": rng.IntN(3)})
		}
	}
	nDrops := 0
	for step := 0; step < ops; step++ {
		i := rng.IntN(n)
		r := reps[i]
		r.clock.Advance(uint64(rng.IntN(4)))
		switch k := rng.IntN(20); {
		case k < 11:
			if _, err := r.Transact(func(tx *engine.Tx) error {
				for j := 0; j < 1+rng.IntN(3); j++ {
					write(tx)
				}
				return nil
			}); err != nil {
				t.Fatalf("write on %s: %v", r.name, err)
			}
		case k < 13:
			d := dropOps[rng.IntN(len(dropOps))]
			var err error
			switch d.kind {
			case engine.DropIndex:
				err = r.DropIndex(d.table, d.name)
			case engine.DropColumn:
				err = r.DropColumn(d.table, d.name)
			default:
				err = r.DropTable(d.table)
			}
			switch {
			case err == nil:
				nDrops++
			case !errors.Is(err, engine.ErrUnknownTable) && !errors.Is(err, engine.ErrSchema):
				t.Fatalf("%s on %s: %v", d.kind, r.name, err)
			}
		case k < 14:
			// Re-open with the original declaration: nothing dropped
			// comes back.
			r.Close()
			e, err := engine.Open(r.store, engine.Options{Schema: dropsSchema(i), AllowResurrection: allow, Clock: r.clock})
			if err != nil {
				t.Fatalf("reopen %s: %v", r.name, err)
			}
			r.Engine = e
			subscribe(r)
			pool = append(pool, must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)...)
		case k < 17:
			if len(pool) > 0 {
				// Half the time data only: data ahead of the
				// definitions (held) and of the drops.
				dataOnly := rng.IntN(2) == 0
				var batch []engine.ChangeSet
				for j := rng.IntN(len(pool) + 1); j > 0; j-- {
					if cs := pool[rng.IntN(len(pool))]; !dataOnly || len(cs.Migrations) == 0 {
						batch = append(batch, cs)
					}
				}
				if _, err := r.ApplyChanges(batch); err != nil {
					t.Fatalf("apply to %s: %v", r.name, err)
				}
			}
		default:
			pull(t, r, reps[rng.IntN(n)])
		}
	}
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
	// A fresh replica bootstrapped from a snapshot, then given the pool.
	fresh := s.newReplica(t, "fresh", dropsSchema(0), func(x *engine.Options) { x.AllowResurrection = allow })
	for _, c := range collect(t, reps[rng.IntN(n)], engine.SnapshotOptions{ChunkRows: 1 + rng.IntN(4)}) {
		if _, err := fresh.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("bootstrap fresh: %v", err)
		}
	}
	// And one bootstrapped from the relay's merged replica (schema-less),
	// given the pool in random order and batches.
	rl := s.newReplica(t, "relay", nil, func(o *engine.Options) { o.LocalChangeLogOnly = true })
	all := slices.Clone(pool)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for len(all) > 0 {
		k := 1 + rng.IntN(min(len(all), 8))
		if _, err := rl.ApplyChanges(all[:k]); err != nil {
			t.Fatalf("apply to the relay: %v", err)
		}
		all = all[k:]
	}
	checkRelayDropped(t, rl, pool)
	viaRelay := s.newReplica(t, "via-relay", dropsSchema(1), func(x *engine.Options) { x.AllowResurrection = allow })
	for _, c := range collect(t, rl, engine.SnapshotOptions{ChunkRows: 1 + rng.IntN(4)}) {
		if _, err := viaRelay.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("bootstrap from the relay: %v", err)
		}
	}
	for _, r := range reps {
		pull(t, fresh, r)
		pull(t, r, fresh)
		pull(t, viaRelay, r)
		pull(t, r, viaRelay)
	}
	reps = append(reps, fresh, viaRelay)
	for _, r := range reps[1:] {
		pull(t, reps[0], r)
	}
	ref := DumpStore(t, reps[0].store)
	for _, r := range reps[1:] {
		pull(t, r, reps[0])
		if d := diffDumps(ref, DumpStore(t, r.store)); d != "" {
			t.Fatalf("%s and %s diverged: %s", reps[0].name, r.name, d)
		}
	}
	checkDropped(t, reps, pool)
	return nDrops
}

// checkDropped: every replica's schema and rows lack what the pool's
// drops retired.
func checkDropped(t *testing.T, reps []*replica, pool []engine.ChangeSet) {
	t.Helper()
	goneTables, goneCols, goneIdx := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, cs := range pool {
		for _, m := range cs.Migrations {
			switch m.Type {
			case engine.DropTable:
				goneTables[m.TableName] = true
			case engine.DropColumn:
				goneCols[m.TableName+"."+m.Name] = true
			case engine.DropIndex:
				goneIdx[m.TableName+"."+m.Name] = true
			}
		}
	}
	var want []engine.TableDef
	for i, r := range reps {
		sch := must(r.Schema())(t)
		if i == 0 {
			want = sch.Tables
		} else if fmt.Sprint(sch.Tables) != fmt.Sprint(want) {
			t.Fatalf("%s's schema %v differs from %s's %v", r.name, sch.Tables, reps[0].name, want)
		}
		for _, tb := range sch.Tables {
			if goneTables[tb.Name] {
				t.Fatalf("%s holds dropped table %s", r.name, tb.Name)
			}
			for _, c := range tb.Columns {
				if goneCols[tb.Name+"."+c.Name] {
					t.Fatalf("%s holds dropped column %s.%s", r.name, tb.Name, c.Name)
				}
			}
			for _, ix := range tb.Indexes {
				if goneIdx[tb.Name+"."+ix.Name] || slices.ContainsFunc(ix.Columns, func(c string) bool { return goneCols[tb.Name+"."+c] }) {
					t.Fatalf("%s holds dropped index %s.%s", r.name, tb.Name, ix.Name)
				}
			}
			rows := must(r.Query(tb.Name, engine.Query{}))(t)
			for _, row := range rows {
				for c := range row {
					if goneCols[tb.Name+"."+c] {
						t.Fatalf("%s: a %s row has dropped column %s", r.name, tb.Name, c)
					}
				}
			}
		}
		// One index entry per live row and index: none is left of a
		// dropped index, column or table, none missing.
		want := 0
		for _, tb := range sch.Tables {
			want += len(must(r.Query(tb.Name, engine.Query{}))(t)) * len(tb.Indexes)
		}
		if got := len(DumpStore(t, r.store).Buckets["index"]); got != want {
			t.Fatalf("%s holds %d index entries, want %d (live rows × indexes)", r.name, got, want)
		}
		for tb := range goneTables {
			if _, err := r.Query(tb, engine.Query{}); err == nil {
				t.Fatalf("%s: query of dropped table %s succeeded", r.name, tb)
			}
		}
	}
}

// checkRelayDropped: the schema-less replica holds no row of a dropped
// table and no cell of a dropped column.
func checkRelayDropped(t *testing.T, rl *replica, pool []engine.ChangeSet) {
	t.Helper()
	for _, cs := range pool {
		for _, m := range cs.Migrations {
			switch m.Type {
			case engine.DropTable:
				if rows := must(rl.Query(m.TableName, engine.Query{Deleted: true}))(t); len(rows) > 0 {
					t.Fatalf("the relay holds %d rows of dropped table %s", len(rows), m.TableName)
				}
				if rows := must(rl.Query(m.TableName, engine.Query{}))(t); len(rows) > 0 {
					t.Fatalf("the relay holds %d rows of dropped table %s", len(rows), m.TableName)
				}
			case engine.DropColumn:
				for _, row := range must(rl.Query(m.TableName, engine.Query{}))(t) {
					if _, ok := row[m.Name]; ok {
						t.Fatalf("the relay holds dropped column %s.%s: %v", m.TableName, m.Name, row)
					}
				}
			}
		}
	}
}
