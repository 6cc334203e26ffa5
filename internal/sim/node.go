//go:build !js

package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
)

const (
	relayURL   = "ws://relay.sim/sync" // the first relay's
	databaseID = "simdb"
)

// Besides the versions, any device may alter the notNull or the default
// of items.a or items.b at any time (Sim.alter), and rename items, or
// pairs when it declares it (Sim.rename): its writes, drops and alters,
// and the other devices', then name the table by the current name they
// know (itemsName, pairsName), and now and then by its old name, as an app
// not updated yet would.
//
// schemaAt returns the declared schema of version v: versions 1–3 each add
// one migration kind (add_column, add_index, create_table, with a
// set_resurrection_policy when resurrect is set). Versions 4–6 declare
// version 3's schema and drop (dropAt): the index by_a, then the column
// c, then the table pairs; a device that reaches such a version drops the
// thing itself, and devices of older versions, which still write it, learn
// the drop by syncing.
func schemaAt(v int, resurrect bool) *model.Schema {
	items := model.TableDef{Name: "items", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText},
		{Name: "a", Type: model.KindInteger},
		{Name: "b", Type: model.KindText},
	}}
	if v >= 1 {
		items.Columns = append(items.Columns, model.ColumnDef{Name: "c", Type: model.KindReal})
	}
	if v >= 2 {
		items.Indexes = []model.IndexDef{{Name: "by_a", Columns: []string{"a"}}}
		// Declarations differ on a's default (Open records nothing for
		// it): a device's own default holds for its inserts until an
		// alter sets the default, and an alter of notNull alone leaves it
		// (the engine's per-attribute rule).
		items.Columns[1].HasDefault, items.Columns[1].Default = true, model.Int(1)
	}
	s := &model.Schema{Tables: []model.TableDef{items}}
	if v >= 3 {
		s.Tables = append(s.Tables, model.TableDef{Name: "pairs", Columns: []model.ColumnDef{
			{Name: "x", Type: model.KindInteger},
			{Name: "y", Type: model.KindText},
			{Name: "v", Type: model.KindText},
		}, PrimaryKey: []string{"x", "y"}})
		if resurrect {
			s.Tables[1].Resurrection = model.ResurrectionAllowed
		}
	}
	return s
}

const maxSchema = 6

// dropAt is the drop a device makes on reaching schema version v (0 for
// versions without one): it reports what it did, an error of the engine
// when the thing was dropped already (by a peer, learned by syncing) is
// not one.
func (r *replica) dropAt(v int) (string, error) {
	var err error
	var what string
	switch v {
	case 4:
		what, err = "drop_index items.by_a", r.eng.DropIndex(r.itemsName(), "by_a")
	case 5:
		what, err = "drop_column items.c", r.eng.DropColumn(r.itemsName(), "c")
	case 6:
		name := r.pairsName()
		if name == "" {
			return "drop_table pairs (dropped already: no such table)", nil
		}
		what, err = "drop_table "+name, r.eng.DropTable(name)
	default:
		return "", nil
	}
	if errors.Is(err, engine.ErrSchema) || errors.Is(err, engine.ErrUnknownTable) {
		return what + " (dropped already: " + err.Error() + ")", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", r.name, what, err)
	}
	return what, r.migrationsToOracle()
}

// pairsName returns the current name of r's pairs table (the table keyed
// by x and y: rename_table may have renamed it), "" when r has none.
func (r *replica) pairsName() string {
	return r.tableName(func(t *model.TableDef) bool { return len(t.PrimaryKey) == 2 })
}

// itemsName returns the current name of r's items table (keyed by id),
// "items" when r cannot tell (its engine is stopped).
func (r *replica) itemsName() string {
	if n := r.tableName(func(t *model.TableDef) bool { return len(t.PrimaryKey) == 1 }); n != "" {
		return n
	}
	return "items"
}

// tableName returns the name of the first table of r that is matches, "" if none.
func (r *replica) tableName(is func(*model.TableDef) bool) string {
	if r.eng == nil {
		return ""
	}
	sch, err := r.eng.Schema()
	if err != nil {
		return ""
	}
	for i := range sch.Tables {
		if is(&sch.Tables[i]) {
			return sch.Tables[i].Name
		}
	}
	return ""
}

// migrationsToOracle gives the oracle r's local transactions holding
// schema migrations (Open's, a drop's): acknowledged local transactions
// too. The oracle applies each once.
func (r *replica) migrationsToOracle() error {
	sets, err := r.eng.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		return fmt.Errorf("%s: reading its transactions: %w", r.name, err)
	}
	for _, cs := range sets {
		if len(cs.Migrations) > 0 {
			if _, err := r.sim.oracle.ApplyChanges([]model.ChangeSet{cs}); err != nil {
				return fmt.Errorf("oracle refused %s's migrations: %w", r.name, err)
			}
		}
	}
	return nil
}

// seeded is an io.Reader of pseudo-random bytes from the seed (site ids,
// snapshot ids).
type seeded struct{ r *rand.ChaCha8 }

func newSeeded(seed, stream uint64) io.Reader {
	var k [32]byte
	for i := range 8 {
		k[i] = byte(seed >> (8 * i))
		k[8+i] = byte(stream >> (8 * i))
	}
	return seeded{rand.NewChaCha8(k)}
}

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

// replica is one device: its disk survives crashes, its process (engine and
// client) does not.
type replica struct {
	sim    *Sim
	idx    int
	name   string
	disk   *memkv.Store
	store  *diskStore
	wall   *wallClock
	tm     *timers
	eng    *engine.Engine
	cl     *client.Client
	schema int
	// urls are the relays the client connects to (client.ConnectAny):
	// every relay's, starting with relay idx mod Config.Relays, so that
	// devices spread over the relays; the client moves to the next when
	// one is unreachable. Its sync state is kept under urls[0].
	urls   []string
	online bool
	dials  uint64
	runs   uint64
	ns     string
	cursor uint64
	// rollback: the relay's log was rolled back since the device last
	// synced; its cursor may move back once.
	rollback bool
	acked    int // local transactions committed
	// pruned is the tombstone horizon prune applied to the device for
	// relay log prunedNS (its client does not record it).
	pruned   uint64
	prunedNS string
}

// quiet is the logger of every node: the simulator reports what matters.
var quiet = slog.New(slog.DiscardHandler)

type nopLogger struct{}

// traceLogger records a replica's client log in Result.Watch, with the
// step and simulated time (Config.Log).
type traceLogger struct{ r *replica }

func (l traceLogger) Debug(m string, a ...any) { l.r.sim.logLine("debug", l.r.name, m, a) }
func (l traceLogger) Warn(m string, a ...any)  { l.r.sim.logLine("warn", l.r.name, m, a) }

// clientLogger is the logger of r's client: traceLogger when Config.Log
// names r.
func (r *replica) clientLogger() client.Logger {
	if r.sim.cfg.Log != "" && r.sim.cfg.Log == r.name {
		return traceLogger{r}
	}
	return nopLogger{}
}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Warn(string, ...any)  {}

// start opens the replica's engine over its disk and its client, and
// connects when online.
func (r *replica) start() error {
	r.runs++
	r.store = &diskStore{st: r.disk}
	eng, err := engine.Open(r.store, engine.Options{
		Schema: schemaAt(r.schema, r.sim.cfg.Resurrection), Clock: r.wall, Logger: nopLogger{},
		Retention: r.sim.cfg.Retention,
		Rand:      newSeeded(r.sim.seed, uint64(r.idx)<<32|r.runs),
	})
	if err != nil {
		return fmt.Errorf("%s: open: %w", r.name, err)
	}
	r.eng = eng
	// The schema migrations Open stamped are acknowledged local
	// transactions too: the oracle learns the resurrection policies.
	if err := r.migrationsToOracle(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(r.sim.seed, uint64(r.idx)<<32|r.runs|1<<63))
	opts := client.Options{
		Clock: r.tm, Rand: rng.Float64, Logger: r.clientLogger(), Dial: r.dial,
		MaxMessageSize: r.sim.cfg.MaxMessageSize, PushLimit: r.sim.cfg.PushLimit,
	}
	if r.sim.cfg.Sealed {
		if opts.Sealer, err = simKeyring(); err != nil {
			_ = eng.Close()
			return err
		}
		opts.CheckpointChanges = 15
	}
	r.cl = client.New(eng, opts)
	if r.online {
		return r.connect()
	}
	return nil
}

// connect connects r's client to its relays (urls).
func (r *replica) connect() error { return r.cl.ConnectAny(r.urls, databaseID, "") }

// simKeyring is the key of a sealed run's database (Config.Sealed).
func simKeyring() (*seal.Keyring, error) {
	k, err := seal.NewKey([]byte("replica simulator sealed key 32B"))
	if err != nil {
		return nil, err
	}
	return seal.NewKeyring(k)
}

// stop ends the process: crash makes its disk refuse everything first (no
// write of the dying process lands), then the client and engine close.
func (r *replica) stop(crash bool) {
	if r.cl == nil {
		return
	}
	if crash {
		r.store.dead.Store(true)
	}
	cl, eng := r.cl, r.eng
	r.sim.await(func() { _ = cl.Close() })
	_ = eng.Close()
	r.cl, r.eng = nil, nil
}

// dial is the client's Options.Dial: a link to the relay of url, open
// after a round trip, refused when that relay is down.
func (r *replica) dial(ctx context.Context, url string, _ []string, readLimit int64) (client.Socket, error) {
	var n *relayNode
	for _, x := range r.sim.relays {
		if x.url == url {
			n = x
		}
	}
	if n == nil {
		return nil, fmt.Errorf("sim: no relay at %s", url)
	}
	r.sim.mu.Lock()
	r.dials++
	id := uint64(r.idx+1)<<24 | r.dials
	r.sim.mu.Unlock()
	l := r.sim.newLink(id, fmt.Sprintf("%s#%d", r.name, r.dials))
	l.ends[0].limit = readLimit
	res := make(chan error, 1)
	lat := r.sim.latency(id)
	r.sim.sched.at(key{at: r.sim.sched.Now() + lat, kind: kindNet, owner: id << 1, seq: 0}, func() {
		if !n.accept(l) {
			res <- errors.New("sim: connection refused: relay down")
			return
		}
		r.sim.sched.at(key{at: r.sim.sched.Now() + lat, kind: kindNet, owner: id<<1 | 1, seq: 0}, func() { res <- nil })
	})
	select {
	case err := <-res:
		if err != nil {
			return nil, err
		}
		return clientSocket{l.ends[0]}, nil
	case <-ctx.Done():
		l.cut()
		return nil, ctx.Err()
	}
}

// relayNode is one relay process: the only one over its own disk (one
// memkv store for the simulated database), or one of Config.Relays over
// the shared storage (Sim.shared), through a view of its own.
type relayNode struct {
	sim  *Sim
	idx  int
	name string // "relay" when it is the only one, else "relay0", "relay1", …
	url  string
	// The only relay's disk and an older copy of it, for restores (nil
	// with shared storage: Sim.shared, Sim.sharedBackup).
	disk   *memkv.Store
	store  *diskStore
	backup *memkv.Store
	// view is this process's handle on the shared storage (nil: its own
	// disk); a new one per run, refusing everything once it crashed.
	view *sharedView
	// listen receives the notifications the other relays send this
	// process while its Listen runs (Sim.notify; guarded by Sim.mu).
	listen chan note
	wall   *wallClock
	tm     *timers
	srv    *relay.Server
	runs   uint64
	links  map[uint64]*link
}

func (n *relayNode) start() error {
	n.runs++
	n.links = map[uint64]*link{}
	cfg := n.sim.cfg
	rcfg := relay.Config{
		Auth: relay.AllowAll, Clock: n.wall, Timers: n.tm, Logger: quiet,
		Rand:      newSeeded(n.sim.seed, 1<<40|uint64(n.idx)<<32|n.runs),
		Retention: cfg.Retention, MaintenanceInterval: 1 << 62, DatabaseIdleClose: 1 << 62,
		MaxMessageSize: cfg.MaxMessageSize, PageChanges: cfg.PageChanges,
		SnapshotChunkRows: cfg.SnapshotChunkRows, MaxChangesPerApply: cfg.MaxChangesPerApply,
		FrameRate: 1 << 20, FrameBurst: 1 << 20,
	}
	if n.sim.shared != nil {
		n.view = &sharedView{v: n.sim.shared.Relay(), n: n}
		rcfg.Storage = n.view
	} else {
		n.store = &diskStore{st: n.disk}
		rcfg.OpenStore = func(string) (kv.Store, error) { return n.store, nil }
	}
	srv, err := relay.New(rcfg)
	if err != nil {
		return err
	}
	n.srv = srv
	return nil
}

// accept serves l if the relay is up.
func (n *relayNode) accept(l *link) bool {
	if n.srv == nil {
		return false
	}
	n.links[l.id] = l
	srv := n.srv
	go srv.ServeConn(relayConn{l.ends[1]}, l.name, nil)
	return true
}

// stop ends the relay: a crash cuts every connection and refuses storage
// first; a clean stop lets Close say goodbye.
func (n *relayNode) stop(crash bool) {
	if n.srv == nil {
		return
	}
	if crash {
		if n.view != nil {
			n.view.dead.Store(true)
		} else {
			n.store.dead.Store(true)
		}
		for _, l := range n.links {
			l.cut()
		}
	}
	srv := n.srv
	n.srv = nil
	n.sim.await(func() { _ = srv.Close() })
}
