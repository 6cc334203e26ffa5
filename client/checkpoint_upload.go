//go:build !js

package client

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/sysrand"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Uploading sealed checkpoints is native only for now: it links
// engine.Snapshot and the rows chunk encoder, which the browser build does
// not otherwise need (about 50 KB of replica.wasm gzip, measured
// 2026-12-03); checkpoint_upload_js.go stubs it. A browser device still
// bootstraps from checkpoints other devices upload.

// maybeCheckpoint starts uploading a sealed checkpoint when one is due:
// a sealed client, caught up, with nothing to push, no snapshot landing
// and no upload in flight, whose cursor is CheckpointChanges ChangeSets
// past the relay's newest checkpoint, or past it at all once that one is
// CheckpointInterval old.
func (s *session) maybeCheckpoint() {
	if !s.c.sealed() || s.upload != nil || s.ckptOff || s.snap != nil || !s.synced || s.pushHeld() ||
		s.pulling || s.push != nil || s.pushRetry != nil || s.c.opts.CheckpointChanges < 0 || s.cursor <= s.ckptCursor {
		return
	}
	nowMs := uint64(s.c.clock.Now().UnixMilli())
	due := s.cursor-s.ckptCursor >= uint64(s.c.opts.CheckpointChanges) ||
		(s.ckptAt != 0 && nowMs-min(nowMs, s.ckptAt) >= uint64(s.c.opts.CheckpointInterval.Milliseconds()))
	if !due {
		return
	}
	// Only a replica holding nothing the relay lacks: the checkpoint
	// stands for the log up to the cursor.
	local, err := s.db.ChangesSince(s.sent, 1, engine.ChangesFilter{OnlyLocal: true})
	if err != nil || len(local) > 0 {
		return
	}
	var rnd [8]byte
	if _, err := io.ReadFull(sysrand.Reader, rnd[:]); err != nil {
		return
	}
	// Rows chunks sized so that the sealed part's frame, base64 of the
	// chunk's frame plus the envelope's overhead, fits the frame limit.
	chunkBytes := int(min((s.c.opts.MaxMessageSize-4096)*3/4-4096, engine.DefaultSnapshotChunkBytes))
	next, stop := iter.Pull2(s.db.Snapshot(engine.SnapshotOptions{Cursor: s.cursor, ChunkBytes: chunkBytes, RowBytes: wire.SnapshotRowSize}))
	s.upload = &ckptUpload{next: next, stop: stop,
		part: wire.CheckpointPart{CheckpointID: fmt.Sprintf("c%d-%s", s.cursor, hex.EncodeToString(rnd[:])), SiteID: s.db.SiteID(), Cursor: s.cursor}}
	s.c.log.Debug("replica sync: uploading a sealed checkpoint", "cursor", s.cursor, "newest", s.ckptCursor)
	s.sendCheckpointPart()
}

// sendCheckpointPart seals and sends the upload's next part (the next
// chunk of the snapshot); a failure abandons the upload for the session.
func (s *session) sendCheckpointPart() {
	u := s.upload
	chunk, err, ok := u.next()
	if !ok {
		err = errors.New("the snapshot ended before its footer")
	}
	if err == nil && chunk.Type == model.ChunkHeader {
		h := *chunk.Header
		h.Horizon = s.horizon // the tombstone horizon this replica applied in this log
		chunk.Header = &h
		if u.part.HLC = h.HLC; h.HLC.Site != u.part.SiteID {
			err = fmt.Errorf("snapshot header of site %s", h.HLC.Site)
		}
	}
	if err == nil {
		u.part.Last = chunk.Type == model.ChunkFooter
		err = seal.SealCheckpointPart(s.c.sealerNow(), s.t.databaseID, &u.part, chunk)
	}
	var b []byte
	if err == nil {
		b, err = wire.EncodeClient(&wire.PutCheckpoint{CheckpointPart: u.part})
	}
	if err == nil && int64(len(b)) > s.c.opts.MaxMessageSize {
		err = fmt.Errorf("part %d encodes to %d bytes, above the frame limit %d", u.part.Part, len(b), s.c.opts.MaxMessageSize)
	}
	if err != nil {
		s.endUpload(fmt.Errorf("client: sealed checkpoint not uploaded: %w", err))
		return
	}
	u.parts++
	u.bytes += len(b)
	s.sendFrame(b)
}
