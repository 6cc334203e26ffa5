//go:build !js

package sim

import (
	"hash"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/relay/memshared"
)

// Config sizes one simulated run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	Seed     uint64
	Replicas int // devices at the start; more join by snapshot
	// Relays is the number of relay processes (relay.Server), 1 or more:
	// with more than one they share one relay/memshared storage
	// (relay.SharedStorage), each device connects to all of them
	// (client.ConnectAny, starting with relay i mod Relays), and the
	// faults add crashes of each relay (crash.relayN), crashes in the
	// middle of a maintenance pass (crash.mid_prune) and the shared
	// storage unreachable for a while (shared.down). Default: 2 on seeds
	// divisible by 3, else 1 (DefaultConfig).
	Relays int
	Ops    int // driver steps: workload operations and faults
	// Prefix, when > 0, stops the workload and the faults after that many
	// driver steps (the shrinker's prefix).
	Prefix int
	// Faults turns fault injection on.
	Faults bool

	Retention          time.Duration
	MaxMessageSize     int64
	PageChanges        int
	SnapshotChunkRows  int
	MaxChangesPerApply int
	PushLimit          int
	// Trace keeps the driver's steps as text (for a failure's report).
	Trace bool
	// Without lists fault kinds not to inject (to tell which one a
	// failure needs).
	Without map[string]bool
	// Resurrection declares the pairs table (schema version 3)
	// resurrection-allowed: a set_resurrection_policy migration.
	Resurrection bool
	// Sealed syncs a sealed database (docs/design.md § Sealed databases):
	// every device seals with one key and uploads sealed checkpoints
	// every 15 ChangeSets; the relay, with no merged replica, is not
	// compared with the devices (the rows a horizon mark prunes, left out
	// of the oracle comparison, are read from the oracle instead), and a
	// device's cursor may move back to a checkpoint's (an older position
	// it pulls forward from again).
	// Envelope nonces come from crypto/rand, so a sealed run's trace hash
	// differs between runs; its steps and faults do not.
	Sealed bool
	// Watch names one row as failures print it (`pairs [0 "i0"]`):
	// Result.Watch then records each change of that row on every device
	// and in the oracle, after each event (a debugging aid: it reads
	// every replica after every event, so a run is much slower).
	Watch string
	// Log names one replica ("r0") whose client log Result.Watch records,
	// in order with the watched row's changes (a debugging aid).
	Log string
}

// DefaultConfig returns the configuration of make test's runs for seed:
// 3 devices at the start, 2000 driver steps, small frame, page and chunk
// limits so that paging and size limits are hit. Seeds s with s/2 even
// run every fault but retention pruning; the others run every fault:
// pruning with relay wipes (repair pushes: wire's "Repair pushes") and
// with relays restored from an older copy (a lost horizon mark: wire's
// "Verifying the relay's log", version 8). Odd seeds declare the pairs
// table resurrection-allowed (Resurrection), even seeds leave it
// delete-wins, so that a budget runs both policies with both fault sets.
// Seeds divisible by 3 run two relays over one shared storage (Relays),
// the others one relay, so that the budget covers both with every
// combination of the above.
func DefaultConfig(seed uint64) Config {
	return defaultConfig(seed, false)
}

// SealedConfig is DefaultConfig for a sealed database (Config.Sealed):
// pruning never goes with wipes, since a sealed database has no repair
// pushes (the relay cannot merge envelopes; docs/SECURITY.md), so seeds s
// with s/2 odd prune and leave the relay's log alone.
func SealedConfig(seed uint64) Config {
	return defaultConfig(seed, true)
}

func defaultConfig(seed uint64, sealed bool) Config {
	without := map[string]bool{"prune": true}
	if seed/2%2 == 1 {
		without = map[string]bool{}
		if sealed {
			without = map[string]bool{"relay.restore_old": true, "relay.wipe": true}
		}
	}
	return Config{
		Seed: seed, Replicas: 3, Ops: 2000, Faults: true,
		Retention: 6 * time.Hour, MaxMessageSize: 64 << 10, PageChanges: 20,
		SnapshotChunkRows: 7, MaxChangesPerApply: 200, PushLimit: 30,
		Without:      without,
		Relays:       1 + boolInt(seed%3 == 0),
		Resurrection: seed%2 == 1,
		Sealed:       sealed,
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Result is what a run did and found.
type Result struct {
	Seed   uint64
	Ops    int            // workload operations and faults driven
	Faults map[string]int // faults injected, by kind
	// Migrations counts the schema steps of the workload: "schema.vN" a
	// device reaching version N, and each drop a device made
	// ("drop_index", "drop_column", "drop_table"; one it found dropped
	// already is not counted), and "alter_column" each alter a device
	// made (notNull or the default of items.a or items.b), "rename_table"
	// each rename of pairs a device made.
	Migrations map[string]int
	Err        error         // the first broken invariant, nil if none
	Hash       [32]byte      // of the full trace: deliveries, timers, steps
	Steps      []string      // the driver's steps (Config.Trace)
	Sim        time.Duration // simulated time the run took
	Watch      []string      // the changes of Config.Watch's row and Config.Log's lines, in order
}

// Sim is one simulated system: devices, relays, the network and the clock.
type Sim struct {
	cfg   Config
	seed  uint64
	rng   *rand.Rand // the driver's: used on the simulator's goroutine only
	sched sched

	mu     sync.Mutex // guards the fields below, written from any goroutine
	counts map[string]int
	migr   map[string]int // Result.Migrations
	hash   hash.Hash
	nf     netFaults

	reps   []*replica
	relays []*relayNode // Config.Relays of them
	// shared is the storage of several relays (nil: one relay, over its
	// own disk), sharedBackup an older copy of its database, for
	// restores; sharedDown says it is unreachable now (shared.down), until
	// the event numbered downSeq brings it back.
	shared       *memshared.Storage
	sharedBackup *memkv.Store
	sharedDown   bool
	downSeq      uint64
	notes        map[[2]int]*notePair // the relays' notifications in flight, by pair (guarded by mu)

	oracle     *engine.Engine    // every acknowledged local transaction, merged
	watched    map[string]string // Config.Watch: the row's last line per replica
	watchLog   []string
	oracleDisk *memkv.Store
	oracleWall *wallClock
	// beyond: rows the oracle held tombstoned below the relay's newest
	// horizon at quiescence (prune), left out of the oracle comparison.
	beyond map[string]bool
	steps  []string
	step   int
	err    error
	msgs   map[int]int // frames per simulated second, recent seconds
}

// Run runs cfg's simulation inside a synctest bubble (synctest.Wait tells
// when every goroutine of the system has settled after an event) and
// returns its result.
func Run(t *testing.T, cfg Config) Result {
	var res Result
	synctest.Test(t, func(*testing.T) { res = run(cfg) })
	return res
}

// Shrink returns the shortest prefix of cfg's driver steps (Config.Prefix)
// that still fails, found by bisection over prefixes, and that run's
// result, traced. It assumes cfg's full run fails.
func Shrink(t *testing.T, cfg Config) (Config, Result) {
	lo, hi := 0, cfg.Ops // the prefix lo passes (0: nothing), hi fails
	var last Result
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		c := cfg
		c.Prefix = mid
		if res := Run(t, c); res.Err != nil {
			hi, last = mid, res
		} else {
			lo = mid
		}
	}
	cfg.Prefix, cfg.Trace = hi, true
	last = Run(t, cfg)
	return cfg, last
}
