package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testResurrectionPolicies is testConvergence with the resurrection policy
// as data of the database (engine.ResurrectionPolicy): every replica opens
// with its own random declaration per table (none, delete-wins, allowed,
// or Options.AllowResurrection for the tables it leaves undeclared), as
// app versions that disagree would, offline, concurrently. They write,
// exchange in random order with duplicates, and must end byte-identical,
// each reporting the same effective policy per table: the declaration with
// the lowest HLC, and the live rows the facts say under it (checkOracle).
// Then:
//   - a schema-less replica (the relay) merges everything and a fresh
//     device bootstraps from its snapshot: it shows the same rows;
//   - a table no replica declared gets a policy from a later migration (a
//     replica reopened declaring allow-resurrection), over the existing data:
//     every replica, the relay and a fresh device converge again;
//   - reopening each replica with its declaration succeeds where it agrees
//     with the database and fails with ErrSchema naming both policies where
//     it does not.
func (s *suite) testResurrectionPolicies(t *testing.T) {
	seed := s.seed(t)
	cases, ops := 16, 140
	if s.o.Short || testing.Short() {
		cases, ops = 4, 100
	}
	for i := 0; i < cases; i++ {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		n := 3 + rng.IntN(3)
		t.Run(fmt.Sprintf("case%d/replicas%d", i, n), func(t *testing.T) {
			s.policiesOnce(t, rng, n, ops)
		})
		if t.Failed() {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
}

// policyDecl is one replica's declaration: per table, and the option.
type policyDecl struct {
	tables map[string]engine.ResurrectionPolicy
	allow  bool // Options.AllowResurrection
}

// effective is what the declaration asks for table.
func (d policyDecl) effective(table string) engine.ResurrectionPolicy {
	if p := d.tables[table]; p != engine.ResurrectionUndeclared {
		return p
	}
	if d.allow {
		return engine.ResurrectionAllowed
	}
	return engine.ResurrectionUndeclared
}

func (d policyDecl) open() (*engine.Schema, func(*engine.Options)) {
	sc := convergenceSchema()
	for i := range sc.Tables {
		sc.Tables[i].Resurrection = d.tables[sc.Tables[i].Name]
	}
	return sc, func(o *engine.Options) { o.AllowResurrection = d.allow }
}

func (s *suite) policiesOnce(t *testing.T, rng *rand.Rand, n, ops int) {
	tables := []string{"items", "pairs"}
	decls := make([]policyDecl, n)
	for i := range decls {
		decls[i] = policyDecl{tables: map[string]engine.ResurrectionPolicy{}, allow: rng.IntN(3) == 0}
		for _, tb := range tables {
			// Leave "pairs" undeclared more often, so the later-migration
			// phase runs.
			if tb == "pairs" && rng.IntN(3) > 0 {
				continue
			}
			decls[i].tables[tb] = engine.ResurrectionPolicy(rng.IntN(3))
		}
	}
	if rng.IntN(2) == 0 {
		for i := range decls {
			decls[i].allow = false
			delete(decls[i].tables, "pairs")
		}
	}
	reps, pool := s.convergeRun(t, rng, n, ops, func(i int) (*engine.Schema, func(*engine.Options)) { return decls[i].open() })
	checkPolicies(t, reps, pool)
	checkOracle(t, pool, reps...)

	// The relay merges everything; a fresh device bootstraps from it.
	relay := s.newReplica(t, "relay", nil, nil)
	all := append([]engine.ChangeSet(nil), pool...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if _, err := relay.ApplyChanges(all); err != nil {
		t.Fatalf("relay apply: %v", err)
	}
	fresh := s.bootstrapFresh(t, rng, "fresh", relay)
	sameVisible(t, reps[0], fresh, tables...)
	checkOracle(t, pool, fresh)

	// A later migration fixes the policy of a table nobody declared.
	var undeclared []string
	sch := must(reps[0].Schema())(t)
	for _, tb := range sch.Tables {
		if tb.Resurrection == engine.ResurrectionUndeclared {
			undeclared = append(undeclared, tb.Name)
		}
	}
	if len(undeclared) > 0 {
		k := rng.IntN(n)
		r := reps[k]
		r.Close()
		// The next app version: it declares the undeclared tables and
		// follows the database for the others.
		decls[k] = policyDecl{tables: map[string]engine.ResurrectionPolicy{}}
		for _, tb := range undeclared {
			decls[k].tables[tb] = engine.ResurrectionAllowed
		}
		sc, mod := decls[k].open()
		opts := engine.Options{Schema: sc, Clock: r.clock}
		mod(&opts)
		r.clock.Advance(10)
		e, err := engine.Open(r.store, opts)
		if err != nil {
			t.Fatalf("reopen %s declaring allow-resurrection for %v: %v", r.name, undeclared, err)
		}
		t.Cleanup(func() { e.Close() })
		r.Engine = e
		for _, a := range append(reps, relay) {
			for _, b := range reps {
				if a != b {
					pull(t, a, b)
				}
			}
		}
		for _, b := range reps {
			pull(t, b, reps[k])
		}
		pool = append(pool, must(reps[k].ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)...)
		ref := DumpStore(t, reps[0].store)
		for _, r := range reps[1:] {
			if d := diffDumps(ref, DumpStore(t, r.store)); d != "" {
				t.Fatalf("after %s fixed the policy of %v: %s and %s diverged: %s", reps[k].name, undeclared, reps[0].name, r.name, d)
			}
		}
		checkPolicies(t, reps, pool)
		for _, tb := range undeclared {
			if p := policyOf(t, reps[0], tb); p != engine.ResurrectionAllowed {
				t.Fatalf("after %s reopened declaring allow-resurrection, %s's policy is %s", reps[k].name, tb, p)
			}
		}
		fresh2 := s.bootstrapFresh(t, rng, "fresh2", relay)
		sameVisible(t, reps[0], fresh2, tables...)
		checkOracle(t, pool, append(reps, fresh2)...)
	}

	// Reopen each replica with its declaration.
	for i, r := range reps {
		want := map[string]engine.ResurrectionPolicy{}
		for _, tb := range tables {
			want[tb] = policyOf(t, r, tb)
		}
		r.Close()
		sc, mod := decls[i].open()
		opts := engine.Options{Schema: sc, Clock: r.clock}
		mod(&opts)
		e, err := engine.Open(r.store, opts)
		var contra string
		for _, tb := range tables {
			if d := decls[i].effective(tb); d != engine.ResurrectionUndeclared && d != want[tb] {
				contra = tb
				break
			}
		}
		if contra == "" {
			if err != nil {
				t.Fatalf("reopen %s with a declaration that agrees with the database: %v", r.name, err)
			}
			e.Close()
			continue
		}
		if !errors.Is(err, engine.ErrSchema) {
			t.Fatalf("reopen %s declaring %s %s over the database's %s: err %v, want ErrSchema", r.name, contra, decls[i].effective(contra), want[contra], err)
		}
		for _, name := range []string{decls[i].effective(contra).String(), want[contra].String(), contra} {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("reopen %s: error %q does not name %q", r.name, err, name)
			}
		}
	}
}

// fresh bootstraps a new replica declaring no policy from src's snapshot.
func (s *suite) bootstrapFresh(t *testing.T, rng *rand.Rand, name string, src *replica) *replica {
	t.Helper()
	f := s.newReplica(t, name, convergenceSchema(), nil)
	for _, c := range collect(t, src, engine.SnapshotOptions{ChunkRows: 1 + rng.IntN(4)}) {
		if _, err := f.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("bootstrap %s from %s: %v", name, src.name, err)
		}
	}
	return f
}

func policyOf(t testing.TB, r *replica, table string) engine.ResurrectionPolicy {
	t.Helper()
	for _, tb := range must(r.Schema())(t).Tables {
		if tb.Name == table {
			return tb.Resurrection
		}
	}
	t.Fatalf("%s has no table %s", r.name, table)
	return 0
}

// checkPolicies checks that every replica reports, per table, the policy of
// the lowest-HLC set_resurrection_policy migration in pool.
func checkPolicies(t testing.TB, reps []*replica, pool []engine.ChangeSet) {
	t.Helper()
	first := map[string]engine.SchemaMigration{}
	for _, cs := range pool {
		for _, m := range cs.Migrations {
			if m.Type != engine.SetResurrectionPolicy {
				continue
			}
			if f, ok := first[m.TableName]; !ok || m.HLC.Less(f.HLC) {
				first[m.TableName] = m
			}
		}
	}
	for _, r := range reps {
		for _, tb := range []string{"items", "pairs"} {
			want := first[tb].Resurrection // undeclared when absent
			if got := policyOf(t, r, tb); got != want {
				t.Fatalf("%s: %s's policy is %s, want %s (the lowest-HLC declaration)", r.name, tb, got, want)
			}
		}
	}
}

// checkOracle compares every replica's live rows with what the facts in
// pool say under each table's effective policy, whatever order they
// arrived in: per row the highest tombstone, the highest cell per column
// above it; the row is live if it has a cell and either no tombstone or
// resurrection allowed. A replica that dropped a cell written after a
// deletion (merging it before it knew the policy, say) fails here even if
// every replica dropped it alike.
func checkOracle(t testing.TB, pool []engine.ChangeSet, reps ...*replica) {
	t.Helper()
	type fact struct {
		val engine.Value
		hlc engine.HLC
	}
	type row struct {
		pk    []engine.Value
		tomb  engine.HLC
		cells map[string]fact
	}
	rows := map[string]*row{}
	var keys []string
	for _, cs := range pool {
		for _, c := range cs.Changes {
			k := c.Table + "|" + fmt.Sprint(c.PK)
			r := rows[k]
			if r == nil {
				r = &row{pk: c.PK, cells: map[string]fact{}}
				rows[k] = r
				keys = append(keys, k)
			}
			switch c.Type {
			case engine.RowDeletion:
				if r.tomb.Less(c.HLC) {
					r.tomb = c.HLC
				}
			case engine.ColumnChange:
				if x, ok := r.cells[c.Column]; !ok || x.hlc.Less(c.HLC) {
					r.cells[c.Column] = fact{c.Value, c.HLC}
				}
			}
		}
	}
	schema := convergenceSchema()
	for _, rep := range reps {
		for _, td := range schema.Tables {
			allow := policyOf(t, rep, td.Name) == engine.ResurrectionAllowed
			pkCols := td.PrimaryKey
			if len(pkCols) == 0 {
				pkCols = []string{"id"}
			}
			want := map[string]engine.Row{}
			for _, k := range keys {
				if !strings.HasPrefix(k, td.Name+"|") {
					continue
				}
				r := rows[k]
				out := engine.Row{}
				for col, f := range r.cells {
					if r.tomb.IsZero() || r.tomb.Less(f.hlc) {
						out[col] = f.val
					}
				}
				if len(out) == 0 || (!r.tomb.IsZero() && !allow) {
					continue
				}
				for i, n := range pkCols {
					if _, ok := out[n]; !ok {
						out[n] = r.pk[i]
					}
				}
				for _, c := range td.Columns {
					if _, ok := out[c.Name]; !ok {
						out[c.Name] = engine.Null
					}
				}
				want[k] = out
			}
			got := must(rep.Query(td.Name, engine.Query{}))(t)
			if len(got) != len(want) {
				t.Fatalf("%s: %s has %d live rows, the facts say %d (policy %s)", rep.name, td.Name, len(got), len(want), policyOf(t, rep, td.Name))
			}
			for _, g := range got {
				pk := make([]engine.Value, len(pkCols))
				for i, n := range pkCols {
					pk[i] = g[n]
				}
				w, ok := want[td.Name+"|"+fmt.Sprint(pk)]
				if !ok || !rowsEqual(g, w) {
					t.Fatalf("%s: %s row %s, the facts say %s (policy %s)", rep.name, td.Name, fmtRow(g), fmtRow(w), policyOf(t, rep, td.Name))
				}
			}
		}
	}
}

// testDeadCells: under delete-wins the cells written after a row's
// tombstone are kept (merged state does not depend on the policy) but
// dead: the row stays deleted, two sites disagreeing about such a cell is
// no ConflictResolved, a local insert of the key is ErrConflict, and
// PruneTombstones drops the cells with the tombstone instead of reviving
// the row. Under allow-resurrection the same facts revive the row, and
// PruneTombstones keeps it.
func (s *suite) testDeadCells(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("resurrection=%v", allow), func(t *testing.T) {
			mod := func(o *engine.Options) { o.AllowResurrection = allow }
			a := s.newReplica(t, "a", TripsSchema(), mod)
			b := s.newReplica(t, "b", TripsSchema(), mod)
			c := s.newReplica(t, "c", TripsSchema(), mod)
			must(a.Insert("trips", map[string]any{"id": "t", "title": "first"}))(t)
			pull(t, b, a)
			pull(t, c, a)
			a.clock.Advance(5)
			must(a.Delete("trips", engine.Key{"t"}))(t)
			// b and c update it concurrently, after the deletion (by HLC)
			// but before they learn of it.
			b.clock.Advance(10)
			c.clock.Advance(11)
			must(b.Update("trips", engine.Key{"t"}, map[string]any{"title": "b"}))(t)
			must(c.Update("trips", engine.Key{"t"}, map[string]any{"title": "c"}))(t)
			var conflicts int
			a.Subscribe(func(ev engine.Event) {
				if ev.Type == engine.ConflictResolved {
					conflicts++
				}
			})
			pull(t, a, b)
			pull(t, a, c)
			pull(t, b, a)
			pull(t, c, a)
			pull(t, b, c)
			pull(t, c, b)
			live := 0
			if allow {
				live = 1
			}
			for _, r := range []*replica{a, b, c} {
				if n := len(must(r.Query("trips", engine.Query{}))(t)); n != live {
					t.Fatalf("%s: %d live trips, want %d", r.name, n, live)
				}
			}
			ref := DumpStore(t, a.store)
			for _, r := range []*replica{b, c} {
				if d := diffDumps(ref, DumpStore(t, r.store)); d != "" {
					t.Fatalf("a and %s diverged: %s", r.name, d)
				}
			}
			if !allow {
				if conflicts != 0 {
					t.Fatalf("%d ConflictResolved events for cells of a deleted row", conflicts)
				}
				if _, err := a.Insert("trips", map[string]any{"id": "t", "title": "again"}); !errors.Is(err, engine.ErrConflict) {
					t.Fatalf("insert of a deleted key under delete-wins: %v, want ErrConflict", err)
				}
			} else {
				row := must(a.Get("trips", engine.Key{"t"}))(t)
				if row["title"].Text() != "c" || !row["days"].IsNull() {
					t.Fatalf("revived row %s, want title c (the later write) and nothing older", fmtRow(row))
				}
			}
			a.clock.Advance(31 * 24 * 3600 * 1000)
			res := must(a.PruneTombstones(horizonOf(a)))(t)
			if res.Tombstones != 1 {
				t.Fatalf("prune: %+v, want 1 tombstone", res)
			}
			if n := len(must(a.Query("trips", engine.Query{}))(t)); n != live {
				t.Fatalf("after prune: %d live trips, want %d", n, live)
			}
			if rows := len(DumpStore(t, a.store).Buckets["rows"]); rows != live {
				t.Fatalf("after prune: %d row records, want %d", rows, live)
			}
		})
	}
}
