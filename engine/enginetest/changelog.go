package enginetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

// fact identifies one fact of a replica's state.
type fact struct {
	table, pk, col string // col "" for a deletion
	hlc            engine.HLC
}

func (f fact) String() string { return fmt.Sprintf("%s%s.%s@%s", f.table, f.pk, f.col, f.hlc) }

func pkString(pk []engine.Value) string {
	var b strings.Builder
	for _, v := range pk {
		fmt.Fprintf(&b, "[%s:%s]", v.Kind(), v)
	}
	return b.String()
}

// stateFacts reads every live fact of r (cells and tombstones) from a
// snapshot, and counts the distinct (row, transaction) pairs among them.
func stateFacts(t testing.TB, r *replica) (map[fact]bool, int) {
	t.Helper()
	out := map[fact]bool{}
	pairs := 0
	for _, c := range collect(t, r, engine.SnapshotOptions{}) {
		for _, row := range c.Rows {
			pk := pkString(row.PK)
			bases := map[engine.HLC]bool{}
			if row.HasTombstone {
				out[fact{c.Table, pk, "", row.Tombstone}] = true
				bases[row.Tombstone.Base()] = true
			}
			for _, cell := range row.Cells {
				out[fact{c.Table, pk, cell.Column, cell.HLC}] = true
				bases[cell.HLC.Base()] = true
			}
			pairs += len(bases)
		}
	}
	return out, pairs
}

func setFacts(sets []engine.ChangeSet) []fact {
	var out []fact
	for _, cs := range sets {
		for _, c := range cs.Changes {
			col := c.Column
			if c.Type == engine.RowDeletion {
				col = ""
			}
			out = append(out, fact{c.Table, pkString(c.PK), col, c.HLC})
		}
	}
	return out
}

// logEntries returns the number of (row, transaction) pairs the change log
// lists with a live fact, failing the test if it lists a peer's fact that
// is gone (own entries may list superseded rows until Prune).
func logEntries(t testing.TB, st kv.Store) int {
	t.Helper()
	rep, err := engine.InspectChangeLog(st)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dead != 0 {
		t.Fatalf("change log lists %d facts of peers that are gone", rep.Dead)
	}
	return len(rep.Live)
}

// checkChangeLog checks r's change log against its state: ChangesSince from
// the beginning returns exactly the live facts, each once, as whole
// well-formed transactions in HLC order; paging with the last ChangeSet's
// HLC at any limit returns the same, neither skipping nor repeating; a
// lower bound in the middle of a transaction returns exactly the facts
// above it; the filters select by origin; and the log holds one entry per
// (row, transaction) with a live fact.
func checkChangeLog(t *testing.T, r *replica, rng *rand.Rand, peers []engine.SiteID) {
	t.Helper()
	state, pairs := stateFacts(t, r)
	if n := logEntries(t, r.store); n != pairs {
		t.Fatalf("%s: %d change-log entries for %d (row, transaction) pairs with a live fact", r.name, n, pairs)
	}
	all := must(r.ChangesSince(engine.HLC{}, 1<<30, engine.ChangesFilter{}))(t)
	byTx := map[string]engine.ChangeSet{}
	var last engine.HLC
	for i, cs := range all {
		if i > 0 && !last.Less(cs.HLC) {
			t.Fatalf("%s: ChangeSets out of order at %d", r.name, i)
		}
		last = cs.HLC
		if _, dup := byTx[cs.TransactionID]; dup {
			t.Fatalf("%s: transaction %s split over two ChangeSets", r.name, cs.TransactionID)
		}
		byTx[cs.TransactionID] = cs
		var max engine.HLC
		for j, c := range cs.Changes {
			if j > 0 && !cs.Changes[j-1].HLC.Less(c.HLC) {
				t.Fatalf("%s: facts of %s out of opSeq order", r.name, cs.TransactionID)
			}
			if !c.HLC.SameTransaction(cs.Changes[0].HLC) || c.HLC.Site != cs.SiteID || cs.TransactionID != c.HLC.TransactionID() {
				t.Fatalf("%s: fact %s in ChangeSet %s", r.name, c.HLC, cs.TransactionID)
			}
			max = c.HLC
		}
		for _, m := range cs.Migrations {
			if max.Less(m.HLC) {
				max = m.HLC
			}
		}
		if cs.HLC != max {
			t.Fatalf("%s: ChangeSet %s hlc %s, max fact %s", r.name, cs.TransactionID, cs.HLC, max)
		}
	}
	got := map[fact]bool{}
	for _, f := range setFacts(all) {
		if got[f] {
			t.Fatalf("%s: fact %s returned twice", r.name, f)
		}
		got[f] = true
		if !state[f] {
			t.Fatalf("%s: ChangesSince returned %s, which is not part of the state", r.name, f)
		}
	}
	for f := range state {
		if !got[f] {
			t.Fatalf("%s: ChangesSince lost %s, which is part of the state", r.name, f)
		}
	}
	// Paging.
	for _, limit := range []int{1, 2, 3, 5 + rng.IntN(20)} {
		var since engine.HLC
		var paged []engine.ChangeSet
		for round := 0; ; round++ {
			page := must(r.ChangesSince(since, limit, engine.ChangesFilter{}))(t)
			if len(page) == 0 {
				break
			}
			n := 0
			for _, cs := range page {
				n += len(cs.Changes) + len(cs.Migrations)
			}
			if n-len(page[len(page)-1].Changes)-len(page[len(page)-1].Migrations) >= limit {
				t.Fatalf("%s: page of limit %d holds %d facts before its last transaction", r.name, limit, n)
			}
			paged = append(paged, page...)
			since = page[len(page)-1].HLC
			if round > len(all)+1 {
				t.Fatalf("%s: paging with limit %d does not end", r.name, limit)
			}
		}
		if len(paged) != len(all) {
			t.Fatalf("%s: paging with limit %d returned %d ChangeSets, one call %d", r.name, limit, len(paged), len(all))
		}
		for i := range paged {
			if paged[i].TransactionID != all[i].TransactionID || len(paged[i].Changes) != len(all[i].Changes) || len(paged[i].Migrations) != len(all[i].Migrations) {
				t.Fatalf("%s: page limit %d, ChangeSet %d differs: %s (%d facts) vs %s (%d facts)", r.name, limit, i,
					paged[i].TransactionID, len(paged[i].Changes), all[i].TransactionID, len(all[i].Changes))
			}
		}
	}
	// A lower bound inside a transaction.
	facts := setFacts(all)
	for k := 0; k < 10 && len(facts) > 0; k++ {
		since := facts[rng.IntN(len(facts))].hlc
		part := setFacts(must(r.ChangesSince(since, 1<<30, engine.ChangesFilter{}))(t))
		want := 0
		for _, f := range facts {
			if since.Less(f.hlc) {
				want++
			}
		}
		if len(part) != want {
			t.Fatalf("%s: ChangesSince(%s) returned %d facts, want %d", r.name, since, len(part), want)
		}
		for _, f := range part {
			if !since.Less(f.hlc) {
				t.Fatalf("%s: ChangesSince(%s) returned %s", r.name, since, f)
			}
		}
	}
	// Filters.
	count := func(keep func(engine.SiteID) bool) int {
		n := 0
		for _, cs := range all {
			if keep(cs.SiteID) {
				n += len(cs.Changes) + len(cs.Migrations)
			}
		}
		return n
	}
	countSets := func(sets []engine.ChangeSet) int {
		n := 0
		for _, cs := range sets {
			n += len(cs.Changes) + len(cs.Migrations)
		}
		return n
	}
	own := must(r.ChangesSince(engine.HLC{}, 1<<30, engine.ChangesFilter{OnlyLocal: true}))(t)
	for _, cs := range own {
		if cs.SiteID != r.SiteID() {
			t.Fatalf("%s: OnlyLocal returned a transaction of %s", r.name, cs.SiteID)
		}
	}
	if countSets(own) != count(func(s engine.SiteID) bool { return s == r.SiteID() }) {
		t.Fatalf("%s: OnlyLocal returned %d facts", r.name, countSets(own))
	}
	for _, p := range peers {
		ex := must(r.ChangesSince(engine.HLC{}, 1<<30, engine.ChangesFilter{ExcludeSite: p}))(t)
		if countSets(ex) != count(func(s engine.SiteID) bool { return s != p }) {
			t.Fatalf("%s: ExcludeSite(%s) returned %d facts", r.name, p, countSets(ex))
		}
	}
}

// testChangeLogInvariants runs random writes and exchanges (the generator
// of testConvergence, plus pruning) and checks the change log of every
// replica after each phase.
func (s *suite) testChangeLogInvariants(t *testing.T) {
	seed := s.seed(t)
	cases := 8
	if s.o.Short || testing.Short() {
		cases = 3
	}
	for i := 0; i < cases; i++ {
		allow := i%2 == 1
		rng := rand.New(rand.NewPCG(seed, uint64(2000+i)))
		t.Run(fmt.Sprintf("case%d/resurrection=%v", i, allow), func(t *testing.T) {
			mod := func(o *engine.Options) { o.AllowResurrection = allow }
			reps := []*replica{s.newReplica(t, "a", convergenceSchema(), mod), s.newReplica(t, "b", convergenceSchema(), mod), s.newReplica(t, "c", convergenceSchema(), mod)}
			var sites []engine.SiteID
			for _, r := range reps {
				sites = append(sites, r.SiteID())
			}
			ids := []string{"i0", "i1", "i2", "i3", "i4"}
			for step := 0; step < 120; step++ {
				r := reps[rng.IntN(len(reps))]
				switch k := rng.IntN(10); {
				case k < 6:
					r.clock.Advance(uint64(rng.IntN(3)))
					r.Transact(func(tx *engine.Tx) error {
						for j := 1 + rng.IntN(3); j > 0; j-- {
							id := ids[rng.IntN(len(ids))]
							switch rng.IntN(6) {
							case 0:
								tx.Insert("items", map[string]any{"id": id, "a": rng.IntN(3), "b": "x"})
							case 1, 2:
								tx.Update("items", engine.Key{id}, map[string]any{"a": rng.IntN(3), "c": float64(rng.IntN(2))})
							case 3:
								tx.Delete("items", engine.Key{id})
							case 4:
								tx.Update("items", engine.Key{id}, map[string]any{"id": ids[rng.IntN(len(ids))]})
							default:
								tx.Upsert("pairs", map[string]any{"x": rng.IntN(2), "y": ids[rng.IntN(2)], "v": ids[rng.IntN(5)]})
							}
						}
						return nil
					})
				case k < 9:
					pull(t, r, reps[rng.IntN(len(reps))])
				default:
					if rng.IntN(2) == 0 {
						for _, x := range reps {
							x.clock.Advance(31 * 24 * 3600 * 1000)
						}
					}
					must(r.PruneTombstones(horizonOf(r)))(t)
					must(r.Prune())(t)
				}
				if step%30 == 29 {
					for _, r := range reps {
						checkChangeLog(t, r, rng, sites)
					}
				}
			}
		})
		if t.Failed() {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
}
