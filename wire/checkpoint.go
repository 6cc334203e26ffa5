package wire

import (
	"math"

	"github.com/replica-sync/replica/model"
)

// Sealed checkpoints (version 7; "Sealed checkpoints" in the package
// documentation): a device of a sealed database uploads its snapshot at a
// cursor as sealed parts (put_checkpoint, answered part by part with
// checkpoint_result); the relay keeps the newest and streams it to a
// device that asks for a snapshot (checkpoint_part frames, then
// snapshot_complete).
const (
	TypePutCheckpoint    MessageType = "put_checkpoint"
	TypeCheckpointResult MessageType = "checkpoint_result"
	TypeCheckpointPart   MessageType = "checkpoint_part"
)

// CheckpointPart is one part of a sealed checkpoint, as a device uploads it
// (put_checkpoint) and as the relay streams it back (checkpoint_part):
//
//	{"type":"put_checkpoint","checkpointId":"c41-9f2a…","siteId":"<22>","hlc":"<40>","cursor":41,"part":0,"envelope":"<base64>"}
//	{"type":"checkpoint_part","checkpointId":"c41-9f2a…","siteId":"<22>","hlc":"<40>","cursor":41,"part":7,"last":true,"envelope":"<base64>"}
//
// Every member but last is required; last is written only when true.
type CheckpointPart struct {
	// CheckpointID names the checkpoint (non-empty, at most 128 bytes),
	// chosen by the uploader.
	CheckpointID string
	// SiteID is the uploader's site id (the connection's).
	SiteID model.SiteID
	// HLC is the uploader's clock when it made the checkpoint; the relay
	// drift-checks it.
	HLC model.HLC
	// Cursor is the position in the relay's log the checkpoint stands
	// for: a device bootstrapping from it pulls from Cursor.
	Cursor uint64
	// Part numbers the parts 0, 1, 2, …; Last marks the final one.
	Part uint32
	Last bool
	// Envelope seals the frame of one snapshot_chunk of the uploader's
	// snapshot (see "Envelopes", kind 2).
	Envelope []byte
}

// PutCheckpoint (client → relay) uploads one part of a sealed checkpoint.
// The relay answers each with a CheckpointResult, or an error
// (CHECKPOINT_REFUSED).
type PutCheckpoint struct{ CheckpointPart }

// CheckpointPartMessage (relay → client) streams one part of the newest
// sealed checkpoint, in answer to get_snapshot or resume_snapshot of a
// sealed database; snapshot_complete follows the last.
type CheckpointPartMessage struct{ CheckpointPart }

// CheckpointResult (relay → client) answers one put_checkpoint.
//
//	{"type":"checkpoint_result","checkpointId":"c41-9f2a…","part":7,"stored":true}
type CheckpointResult struct {
	CheckpointID string
	Part         uint32
	// Stored is true for the answer to the last part once the checkpoint
	// is the database's newest (written only when true).
	Stored bool
}

// MaxCheckpointIDLength is the longest checkpointId.
const MaxCheckpointIDLength = 128

// Type returns TypePutCheckpoint.
func (*PutCheckpoint) Type() MessageType { return TypePutCheckpoint }

// Type returns TypeCheckpointPart.
func (*CheckpointPartMessage) Type() MessageType { return TypeCheckpointPart }

// Type returns TypeCheckpointResult.
func (*CheckpointResult) Type() MessageType { return TypeCheckpointResult }

func (m *PutCheckpoint) appendClient(b []byte) ([]byte, error) { return m.appendTo(b) }

func (m *PutCheckpoint) appendTo(b []byte) ([]byte, error) {
	return m.CheckpointPart.appendPart(header(b, TypePutCheckpoint))
}

func (m *CheckpointPartMessage) appendTo(b []byte) ([]byte, error) {
	return m.CheckpointPart.appendPart(header(b, TypeCheckpointPart))
}

func checkCheckpointID(id string) error {
	if id == "" || len(id) > MaxCheckpointIDLength {
		return at(invalid("must be 1 to %d bytes", MaxCheckpointIDLength), "checkpointId")
	}
	return nil
}

func (p *CheckpointPart) appendPart(b []byte) ([]byte, error) {
	var err error
	if err = checkCheckpointID(p.CheckpointID); err != nil {
		return b, err
	}
	if len(p.Envelope) < EnvelopeOverhead {
		return b, at(invalid("%d bytes, shorter than an envelope's %d of header and tag", len(p.Envelope), EnvelopeOverhead), "envelope")
	}
	b = append(b, `,"checkpointId":`...)
	if b, err = appendString(b, p.CheckpointID); err != nil {
		return b, at(err, "checkpointId")
	}
	b = append(b, `,"siteId":`...)
	b = appendSiteID(b, p.SiteID)
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, p.HLC)
	if b, err = appendCursor(b, "cursor", p.Cursor); err != nil {
		return b, err
	}
	b = append(b, `,"part":`...)
	b = appendUint(b, uint64(p.Part))
	if p.Last {
		b = append(b, `,"last":true`...)
	}
	b = append(b, `,"envelope":"`...)
	b = stdStrict.AppendEncode(b, p.Envelope)
	return append(b, `"}`...), nil
}

func (m *CheckpointResult) appendTo(b []byte) ([]byte, error) {
	var err error
	if err = checkCheckpointID(m.CheckpointID); err != nil {
		return b, err
	}
	b = append(header(b, TypeCheckpointResult), `,"checkpointId":`...)
	if b, err = appendString(b, m.CheckpointID); err != nil {
		return b, at(err, "checkpointId")
	}
	b = append(b, `,"part":`...)
	b = appendUint(b, uint64(m.Part))
	if m.Stored {
		b = append(b, `,"stored":true`...)
	}
	return append(b, '}'), nil
}

// checkpointID reads a checkpointId.
func (r *reader) checkpointID() (string, error) {
	start := r.Pos
	s, err := r.NonEmptyStr()
	if err == nil && len(s) > MaxCheckpointIDLength {
		err = r.FailAt(start, "checkpointId: longer than %d bytes", MaxCheckpointIDLength)
	}
	return s, err
}

func (r *reader) checkpointPart() (CheckpointPart, error) {
	var p CheckpointPart
	var seen fields
	const (
		fType fields = 1 << iota
		fID
		fSite
		fHLC
		fCursor
		fPart
		fLast
		fEnvelope
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "checkpointId":
			if err = seen.See(&r.Reader, fID, key); err == nil {
				p.CheckpointID, err = r.checkpointID()
			}
		case "siteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				p.SiteID, err = r.siteID()
			}
		case "hlc":
			if err = seen.See(&r.Reader, fHLC, key); err == nil {
				p.HLC, err = r.hlc()
			}
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				p.Cursor, err = r.uint(MaxCursor)
			}
		case "part":
			if err = seen.See(&r.Reader, fPart, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxUint32)
				p.Part = uint32(n)
			}
		case "last":
			if err = seen.See(&r.Reader, fLast, key); err == nil {
				p.Last, err = r.Boolean()
			}
		case "envelope":
			if err = seen.See(&r.Reader, fEnvelope, key); err == nil {
				p.Envelope, err = r.envelope()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fID|fSite|fHLC|fCursor|fPart|fEnvelope, "type", "checkpointId", "siteId", "hlc", "cursor", "part", "last", "envelope")
	}
	return p, err
}

func (r *reader) checkpointResult() (Message, error) {
	m := &CheckpointResult{}
	var seen fields
	const (
		fType fields = 1 << iota
		fID
		fPart
		fStored
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "checkpointId":
			if err = seen.See(&r.Reader, fID, key); err == nil {
				m.CheckpointID, err = r.checkpointID()
			}
		case "part":
			if err = seen.See(&r.Reader, fPart, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxUint32)
				m.Part = uint32(n)
			}
		case "stored":
			if err = seen.See(&r.Reader, fStored, key); err == nil {
				m.Stored, err = r.Boolean()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fID|fPart, "type", "checkpointId", "part")
	}
	return m, err
}

// EncodeSnapshotChunk returns the snapshot_chunk frame of chunk, as Encode
// does, without linking the encoders of the other messages (a device
// seals its checkpoint's chunks in this form: package seal).
func EncodeSnapshotChunk(chunk model.SnapshotChunk) ([]byte, error) {
	return (&SnapshotChunk{Chunk: chunk}).appendTo(make([]byte, 0, 128))
}

func (r *reader) getSnapshot() (Message, error) {
	m := &GetSnapshot{}
	var seen fields
	const (
		fType fields = 1 << iota
		fID
		fFrom
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "checkpointId":
			if err = seen.See(&r.Reader, fID, key); err == nil {
				m.CheckpointID, err = r.checkpointID()
			}
		case "fromPart":
			if err = seen.See(&r.Reader, fFrom, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxUint32)
				m.FromPart = uint32(n)
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil && seen&(fID|fFrom) != 0 {
		err = seen.Require(&r.Reader, fID|fFrom, "type", "checkpointId", "fromPart")
	}
	return m, err
}
