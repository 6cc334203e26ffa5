package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// outcome is how a session ended.
type outcome struct {
	err            error // why; a *fatalError stops the run
	acked          bool  // the handshake succeeded (resets the backoff)
	snapshotFailed bool  // a snapshot transfer failed or stalled
}

// frame is one frame from the reader goroutine: a decoded message, or the
// error reading or decoding it.
type frame struct {
	msg       wire.Message
	err       error
	decodeErr bool // err is wire.Decode's: the socket is fine
}

// session is one WebSocket connection. All its fields but the outgoing
// queue belong to the run goroutine, which handles the incoming frames one
// at a time in arrival order and owns every timer; the reader and writer
// goroutines only move bytes.
type session struct {
	c    *Client
	db   *engine.Engine
	t    target
	ctx  context.Context // ends with the session
	conn socket
	in   chan frame
	werr chan error // cap 1: the writer failed

	outMu  sync.Mutex
	outQ   [][]byte
	outSig chan struct{} // cap 1: outQ is not empty

	acked    bool
	ns       string // key namespace, from handshake_ack
	cursor   uint64 // received watermark (arrival sequence)
	sent     engine.HLC
	synced   bool // the first pull after the handshake (or a snapshot) ended
	lastRecv time.Time
	lastSent time.Time // when the last frame was queued

	pulling   bool      // a get_changes is in flight
	pullAt    time.Time // when it was sent
	pullWant  uint64    // highest cursor seen in a push_changes
	pullFails int
	pullRetry Timer

	push          *inflight // the apply_changes in flight
	pushFails     int
	pushRetry     Timer
	flushDeferred bool // a flush was asked for while pushes were held
	deb           debouncer
	debTimer      Timer

	snap       *snapTransfer // the snapshot stream in flight
	stallTimer Timer

	keepTimer Timer
}

type inflight struct {
	id   string
	hlc  engine.HLC         // the highest ChangeSet hlc of the request
	sets []engine.ChangeSet // the request's ChangeSets (to split a refused one)
	full bool               // the request hit a limit: more may be pending
	at   time.Time

	// ahead is the batch after this one, read while the relay works on
	// this one (full requests only); aheadFull is its full flag.
	ahead     []engine.ChangeSet
	aheadFull bool
}

type snapTransfer struct {
	cursor uint64 // the cursor to resume pulling from (valid once started)
	header bool   // the header chunk was applied
	done   bool   // the footer was applied
}

// session dials t and runs one connection until it ends.
func (c *Client) session(ctx context.Context, t target) outcome {
	c.setState(Connecting)
	hsCtx, hsCancel := context.WithCancel(ctx)
	defer hsCancel()
	hsTimer := c.clock.AfterFunc(c.opts.HandshakeTimeout, hsCancel)
	defer hsTimer.Stop()

	conn, err := dialSocket(hsCtx, t.url, nil, c.opts.MaxMessageSize)
	if err != nil {
		if ctx.Err() == nil && hsCtx.Err() != nil {
			err = fmt.Errorf("%w: dialing %s took longer than %v", ErrTimeout, t.url, c.opts.HandshakeTimeout)
		}
		return outcome{err: err}
	}

	sctx, scancel := context.WithCancel(ctx)
	s := &session{
		c: c, db: c.db, t: t, ctx: sctx, conn: conn,
		in:       make(chan frame, 4),
		werr:     make(chan error, 1),
		outSig:   make(chan struct{}, 1),
		lastRecv: c.clock.Now(),
		lastSent: c.clock.Now(),
		deb:      debouncer{window: c.opts.DebounceWindow, maxWait: c.opts.MaxWait},
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.read() }()
	go func() { defer wg.Done(); s.write() }()

	c.setState(Syncing)
	s.keepTimer = c.clock.NewTimer(c.opts.PingInterval)
	s.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: t.databaseID, SiteID: c.db.SiteID(), Token: t.token})
	o := s.loop(hsCtx.Done(), hsTimer)

	for _, tm := range []Timer{s.keepTimer, s.debTimer, s.pushRetry, s.pullRetry, s.stallTimer} {
		stopTimer(tm)
	}
	closeSocket(conn, ctx.Err() != nil)
	scancel()
	wg.Wait()
	if s.snap != nil {
		c.setProgress(nil)
	}
	o.acked = o.acked || s.acked
	return o
}

// loop handles events until the session ends.
func (s *session) loop(hsDone <-chan struct{}, hsTimer Timer) outcome {
	for {
		var err error
		select {
		case <-s.ctx.Done():
			return outcome{err: s.ctx.Err()}
		case <-hsDone:
			return outcome{err: fmt.Errorf("%w: no handshake_ack within %v", ErrTimeout, s.c.opts.HandshakeTimeout)}
		case f := <-s.in:
			s.lastRecv = s.c.clock.Now()
			err = s.handle(f)
			if s.acked && hsDone != nil {
				hsTimer.Stop()
				hsDone = nil
			}
		case err = <-s.werr:
		case <-s.c.kick:
			s.localChange()
		case <-s.c.snapReq:
			s.snapshotRequested()
		case <-timerC(s.debTimer):
			s.onDebounceTimer()
		case <-timerC(s.pushRetry):
			s.onPushRetry()
		case <-timerC(s.pullRetry):
			s.onPullRetry()
		case <-timerC(s.keepTimer):
			err = s.keepalive()
		case <-timerC(s.stallTimer):
			s.stallTimer = nil
			return outcome{err: fmt.Errorf("%w: no chunk for %v", ErrSnapshotStalled, s.c.opts.SnapshotStallTimeout), snapshotFailed: true}
		}
		if err != nil {
			var sf *snapshotFailure
			if errors.As(err, &sf) {
				return outcome{err: sf.err, snapshotFailed: true}
			}
			return outcome{err: err}
		}
	}
}

// snapshotFailure ends a session whose snapshot transfer failed.
type snapshotFailure struct{ err error }

func (f *snapshotFailure) Error() string { return f.err.Error() }

// handle processes one incoming frame; a non-nil error ends the session.
func (s *session) handle(f frame) error {
	if f.err != nil {
		if !f.decodeErr {
			return closeError(f.err)
		}
		if errors.Is(f.err, wire.ErrUnknownType) {
			s.c.report(fmt.Errorf("%w: %w", ErrProtocol, f.err))
			return nil
		}
		return fmt.Errorf("%w: %w", ErrProtocol, f.err)
	}
	switch m := f.msg.(type) {
	case *wire.HandshakeAck:
		return s.onHandshakeAck(m)
	case *wire.Error:
		return s.onError(m)
	case *wire.Ping:
		s.send(&wire.Pong{})
		return nil
	case *wire.Pong:
		return nil
	}
	if !s.acked {
		return fmt.Errorf("%w: %s before handshake_ack", ErrProtocol, f.msg.Type())
	}
	switch m := f.msg.(type) {
	case *wire.Changes:
		s.onChanges(m)
	case *wire.ApplyResult:
		s.onApplyResult(m)
	case *wire.PushChanges:
		s.onPushChanges(m)
	case *wire.SnapshotChunk:
		return s.onSnapshotChunk(m)
	case *wire.SnapshotComplete:
		return s.onSnapshotComplete()
	default:
		return fmt.Errorf("%w: unexpected %s from the relay", ErrProtocol, f.msg.Type())
	}
	return nil
}

// closeError maps a read error to the session's end: a fatal close status
// (4001–4004) without its error frame is fatal as well.
func closeError(err error) error {
	st := closeStatus(err)
	var code wire.ErrorCode
	switch st {
	case wire.CloseAuthFailed:
		code = wire.CodeAuthFailed
	case wire.CloseMissingDatabaseID:
		code = wire.CodeMissingDatabaseID
	case wire.CloseProtocolVersionMismatch:
		code = wire.CodeProtocolVersionMismatch
	case wire.CloseAlreadyAuthenticated:
		code = wire.CodeAlreadyAuthenticated
	default:
		return fmt.Errorf("client: connection lost: %w", err)
	}
	return &fatalError{&wire.Error{Code: code, Message: fmt.Sprintf("relay closed the connection with status %d", st), Fatal: true}}
}

func (s *session) onHandshakeAck(m *wire.HandshakeAck) error {
	if s.acked {
		return fmt.Errorf("%w: second handshake_ack", ErrProtocol)
	}
	if m.ProtocolVersion != wire.ProtocolVersion {
		v := "none"
		if m.ProtocolVersion != 0 {
			v = fmt.Sprint(m.ProtocolVersion)
		}
		return &fatalError{fmt.Errorf("%w: relay %s, client %d", ErrProtocolVersion, v, wire.ProtocolVersion)}
	}
	if m.DatabaseID != s.t.databaseID {
		return &fatalError{fmt.Errorf("%w: handshake_ack for database %q, asked for %q", ErrProtocol, m.DatabaseID, s.t.databaseID)}
	}
	ns := namespace(m.ServerSiteID, s.t.databaseID)
	cursor, haveCursor, err := loadCursor(s.db, ns)
	if err != nil {
		return err
	}
	sent, err := loadSent(s.db, ns)
	if err != nil {
		return err
	}
	s.acked = true // only now: a local failure above keeps the backoff growing
	s.ns, s.cursor, s.sent = ns, cursor, sent
	s.c.setSent(s.ns, sent)
	if hint, err := s.db.State(relayKey(s.t.url, s.t.databaseID)); err != nil {
		return err
	} else if string(hint) != s.ns {
		if err := s.db.SetState(relayKey(s.t.url, s.t.databaseID), []byte(s.ns)); err != nil {
			return err
		}
	}
	s.c.log.Debug("replica sync: handshake done", "url", s.t.url, "database", s.t.databaseID, "connection", m.ConnectionID, "cursor", cursor)

	cp, err := s.db.SnapshotCheckpoint()
	if err != nil {
		return err
	}
	if cp != nil {
		s.c.takeSnapshotRequest()
		s.startSnapshot(cp)
		return nil
	}
	bootstrap := s.c.takeSnapshotRequest()
	if !bootstrap && !haveCursor {
		own, err := s.db.HasOwnFacts()
		if err != nil {
			return err
		}
		bootstrap = !own
	}
	if bootstrap {
		s.startSnapshot(nil)
		return nil
	}
	s.pull()
	return nil
}

func (s *session) onError(m *wire.Error) error {
	if m.Fatal {
		return &fatalError{m}
	}
	if m.Code == wire.CodeApplyChangesRefused && m.RequestID != "" && s.push != nil && m.RequestID == s.push.id {
		s.pushRefused(m) // reports the refused transaction once isolated
		return nil
	}
	if m.Code == wire.CodeMessageTooLarge && m.RequestID == "" && s.push != nil {
		// The relay's frame limit is below ours (it could not read the
		// frame, so no requestId): after the handshake only a push can be
		// that large. Split it like a refusal; a transaction too large
		// alone is skipped and reported (ErrTooLarge).
		s.pushRefused(m)
		return nil
	}
	s.c.report(m)
	switch {
	case m.RequestID != "":
		if s.push != nil && m.RequestID == s.push.id {
			s.pushFailed()
		}
	case m.Code == wire.CodeSnapshotRequired:
		if s.snap == nil {
			s.pulling = false
			s.startSnapshot(nil)
		}
	case m.Code == wire.CodeGetChangesError:
		if s.pulling {
			s.pulling = false
			s.pullFailed()
		}
	case m.Code == wire.CodeSnapshotError:
		if s.snap != nil {
			return &snapshotFailure{m}
		}
	case m.Code == wire.CodeApplyChangesError, m.Code == wire.CodeApplyChangesRefused:
		if s.push != nil {
			s.pushFailed()
		}
	}
	return nil
}

// pull sends get_changes from the cursor unless one is in flight, a
// snapshot is landing, or a retry is scheduled.
func (s *session) pull() {
	if s.pulling || s.snap != nil || s.pullRetry != nil {
		return
	}
	s.pulling, s.pullAt = true, s.c.clock.Now()
	s.send(&wire.GetChanges{Since: s.cursor})
}

func (s *session) pullFailed() {
	s.pullRetry = s.c.clock.NewTimer(backoff(s.pullFails, s.c.opts.BackoffBase, s.c.opts.BackoffMax, s.c.opts.Rand()))
	s.pullFails++
}

func (s *session) onChanges(m *wire.Changes) {
	if s.snap != nil || !s.pulling {
		return // dropped: the pull after the snapshot fetches them again
	}
	s.pulling = false
	next := max(s.cursor, m.Cursor)
	if len(m.ChangeSets) > 0 {
		res, err := s.db.Apply(m.ChangeSets, engine.ApplyOptions{State: map[string][]byte{cursorKey(s.ns): encodeCursor(next)}})
		if err != nil {
			s.c.report(fmt.Errorf("client: applying changes %d..%d: %w", m.Cursor-uint64(len(m.ChangeSets))+1, m.Cursor, err))
			s.pullFailed()
			return
		}
		s.c.post(Event{Type: ChangesApplied, Result: res})
	} else if next != s.cursor {
		if err := s.db.SetState(cursorKey(s.ns), encodeCursor(next)); err != nil {
			s.c.report(err)
			s.pullFailed()
			return
		}
	}
	s.cursor = next
	s.pullFails = 0
	if m.More || s.pullWant > s.cursor {
		s.pull()
		return
	}
	if !s.synced {
		s.synced = true
		s.c.setState(Synced)
		s.flush()
	}
}

func (s *session) onPushChanges(m *wire.PushChanges) {
	n := uint64(len(m.ChangeSets))
	if s.snap != nil || n == 0 || m.Cursor <= s.cursor {
		return // landing snapshot, or nothing this replica lacks
	}
	// The ChangeSets carry the sequences m.Cursor-n+1 … m.Cursor. They
	// continue this replica's log when the first of them is at most one
	// past the cursor.
	contiguous := n <= m.Cursor && m.Cursor-n <= s.cursor
	var opts engine.ApplyOptions
	if contiguous {
		opts.State = map[string][]byte{cursorKey(s.ns): encodeCursor(m.Cursor)}
	}
	res, err := s.db.Apply(m.ChangeSets, opts)
	if err != nil {
		s.c.report(fmt.Errorf("client: applying push_changes up to %d: %w", m.Cursor, err))
		contiguous = false
	} else {
		s.c.post(Event{Type: ChangesApplied, Result: res})
	}
	if contiguous {
		s.cursor = m.Cursor
		return
	}
	s.pullWant = max(s.pullWant, m.Cursor)
	s.pull()
}

// localChange feeds a local change to the debouncer.
func (s *session) localChange() {
	flush, next := s.deb.change(s.c.clock.Now())
	s.armDebounce(next)
	if flush {
		s.flush()
	}
}

func (s *session) onDebounceTimer() {
	s.debTimer = nil
	flush, next := s.deb.fire(s.c.clock.Now())
	s.armDebounce(next)
	if flush {
		s.flush()
	}
}

func (s *session) onPushRetry() {
	s.pushRetry = nil
	s.flush()
}

func (s *session) onPullRetry() {
	s.pullRetry = nil
	s.pull()
}

func (s *session) armDebounce(next time.Time) {
	stopTimer(s.debTimer)
	s.debTimer = nil
	if !next.IsZero() {
		s.debTimer = s.c.clock.NewTimer(next.Sub(s.c.clock.Now()))
	}
}

// flush pushes the local ChangeSets above the sent watermark, or defers
// the push while pushes are held (before the first pull ends, while a
// snapshot lands, while a push is in flight or waits to be retried).
func (s *session) flush() {
	if !s.synced || s.snap != nil || s.push != nil || s.pushRetry != nil {
		s.flushDeferred = true
		return
	}
	s.flushDeferred = false
	s.sendPush(nil, true, 0)
}

// readLocal reads a push's worth of local ChangeSets above since; full
// reports that the push limit was reached (more may follow).
func (s *session) readLocal(since engine.HLC) (sets []engine.ChangeSet, full bool, err error) {
	limit := s.c.opts.PushLimit
	sets, err = s.db.ChangesSince(since, limit, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		return nil, false, err
	}
	facts := 0
	for i := range sets {
		facts += len(sets[i].Changes) + len(sets[i].Migrations)
	}
	return sets, facts >= limit, nil
}

// sendPush sends the next apply_changes: sets, whole local transactions
// in the log's order starting with the oldest above the sent watermark,
// at most maxSets of them (0: no bound), then the rest; full reports that
// more may follow sets in the log (nil sets and full: read them now). A
// batch that does not encode within MaxMessageSize is halved, the rest
// kept to follow it; a single transaction that does not is skipped (see
// skip) and the next one tried. When more follows, the next batch is read
// ahead while the relay works on this one.
func (s *session) sendPush(sets []engine.ChangeSet, full bool, maxSets int) {
	for {
		if len(sets) == 0 {
			if !full && !s.flushDeferred {
				return
			}
			// Commits deferred while the previous push was in flight are
			// read now, even when everything kept to follow it was
			// skipped.
			s.flushDeferred = false
			var err error
			if sets, full, err = s.readLocal(s.sent); err != nil {
				s.c.report(fmt.Errorf("client: reading local changes: %w", err))
				s.pushFailed()
				return
			}
			if len(sets) == 0 {
				return
			}
		}
		id := s.c.peekRequestID()
		batch := sets
		if maxSets > 0 && len(batch) > maxSets {
			batch = batch[:maxSets]
		}
		maxSets = 0
		var b []byte
		var err error
		for {
			b, err = wire.Encode(&wire.ApplyChanges{RequestID: id, ChangeSets: batch})
			if (err == nil && int64(len(b)) <= s.c.opts.MaxMessageSize) || len(batch) == 1 {
				break
			}
			batch = batch[:len(batch)/2]
		}
		if err != nil || int64(len(b)) > s.c.opts.MaxMessageSize {
			cs := &sets[0]
			if err != nil {
				s.skip(cs, "", fmt.Sprintf("it does not encode: %v", err), err)
			} else {
				s.skip(cs, "", fmt.Sprintf("it encodes to %d bytes, above the message size limit of %d (Options.MaxMessageSize)", len(b), s.c.opts.MaxMessageSize), ErrTooLarge)
			}
			sets = sets[1:]
			continue
		}
		s.c.takeRequestID()
		rest := sets[len(batch):]
		var top engine.HLC
		for i := range batch {
			if top.Less(batch[i].HLC) {
				top = batch[i].HLC
			}
		}
		p := &inflight{id: id, hlc: top, sets: batch, full: full || len(rest) > 0, at: s.c.clock.Now()}
		s.push = p
		s.sendFrame(b)
		switch {
		case len(rest) > 0:
			p.ahead, p.aheadFull = rest, full
		case full:
			// Read ahead: the ChangeSets after this push, used when its
			// ack comes. Facts overwritten meanwhile are pushed as read:
			// they lose to the newer write, which goes out later.
			next, nextFull, err := s.readLocal(top)
			if err == nil {
				p.ahead, p.aheadFull = next, nextFull
			}
		}
		return
	}
}

// skip gives up pushing cs, which would fail the same way if sent again:
// it reports why (a *RefusedError with code, msg and the cause) and moves
// the sent watermark past cs, stored as for an ack, so that the
// transactions after it are pushed. cs stays in the replica.
func (s *session) skip(cs *engine.ChangeSet, code wire.ErrorCode, msg string, cause error) {
	err := &RefusedError{TransactionID: cs.TransactionID, HLC: cs.HLC, Code: code, Message: msg, Err: cause}
	s.c.log.Warn("replica sync: a local transaction will not be synced", "transaction", cs.TransactionID, "err", err)
	s.c.report(err)
	s.advanceSent(cs.HLC)
}

// advanceSent moves the sent watermark forward to h and stores it.
func (s *session) advanceSent(h engine.HLC) {
	if !s.sent.Less(h) {
		return
	}
	s.sent = h
	s.c.setSent(s.ns, h)
	if err := s.db.SetState(sentKey(s.ns), encodeHLC(h)); err != nil {
		s.c.report(fmt.Errorf("client: storing the sent watermark: %w", err))
	}
}

// pushRefused handles APPLY_CHANGES_REFUSED for the push in flight, and
// MESSAGE_TOO_LARGE while a push is in flight (a relay whose frame limit
// is below the client's MaxMessageSize): the relay stored none of it and
// would refuse it again. A batch of several
// transactions is split, the first half pushed with the rest to follow,
// until the refused one goes alone; a single refused transaction is
// skipped.
func (s *session) pushRefused(m *wire.Error) {
	p := s.push
	s.push = nil
	s.pushFails = 0
	if len(p.sets) > 1 {
		s.c.log.Debug("replica sync: push refused; splitting it", "requestId", p.id, "transactions", len(p.sets), "err", m)
		if s.snap != nil {
			s.flushDeferred = true
			return
		}
		s.sendPush(p.sets, p.full, len(p.sets)/2)
		return
	}
	var cause error = m
	if m.Code == wire.CodeMessageTooLarge {
		cause = fmt.Errorf("%w: %w", ErrTooLarge, m)
	}
	s.skip(&p.sets[0], m.Code, m.Message, cause)
	s.pushNext(p)
}

func (s *session) pushFailed() {
	s.push = nil
	stopTimer(s.pushRetry)
	s.pushRetry = s.c.clock.NewTimer(backoff(s.pushFails, s.c.opts.BackoffBase, s.c.opts.BackoffMax, s.c.opts.Rand()))
	s.pushFails++
}

func (s *session) onApplyResult(m *wire.ApplyResult) {
	if s.push == nil || m.RequestID != s.push.id {
		s.c.log.Debug("replica sync: ignoring an apply_result that answers no push in flight", "requestId", m.RequestID)
		return
	}
	p := s.push
	s.push = nil
	s.pushFails = 0
	s.advanceSent(p.hlc)
	s.c.post(Event{Type: PushAcked, Result: m.ApplyResult})
	s.pushNext(p)
}

// pushNext sends what follows p, once p is done (acknowledged or
// skipped).
func (s *session) pushNext(p *inflight) {
	switch {
	case s.snap != nil:
		s.flushDeferred = true
	case len(p.ahead) > 0:
		s.sendPush(p.ahead, p.aheadFull, 0)
	case p.full || s.flushDeferred:
		s.flush()
	}
}

// snapshotRequested serves RequestSnapshot.
func (s *session) snapshotRequested() {
	if !s.acked {
		return // the handshake_ack takes the request
	}
	if !s.c.takeSnapshotRequest() {
		return
	}
	if s.snap != nil {
		return // joins the transfer in flight
	}
	s.startSnapshot(nil)
}

// startSnapshot sends get_snapshot, or resume_snapshot for cp.
func (s *session) startSnapshot(cp *engine.SnapshotCheckpoint) {
	s.pulling = false
	s.synced = false
	s.snap = &snapTransfer{}
	s.c.setState(Syncing)
	s.c.setProgress(&engine.SnapshotProgress{})
	s.armStall()
	if cp != nil {
		s.send(&wire.ResumeSnapshot{Checkpoint: *cp})
	} else {
		s.send(&wire.GetSnapshot{})
	}
}

func (s *session) armStall() {
	stopTimer(s.stallTimer)
	s.stallTimer = s.c.clock.NewTimer(s.c.opts.SnapshotStallTimeout)
}

func (s *session) onSnapshotChunk(m *wire.SnapshotChunk) error {
	if s.snap == nil {
		return fmt.Errorf("%w: snapshot_chunk without a snapshot request", ErrProtocol)
	}
	if s.snap.done {
		return &snapshotFailure{fmt.Errorf("%w: snapshot_chunk after the footer", ErrProtocol)}
	}
	s.armStall()
	p, err := s.db.ApplySnapshotChunk(m.Chunk)
	if err != nil {
		err = fmt.Errorf("client: applying a snapshot %s chunk: %w", m.Chunk.Type, err)
		s.c.report(err)
		return &snapshotFailure{err}
	}
	if m.Chunk.Type == engine.ChunkHeader {
		// The engine keeps the checkpoint's cursor when the header
		// resumes it, and takes the header's otherwise.
		s.snap.header = true
		s.snap.cursor = m.Chunk.Header.Cursor
		cp, err := s.db.SnapshotCheckpoint()
		if err != nil {
			return &snapshotFailure{err}
		}
		if cp != nil && cp.SnapshotID == m.Chunk.Header.SnapshotID {
			s.snap.cursor = cp.Cursor
		}
	}
	if p.Done {
		if err := s.db.SetState(cursorKey(s.ns), encodeCursor(s.snap.cursor)); err != nil {
			return &snapshotFailure{err}
		}
		s.cursor = s.snap.cursor
		s.snap.done = true
	}
	s.c.setProgress(&p)
	return nil
}

func (s *session) onSnapshotComplete() error {
	if s.snap == nil {
		return fmt.Errorf("%w: snapshot_complete without a snapshot request", ErrProtocol)
	}
	if !s.snap.done {
		return &snapshotFailure{fmt.Errorf("%w: snapshot_complete before the footer", ErrProtocol)}
	}
	s.snap = nil
	stopTimer(s.stallTimer)
	s.stallTimer = nil
	s.c.snapFails = 0
	s.c.setProgress(nil)
	s.pullWant = 0
	s.pull()
	return nil
}

// keepalive runs every PingInterval: it closes a session that received
// nothing for two intervals or left a request unanswered for the request
// timeout, and pings when it received nothing for an interval (is the relay
// there?) or sent nothing for an interval (the relay closes connections
// silent for its idle timeout, even while it pushes to them).
func (s *session) keepalive() error {
	now := s.c.clock.Now()
	iv := s.c.opts.PingInterval
	idle := now.Sub(s.lastRecv)
	if idle >= 2*iv {
		return fmt.Errorf("%w: nothing received for %v", ErrTimeout, idle)
	}
	if s.pulling && now.Sub(s.pullAt) >= s.c.opts.RequestTimeout {
		return fmt.Errorf("%w: get_changes unanswered for %v", ErrTimeout, now.Sub(s.pullAt))
	}
	if s.push != nil && now.Sub(s.push.at) >= s.c.opts.RequestTimeout {
		return fmt.Errorf("%w: %s unanswered for %v", ErrTimeout, s.push.id, now.Sub(s.push.at))
	}
	if idle >= iv || now.Sub(s.lastSent) >= iv {
		s.send(&wire.Ping{})
	}
	s.keepTimer = s.c.clock.NewTimer(iv)
	return nil
}

// send queues m for the writer. Encoding a message the client built
// cannot fail unless the client has a bug; that is reported.
func (s *session) send(m wire.Message) {
	b, err := wire.Encode(m)
	if err != nil {
		s.c.report(fmt.Errorf("client: encoding %s: %w", m.Type(), err))
		return
	}
	s.sendFrame(b)
}

func (s *session) sendFrame(b []byte) {
	s.lastSent = s.c.clock.Now()
	s.outMu.Lock()
	s.outQ = append(s.outQ, b)
	s.outMu.Unlock()
	select {
	case s.outSig <- struct{}{}:
	default:
	}
}

// write sends queued frames in order until the session ends or a write
// fails.
func (s *session) write() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.outSig:
		}
		s.outMu.Lock()
		q := s.outQ
		s.outQ = nil
		s.outMu.Unlock()
		for _, b := range q {
			if err := s.conn.Write(s.ctx, b); err != nil {
				select {
				case s.werr <- fmt.Errorf("client: connection lost: %w", err):
				default:
				}
				return
			}
		}
	}
}

// read decodes incoming frames and hands them to the session in order,
// until the session ends or the socket fails.
func (s *session) read() {
	for {
		text, b, err := s.conn.Read(s.ctx)
		var f frame
		switch {
		case err != nil:
			f.err = err
		case !text:
			f.err, f.decodeErr = fmt.Errorf("%w: binary frame", ErrProtocol), true
		default:
			f.msg, f.err = wire.Decode(b)
			f.decodeErr = f.err != nil
		}
		select {
		case s.in <- f:
		case <-s.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}
