// Package sim is a deterministic simulator of the whole sync system, in one
// process: devices (the real engine on memkv and the real client of package
// client), a relay (the real relay of package relay, its databases in memkv
// through Config.OpenStore) or several relays over one shared storage, a
// simulated network and a simulated clock, all driven from one seed. It
// exists to find the bugs nobody thought of: a run injects random workload
// and faults, and checks invariants during the run and once the faults
// stop.
//
// # How a run goes
//
// Run(t, cfg) runs inside a testing/synctest bubble. The simulator owns
// time: every timer of the clients (client.Options.Clock) and of the relay
// (relay.Config.Timers), every wall clock (engine and relay Clock, with a
// per-node skew) and every frame in flight is an event in one priority
// queue, ordered by (simulated time, kind, owner, the owner's own sequence
// number). Owners are a link direction or a node's clock, and each numbers
// its events itself, so the order never depends on which goroutine reached
// the queue first; a clock numbers the timers armed in one event once the
// system has settled, in the order they are due, so that two goroutines
// of one node arming timers at once number them alike either way. The
// loop takes one event, runs it (a delivery, a timer, a driver step), then
// synctest.Wait()s until every goroutine of the system is blocked again,
// and only then takes the next. Site ids and snapshot ids
// come from the seed (engine.Options.Rand, relay.Config.Rand), as do the
// clients' backoff jitter (client.Options.Rand) and each link's latencies
// and faults (a random source per link direction). The same seed gives the
// same run: TestSimDeterministic compares the hash of the full trace (every
// event key, every frame delivered, every driver step) of two runs.
//
// The driver's steps: writes (70 %: inserts, updates, upserts and deletes
// of 1–4 rows over few keys, so that re-inserts of deleted keys and
// conflicts are common, now and then a value of up to 21 KB against a
// 64 KiB frame limit), device events (offline and back, a new device
// joining by snapshot, a schema migration — the device restarts with the
// next schema version: add_column, add_index, create_table, and on odd
// seeds a set_resurrection_policy making the pairs table
// resurrection-allowed, so that a budget runs both policies, then the
// drops of versions 4–6; an alter of items.a or items.b; a rename of
// items or pairs to one of a few names, after which devices write by the
// name they know, and now and then by the old one —, RequestSnapshot) and
// faults: frames dropped,
// duplicated (never a handshake: a second one is fatal by the protocol),
// delayed or reordered; connections cut; a device crashing (its store
// refuses every write from the crash on, then it restarts from what was
// committed); the relay crashing and restarting, restored from an older
// copy of its store, or wiped; clock skew within and beyond
// model.MaxDrift and clocks stepping back; retention (the relay's Maintain
// and a device's Prune). Between steps simulated time moves by milliseconds,
// sometimes minutes, rarely hours (past the retention horizon).
//
// # Several relays
//
// With Config.Relays > 1 (DefaultConfig: 2 on seeds divisible by 3), every
// relay is a real relay.Server over one relay/memshared storage
// (relay.SharedStorage: the writer lock, notifications of new heads, the
// catch-up of entries other relays appended, the periodic check of the
// heads), each with its own clock, skew and random source. Notifications
// travel through the event queue, 1–20 ms from one relay to another, and
// under network faults some are lost (shared.note_drop: the periodic
// check catches up) or late by up to 5 s (shared.note_delay), so a relay
// serves its connections between another's commit and its notification. Each device
// connects to all of them with client.ConnectAny, its list starting with
// relay i mod Relays (so devices spread over the relays) and moving on
// when one is unreachable: devices on different relays converge only
// through the shared storage. The relay faults become: crash.relayN (relay
// N crashes: its view of the storage refuses everything from then on, its
// connections drop, its memory is lost; the shared data stays; the same
// fault on a relay that is down restarts it), crash.mid_prune (one relay
// crashes at its k-th store write, 1–4, of a maintenance pass — between a
// horizon mark and the end of its pruning, say — while the others go on;
// left out with prune), shared.down (the storage
// unreachable for 1–60 s, memshared's SetDown: opens, locks and
// notifications fail, so pushes are answered with transient errors, and
// the relays recover), relay.backup, relay.restore_old and relay.wipe on
// the shared database (memshared's Replace, with every relay stopped
// meanwhile and started again). The invariants are the same, with the one
// shared merged replica; the "prune" fault runs one relay's maintenance
// (one relay at a time maintains a database), quiescence every relay's.
//
// # Invariants
//
// During the run: a device's stored cursor never moves back within one
// relay log (once per device after a relay restore or wipe it may; with
// several relays, whichever relay it syncs with), and no
// simulated second carries more than 5000 frames. At quiescence (faults
// off, clocks true, the relay up, every device up, online and at the newest
// schema; every relay up, the shared storage reachable): within 30
// simulated minutes every client is Synced with nothing
// pending and, after retention everywhere at once, every replica holds the
// same CRDT state (cells with their HLCs, tombstones, read through
// engine.Snapshot); that state equals the relay's merged replica and an
// oracle engine into which every acknowledged local transaction was merged
// directly (so a lost fact shows); then 10 quiet minutes carry only
// keepalives.
//
// # Failures and replay
//
// A failing run is shrunk: the shortest prefix of driver steps that still
// fails (bisection over Config.Prefix) is run again with its trace, and
// the test prints the seed, the broken invariant, the steps and the command
// that replays it: go test ./internal/sim -run TestSim -v -seed N -ops P.
// To follow one row through a replay, add -sim.watch 'pairs [0 "i0"]'
// (the row as the failure prints it): the test logs each change of that
// row on every device and in the oracle, with its step and simulated time;
// -sim.log r0 logs that replica's client log (handshakes, snapshots,
// pruning at horizon marks, errors) in the same order.
// TestSimBudget runs the fixed budget of make test (100 000 steps over
// seeds 1–50, a third of them with two relays); make sim runs SIM_OPS
// steps from SIM_FIRST, SIM_PARALLEL seeds at once, and reports operations
// per second and faults by kind. TestSimRelays runs a few seeds with two
// and three relays under every fault, and two twice (the same trace);
// -sim.relays N runs every seed with N relays (a failure's replay command
// carries it when it differs from DefaultConfig's).
//
// # Residual nondeterminism
//
// Within one event several goroutines of one node may become ready at once
// (a cut wakes a client's reader and, if it writes, its writer); Go's
// select then picks between ready channels at random. The simulator keys
// everything a goroutine schedules by its owner, so such a choice changes
// the run only if it changes what the node sends or when; none was seen in
// the determinism test.
package sim
