//go:build !js

package sim

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "replay this seed (TestSim)")
	opsFlag   = flag.Int("ops", 0, "driver steps per seed (TestSim); 0: the default")
	logFlag   = flag.String("sim.log", "", "TestSim: log this replica's client log (e.g. r0), in order with -sim.watch's changes")
	watchFlag = flag.String("sim.watch", "", `TestSim: log each change of this row (as failures print it, e.g. 'pairs [0 "i0"]') on every device and in the oracle`)
)

// TestSim replays one seed: go test ./internal/sim -run TestSim -seed N
// [-ops P] (a failure prints the command). Without -seed it runs seed 1;
// TestSimBudget runs the seeds of make test.
func TestSim(t *testing.T) {
	seeds := []uint64{1}
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	}
	for _, seed := range seeds {
		cfg := simConfig(seed)
		cfg.Watch, cfg.Log = *watchFlag, *logFlag
		res := Run(t, cfg)
		for _, l := range res.Watch {
			t.Log("watch: " + l)
		}
		t.Logf("seed %d: %d ops, %v simulated, faults %s", seed, res.Ops, res.Sim, faultLine(res.Faults))
		if res.Err != nil {
			report(t, cfg, res)
		}
	}
}

func faultLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return b.String()
}

// report fails t with the seed, the invariant and the shrunk trace.
func report(t *testing.T, cfg Config, res Result) {
	t.Helper()
	cfg.Watch = ""
	shrunk, sres := Shrink(t, cfg)
	var b strings.Builder
	for _, st := range sres.Steps {
		b.WriteString("\n  " + st)
	}
	extra := ""
	if *withoutFlag != "" {
		extra += " -sim.without " + *withoutFlag
	}
	if resurrectSet() {
		extra += fmt.Sprintf(" -sim.resurrection=%v", cfg.Resurrection)
	}
	if cfg.Sealed {
		extra += " -sim.sealed"
	}
	if cfg.Relays != DefaultConfig(cfg.Seed).Relays {
		extra += fmt.Sprintf(" -sim.relays %d", cfg.Relays)
	}
	t.Errorf("seed %d: %v\nshrunk to the first %d steps (%v):%s\nreplay: go test ./internal/sim -run TestSim -v -seed %d -ops %d%s",
		cfg.Seed, res.Err, shrunk.Prefix, sres.Err, b.String(), cfg.Seed, shrunk.Prefix, extra)
}

// TestSimDeterministic runs one seed twice: the traces (every event's key,
// every frame delivered, every step) must hash the same.
func TestSimDeterministic(t *testing.T) {
	cfg := DefaultConfig(7)
	cfg.Ops = 300
	a, b := Run(t, cfg), Run(t, cfg)
	if a.Hash != b.Hash || a.Ops != b.Ops {
		t.Fatalf("seed 7 ran differently twice: trace %x after %d steps, then %x after %d", a.Hash, a.Ops, b.Hash, b.Ops)
	}
	t.Logf("seed 7: trace %x, %d steps, %v simulated", a.Hash[:8], a.Ops, a.Sim)
}

var (
	budgetFlag    = flag.Int("sim.ops", 100_000, "TestSimBudget: driver steps in all, across seeds")
	firstFlag     = flag.Uint64("sim.first", 1, "TestSimBudget: the first seed")
	parallelFlag  = flag.Int("sim.parallel", 2, "TestSimBudget: seeds run at once")
	withoutFlag   = flag.String("sim.without", "", "fault kinds not to inject, comma-separated (cut, crash.replica, crash.relay, relay.restore_old, relay.wipe, relay.backup, skew.within, skew.beyond, clock.step_back, prune, and with several relays shared.down; none: every kind); default: DefaultConfig's (prune left out on seeds s with s/2 even, nothing on the others)")
	relaysFlag    = flag.Int("sim.relays", 0, "relays over one shared storage in every seed (Config.Relays); 0: DefaultConfig's (2 on seeds divisible by 3, else 1)")
	resurrectFlag = flag.Bool("sim.resurrection", false, "declare the pairs table resurrection-allowed (true) or leave it delete-wins (false) in every seed; unset: odd seeds allow resurrection (DefaultConfig)")
)

// resurrectSet reports whether -sim.resurrection was given.
func resurrectSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "sim.resurrection" {
			set = true
		}
	})
	return set
}

// TestSimBudget runs consecutive seeds from -sim.first until -sim.ops
// driver steps are done, -sim.parallel at once, and reports operations per
// second and the faults injected, by kind. Each failing seed is reported
// with its shrunk trace. With -v it logs a line per finished seed (its
// ops, its result, the ops done in all and the rate so far), so that a run
// stopped early still tells what it covered.
func TestSimBudget(t *testing.T) {
	if testing.Short() || *seedFlag != 0 {
		t.Skip("-short, or -seed replays one seed (TestSim)")
	}
	start := time.Now()
	var mu sync.Mutex
	faults := map[string]int{}
	migrations := map[string]int{}
	ops, runs := 0, 0
	var seeds []uint64
	sem := make(chan struct{}, max(*parallelFlag, 1))
	var wg sync.WaitGroup
	for seed, planned := *firstFlag, 0; planned < *budgetFlag; seed++ {
		cfg := simConfig(seed)
		planned += cfg.Ops
		seeds = append(seeds, seed)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res := Run(t, cfg)
			mu.Lock()
			ops += res.Ops
			runs++
			for k, n := range res.Faults {
				faults[k] += n
			}
			for k, n := range res.Migrations {
				migrations[k] += n
			}
			total, took, n := ops, time.Since(start), runs
			line := ""
			if n%25 == 0 {
				// The running totals, so a long run stopped early still
				// reports what it injected.
				line = faultLine(faults)
			}
			mu.Unlock()
			if testing.Verbose() {
				result := "ok"
				if res.Err != nil {
					result = "FAIL"
				}
				t.Logf("seed %d: %d ops, %s; %d ops in all, %.0f ops/s", cfg.Seed, res.Ops, result, total, float64(total)/took.Seconds())
				if line != "" {
					t.Logf("after %d runs, faults injected:%s", n, line)
				}
			}
			if res.Err != nil {
				report(t, cfg, res)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("seeds %d..%d: %d runs, %d operations in %v (%.0f operations/s)", seeds[0], seeds[len(seeds)-1], runs, ops, took.Round(time.Millisecond), float64(ops)/took.Seconds())
	t.Logf("faults injected:%s", faultLine(faults))
	t.Logf("schema steps:%s", faultLine(migrations))
}

// simConfig is DefaultConfig with the command line's -sim.without,
// -sim.resurrection and -ops.
func simConfig(seed uint64) Config {
	cfg := DefaultConfig(seed)
	if *sealedFlag {
		cfg = SealedConfig(seed)
	}
	if *withoutFlag != "" {
		cfg.Without = map[string]bool{}
		for _, k := range strings.Split(*withoutFlag, ",") {
			if k != "none" {
				cfg.Without[k] = true
			}
		}
	}
	if resurrectSet() {
		cfg.Resurrection = *resurrectFlag
	}
	if *opsFlag > 0 {
		cfg.Ops = *opsFlag
	}
	if *relaysFlag > 0 {
		cfg.Relays = *relaysFlag
	}
	return cfg
}

var sealedFlag = flag.Bool("sim.sealed", false, "sync a sealed database (Config.Sealed) in TestSim and TestSimBudget")

// TestSimSealed runs a few seeds of SealedConfig (a sealed database)
// (Config.Sealed): envelopes, sealed checkpoints uploaded every 15
// ChangeSets and bootstraps from them, under every fault of the default
// runs. Replay a failure with TestSim's command and -sim.sealed.
func TestSimSealed(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := SealedConfig(seed)
		if res := Run(t, cfg); res.Err != nil {
			t.Errorf("seed %d (sealed): %v\nreplay: go test ./internal/sim -run TestSim -v -seed %d -sim.sealed", seed, res.Err, seed)
		}
	}
}

// TestSimKnownFailures names the failures the simulator found that are not
// fixed yet, each with its replay command; DefaultConfig leaves their
// trigger out so that make test stays meaningful for the rest, or the
// budget's seeds do not reach them.
func TestSimKnownFailures(t *testing.T) {
	t.Skip("none known (wire version 13, 2026-12-07). The 10-million-operation run (seeds 80001..85000, DefaultConfig, on b343587) " +
		"failed 1 of 5000 seeds: 81586, \"locked out: r6 is at cursor 110, the relay's head is 117\" (a push_changes lost on a quiet live " +
		"connection; keepalive pings carried no position), fixed in client (the keepalive of a synced session is a get_changes) and in " +
		"TestSimFixedSeeds. Before: none known (wire version 11, 2026-12-06). Seed 7107 of DefaultConfig (two relays on one shared store), found by a sweep of seeds 7100..7199 " +
		"(200,000 steps; 1 of 100 failed): at step 1144 \"cursor of r7 moved backwards: 88 after 91\" is fixed (client: a pull from 0 without a cursor " +
		"of its own voids a horizon kept from a lost snapshot transfer, which named a mark of a history the relay lost to a restore; " +
		"client.TestPullFromStartVoidsHorizon; in TestSimFixedSeeds). Not a shared-storage bug: the relay's diverged verdict was right for the horizon presented. " +
		"Seed 7143 (found by the long run on wire version 9: a repair push resumed past a horizon mark never pushed again the facts the mark kept) " +
		"is fixed (client: a mark that keeps other sites' facts restarts a pending repair; client.TestE2ERepairRestartsAtMark). " +
		"Before: none known (wire version 10, 2026-12-06, 2 shared cores): seeds 4200..4349 (TestSimBudget, 300,000 steps, DefaultConfig), " +
		"0 of 150 failed; on wire version 9 seed 4297 failed there (a snapshot cursor without its chain value taken on faith), " +
		"and with the \"unverified\" verdict alone seed 4241 (a needless bootstrap), both fixed and in TestSimFixedSeeds. " +
		"Before (wire version 9, 2026-12-03): seeds 3800..3999 (400,000 steps), 0 of 200 failed with DefaultConfig " +
		"and 0 of 200 with every fault on every seed (-sim.without none); before, 1 of 200 with DefaultConfig: seed 3931 " +
		"(a pull from 0 that left out the device's own entries), fixed and in TestSimFixedSeeds. " +
		"Before (measured 2026-12-03, wire version 8): DefaultConfig runs every fault on seeds s with s/2 odd " +
		"(retention pruning with relay wipes and restores) and every fault but pruning on the others. " +
		"Seeds 1..100: 0 failed with -sim.without relay.wipe (restores, no wipes; 3 before wire version 8: 5 12 82, now in TestSimFixedSeeds), " +
		"0 with -sim.without none (every fault; 1 with version 8 before a voided cursor voided its horizon: 79, in TestSimFixedSeeds); " +
		"TestSimBudget (seeds 1..50, 100 000 steps): 0. " +
		"Several relays over one shared storage (2026-12-06, 2 shared cores): seeds 1..150 of DefaultConfig (two relays on seeds divisible by 3; 300,000 steps): 0 failed; " +
		"-sim.relays 2 -sim.without none, seeds 1..100: 0; -sim.relays 2 -sim.without relay.restore_old,relay.wipe, seeds 1..100: 0; " +
		"-sim.relays 3 -sim.without none, seeds 1..100: 0; -sim.relays 2 -sim.sealed, seeds 1..50: 0 (these four before notifications went through the event queue); " +
		"-sim.relays 2 -sim.without none, seeds 201..300 (200,000 steps): 0. " +
		"A crash between a horizon mark and the end of its pruning, which crash.mid_prune injects, was found by reading relay/horizon.go and fixed " +
		"(relay.TestSharedPendingPruningFinishedBeforeAppend); no seed of these sweeps failed before the fix either.")
}

// TestSimFixedSeeds replays the seeds that found bugs since fixed, with the
// configuration that found them, so that the bugs stay fixed.
//
// Seeds 33 (968 steps), 57 (1000) and 91 (955), pairs table
// resurrection-allowed: a device synced with relay log A, then with log B
// (A wiped), then A came back restored from an older copy; the handshake
// presented its position in B, so A checked nothing, and the device pulled
// A from the cursor it had kept for A, above the restored log's head: the
// entries A appended below that cursor never reached it (a transaction's
// x,y on seed 91, a tombstone on seed 33). Fixed in client (an unpresented
// cursor is void: client.TestReturnToEarlierLogVoidsCursor).
func TestSimFixedSeeds(t *testing.T) {
	keepLog := map[string]bool{"relay.restore_old": true, "relay.wipe": true}
	for _, c := range []struct {
		name    string
		seed    uint64
		ops     int
		without map[string]bool
		// resurrect declares the pairs table resurrection-allowed on
		// any seed (otherwise DefaultConfig's: odd seeds).
		resurrect bool
		// relays is Config.Relays (0: 1, the seeds found before
		// several relays joined the simulator).
		relays int
	}{
		{"resurrection", 33, 968, map[string]bool{"prune": true}, true, 0},
		{"resurrection", 57, 1000, map[string]bool{"prune": true}, true, 0},
		{"resurrection", 91, 955, map[string]bool{"prune": true}, true, 0},
		// Seed 30, retention pruning on, the relay's log kept (no wipe,
		// no restore): a device came back past the horizon with an
		// unsent update of a row others had deleted (and dropped with
		// its pruned tombstone); the replacing snapshot kept that row
		// whole, the row's older cells of other sites with it
		// (engine.TestSnapshotReplaceSetsCarriedRows).
		{"retention", 30, 1985, keepLog, false, 0},
		// Seed 48, same configuration: a device offline past the
		// horizon called RequestSnapshot; the handshake took it and
		// the snapshot merged, so rows deleted meanwhile (tombstones
		// pruned) stayed on that device. Fixed in client (RequestSnapshot
		// pulls from the replica's own cursor first:
		// client.TestOfflinePastHorizonDropsRowsDeletedMeanwhile/RequestSnapshot).
		{"retention", 48, 1829, keepLog, false, 0},
		// Seed 72 (and 83, 98, 129, 154, 172), same configuration: a
		// device applied a horizon mark while it held an unsent write
		// above a delete-wins row's pruned tombstone; pruning dropped
		// the row with the write, which the relay applied after its
		// own pruning and kept. Fixed in engine
		// (PruneTombstonesOptions.KeepUnsent keeps own cells:
		// engine.TestPruneKeepsUnsentCells).
		{"retention", 72, 1859, keepLog, false, 0},
		// Seed 96: the network lost a snapshot rows chunk; a merging
		// transfer (RequestSnapshot) failed at its end and resumed ten
		// hours later, after the relay pruned deletes this device never
		// saw, and merged: the deleted rows stayed on it. Fixed in
		// client and engine (a header horizon above the applied one
		// replaces: client.TestSnapshotPastUnappliedHorizonReplaces;
		// chunk offsets: engine.TestSnapshotReplaceLostChunk).
		{"retention", 96, 1806, keepLog, false, 0},
		// Seed 216: fixed by the same two changes (it failed with
		// KeepUnsent and siteHlc in, passes with the offsets and the
		// header-horizon rule).
		{"retention", 216, 1816, keepLog, false, 0},
		// Seeds 82, 144, 169 and 79 (pairs resurrection-allowed),
		// pruning on, relay restores and wipes off: the relay made its
		// newest horizon mark while its clock ran ahead, and late
		// deletes older than the mark's wall reached every replica
		// after it (kept everywhere, as the protocol says). At
		// quiescence the clocks are set right, so the relay's
		// maintenance made no new mark, and the simulator's prune
		// applied the newest mark again to every device: the late
		// tombstones (and the delete-wins rows, or the resurrected
		// rows' tombstones) went on the devices and stayed on the relay
		// ("relay's merged replica differs"). Fixed in the simulator
		// (prune applies a mark only to a device that has not applied
		// it).
		{"prune", 82, 1958, keepLog, false, 0},
		{"prune", 144, 1993, keepLog, false, 0},
		{"prune", 169, 1949, keepLog, false, 0},
		{"prune", 79, 1987, keepLog, false, 0},
		// Seed 74, same configuration: the relay pruned a delete-wins
		// row at a mark (tombstone below it) that held a later update
		// of another device, dead under the tombstone; a newer deletion
		// of the row reached the relay after the mark and started it
		// afresh, on every replica alike. The oracle, which got that
		// deletion before the mark, kept the dead update under it
		// ("acknowledged transaction lost"). Fixed in the simulator
		// (maintain leaves the rows a mark pruned on the relay out of
		// the oracle comparison, as prune did for the oracle's own).
		{"prune", 74, 1351, keepLog, false, 0},
		// Seed 271, same configuration: a device deleted a delete-wins
		// row offline, without having seen an older deletion of another
		// site, then pulled that deletion (it lost to the device's own)
		// and another site's later cells, dead, and applied a horizon
		// mark above the older deletion before its own reached the
		// relay. The relay pruned the row by the older deletion, dead
		// cells included, and applied the device's deletion after: a
		// bare tombstone; the device kept the dead cells under its own
		// ("r0 and r1 differ"). Fixed in engine (the superseded
		// deletion is the row's shadow tombstone, pruned by:
		// engine.TestPruneShadowTombstone).
		{"retention", 271, 957, keepLog, false, 0},
		// Seed 301, same configuration: a device's snapshot transfer
		// failed after its items table merged a dead row whose
		// tombstone lies below the header's horizon (a late delete the
		// relay kept); the resumed transfer pruned at that horizon again
		// and did not resend the table, so a late cell revived the row
		// there only. Fixed in client (a resumed header does not prune
		// again).
		{"retention", 301, 2000, keepLog, false, 0},
		// Seed 11, pruning with relay wipes (restores left out): a wiped
		// relay (a new log) got back from each device only its own
		// facts; a tombstone its author had pruned at a mark of the lost
		// log lived on devices that had not applied that mark, so
		// replicas that pruned and replicas that had not disagreed for
		// good ("r0 and r2 differ"). Fixed by repair pushes (wire
		// version 6: relay.TestRepairPush,
		// client.TestE2ERepairAfterWipeDeviceGone).
		{"repair", 11, 1687, map[string]bool{"relay.restore_old": true}, false, 0},
		// Seed 78, same configuration: a device's own tombstones, pruned
		// there, came back in another device's repair entries after its
		// own push had ended; merged back above its sent watermark, they
		// counted as pending for good ("r1 has 4 transactions
		// unacknowledged"). Fixed in client (pushOwnMergedBack).
		{"repair", 78, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		// Seed 66 (1944 steps), pruning with relay wipes (no restore),
		// and seed 41 (2000 steps), every fault: after a wipe, device
		// r6 caught up with the new log and repair-pushed the facts of
		// other sites it held, a delete-wins row's old tombstone among
		// them; the relay had made a mark meanwhile, which reaches a
		// client only with the next changes after it, and appended the
		// repair entry after that mark. r6 applied the mark later,
		// pruning the tombstone (keeping its own cells above the mark's
		// siteHlc), and its pulls left its own repair entry out, so it
		// never merged the tombstone back; every other replica did, and
		// the next mark pruned the row with r6's cells there, not on r6
		// ("r0 and r6 differ"). Fixed in relay (a repair entry reaches
		// its sender too, in push_changes and pulls:
		// relay.TestRepairPush).
		{"wipe-prefix", 66, 1944, map[string]bool{"relay.restore_old": true}, false, 0},
		{"all", 41, 2000, map[string]bool{}, false, 0},
		// Seed 16 (2000 steps), pruning with relay wipes: after
		// a wipe, other devices' repair pushes gave the new log device
		// r2's deletion of a delete-wins row (which superseded an
		// older deletion, its shadow) before a mark; the mark's siteHlc
		// for r2, which counts r2's own pushes only, was zero. The
		// relay pruned only the shadow (r2's deletion is past the mark)
		// and kept another site's later cells; r2 kept its deletion as
		// unsent and pruned by the shadow as if the relay had, dropping
		// those cells ("r0 and r2 differ"). Fixed in client and engine
		// (own facts pulled from the log are held:
		// PruneTombstonesOptions.Held, engine.TestPruneHeldOwnTombstone).
		{"wipe", 16, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		// Seeds 55, 71, 85 and 66 (2000 steps), pruning with relay
		// wipes: devices r3 and r6 (seed 55; r6 on 71, r1 on 85),
		// stuck behind (clock drift) since long before, still held
		// another site's old deletion of a delete-wins row that every
		// other replica had pruned. At quiescence they
		// pulled the wiped relay's new log from 0: other sites' later
		// cells of the row, then a mark past the deletion, which the
		// relay never held (nobody pushed it before the mark), so it
		// pruned nothing of the row. r3 and r6 pruned their deletion
		// at the mark and, delete-wins, the cells with it; the cells
		// pushed before the mark never came back ("r0 and r3 differ",
		// seed 55). Fixed in client and engine (while a repair is
		// pending, a mark keeps the facts of other sites not pulled
		// from the log, which the repair push then gives the relay:
		// PruneTombstonesOptions.KeepOthers,
		// engine.TestPruneKeepOthers).
		{"wipe", 55, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		{"wipe", 71, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		{"wipe", 85, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		{"wipe", 66, 2000, map[string]bool{"relay.restore_old": true}, false, 0},
		// Seed 12 (1453 steps), pruning with relays restored from an
		// older copy (no wipes), and seeds 5 and 82 (2000 steps), same
		// configuration: the relay came back restored from a copy taken
		// before a horizon mark it had made at its head; devices whose
		// cursor was that head had applied the mark (pruning a
		// delete-wins row's old tombstone), and the chain value at their
		// cursor was the same, so the relay said their history
		// continues, while its restored merged replica held the
		// tombstone again. It came back on the devices that bootstrapped
		// later and killed the row's later cells there (and on the relay,
		// pruned with the tombstone at its next mark), not on the others,
		// which kept the row ("r0 and r2 differ"). Fixed in wire version
		// 8: the handshake presents the horizon applied, the relay
		// answers diverged when it holds no mark at or below the cursor
		// that high, and the client bootstraps again (merging the
		// tombstone back) and repair-pushes (relay.TestHandshakeHorizonVerdict,
		// client.TestE2ERestoredRelayLostMarkAtHead).
		{"restore", 12, 1453, map[string]bool{"relay.wipe": true}, false, 0},
		{"restore", 5, 2000, map[string]bool{"relay.wipe": true}, false, 0},
		{"restore", 82, 2000, map[string]bool{"relay.wipe": true}, false, 0},
		// Seed 79 (1704 steps), every fault, with the fix above but
		// the horizon kept when the cursor was voided: a device whose
		// history diverged (a restore) failed its bootstrap (clock
		// drift) and, holding facts of its own, pulled the log from 0;
		// it skipped the relay's marks up to the horizon it had applied
		// in the lost history, and presented that horizon with its next
		// cursor: diverged again, its cursor moving back without a new
		// restore ("cursor of r6 moved backwards"). Fixed in client (a
		// voided cursor voids its horizon: client.TestDivergedVoidsHorizon).
		{"all", 79, 1704, map[string]bool{}, false, 0},
		// Seed 3931 (1889 steps), every fault: device r0 deleted its row
		// items i1; the relay was backed up with the deletion at its head
		// (cursor 73), then made a mark there, which r0 applied, pruning
		// its own tombstone. The relay was restored from that copy: its
		// log and merged replica held the deletion again, without the
		// mark. r0's handshake was answered diverged, and its bootstrap
		// failed (clock drift on the snapshot's header); holding facts of
		// its own, it pulled the log from 0 in the next session, and the
		// relay leaves a client's own ChangeSets out of its pulls: r0 never
		// got its deletion back. r7's later insert of i1 stayed dead under
		// it everywhere else (delete-wins) and went with it at the next
		// mark, live on r0 alone ("r0 and r1 differ"). Fixed in client (a
		// pull from 0 without a cursor of its own asks back every own
		// transaction: client.TestE2ERestoredRelayLostMarkBootstrapFailed).
		{"all", 3931, 1889, map[string]bool{}, false, 0},
		// Seed 4297 (1838 steps), every fault but pruning, pairs
		// resurrection-allowed: device r0 bootstrapped from relay log L
		// (restored from an older copy) at its head, cursor 48, and the
		// relay crashed before a pull brought r0 the chain value there:
		// r0 kept cursor 48 without one. L was restored from
		// the same older copy again (head 41); devices pushed back what
		// it lost, in another order (r3's deletion of pairs [0 "i0"]
		// at 48), and the log grew past 48 again. r0's handshake
		// presented 48 without a chain value; the relay said nothing
		// and r0 pulled from 48: the entries 42…48 never reached it, the
		// deletion among them ("r0 and r1 differ"). Fixed in wire
		// version 10: the relay answers "unverified" for a cursor it
		// holds presented without a chain value, and the client
		// bootstraps again (relay.TestLogChainAndHistory,
		// client.TestE2ERestoredRelayUnverifiedCursor); and
		// snapshot_complete states the chain value at the snapshot's
		// cursor, which the client stores with it.
		{"all-but-prune", 4297, 1838, map[string]bool{"prune": true}, false, 0},
		// Seed 4241 (1785 steps), same configuration, with the
		// "unverified" verdict alone: device r7 bootstrapped at cursor
		// 68 and its catch-up pull failed (clock drift), so it kept the
		// cursor without its chain value; its next handshake was judged
		// "unverified", the new bootstrap failed (clock drift) and, with
		// facts of its own, it pulled the log from 0 ("cursor of r7
		// moved backwards: 60 after 68"). Fixed by snapshot_complete's
		// chain value (client.TestE2ESnapshotCompleteStoresChain).
		{"all-but-prune", 4241, 1785, map[string]bool{"prune": true}, false, 0},
		// Seed 7107 (1144 steps) of DefaultConfig, two relays over one
		// shared store: device r7, its cursor lost, bootstrapped from
		// relay log L and applied the snapshot header's horizon (a mark
		// at cursor 61) before the transfer was lost with its
		// checkpoint. L was wiped, then restored from a copy older than
		// the mark; r7, holding facts of its own and no cursor in L,
		// pulled L from 0 to cursor 91 and kept the horizon. After a
		// crash its handshake presented cursor 91 with that horizon,
		// which the restored log never held: diverged, its bootstrap
		// failed (clock drift) and it pulled from 0 again ("cursor of r7
		// moved backwards: 88 after 91"). Fixed in client (a pull from 0
		// without a cursor of its own voids the horizon kept:
		// client.TestPullFromStartVoidsHorizon).
		{"default-2-relays", 7107, 1144, nil, false, 2},
		// Seed 81586 (1976 steps) of DefaultConfig, found by the
		// 10-million-operation run (seeds 80001..85000, 1 of 5000
		// failed): the push_changes of entries 111..117 to device r6 was
		// lost on its live connection just before the faults stopped;
		// nobody wrote again, and keepalive pings carry no position, so
		// r6 stayed Synced at 110 ("locked out: r6 is at cursor 110,
		// the relay's head is 117"). Fixed in client (a synced
		// session's keepalive is a get_changes:
		// client.TestKeepaliveCatchesUpLostPush).
		{"default", 81586, 1976, nil, false, 0},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.name, c.seed), func(t *testing.T) {
			cfg := DefaultConfig(c.seed)
			cfg.Ops = c.ops
			if c.without != nil {
				cfg.Without = c.without
			}
			cfg.Relays = max(c.relays, 1) // 0: as found, before several relays joined the simulator
			if c.resurrect {
				cfg.Resurrection = true
			}
			if res := Run(t, cfg); res.Err != nil {
				report(t, cfg, res)
			}
		})
	}
}

// TestSimRelays runs a few seeds with two and three relays over one shared
// storage (Config.Relays), under every fault (crashes of each relay, the
// shared storage unreachable for a while, restores and wipes of its
// database with every relay stopped, retention pruning), and two seeds
// twice: the traces must hash the same. Replay a failure with TestSim's
// command and -sim.relays N -sim.without none.
func TestSimRelays(t *testing.T) {
	for _, c := range []struct {
		seed   uint64
		relays int
	}{{1, 2}, {2, 3}, {4, 2}, {5, 3}} {
		cfg := DefaultConfig(c.seed)
		cfg.Relays, cfg.Without, cfg.Ops = c.relays, map[string]bool{}, 1000
		res := Run(t, cfg)
		if res.Err != nil {
			t.Errorf("seed %d, %d relays: %v\nreplay: go test ./internal/sim -run TestSim -v -seed %d -ops %d -sim.relays %d -sim.without none",
				c.seed, c.relays, res.Err, c.seed, cfg.Ops, c.relays)
			continue
		}
		t.Logf("seed %d, %d relays: %d ops, %v simulated, faults%s", c.seed, c.relays, res.Ops, res.Sim, faultLine(res.Faults))
	}
	// Seed 15 (2000 steps, two relays) ran differently twice before the
	// simulator's own engine stopped creating the relays' store after a
	// wipe (a site id from crypto/rand); seed 12 before the loop let the
	// relays started at quiescence arm their timers first.
	for _, seed := range []uint64{12, 15} {
		cfg := DefaultConfig(seed)
		a, b := Run(t, cfg), Run(t, cfg)
		if a.Hash != b.Hash || a.Ops != b.Ops || a.Err != nil {
			t.Fatalf("seed %d (%d relays) ran differently twice: trace %x after %d steps (%v), then %x after %d", seed, cfg.Relays, a.Hash, a.Ops, a.Err, b.Hash, b.Ops)
		}
	}
}
