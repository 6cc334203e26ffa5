package client

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Options configure New. The zero value is the production configuration:
// system time, the timing constants of this package, the wire's default
// frame size limit.
type Options struct {
	// Clock supplies time for every timer; nil means SystemClock.
	Clock Clock
	// Dial opens the connection to the relay; nil means the platform's
	// WebSocket (github.com/coder/websocket natively, the browser's
	// WebSocket in js/wasm). Connect's URL check applies either way.
	Dial DialFunc
	// Compression is the permessage-deflate mode (RFC 7692) the native
	// WebSocket offers the relay when Dial is nil: the zero value,
	// CompressionDefault, offers no context takeover; CompressionOff
	// offers none. The relay decides (relay.Config.Compression). A
	// browser's WebSocket always offers permessage-deflate on its own, so
	// in js/wasm it has no effect.
	Compression Compression
	// Rand returns the jitter factor of a reconnect delay, in [0, 1); nil
	// means math/rand/v2's Float64. It is called from the client's
	// goroutine only.
	Rand func() float64
	// Logger receives debug logs of the connection's life and warnings
	// for fatal errors; nil means warnings through the standard log
	// package and no debug logs (what slog.Default() does by default).
	// A *slog.Logger implements it.
	Logger Logger

	// PushLimit bounds the changes (facts, migrations included) of one
	// apply_changes, at transaction granularity (a larger transaction
	// goes alone); 0 means engine.DefaultChangesLimit (1000).
	PushLimit int
	// MaxMessageSize is the largest frame, in bytes, the client accepts
	// from the relay and sends to it; 0 means wire.DefaultMaxMessageSize
	// (16 MiB). It must not exceed the relay's limit.
	MaxMessageSize int64

	// DebounceWindow, MaxWait, PingInterval, HandshakeTimeout,
	// SnapshotStallTimeout and RequestTimeout override the Default…
	// constants of the same names; BackoffBase and BackoffMax override
	// the constants of those names. Zero means the constant.
	DebounceWindow       time.Duration
	MaxWait              time.Duration
	PingInterval         time.Duration
	HandshakeTimeout     time.Duration
	SnapshotStallTimeout time.Duration
	RequestTimeout       time.Duration
	BackoffBase          time.Duration
	BackoffMax           time.Duration

	// Sealer, when not nil, makes the client sync a sealed database
	// (docs/design.md § Sealed databases; "Sealed databases" in the
	// package documentation): its handshake says sealed, every ChangeSet
	// it pushes is sealed into an envelope by Sealer (natively a
	// *seal.Keyring: the current key and older ones), and every one it
	// receives is opened before its apply transaction. nil: a plain
	// database. The mode must match the database's on the relay (else
	// SEALED_MISMATCH, fatal). SetSealer replaces it later. Replica
	// neither sends nor stores keys.
	Sealer seal.Sealer
	// CheckpointChanges and CheckpointInterval decide when a sealed
	// client uploads a sealed checkpoint (see "Sealed checkpoints"): once
	// its cursor is CheckpointChanges ChangeSets past the relay's newest
	// checkpoint, or past it at all once that one is CheckpointInterval
	// old. Zero means DefaultCheckpointChanges (1000) and
	// DefaultCheckpointInterval (24 h); a negative CheckpointChanges
	// turns uploads off.
	CheckpointChanges  int
	CheckpointInterval time.Duration
}

func (o *Options) fill() {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Dial == nil {
		o.Dial = dialer(o.Compression)
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = stdLogger{}
	}
	if o.CheckpointChanges == 0 {
		o.CheckpointChanges = DefaultCheckpointChanges
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.PushLimit <= 0 {
		o.PushLimit = engine.DefaultChangesLimit
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = wire.DefaultMaxMessageSize
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.DebounceWindow, DefaultDebounceWindow)
	def(&o.MaxWait, DefaultMaxWait)
	def(&o.PingInterval, DefaultPingInterval)
	def(&o.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&o.SnapshotStallTimeout, DefaultSnapshotStallTimeout)
	def(&o.RequestTimeout, DefaultRequestTimeout)
	def(&o.BackoffBase, BackoffBase)
	def(&o.BackoffMax, BackoffMax)
}

// Client syncs one engine.Engine with one relay database over a WebSocket.
// It is safe for concurrent use. Every method returns promptly except
// Disconnect and Close, which wait for the connection to close; none may
// be called from inside a JavaScript callback that must not block (see
// "The browser" in the package documentation).
type Client struct {
	db    *engine.Engine
	opts  Options
	clock Clock
	log   Logger
	disp  *dispatcher

	kick    chan struct{} // cap 1: a local change happened
	snapReq chan struct{} // cap 1: RequestSnapshot was called
	unsub   func()
	reqSeq  atomic.Uint64 // last requestId number used

	// snapFails counts consecutive failed snapshot transfers; snapBest
	// is the furthest any attempt at the current snapshot got. Only the
	// run goroutine (one at a time) touches them.
	snapFails int
	// pushFailing: the last push failed (refused for a reason that may
	// pass, CLOCK_DRIFT, APPLY_CHANGES_ERROR, or answered wrongly) and no
	// push was acknowledged since: no session shows Synced while a push
	// is in flight or waits for its retry. Run goroutine only.
	pushFailing bool
	snapBest    snapMark

	wg       sync.WaitGroup // run goroutines and the dispatcher
	dispStop chan struct{}

	mu       sync.Mutex
	status   Status
	closed   bool
	target   *target            // of the last Connect; nil before
	cancel   context.CancelFunc // of the current run; nil when none
	done     chan struct{}      // closed when the current run ends
	wantSnap bool               // RequestSnapshot not yet served
	snapBusy bool               // a snapshot transfer is in flight
	sealer   seal.Sealer        // Options.Sealer, or SetSealer's
	// refusedCkpt is the last sealed checkpoint this client refused (it
	// did not verify); the run goroutine's.
	refusedCkpt string
	sentNS      string    // namespace of sent (for Pending)
	sent        model.HLC // the sent watermark of sentNS
	conn        socket    // the current session's socket; nil when none
}

type target struct {
	// url keys what the replica keeps per relay (its log hint and sent
	// watermark: keys.go): the first relay URL of the Connect.
	url, databaseID, token string
	// urls are every relay URL of the Connect, "\n"-joined (ConnectAny;
	// just url for Connect); dial is the one a session dials.
	urls, dial string
}

// dialURL returns the URL a session dials.
func (t target) dialURL() string {
	if t.dial != "" {
		return t.dial
	}
	return t.url
}

// New returns a client for db, disconnected. It subscribes to db's
// LocalChange events (to schedule pushes) and starts the goroutine that
// delivers Events; Close releases both. db must stay open until Close.
func New(db *engine.Engine, opts Options) *Client {
	opts.fill()
	c := &Client{
		db:       db,
		opts:     opts,
		clock:    opts.Clock,
		log:      opts.Logger,
		disp:     newDispatcher(),
		kick:     make(chan struct{}, 1),
		snapReq:  make(chan struct{}, 1),
		dispStop: make(chan struct{}),
		sealer:   opts.Sealer,
	}
	c.unsub = db.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.LocalChange {
			c.Notify()
		}
	})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.disp.run(c.dispStop)
	}()
	return c
}

// Connect starts syncing with the database databaseID of the relay at url
// (ws://, wss://, or http(s):// which is rewritten), presenting token (""
// for none), and returns at once: a goroutine dials, handshakes, syncs and
// reconnects with backoff until Disconnect, Close, a fatal error, or the
// next Connect with another target, which replaces this one. A Connect
// with the target (url, databaseID and token) of the running one is a
// no-op: the session goes on undisturbed (in the Error state it starts
// anew). Follow the progress with State and Subscribe.
//
// Errors: ErrClosed after Close; an error when url is not an absolute
// ws, wss, http or https URL, databaseID fails wire.ValidDatabaseID, or
// Options.Compression is none of the Compression constants. Connection
// failures are not returned here: they show in the state.
func (c *Client) Connect(url, databaseID, token string) error {
	return c.ConnectAny([]string{url}, databaseID, token)
}

// ConnectAny is Connect to one database served by several relays (relay
// processes sharing one PostgreSQL database: relay/doc.go § Several
// relays): a session dials urls[0]; when a connection attempt fails
// before the handshake is acknowledged, the next one dials the next URL,
// round robin, with the usual backoff between attempts. Positions carry
// over: the relays share one log. What the replica keeps per relay is
// kept under urls[0]. Behind a load balancer, pass its one URL to Connect
// instead.
//
// Errors: those of Connect, for any of urls; an error for no URL.
func (c *Client) ConnectAny(urls []string, databaseID, token string) error {
	if len(urls) == 0 {
		return errors.New("client: no relay URL")
	}
	for _, u := range urls {
		if err := checkRelayURL(u); err != nil {
			return err
		}
		if strings.Contains(u, "\n") {
			return badURL(u)
		}
	}
	url := urls[0]
	if m := c.opts.Compression; m < CompressionDefault || m > CompressionContextTakeover {
		return fmt.Errorf("client: invalid Options.Compression %d (want CompressionDefault, CompressionOff, CompressionNoContextTakeover or CompressionContextTakeover)", int(m))
	}
	if !wire.ValidDatabaseID(databaseID) {
		return fmt.Errorf("client: invalid database id %q (want 1 to %d of [A-Za-z0-9_.:-])", databaseID, wire.MaxDatabaseIDLength)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	t := target{url: url, databaseID: databaseID, token: token, urls: strings.Join(urls, "\n")}
	if c.cancel != nil && c.status.State != Error && c.target != nil && *c.target == t {
		// The same target, still running (connected, connecting or
		// waiting to reconnect): nothing to replace. Several browser tabs
		// call Connect with the target each page knows; redialing would
		// drop the session and interrupt a snapshot.
		return nil
	}
	if c.cancel != nil {
		c.cancel()
	}
	prev := c.done
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if c.target == nil || c.target.url != url || c.target.databaseID != databaseID {
		c.sentNS = ""
	}
	c.target, c.cancel, c.done = &t, cancel, done
	c.wg.Add(1)
	go c.run(ctx, t, prev, done)
	return nil
}

// Disconnect stops syncing: it stops reconnecting, closes the socket (a
// normal closure) and waits until the connection's goroutines have ended;
// then the state is Disconnected. The persisted cursor and sent watermark
// stay, so the next Connect resumes where this one stopped. A snapshot
// being applied stays resumable (its checkpoint is kept). Calling it when
// not connected is a no-op (it clears a lasting Error state).
func (c *Client) Disconnect() {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if done != nil {
		<-done
	}
	c.mu.Lock()
	if c.cancel == nil {
		c.setStatusLocked(Status{State: Disconnected})
	}
	c.mu.Unlock()
}

// Close disconnects, stops listening to the engine, delivers the events
// still queued and waits for every goroutine the client started to end.
// Later Connect calls return ErrClosed. It is idempotent. It must not be
// called from a Subscribe callback (it waits for the goroutine running
// it).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.Disconnect()
	c.unsub()
	close(c.dispStop)
	c.wg.Wait()
	return nil
}

// State returns the current status.
func (c *Client) State() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	if st.Snapshot != nil {
		p := *st.Snapshot
		st.Snapshot = &p
	}
	return st
}

// Subscribe registers fn for every Event and returns a function that
// removes it. Events are delivered in order on one goroutine owned by the
// client, never on the caller's; fn may call any method but Close, and
// should return quickly (later events wait for it).
func (c *Client) Subscribe(fn func(Event)) (unsubscribe func()) {
	return c.disp.subscribe(fn)
}

// Notify tells the client that a local change was committed that its
// engine did not report: another engine over the same store wrote (another
// browser tab over the same IndexedDB database). The change is pushed like
// one of this engine's own (see "Pushing"). It never blocks; calls made
// while disconnected are covered by the push every session starts with.
func (c *Client) Notify() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// RequestSnapshot asks for a full snapshot from the relay, merged into the
// replica (nothing local is lost), then a pull from the snapshot's cursor.
// When the replica holds its own cursor in the relay's log it pulls from
// that cursor first and asks for the snapshot once caught up: a cursor
// past the relay's tombstone horizon is answered SNAPSHOT_REQUIRED, and
// that snapshot replaces the rows the relay no longer holds (deleted
// meanwhile, their tombstones pruned; doc.go, "Snapshots"), as on any
// reconnect. It returns at once. While a transfer is in flight, further calls join
// it: exactly one get_snapshot goes on the wire. When not connected, the
// request waits for the next handshake.
func (c *Client) RequestSnapshot() {
	c.mu.Lock()
	if c.snapBusy {
		c.mu.Unlock()
		return
	}
	c.wantSnap = true
	c.mu.Unlock()
	select {
	case c.snapReq <- struct{}{}:
	default:
	}
}

// takeSnapshotRequest reports and clears a pending RequestSnapshot.
func (c *Client) takeSnapshotRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wantSnap
	c.wantSnap = false
	return w
}

// pendingPage is the page size Pending reads the change log with.
const pendingPage = 10000

// Pending returns the number of local transactions (ChangeSets of this
// replica's own live facts, schema migrations included) that the relay has
// not acknowledged: those above the sent watermark of the relay database
// last connected to (all of them before the first Connect). It reads the
// change log, at a cost proportional to the result.
func (c *Client) Pending() (int, error) {
	since, err := c.sentWatermark()
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		sets, err := c.db.ChangesSince(since, pendingPage, engine.ChangesFilter{OnlyLocal: true})
		if err != nil {
			return n, err
		}
		facts := 0
		for i := range sets {
			facts += len(sets[i].Changes) + len(sets[i].Migrations)
		}
		n += len(sets)
		if len(sets) == 0 || facts < pendingPage {
			return n, nil
		}
		since = sets[len(sets)-1].HLC
	}
}

// PendingCount is Pending's cheap form, for a count shown after every
// commit: the local transactions above the same watermark counted from the
// keys of the change log (engine.CountLocalTransactions), without reading
// the rows they wrote, so its cost does not grow with their size. It can
// exceed Pending by the transactions all of whose facts were superseded
// since (Pending skips those; they are never pushed), until a later push
// moves the watermark past them.
func (c *Client) PendingCount() (int, error) {
	since, err := c.sentWatermark()
	if err != nil {
		return 0, err
	}
	return c.db.CountLocalTransactions(since)
}

// PendingCount returns what Client.PendingCount would for a client of db
// whose last Connect named url and databaseID, without one: the local
// transactions above the sent watermark stored for the relay last seen
// there (all of them when url is "" or nothing is stored). For a page
// that counts unsent writes while it has no client (offline, or in a
// browser tab that does not sync).
func PendingCount(db *engine.Engine, url, databaseID string) (int, error) {
	since, err := storedSent(db, url, databaseID)
	if err != nil {
		return 0, err
	}
	return db.CountLocalTransactions(since)
}

// Pushed reports whether the relay at url (the first of ConnectAny's
// URLs) has been sent every local transaction up to the one whose base
// HLC is upTo (engine.LastLocalTransaction): none at or below it is left
// above the sent watermark stored for its database databaseID. A
// transaction all of whose facts were superseded since needs no push and
// does not hold it back. Sent means acknowledged, except for a
// transaction the relay refused for its content (APPLY_CHANGES_REFUSED,
// reported as a RefusedError), which is passed over and not retried. It
// reads the stored watermark, so it answers in any tab of a browser
// profile, not only in the one whose Client syncs; the cost is one
// ChangesSince of one transaction.
func Pushed(db *engine.Engine, url, databaseID string, upTo model.HLC) (bool, error) {
	since, err := storedSent(db, url, databaseID)
	if err != nil {
		return false, err
	}
	if upTo.Base().Less(since.Base()) || upTo.Base() == since.Base() {
		return true, nil
	}
	sets, err := db.ChangesSince(since, 1, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		return false, err
	}
	return len(sets) == 0 || upTo.Base().Less(sets[0].HLC.Base()), nil
}

// SentWatermark returns the sent watermark stored for the relay at url
// (the first of ConnectAny's URLs) and its database databaseID: every
// local transaction at or below it has been sent (acknowledged, or
// refused and passed over); the zero HLC when nothing is stored (never
// synced there, or url ""). Like Pushed it reads the store, so any tab
// can ask. engine.Query.PendingAbove takes it.
func SentWatermark(db *engine.Engine, url, databaseID string) (model.HLC, error) {
	return storedSent(db, url, databaseID)
}

// sentWatermark returns the sent watermark for Pending: the session's, or
// the stored one of the relay last seen at the Connect target.
func (c *Client) sentWatermark() (model.HLC, error) {
	c.mu.Lock()
	ns, sent, t := c.sentNS, c.sent, c.target
	c.mu.Unlock()
	if ns != "" {
		return sent, nil
	}
	if t == nil {
		return model.HLC{}, nil
	}
	return storedSent(c.db, t.url, t.databaseID)
}

// storedSent returns the sent watermark stored for the relay last seen at
// url and databaseID (zero if none, or url is "").
func storedSent(db *engine.Engine, url, databaseID string) (model.HLC, error) {
	if url == "" {
		return model.HLC{}, nil
	}
	b, err := db.State(relayKey(url, databaseID))
	if err != nil || b == nil {
		return model.HLC{}, err
	}
	return loadSent(db, string(b))
}

// setSent records the session's sent watermark for Pending.
func (c *Client) setSent(ns string, h model.HLC) {
	c.mu.Lock()
	c.sentNS, c.sent = ns, h
	c.mu.Unlock()
}

// peekRequestID returns the next requestId, "apply-N", N counting up from
// 1 over the client's life (across sessions, so an ack from an old
// connection never matches); takeRequestID uses it up once the push is
// sent. Only one session, on one goroutine, pushes at a time.
func (c *Client) peekRequestID() string {
	return "apply-" + strconv.FormatUint(c.reqSeq.Load()+1, 10)
}

func (c *Client) takeRequestID() { c.reqSeq.Add(1) }

// setStatus replaces the status, posting StateChanged unless the state is
// the same, without an error, with the same retry time.
func (c *Client) setStatus(st Status) {
	c.mu.Lock()
	c.setStatusLocked(st)
	c.mu.Unlock()
}

func (c *Client) setStatusLocked(st Status) {
	old := c.status
	c.status = st
	if old.State != st.State || old.Err != nil || st.Err != nil || !old.Retry.Equal(st.Retry) {
		c.disp.post(Event{Type: StateChanged, Status: c.status})
	}
}

// setState moves to state s, keeping no error, retry or progress.
func (c *Client) setState(s State) { c.setStatus(Status{State: s}) }

// showState moves a connected session's state to s (Syncing or Synced)
// unless it is s already.
func (c *Client) showState(s State) {
	c.mu.Lock()
	if c.status.State != s {
		c.setStatusLocked(Status{State: s})
	}
	c.mu.Unlock()
}

// setProgress records snapshot progress and posts it; nil means no
// transfer is in flight any more.
func (c *Client) setProgress(p *engine.SnapshotProgress) {
	c.mu.Lock()
	c.status.Snapshot = p
	c.snapBusy = p != nil
	if p != nil {
		c.disp.post(Event{Type: SnapshotProgressed, Status: c.status, Progress: *p})
	}
	c.mu.Unlock()
}

// post queues an event with the current status.
func (c *Client) post(ev Event) {
	c.mu.Lock()
	ev.Status = c.status
	c.disp.post(ev)
	c.mu.Unlock()
}

// report posts a transient error.
func (c *Client) report(err error) {
	c.log.Debug("replica sync: transient error", "err", err)
	c.post(Event{Type: ErrorReported, Err: err})
}

// run is the connection loop of one Connect: sessions separated by
// backoff, until ctx ends or a session ends fatally.
func (c *Client) run(ctx context.Context, t target, prev <-chan struct{}, done chan struct{}) {
	defer c.wg.Done()
	defer close(done)
	if prev != nil {
		<-prev // the replaced run is cancelled; it ends promptly
	}
	attempt := 0
	protoFails := 0 // consecutive sessions that ended with ErrProtocol
	urls := strings.Split(t.urls, "\n")
	next := 0 // the index in urls the next session dials
	for {
		ts := t
		ts.dial = urls[next%len(urls)]
		o := c.session(ctx, ts)
		if ctx.Err() != nil {
			c.setState(Disconnected)
			return
		}
		if errors.Is(o.err, engine.ErrClosed) {
			o.err = &fatalError{o.err} // the engine was closed under the client
		}
		var f *fatalError
		if errors.As(o.err, &f) {
			c.log.Warn("replica sync: stopped by a fatal error", "url", t.url, "database", t.databaseID, "err", f.err)
			c.setStatus(Status{State: Error, Err: f.err})
			return
		}
		if o.acked && !o.rateLimited {
			attempt = 0
		}
		if !o.acked {
			// Unreachable, or refused before the handshake: the next
			// relay of ConnectAny's.
			next++
		}
		// A relay that breaks the protocol after every handshake would
		// otherwise be redialed (and re-pulled from) once a second.
		if errors.Is(o.err, ErrProtocol) {
			protoFails++
			attempt = max(attempt, protoFails)
		} else {
			protoFails = 0
		}
		if o.snapshotFailed {
			c.snapFails++
			attempt = max(attempt, c.snapFails)
		}
		d := backoff(attempt, c.opts.BackoffBase, c.opts.BackoffMax, c.opts.Rand())
		attempt++
		c.log.Debug("replica sync: session ended; reconnecting", "url", ts.dial, "database", t.databaseID, "err", o.err, "in", d)
		c.setStatus(Status{State: Disconnected, Err: o.err, Retry: c.clock.Now().Add(d)})
		tm := c.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			c.setState(Disconnected)
			return
		case <-tm.C():
		}
	}
}

// Logger is where the client logs. Args are alternating keys and values,
// as log/slog takes them; *slog.Logger implements it. (The client does not
// import log/slog: it would add ~100 KB to the browser build.)
type Logger interface {
	Debug(msg string, args ...any)
	Warn(msg string, args ...any)
}

// stdLogger writes warnings with the standard log package and drops debug
// logs.
type stdLogger struct{}

func (stdLogger) Debug(string, ...any) {}

func (stdLogger) Warn(msg string, args ...any) {
	for i := 0; i+1 < len(args); i += 2 {
		msg += fmt.Sprintf(" %v=%v", args[i], args[i+1])
	}
	log.Print("WARN " + msg)
}

// fatalError marks an error that ends the run without reconnecting.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }
