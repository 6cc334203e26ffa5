package client

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/sysrand"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Native and browser devices alike upload sealed checkpoints. In the
// browser the snapshot's kv reads and the sealing never overlap: Snapshot
// reads its header and each rows chunk in a read transaction of its own,
// ended before the chunk is yielded, and pullChunks runs it one chunk per
// call, so WebCrypto's await (in SealCheckpointPart, on the session's
// goroutine) never happens while an IndexedDB transaction is open (one
// would commit as soon as the event loop idled).

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
	next, stop := pullChunks(s.db.Snapshot(engine.SnapshotOptions{Cursor: s.cursor, ChunkBytes: chunkBytes, RowBytes: wire.SnapshotRowSize}))
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

// pulled is one chunk a pullChunks iteration yielded.
type pulled struct {
	chunk model.SnapshotChunk
	err   error
}

// pullChunks is iter.Pull2 for the snapshot an upload sends, over a
// goroutine and channels rather than a coroutine: iter.Pull2 links the
// runtime's coroutines, which the browser build does not otherwise need
// (about 3 KB of replica.wasm gzip). As with iter.Pull2, seq runs only
// while next waits for it: one step per call, so reading a chunk (one kv
// read transaction, closed before it is yielded) never overlaps the
// session sealing and sending the previous one. stop ends the iteration
// (seq's yield returns false) and may be called more than once; next
// after stop or the end reports ok false.
func pullChunks(seq iter.Seq2[model.SnapshotChunk, error]) (next func() (model.SnapshotChunk, error, bool), stop func()) {
	req := make(chan struct{})
	resp := make(chan pulled)
	done := make(chan struct{})
	var once sync.Once
	started, ended := false, false
	wait := func() bool {
		select {
		case <-req:
			return true
		case <-done:
			return false
		}
	}
	next = func() (model.SnapshotChunk, error, bool) {
		if ended {
			return model.SnapshotChunk{}, nil, false
		}
		if !started {
			started = true
			go func() {
				defer close(resp)
				if !wait() {
					return
				}
				for c, err := range seq {
					resp <- pulled{c, err}
					if !wait() {
						return
					}
				}
			}()
		}
		req <- struct{}{}
		p, ok := <-resp
		if !ok {
			ended = true
		}
		return p.chunk, p.err, ok
	}
	stop = func() {
		ended = true
		once.Do(func() { close(done) })
	}
	return next, stop
}
