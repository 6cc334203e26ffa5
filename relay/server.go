//go:build !js

package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/replica-sync/replica/engine"
)

// ErrServerClosed is returned by Serve after Close, and by operations on a
// closed Server.
var ErrServerClosed = errors.New("relay: server closed")

// Server is a relay: the HTTP handler of /sync, /healthz, /metrics and the
// web directory, the databases it opens on demand, and the maintenance loop.
// New starts the maintenance loop; Close (or the end of Serve's context)
// stops everything. A Server is safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	handler http.Handler
	unlock  func() error // releases the data directory lock

	nextConn atomic.Uint64

	mu      sync.Mutex
	closed  bool
	conns   map[*conn]struct{}
	active  int // /sync requests being served (upgrading or open), at most MaxConnections
	connsWG sync.WaitGroup

	dbMu sync.Mutex
	dbs  map[string]*database

	// storageFails holds the storage operations failing now, by database
	// (see health.go).
	healthMu     sync.Mutex
	storageFails map[storageKey]storageFailure
	failing      atomic.Int32 // len(storageFails)

	bgCancel context.CancelFunc
	bgDone   chan struct{}
	// listenDone is closed when the fan-out of other relays' commits
	// (shared storage only; nil otherwise) has stopped.
	listenDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// New returns a Server for cfg: it creates the data directory (mode 0700) if
// needed, takes an exclusive lock on it (a second relay on the same
// directory fails here instead of waiting on database files), and starts the
// maintenance loop. Errors name the invalid Config field, or are the file
// system's.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	unlock := func() error { return nil }
	if cfg.OpenStore == nil && cfg.Storage == nil {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("relay: data directory: %w", err)
		}
		if unlock, err = lockDir(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: newMetrics(),
		unlock:  unlock,
		conns:   map[*conn]struct{}{},
		dbs:     map[string]*database{},
		bgDone:  make(chan struct{}),

		storageFails: map[storageKey]storageFailure{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sync", s.serveSync)
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	if cfg.Inspect {
		mux.HandleFunc("GET /inspect/{database}", s.serveInspect)
		mux.HandleFunc("GET /inspect", serveInspector("inspect.html", "text/html; charset=utf-8"))
		mux.HandleFunc("GET /inspect.js", serveInspector("inspect.js", "text/javascript; charset=utf-8"))
		mux.HandleFunc("GET /inspect.css", serveInspector("inspect.css", "text/css; charset=utf-8"))
	}
	if cfg.WebDir != "" {
		mux.Handle("GET /", staticHandler(cfg.WebDir))
	}
	s.handler = mux
	ctx, cancel := context.WithCancel(context.Background())
	s.bgCancel = cancel
	go s.background(ctx)
	if sh, ok := cfg.Storage.(SharedStorage); ok {
		s.listenDone = make(chan struct{})
		go func() {
			defer close(s.listenDone)
			s.listen(ctx, sh)
		}()
	}
	return s, nil
}

// Handler returns the relay's HTTP handler: GET /sync (WebSocket), GET
// /healthz, GET /metrics, and the web directory at GET / when configured.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until ctx is done or Close is called, then shuts
// down gracefully (see Close) and returns nil; it returns the listener's
// error if serving fails first (after Close-ing the Server).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	closed := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-s.bgDone: // Close was called directly
		}
		close(closed)
	}()
	select {
	case <-closed:
	case err := <-errc:
		_ = s.Close()
		<-closed
		return fmt.Errorf("relay: serve: %w", err)
	}
	// Stop accepting first, then close the WebSockets (http.Server does
	// not track hijacked connections).
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- hs.Shutdown(sctx) }()
	err := s.Close()
	if serr := <-shutdownErr; serr != nil && err == nil {
		_ = hs.Close()
	}
	<-errc
	return err
}

// ListenAndServe listens on the TCP address addr and calls Serve. ready, if
// not nil, is called with the bound address (useful with port 0) before
// serving starts.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("relay: listen: %w", err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return s.Serve(ctx, ln)
}

// Close shuts the relay down: it refuses new connections, stops the
// maintenance loop, lets every connection finish the request it is handling
// (an apply in flight commits and gets its apply_result; a snapshot stream
// is abandoned, to be resumed), flushes what is queued, closes every
// WebSocket with status 1001 (going away), waits up to
// Config.ShutdownTimeout for them, cuts the rest, and closes every database
// file. It is idempotent; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.bgCancel()
	<-s.bgDone
	if s.listenDone != nil {
		<-s.listenDone
	}

	// Abort long handlers (snapshot streams, authentication), let each
	// connection finish the frame it is handling, flush and close; cut
	// whatever is not done by the deadline.
	for _, c := range conns {
		c.stopCancel()
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.shutdown)
	}
	waited := make(chan struct{})
	go func() {
		wg.Wait()
		s.connsWG.Wait()
		close(waited)
	}()
	t := s.cfg.Timers.NewTimer(s.cfg.ShutdownTimeout)
	select {
	case <-waited:
		t.Stop()
	case <-t.C():
		s.log.Warn("relay: connections did not close in time; cutting them", "timeout", s.cfg.ShutdownTimeout)
		for _, c := range conns {
			_ = c.ws.CloseNow()
		}
		<-waited
	}

	var errs []error
	s.dbMu.Lock()
	dbs := make([]*database, 0, len(s.dbs))
	for _, d := range s.dbs {
		dbs = append(dbs, d)
	}
	s.dbMu.Unlock()
	for _, d := range dbs {
		<-d.ready
		if err := s.closeDatabase(d, true); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.unlock(); err != nil {
		errs = append(errs, err)
	}
	s.log.Info("relay: stopped")
	return errors.Join(errs...)
}

// serveHealth answers 200 "ok" while the relay accepts connections and its
// storage works; 503 "shutting down" once it is shutting down, and 503 with
// a line per failing operation ("storage failing: database ...") while the
// last open, write or read of some database failed (a full disk, an I/O
// error), until that operation next succeeds there.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if closed {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("shutting down\n"))
		return
	}
	if sh := s.shared(); sh != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		err := sh.Ping(ctx)
		cancel()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "storage unreachable: %v\n", err)
			return
		}
	}
	if report := s.storageReport(); report != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(report))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// serveSync upgrades a request to a WebSocket and runs the session.
func (s *Server) serveSync(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "relay shutting down", http.StatusServiceUnavailable)
		return
	}
	if s.active >= s.cfg.MaxConnections {
		s.mu.Unlock()
		s.metrics.connsRefused.WithLabelValues("limit").Inc()
		s.log.Debug("relay: upgrade refused: connection limit", "remote", r.RemoteAddr, "maxConnections", s.cfg.MaxConnections)
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("relay at its limit of %d connections: retry later", s.cfg.MaxConnections), http.StatusServiceUnavailable)
		return
	}
	s.active++
	s.connsWG.Add(1)
	s.mu.Unlock()
	defer s.leave()

	opts := &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns}
	for _, p := range s.cfg.OriginPatterns {
		if p == "*" {
			opts = &websocket.AcceptOptions{InsecureSkipVerify: true}
		}
	}
	opts.CompressionMode = s.cfg.Compression.mode()
	c := newConn(s, r.RemoteAddr, r.Header)
	opts.OnPingReceived = func(_ context.Context, payload []byte) bool {
		// WebSocket pings count against the frame rate like any frame.
		c.touch()
		return c.throttle(1, int64(len(payload)))
	}
	opts.OnPongReceived = func(context.Context, []byte) { c.touch() }
	ws, err := websocket.Accept(w, r, opts)
	if err != nil {
		s.log.Debug("relay: upgrade refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	s.serve(c, ws)
}

// leave ends the count of one connection being served (serveSync,
// ServeConn).
func (s *Server) leave() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
	s.connsWG.Done()
}

// ServeConn runs the session of ws, a connection established elsewhere (a
// test's or a simulator's transport, or a WebSocket upgraded by another
// HTTP server), as /sync would after its upgrade, and returns when the
// connection has ended. remote and header stand for the upgrade request's
// RemoteAddr and headers (AuthRequest); header may be nil. Beyond
// MaxConnections, or once the relay is closing, ws is closed with status
// 1013 or 1001 and ServeConn returns at once. WebSocket ping and pong
// frames are ws's business: they neither count against the rate limits
// nor restart the idle timer here.
func (s *Server) ServeConn(ws Conn, remote string, header http.Header) {
	s.mu.Lock()
	if s.closed || s.active >= s.cfg.MaxConnections {
		closed := s.closed
		s.mu.Unlock()
		if closed {
			_ = ws.Close(websocket.StatusGoingAway, "relay shutting down")
		} else {
			s.metrics.connsRefused.WithLabelValues("limit").Inc()
			_ = ws.Close(websocket.StatusTryAgainLater, "relay at its connection limit")
		}
		return
	}
	s.active++
	s.connsWG.Add(1)
	s.mu.Unlock()
	defer s.leave()
	s.serve(newConn(s, remote, header), ws)
}

// serve registers c over ws and runs it until it ends.
func (s *Server) serve(c *conn, ws Conn) {
	c.ws = ws
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close(websocket.StatusGoingAway, "relay shutting down")
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.metrics.connections.Inc()
	s.metrics.connectionsTotal.Inc()

	c.run()

	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.metrics.connections.Dec()
}

// acquire returns the open database id, opening it if needed, and counts a
// reference to it; release gives the reference back.
//
// A database the call creates is sealed when sealed is true (its mode for
// good; see database.sealed); an existing one keeps its mode.
func (s *Server) acquire(id string, sealed bool) (*database, error) {
	for {
		s.dbMu.Lock()
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.dbMu.Unlock()
			return nil, ErrServerClosed
		}
		d := s.dbs[id]
		if d == nil {
			d = &database{s: s, id: id, path: dbPath(s.cfg.DataDir, id), refs: 1, shared: s.shared(),
				log: s.log.With("database", id), ready: make(chan struct{}), done: make(chan struct{})}
			s.dbs[id] = d
			s.dbMu.Unlock()
			d.openErr = d.open(sealed)
			if d.openErr != nil {
				s.storageFailed(id, opOpen, d.openErr)
				s.dbMu.Lock()
				delete(s.dbs, id)
				s.dbMu.Unlock()
				close(d.done)
			} else {
				s.storageOK(id, opOpen)
				s.metrics.databasesOpen.Inc()
				d.log.Info("relay: database opened", "file", d.path, "cursor", d.cursor.Load(), "serverSiteId", d.site)
			}
			close(d.ready)
			if d.openErr != nil {
				return nil, d.openErr
			}
			return d, nil
		}
		if d.closing {
			done := d.done
			s.dbMu.Unlock()
			<-done
			continue
		}
		d.refs++
		s.dbMu.Unlock()
		<-d.ready
		if d.openErr != nil {
			return nil, d.openErr
		}
		return d, nil
	}
}

// shared returns Config.Storage when several relay processes share it.
func (s *Server) shared() SharedStorage {
	sh, _ := s.cfg.Storage.(SharedStorage)
	return sh
}

func (s *Server) release(d *database) {
	s.dbMu.Lock()
	d.refs--
	if d.refs == 0 {
		d.lastUsed = s.cfg.Timers.Now()
	}
	s.dbMu.Unlock()
}

// closeDatabase closes d if it is unused (or always, when force is set, at
// shutdown) and removes it from the registry.
func (s *Server) closeDatabase(d *database, force bool) error {
	s.dbMu.Lock()
	if d.closing || (!force && d.refs > 0) || s.dbs[d.id] != d {
		s.dbMu.Unlock()
		return nil
	}
	d.closing = true
	s.dbMu.Unlock()
	err := d.close()
	s.dbMu.Lock()
	delete(s.dbs, d.id)
	s.dbMu.Unlock()
	close(d.done)
	s.metrics.databasesOpen.Dec()
	if err != nil {
		d.log.Error("relay: closing database failed", "err", err)
		return err
	}
	d.log.Info("relay: database closed")
	return nil
}

// background runs the maintenance loop (Maintain every
// MaintenanceInterval, measured from the end of the last pass) and closes
// databases idle for DatabaseIdleClose. Its timers are Config.Timers', so a
// simulator's clock drives them as it drives the connections'.
func (s *Server) background(ctx context.Context) {
	defer close(s.bgDone)
	maintEvery := s.cfg.MaintenanceInterval
	sweepEvery := min(max(s.cfg.DatabaseIdleClose/4, 100*time.Millisecond), time.Minute)
	maint := s.cfg.Timers.NewTimer(maintEvery)
	defer maint.Stop()
	sweep := s.cfg.Timers.NewTimer(sweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-maint.C():
			if err := s.Maintain(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("relay: maintenance failed", "err", err)
			}
			maint.Reset(maintEvery)
		case <-sweep.C():
			s.closeIdle(s.cfg.Timers.Now())
			sweep.Reset(sweepEvery)
		}
	}
}

// closeIdle closes the databases without connections since before
// now − DatabaseIdleClose.
func (s *Server) closeIdle(now time.Time) {
	var idle []*database
	s.dbMu.Lock()
	for _, d := range s.dbs {
		if d.refs == 0 && !d.closing && now.Sub(d.lastUsed) >= s.cfg.DatabaseIdleClose {
			idle = append(idle, d)
		}
	}
	s.dbMu.Unlock()
	for _, d := range idle {
		_ = s.closeDatabase(d, false)
	}
}

// Maintain runs one maintenance pass over every open database now: the
// tombstone horizon (when now − Retention is above the newest mark's wall,
// a horizon mark at the log's head is stored, then the merged replica's
// tombstones deleted before it are pruned: wire's "Tombstone horizon";
// skipped, and tried again at the next pass, while a snapshot of the
// database streams), the engine's Prune (held changes and own log
// entries past Retention), the removal of arrival-log entries that arrived
// more than Retention ago (after which a get_changes from before them is
// answered with SNAPSHOT_REQUIRED) and of the horizon marks below them
// (the newest is kept). The maintenance loop calls it every
// MaintenanceInterval. It stops early when ctx is done and returns the
// errors it met, joined.
func (s *Server) Maintain(ctx context.Context) error {
	s.dbMu.Lock()
	var dbs []*database
	for _, d := range s.dbs {
		if !d.closing {
			d.refs++
			dbs = append(dbs, d)
		}
	}
	s.dbMu.Unlock()
	var errs []error
	for _, d := range dbs {
		<-d.ready
		if d.openErr == nil && ctx.Err() == nil {
			if err := s.maintain(d); err != nil {
				errs = append(errs, err)
			}
		}
		if d.openErr == nil {
			s.release(d)
		}
	}
	return errors.Join(errs...)
}

func (s *Server) maintain(d *database) error {
	if d.shared != nil {
		// One relay at a time maintains a database.
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		defer cancel()
		release, ok, err := d.shared.TryMaintain(ctx, d.id)
		if err != nil {
			s.storageFailed(d.id, opPrune, err)
			return fmt.Errorf("maintain database %q: %w", d.id, err)
		}
		if !ok {
			// Another relay maintains it now: the storage answered,
			// so an earlier failure of this relay's is over.
			s.storageOK(d.id, opPrune)
			return nil
		}
		defer release()
		if err := d.sweepOrphans(ctx); err != nil {
			s.storageFailed(d.id, opPrune, err)
			return fmt.Errorf("delete replaced sealed checkpoints of %q: %w", d.id, err)
		}
	}
	start := time.Now()
	now := s.cfg.Clock.Now()
	horizon := uint64(s.cfg.Retention.Milliseconds())
	var pr engine.PruneResult
	var tr engine.PruneResult
	made := false
	if now > horizon {
		// The engine's Prune runs in the same critical section, after
		// the mark: while it still prunes tombstones by its own clock
		// (the same Config.Clock and Retention), that pruning is then
		// covered by the mark just made, and no ChangeSet is decided
		// between the two.
		var err error
		made, tr, err = d.advanceHorizon(now-horizon, func() error {
			var err error
			pr, err = d.eng.Prune()
			return err
		})
		switch {
		case errors.Is(err, errSnapshotStreaming):
			d.log.Info("relay: tombstone horizon not advanced: a snapshot is streaming; retrying at the next maintenance pass")
		case err != nil:
			s.storageFailed(d.id, opPrune, err)
			return fmt.Errorf("prune database %q: %w", d.id, err)
		}
		if made {
			s.metrics.horizonMarks.Inc()
		}
	}
	n := 0
	var err error
	if now > horizon {
		n, err = d.pruneArrivals(now - horizon) // none for a sealed database
		s.metrics.arrivalsPruned.Add(float64(n))
		if err != nil {
			s.storageFailed(d.id, opPrune, err)
			return fmt.Errorf("prune arrival log of %q: %w", d.id, err)
		}
	}
	marks, err := d.pruneMarks()
	if err != nil {
		s.storageFailed(d.id, opPrune, err)
		return fmt.Errorf("prune horizon marks of %q: %w", d.id, err)
	}
	s.storageOK(d.id, opPrune)
	if made || tr.Tombstones+pr.Tombstones+pr.Held+n+marks > 0 {
		d.log.Info("relay: pruned", "horizon", d.horizonWall(), "markMade", made, "tombstones", tr.Tombstones+pr.Tombstones, "rows", tr.Rows+pr.Rows,
			"held", pr.Held, "arrivals", n, "marksDropped", marks, "took", time.Since(start))
	}
	return nil
}

// ErrDataDirInUse is matched (errors.Is) by the error of New, and of
// CheckDataDir, when another relay holds the data directory's lock.
var ErrDataDirInUse = errors.New("in use by another relay")
