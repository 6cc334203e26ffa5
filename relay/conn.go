//go:build !js

package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// codeInternal is the transient error code of a handshake the relay could
// not complete on its side (the database file would not open). The
// connection is then closed with status 1011 and the client retries with
// backoff. wire has no code for it; clients treat unknown codes as
// transient.
const codeInternal wire.ErrorCode = "INTERNAL_ERROR"

// outFrame is a frame queued for the writer.
type outFrame struct {
	data []byte
	typ  wire.MessageType
	done chan error // if not nil (buffered, 1), receives the write's result
}

// Conn is one established WebSocket connection as the relay uses it: a
// *websocket.Conn of github.com/coder/websocket implements it (the /sync
// handler's), and ServeConn serves any other. Reader, Write and Close
// report the peer's close status with a websocket.CloseError, and a
// message beyond the read limit with websocket.ErrMessageTooBig (the
// library's conventions, which the relay reads). Reader is called from
// one goroutine, Write from another; Close and CloseNow from any.
type Conn interface {
	// Reader returns the next message's type and a reader of its payload.
	Reader(ctx context.Context) (websocket.MessageType, io.Reader, error)
	// Write sends p as one message of type typ.
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	// Close performs the closing handshake with code and reason.
	Close(code websocket.StatusCode, reason string) error
	// CloseNow drops the connection without a closing handshake.
	CloseNow() error
	// SetReadLimit bounds the size of the next messages read, in bytes.
	SetReadLimit(n int64)
}

var _ Conn = (*websocket.Conn)(nil)

// conn is one WebSocket session. Two goroutines serve it: the reader (the
// HTTP handler's goroutine), which reads frames and handles them one at a
// time in order, and the writer, which drains the bounded send queue. Replies
// wait for room in the queue; pushes from other connections never wait (see
// push).
type conn struct {
	// upload is the sealed checkpoint this connection is uploading
	// (put_checkpoint; the read goroutine's), nil when none.
	upload *checkpointMeta

	s      *Server
	ws     Conn
	id     string
	remote string
	header http.Header // the upgrade request's, for the Authenticator
	log    *slog.Logger
	start  time.Time

	out        chan outFrame
	writerDone chan struct{}
	readerDone chan struct{}

	// kill asks the writer to close the connection with killCode and
	// killReason, after flushing the queue when killFlush is set.
	kill       chan struct{}
	killOnce   sync.Once
	killCode   websocket.StatusCode
	killReason string
	killFlush  bool

	// stopCtx is cancelled when the connection is being closed: long
	// handlers (snapshot streams) give up.
	stopCtx    context.Context
	stopCancel context.CancelFunc

	// handleMu is held while a frame is handled; shutdown takes it to let
	// the frame in flight finish and to stop the next one.
	handleMu sync.Mutex
	stopping bool // guarded by handleMu

	// frames and bytes are the connection's rate limits (FrameRate,
	// ByteRate); see throttle. throttledSince, guarded by throttleMu, is
	// when the connection's frames started waiting for them (zero: not
	// throttled).
	frames, bytes  *rate.Limiter
	throttleMu     sync.Mutex
	throttledSince time.Time

	idle Timer
	// handshakeDeadline closes the connection when no valid handshake came
	// within HandshakeTimeout; the handshake stops it.
	handshakeDeadline Timer

	// pushMu orders pushes against the start and end of a snapshot
	// stream, so that no push_changes lands inside one.
	pushMu     sync.Mutex
	inSnapshot bool

	// Set by the handshake, on the reader goroutine.
	db   *database
	site model.SiteID
}

func newConn(s *Server, remote string, header http.Header) *conn {
	id := "c-" + strconv.FormatUint(s.nextConn.Add(1), 10)
	c := &conn{
		s:          s,
		id:         id,
		remote:     remote,
		header:     header.Clone(),
		log:        s.log.With("conn", id, "remote", remote),
		start:      s.cfg.Timers.Now(),
		out:        make(chan outFrame, s.cfg.SendQueue),
		writerDone: make(chan struct{}),
		readerDone: make(chan struct{}),
		kill:       make(chan struct{}),
		frames:     rate.NewLimiter(rate.Limit(s.cfg.FrameRate), s.cfg.FrameBurst),
		bytes:      rate.NewLimiter(rate.Limit(s.cfg.ByteRate), int(s.cfg.ByteBurst)),
	}
	c.stopCtx, c.stopCancel = context.WithCancel(context.Background())
	return c
}

// run serves the connection until it ends.
func (c *conn) run() {
	// Until the handshake is accepted, frames are small (frameLimit).
	c.ws.SetReadLimit(2 * c.frameLimit())
	log := c.log // the handshake replaces c.log; the timers may fire meanwhile
	c.idle = c.s.cfg.Timers.AfterFunc(c.s.cfg.IdleTimeout, func() {
		log.Info("relay: closing idle connection", "idleTimeout", c.s.cfg.IdleTimeout)
		c.closeWith(websocket.StatusGoingAway, "idle timeout", false)
	})
	c.handshakeDeadline = c.s.cfg.Timers.AfterFunc(c.s.cfg.HandshakeTimeout, func() { c.handshakeTimedOut(log) })
	go c.writeLoop()
	c.readLoop()
	close(c.readerDone)
	<-c.writerDone
	c.idle.Stop()
	c.handshakeDeadline.Stop()
	c.stopCancel()
	if c.db != nil {
		c.db.removeConn(c)
		c.db.dropUpload(c)
		c.s.release(c.db)
	}
	c.log.Debug("relay: connection ended", "duration", c.s.cfg.Timers.Now().Sub(c.start))
}

// frameLimit is the largest frame the connection reads now: MaxMessageSize
// after the handshake, HandshakeFrameLimit before. Reader goroutine only.
func (c *conn) frameLimit() int64 {
	if c.db == nil {
		return min(HandshakeFrameLimit, c.s.cfg.MaxMessageSize)
	}
	return c.s.cfg.MaxMessageSize
}

// handshakeTimedOut closes a connection that sent no valid handshake within
// HandshakeTimeout: an error frame if the queue has room (the timer does not
// wait), then status 1008.
func (c *conn) handshakeTimedOut(log *slog.Logger) {
	c.s.metrics.connsRefused.WithLabelValues("handshake_timeout").Inc()
	log.Info("relay: no valid handshake in time; closing", "handshakeTimeout", c.s.cfg.HandshakeTimeout)
	e := wire.NewError(wire.CodeNotAuthenticated, "no valid handshake within %v of connecting: closing the connection", c.s.cfg.HandshakeTimeout)
	if data, err := wire.Encode(e); err == nil {
		select {
		case c.out <- outFrame{data: data, typ: wire.TypeError}:
			c.s.metrics.errors.WithLabelValues(string(e.Code)).Inc()
		default:
		}
	}
	c.closeWith(websocket.StatusPolicyViolation, "handshake timeout", true)
}

// throttle takes frames (1, or 0 for more bytes of a frame already counted)
// of n payload bytes from the connection's rate
// limits (FrameRate, ByteRate). Within them it returns true at once. Over
// them it waits until they allow the frame, without reading: the frames
// behind it stay in the socket, and TCP pushes back on the sender. The
// connection counts as over its rate from the first frame that had to wait
// until a frame finds both buckets refilled to half their burst (it sent
// less than its rate for a while); a frame that has to wait RateLimitGrace
// or more after the count started gets RATE_LIMITED and closes the
// connection with status 1008, and throttle returns false, as it does when
// the connection is closing meanwhile. It runs on whatever goroutine reads
// the connection (the reader, or the WebSocket library's ping callback).
func (c *conn) throttle(frames int, n int64) bool {
	now := c.s.cfg.Timers.Now()
	// A frame's bytes are taken at once; ByteBurst is at least
	// MaxMessageSize, so only the rest of an oversized frame being
	// discarded can be larger.
	n = min(n, int64(c.bytes.Burst()))
	rested := c.frames.TokensAt(now) >= float64(c.frames.Burst())/2 && c.bytes.TokensAt(now) >= float64(c.bytes.Burst())/2
	delay := max(c.frames.ReserveN(now, frames).DelayFrom(now), c.bytes.ReserveN(now, int(n)).DelayFrom(now))
	c.throttleMu.Lock()
	if delay == 0 {
		if rested {
			c.throttledSince = time.Time{}
		}
		c.throttleMu.Unlock()
		return true
	}
	since := c.throttledSince
	if since.IsZero() {
		c.throttledSince = now
		since = now
	}
	c.throttleMu.Unlock()
	if since == now {
		c.s.metrics.rateLimited.WithLabelValues("slowed").Inc()
		c.log.Debug("relay: connection over its rate; reading it more slowly", "frameRate", c.s.cfg.FrameRate, "byteRate", c.s.cfg.ByteRate)
	}
	if over := now.Sub(since); over >= c.s.cfg.RateLimitGrace {
		c.s.metrics.rateLimited.WithLabelValues("closed").Inc()
		c.log.Warn("relay: connection stayed over its rate; closing it", "over", over.Round(time.Millisecond),
			"frameRate", c.s.cfg.FrameRate, "frameBurst", c.s.cfg.FrameBurst, "byteRate", c.s.cfg.ByteRate, "byteBurst", c.s.cfg.ByteBurst)
		e := wire.NewError(wire.CodeRateLimited, "this connection sent more than %d frames or %d bytes a second for %v: closing it; reconnect after a backoff and send less",
			c.s.cfg.FrameRate, c.s.cfg.ByteRate, c.s.cfg.RateLimitGrace)
		if data, err := wire.Encode(e); err == nil {
			select { // the queue may be full of answers the client does not read
			case c.out <- outFrame{data: data, typ: wire.TypeError}:
				c.s.metrics.errors.WithLabelValues(string(e.Code)).Inc()
			default:
			}
		}
		c.closeWith(websocket.StatusPolicyViolation, "rate limited", true)
		return false
	}
	t := c.s.cfg.Timers.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-c.stopCtx.Done():
		return false
	}
}

// touch restarts the idle timer (a ping or pong control frame arrived).
func (c *conn) touch() {
	if c.idle != nil {
		c.idle.Reset(c.s.cfg.IdleTimeout)
	}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readLoop reads and handles frames until the connection ends or a handler
// ends the session.
func (c *conn) readLoop() {
	for {
		limit := c.frameLimit()
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.logEnd(err)
			return
		}
		c.idle.Stop()
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		n, err := io.Copy(buf, io.LimitReader(r, limit+1))
		c.s.metrics.bytesIn.Add(float64(n))
		keep := true
		switch {
		case err == nil && !c.throttle(1, n):
			keep = false
		case err != nil:
			c.logEnd(err)
			keep = false
		case n > limit:
			keep = c.tooLarge(r, limit)
		case !wsframe.Fits(typ, buf.Bytes()):
			// Version 14: a binary message holds a binary frame (its
			// first byte wire.BinaryFrameTag), a text message a JSON
			// object.
			c.s.metrics.messagesIn.WithLabelValues("invalid").Inc()
			if typ == websocket.MessageBinary {
				c.sendError(wire.CodeMessageError, "", "a binary message must hold a binary frame (first byte 0x%02x): send other messages as JSON text", wire.BinaryFrameTag)
			} else {
				c.sendError(wire.CodeMessageError, "", "a binary frame must travel as a binary WebSocket message")
			}
		default:
			keep = c.handle(buf.Bytes())
		}
		if buf.Cap() <= 1<<20 {
			bufPool.Put(buf)
		}
		if !keep {
			return
		}
		c.idle.Reset(c.s.cfg.IdleTimeout)
	}
}

// tooLarge answers a frame above limit (frameLimit) with MESSAGE_TOO_LARGE,
// written before anything else happens, then discards the rest of the frame
// so that the connection stays usable. A frame more than twice the limit
// makes the WebSocket library close the connection with status 1009 while
// discarding; the client has the error frame by then.
func (c *conn) tooLarge(r io.Reader, limit int64) bool {
	c.s.metrics.messagesIn.WithLabelValues("invalid").Inc()
	c.s.metrics.errors.WithLabelValues(string(wire.CodeMessageTooLarge)).Inc()
	e := wire.NewError(wire.CodeMessageTooLarge, "frame larger than this relay's limit of %d bytes: split the work into smaller frames", limit)
	if c.db == nil {
		e = wire.NewError(wire.CodeMessageTooLarge, "frame larger than %d bytes before the handshake: send the handshake first (the limit is then %d bytes)", limit, c.s.cfg.MaxMessageSize)
	}
	data, _ := wire.Encode(e)
	done := make(chan error, 1)
	select {
	case c.out <- outFrame{data: data, typ: wire.TypeError, done: done}:
		select {
		case <-done:
		case <-c.writerDone:
			return false
		}
	case <-c.writerDone:
		return false
	}
	n, err := io.Copy(io.Discard, r)
	c.s.metrics.bytesIn.Add(float64(n))
	if err == nil && !c.throttle(0, n) { // the rest of the frame's bytes
		return false
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		// The library sent a close frame (1009). Close gracefully: the
		// closing handshake discards the rest of the frame and waits
		// for the client's close, so the client reads the error frame
		// and the close instead of a connection reset.
		c.log.Info("relay: frame beyond twice the size limit; closing", "limit", limit)
		c.closeWith(websocket.StatusMessageTooBig, "frame too large", true)
		return false
	}
	if err != nil {
		c.logEnd(err)
		return false
	}
	return true
}

// logEnd logs why reading stopped.
func (c *conn) logEnd(err error) {
	status := websocket.CloseStatus(err)
	switch {
	case status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway:
		c.log.Debug("relay: client closed the connection", "status", int(status))
	case status != -1:
		c.log.Info("relay: connection closed", "status", int(status), "err", err)
	case errors.Is(err, io.EOF) || errors.Is(err, context.Canceled):
		c.log.Debug("relay: connection ended", "err", err)
	default:
		c.log.Debug("relay: read failed", "err", err)
	}
}

// handle handles one frame; it returns false when the session is over.
func (c *conn) handle(frame []byte) bool {
	c.handleMu.Lock()
	defer c.handleMu.Unlock()
	if c.stopping {
		return false
	}
	msg, err := wire.Decode(frame)
	if err != nil {
		c.s.metrics.messagesIn.WithLabelValues("invalid").Inc()
		if id, ok := malformedApply(frame); ok && c.db != nil {
			// The client waits for an answer to its push: give it one
			// it recognizes, with its requestId.
			c.log.Warn("relay: apply_changes refused: malformed", "requestId", id, "err", err)
			c.sendError(wire.CodeApplyChangesRefused, id, "apply_changes does not decode (nothing was stored; the same frame would be refused again): %v", err)
			return true
		}
		c.sendError(wire.DecodeErrorCode(err), "", "%v", err)
		return true
	}
	c.s.metrics.messagesIn.WithLabelValues(string(msg.Type())).Inc()
	if h, ok := msg.(*wire.Handshake); ok {
		if c.db == nil && !c.handshakeDeadline.Stop() {
			return false // too late: handshakeTimedOut is closing the connection
		}
		return c.handshake(h)
	}
	if c.db == nil {
		c.sendError(wire.CodeNotAuthenticated, "", "%s before handshake: send handshake first", msg.Type())
		return true
	}
	switch m := msg.(type) {
	case *wire.Ping:
		c.send(&wire.Pong{})
	case *wire.GetChanges:
		c.getChanges(m)
	case *wire.ApplyChanges:
		c.applyChanges(m)
	case *wire.GetSnapshot:
		c.snapshot(nil, m)
	case *wire.ResumeSnapshot:
		cp := m.Checkpoint
		c.snapshot(&cp, nil)
	case *wire.PutCheckpoint:
		c.putCheckpoint(m)
	case *wire.Pong, *wire.Error:
		// A keepalive answer, or a client reporting something: nothing
		// to answer (answering an error with an error could loop).
		if e, ok := m.(*wire.Error); ok {
			c.log.Info("relay: client sent an error", "code", e.Code, "message", e.Message)
		}
	default:
		c.sendError(wire.CodeUnknownMessage, "", "%s is sent by the relay, not to it", msg.Type())
	}
	return true
}

// malformedApply reports whether a frame that wire.Decode refused is still
// valid JSON of type apply_changes, and returns its requestId when that is a
// string ("" otherwise): such a push gets APPLY_CHANGES_REFUSED echoing it,
// so that the client's push in flight ends, instead of MESSAGE_ERROR.
func malformedApply(frame []byte) (requestID string, ok bool) {
	var probe struct {
		Type      string          `json:"type"`
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(wire.FrameHead(frame), &probe) != nil || probe.Type != string(wire.TypeApplyChanges) {
		return "", false
	}
	_ = json.Unmarshal(probe.RequestID, &requestID) // not a string: no id
	return requestID, true
}

// handshake checks, in this order and before touching any storage, the
// protocol version, the database id and the credentials, then opens the
// database and answers handshake_ack.
func (c *conn) handshake(m *wire.Handshake) bool {
	if c.db != nil {
		return c.fatal(wire.CodeAlreadyAuthenticated, "this connection already completed a handshake for database %q", c.db.id)
	}
	if m.ProtocolVersion != wire.ProtocolVersion {
		if m.ProtocolVersion == 0 {
			return c.fatal(wire.CodeProtocolVersionMismatch, "handshake without protocolVersion; relay speaks %d", wire.ProtocolVersion)
		}
		return c.fatal(wire.CodeProtocolVersionMismatch, "client speaks version %d, relay speaks %d", m.ProtocolVersion, wire.ProtocolVersion)
	}
	if !wire.ValidDatabaseID(m.DatabaseID) {
		if m.DatabaseID == "" {
			return c.fatal(wire.CodeMissingDatabaseID, "handshake without databaseId")
		}
		return c.fatal(wire.CodeMissingDatabaseID, "databaseId %q does not match ^[A-Za-z0-9_.:-]{1,128}$", m.DatabaseID)
	}
	if m.SiteID.IsZero() {
		// Every replica's site id is 16 random bytes; all zeros is a
		// broken client, and it would be again after a reconnect.
		return c.fatalStatus(wire.CodeMessageError, websocket.StatusProtocolError,
			"handshake with the all-zero siteId %s: a replica's site id is 16 random bytes", m.SiteID)
	}
	ctx, cancel := context.WithTimeout(c.stopCtx, c.s.cfg.AuthTimeout)
	err := c.s.cfg.Auth.Authenticate(ctx, AuthRequest{DatabaseID: m.DatabaseID, Token: m.Token,
		SiteID: m.SiteID, RemoteAddr: c.remote, Header: c.header})
	cancel()
	c.header = nil // needed no more; a connection keeps little memory
	if err != nil {
		c.log.Warn("relay: authentication failed", "database", m.DatabaseID, "site", m.SiteID, "err", err)
		return c.fatal(wire.CodeAuthFailed, "credentials do not grant database %q", m.DatabaseID)
	}
	d, err := c.s.acquire(m.DatabaseID, m.Sealed)
	if err != nil {
		c.log.Error("relay: cannot open database", "database", m.DatabaseID, "err", err)
		c.sendError(codeInternal, "", "the relay cannot open database %q now; retry later", m.DatabaseID)
		c.closeWith(websocket.StatusInternalError, "database unavailable", true)
		return false
	}
	if d.sealed != m.Sealed {
		c.s.release(d)
		c.log.Warn("relay: handshake refused: sealed mode mismatch", "database", m.DatabaseID, "site", m.SiteID, "sealed", d.sealed)
		if d.sealed {
			return c.fatal(wire.CodeSealedMismatch, "database %q is sealed: connect with its key (the handshake must say sealed)", m.DatabaseID)
		}
		return c.fatal(wire.CodeSealedMismatch, "database %q is plain (not sealed): connect without a key", m.DatabaseID)
	}
	pos, err := d.checkPosition(m.SiteID, m.Log, m.Cursor, m.Chain, m.Horizon)
	if err != nil {
		c.s.release(d)
		c.log.Error("relay: cannot read the arrival log", "database", m.DatabaseID, "err", err)
		c.sendError(codeInternal, "", "the relay cannot read database %q now; retry later", m.DatabaseID)
		c.closeWith(websocket.StatusInternalError, "database unavailable", true)
		return false
	}
	ckCursor, ckAt, err := d.checkpointInfo()
	if err != nil {
		c.s.release(d)
		c.log.Error("relay: cannot read the sealed checkpoint", "database", m.DatabaseID, "err", err)
		c.sendError(codeInternal, "", "the relay cannot read database %q now; retry later", m.DatabaseID)
		c.closeWith(websocket.StatusInternalError, "database unavailable", true)
		return false
	}
	c.db, c.site = d, m.SiteID
	c.ws.SetReadLimit(2 * c.frameLimit()) // from the next frame on
	c.log = c.log.With("database", d.id)
	if pos.history == wire.HistoryDiverged {
		c.log.Warn("relay: a client's position is not in this log's history (restored from an older copy, truncated or replaced?); it bootstraps again",
			"site", m.SiteID, "cursor", m.Cursor, "horizon", m.Horizon)
	}
	if pos.history == wire.HistoryUnverified {
		c.log.Info("relay: a client presented a cursor without its chain value; it bootstraps again",
			"site", m.SiteID, "cursor", m.Cursor)
	}
	// The ack is queued before the connection joins the database, so no
	// push_changes can precede it.
	c.send(&wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: d.id, ServerSiteID: d.site, ConnectionID: c.id,
		SiteHLC: pos.siteHLC, SiteHLCStated: true, History: pos.history, Sealed: d.sealed,
		CheckpointCursor: ckCursor, CheckpointAt: ckAt})
	d.addConn(c)
	c.log.Info("relay: session started", "site", m.SiteID)
	return true
}

// fatal sends a fatal error and closes the connection with its code's close
// status once the error frame is written. It returns false.
func (c *conn) fatal(code wire.ErrorCode, format string, args ...any) bool {
	return c.fatalStatus(code, websocket.StatusCode(code.CloseStatus()), format, args...)
}

// fatalStatus sends an error of code marked fatal (whatever the code's own
// rule) and closes the connection with status once it is written. It
// returns false.
func (c *conn) fatalStatus(code wire.ErrorCode, status websocket.StatusCode, format string, args ...any) bool {
	c.log.Info("relay: fatal session error", "code", code, "message", fmt.Sprintf(format, args...))
	e := wire.NewError(code, format, args...)
	e.Fatal = true
	c.s.metrics.errors.WithLabelValues(string(code)).Inc()
	c.send(e)
	c.closeWith(status, string(code), true)
	return false
}

// getChanges answers get_changes.
func (c *conn) getChanges(m *wire.GetChanges) {
	var echo ownRange
	if m.OwnStated {
		echo = ownRange{above: m.OwnAbove, upTo: m.OwnUpTo, set: true}
	}
	frame, err := c.db.readChanges(m.Since, c.site, echo)
	var sr *errSnapshotRequired
	switch {
	case errors.As(err, &sr):
		c.sendError(wire.CodeSnapshotRequired, "", "%v", sr)
	case err != nil:
		c.log.Error("relay: reading the arrival log failed", "since", m.Since, "err", err)
		c.s.storageFailed(c.db.id, opRead, err)
		c.sendError(wire.CodeGetChangesError, "", "reading changes since %d failed on the relay", m.Since)
	default:
		c.s.storageOK(c.db.id, opRead)
		c.sendFrame(wire.TypeChanges, frame)
	}
}

// applyChanges answers apply_changes.
func (c *conn) applyChanges(m *wire.ApplyChanges) {
	n := 0
	for i := range m.ChangeSets {
		n += facts(&m.ChangeSets[i])
	}
	if n > c.s.cfg.MaxChangesPerApply {
		c.log.Warn("relay: apply_changes refused: too many changes", "requestId", m.RequestID, "changes", n, "limit", c.s.cfg.MaxChangesPerApply)
		c.sendError(wire.CodeApplyChangesRefused, m.RequestID,
			"apply_changes carries %d changes and migrations, above this relay's limit of %d per apply_changes (max changes per apply): send fewer ChangeSets per frame",
			n, c.s.cfg.MaxChangesPerApply)
		return
	}
	if len(m.ChangeSets) == 0 {
		c.send(&wire.ApplyResult{RequestID: m.RequestID})
		return
	}
	start := time.Now()
	res, st, answered, err := c.db.apply(c, m.RequestID, m.ChangeSets, m.Repair)
	c.s.metrics.applyDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		c.applyFailed(m.RequestID, err)
		return
	}
	c.s.storageOK(c.db.id, opWrite)
	c.s.metrics.changesApplied.Add(float64(res.Applied))
	c.s.metrics.changesSkipped.Add(float64(res.Skipped))
	c.s.metrics.changeSetsStored.Add(float64(st.n))
	if answered {
		return // queued in cursor order with the group's pushes (group.go)
	}
	ar := &wire.ApplyResult{RequestID: m.RequestID, ApplyResult: res}
	st.position(ar) // where the log holds them (wire version 9)
	c.send(ar)
}

// applyFailed answers an apply_changes that stored nothing. A refusal for
// the batch's content (refused: it would be refused again, unchanged) is
// APPLY_CHANGES_REFUSED and logged as a warning, like clock drift (an HLC
// of the client's too far ahead of the relay's clock, the engine's
// *model.DriftError: CLOCK_DRIFT, transient, it passes once the clocks
// agree); anything else is the relay's failure (storage), logged as an
// error and answered with APPLY_CHANGES_ERROR, retry later.
func (c *conn) applyFailed(requestID string, err error) {
	var drift *model.DriftError
	switch {
	case errors.Is(err, errEnvelopeRequired):
		c.log.Warn("relay: apply_changes refused: plaintext to a sealed database", "requestId", requestID, "err", err)
		c.sendError(wire.CodeEnvelopeRequired, requestID, "%v (nothing was stored)", err)
	case errors.Is(err, errEnvelopeRefused):
		c.log.Warn("relay: apply_changes refused: an envelope to a plain database", "requestId", requestID, "err", err)
		c.sendError(wire.CodeEnvelopeRefused, requestID, "%v (nothing was stored)", err)
	case refused(err):
		c.log.Warn("relay: apply_changes refused", "requestId", requestID, "err", err)
		c.sendError(wire.CodeApplyChangesRefused, requestID, "%v (nothing was stored; the same ChangeSets would be refused again)", err)
	case errors.As(err, &drift):
		c.log.Warn("relay: apply_changes rejected: clock drift", "requestId", requestID, "aheadMs", drift.Remote.Wall-drift.Now, "err", err)
		c.sendError(wire.CodeClockDrift, requestID, "%v: the device's clock is ahead of the relay's (nothing was stored; retry once the clocks agree)", drift)
	case errors.Is(err, kv.ErrCommitUnknown):
		// Shared storage lost the connection during COMMIT: the
		// changes may be stored. A resend is deduplicated either way,
		// and other relays' catch-up (or this relay's next commit) fans
		// them out if they were.
		c.log.Error("relay: apply_changes: commit outcome unknown", "requestId", requestID, "err", err)
		c.s.storageFailed(c.db.id, opWrite, err)
		c.sendError(wire.CodeApplyChangesError, requestID, "the relay lost its storage while committing the changes (they may or may not be stored): send them again later; a resend is deduplicated")
	default:
		c.log.Error("relay: apply_changes failed", "requestId", requestID, "err", err)
		c.s.storageFailed(c.db.id, opWrite, err)
		c.sendError(wire.CodeApplyChangesError, requestID, "the relay could not store the changes (nothing was stored): retry later")
	}
}

// refused reports whether an apply failed for the content of the batch, so
// that sending the same ChangeSets again would fail the same way: a relay
// refusal (errRefused), a ChangeSet the engine finds malformed, a value
// or row too large to store (model.ErrValidation, kv limits), a schema
// migration contradicting the stored schema. Clock drift is not (clocks
// move), nor is a storage failure.
func refused(err error) bool {
	for _, target := range []error{errRefused, model.ErrMalformed, model.ErrValidation, model.ErrSchema, kv.ErrValueTooLarge, kv.ErrInvalidKey} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// snapshot streams a snapshot of the database (resume: only the tables the
// checkpoint has not completed), chunk by chunk as the queue takes them, so
// at most SendQueue chunks are in memory. The header's cursor is the
// database's cursor read before the data, so the client pulls from it
// afterwards. Pushes to this connection are dropped while it streams; the
// client's catch-up from the header cursor fetches them.
//
// The header carries the newest tombstone horizon mark's wall (wire's
// "Tombstone horizon"), read with the cursor; no mark is made while the
// stream runs. A resume whose checkpoint's cursor is not below the newest
// mark's cursor is served as a new snapshot instead (a new snapshotId:
// the client's engine starts a new checkpoint): the mark may have been
// made after the interrupted stream read its data, and the resumed tables
// would be read past a pruning that the changes after the checkpoint's
// cursor precede.
//
// A new snapshot's id binds the log's chain value at its cursor
// (bindSnapshotID). A checkpoint is resumed only while the log still holds
// that position with that chain value; otherwise (the relay was restored
// from an older copy, which keeps the server site id and hands out the
// cursor again for other entries, or retention pruned past it) a fresh
// snapshot is streamed instead, under a new id and the current cursor: a
// resumed stream's client pulls from the checkpoint's cursor, and would
// skip for good the entries the log holds below it.
//
// snapshot_complete states the log's chain value at the cursor the client
// pulls from (wire version 10: snapshotComplete).
//
// For a sealed database it streams the newest sealed checkpoint instead
// (streamCheckpoint; from: a get_snapshot's resume of one), or an empty
// snapshot at cursor 0 when there is none.
func (c *conn) snapshot(resume *model.SnapshotCheckpoint, from *wire.GetSnapshot) {
	d := c.db
	if resume != nil && resume.SiteID != d.site {
		c.sendError(wire.CodeSnapshotError, "",
			"the checkpoint comes from another relay log (site %s; this database's is %s): discard it and send get_snapshot", resume.SiteID, d.site)
		return
	}
	cursor, horizon, markCursor, ended, err := d.snapshotStarted()
	defer ended()
	if err != nil {
		c.log.Error("relay: snapshot failed", "chunks", 0, "err", err)
		c.s.storageFailed(d.id, opRead, err)
		c.sendError(wire.CodeSnapshotError, "", "snapshot failed on the relay after 0 chunks: resume later")
		return
	}
	if d.sealed {
		// The relay holds no replica of a sealed database: it streams
		// the newest sealed checkpoint, or, with none, an empty snapshot
		// at the start of the log (nothing of a sealed log is pruned
		// before a checkpoint), and the client pulls every envelope
		// after it.
		c.setSnapshot(true)
		served := c.streamCheckpoint(from)
		c.setSnapshot(false)
		if served {
			return
		}
		cursor, horizon, resume = 0, 0, nil
	}
	if resume != nil && horizon != 0 && markCursor >= resume.Cursor {
		c.log.Info("relay: a tombstone horizon mark is not older than the checkpoint; sending a new snapshot instead of resuming", "checkpointCursor", resume.Cursor, "markCursor", markCursor)
		resume = nil
	}
	if resume != nil {
		held, err := d.holdsSnapshotPosition(resume)
		if err != nil {
			c.log.Error("relay: snapshot failed", "chunks", 0, "err", err)
			c.s.storageFailed(d.id, opRead, err)
			c.sendError(wire.CodeSnapshotError, "", "snapshot failed on the relay after 0 chunks: resume later")
			return
		}
		if !held {
			// Restored from an older copy, or pruned past the
			// checkpoint's cursor: pulling from that cursor would skip
			// what the log holds below it. A fresh snapshot instead (a
			// new id: the client's engine starts a new checkpoint).
			c.log.Info("relay: checkpoint's log position not held; sending a fresh snapshot", "snapshotId", resume.SnapshotID, "cursor", resume.Cursor)
			resume = nil
		}
	}
	var bind wire.Chain // the chain value at cursor, bound into a new snapshot's id
	if resume == nil {
		ch, ok, err := d.chainAt(cursor)
		if err != nil {
			c.log.Error("relay: snapshot failed", "chunks", 0, "err", err)
			c.s.storageFailed(d.id, opRead, err)
			c.sendError(wire.CodeSnapshotError, "", "snapshot failed on the relay after 0 chunks: resume later")
			return
		}
		if ok {
			bind = ch
		}
	}
	opts := engine.SnapshotOptions{Cursor: cursor, ChunkRows: c.s.cfg.SnapshotChunkRows,
		ChunkBytes: c.s.cfg.SnapshotChunkBytes, RowBytes: wire.SnapshotRowSize, Resume: resume}
	c.setSnapshot(true)
	defer c.setSnapshot(false)
	chunks := 0
	for ch, err := range d.eng.Snapshot(opts) {
		if err == nil && ch.Type == model.ChunkHeader && ch.Header != nil {
			h := *ch.Header
			h.Horizon = horizon
			ch.Header = &h
		}
		if c.stopCtx.Err() != nil {
			c.log.Info("relay: snapshot abandoned: connection closing", "chunks", chunks)
			return
		}
		if err != nil {
			c.log.Error("relay: snapshot failed", "chunks", chunks, "err", err)
			c.s.storageFailed(d.id, opRead, err)
			c.sendError(wire.CodeSnapshotError, "", "snapshot failed on the relay after %d chunks: resume later", chunks)
			return
		}
		if ch.Type == model.ChunkHeader && ch.Header != nil && !bind.IsZero() {
			h := *ch.Header
			h.SnapshotID = bindSnapshotID(h.SnapshotID, bind)
			ch.Header = &h
		}
		data, err := wire.Encode(&wire.SnapshotChunk{Chunk: ch})
		if err != nil {
			c.log.Error("relay: snapshot chunk cannot be encoded", "chunk", ch.Type, "err", err)
			c.sendError(wire.CodeSnapshotError, "", "snapshot chunk %d cannot be encoded: %v", chunks, err)
			return
		}
		if int64(len(data)) > c.s.cfg.MaxMessageSize {
			// Only a single cell larger than the frame limit (stored
			// while the limit was higher) makes such a chunk: no client
			// with this limit could read it.
			c.log.Error("relay: snapshot chunk larger than the frame limit", "chunk", ch.Type, "table", ch.Table, "bytes", len(data), "limit", c.s.cfg.MaxMessageSize)
			c.sendError(wire.CodeSnapshotError, "", "snapshot chunk %d (%s of %q) encodes to %d bytes, above the frame limit of %d: a single cell this large cannot be sent; the relay's MaxMessageSize was lowered after it was stored",
				chunks, ch.Type, ch.Table, len(data), c.s.cfg.MaxMessageSize)
			return
		}
		if !c.sendFrame(wire.TypeSnapshotChunk, data) {
			return
		}
		chunks++
	}
	c.s.storageOK(d.id, opRead)
	pullFrom := cursor
	if resume != nil {
		pullFrom = resume.Cursor // the cursor a resumed stream's client pulls from
	}
	c.send(d.snapshotComplete(pullFrom))
	c.log.Info("relay: snapshot sent", "chunks", chunks, "cursor", opts.Cursor, "resumed", resume != nil)
}

func (c *conn) setSnapshot(on bool) {
	c.pushMu.Lock()
	c.inSnapshot = on
	c.pushMu.Unlock()
}

// push queues a push_changes frame without waiting. While the connection
// streams a snapshot the frame is dropped (the client catches up from the
// snapshot's cursor). When the queue is full the connection is closed with
// status 1013 (try again later): the client reconnects and pulls from its
// cursor, and nobody waits for it. It returns false when this connection
// takes no more frames.
func (c *conn) push(frame []byte) bool {
	select {
	case <-c.kill:
		return false
	case <-c.writerDone:
		return false
	default:
	}
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	if c.inSnapshot {
		c.s.metrics.pushesDropped.WithLabelValues("snapshot").Inc()
		return false
	}
	select {
	case c.out <- outFrame{data: frame, typ: wire.TypePushChanges}:
		return true
	default:
		c.s.metrics.pushesDropped.WithLabelValues("queue_full").Inc()
		c.log.Warn("relay: send queue full; closing the connection so that the client re-pulls", "queue", cap(c.out))
		c.closeWith(websocket.StatusTryAgainLater, "send queue full", false)
		return false
	}
}

// send encodes m and queues it, waiting for room; it returns false when the
// connection is gone.
func (c *conn) send(m wire.Message) bool {
	data, err := wire.Encode(m)
	if err != nil {
		// A relay bug: the message was built here.
		c.log.Error("relay: reply cannot be encoded", "type", m.Type(), "err", err)
		return false
	}
	return c.sendFrame(m.Type(), data)
}

func (c *conn) sendFrame(t wire.MessageType, data []byte) bool {
	select {
	case c.out <- outFrame{data: data, typ: t}:
		return true
	case <-c.writerDone:
		return false
	}
}

// sendError sends an error frame of code (fatal as the code says).
func (c *conn) sendError(code wire.ErrorCode, requestID, format string, args ...any) bool {
	e := wire.NewError(code, format, args...)
	e.RequestID = requestID
	c.s.metrics.errors.WithLabelValues(string(code)).Inc()
	return c.send(e)
}

// closeWith asks the writer to close the connection with code and reason,
// after writing what is queued when flush is set. The first call wins.
func (c *conn) closeWith(code websocket.StatusCode, reason string, flush bool) {
	c.killOnce.Do(func() {
		c.killCode, c.killReason, c.killFlush = code, reason, flush
		close(c.kill)
		c.stopCancel()
	})
}

// shutdown lets the frame being handled finish, stops handling, and closes
// the connection with 1001 after flushing the queue.
func (c *conn) shutdown() {
	c.handleMu.Lock()
	c.stopping = true
	c.handleMu.Unlock()
	c.closeWith(websocket.StatusGoingAway, "relay shutting down", true)
}

// writeLoop writes queued frames until the connection is closed.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case <-c.kill:
			c.finish()
			return
		default:
		}
		select {
		case f := <-c.out:
			if !c.write(f) {
				_ = c.ws.CloseNow()
				return
			}
		case <-c.kill:
			c.finish()
			return
		case <-c.readerDone:
			select {
			case <-c.kill:
				c.finish()
			default:
				_ = c.ws.CloseNow()
			}
			return
		}
	}
}

// finish closes the connection as closeWith asked.
func (c *conn) finish() {
	if c.killFlush {
	flush:
		for {
			select {
			case f := <-c.out:
				if !c.write(f) {
					_ = c.ws.CloseNow()
					return
				}
			default:
				break flush
			}
		}
	}
	_ = c.ws.Close(c.killCode, c.killReason)
}

// write writes one frame within WriteTimeout.
func (c *conn) write(f outFrame) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.WriteTimeout)
	err := c.ws.Write(ctx, wsframe.Type(f.data), f.data)
	cancel()
	if f.done != nil {
		f.done <- err
	}
	if err != nil {
		c.log.Debug("relay: write failed", "type", f.typ, "err", err)
		return false
	}
	c.s.metrics.messagesOut.WithLabelValues(string(f.typ)).Inc()
	c.s.metrics.bytesOut.Add(float64(len(f.data)))
	return true
}
