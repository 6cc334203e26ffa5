//go:build !js

package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
)

// drive is the driver's event: one workload operation or fault, then the
// invariants checked during the run, then the next step scheduled.
func (s *Sim) drive() {
	if !s.driving() || s.err != nil {
		return
	}
	s.step++
	desc := s.act()
	s.mu.Lock()
	fmt.Fprintf(s.hash, "step %d %s;", s.step, desc)
	s.mu.Unlock()
	if s.cfg.Trace {
		s.steps = append(s.steps, fmt.Sprintf("#%d t=%v %s", s.step, s.sched.Now(), desc))
	}
	s.checkCursors()
	if s.driving() {
		s.sched.at(key{at: s.sched.Now() + s.gap(), kind: kindDriver, seq: uint64(s.step)}, s.drive)
	}
}

// gap is the simulated time to the next step: mostly milliseconds, now and
// then minutes, rarely hours (devices offline past the retention horizon).
func (s *Sim) gap() time.Duration {
	switch r := s.rng.IntN(1000); {
	case r < 2:
		return time.Duration(1+s.rng.IntN(10)) * time.Hour
	case r < 20:
		return time.Duration(1+s.rng.IntN(10)) * time.Minute
	case r < 200:
		return time.Duration(s.rng.IntN(5000)) * time.Millisecond
	default:
		return time.Duration(s.rng.IntN(200)) * time.Millisecond
	}
}

// act performs one step and describes it.
func (s *Sim) act() string {
	r := s.rng.IntN(100)
	switch {
	case r < 70:
		return s.write(s.reps[s.rng.IntN(len(s.reps))])
	case r < 80 || !s.cfg.Faults:
		return s.device()
	default:
		return s.fault()
	}
}

// device is a workload step other than a write: a device going offline or
// coming back, joining, upgrading its schema, asking for a snapshot.
func (s *Sim) device() string {
	r := s.reps[s.rng.IntN(len(s.reps))]
	switch k := s.rng.IntN(10); {
	case k < 3 && r.cl != nil:
		r.online = !r.online
		if r.online {
			s.must(r.connect())
			return r.name + " online"
		}
		cl := r.cl
		s.await(cl.Disconnect)
		return r.name + " offline"
	case k < 5 && len(s.reps) < 8:
		n := s.addReplica()
		return n.name + " joins"
	case k < 7 && r.schema < maxSchema && r.cl != nil:
		r.stop(false)
		r.schema++
		s.must(r.start())
		did, err := r.dropAt(r.schema)
		s.must(err)
		s.migr[fmt.Sprintf("schema.v%d", r.schema)]++
		if did != "" && !strings.Contains(did, "(dropped already") {
			s.migr[strings.Fields(did)[0]]++
		}
		if did != "" {
			return fmt.Sprintf("%s migrates to schema %d: %s", r.name, r.schema, did)
		}
		return fmt.Sprintf("%s migrates to schema %d", r.name, r.schema)
	case k == 7 && r.eng != nil && s.rng.IntN(2) == 0:
		if s.rng.IntN(3) == 0 {
			return s.rename(r)
		}
		return s.alter(r)
	case k < 8 && r.cl != nil:
		r.cl.RequestSnapshot()
		return r.name + " requests a snapshot"
	default:
		return s.write(r)
	}
}

// alter makes r alter the notNull or the default of items.a or items.b
// (an alter_column migration): concurrent alters of one attribute on
// several devices converge on the latest. One the engine refuses (it
// changes nothing, say) is part of the workload too. A notNull column
// without a default makes the inserts that omit it fail, as they would
// in an app.
func (s *Sim) alter(r *replica) string {
	col := []string{"a", "b"}[s.rng.IntN(2)]
	var ch engine.Alteration
	var what string
	switch s.rng.IntN(4) {
	case 0:
		v := true
		ch.NotNull, what = &v, "notNull"
	case 1:
		v := false
		ch.NotNull, what = &v, "nullable"
	case 2:
		ch.SetDefault = true
		if col == "a" {
			ch.Default = s.rng.IntN(5)
		} else {
			ch.Default = []string{"d", "e"}[s.rng.IntN(2)]
		}
		what = fmt.Sprintf("default %v", ch.Default)
	default:
		ch.DropDefault, what = true, "drop default"
	}
	desc := fmt.Sprintf("%s alter_column items.%s %s", r.name, col, what)
	if err := r.eng.AlterColumn(r.itemsName(), col, ch); err != nil {
		return desc + " refused: " + err.Error()
	}
	s.migr["alter_column"]++
	s.must(r.migrationsToOracle())
	return desc
}

// renameNames are the names devices rename items and pairs to: few, so
// concurrent renames collide (the two tables' renames to one name join
// them: pairs' rows, keyed otherwise, are then held), the tables' own
// among them (a rename back to the name it was created with).
var renameNames = [][]string{{"things", "entries", "items"}, {"couples", "duos", "pairs"}}

// rename makes r rename its items or pairs table (a rename_table
// migration): concurrent renames converge on the latest, a drop wins over
// them, and devices that have not learned a rename write to the old name,
// which must land in the renamed table everywhere. One the engine refuses
// (the table's own name, say) is part of the workload too.
func (s *Sim) rename(r *replica) string {
	which := s.rng.IntN(2)
	from := r.itemsName()
	if which == 1 {
		from = r.pairsName()
	}
	if from == "" {
		return r.name + " rename_table: no pairs table"
	}
	to := renameNames[which][s.rng.IntN(len(renameNames[which]))]
	desc := fmt.Sprintf("%s rename_table %s to %s", r.name, from, to)
	if err := r.eng.RenameTable(from, to); err != nil {
		return desc + " refused: " + err.Error()
	}
	s.migr["rename_table"]++
	s.must(r.migrationsToOracle())
	return desc
}

// faultKinds are the faults of one relay; sharedFaultKinds those of
// several over a shared storage (Config.Relays > 1), where crash.relay
// crashes one of them (counted as crash.relayN), crash.mid_prune crashes
// one at its k-th write (1–4) of a maintenance pass (between a horizon
// mark and the end of its pruning, say) while the others go on, and
// relay.restore_old, relay.wipe and relay.backup act on the shared
// storage's database (with every relay stopped for a restore or a wipe).
var (
	faultKinds = []string{"cut", "crash.replica", "crash.relay", "relay.restore_old", "relay.wipe",
		"relay.backup", "skew.within", "skew.beyond", "clock.step_back", "prune"}
	sharedFaultKinds = append(append([]string(nil), faultKinds...), "shared.down", "crash.mid_prune")
)

// fault injects one fault.
func (s *Sim) fault() string {
	s.setNetFaults()
	r := s.reps[s.rng.IntN(len(s.reps))]
	kinds := faultKinds
	if s.shared != nil {
		kinds = sharedFaultKinds
	}
	kind := kinds[s.rng.IntN(len(kinds))]
	if s.cfg.Without[kind] || kind == "crash.mid_prune" && s.cfg.Without["prune"] {
		return kind + " (left out)"
	}
	desc := kind
	switch kind {
	case "cut":
		var ids []uint64
		links := map[uint64]*link{}
		for _, n := range s.relays {
			for id, l := range n.links {
				ids = append(ids, id)
				links[id] = l
			}
		}
		if len(ids) == 0 {
			return "cut (no connection)"
		}
		slices.Sort(ids)
		l := links[ids[s.rng.IntN(len(ids))]]
		l.cut()
		desc = "cut " + l.name
	case "crash.replica":
		if r.cl == nil {
			s.must(r.start())
			return r.name + " restarts"
		}
		r.stop(true)
		desc = r.name + " crashes"
	case "crash.relay":
		n := s.pickRelay()
		if n.srv == nil {
			s.must(n.start())
			return n.name + " restarts"
		}
		kind = "crash." + n.name
		desc = kind
		n.stop(true)
	case "relay.restore_old", "relay.wipe":
		for _, n := range s.relays {
			n.stop(true)
		}
		switch {
		case s.shared != nil && kind == "relay.wipe":
			s.shared.Replace(databaseID, nil)
		case s.shared != nil:
			s.shared.Replace(databaseID, copyStore(s.sharedBackup, relay.StoreBuckets()))
		case kind == "relay.wipe":
			s.relays[0].disk = memkv.New(relay.StoreBuckets()...)
		default:
			s.relays[0].disk = copyStore(s.relays[0].backup, relay.StoreBuckets())
		}
		s.relayEpoch()
		for _, n := range s.relays {
			s.must(n.start())
		}
	case "relay.backup":
		if s.shared != nil {
			s.sharedBackup = copyStore(s.relayStore().(*memkv.Store), relay.StoreBuckets())
		} else {
			s.relays[0].backup = copyStore(s.relays[0].disk, relay.StoreBuckets())
		}
		return "relay backed up"
	case "skew.within", "skew.beyond", "clock.step_back":
		desc = s.skew(kind, r)
	case "prune": // the relay's maintenance (tombstone horizon marks, arrival log)
		// A device prunes tombstones only at the relay's horizon marks
		// (client, wire's "Tombstone horizon"), never by its own clock:
		// its engine's Prune is not called here.
		n := s.pickRelay()
		desc = "prune " + n.name
		// Maintenance fails while the shared storage is unreachable
		// (the relay's loop retries at its next pass).
		if err := s.maintain([]*relayNode{n}); err != nil && !s.sharedDown {
			s.fail("relay maintenance: %v", err)
		}
	case "crash.mid_prune":
		n := s.pickRelay()
		if n.srv == nil {
			s.must(n.start())
			return n.name + " restarts"
		}
		k := 1 + s.rng.IntN(4)
		n.view.writes.Store(int64(k))
		err := s.maintain([]*relayNode{n})
		died := n.view.dead.Load()
		n.view.writes.Store(0)
		if err != nil && !died && !s.sharedDown {
			s.fail("relay maintenance: %v", err)
		}
		n.stop(true)
		desc = fmt.Sprintf("%s crashes at its write %d of a maintenance pass (reached: %v)", n.name, k, died)
	case "shared.down":
		if s.sharedDown {
			return "shared.down (down already)"
		}
		d := time.Duration(1+s.rng.IntN(60)) * time.Second
		s.setSharedDown(true)
		s.downSeq++
		seq := s.downSeq
		s.sched.at(key{at: s.sched.Now() + d, kind: kindTimer, owner: sharedOwner, seq: seq}, func() {
			if s.sharedDown && s.downSeq == seq {
				s.setSharedDown(false)
			}
		})
		desc = fmt.Sprintf("shared storage down for %v", d)
	}
	s.count(kind)
	return desc
}

// sharedOwner owns the events that bring the shared storage back
// (shared.down): a timer owner no node has.
const sharedOwner = 1 << 33

// skew moves a device's or a relay's wall clock.
func (s *Sim) skew(kind string, r *replica) string {
	w, name := r.wall, r.name
	if s.rng.IntN(4) == 0 {
		n := s.pickRelay()
		w, name = n.wall, n.name
	}
	var ms int64
	switch kind {
	case "skew.within":
		ms = int64(s.rng.IntN(2*model.MaxDrift/2)) - model.MaxDrift/2
		w.skew.Store(ms)
	case "skew.beyond":
		ms = model.MaxDrift + 1 + int64(s.rng.IntN(10*60_000))
		if s.rng.IntN(2) == 0 {
			ms = -ms
		}
		w.skew.Store(ms)
	default:
		ms = -int64(1 + s.rng.IntN(30_000))
		w.skew.Add(ms)
	}
	return fmt.Sprintf("%s %s %+dms", name, kind, ms)
}

// setNetFaults draws the network's fault rates for the next stretch.
func (s *Sim) setNetFaults() {
	if s.rng.IntN(10) != 0 {
		return
	}
	nf := netFaults{drop: s.rng.IntN(5), dup: s.rng.IntN(5), delay: s.rng.IntN(30), reorder: s.rng.IntN(3)}
	s.mu.Lock()
	s.nf = nf
	s.mu.Unlock()
}

// relayEpoch lets every device's cursor move back once more: the relay's
// log was rolled back or replaced, and a device bootstraps again from it
// when it next syncs.
func (s *Sim) relayEpoch() {
	for _, r := range s.reps {
		r.rollback = true
	}
}

var itemIDs = []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"}

// write commits one local transaction of 1–4 random operations on r; an
// acknowledged one goes to the oracle.
func (s *Sim) write(r *replica) string {
	if r.eng == nil {
		s.must(r.start())
		return r.name + " restarts"
	}
	n := 1
	if s.rng.IntN(4) == 0 {
		n = 2 + s.rng.IntN(3)
	}
	var ops []string
	big := false
	cs, err := r.eng.Transact(func(tx *engine.Tx) error {
		for range n {
			ops = append(ops, s.op(tx, r, &big))
		}
		return nil
	})
	desc := r.name + " tx[" + strings.Join(ops, " ") + "]"
	if err != nil {
		return desc + " failed: " + err.Error()
	}
	if cs != nil && len(cs.Changes) > 0 {
		r.acked++
		if _, err := s.oracle.ApplyChanges([]model.ChangeSet{*cs}); err != nil {
			s.fail("oracle refused %s's transaction: %v", r.name, err)
		}
	}
	return desc
}

// op adds one random operation to tx: inserts, updates, upserts and
// deletes over few keys (so re-inserts of deleted keys and conflicts are
// common), one large value per transaction at most.
func (s *Sim) op(tx *engine.Tx, r *replica, big *bool) string {
	if r.schema >= 3 && r.schema < 6 && s.rng.IntN(4) == 0 {
		x, y := s.rng.IntN(3), itemIDs[s.rng.IntN(3)]
		name := "pairs"
		if s.rng.IntN(4) > 0 {
			// Mostly by the name r knows now; sometimes by the old
			// name, as an app not updated yet would (refused once r
			// knows of a rename).
			if n := r.pairsName(); n != "" {
				name = n
			}
		}
		if s.rng.IntN(3) == 0 {
			tx.Delete(name, engine.Key{x, y})
			return fmt.Sprintf("del %s(%d,%s)", name, x, y)
		}
		tx.Upsert(name, map[string]any{"x": x, "y": y, "v": itemIDs[s.rng.IntN(8)]})
		return fmt.Sprintf("upsert %s(%d,%s)", name, x, y)
	}
	id := itemIDs[s.rng.IntN(len(itemIDs))]
	m := map[string]any{}
	if s.rng.IntN(3) > 0 {
		m["a"] = s.rng.IntN(5)
	}
	if s.rng.IntN(3) > 0 {
		m["b"] = []string{"x", "y", "", "zz"}[s.rng.IntN(4)]
	}
	if !*big && s.rng.IntN(50) == 0 {
		*big = true
		m["b"] = strings.Repeat("L", 1000+s.rng.IntN(20_000))
	}
	if r.schema >= 1 && r.schema < 5 && s.rng.IntN(3) == 0 {
		m["c"] = float64(s.rng.IntN(4)) / 2
	}
	items := "items"
	if s.rng.IntN(4) > 0 {
		items = r.itemsName() // mostly the name r knows now; else the old one
	}
	switch k := s.rng.IntN(10); {
	case k < 3:
		m["id"] = id
		tx.Insert(items, m)
		return "ins " + id
	case k < 6:
		tx.Update(items, engine.Key{id}, m)
		return "upd " + id
	case k < 8:
		m["id"] = id
		tx.Upsert(items, m)
		return "ups " + id
	default:
		tx.Delete(items, engine.Key{id})
		return "del " + id
	}
}
