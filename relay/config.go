//go:build !js

package relay

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/wire"
)

// DefaultMaxCheckpointBytes bounds one sealed checkpoint's envelopes
// (Config.MaxCheckpointBytes): 1 GiB.
const DefaultMaxCheckpointBytes = 1 << 30

// Defaults of the Config fields; cmd/relay uses them as its flag defaults.
const (
	DefaultAddr                = "127.0.0.1:8080"
	DefaultDataDir             = "data"
	DefaultWebDir              = "web"
	DefaultMaxChangesPerApply  = 100_000
	DefaultPageChanges         = 1000
	DefaultIdleTimeout         = 90 * time.Second
	DefaultWriteTimeout        = 10 * time.Second
	DefaultSendQueue           = 64
	DefaultMaintenanceInterval = time.Hour
	DefaultDatabaseIdleClose   = 5 * time.Minute
	DefaultShutdownTimeout     = 10 * time.Second
	DefaultAuthTimeout         = 10 * time.Second
	DefaultHandshakeTimeout    = 10 * time.Second
	DefaultMaxConnections      = 10_000
	DefaultFrameRate           = 500
	DefaultFrameBurst          = 1000
	DefaultByteRate            = 64 << 20
	DefaultByteBurst           = 128 << 20
	DefaultRateLimitGrace      = 10 * time.Second
)

// HandshakeFrameLimit is the largest frame, in bytes, the relay reads on a
// connection before its handshake is accepted (a handshake takes well under
// 1 KiB): until then a larger frame gets MESSAGE_TOO_LARGE, and one more
// than twice as large closes the connection with 1009, so that
// unauthenticated connections cannot make the relay buffer MaxMessageSize
// frames. After the handshake the limit is MaxMessageSize.
const HandshakeFrameLimit = 64 << 10

// Config configures a Server. The zero value of every field means its
// default (the Default constants above), except Auth, which must be set:
// use AllowAll for local development.
type Config struct {
	// DataDir is the directory holding one bbolt file per database
	// (created with mode 0700 if missing). Default "data". Unused when
	// OpenStore is set.
	DataDir string
	// WebDir is served at "/" (the demo app); "" serves nothing there.
	// Default: none (cmd/relay passes "web").
	WebDir string
	// Inspect serves GET /inspect/{database}: the newest entries of a
	// sealed database's log as stored (ciphertext and metadata; see
	// serveInspect), for the demo. Off by default; leave it off in
	// production. It asks Auth as a handshake would (the token of an
	// "Authorization: Bearer" header): under AllowAll anyone may ask.
	//
	// It also serves the replica inspector, GET /inspect?db=NAME (and its
	// /inspect.js and /inspect.css): a page that opens the browser's own
	// replica NAME at this origin and shows its rows with each cell's HLC
	// and writing site, tombstones, held changes, the change log, sync
	// cursors and conflicts (serveInspector). It reads nothing of the
	// relay's, but it is a development tool that lays a replica bare to
	// whoever sits at the browser, so it is off with the rest.
	Inspect bool

	// Auth decides which handshakes may use which database. Required:
	// AllowAll grants everything, Tokens checks a token per database.
	Auth Authenticator
	// AuthTimeout bounds one Authenticate call. Default 10 s.
	AuthTimeout time.Duration
	// HandshakeTimeout closes a connection that has not sent a valid
	// handshake this long after it was accepted (an error frame, then
	// status 1008 "handshake timeout"), pings or not. Default 10 s.
	HandshakeTimeout time.Duration
	// MaxConnections bounds the WebSocket connections open at once,
	// handshake done or not; an upgrade beyond it is answered with HTTP
	// 503. Default 10 000.
	MaxConnections int
	// OriginPatterns lists the extra origins (host patterns as in
	// websocket.AcceptOptions.OriginPatterns) whose pages may open /sync
	// from a browser; the relay's own origin and non-browser clients (no
	// Origin header) are always allowed. "*" allows every origin.
	OriginPatterns []string
	// Compression is the permessage-deflate mode (RFC 7692) the relay
	// accepts when a client offers it (browsers always do). Default
	// CompressionNoContextTakeover; CompressionOff declines. See
	// "Compression" in the package documentation.
	Compression Compression

	// MaxMessageSize is the largest frame, in bytes, the relay reads and
	// the largest it writes when paging changes. A larger frame is
	// answered with MESSAGE_TOO_LARGE and skipped; one more than twice as
	// large closes the connection with status 1009. Default
	// wire.DefaultMaxMessageSize (16 MiB).
	MaxMessageSize int64
	// MaxChangesPerApply bounds the changes plus schema migrations of one
	// apply_changes; a larger one is refused with APPLY_CHANGES_REFUSED.
	// Default 100 000.
	MaxChangesPerApply int
	// MaxCheckpointBytes bounds the envelope bytes of one sealed
	// checkpoint a device uploads (put_checkpoint); a larger upload is
	// refused with CHECKPOINT_REFUSED and nothing of it is kept. Default
	// DefaultMaxCheckpointBytes (1 GiB).
	MaxCheckpointBytes int64
	// PageChanges bounds the changes plus schema migrations of one
	// changes or push_changes frame, at ChangeSet granularity: a
	// ChangeSet larger than the bound travels alone. Default 1000.
	PageChanges int
	// SnapshotChunkRows bounds the rows of one snapshot rows chunk.
	// Default engine.DefaultSnapshotChunkRows (1000).
	SnapshotChunkRows int
	// SnapshotChunkBytes bounds the encoded size, in bytes, of the rows of
	// one snapshot rows chunk (wire.SnapshotRowSize); a row larger on its
	// own travels in parts, down to one cell a frame (see "Snapshots" in
	// the package documentation). At most MaxMessageSize minus
	// wire.MaxRowsChunkOverhead. Default engine.DefaultSnapshotChunkBytes
	// (4 MiB), or that maximum when MaxMessageSize is below 4 MiB.
	SnapshotChunkBytes int

	// FrameRate is the sustained number of frames per second a connection
	// may send (WebSocket pings included), with bursts of FrameBurst
	// frames: a token bucket (golang.org/x/time/rate). A connection over
	// its rate is slowed: the relay stops reading it until the bucket
	// allows the next frame, so TCP pushes back on the sender and it costs
	// the relay nothing meanwhile. One that stays over its rate (or
	// ByteRate) for RateLimitGrace is sent RATE_LIMITED and closed with
	// status 1008. The Replica client keeps one pull and one push in
	// flight, so it stays far below the default. Default 500 frames/s,
	// burst 1000.
	FrameRate  int
	FrameBurst int
	// ByteRate is the sustained number of frame payload bytes per second a
	// connection may send, with bursts of ByteBurst bytes; slowed and
	// closed as FrameRate. ByteBurst must be at least MaxMessageSize (a
	// frame's bytes are taken at once). Default 64 MiB/s, burst 128 MiB or
	// twice MaxMessageSize, whichever is larger.
	ByteRate  int64
	ByteBurst int64
	// RateLimitGrace is how long a connection may stay over its rate
	// before it is closed with RATE_LIMITED: the count starts at the first
	// frame that has to wait for a bucket and ends when the connection
	// sends slowly enough for both buckets to refill to half their burst;
	// a frame that has to wait after RateLimitGrace of it closes the
	// connection. Default 10 s.
	RateLimitGrace time.Duration

	// IdleTimeout closes a connection (status 1001, "idle timeout") that
	// sent nothing, not even a ping, for this long while no request of it
	// was being served. Clients ping every 30 s. Default 90 s.
	IdleTimeout time.Duration
	// WriteTimeout bounds the write of one frame; a connection that
	// cannot take a frame for this long is closed. Default 10 s.
	WriteTimeout time.Duration
	// SendQueue is the number of frames queued per connection. Replies
	// wait for room; a push_changes that finds the queue full closes the
	// connection (status 1013) so that the client reconnects and pulls
	// from its cursor instead of stalling the database. Default 64.
	SendQueue int

	// Retention is how long arrival-log entries (by arrival time) and
	// tombstones (by HLC) are kept. A client whose cursor is older than
	// the retained log must bootstrap from a snapshot
	// (SNAPSHOT_REQUIRED). Default engine.DefaultRetention (30 days).
	Retention time.Duration
	// MaintenanceInterval is the period of the maintenance loop that
	// prunes every open database. Default 1 h.
	MaintenanceInterval time.Duration
	// DatabaseIdleClose closes a database file this long after its last
	// connection left. Default 5 min.
	DatabaseIdleClose time.Duration
	// ShutdownTimeout bounds how long Close waits for connections to
	// flush their last frames and acknowledge the close; after it they
	// are cut. Default 10 s.
	ShutdownTimeout time.Duration

	// NoSync skips fsync on bbolt commits: a crash of the operating
	// system can then lose acknowledged changes. Tests and benchmarks
	// only.
	NoSync bool
	// Clock supplies wall time in ms (arrival times, retention, the
	// engines' clocks and drift checks). Default engine.SystemClock.
	Clock engine.Clock
	// Timers supplies the connections' timers (idle timeout, handshake
	// deadline, rate-limit waits, the shutdown deadline), the background
	// loop's (MaintenanceInterval, the idle-database sweep) and the times
	// they are measured from. Default SystemTimers.
	Timers Timers
	// OpenStore opens the store of database id (it must hold
	// StoreBuckets); the relay closes it when it closes the database,
	// also when the database has been idle for DatabaseIdleClose, and
	// calls OpenStore again at the database's next connection. Each call
	// must therefore return a store that holds what the last one did: a
	// memkv.Store loses its data on Close, so an OpenStore keeping stores
	// in memory must hand out a store whose Close keeps them, or disable
	// the idle close (the simulator sets DatabaseIdleClose beyond its
	// run). Default: the bbolt
	// file of id under DataDir (NoSync applies). With OpenStore set,
	// DataDir is neither created nor locked: the caller keeps two relays
	// off one store. (Not encoded as JSON: a func has no JSON form.)
	OpenStore func(id string) (kv.Store, error) `json:"-"`
	// Storage holds the databases instead of DataDir's bbolt files (and
	// instead of OpenStore): relay/pgstore's PostgreSQL, which several
	// relay processes share (a SharedStorage: storage.go). The relay
	// does not close it. (Not encoded as JSON.)
	Storage Storage `json:"-"`
	// Rand is the source of the databases' server site ids and snapshot
	// ids (engine.Options.Rand); nil means crypto/rand.
	Rand io.Reader
	// Logger receives the relay's logs. Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with zero fields replaced by their defaults, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Auth == nil {
		return c, errors.New("relay: Config.Auth is required (AllowAll for local development, Tokens for a token per database)")
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if err := c.defaultCounts(); err != nil {
		return c, err
	}
	if err := c.defaultSizes(); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = engine.SystemClock{}
	}
	if c.Timers == nil {
		c.Timers = SystemTimers{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// defaultCounts fills the zero durations and counts of c with their
// defaults; a negative one is an error naming the field.
func (c *Config) defaultCounts() error {
	if c.Compression < CompressionDefault || c.Compression > CompressionContextTakeover {
		return fmt.Errorf("relay: Config.Compression %d is not a mode", int(c.Compression))
	}
	if c.MaxCheckpointBytes < 0 {
		return fmt.Errorf("relay: Config.MaxCheckpointBytes is negative (%d)", c.MaxCheckpointBytes)
	}
	if c.MaxCheckpointBytes == 0 {
		c.MaxCheckpointBytes = DefaultMaxCheckpointBytes
	}
	for _, f := range []struct {
		v    *time.Duration
		d    time.Duration
		name string
	}{
		{&c.AuthTimeout, DefaultAuthTimeout, "AuthTimeout"},
		{&c.HandshakeTimeout, DefaultHandshakeTimeout, "HandshakeTimeout"},
		{&c.IdleTimeout, DefaultIdleTimeout, "IdleTimeout"},
		{&c.WriteTimeout, DefaultWriteTimeout, "WriteTimeout"},
		{&c.Retention, engine.DefaultRetention, "Retention"},
		{&c.MaintenanceInterval, DefaultMaintenanceInterval, "MaintenanceInterval"},
		{&c.DatabaseIdleClose, DefaultDatabaseIdleClose, "DatabaseIdleClose"},
		{&c.ShutdownTimeout, DefaultShutdownTimeout, "ShutdownTimeout"},
		{&c.RateLimitGrace, DefaultRateLimitGrace, "RateLimitGrace"},
	} {
		if *f.v < 0 {
			return fmt.Errorf("relay: Config.%s is negative (%v)", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	for _, f := range []struct {
		v    *int
		d    int
		name string
	}{
		{&c.MaxChangesPerApply, DefaultMaxChangesPerApply, "MaxChangesPerApply"},
		{&c.PageChanges, DefaultPageChanges, "PageChanges"},
		{&c.SnapshotChunkRows, engine.DefaultSnapshotChunkRows, "SnapshotChunkRows"},
		{&c.SendQueue, DefaultSendQueue, "SendQueue"},
		{&c.MaxConnections, DefaultMaxConnections, "MaxConnections"},
		{&c.FrameRate, DefaultFrameRate, "FrameRate"},
		{&c.FrameBurst, DefaultFrameBurst, "FrameBurst"},
	} {
		if *f.v < 0 {
			return fmt.Errorf("relay: Config.%s is negative (%d)", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	return nil
}

// defaultSizes fills and checks the byte sizes of c, which depend on each
// other: MaxMessageSize first, then ByteBurst and SnapshotChunkBytes, which
// must let a frame of that size through.
func (c *Config) defaultSizes() error {
	switch {
	case c.MaxMessageSize < 0:
		return fmt.Errorf("relay: Config.MaxMessageSize is negative (%d)", c.MaxMessageSize)
	case c.MaxMessageSize == 0:
		c.MaxMessageSize = wire.DefaultMaxMessageSize
	case c.MaxMessageSize < minMessageSize:
		return fmt.Errorf("relay: Config.MaxMessageSize %d is below the minimum %d bytes", c.MaxMessageSize, minMessageSize)
	case c.MaxMessageSize > maxMessageSize:
		return fmt.Errorf("relay: Config.MaxMessageSize %d is above the maximum %d bytes", c.MaxMessageSize, maxMessageSize)
	}
	switch {
	case c.ByteRate < 0:
		return fmt.Errorf("relay: Config.ByteRate is negative (%d)", c.ByteRate)
	case c.ByteRate == 0:
		c.ByteRate = DefaultByteRate
	}
	switch {
	case c.ByteBurst < 0:
		return fmt.Errorf("relay: Config.ByteBurst is negative (%d)", c.ByteBurst)
	case c.ByteBurst == 0:
		c.ByteBurst = max(DefaultByteBurst, 2*c.MaxMessageSize)
	case c.ByteBurst < c.MaxMessageSize:
		return fmt.Errorf("relay: Config.ByteBurst %d is below MaxMessageSize %d: a frame of the largest size could never be read", c.ByteBurst, c.MaxMessageSize)
	}
	maxChunk := int(c.MaxMessageSize) - wire.MaxRowsChunkOverhead
	switch {
	case c.SnapshotChunkBytes < 0:
		return fmt.Errorf("relay: Config.SnapshotChunkBytes is negative (%d)", c.SnapshotChunkBytes)
	case c.SnapshotChunkBytes == 0:
		c.SnapshotChunkBytes = min(engine.DefaultSnapshotChunkBytes, maxChunk)
	case c.SnapshotChunkBytes > maxChunk:
		return fmt.Errorf("relay: Config.SnapshotChunkBytes %d is above MaxMessageSize %d minus the rows chunk overhead (%d bytes): chunks would not fit a frame",
			c.SnapshotChunkBytes, c.MaxMessageSize, wire.MaxRowsChunkOverhead)
	}
	return nil
}

// Bounds of Config.MaxMessageSize: a frame must hold a handshake and an
// error, and twice the limit (the drain bound) must fit in an int64 read
// limit with room to spare.
const (
	minMessageSize = 4 << 10
	maxMessageSize = 1 << 30
)

// frameOverhead is the room, in bytes, a changes or push_changes frame keeps
// for its envelope ({"type":…,"cursor":…,"more":…,"changeSets":[…]}) when
// paging ChangeSets below MaxMessageSize.
const frameOverhead = 256
