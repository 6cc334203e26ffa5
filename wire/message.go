package wire

import (
	"math"

	"github.com/replica-sync/replica/model"
)

// MessageType is the "type" of a frame.
type MessageType string

// The message types. The package documentation describes each.
const (
	TypeHandshake        MessageType = "handshake"
	TypeHandshakeAck     MessageType = "handshake_ack"
	TypeGetChanges       MessageType = "get_changes"
	TypeChanges          MessageType = "changes"
	TypeApplyChanges     MessageType = "apply_changes"
	TypeApplyResult      MessageType = "apply_result"
	TypePushChanges      MessageType = "push_changes"
	TypeGetSnapshot      MessageType = "get_snapshot"
	TypeResumeSnapshot   MessageType = "resume_snapshot"
	TypeSnapshotChunk    MessageType = "snapshot_chunk"
	TypeSnapshotComplete MessageType = "snapshot_complete"
	TypePing             MessageType = "ping"
	TypePong             MessageType = "pong"
	TypeError            MessageType = "error"
)

// Message is one frame's content: one of the pointer types below
// (*Handshake, *Changes, …). Messages are plain data, not safe for
// concurrent mutation; Encode and Decode keep no reference to them or to
// the frame.
type Message interface {
	// Type returns the frame's "type".
	Type() MessageType
	appendTo(b []byte) ([]byte, error)
}

// Handshake (client → relay) opens a session. It must be the first frame
// on a connection.
//
//	{"type":"handshake","protocolVersion":10,"databaseId":"trips","siteId":"<22>","token":"…","serverSiteId":"<22>","cursor":41,"chain":"<22>"}
type Handshake struct {
	// ProtocolVersion is the client's ProtocolVersion; 0 means the frame
	// had none. When it is not this package's ProtocolVersion, Decode
	// reads nothing else of the frame and leaves every other field zero.
	ProtocolVersion int
	// DatabaseID names the database (tenant) to sync; "" when absent.
	// The relay checks it with ValidDatabaseID.
	DatabaseID string
	// SiteID is the client replica's site id.
	SiteID model.SiteID
	// Token is the credential for DatabaseID; "" (omitted) for none.
	Token string
	// Log, Cursor and Chain are the client's position in the relay log it
	// synced with last (version 2, optional, all or none; Chain may be
	// absent alone): Log that log's serverSiteId (JSON "serverSiteId"),
	// Cursor its cursor there, Chain the log's chain value at Cursor as
	// the relay sent it. The relay answers with HandshakeAck.History. A
	// zero Log means none.
	Log    model.SiteID
	Cursor uint64
	Chain  Chain
	// Horizon (version 8; JSON "horizon", optional, needs Cursor, omitted
	// when 0) is the tombstone horizon the client applied in that log: the
	// wall of the newest horizon mark it pruned at, or of the snapshot
	// header it bootstrapped under. The relay answers HistoryDiverged when
	// its log holds no mark that high at or below Cursor (a restored copy
	// lost a mark the client applied).
	Horizon uint64
	// Sealed (version 7; JSON "sealed", written only when true) says the
	// client expects a sealed database (docs/design.md § Sealed
	// databases): it pushes envelopes and opens what it pulls. A
	// handshake that creates the database decides its mode for good; one
	// that differs from an existing database's mode is refused with
	// SEALED_MISMATCH (fatal).
	Sealed bool
}

// HandshakeAck (relay → client) accepts a handshake.
//
//	{"type":"handshake_ack","protocolVersion":10,"databaseId":"trips","serverSiteId":"<22>","connectionId":"c-17","siteHlc":"<40>","history":"continues"}
type HandshakeAck struct {
	// ProtocolVersion is the relay's ProtocolVersion, decoded as for
	// Handshake: when it differs, every other field is left zero.
	ProtocolVersion int
	// DatabaseID echoes the handshake's database id.
	DatabaseID string
	// ServerSiteID is the relay's site id: the key under which a client
	// keeps its cursor and sent watermark for this relay.
	ServerSiteID model.SiteID
	// ConnectionID identifies the connection in the relay's logs.
	ConnectionID string
	// SiteHLC is the highest hlc among the ChangeSets of the handshake's
	// site the relay's log ever stored (version 2; zero, omitted: none).
	// A client lowers its sent watermark to it when it is lower.
	// SiteHLCStated reports that the member is present: a relay of
	// version 2 always states it, the zero HLC ("AAAA…A") meaning that it
	// holds no ChangeSet of the site; a relay that does not state it
	// leaves the client's watermark alone.
	SiteHLC       model.HLC
	SiteHLCStated bool
	// History is the relay's verdict on the handshake's Log, Cursor and
	// Chain (version 2): HistoryContinues, HistoryDiverged,
	// HistoryUnverified (version 10: a cursor above 0 within the log,
	// presented without a chain value), or "" (omitted) when the handshake
	// presented none, named another log, or a cursor the relay can no
	// longer check (below its retained log).
	History History
	// Sealed (version 7; JSON "sealed", written only when true) is the
	// database's mode: true for a sealed database. It equals the
	// handshake's Sealed (the relay refuses a mismatch); a client stops
	// (fatal) on an ack that differs.
	Sealed bool
	// CheckpointCursor and CheckpointAt (version 7; JSON
	// "checkpointCursor", "checkpointAt", omitted when 0) describe the
	// newest sealed checkpoint of a sealed database: its cursor, and when
	// the relay stored it (ms since the Unix epoch, the relay's clock).
	// Zero: none. A device uses them to decide whether to upload one.
	CheckpointCursor uint64
	CheckpointAt     uint64
}

// GetChanges (client → relay) asks for the ChangeSets that arrived after a
// cursor.
//
//	{"type":"get_changes","since":41}
//	{"type":"get_changes","since":41,"ownAbove":"<40>","ownUpTo":"<40>"}
type GetChanges struct {
	// Since is the cursor of the last ChangeSet the client applied; 0
	// (omitted) means from the beginning.
	Since uint64
	// OwnAbove and OwnUpTo (version 5; JSON "ownAbove", "ownUpTo",
	// both or neither; OwnStated says which): the requester's own
	// ChangeSets whose hlc is above OwnAbove and at most OwnUpTo are
	// sent too, in their place (see "Own ChangeSets after a mark").
	OwnAbove, OwnUpTo model.HLC
	OwnStated         bool
}

// Changes (relay → client) answers get_changes with the next ChangeSets in
// arrival order, gap-free, whole ChangeSets only.
//
//	{"type":"changes","cursor":57,"more":true,"changeSets":[…]}
type Changes struct {
	// Cursor is the arrival sequence of the last ChangeSet the page
	// covers (the relay leaves out the client's own ChangeSets but counts
	// them), or the relay's current cursor when More is false. After
	// applying them the client persists it as its cursor for this relay.
	Cursor uint64
	// More is true when more ChangeSets follow Cursor: the client sends
	// get_changes{since: Cursor} again.
	More bool
	// ChangeSets in arrival order.
	ChangeSets []model.ChangeSet
	// Chain is the log's chain value at Cursor (version 2, required).
	Chain Chain
	// Horizons are the relay's tombstone horizon marks (version 3;
	// "Tombstone horizon" in the package documentation) with since ≤
	// cursor ≤ Cursor, ascending by cursor and wall; JSON "horizons",
	// omitted when empty. The receiver applies the ChangeSets up to each
	// mark's cursor, then prunes at its wall. Decode refuses marks out of
	// order or above Cursor; the receiver, which knows since, checks the
	// lower bound.
	Horizons []Horizon
}

// ApplyChanges (client → relay) pushes the client's own ChangeSets, or,
// as a repair push, facts of other sites it holds.
//
//	{"type":"apply_changes","requestId":"apply-3","changes":[…]}
//	{"type":"apply_changes","requestId":"apply-4","repair":true,"changes":[…]}
type ApplyChanges struct {
	// RequestID is echoed in the apply_result; "" (omitted) for none.
	RequestID string
	// Repair (version 6; JSON "repair", true or omitted) marks a repair
	// push: ChangeSets of sites other than the sender's, which it holds
	// and the relay's log may have lost (see "Repair pushes").
	Repair bool
	// ChangeSets to store, in any order; JSON field "changes".
	ChangeSets []model.ChangeSet
}

// ApplyResult (relay → client) answers an apply_changes that the relay
// stored. The counts are the relay's model.ApplyResult.
//
//	{"type":"apply_result","requestId":"apply-3","applied":12,"skipped":0,"conflicts":1,"transactions":3,"first":42,"cursor":44,"chain":"<22>"}
type ApplyResult struct {
	// RequestID echoes the apply_changes' requestId verbatim; "" when it
	// had none.
	RequestID string
	model.ApplyResult
	// First and Cursor (version 9; JSON "first" and "cursor", both or
	// neither, omitted when Cursor is 0) are the arrival sequences of the
	// first and the last ChangeSet this apply_changes appended to the
	// log, which holds them at First … Cursor, consecutive ("Acknowledged
	// position" in the package documentation). 0 when it appended none
	// (every ChangeSet was held already, or a repair push, whose entries
	// reach the sender as push_changes). 1 ≤ First ≤ Cursor ≤ MaxCursor.
	First, Cursor uint64
	// Chain is the log's chain value at Cursor (version 9; required with
	// Cursor, absent without).
	Chain Chain
	// Horizons are the tombstone horizon marks at cursors First-1 …
	// Cursor, as a push_changes of the same entries would carry them
	// (version 9; JSON "horizons", omitted when empty; only with Cursor).
	Horizons []Horizon
}

// PushChanges (relay → client) forwards ChangeSets other connections
// pushed, unsolicited.
//
//	{"type":"push_changes","cursor":58,"changeSets":[…]}
type PushChanges struct {
	// Cursor is the arrival sequence of the last ChangeSet carried.
	Cursor uint64
	// ChangeSets in arrival order.
	ChangeSets []model.ChangeSet
	// Chain is the log's chain value at Cursor (version 2; the zero
	// Chain, omitted, when unknown).
	Chain Chain
	// Horizons are the tombstone horizon marks (version 3) at cursors
	// first-1 … Cursor, where first = Cursor-len(ChangeSets)+1 is the
	// sequence of the first ChangeSet carried; ascending by cursor and
	// wall; JSON "horizons", omitted when empty. A push_changes may carry
	// marks and no ChangeSet (then its marks are at Cursor). Decode refuses
	// marks out of order or outside that range.
	Horizons []Horizon
}

// GetSnapshot (client → relay) asks for a full snapshot.
//
//	{"type":"get_snapshot"}
//	{"type":"get_snapshot","checkpointId":"c4211-5f0e","fromPart":12}
type GetSnapshot struct {
	// CheckpointID and FromPart (version 7, sealed databases; JSON
	// "checkpointId", "fromPart", both or neither, omitted when
	// CheckpointID is ""): resume the sealed checkpoint CheckpointID: if
	// it is still the newest, the relay streams its parts 0 and 1 (the
	// header and the schema) and then its parts from FromPart on (see
	// "Sealed checkpoints").
	CheckpointID string
	FromPart     uint32
}

// ResumeSnapshot (client → relay) asks to continue an interrupted snapshot.
//
//	{"type":"resume_snapshot","checkpoint":{…}}
type ResumeSnapshot struct {
	Checkpoint model.SnapshotCheckpoint
}

// SnapshotChunk (relay → client) carries one chunk of a snapshot stream.
//
//	{"type":"snapshot_chunk","chunk":{"type":"rows",…}}
type SnapshotChunk struct {
	Chunk model.SnapshotChunk
}

// SnapshotComplete (relay → client) ends a snapshot stream after its
// footer chunk. Since version 10 it may state the log's chain value at the
// cursor the client pulls from after the snapshot (the header's, or the
// resumed checkpoint's), so that the client stores its cursor with the
// chain value there ("Verifying the relay's log").
//
//	{"type":"snapshot_complete","cursor":41,"chain":"I-zgrM9zk1Rcq6zDbIfU6Q"}
type SnapshotComplete struct {
	// Cursor and Chain go together: a zero Chain states neither.
	Cursor uint64
	Chain  Chain
}

// Ping (either direction) asks for a Pong.
//
//	{"type":"ping"}
type Ping struct{}

// Pong answers a Ping.
//
//	{"type":"pong"}
type Pong struct{}

// Error (relay → client) reports a failed request or session. *Error
// implements error.
//
//	{"type":"error","code":"AUTH_FAILED","message":"bad token","fatal":true}
type Error struct {
	// Code is one of the ErrorCode constants, or a code of a newer peer.
	Code ErrorCode
	// Message is a human-readable explanation, possibly "".
	Message string
	// Fatal is true when the session is over (see ErrorCode). A frame
	// without the flag decodes with Fatal = IsFatal(Code).
	Fatal bool
	// RequestID is the requestId of the apply_changes this error answers;
	// "" (omitted) otherwise.
	RequestID string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" {
		return "relay error " + string(e.Code)
	}
	return "relay error " + string(e.Code) + ": " + e.Message
}

// Is makes errors.Is(e, model.ErrClockDrift) true for CodeClockDrift, so
// that a device ahead (the relay's CLOCK_DRIFT) and a device behind (its
// own engine's *model.DriftError) are both found by one test.
func (e *Error) Is(target error) bool {
	return target == model.ErrClockDrift && e.Code == CodeClockDrift
}

// Type returns TypeHandshake.
func (*Handshake) Type() MessageType { return TypeHandshake }

// Type returns TypeHandshakeAck.
func (*HandshakeAck) Type() MessageType { return TypeHandshakeAck }

// Type returns TypeGetChanges.
func (*GetChanges) Type() MessageType { return TypeGetChanges }

// Type returns TypeChanges.
func (*Changes) Type() MessageType { return TypeChanges }

// Type returns TypeApplyChanges.
func (*ApplyChanges) Type() MessageType { return TypeApplyChanges }

// Type returns TypeApplyResult.
func (*ApplyResult) Type() MessageType { return TypeApplyResult }

// Type returns TypePushChanges.
func (*PushChanges) Type() MessageType { return TypePushChanges }

// Type returns TypeGetSnapshot.
func (*GetSnapshot) Type() MessageType { return TypeGetSnapshot }

// Type returns TypeResumeSnapshot.
func (*ResumeSnapshot) Type() MessageType { return TypeResumeSnapshot }

// Type returns TypeSnapshotChunk.
func (*SnapshotChunk) Type() MessageType { return TypeSnapshotChunk }

// Type returns TypeSnapshotComplete.
func (*SnapshotComplete) Type() MessageType { return TypeSnapshotComplete }

// Type returns TypePing.
func (*Ping) Type() MessageType { return TypePing }

// Type returns TypePong.
func (*Pong) Type() MessageType { return TypePong }

// Type returns TypeError.
func (*Error) Type() MessageType { return TypeError }

// Encode returns the frame of m: one JSON object, type first, optional
// fields omitted. It checks what Decode checks, so a frame Encode returns
// always decodes. A message that cannot be represented (see
// ErrInvalidMessage) is an error and nothing is returned.
func Encode(m Message) ([]byte, error) {
	if m == nil {
		return nil, invalid("nil message")
	}
	b, err := m.appendTo(make([]byte, 0, 128))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ClientMessage is a message a client sends: *Handshake, *GetChanges,
// *ApplyChanges, *GetSnapshot, *ResumeSnapshot, *PutCheckpoint, *Ping or
// *Pong.
type ClientMessage interface {
	Message
	appendClient(b []byte) ([]byte, error)
}

// EncodeClient is Encode for a message a client sends. A program that
// encodes only those (the browser build's client) calls it rather than
// Encode so that the encoders of the relay's messages are not linked in:
// Encode's call of appendTo through Message keeps the appendTo method of
// every message type that Decode returns.
func EncodeClient(m ClientMessage) ([]byte, error) {
	if m == nil {
		return nil, invalid("nil message")
	}
	b, err := m.appendClient(make([]byte, 0, 128))
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (m *Handshake) appendClient(b []byte) ([]byte, error)      { return m.appendTo(b) }
func (m *GetChanges) appendClient(b []byte) ([]byte, error)     { return m.appendTo(b) }
func (m *ApplyChanges) appendClient(b []byte) ([]byte, error)   { return m.appendTo(b) }
func (m *GetSnapshot) appendClient(b []byte) ([]byte, error)    { return m.appendTo(b) }
func (m *ResumeSnapshot) appendClient(b []byte) ([]byte, error) { return m.appendTo(b) }
func (m *Ping) appendClient(b []byte) ([]byte, error)           { return m.appendTo(b) }
func (m *Pong) appendClient(b []byte) ([]byte, error)           { return m.appendTo(b) }

// Decode parses one frame. It returns a pointer to one of the message types,
// or an error matching ErrMalformed (and also ErrUnknownType for a
// well-formed frame of an unknown type) whose message names the offending
// field. Decoding is strict: see "Encodings" in the package documentation.
// The result holds no reference to frame.
//
// A handshake or handshake_ack whose protocolVersion is absent or differs
// from ProtocolVersion decodes to a message with only ProtocolVersion set,
// whatever else the frame holds (as long as it is valid JSON), so that the
// receiver answers a version mismatch rather than a malformed message.
func Decode(frame []byte) (Message, error) {
	return decode(frame, (*reader).clientMessage)
}

// DecodeServer is Decode for a frame a relay sends (handshake_ack, changes,
// apply_result, push_changes, snapshot_chunk, snapshot_complete,
// checkpoint_part, checkpoint_result, error, ping, pong). A frame of a
// message type only a client sends is malformed (not ErrUnknownType: it is
// no newer protocol's message), as is anything Decode refuses. A program
// that reads only a relay's frames (the client) calls it rather than Decode
// so that the decoders of the client's messages are not linked in (the
// mirror of EncodeClient).
func DecodeServer(frame []byte) (Message, error) {
	return decode(frame, nil)
}

// decode decodes a relay's message, or with clientMessage non-nil also a
// client's (a function value, not a flag, so that a program calling only
// DecodeServer does not link the client messages' decoders).
func decode(frame []byte, clientMessage func(*reader, MessageType) (Message, bool, error)) (Message, error) {
	var bin *binDecoder
	if IsBinaryFrame(frame) {
		head, tail, off, err := splitBinaryFrame(frame)
		if err != nil {
			return nil, err
		}
		frame, bin = head, &binDecoder{data: tail, base: off}
	}
	r := newReader(frame)
	r.bin = bin
	if err := checkUTF8(r); err != nil {
		return nil, err
	}
	t, err := r.peekType()
	if err != nil {
		return nil, err
	}
	m, known, err := r.serverMessage(MessageType(t))
	if !known && clientMessage != nil {
		m, known, err = clientMessage(r, MessageType(t))
	}
	if !known {
		if _, _, err := r.Skip(); err != nil {
			return nil, err
		}
		if err := r.End(); err != nil {
			return nil, err
		}
		if isClientType(MessageType(t)) {
			return nil, &pathError{sentinel: ErrMalformed, rev: []string{"type"},
				msg: "message type " + quote(t) + " is sent by clients, not by a relay", offset: 0}
		}
		return nil, &pathError{sentinel: ErrMalformed, unknown: true, rev: []string{"type"},
			msg: "unknown message type " + quote(t), offset: 0}
	}
	if err == nil {
		err = r.End()
	}
	if err == nil && bin != nil && !r.binUsed {
		err = &pathError{sentinel: ErrMalformed, msg: "a binary frame carries ChangeSets: changes, apply_changes or push_changes with at least one", offset: 0}
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// isClientType reports whether t is the type of a message only a client
// sends.
func isClientType(t MessageType) bool {
	switch t {
	case TypeHandshake, TypeGetChanges, TypeApplyChanges, TypeGetSnapshot, TypeResumeSnapshot, TypePutCheckpoint:
		return true
	}
	return false
}

// serverMessage decodes a message of type t that a relay sends (ping and
// pong included); known is false for any other type (nothing read).
func (r *reader) serverMessage(t MessageType) (m Message, known bool, err error) {
	switch t {
	case TypeHandshakeAck:
		m, err = r.handshakeAck()
	case TypeChanges:
		m, err = r.changes()
	case TypeApplyResult:
		m, err = r.applyResult()
	case TypePushChanges:
		m, err = r.pushChanges()
	case TypeSnapshotChunk:
		m, err = r.snapshotChunk()
	case TypeError:
		m, err = r.errorMessage()
	case TypeSnapshotComplete:
		m, err = r.snapshotComplete()
	case TypePing:
		m, err = &Ping{}, r.emptyMessage()
	case TypePong:
		m, err = &Pong{}, r.emptyMessage()
	case TypeCheckpointPart:
		var p CheckpointPart
		p, err = r.checkpointPart()
		m = &CheckpointPartMessage{p}
	case TypeCheckpointResult:
		m, err = r.checkpointResult()
	default:
		return nil, false, nil
	}
	return m, true, err
}

// clientMessage decodes a message of type t that only a client sends;
// known is false for any other type (nothing read).
func (r *reader) clientMessage(t MessageType) (m Message, known bool, err error) {
	switch t {
	case TypeHandshake:
		m, err = r.handshake()
	case TypeGetChanges:
		m, err = r.getChanges()
	case TypeApplyChanges:
		m, err = r.applyChanges()
	case TypeGetSnapshot:
		m, err = r.getSnapshot()
	case TypeResumeSnapshot:
		m, err = r.resumeSnapshot()
	case TypePutCheckpoint:
		var p CheckpointPart
		p, err = r.checkpointPart()
		m = &PutCheckpoint{p}
	default:
		return nil, false, nil
	}
	return m, true, err
}

func quote(s string) string {
	b, _ := appendString(nil, s)
	return string(b)
}

// ---- encoding ----

// header writes `{"type":"<t>"`.
func header(b []byte, t MessageType) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, t...)
	return append(b, '"')
}

func checkVersion(v int) error {
	if v < 0 || v > math.MaxInt32 {
		return at(invalid("%d out of range", v), "protocolVersion")
	}
	return nil
}

func (m *Handshake) appendTo(b []byte) ([]byte, error) {
	var err error
	if err = checkVersion(m.ProtocolVersion); err != nil {
		return b, err
	}
	b = header(b, TypeHandshake)
	if m.ProtocolVersion != 0 {
		b = append(b, `,"protocolVersion":`...)
		b = appendUint(b, uint64(m.ProtocolVersion))
	}
	if m.DatabaseID != "" {
		b = append(b, `,"databaseId":`...)
		if b, err = appendString(b, m.DatabaseID); err != nil {
			return b, at(err, "databaseId")
		}
	}
	b = append(b, `,"siteId":`...)
	b = appendSiteID(b, m.SiteID)
	if m.Token != "" {
		b = append(b, `,"token":`...)
		if b, err = appendString(b, m.Token); err != nil {
			return b, at(err, "token")
		}
	}
	if !m.Log.IsZero() {
		b = append(b, `,"serverSiteId":`...)
		b = appendSiteID(b, m.Log)
		if b, err = appendCursor(b, "cursor", m.Cursor); err != nil {
			return b, err
		}
		if !m.Chain.IsZero() {
			b = append(b, `,"chain":`...)
			b = appendChain(b, m.Chain)
		}
		if m.Horizon != 0 {
			if b, err = appendCursor(b, "horizon", m.Horizon); err != nil {
				return b, err
			}
		}
	} else if m.Cursor != 0 || !m.Chain.IsZero() || m.Horizon != 0 {
		return b, at(invalid("a cursor, chain value or horizon without serverSiteId"), "cursor")
	}
	if m.Sealed {
		b = append(b, `,"sealed":true`...)
	}
	return append(b, '}'), nil
}

func (m *HandshakeAck) appendTo(b []byte) ([]byte, error) {
	var err error
	if err = checkVersion(m.ProtocolVersion); err != nil {
		return b, err
	}
	if m.ProtocolVersion == ProtocolVersion {
		if m.DatabaseID == "" {
			return b, at(invalid("must not be empty"), "databaseId")
		}
		if m.ConnectionID == "" {
			return b, at(invalid("must not be empty"), "connectionId")
		}
	}
	b = header(b, TypeHandshakeAck)
	if m.ProtocolVersion != 0 {
		b = append(b, `,"protocolVersion":`...)
		b = appendUint(b, uint64(m.ProtocolVersion))
	}
	if m.DatabaseID != "" {
		b = append(b, `,"databaseId":`...)
		if b, err = appendString(b, m.DatabaseID); err != nil {
			return b, at(err, "databaseId")
		}
	}
	b = append(b, `,"serverSiteId":`...)
	b = appendSiteID(b, m.ServerSiteID)
	if m.ConnectionID != "" {
		b = append(b, `,"connectionId":`...)
		if b, err = appendString(b, m.ConnectionID); err != nil {
			return b, at(err, "connectionId")
		}
	}
	if m.SiteHLCStated {
		b = append(b, `,"siteHlc":`...)
		b = appendHLC(b, m.SiteHLC)
	}
	switch m.History {
	case "":
	case HistoryContinues, HistoryDiverged, HistoryUnverified:
		b = append(b, `,"history":"`...)
		b = append(b, m.History...)
		b = append(b, '"')
	default:
		return b, at(invalid("%q is not a history verdict", m.History), "history")
	}
	if m.Sealed {
		b = append(b, `,"sealed":true`...)
	}
	if m.CheckpointCursor != 0 {
		if b, err = appendCursor(b, "checkpointCursor", m.CheckpointCursor); err != nil {
			return b, err
		}
	}
	if m.CheckpointAt != 0 {
		if b, err = appendCursor(b, "checkpointAt", m.CheckpointAt); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendCursor(b []byte, name string, c uint64) ([]byte, error) {
	if c > MaxCursor {
		return b, at(invalid("%d above 2^53", c), name)
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendUint(b, c), nil
}

func (m *GetChanges) appendTo(b []byte) ([]byte, error) {
	b = header(b, TypeGetChanges)
	if m.Since != 0 {
		var err error
		if b, err = appendCursor(b, "since", m.Since); err != nil {
			return b, err
		}
	}
	if m.OwnStated {
		if !m.OwnAbove.Less(m.OwnUpTo) {
			return b, at(invalid("ownUpTo not above ownAbove"), "ownUpTo")
		}
		b = append(b, `,"ownAbove":`...)
		b = appendHLC(b, m.OwnAbove)
		b = append(b, `,"ownUpTo":`...)
		b = appendHLC(b, m.OwnUpTo)
	}
	return append(b, '}'), nil
}

func (m *Changes) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypeChanges)
	if b, err = appendCursor(b, "cursor", m.Cursor); err != nil {
		return b, err
	}
	if !m.Chain.IsZero() {
		b = append(b, `,"chain":`...)
		b = appendChain(b, m.Chain)
	}
	if m.More {
		b = append(b, `,"more":true`...)
	} else {
		b = append(b, `,"more":false`...)
	}
	if b, err = appendHorizons(b, m.Horizons, 0, m.Cursor); err != nil {
		return b, err
	}
	return finishChangeSets(b, "changeSets", m.ChangeSets)
}

func (m *ApplyChanges) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypeApplyChanges)
	if m.RequestID != "" {
		b = append(b, `,"requestId":`...)
		if b, err = appendString(b, m.RequestID); err != nil {
			return b, at(err, "requestId")
		}
	}
	if m.Repair {
		b = append(b, `,"repair":true`...)
	}
	return finishChangeSets(b, "changes", m.ChangeSets)
}

func (m *ApplyResult) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypeApplyResult)
	if m.RequestID != "" {
		b = append(b, `,"requestId":`...)
		if b, err = appendString(b, m.RequestID); err != nil {
			return b, at(err, "requestId")
		}
	}
	counts := []struct {
		name string
		n    int
	}{
		{"applied", m.Applied},
		{"skipped", m.Skipped},
		{"conflicts", m.Conflicts},
		{"transactions", m.Transactions},
		{"unknownTable", m.Held}, // model.ApplyResult.Held: the wire keeps its older name
	}
	for _, c := range counts {
		if c.n < 0 || c.n > MaxCursor {
			return b, at(invalid("%d out of range [0, 2^53]", c.n), c.name)
		}
		if c.name == "unknownTable" && c.n == 0 {
			continue
		}
		b, _ = appendCursor(b, c.name, uint64(c.n))
	}
	switch {
	case m.Cursor == 0 && (m.First != 0 || !m.Chain.IsZero() || len(m.Horizons) > 0):
		return b, at(invalid("first, chain and horizons need a cursor"), "cursor")
	case m.Cursor == 0:
		return append(b, '}'), nil
	case m.First == 0 || m.First > m.Cursor:
		return b, at(invalid("%d outside [1, cursor %d]", m.First, m.Cursor), "first")
	case m.Chain.IsZero():
		return b, at(invalid("must not be empty with a cursor"), "chain")
	}
	b, _ = appendCursor(b, "first", m.First)
	if b, err = appendCursor(b, "cursor", m.Cursor); err != nil {
		return b, err
	}
	b = append(b, `,"chain":`...)
	b = appendChain(b, m.Chain)
	if b, err = appendHorizons(b, m.Horizons, m.First-1, m.Cursor); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func (m *PushChanges) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypePushChanges)
	if b, err = appendCursor(b, "cursor", m.Cursor); err != nil {
		return b, err
	}
	if !m.Chain.IsZero() {
		b = append(b, `,"chain":`...)
		b = appendChain(b, m.Chain)
	}
	if b, err = appendHorizons(b, m.Horizons, pushFirst(m.Cursor, len(m.ChangeSets)), m.Cursor); err != nil {
		return b, err
	}
	return finishChangeSets(b, "changeSets", m.ChangeSets)
}

func (m *ResumeSnapshot) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypeResumeSnapshot)
	b = append(b, `,"checkpoint":`...)
	if b, err = appendCheckpoint(b, &m.Checkpoint); err != nil {
		return b, at(err, "checkpoint")
	}
	return append(b, '}'), nil
}

func (m *SnapshotChunk) appendTo(b []byte) ([]byte, error) {
	var err error
	b = header(b, TypeSnapshotChunk)
	b = append(b, `,"chunk":`...)
	if b, err = appendChunk(b, &m.Chunk); err != nil {
		return b, at(err, "chunk")
	}
	return append(b, '}'), nil
}

func (m *Error) appendTo(b []byte) ([]byte, error) {
	var err error
	if m.Code == "" {
		return b, at(invalid("must not be empty"), "code")
	}
	b = header(b, TypeError)
	b = append(b, `,"code":`...)
	if b, err = appendString(b, string(m.Code)); err != nil {
		return b, at(err, "code")
	}
	b = append(b, `,"message":`...)
	if b, err = appendString(b, m.Message); err != nil {
		return b, at(err, "message")
	}
	if m.Fatal {
		b = append(b, `,"fatal":true`...)
	} else {
		b = append(b, `,"fatal":false`...)
	}
	if m.RequestID != "" {
		b = append(b, `,"requestId":`...)
		if b, err = appendString(b, m.RequestID); err != nil {
			return b, at(err, "requestId")
		}
	}
	return append(b, '}'), nil
}

func (m *GetSnapshot) appendTo(b []byte) ([]byte, error) {
	b = header(b, TypeGetSnapshot)
	if m.CheckpointID == "" {
		if m.FromPart != 0 {
			return b, at(invalid("fromPart without checkpointId"), "fromPart")
		}
		return append(b, '}'), nil
	}
	if err := checkCheckpointID(m.CheckpointID); err != nil {
		return b, err
	}
	b = append(b, `,"checkpointId":`...)
	b, err := appendString(b, m.CheckpointID)
	if err != nil {
		return b, at(err, "checkpointId")
	}
	b = append(b, `,"fromPart":`...)
	b = appendUint(b, uint64(m.FromPart))
	return append(b, '}'), nil
}

func (m *SnapshotComplete) appendTo(b []byte) ([]byte, error) {
	b = header(b, TypeSnapshotComplete)
	if m.Chain.IsZero() {
		if m.Cursor != 0 {
			return b, at(invalid("needs a chain"), "cursor")
		}
		return append(b, '}'), nil
	}
	var err error
	if b, err = appendCursor(b, "cursor", m.Cursor); err != nil {
		return b, err
	}
	b = append(b, `,"chain":`...)
	b = appendChain(b, m.Chain)
	return append(b, '}'), nil
}

func (*Ping) appendTo(b []byte) ([]byte, error) { return append(header(b, TypePing), '}'), nil }
func (*Pong) appendTo(b []byte) ([]byte, error) { return append(header(b, TypePong), '}'), nil }

// ---- decoding ----

// emptyMessage reads a frame with no member but "type".
func (r *reader) emptyMessage() error {
	var seen fields
	return r.Members(func(key []byte) error {
		if string(key) == "type" {
			return r.typeField(&seen, key)
		}
		return r.UnknownKey(key)
	})
}

// peekVersion scans the frame's object for protocolVersion without
// consuming anything: 0 when absent. The object's syntax is checked.
func (r *reader) peekVersion() (int, error) {
	pos, depth := r.Pos, r.Depth
	defer func() { r.Pos, r.Depth = pos, depth }()
	v, found := 0, false
	err := r.Members(func(key []byte) error {
		if string(key) != "protocolVersion" {
			_, _, err := r.Skip()
			return err
		}
		if found {
			return r.Fail("duplicate key %q", key)
		}
		found = true
		n, err := r.uint(math.MaxInt32)
		v = int(n)
		return at(err, "protocolVersion")
	})
	return v, err
}

func (r *reader) handshake() (Message, error) {
	v, err := r.peekVersion()
	if err != nil || v != ProtocolVersion {
		if err != nil {
			return nil, err
		}
		_, _, err = r.Skip()
		return &Handshake{ProtocolVersion: v}, err
	}
	m := &Handshake{}
	var seen fields
	const (
		fType fields = 1 << iota
		fVersion
		fDB
		fSite
		fToken
		fLog
		fCursor
		fChain
		fSealed
		fHorizon
	)
	err = r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "protocolVersion":
			if err = seen.See(&r.Reader, fVersion, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxInt32)
				m.ProtocolVersion = int(n)
			}
		case "databaseId":
			if err = seen.See(&r.Reader, fDB, key); err == nil {
				m.DatabaseID, err = r.Str()
			}
		case "siteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				m.SiteID, err = r.siteID()
			}
		case "token":
			if err = seen.See(&r.Reader, fToken, key); err == nil {
				m.Token, err = r.Str()
			}
		case "serverSiteId":
			if err = seen.See(&r.Reader, fLog, key); err == nil {
				m.Log, err = r.siteID()
			}
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				m.Cursor, err = r.uint(MaxCursor)
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				m.Chain, err = r.chain()
			}
		case "horizon":
			if err = seen.See(&r.Reader, fHorizon, key); err == nil {
				m.Horizon, err = r.uint(MaxCursor)
			}
		case "sealed":
			if err = seen.See(&r.Reader, fSealed, key); err == nil {
				m.Sealed, err = r.Boolean()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fSite, "type", "protocolVersion", "databaseId", "siteId")
	}
	if err == nil && seen&(fCursor|fChain|fHorizon) != 0 {
		err = seen.Require(&r.Reader, fLog|fCursor, "type", "protocolVersion", "databaseId", "siteId", "token", "serverSiteId", "cursor")
	}
	if err == nil && seen&fLog != 0 {
		err = seen.Require(&r.Reader, fCursor, "type", "protocolVersion", "databaseId", "siteId", "token", "serverSiteId", "cursor")
	}
	return m, err
}

func (r *reader) handshakeAck() (Message, error) {
	v, err := r.peekVersion()
	if err != nil || v != ProtocolVersion {
		if err != nil {
			return nil, err
		}
		_, _, err = r.Skip()
		return &HandshakeAck{ProtocolVersion: v}, err
	}
	m := &HandshakeAck{}
	var seen fields
	const (
		fType fields = 1 << iota
		fVersion
		fDB
		fSite
		fConn
		fSiteHLC
		fHistory
		fSealed
		fCkptCursor
		fCkptAt
	)
	err = r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "protocolVersion":
			if err = seen.See(&r.Reader, fVersion, key); err == nil {
				var n uint64
				n, err = r.uint(math.MaxInt32)
				m.ProtocolVersion = int(n)
			}
		case "databaseId":
			if err = seen.See(&r.Reader, fDB, key); err == nil {
				m.DatabaseID, err = r.NonEmptyStr()
			}
		case "serverSiteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				m.ServerSiteID, err = r.siteID()
			}
		case "connectionId":
			if err = seen.See(&r.Reader, fConn, key); err == nil {
				m.ConnectionID, err = r.NonEmptyStr()
			}
		case "siteHlc":
			if err = seen.See(&r.Reader, fSiteHLC, key); err == nil {
				m.SiteHLC, err = r.hlc()
				m.SiteHLCStated = err == nil
			}
		case "history":
			if err = seen.See(&r.Reader, fHistory, key); err == nil {
				start := r.Pos
				var h string
				if h, err = r.Str(); err == nil {
					m.History = History(h)
					if m.History != HistoryContinues && m.History != HistoryDiverged && m.History != HistoryUnverified {
						err = r.FailAt(start, "history %q: want %q, %q or %q", h, HistoryContinues, HistoryDiverged, HistoryUnverified)
					}
				}
			}
		case "sealed":
			if err = seen.See(&r.Reader, fSealed, key); err == nil {
				m.Sealed, err = r.Boolean()
			}
		case "checkpointCursor":
			if err = seen.See(&r.Reader, fCkptCursor, key); err == nil {
				m.CheckpointCursor, err = r.uint(MaxCursor)
			}
		case "checkpointAt":
			if err = seen.See(&r.Reader, fCkptAt, key); err == nil {
				m.CheckpointAt, err = r.uint(MaxCursor)
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fDB|fSite|fConn, "type", "protocolVersion", "databaseId", "serverSiteId", "connectionId")
	}
	return m, err
}

func (r *reader) getChanges() (Message, error) {
	m := &GetChanges{}
	var seen fields
	err := r.Members(func(key []byte) error {
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "since":
			err := seen.See(&r.Reader, 2, key)
			if err == nil {
				m.Since, err = r.uint(MaxCursor)
			}
			return at(err, "since")
		case "ownAbove":
			err := seen.See(&r.Reader, 4, key)
			if err == nil {
				m.OwnAbove, err = r.hlc()
			}
			return at(err, "ownAbove")
		case "ownUpTo":
			err := seen.See(&r.Reader, 8, key)
			if err == nil {
				m.OwnUpTo, err = r.hlc()
			}
			return at(err, "ownUpTo")
		}
		return r.UnknownKey(key)
	})
	if err == nil {
		switch seen & 12 {
		case 0:
		case 12:
			m.OwnStated = true
			if !m.OwnAbove.Less(m.OwnUpTo) {
				err = r.Fail("ownUpTo not above ownAbove")
			}
		default:
			err = r.Fail("ownAbove and ownUpTo go together")
		}
	}
	return m, err
}

func (r *reader) changes() (Message, error) {
	m := &Changes{}
	var seen fields
	hpos := 0
	const (
		fType fields = 1 << iota
		fCursor
		fMore
		fSets
		fChain
		fHorizons
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				m.Cursor, err = r.uint(MaxCursor)
			}
		case "more":
			if err = seen.See(&r.Reader, fMore, key); err == nil {
				m.More, err = r.Boolean()
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				m.Chain, err = r.chain()
			}
		case "changeSets":
			if err = seen.See(&r.Reader, fSets, key); err == nil {
				m.ChangeSets, err = r.changeSets()
			}
		case "horizons":
			if err = seen.See(&r.Reader, fHorizons, key); err == nil {
				hpos = r.Pos
				m.Horizons, err = r.horizons()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fCursor|fMore|fSets, "type", "cursor", "more", "changeSets")
	}
	if err == nil {
		err = r.checkDecodedHorizons(m.Horizons, 0, m.Cursor, hpos)
	}
	return m, err
}

func (r *reader) applyChanges() (Message, error) {
	m := &ApplyChanges{}
	var seen fields
	const (
		fType fields = 1 << iota
		fRequest
		fSets
		fRepair
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "requestId":
			if err = seen.See(&r.Reader, fRequest, key); err == nil {
				m.RequestID, err = r.Str()
			}
		case "repair":
			if err = seen.See(&r.Reader, fRepair, key); err == nil {
				start := r.Pos
				if m.Repair, err = r.Boolean(); err == nil && !m.Repair {
					err = r.FailAt(start, "repair is true or omitted")
				}
			}
		case "changes":
			if err = seen.See(&r.Reader, fSets, key); err == nil {
				m.ChangeSets, err = r.changeSets()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fSets, "type", "requestId", "changes")
	}
	return m, err
}

func (r *reader) snapshotComplete() (Message, error) {
	m := &SnapshotComplete{}
	var seen fields
	const (
		fType fields = 1 << iota
		fCursor
		fChain
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				m.Cursor, err = r.uint(MaxCursor)
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				m.Chain, err = r.chain()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		switch {
		case seen&fCursor != 0 && seen&fChain == 0:
			err = at(r.FailAt(r.Pos, "missing with cursor"), "chain")
		case seen&fChain != 0 && seen&fCursor == 0:
			err = at(r.FailAt(r.Pos, "missing with chain"), "cursor")
		}
	}
	return m, err
}

func (r *reader) applyResult() (Message, error) {
	m := &ApplyResult{}
	var seen fields
	const (
		fType fields = 1 << iota
		fRequest
		fApplied
		fSkipped
		fConflicts
		fTransactions
		fUnknown
		fFirst
		fCursor
		fChain
		fHorizons
	)
	hpos, fpos, cpos := 0, 0, 0
	count := func(bit fields, key []byte, dst *int) error {
		err := seen.See(&r.Reader, bit, key)
		if err == nil {
			var n uint64
			n, err = r.uint(MaxCursor)
			*dst = int(n)
		}
		return err
	}
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "requestId":
			if err = seen.See(&r.Reader, fRequest, key); err == nil {
				m.RequestID, err = r.Str()
			}
		case "applied":
			err = count(fApplied, key, &m.Applied)
		case "skipped":
			err = count(fSkipped, key, &m.Skipped)
		case "conflicts":
			err = count(fConflicts, key, &m.Conflicts)
		case "transactions":
			err = count(fTransactions, key, &m.Transactions)
		case "unknownTable": // model.ApplyResult.Held (a wire name: it stays)
			err = count(fUnknown, key, &m.Held)
		case "first":
			if err = seen.See(&r.Reader, fFirst, key); err == nil {
				fpos = r.Pos
				m.First, err = r.uint(MaxCursor)
			}
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				cpos = r.Pos
				m.Cursor, err = r.uint(MaxCursor)
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				m.Chain, err = r.chain()
			}
		case "horizons":
			if err = seen.See(&r.Reader, fHorizons, key); err == nil {
				hpos = r.Pos
				m.Horizons, err = r.horizons()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fApplied|fSkipped|fConflicts|fTransactions,
			"type", "requestId", "applied", "skipped", "conflicts", "transactions")
	}
	if err == nil {
		// The position of the appended entries: first, cursor and chain
		// together; horizons only with them.
		switch {
		case seen&fCursor == 0 && seen&(fFirst|fChain|fHorizons) != 0:
			err = at(r.FailAt(r.Pos, "first, chain and horizons need a cursor"), "cursor")
		case seen&fCursor == 0:
		case seen&fFirst == 0:
			err = at(r.FailAt(cpos, "missing with cursor"), "first")
		case seen&fChain == 0:
			err = at(r.FailAt(cpos, "missing with cursor"), "chain")
		case m.First == 0 || m.First > m.Cursor:
			err = at(r.FailAt(fpos, "%d outside [1, cursor %d]", m.First, m.Cursor), "first")
		default:
			err = r.checkDecodedHorizons(m.Horizons, m.First-1, m.Cursor, hpos)
		}
	}
	return m, err
}

func (r *reader) pushChanges() (Message, error) {
	m := &PushChanges{}
	var seen fields
	hpos := 0
	const (
		fType fields = 1 << iota
		fCursor
		fSets
		fChain
		fHorizons
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				m.Cursor, err = r.uint(MaxCursor)
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				m.Chain, err = r.chain()
			}
		case "changeSets":
			if err = seen.See(&r.Reader, fSets, key); err == nil {
				m.ChangeSets, err = r.changeSets()
			}
		case "horizons":
			if err = seen.See(&r.Reader, fHorizons, key); err == nil {
				hpos = r.Pos
				m.Horizons, err = r.horizons()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fCursor|fSets, "type", "cursor", "changeSets")
	}
	if err == nil {
		err = r.checkDecodedHorizons(m.Horizons, pushFirst(m.Cursor, len(m.ChangeSets)), m.Cursor, hpos)
	}
	return m, err
}

// pushFirst is the lowest cursor a horizon mark of a push_changes at
// cursor carrying n ChangeSets may have: the sequence before its first
// ChangeSet (0 when n exceeds cursor, which the receiver treats as not
// contiguous anyway).
func pushFirst(cursor uint64, n int) uint64 {
	if uint64(n) > cursor {
		return 0
	}
	return cursor - uint64(n)
}

func (r *reader) resumeSnapshot() (Message, error) {
	m := &ResumeSnapshot{}
	var seen fields
	err := r.Members(func(key []byte) error {
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "checkpoint":
			err := seen.See(&r.Reader, 2, key)
			if err == nil {
				m.Checkpoint, err = r.checkpoint()
			}
			return at(err, "checkpoint")
		}
		return r.UnknownKey(key)
	})
	if err == nil {
		err = seen.Require(&r.Reader, 2, "type", "checkpoint")
	}
	return m, err
}

func (r *reader) snapshotChunk() (Message, error) {
	m := &SnapshotChunk{}
	var seen fields
	err := r.Members(func(key []byte) error {
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "chunk":
			err := seen.See(&r.Reader, 2, key)
			if err == nil {
				m.Chunk, err = r.chunk()
			}
			return at(err, "chunk")
		}
		return r.UnknownKey(key)
	})
	if err == nil {
		err = seen.Require(&r.Reader, 2, "type", "chunk")
	}
	return m, err
}

func (r *reader) errorMessage() (Message, error) {
	m := &Error{}
	var seen fields
	const (
		fType fields = 1 << iota
		fCode
		fMessage
		fFatal
		fRequest
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			return r.typeField(&seen, key)
		case "code":
			if err = seen.See(&r.Reader, fCode, key); err == nil {
				var c string
				c, err = r.NonEmptyStr()
				m.Code = ErrorCode(c)
			}
		case "message":
			if err = seen.See(&r.Reader, fMessage, key); err == nil {
				m.Message, err = r.Str()
			}
		case "fatal":
			if err = seen.See(&r.Reader, fFatal, key); err == nil {
				m.Fatal, err = r.Boolean()
			}
		case "requestId":
			if err = seen.See(&r.Reader, fRequest, key); err == nil {
				m.RequestID, err = r.Str()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fCode|fMessage, "type", "code", "message")
	}
	if err == nil && seen&fFatal == 0 {
		m.Fatal = IsFatal(string(m.Code))
	}
	return m, err
}
