//go:build !js

// Command relay runs a Replica relay: the WebSocket endpoint replicas sync
// through (/sync), the demo app (/), /healthz and Prometheus /metrics.
//
//	go run ./cmd/relay                      # 127.0.0.1:8080, ./data, ./web, no auth
//	go run ./cmd/relay -auth tokens -token-file tokens.json -addr :8080
//
// Every flag can also be set by an environment variable named
// REPLICA_RELAY_ and the flag's name in upper case with '-' as '_'
// (-token-file: REPLICA_RELAY_TOKEN_FILE); a flag on the command line wins.
// `relay -h` lists them. The package documentation of
// github.com/replica-sync/replica/relay is the manual.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/pgstore"
	"github.com/replica-sync/replica/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// errorLine is how main reports err: prefixed "relay: " once (the relay
// package's errors carry the prefix already).
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "relay: ") {
		return msg
	}
	return "relay: " + msg
}

// errUsage is returned by parseFlags for bad flags (already reported).
var errUsage = errors.New("usage error")

// envPrefix prefixes the environment variable of every flag.
const envPrefix = "REPLICA_RELAY_"

// options are the parsed flags.
type options struct {
	addr      string
	logLevel  slog.Level
	logFormat string
	auth      string
	tokenFile string
	origins   string
	store     string // -store: a directory or a postgres:// URL
	check     bool   // -check: say whether the relay could start, then exit
	cfg       relay.Config
}

// envName returns the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not on the command line from
// its environment variable (read with getenv).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{cfg: relay.Config{DataDir: relay.DefaultDataDir, WebDir: relay.DefaultWebDir}}
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", relay.DefaultAddr, "TCP `address` to listen on (host:port; :8080 for every interface)")
	fs.BoolVar(&o.check, "check", false, "only check that the relay could start here (the data directory not in use by another relay, the address free), then exit: 0 if so, 1 saying why not; nothing is created or changed")
	fs.StringVar(&o.cfg.DataDir, "data", relay.DefaultDataDir, "`directory` of the database files (one bbolt file per database)")
	fs.StringVar(&o.store, "store", "", "where the databases live: a `directory` (bbolt files; the same as -data) or a postgres:// URL (PostgreSQL, which any number of relays may share); also REPLICA_STORE")
	fs.StringVar(&o.cfg.WebDir, "web", relay.DefaultWebDir, "`directory` served at / (the demo app); empty to serve none")
	fs.BoolVar(&o.cfg.Inspect, "inspect", false, "serve GET /inspect/{database}: the newest entries of a sealed database's log as stored (ciphertext and metadata), to whoever -auth grants the database (Authorization: Bearer TOKEN; anyone under -auth none); and the replica inspector page GET /inspect?db=NAME, which shows the browser's own replica NAME of this origin (rows with cell HLCs, tombstones, held changes, change log, cursors, conflicts); for development and the demo, not for production")
	fs.StringVar(&o.auth, "auth", "none", "authentication `mode`: none (anyone may use any database: local development only) or tokens (a token per database, from -token-file)")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of tokens for -auth tokens: a JSON object {\"<databaseId>\": \"<token>\", …}")
	fs.Var(&o.cfg.Compression, "compression", "permessage-deflate `mode` accepted when a client offers it (browsers always do): nocontext (each frame of 512 bytes or more compressed on its own), context (against the connection's previous frames: denser, about 1.2 MB of memory per connection) or off")
	fs.StringVar(&o.origins, "allow-origin", "", "comma-separated host `patterns` of other origins whose pages may connect from a browser (\"*\": any)")
	fs.Var(byteSize{&o.cfg.MaxMessageSize, wire.DefaultMaxMessageSize}, "max-frame", "largest frame in `bytes` (suffixes KiB, MiB, GiB allowed); larger frames get MESSAGE_TOO_LARGE")
	fs.Var(byteSize{&o.cfg.MaxCheckpointBytes, relay.DefaultMaxCheckpointBytes}, "max-checkpoint", "largest sealed checkpoint a device may upload, in envelope `bytes` (suffixes KiB, MiB, GiB allowed); larger uploads get CHECKPOINT_REFUSED")
	fs.IntVar(&o.cfg.MaxChangesPerApply, "max-apply-changes", relay.DefaultMaxChangesPerApply, "most changes (plus schema migrations) in one apply_changes")
	fs.IntVar(&o.cfg.PageChanges, "page-changes", relay.DefaultPageChanges, "most changes per changes or push_changes frame (a larger ChangeSet travels alone)")
	fs.IntVar(&o.cfg.SendQueue, "send-queue", relay.DefaultSendQueue, "frames queued per connection before a slow connection is closed")
	fs.DurationVar(&o.cfg.IdleTimeout, "idle-timeout", relay.DefaultIdleTimeout, "close connections silent for this `duration`")
	fs.DurationVar(&o.cfg.WriteTimeout, "write-timeout", relay.DefaultWriteTimeout, "close connections that cannot take a frame for this `duration`")
	fs.DurationVar(&o.cfg.HandshakeTimeout, "handshake-timeout", relay.DefaultHandshakeTimeout, "close connections that sent no valid handshake this `duration` after connecting")
	fs.IntVar(&o.cfg.MaxConnections, "max-connections", relay.DefaultMaxConnections, "most WebSocket connections open at once (handshake done or not); more upgrades get HTTP 503")
	fs.IntVar(&o.cfg.FrameRate, "frame-rate", relay.DefaultFrameRate, "frames per second one connection may send, sustained (WebSocket pings included); above it the relay reads the connection more slowly")
	fs.IntVar(&o.cfg.FrameBurst, "frame-burst", relay.DefaultFrameBurst, "frames one connection may send at once above -frame-rate")
	fs.Var(byteSize{&o.cfg.ByteRate, relay.DefaultByteRate}, "byte-rate", "frame `bytes` per second one connection may send, sustained (suffixes KiB, MiB, GiB allowed)")
	fs.Var(byteSize{&o.cfg.ByteBurst, relay.DefaultByteBurst}, "byte-burst", "frame `bytes` one connection may send at once above -byte-rate; at least -max-frame (unset: the default, or twice -max-frame if that is larger)")
	fs.DurationVar(&o.cfg.RateLimitGrace, "rate-limit-grace", relay.DefaultRateLimitGrace, "close a connection with RATE_LIMITED once it has stayed above -frame-rate or -byte-rate for this `duration`")
	fs.Var(days{&o.cfg.Retention}, "retention", "keep arrival-log entries and tombstones this `duration` (units h, m, s and d for days)")
	fs.DurationVar(&o.cfg.MaintenanceInterval, "maintenance-interval", relay.DefaultMaintenanceInterval, "run pruning every `duration`")
	fs.DurationVar(&o.cfg.DatabaseIdleClose, "db-idle-close", relay.DefaultDatabaseIdleClose, "close a database file this `duration` after its last connection left")
	fs.DurationVar(&o.cfg.ShutdownTimeout, "shutdown-timeout", relay.DefaultShutdownTimeout, "on SIGINT/SIGTERM, wait this `duration` for connections to close")
	fs.Var(levelFlag{&o.logLevel}, "log-level", "log `level`: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log `format`: text or json")
	// Package flag calls fs.Usage for -h and after printing a bad flag's
	// error: the whole list is printed below for -h only, and after an
	// error one line pointing at -h, so that the error is not scrolled
	// away by the list.
	fs.Usage = func() {}
	short := func() { fmt.Fprintln(fs.Output(), "Run relay -h for the flags and their environment variables.") }
	usage := func() {
		fmt.Fprintf(fs.Output(), "Usage: relay [flags]\n\nRuns a Replica relay. Every flag may also be set by the environment variable shown.\n\n")
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			if name != "" {
				name = " " + name
			}
			fmt.Fprintf(fs.Output(), "  -%s%s\n    \t%s", f.Name, name, usage)
			// A boolean flag's false default goes unsaid, as package flag does.
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
				// Quoted for string flags only, as package flag does.
				if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
					fmt.Fprintf(fs.Output(), " (default %q)", f.DefValue)
				} else {
					fmt.Fprintf(fs.Output(), " (default %s)", f.DefValue)
				}
			}
			fmt.Fprintf(fs.Output(), "\n    \tenv %s\n", envName(f.Name))
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return nil, err
		}
		short()
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "relay: unexpected arguments %q\n", fs.Args())
		short()
		return nil, errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || envErr != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					err = fmt.Errorf("not a boolean (want true, false, 1 or 0): %w", err)
				}
				envErr = fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	if !set["store"] && o.store == "" {
		o.store = getenv("REPLICA_STORE")
	}
	switch {
	case o.store == "":
	case isPostgresURL(o.store):
	case set["data"] || getenv(envName("data")) != "":
		if o.store != o.cfg.DataDir {
			return nil, fmt.Errorf("-store %q and -data %q name two places: pass one", o.store, o.cfg.DataDir)
		}
	default:
		o.cfg.DataDir = o.store
	}
	switch o.logFormat {
	case "text", "json":
	default:
		return nil, fmt.Errorf("-log-format %q: want text or json", o.logFormat)
	}
	return o, nil
}

// run parses args, starts the relay and serves until ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	if o.check {
		return checkFree(o)
	}
	hopts := &slog.HandlerOptions{Level: o.logLevel}
	var h slog.Handler = slog.NewTextHandler(stderr, hopts)
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, hopts)
	}
	log := slog.New(h)
	o.cfg.Logger = log

	switch o.auth {
	case "none":
		if o.tokenFile != "" {
			return fmt.Errorf("-token-file is set but -auth is none: pass -auth tokens")
		}
		o.cfg.Auth = relay.AllowAll
		log.Warn("AUTHENTICATION IS OFF (-auth none): anyone who can reach this relay can read and write every database. Use -auth tokens -token-file FILE for anything but local development.")
	case "tokens":
		if o.tokenFile == "" {
			return fmt.Errorf("-auth tokens needs -token-file")
		}
		t, err := relay.LoadTokenFile(o.tokenFile)
		if err != nil {
			return err
		}
		o.cfg.Auth = t
		log.Info("relay: token authentication", "file", o.tokenFile, "databases", t.Len())
	default:
		return fmt.Errorf("-auth %q: want none or tokens", o.auth)
	}
	if o.origins != "" {
		for _, p := range strings.Split(o.origins, ",") {
			if p = strings.TrimSpace(p); p != "" {
				o.cfg.OriginPatterns = append(o.cfg.OriginPatterns, p)
			}
		}
	}
	if o.cfg.WebDir != "" {
		if st, err := os.Stat(o.cfg.WebDir); err != nil || !st.IsDir() {
			log.Warn("relay: web directory not found; / serves nothing until it exists", "web", o.cfg.WebDir)
		}
	}

	where := o.cfg.DataDir
	if isPostgresURL(o.store) {
		st, err := pgstore.Open(ctx, o.store)
		if err != nil {
			return fmt.Errorf("-store: %w", err)
		}
		defer st.Close()
		o.cfg.Storage = st
		where = redactURL(o.store)
		log.Info("relay: databases in PostgreSQL (shared with any other relay on it)", "store", where)
	}
	srv, err := relay.New(o.cfg)
	if err != nil {
		return err
	}
	return srv.ListenAndServe(ctx, o.addr, func(a net.Addr) {
		u := browseURL(a)
		log.Info("relay: listening", "addr", a.String(), "store", where, "web", o.cfg.WebDir, "url", u)
		fmt.Fprintf(stdout, "Replica relay: open %s (sync endpoint %s)\n", u, "ws"+strings.TrimPrefix(u, "http")+"sync")
	})
}

// checkFree is -check: an error if another relay holds the data directory
// or the address is taken. It creates nothing and writes nothing (the
// running relay's files stay as they are).
func checkFree(o *options) error {
	if !isPostgresURL(o.store) && o.cfg.DataDir != "" {
		if err := relay.CheckDataDir(o.cfg.DataDir); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("address %s is in use (another relay, or another program): %w", o.addr, err)
	}
	return ln.Close()
}

// isPostgresURL reports whether -store names PostgreSQL.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// redactURL returns a postgres URL without its password, for logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// browseURL returns the http URL of a listening address; an unspecified
// host (every interface) is shown as localhost.
func browseURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// byteSize is a flag of a size in bytes: an integer, optionally with the
// suffix KiB, MiB or GiB; def is shown while it is unset (zero).
type byteSize struct {
	p   *int64
	def int64
}

func (b byteSize) String() string {
	n := b.def
	if b.p != nil && *b.p != 0 {
		n = *b.p
	}
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b byteSize) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive number of bytes, optionally with KiB, MiB or GiB")
	}
	*b.p = n * mult
	return nil
}

// days is a duration flag that also accepts a number of days ("30d").
type days struct{ p *time.Duration }

func (d days) String() string {
	v := engine.DefaultRetention
	if d.p != nil && *d.p != 0 {
		v = *d.p
	}
	if v%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return v.String()
}

func (d days) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("want a positive duration such as 30d or 720h")
		}
		*d.p = time.Duration(v * float64(24*time.Hour))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("want a positive duration such as 30d or 720h")
	}
	*d.p = v
	return nil
}

// levelFlag is a slog level flag, shown in lower case as -log-level takes
// it (it takes any case).
type levelFlag struct{ p *slog.Level }

func (l levelFlag) String() string {
	if l.p == nil {
		return "info"
	}
	return strings.ToLower(l.p.String())
}

func (l levelFlag) Set(s string) error { return l.p.UnmarshalText([]byte(s)) }
