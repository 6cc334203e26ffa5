package client

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Sealed checkpoints (see "Sealed checkpoints" in the package
// documentation): this device uploads its snapshot, sealed part by part,
// when the relay's newest checkpoint lags; a bootstrapping device opens
// and applies one, and refuses one that does not verify.

// Defaults of Options.CheckpointChanges and Options.CheckpointInterval.
const (
	DefaultCheckpointChanges  = 1000
	DefaultCheckpointInterval = 24 * time.Hour
)

// ErrCheckpointRefused is reported (ErrorReported) when a sealed checkpoint
// the relay streams does not verify: a part does not authenticate (it
// wraps ErrEnvelopeInvalid: altered, renumbered, moved to another cursor or
// checkpoint, its last flag changed), or the snapshot inside is malformed.
// (A part no key of the client opens, ErrDecryptFailed, is held instead,
// as the log's envelopes are.) (Parts missing or out of order on the way fail the
// transfer instead, retried as a plain snapshot's: the checkpoint is not
// at fault.) Nothing more of it is
// applied, and the device falls back to the log: it pulls from cursor 0.
// When the relay pruned the log below that checkpoint, that pull gets
// SNAPSHOT_REQUIRED and the session stops pulling (reported again) until a
// device uploads a newer checkpoint.
var ErrCheckpointRefused = errors.New("client: sealed checkpoint refused")

// ckptUpload is a sealed checkpoint this session is uploading.
type ckptUpload struct {
	part   wire.CheckpointPart // the part in flight (Envelope set)
	next   func() (model.SnapshotChunk, error, bool)
	stop   func()
	parts  int
	bytes  int
	marked bool // a horizon mark was applied meanwhile: abandon
}

// ckptStream is the state of a sealed checkpoint being received.
type ckptStream struct {
	id      string
	site    model.SiteID
	hlc     model.HLC
	cursor  uint64
	next    uint32
	refused bool
	// keyMissing: a part no key of the client opens (DECRYPT_FAILED):
	// nothing more is applied, and the session stops as for an envelope
	// of the log (keyMissing), holding the checkpoint until SetSealer.
	keyMissing error
	// snapID is the snapshot id of the header inside part 0.
	snapID string
	// tables and rows count the tables completed and the row entries
	// applied over the whole transfer (resumed ones included).
	tables int
	rows   int64
	// resume is where this stream resumes an interrupted transfer (the
	// relay skipped the parts between 1 and resume.fromPart), nil when it
	// streams every part.
	resume *sealedResume
}

// sealedResume is where an interrupted transfer of a sealed checkpoint
// resumes, stored under sync:<serverSiteId>/<databaseId>:sealedsnap as
// "<checkpointId> <snapshotId> <fromPart> <tables> <rows>" (ids quoted as
// Go strings) after each table the engine completed: the next part, the
// tables completed and the row entries they held.
type sealedResume struct {
	ckptID, snapID string
	fromPart       uint32
	tables         int
	rows           int64
}

func sealedSnapKey(ns string) string { return ns + ":sealedsnap" }

func (r sealedResume) encode() []byte {
	b := strconv.AppendQuote(nil, r.ckptID)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, r.snapID)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(r.fromPart), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.tables), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, r.rows, 10)
}

// decodeSealedResume parses encode's form.
func decodeSealedResume(v string) (r sealedResume, ok bool) {
	var err error
	for _, id := range []*string{&r.ckptID, &r.snapID} {
		q, qerr := strconv.QuotedPrefix(v)
		if qerr != nil {
			return r, false
		}
		if *id, err = strconv.Unquote(q); err != nil || len(v) <= len(q) || v[len(q)] != ' ' {
			return r, false
		}
		v = v[len(q)+1:]
	}
	f := strings.Split(v, " ")
	if len(f) != 3 {
		return r, false
	}
	part, err1 := strconv.ParseUint(f[0], 10, 32)
	tables, err2 := strconv.Atoi(f[1])
	rows, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return r, false
	}
	r.fromPart, r.tables, r.rows = uint32(part), tables, rows
	return r, true
}

// loadSealedResume returns the stored resume point that continues the
// engine's snapshot checkpoint cp, or nil (none, another transfer's, or
// one that does not decode).
func (s *session) loadSealedResume(cp *model.SnapshotCheckpoint) *sealedResume {
	v, err := s.db.State(sealedSnapKey(s.ns))
	if err != nil || v == nil || cp == nil {
		return nil
	}
	r, ok := decodeSealedResume(string(v))
	if !ok {
		return nil
	}
	if r.snapID != cp.SnapshotID || r.tables != len(cp.CompletedTables) || r.fromPart <= 2 || r.rows < 0 {
		return nil
	}
	return &r
}

// rewriteResumed adapts the chunk inside part p of a resumed transfer to
// what the engine expects of a resumed stream (as a plain relay streams
// one): the header lists the tables not completed, the footer counts this
// stream's tables and rows. An error ends the session (the next one
// streams every part).
func (s *session) rewriteResumed(st *ckptStream, chunk *model.SnapshotChunk) error {
	r := st.resume
	switch chunk.Type {
	case model.ChunkHeader:
		cp, err := s.db.SnapshotCheckpoint()
		if err != nil {
			return err
		}
		h := *chunk.Header
		if cp == nil || cp.SnapshotID != h.SnapshotID || len(h.Tables) < r.tables || !slices.Equal(h.Tables[:r.tables], cp.CompletedTables) {
			return errors.New("the checkpoint does not continue the interrupted transfer")
		}
		h.Tables = h.Tables[r.tables:]
		chunk.Header = &h
	case model.ChunkFooter:
		f := *chunk.Footer
		if f.Tables < r.tables || f.Rows < r.rows {
			return errors.New("the checkpoint's footer counts less than the transfer applied")
		}
		f.Tables -= r.tables
		f.Rows -= r.rows
		chunk.Footer = &f
	}
	return nil
}

// endUpload ends the upload in flight; with err, it is abandoned for this
// session (logged; a later session tries again).
func (s *session) endUpload(err error) {
	if s.upload == nil {
		return
	}
	s.upload.stop()
	s.upload = nil
	if err != nil {
		s.ckptOff = true
		s.c.log.Warn("replica sync: sealed checkpoint abandoned", "err", err)
	}
}

// onCheckpointResult takes the relay's answer to the part in flight.
func (s *session) onCheckpointResult(m *wire.CheckpointResult) {
	u := s.upload
	if u == nil || m.CheckpointID != u.part.CheckpointID || m.Part != u.part.Part {
		return // an upload abandoned meanwhile
	}
	if u.marked {
		s.endUpload(nil) // a mark pruned the data meanwhile; the next pull may start another
		return
	}
	if m.Stored || u.part.Last {
		if m.Stored {
			s.ckptCursor, s.ckptAt = u.part.Cursor, uint64(s.c.clock.Now().UnixMilli())
			s.c.log.Debug("replica sync: sealed checkpoint stored", "cursor", u.part.Cursor, "parts", u.parts, "bytes", u.bytes)
			s.c.post(Event{Type: CheckpointUploaded, Cursor: u.part.Cursor})
			s.endUpload(nil)
		} else {
			s.endUpload(fmt.Errorf("the relay did not store checkpoint %s", u.part.CheckpointID))
		}
		return
	}
	u.part.Part++
	s.sendCheckpointPart()
}

// onCheckpointPart applies one part of a sealed checkpoint the relay
// streams (in answer to get_snapshot): it opens the part and applies the
// snapshot chunk inside as a plain snapshot's. A part that does not verify
// refuses the checkpoint (refuseCheckpoint).
func (s *session) onCheckpointPart(m *wire.CheckpointPartMessage) error {
	if s.snap == nil || !s.c.sealed() {
		return fmt.Errorf("%w: checkpoint_part without a sealed snapshot request", ErrProtocol)
	}
	s.armStall()
	st := s.snap.ckpt
	p := &m.CheckpointPart
	switch {
	case st != nil && (st.refused || st.keyMissing != nil):
		return nil // the rest of a refused or unopenable checkpoint
	case st == nil && p.Part != 0:
		// A part lost on the way, or withheld: the transfer fails, as a
		// plain snapshot with a chunk missing, and is asked again after
		// a backoff; the checkpoint itself is not at fault.
		return &snapshotFailure{fmt.Errorf("%w: the sealed checkpoint stream starts at part %d", ErrProtocol, p.Part)}
	case st == nil && s.c.refusedCkpt == p.CheckpointID:
		s.snap.ckpt = &ckptStream{id: p.CheckpointID, refused: true}
		s.c.report(fmt.Errorf("%w: checkpoint %s was refused before; falling back to the log", ErrCheckpointRefused, p.CheckpointID))
		return nil
	case st == nil:
		st = &ckptStream{id: p.CheckpointID, site: p.SiteID, hlc: p.HLC, cursor: p.Cursor}
		if r := s.snap.sealedFrom; r != nil && r.ckptID == p.CheckpointID {
			st.resume, st.tables, st.rows = r, r.tables, r.rows
		}
		s.snap.ckpt = st
	case p.CheckpointID != st.id || p.SiteID != st.site || p.HLC != st.hlc || p.Cursor != st.cursor || p.Part != st.next:
		return &snapshotFailure{fmt.Errorf("%w: part %d of sealed checkpoint %s follows part %d of checkpoint %s", ErrProtocol, p.Part, p.CheckpointID, st.next-1, st.id)}
	}
	chunk, err := seal.OpenCheckpointPart(s.c.sealerNow(), s.t.databaseID, p)
	if errors.Is(err, seal.ErrDecryptFailed) {
		// Not the checkpoint's fault: this client lacks its key. Held,
		// like the log's envelopes (keyMissing at snapshot_complete).
		st.keyMissing = err
		return nil
	}
	if err == nil {
		switch {
		case p.Part == 0 && (chunk.Type != model.ChunkHeader || chunk.Header.Cursor != p.Cursor):
			err = fmt.Errorf("part 0 is no header at cursor %d", p.Cursor)
		case p.Last != (chunk.Type == model.ChunkFooter):
			err = fmt.Errorf("part %d: last %v, but a %s chunk", p.Part, p.Last, chunk.Type)
		}
	}
	if err != nil {
		s.refuseCheckpoint(st.id, err)
		return nil
	}
	if e, err := wire.ParseEnvelope(p.Envelope); err == nil && !s.keyProven {
		// It authenticates: the checkpoint proves the key.
		if err := s.proveKey(e.KeyID); err != nil {
			return err
		}
	}
	st.next++
	if st.resume != nil {
		if st.next == 2 {
			st.next = st.resume.fromPart // the relay skips to it
		}
		if err := s.rewriteResumed(st, &chunk); err != nil {
			_ = s.db.SetState(sealedSnapKey(s.ns), nil)
			return &snapshotFailure{fmt.Errorf("client: resuming sealed checkpoint %s: %w", st.id, err)}
		}
	}
	if chunk.Type == model.ChunkHeader {
		st.snapID = chunk.Header.SnapshotID
	}
	err = s.onSnapshotChunk(&wire.SnapshotChunk{Chunk: chunk})
	var sf *snapshotFailure
	if errors.As(err, &sf) && (errors.Is(err, model.ErrMalformed) || errors.Is(err, engine.ErrSnapshotFormat)) {
		s.refuseCheckpoint(st.id, err)
		return nil
	}
	if err != nil {
		return err
	}
	switch chunk.Type {
	case model.ChunkRows:
		st.rows += int64(len(chunk.Rows))
	case model.ChunkTableEnd:
		st.tables++
		r := sealedResume{ckptID: st.id, snapID: st.snapID, fromPart: p.Part + 1, tables: st.tables, rows: st.rows}
		return s.db.SetState(sealedSnapKey(s.ns), r.encode())
	case model.ChunkFooter:
		return s.db.SetState(sealedSnapKey(s.ns), nil)
	}
	return nil
}

// checkSealedPlainChunk checks a plaintext snapshot_chunk streamed to a
// sealed client. The relay of a sealed database holds no replica of it:
// the only plaintext snapshot it streams is the empty one at cursor 0
// (no sealed checkpoint yet: header without tables, rows or horizon, an
// empty schema, a footer counting nothing); everything else comes sealed
// (checkpoint_part). Any other plaintext chunk would write into the
// replica rows, tombstones, a schema or a tombstone horizon that no key
// authenticated (a malicious relay forging content), so it is a protocol
// violation: the session ends, nothing of the chunk is applied.
func checkSealedPlainChunk(c *model.SnapshotChunk) error {
	ok := false
	switch c.Type {
	case model.ChunkHeader:
		h := c.Header
		ok = h != nil && h.Cursor == 0 && h.Horizon == 0 && len(h.Tables) == 0 && h.Rows == 0
	case model.ChunkSchema:
		ok = len(c.Migrations) == 0
	case model.ChunkFooter:
		ok = c.Footer != nil && c.Footer.Tables == 0 && c.Footer.Rows == 0
	}
	if !ok {
		return fmt.Errorf("%w: a plaintext snapshot %s chunk for a sealed database (only the empty snapshot at cursor 0 may be plaintext; nothing of it applied)", ErrProtocol, c.Type)
	}
	return nil
}

// refuseCheckpoint refuses the sealed checkpoint id being received: it is
// reported (ErrCheckpointRefused wrapping cause), remembered for the
// Client's life, the rest of its stream is ignored, the engine's snapshot
// checkpoint is discarded, and at snapshot_complete the device pulls the
// log from cursor 0 (onSnapshotComplete).
func (s *session) refuseCheckpoint(id string, cause error) {
	if s.snap.ckpt == nil {
		s.snap.ckpt = &ckptStream{id: id}
	}
	s.snap.ckpt.refused = true
	s.c.refusedCkpt = id
	err := fmt.Errorf("%w: checkpoint %s: %w; falling back to the log", ErrCheckpointRefused, id, cause)
	s.c.log.Warn("replica sync: a sealed checkpoint does not verify", "err", err)
	s.c.report(err)
}

// checkpointFallback ends a transfer whose sealed checkpoint was refused:
// the engine's snapshot checkpoint goes, and the device pulls from cursor
// 0 (the log the checkpoint stood for), keeping what it applied (merged,
// authentic parts).
func (s *session) checkpointFallback() error {
	s.snap = nil
	stopTimer(s.stallTimer)
	s.stallTimer = nil
	s.c.setProgress(nil)
	if err := s.db.DiscardSnapshotCheckpoint(); err != nil {
		return err
	}
	s.cursor, s.chain, s.ownCursor, s.pullWant = 0, wire.Chain{}, false, 0
	s.ckptFallback = true
	s.pull()
	return nil
}
