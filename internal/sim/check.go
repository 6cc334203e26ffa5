//go:build !js

package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"strings"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"

	"github.com/replica-sync/replica/engine"
)

// Bounds of the invariants.
const (
	// syncBound is how long after faults stop every device must be synced
	// and every replica identical (above the largest clock skew, which a
	// refused push waits out, and BackoffMax).
	syncBound = 30 * time.Minute
	// maxFramesPerSecond bounds the frames delivered in any simulated
	// second, all links together, during the run (a spinning client or
	// relay exceeds it).
	maxFramesPerSecond = 5000
	// idleWindow is the quiet stretch after convergence, in which each
	// device may exchange only keepalives.
	idleWindow = 10 * time.Minute
)

// checkCursors fails when a device's stored cursor moved backwards within
// one relay log (a restore or wipe of the relay starts a new one).
func (s *Sim) checkCursors() {
	for _, r := range s.reps {
		if r.eng == nil {
			continue
		}
		ns, c, ok := r.syncNumber("cursor")
		if !ok {
			continue
		}
		if ns == r.ns && c < r.cursor && !r.rollback && !s.cfg.Sealed {
			s.fail("cursor of %s moved backwards: %d after %d", r.name, c, r.cursor)
			return
		}
		r.ns, r.cursor = ns, c
		if r.rollback && r.cl.State().State == client.Synced {
			r.rollback = false // synced with the relay's new log
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sec, n := range s.msgs {
		if n > maxFramesPerSecond {
			s.err = fmt.Errorf("step %d: spinning: %d frames in simulated second %d", s.step, n, sec)
		}
		if sec < int(s.sched.Now()/time.Second)-1 {
			delete(s.msgs, sec)
		}
	}
}

// quiesce stops the faults, brings every process up and online at the
// newest schema, and checks that every device syncs and every replica
// converges within syncBound, and then stays quiet.
func (s *Sim) quiesce() {
	s.mu.Lock()
	s.nf = netFaults{}
	s.mu.Unlock()
	if s.shared != nil {
		s.setSharedDown(false)
	}
	for _, n := range s.relays {
		n.wall.skew.Store(0)
		if n.srv == nil {
			s.must(n.start())
		}
	}
	for _, r := range s.reps {
		r.wall.skew.Store(0)
		if r.schema < maxSchema || r.cl == nil {
			r.stop(false)
			r.schema = maxSchema
			r.online = true
			s.must(r.start())
		} else if !r.online {
			r.online = true
			s.must(r.connect())
		}
	}
	deadline := s.sched.Now() + syncBound
	for s.err == nil {
		s.runFor(5 * time.Second)
		why := s.settled()
		if why == "" {
			break
		}
		if s.sched.Now() >= deadline {
			s.fail("locked out: %v after faults stopped: %s", syncBound, why)
			return
		}
	}
	if s.err == nil {
		s.checkState()
	}
	if s.err == nil {
		s.checkQuiet()
	}
}

// runFor runs events for d of simulated time.
func (s *Sim) runFor(d time.Duration) {
	end := s.sched.Now() + d
	reached := false
	s.sched.at(key{at: end, kind: kindDriver, owner: 1}, func() { reached = true })
	s.loop(func() bool { return reached || s.err != nil })
}

// settled returns why the system is not settled yet ("" when it is): a
// device not Synced, a transaction not acknowledged, replicas that differ.
func (s *Sim) settled() string {
	for _, r := range s.reps {
		if st := r.cl.State(); st.State != client.Synced {
			return fmt.Sprintf("%s is %v (%v)", r.name, st.State, st.Err)
		}
		if n, err := r.cl.Pending(); err != nil || n > 0 {
			return fmt.Sprintf("%s has %d transactions unacknowledged (%v)", r.name, n, err)
		}
	}
	// Every device at the head of the relay's log: Synced says the
	// session caught up once, not that no entry appended since is still
	// on its way (a push_changes lost, a get_changes unanswered until the
	// watchdog reconnects). The simulator's seed 3894 (10-million-operation
	// run, 2026-12-03) pruned a device behind the newest mark as if it had
	// applied it; the cells it then pulled from before the mark revived a
	// row whose tombstone the prune had taken, which the relay and every
	// device at the head had pruned with the row.
	head, err := relayHead(s.relayStore())
	if err != nil {
		s.fail("reading the relay's head: %v", err)
		return err.Error()
	}
	for _, r := range s.reps {
		if _, cur, _ := r.syncNumber("cursor"); cur < head {
			return fmt.Sprintf("%s is at cursor %d, the relay's head is %d", r.name, cur, head)
		}
	}
	// The relay's newest tombstone horizon mark everywhere: a device
	// applies it with the next changes it gets after it (wire's
	// "Tombstone horizon"), so at the head of the log every replica
	// prunes at it.
	s.prune()
	ref := dump(s.reps[0].eng)
	for _, r := range s.reps[1:] {
		if d := diff(ref, dump(r.eng)); d != "" {
			return fmt.Sprintf("%s and %s differ: %s", s.reps[0].name, r.name, d)
		}
	}
	return ""
}

// prune runs the relay's maintenance and applies its newest tombstone
// horizon mark to the oracle and to every device that has not applied it
// yet (engine.PruneTombstones at its wall), as a device does when the
// next changes after the mark reach it; the relay pruned at it when it
// made it. A device that applied it already (its client's recorded
// horizon, or an earlier call, is not below the wall) is left alone, as
// its client skips a mark carried again: the maintenance makes no new
// mark while the relay's clock is not past the newest mark's (made while
// the clock ran ahead, then set right), and the late deletes older than
// that wall which reached every replica after the mark stay on the relay
// until its next mark, so they stay on the devices too. It records,
// first, the rows the oracle held with a
// tombstone below the horizon: their fate after the mark is decided by
// the log's order (a late write may revive one, alike on every replica),
// which the oracle, merging acknowledged transactions in ack order, does
// not follow; checkState leaves them out of its oracle comparison.
func (s *Sim) prune() {
	// The relay's maintenance first, as its loop does every
	// MaintenanceInterval: a relay restored from an older copy holds an
	// older newest mark than some devices applied; its next mark, at now
	// − Retention, covers every earlier one.
	if err := s.maintain(s.relays); err != nil {
		s.fail("relay maintenance: %v", err)
	}
	wall, err := relayHorizon(s.relayStore())
	if err != nil {
		s.fail("reading the relay's tombstone horizon: %v", err)
		return
	}
	if wall == 0 {
		return
	}
	for _, id := range tombstonedBefore(s.oracle, wall) {
		s.beyond[id] = true
	}
	if _, err := s.oracle.PruneTombstones(wall); err != nil {
		s.fail("prune: %v", err)
	}
	for _, r := range s.reps {
		// The tombstone horizon the client recorded (0: none).
		ns, applied, _ := r.syncNumber("horizon")
		if ns == r.prunedNS {
			applied = max(applied, r.pruned)
		}
		if wall <= applied {
			continue
		}
		if _, err := r.eng.PruneTombstones(wall); err != nil {
			s.fail("prune: %v", err)
		}
		r.prunedNS, r.pruned = ns, wall
	}
}

// maintain runs the maintenance of the relays of nodes that are up, one
// after the other (tombstone horizon marks, the arrival log), as their
// loops do every MaintenanceInterval. A mark it
// makes prunes the rows the relay's merged replica holds with a tombstone
// below the mark's wall, cells written after the deletion too under
// delete-wins (engine.PruneTombstones): their fate after the mark is
// decided by the log's order, which the oracle, merging acknowledged
// transactions in ack order, does not follow (a deletion the relay gets
// after the mark starts the row afresh, without the cells the oracle
// keeps under it). They are recorded in s.beyond, as prune does for the
// oracle's own.
func (s *Sim) maintain(nodes []*relayNode) error {
	var srvs []*relay.Server
	for _, n := range nodes {
		if n.srv != nil {
			srvs = append(srvs, n.srv)
		}
	}
	if len(srvs) == 0 {
		return nil
	}
	st := s.relayStore()
	before, err := relayHorizon(st)
	if err != nil {
		return err
	}
	var tombs map[string]uint64
	switch opened, err := relayOpened(st); {
	case err != nil:
		return err
	case !opened:
		// No relay has opened the database since its wipe (or a restore
		// from a copy taken then): nothing merged, and opening an engine
		// would write a site id of the simulator's into the relay's
		// store.
	case s.cfg.Sealed:
		// No merged replica: the oracle stands for it (every
		// acknowledged transaction, so every tombstone the log carries
		// but those of pushes whose ack was lost).
		tombs = tombstones(s.oracle)
	default:
		merged, err := engine.Open(st, engine.Options{Logger: nopLogger{}, Clock: s.relays[0].wall, Rand: newSeeded(s.seed, 1<<51)})
		if err != nil {
			return fmt.Errorf("opening the relay's merged replica: %w", err)
		}
		tombs = tombstones(merged)
		_ = merged.Close()
	}
	var merr error
	for _, srv := range srvs {
		s.await(func() { merr = srv.Maintain(context.Background()) })
		if merr != nil {
			break
		}
	}
	// A pass that failed after its mark (crash.mid_prune) made it too.
	wall, err := relayHorizon(st)
	if err != nil || wall == before {
		return errors.Join(merr, err)
	}
	if s.beyond == nil {
		s.beyond = map[string]bool{}
	}
	for id, w := range tombs {
		if w < wall {
			s.beyond[id] = true
		}
	}
	return merr
}

// tombstones returns e's rows with a tombstone (rowID) and the
// tombstone's wall (ms).
func tombstones(e *engine.Engine) map[string]uint64 {
	out := map[string]uint64{}
	for c, err := range e.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			return out
		}
		for _, row := range c.Rows {
			if row.HasTombstone {
				out[rowID(c.Table, row.PK)] = row.Tombstone.Wall
			}
		}
	}
	return out
}

// syncNumber reads a number r's client stores for the relay log it syncs
// with (client/keys.go: the log's namespace under "sync:relay:URL#db", then
// "NS:name", in decimal): the namespace and the number, ok false when
// either is not stored. A number that does not decode fails the run.
func (r *replica) syncNumber(name string) (ns string, v uint64, ok bool) {
	b, err := r.eng.State("sync:relay:" + r.urls[0] + "#" + databaseID)
	if err != nil || b == nil {
		return "", 0, false
	}
	ns = string(b)
	if b, err = r.eng.State(ns + ":" + name); err != nil || b == nil {
		return ns, 0, false
	}
	if v, err = strconv.ParseUint(string(b), 10, 64); err != nil {
		r.sim.fail("%s: stored %s %q does not decode", r.name, name, b)
		return ns, 0, false
	}
	return ns, v, true
}

// relayHorizon returns the wall (ms) of the newest tombstone horizon mark
// in a relay's store, 0 for none: the last key of bucket
// arrivals_horizon, whose value starts with the wall, 8 bytes big-endian
// (relay/doc.go, "Storage layout").
func relayHorizon(st kv.Store) (uint64, error) {
	var wall uint64
	err := st.View(func(tx kv.Tx) error {
		return tx.Scan("arrivals_horizon", kv.Range{Reverse: true, Limit: 1}, func(_, v []byte) bool {
			if len(v) >= 8 {
				wall = binary.BigEndian.Uint64(v)
			}
			return false
		})
	})
	return wall, err
}

// relayOpened reports whether a relay has opened the database in st: the
// relay bucket holds its format (relay/doc.go, "Storage layout").
func relayOpened(st kv.Store) (bool, error) {
	opened := false
	err := st.View(func(tx kv.Tx) error {
		_, err := tx.Get("relay", []byte("format"))
		switch {
		case err == nil:
			opened = true
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		return nil
	})
	return opened, err
}

// relayHead returns the cursor of the newest entry in a relay's log, 0
// for none: the last key of bucket arrivals, 8 bytes big-endian
// (relay/doc.go, "Storage layout").
func relayHead(st kv.Store) (uint64, error) {
	var head uint64
	err := st.View(func(tx kv.Tx) error {
		return tx.Scan("arrivals", kv.Range{Reverse: true, Limit: 1}, func(k, _ []byte) bool {
			if len(k) == 8 {
				head = binary.BigEndian.Uint64(k)
			}
			return false
		})
	})
	return head, err
}

// tombstonedBefore returns the ids (rowID) of e's rows whose tombstone is
// older than wall.
func tombstonedBefore(e *engine.Engine, wall uint64) []string {
	var ids []string
	for c, err := range e.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			return ids
		}
		for _, row := range c.Rows {
			if row.HasTombstone && row.Tombstone.Wall < wall {
				ids = append(ids, rowID(c.Table, row.PK))
			}
		}
	}
	return ids
}

// rowID names a row in a dump line: its table and primary key.
func rowID(table string, pk []model.Value) string { return fmt.Sprintf("%s %v", table, pk) }

// checkState compares the converged replicas with the relay's merged
// replica and with the oracle (every acknowledged local transaction merged
// directly): a fact missing from the replicas was lost.
func (s *Sim) checkState() {
	ref := dump(s.reps[0].eng)
	if d := diff(s.withoutBeyond(dump(s.oracle)), s.withoutBeyond(ref)); d != "" {
		s.fail("acknowledged transaction lost or altered (oracle vs %s): %s", s.reps[0].name, d)
		return
	}
	if s.cfg.Sealed {
		return // the relay keeps no replica of a sealed database
	}
	merged, err := engine.Open(s.relayStore(), engine.Options{Logger: nopLogger{}, Clock: s.relays[0].wall, Rand: newSeeded(s.seed, 1<<51)})
	if err != nil {
		s.fail("opening the relay's merged replica: %v", err)
		return
	}
	defer merged.Close()
	if d := diff(ref, dump(merged)); d != "" {
		s.fail("relay's merged replica differs from %s: %s", s.reps[0].name, d)
	}
}

// checkQuiet runs idleWindow more and fails when devices exchanged more
// than keepalives.
func (s *Sim) checkQuiet() {
	s.mu.Lock()
	clear(s.msgs)
	s.mu.Unlock()
	s.runFor(idleWindow)
	s.mu.Lock()
	n := 0
	for _, c := range s.msgs {
		n += c
	}
	s.mu.Unlock()
	// A ping and its pong per device every PingInterval (30 s), doubled.
	if limit := 4 * len(s.reps) * int(idleWindow/(30*time.Second)); n > limit {
		s.fail("spinning while idle: %d frames in %v (limit %d)", n, idleWindow, limit)
	}
}

// dump returns the CRDT state of an engine, read through a snapshot (the
// form every replica shares, typed or schema-less): one line per row with
// its cells, their HLCs and its tombstone, sorted; and its effective
// schema (the fold of every migration: tables, columns with their type,
// notNull and default, indexes; drops and alters included), one line per
// table.
func dump(e *engine.Engine) []string {
	var lines []string
	sch, err := e.Schema()
	if err != nil {
		return append(lines, "schema failed: "+err.Error())
	}
	for _, t := range sch.Tables {
		line := "~schema " + t.Name + " key " + strings.Join(t.PrimaryKey, ",")
		for _, c := range t.Columns {
			line += fmt.Sprintf(" %s:%v", c.Name, c.Type)
			if c.NotNull {
				line += "!"
			}
			if c.HasDefault {
				line += fmt.Sprintf("=%v", c.Default)
			}
		}
		for _, ix := range t.Indexes {
			line += " index " + ix.Name + "(" + strings.Join(ix.Columns, ",") + ")"
		}
		lines = append(lines, line)
	}
	for c, err := range e.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			return append(lines, "snapshot failed: "+err.Error())
		}
		for _, row := range c.Rows {
			cells := slices.Clone(row.Cells)
			slices.SortFunc(cells, func(a, b model.SnapshotCell) int { return strings.Compare(a.Column, b.Column) })
			line := rowID(c.Table, row.PK)
			if row.HasTombstone {
				line += " tomb@" + row.Tombstone.String()
			}
			for _, cell := range cells {
				line += fmt.Sprintf(" %s=%v@%s", cell.Column, cell.Value, cell.HLC)
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return lines
}

// diff describes the first difference of two dumps ("" when equal).
func diff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		switch {
		case i >= len(a):
			return "second has " + b[i]
		case i >= len(b):
			return "first has " + a[i]
		case a[i] != b[i]:
			return fmt.Sprintf("first %s, second %s", a[i], b[i])
		}
	}
	return ""
}

// withoutBeyond returns the dump lines of rows not in s.beyond (rows the
// oracle held tombstoned below the relay's horizon).
func (s *Sim) withoutBeyond(lines []string) []string {
	if len(s.beyond) == 0 {
		return lines
	}
	var out []string
	for _, l := range lines {
		id := l
		if i := strings.Index(l, "]"); i >= 0 {
			id = l[:i+1]
		}
		if !s.beyond[id] {
			out = append(out, l)
		}
	}
	return out
}
