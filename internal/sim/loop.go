//go:build !js

package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing/synctest"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/memshared"
)

func newSim(cfg Config) *Sim {
	d := DefaultConfig(cfg.Seed)
	if cfg.Replicas <= 0 {
		cfg.Replicas = d.Replicas
	}
	if cfg.Relays <= 0 {
		cfg.Relays = d.Relays
	}
	def := func(v *int, x int) {
		if *v <= 0 {
			*v = x
		}
	}
	def(&cfg.PageChanges, d.PageChanges)
	def(&cfg.SnapshotChunkRows, d.SnapshotChunkRows)
	def(&cfg.MaxChangesPerApply, d.MaxChangesPerApply)
	def(&cfg.PushLimit, d.PushLimit)
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = d.MaxMessageSize
	}
	if cfg.Retention <= 0 {
		cfg.Retention = d.Retention
	}
	s := &Sim{
		cfg: cfg, seed: cfg.Seed, rng: rand.New(rand.NewPCG(cfg.Seed, 0)),
		counts: map[string]int{}, migr: map[string]int{}, hash: sha256.New(), msgs: map[int]int{},
	}
	s.oracleDisk = memkv.New(engine.Buckets...)
	// A day ahead, so that it refuses no HLC for drift (it merges every
	// acknowledged transaction whatever the skew of its device).
	s.oracleWall = &wallClock{s: &s.sched}
	s.oracleWall.skew.Store(int64(24 * time.Hour / time.Millisecond))
	oracle, err := engine.Open(s.oracleDisk, engine.Options{Rand: newSeeded(cfg.Seed, 1<<50), Logger: nopLogger{}, Clock: s.oracleWall, Retention: cfg.Retention})
	if err != nil {
		panic(err)
	}
	s.oracle = oracle
	return s
}

func run(cfg Config) Result {
	s := newSim(cfg)
	res := Result{Seed: cfg.Seed}
	s.boot()
	s.sched.at(key{kind: kindDriver}, s.drive)
	s.loop(func() bool { return s.err != nil || s.driving() == false })
	if s.err == nil {
		s.quiesce()
	}
	s.shutdown()
	res.Ops, res.Err, res.Steps, res.Sim = s.step, s.err, s.steps, s.sched.Now()
	res.Faults, res.Migrations, res.Watch = s.counts, s.migr, s.watchLog
	copy(res.Hash[:], s.hash.Sum(nil))
	return res
}

// limit is the number of driver steps of the run.
func (s *Sim) limit() int {
	if s.cfg.Prefix > 0 && s.cfg.Prefix < s.cfg.Ops {
		return s.cfg.Prefix
	}
	return s.cfg.Ops
}

func (s *Sim) driving() bool { return s.step < s.limit() }

// boot starts the relays and the first devices.
func (s *Sim) boot() {
	if s.cfg.Relays > 1 {
		s.shared = memshared.New()
		s.sharedBackup = memkv.New(relay.StoreBuckets()...)
	}
	for i := range s.cfg.Relays {
		n := &relayNode{sim: s, idx: i, name: "relay", url: relayURL, wall: &wallClock{s: &s.sched},
			// Timer owners: 1 for the first relay, i+2 for replica i,
			// 1<<32|i for the other relays.
			tm: &timers{s: &s.sched, owner: 1}}
		if s.shared == nil {
			n.disk = memkv.New(relay.StoreBuckets()...)
			n.backup = copyStore(n.disk, relay.StoreBuckets())
		} else {
			n.name = fmt.Sprintf("relay%d", i)
			if i > 0 {
				n.url = fmt.Sprintf("ws://relay%d.sim/sync", i)
				n.tm.owner = 1<<32 | uint64(i)
			}
		}
		s.relays = append(s.relays, n)
		s.must(n.start())
	}
	for range s.cfg.Replicas {
		s.addReplica()
	}
	synctest.Wait()
}

func (s *Sim) addReplica() *replica {
	i := len(s.reps)
	r := &replica{sim: s, idx: i, name: fmt.Sprintf("r%d", i), disk: memkv.New(engine.Buckets...),
		wall: &wallClock{s: &s.sched}, tm: &timers{s: &s.sched, owner: uint64(i + 2)}, online: true}
	for k := range s.relays {
		r.urls = append(r.urls, s.relays[(i+k)%len(s.relays)].url)
	}
	r.schema = s.rng.IntN(2)
	s.reps = append(s.reps, r)
	s.must(r.start())
	return r
}

func (s *Sim) must(err error) {
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("step %d: %w", s.step, err)
	}
}

// fail records a broken invariant (the first one wins).
func (s *Sim) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("step %d (t=%v): %s", s.step, s.sched.Now(), fmt.Sprintf(format, args...))
	}
}

// loop takes events one at a time, letting the system settle after each,
// until done says so or nothing is left. It lets the system settle first:
// what the simulator's goroutine started since the last event (a relay, a
// client: quiesce) arms its timers and dials at the current time, before
// the clock moves on.
func (s *Sim) loop(done func() bool) {
	synctest.Wait()
	for !done() {
		if !s.stepOne(func(int) bool { return true }) {
			s.fail("deadlock: no event left")
			return
		}
	}
}

// stepOne runs the next event that ok accepts and waits for the system to
// settle; false when there is none.
func (s *Sim) stepOne(ok func(kind int) bool) bool {
	e := s.sched.next(ok)
	if e == nil {
		return false
	}
	s.traceKey(e.key)
	e.fn()
	synctest.Wait()
	if s.cfg.Watch != "" {
		s.watch()
	}
	return true
}

// await runs fn (which waits for the system: a Close) in a goroutine and
// runs the network and timer events until it returns; the driver's next
// step waits.
func (s *Sim) await(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	for {
		synctest.Wait()
		select {
		case <-done:
			return
		default:
		}
		if !s.stepOne(func(k int) bool { return k != kindDriver }) {
			s.fail("deadlock while waiting for a close")
			<-done
			return
		}
	}
}

// traceKey adds an event's key to the trace hash.
func (s *Sim) traceKey(k key) {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(k.at))
	binary.LittleEndian.PutUint64(b[8:], uint64(k.kind))
	binary.LittleEndian.PutUint64(b[16:], k.owner)
	binary.LittleEndian.PutUint64(b[24:], k.seq)
	s.mu.Lock()
	s.hash.Write(b[:])
	s.mu.Unlock()
}

// traceNet adds a delivered frame to the trace hash and counts it for the
// spinning check.
func (s *Sim) traceNet(l *link, side int, f frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.hash, "%s/%d/%v/%d:", l.name, side, f.close, f.code)
	s.hash.Write(f.data)
	s.msgs[int(s.sched.now/time.Second)]++
}

func (s *Sim) count(kind string) {
	s.mu.Lock()
	s.counts[kind]++
	s.mu.Unlock()
}

func (s *Sim) netFaults() netFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nf
}

// latency is the one-way latency of a dial's handshake on link id.
func (s *Sim) latency(id uint64) time.Duration {
	return time.Duration(1+id%17) * time.Millisecond
}

// shutdown stops every process, so that the bubble's goroutines end.
func (s *Sim) shutdown() {
	for _, r := range s.reps {
		r.stop(false)
	}
	for _, n := range s.relays {
		n.stop(false)
	}
	_ = s.oracle.Close()
}

// relayStore returns the store of the simulated database the relays
// write: the only relay's disk, or the shared storage's (an empty store
// when no relay has opened the database yet).
func (s *Sim) relayStore() kv.Store {
	if s.shared == nil {
		return s.relays[0].store
	}
	if st := s.shared.Store(databaseID); st != nil {
		return st
	}
	return memkv.New(relay.StoreBuckets()...)
}

// pickRelay returns the only relay, or one of several drawn from the
// driver's random source.
func (s *Sim) pickRelay() *relayNode {
	if len(s.relays) == 1 {
		return s.relays[0]
	}
	return s.relays[s.rng.IntN(len(s.relays))]
}

// setSharedDown makes the shared storage unreachable (down) or reachable
// again (memshared.Storage.SetDown).
func (s *Sim) setSharedDown(down bool) {
	s.sharedDown = down
	s.shared.SetDown(down)
}

// logLine records one line of a client's log for Config.Log.
func (s *Sim) logLine(level, name, msg string, args []any) {
	s.watchLog = append(s.watchLog, fmt.Sprintf("step %d t=%v %s log %s: %s %v", s.step, s.sched.Now(), name, level, msg, args))
}

// watch records, for Config.Watch, each replica whose copy of the row
// changed since the last event (the oracle too).
func (s *Sim) watch() {
	if s.watched == nil {
		s.watched = map[string]string{}
	}
	look := func(name string, e *engine.Engine) {
		cur := "absent"
		for _, l := range dump(e) {
			if l == s.cfg.Watch || strings.HasPrefix(l, s.cfg.Watch+" ") {
				cur = l
			}
		}
		if s.watched[name] != cur {
			s.watched[name] = cur
			s.watchLog = append(s.watchLog, fmt.Sprintf("step %d t=%v %s: %s", s.step, s.sched.Now(), name, cur))
		}
	}
	for _, r := range s.reps {
		if r.eng != nil {
			look(r.name, r.eng)
		}
	}
	look("oracle", s.oracle)
}
