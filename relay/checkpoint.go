//go:build !js

package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Sealed checkpoints (wire's "Sealed checkpoints"): a device of a sealed
// database uploads its snapshot at a cursor as sealed parts; the relay
// keeps the newest, streams it to bootstrapping devices, and prunes the
// sealed log below it after the retention horizon.

// checkpointMeta describes a stored (or uploading) sealed checkpoint.
type checkpointMeta struct {
	id       string
	site     model.SiteID
	hlc      model.HLC
	cursor   uint64
	parts    uint32 // parts stored (all of them, for the newest)
	bytes    int64  // envelope bytes stored
	storedAt uint64 // ms, relay clock; 0 while uploading
}

// partKey is the checkpoint_parts key of part n of checkpoint (site, id):
// site (16) ‖ len(id) (1) ‖ id ‖ n (4, big-endian).
func partKey(site model.SiteID, id string, n uint32) []byte {
	k := partPrefix(site, id)
	return binary.BigEndian.AppendUint32(k, n)
}

func partPrefix(site model.SiteID, id string) []byte {
	k := make([]byte, 0, 16+1+len(id)+4)
	k = append(k, site[:]...)
	k = append(k, byte(len(id)))
	return append(k, id...)
}

// encodeCheckpointMeta: version 1 ‖ cursor (8) ‖ parts (4) ‖ bytes (8) ‖
// storedAt (8) ‖ hlc (30) ‖ site (16) ‖ id.
func encodeCheckpointMeta(m *checkpointMeta) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, m.cursor)
	b = binary.BigEndian.AppendUint32(b, m.parts)
	b = binary.BigEndian.AppendUint64(b, uint64(m.bytes))
	b = binary.BigEndian.AppendUint64(b, m.storedAt)
	b = append(b, m.hlc.Bytes()...)
	b = append(b, m.site[:]...)
	return append(b, m.id...)
}

func decodeCheckpointMeta(v []byte) (checkpointMeta, error) {
	const fixed = 1 + 8 + 4 + 8 + 8 + model.HLCSize + 16
	var m checkpointMeta
	if len(v) <= fixed || v[0] != 1 {
		return m, fmt.Errorf("%w: checkpoint record of %d bytes", errCorrupt, len(v))
	}
	m.cursor = binary.BigEndian.Uint64(v[1:])
	m.parts = binary.BigEndian.Uint32(v[9:])
	m.bytes = int64(binary.BigEndian.Uint64(v[13:]))
	m.storedAt = binary.BigEndian.Uint64(v[21:])
	h, err := model.HLCFromBytes(v[29 : 29+model.HLCSize])
	if err != nil {
		return m, fmt.Errorf("%w: checkpoint record: %w", errCorrupt, err)
	}
	m.hlc = h
	copy(m.site[:], v[29+model.HLCSize:])
	m.id = string(v[fixed:])
	return m, nil
}

// newestCheckpoint reads the newest sealed checkpoint's record; ok is false
// when there is none.
func newestCheckpoint(tx kv.Tx) (m checkpointMeta, ok bool, err error) {
	v, err := tx.Get(bucketRelay, keyCheckpoint)
	if errors.Is(err, kv.ErrNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	m, err = decodeCheckpointMeta(v)
	return m, err == nil, err
}

// checkpointInfo returns the newest checkpoint's cursor and storage time
// (0, 0: none), for handshake_ack.
func (d *database) checkpointInfo() (cursor, at uint64, err error) {
	err = d.store.View(func(tx kv.Tx) error {
		m, ok, err := newestCheckpoint(tx)
		if ok {
			cursor, at = m.cursor, m.storedAt
		}
		return err
	})
	return cursor, at, err
}

// errCheckpointRefused marks an upload refused (CHECKPOINT_REFUSED).
var errCheckpointRefused = errors.New("checkpoint refused")

// putCheckpointPart stores part p of the upload of connection c (its
// upload state, c.upload). Part 0 starts an upload (dropping c's unfinished
// one); each next part must follow; the last makes the checkpoint the
// database's newest if its cursor is still above the newest's, dropping
// the older one's parts (when the streams reading them end:
// endCheckpointStream). A part 0 reusing the id of a checkpoint still
// held is refused. stored reports that. Errors wrap
// errCheckpointRefused (the upload is dropped) or are storage errors.
func (d *database) putCheckpointPart(c *conn, p *wire.CheckpointPart) (stored bool, err error) {
	refuse := func(format string, args ...any) (bool, error) {
		d.dropUpload(c)
		return false, fmt.Errorf("%w: %s", errCheckpointRefused, fmt.Sprintf(format, args...))
	}
	if !d.sealed {
		return refuse("database %q is plain: the relay snapshots it itself", d.id)
	}
	if p.SiteID != c.site || p.HLC.Site != c.site {
		return refuse("checkpoint %s names site %s (hlc of %s), this connection's is %s", p.CheckpointID, p.SiteID, p.HLC.Site, c.site)
	}
	if p.Part == 0 {
		d.dropUpload(c)
		now := d.s.cfg.Clock.Now()
		if p.HLC.Wall > now && p.HLC.Wall-now > model.MaxDrift {
			return refuse("%v", &model.DriftError{Remote: p.HLC, Now: now})
		}
		head := d.cursor.Load()
		if d.shared != nil {
			// Other relays append too: the store's head.
			h, err := d.head()
			if err != nil {
				return false, err
			}
			head = h
		}
		if p.Cursor > head {
			return refuse("cursor %d is above the log's head %d", p.Cursor, head)
		}
		var newest checkpointMeta
		err := d.store.View(func(tx kv.Tx) error {
			var err error
			newest, _, err = newestCheckpoint(tx)
			return err
		})
		if err != nil {
			return false, err
		}
		if p.Cursor <= newest.cursor {
			return refuse("cursor %d is not above the newest checkpoint's %d", p.Cursor, newest.cursor)
		}
		// Parts are stored under the uploader's site and the id: an
		// upload reusing the id of a checkpoint still stored (the
		// newest, or a replaced one a stream still reads) would
		// overwrite its parts in place.
		if pre := string(partPrefix(p.SiteID, p.CheckpointID)); (newest.site == p.SiteID && newest.id == p.CheckpointID) || d.ckptInUse(pre) {
			return refuse("checkpoint id %s of site %s is taken by a stored checkpoint: choose a new one", p.CheckpointID, p.SiteID)
		}
		c.upload = &checkpointMeta{id: p.CheckpointID, site: p.SiteID, hlc: p.HLC, cursor: p.Cursor}
	}
	u := c.upload
	if u == nil || u.id != p.CheckpointID || u.hlc != p.HLC || u.cursor != p.Cursor || u.parts != p.Part {
		return refuse("part %d of checkpoint %s does not follow the upload in progress", p.Part, p.CheckpointID)
	}
	if u.bytes += int64(len(p.Envelope)); u.bytes > d.s.cfg.MaxCheckpointBytes {
		return refuse("checkpoint %s is above the relay's limit of %d bytes", p.CheckpointID, d.s.cfg.MaxCheckpointBytes)
	}
	if !p.Last {
		err := d.store.Update(func(tx kv.Tx) error { return tx.Put(bucketCheckpoint, partKey(u.site, u.id, p.Part), p.Envelope) })
		if err != nil {
			return false, err
		}
		u.parts++
		return false, nil
	}
	var old checkpointMeta
	var hadOld, above bool
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	err = d.store.Update(func(tx kv.Tx) error {
		var err error
		if old, hadOld, err = newestCheckpoint(tx); err != nil {
			return err
		}
		if above = !hadOld || u.cursor > old.cursor; !above {
			return nil
		}
		if err := tx.Put(bucketCheckpoint, partKey(u.site, u.id, p.Part), p.Envelope); err != nil {
			return err
		}
		m := *u
		m.parts, m.storedAt = p.Part+1, d.s.cfg.Clock.Now()
		if err := tx.Put(bucketRelay, keyCheckpoint, encodeCheckpointMeta(&m)); err != nil {
			return err
		}
		if hadOld && (old.site != m.site || old.id != m.id) {
			pre := partPrefix(old.site, old.id)
			if d.ckptReaders[string(pre)] > 0 || d.shared != nil {
				// Streams still read it: its last one deletes it
				// (endCheckpointStream). With shared storage
				// another relay's streams may: a maintenance
				// pass that finds no stream does
				// (sweepOrphans).
				return nil
			}
			return tx.DeleteRange(bucketCheckpoint, pre, kv.PrefixEnd(pre))
		}
		return nil
	})
	if err == nil && above && hadOld && (old.site != u.site || old.id != u.id) {
		if pre := string(partPrefix(old.site, old.id)); d.ckptReaders[pre] > 0 || d.shared != nil {
			if d.ckptOrphans == nil {
				d.ckptOrphans = map[string]bool{}
			}
			d.ckptOrphans[pre] = true
		}
	}
	if err != nil {
		return false, err
	}
	if !above {
		return refuse("another device stored a checkpoint at cursor %d meanwhile, not below this one's %d", old.cursor, u.cursor)
	}
	c.upload = nil
	d.log.Info("relay: sealed checkpoint stored", "checkpoint", u.id, "site", u.site, "cursor", u.cursor, "parts", p.Part+1, "bytes", u.bytes)
	return true, nil
}

// ckptInUse reports whether the parts under prefix pre belong to a
// checkpoint that streams still read (the newest, or one replaced
// meanwhile).
func (d *database) ckptInUse(pre string) bool {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	return d.ckptReaders[pre] > 0 || d.ckptOrphans[pre]
}

// startCheckpointStream reads the newest sealed checkpoint's record and
// counts a stream reading its parts, so that a newer checkpoint stored
// meanwhile leaves them until endCheckpointStream. ok is false when there
// is none.
func (d *database) startCheckpointStream() (m checkpointMeta, ok bool, err error) {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	err = d.store.View(func(tx kv.Tx) error {
		var err error
		m, ok, err = newestCheckpoint(tx)
		return err
	})
	if err == nil && ok {
		if d.ckptReaders == nil {
			d.ckptReaders = map[string]int{}
		}
		d.ckptReaders[string(partPrefix(m.site, m.id))]++
	}
	return m, ok, err
}

// endCheckpointStream ends a stream of m (startCheckpointStream): the last
// stream of a checkpoint replaced meanwhile deletes its parts.
func (d *database) endCheckpointStream(m checkpointMeta) {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	pre := partPrefix(m.site, m.id)
	if d.ckptReaders[string(pre)]--; d.ckptReaders[string(pre)] > 0 {
		return
	}
	delete(d.ckptReaders, string(pre))
	if !d.ckptOrphans[string(pre)] {
		return
	}
	if d.shared != nil {
		return // sweepOrphans, when no relay streams
	}
	delete(d.ckptOrphans, string(pre))
	err := d.store.Update(func(tx kv.Tx) error { return tx.DeleteRange(bucketCheckpoint, pre, kv.PrefixEnd(pre)) })
	if err != nil {
		// dropStrayParts deletes them at the next open.
		d.log.Warn("relay: deleting a replaced sealed checkpoint's parts failed", "checkpoint", m.id, "err", err)
	}
}

// dropUpload deletes the parts of c's unfinished upload, if any.
func (d *database) dropUpload(c *conn) {
	u := c.upload
	if u == nil {
		return
	}
	c.upload = nil
	pre := partPrefix(u.site, u.id)
	err := d.store.Update(func(tx kv.Tx) error {
		// Never the newest checkpoint's parts (an upload that reused
		// its id).
		if m, ok, err := newestCheckpoint(tx); err != nil || (ok && m.site == u.site && m.id == u.id) {
			return err
		}
		return tx.DeleteRange(bucketCheckpoint, pre, kv.PrefixEnd(pre))
	})
	if err != nil {
		d.log.Warn("relay: dropping an unfinished checkpoint upload failed", "checkpoint", u.id, "err", err)
	}
}

// dropStrayParts deletes, at open, the parts of uploads that never
// finished (a relay stopped meanwhile).
func (d *database) dropStrayParts() error {
	return d.store.Update(func(tx kv.Tx) error {
		m, ok, err := newestCheckpoint(tx)
		if err != nil {
			return err
		}
		var keep []byte
		if ok {
			keep = partPrefix(m.site, m.id)
		}
		var stray [][]byte
		err = tx.Scan(bucketCheckpoint, kv.Range{KeysOnly: true}, func(k, _ []byte) bool {
			if keep == nil || len(k) != len(keep)+4 || string(k[:len(keep)]) != string(keep) {
				stray = append(stray, append([]byte(nil), k...))
			}
			return true
		})
		if err != nil {
			return err
		}
		for _, k := range stray {
			if err := tx.Delete(bucketCheckpoint, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// streamCheckpoint streams the newest sealed checkpoint to c as
// checkpoint_part frames, one part read per transaction as the queue
// takes them, then snapshot_complete. When from resumes that checkpoint
// (its checkpointId) at a part above 2, parts 0 and 1 (the header and the
// schema the client's engine needs again) are followed by the parts from
// that one on (at most the last); snapshot_complete states the log's
// chain value at the checkpoint's cursor (snapshotComplete). ok is false
// when the database has none (the caller streams the empty snapshot at
// cursor 0). Under c.snapshot's bookkeeping (pushes dropped meanwhile).
func (c *conn) streamCheckpoint(from *wire.GetSnapshot) (ok bool) {
	d := c.db
	m, ok, err := d.startCheckpointStream()
	if err != nil {
		c.log.Error("relay: reading the sealed checkpoint failed", "err", err)
		c.s.storageFailed(d.id, opRead, err)
		c.sendError(wire.CodeSnapshotError, "", "reading the sealed checkpoint failed on the relay: retry later")
		return true
	}
	if !ok {
		return false
	}
	defer d.endCheckpointStream(m)
	skipTo := uint32(0)
	if from != nil && from.CheckpointID == m.id && from.FromPart > 2 && m.parts > 2 {
		skipTo = min(from.FromPart, m.parts-1)
	}
	for n := uint32(0); n < m.parts; n++ {
		if n == 2 && skipTo > 2 {
			n = skipTo
		}
		if c.stopCtx.Err() != nil {
			c.log.Info("relay: sealed checkpoint abandoned: connection closing", "parts", n)
			return true
		}
		var env []byte
		err := d.store.View(func(tx kv.Tx) error {
			v, err := tx.Get(bucketCheckpoint, partKey(m.site, m.id, n))
			env = append(env, v...)
			return err
		})
		if err != nil {
			c.log.Error("relay: reading a sealed checkpoint part failed", "part", n, "err", err)
			c.s.storageFailed(d.id, opRead, err)
			c.sendError(wire.CodeSnapshotError, "", "reading part %d of the sealed checkpoint failed on the relay: retry later", n)
			return true
		}
		msg := &wire.CheckpointPartMessage{CheckpointPart: wire.CheckpointPart{CheckpointID: m.id, SiteID: m.site, HLC: m.hlc,
			Cursor: m.cursor, Part: n, Last: n == m.parts-1, Envelope: env}}
		data, err := wire.Encode(msg)
		if err != nil {
			c.sendError(wire.CodeSnapshotError, "", "part %d of the sealed checkpoint does not encode: %v", n, err)
			return true
		}
		if !c.sendFrame(wire.TypeCheckpointPart, data) {
			return true
		}
	}
	c.s.storageOK(d.id, opRead)
	c.s.metrics.checkpoints.WithLabelValues("served").Inc()
	c.send(d.snapshotComplete(m.cursor))
	c.log.Info("relay: sealed checkpoint sent", "checkpoint", m.id, "cursor", m.cursor, "parts", m.parts, "resumedAt", skipTo)
	return true
}

// putCheckpoint answers put_checkpoint.
func (c *conn) putCheckpoint(m *wire.PutCheckpoint) {
	stored, err := c.db.putCheckpointPart(c, &m.CheckpointPart)
	switch {
	case errors.Is(err, errCheckpointRefused):
		c.log.Warn("relay: sealed checkpoint refused", "checkpoint", m.CheckpointID, "part", m.Part, "err", err)
		c.s.metrics.checkpoints.WithLabelValues("refused").Inc()
		c.sendError(wire.CodeCheckpointRefused, "", "%v (nothing of the upload is kept)", err)
	case err != nil:
		c.db.dropUpload(c)
		c.log.Error("relay: storing a sealed checkpoint part failed", "checkpoint", m.CheckpointID, "part", m.Part, "err", err)
		c.s.storageFailed(c.db.id, opWrite, err)
		c.sendError(wire.CodeCheckpointRefused, "", "the relay could not store part %d of checkpoint %s (nothing of the upload is kept): retry later", m.Part, m.CheckpointID)
	default:
		if stored {
			c.s.metrics.checkpoints.WithLabelValues("stored").Inc()
		}
		c.send(&wire.CheckpointResult{CheckpointID: m.CheckpointID, Part: m.Part, Stored: stored})
	}
}

// sweepOrphans deletes, with shared storage, the parts of the sealed
// checkpoints this relay replaced, once no relay streams a snapshot of the
// database (other relays may have been reading them). A relay that stops
// first leaves them in the store (relay/doc.go § Several relays).
func (d *database) sweepOrphans(ctx context.Context) error {
	d.ckptMu.Lock()
	n := len(d.ckptOrphans)
	d.ckptMu.Unlock()
	if d.shared == nil || n == 0 {
		return nil
	}
	release, ok, err := d.shared.HoldStreams(ctx, d.id)
	if err != nil || !ok {
		return err
	}
	defer release()
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	for pre := range d.ckptOrphans {
		if d.ckptReaders[pre] > 0 {
			continue
		}
		err := d.store.Update(func(tx kv.Tx) error {
			return tx.DeleteRange(bucketCheckpoint, []byte(pre), kv.PrefixEnd([]byte(pre)))
		})
		if err != nil {
			return err
		}
		delete(d.ckptOrphans, pre)
	}
	return nil
}
