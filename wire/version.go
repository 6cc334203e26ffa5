package wire

import (
	"fmt"

	"github.com/replica-sync/replica/model"
)

// ProtocolVersion is the version of the protocol this package speaks. The
// handshake and handshake_ack carry it, and both ends require strict
// equality: there is no range negotiation. Bump it on any change to a
// message's shape or to an encoding that a peer of the previous version
// would misread or reject, and add a line to the changelog below.
//
// The shapes of handshake, handshake_ack and error are frozen: every version
// must be able to read another version's handshake far enough to find
// protocolVersion, and to read the PROTOCOL_VERSION_MISMATCH error it gets
// back (see "Protocol version" in the package documentation).
//
// Changelog (newest last):
//
//   - 1: 2026-11-29: first version. Differs from the origin protocol
//     (docs/design.md § Sync): the handshake names the database (databaseId);
//     delivery is by the relay's arrival cursor, not by HLC
//     (get_changes.since, changes.cursor and more, push_changes.cursor);
//     apply_result adds transactions and unknownTable; error always carries
//     fatal; snapshot rows travel in the compact rows chunk of snapshot
//     format 1; schema migrations carry their DDL as JSON, not SQL.
//   - 1 (unchanged): 2026-11-30: new transient error code
//     APPLY_CHANGES_REFUSED for an apply_changes refused for its content
//     (retrying it unchanged cannot succeed), which relays sent as
//     APPLY_CHANGES_ERROR before. No version bump: every client of
//     version 1 treats an unknown code as transient, and an error frame
//     carrying its push's requestId as a failed push, as it did
//     APPLY_CHANGES_ERROR.
//   - 1 (unchanged): 2026-12-01: new transient error code CLOCK_DRIFT for
//     an apply_changes refused because a ChangeSet's HLC is more than
//     model.MaxDrift ms ahead of the relay's clock (the device's clock is
//     ahead), which relays sent as APPLY_CHANGES_ERROR saying "clock
//     drift" before. No version bump, for the same reason as above.
//     Clients of this date also treat a changes reply that breaks the
//     paging rules (see "Message changes": more without advancing the
//     cursor, a cursor that moves back) and an apply_result for another
//     requestId than the push in flight as protocol errors, retried with
//     backoff.
//   - 1 (unchanged): 2026-12-01: new transient error code RATE_LIMITED,
//     sent before the relay closes (status 1008) a connection that stayed
//     above its rate limits. No version bump: a client of version 1
//     treats it as an unknown transient code and reconnects with backoff
//     after the close.
//   - 1 (unchanged): 2026-12-01: rows chunks are bounded by bytes
//     (MaxRowsChunkOverhead + SnapshotRowSize; 4 MiB by default) as well
//     as rows, and a row larger than a chunk travels in parts: rows
//     chunks carrying the same row, each with some of its cells. Every
//     receiver of version 1 already merges a repeated row (a join) and
//     counts row entries in the footer, so parts apply as the row.
//   - 2: 2026-12-01: clients verify the relay's log ("Verifying the relay's
//     log" in the package documentation). The relay keeps a chain value
//     per cursor; changes and push_changes carry it (chain); the
//     handshake may present the client's position (serverSiteId, cursor,
//     chain) and handshake_ack answers with history (continues or
//     diverged) and siteHlc, the newest transaction of the client's site
//     the relay holds. A relay restored from an older copy, truncated or
//     replaced is detected and repaired by its clients instead of losing
//     their later writes. Peers of version 1 and 2 do not talk: each
//     answers the other's handshake with PROTOCOL_VERSION_MISMATCH (fatal),
//     as the strict equality above says; a version 1 client reports it and
//     stops until it is updated, keeping its data and unsent writes.
//     Upgrade the relay and the app together. Version 2 includes the
//     additions of version 1 listed above (CLOCK_DRIFT, RATE_LIMITED,
//     byte-bounded rows chunks) and the schema migration type
//     set_resurrection_policy ({"policy":"delete-wins"|"allow-resurrection"}
//     as its ddl): a table's resurrection policy is the database's,
//     replicated with the migrations (issue 10 § 4). Version 1 peers never
//     see one, since they cannot complete a handshake with version 2.
//   - 3: 2026-12-02: tombstone horizon marks ("Tombstone horizon" in the
//     package documentation). The relay prunes tombstones at a point of
//     its log and says so there: changes and push_changes carry
//     horizons ([{cursor, wall, chain}]), and the snapshot header carries
//     horizon, the relay's newest mark's wall. Each replica prunes the
//     same tombstones at the same point of the log
//     (engine.PruneTombstones), so a late change for a deleted row is
//     decided alike everywhere; before, replicas pruned by their own
//     clocks and could disagree for good (found by the simulator). Peers
//     of version 2 and 3 do not talk: each answers the other's handshake
//     with PROTOCOL_VERSION_MISMATCH (fatal), as the strict equality
//     above says. Upgrade the relay and the app together.
//   - 4: 2026-12-02: a horizon mark carries siteHlc, per receiving site:
//     the highest hlc of that site's ChangeSets the log held when the
//     relay made the mark. Pruning drops the cells of a delete-wins row
//     with its tombstone, so a replica pruning at a mark must keep exactly
//     its own facts the relay did not hold then (they reach the relay after
//     the mark, and the relay applies them to the pruned row). Before, a
//     replica kept its own facts above its sent watermark, which is not
//     the mark's place in the log: a push acknowledged after the mark was
//     dropped on the device and kept by the relay, an unacknowledged push
//     the relay held before the mark was kept on the device and pruned by
//     the relay (found by the simulator). Snapshot rows and table_end
//     chunks carry offset, the table's row entries sent before them, so a
//     lost or repeated rows chunk is refused before a replacing snapshot
//     drops the rows it carried. Peers of version 3 and 4 do not
//     talk (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and the
//     app together.
//   - 5: 2026-12-03: get_changes may carry ownAbove and ownUpTo: the relay
//     then sends the requester its own ChangeSets with an hlc in that
//     range too ("Own ChangeSets after a mark" in the package
//     documentation). A client that applied a mark while the relay did
//     not yet hold writes it had pushed gets them back, in their place
//     after the mark, and merges them after its pruning as the relay did:
//     a write of its that a later fact of another site had removed from
//     its row, and the mark pruned with that fact, revives the row on the
//     relay and every replica pulling the log, and did not on the writer
//     (engine.TestPruneSupersededUnsentCell). A relay of version 4
//     refuses the members (unknown field), so peers of version 4 and 5 do
//     not talk (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and
//     the app together.
//   - 6: 2026-12-03: apply_changes may carry repair: true, a repair push
//     ("Repair pushes" in the package documentation): after the relay lost
//     history (restored from an older copy, wiped, or a log new to the
//     client), a client pushes the facts of other sites it holds, and the
//     relay appends those that change its merged replica under the
//     sender's name, so that a fact only a non-author still holds (a
//     tombstone its author pruned, the writes of a device that is gone)
//     reaches every replica again. A pull leaves out what the requester
//     sent, not what its site authored. A relay of version 5 refuses the
//     member (unknown field), so peers of version 5 and 6 do not talk
//     (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and the app
//     together.
//   - 7: 2026-12-03: sealed databases ("Envelopes" and "Sealed databases"
//     in the package documentation; docs/design.md § Sealed databases).
//     A ChangeSet may carry envelope (an AES-GCM envelope of its wire
//     form, under a key the relay never sees) instead of changes and
//     schemaMigrations; handshake and handshake_ack carry sealed, the
//     mode the client expects and the database's; new error codes
//     SEALED_MISMATCH (fatal, close 4005), ENVELOPE_REQUIRED and
//     ENVELOPE_REFUSED (transient). Sealed checkpoints ("Sealed
//     checkpoints"): put_checkpoint, checkpoint_result, checkpoint_part,
//     get_snapshot's checkpointId and fromPart, handshake_ack's
//     checkpointCursor and checkpointAt, CHECKPOINT_REFUSED. Repair pushes
//     (version 6) are plain databases' only. A relay of version 6 refuses the
//     members (unknown field), so peers of version 6 and 7 do not talk
//     (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and the app
//     together.
//   - 8: 2026-12-03: handshake carries horizon, the tombstone horizon the
//     client applied in the log it presents ("Verifying the relay's log"
//     in the package documentation). A relay restored from a copy taken
//     before a horizon mark it had made at its head holds the same chain
//     value at that cursor, so a client that applied the mark there was
//     told its history continues, while the restored merged replica
//     still held the tombstones the client had pruned: replicas decided
//     later facts of those rows differently for good (found by the
//     simulator, seeds 5, 12 and 82 with restores). The relay now answers
//     history "diverged" when its log holds no mark at or below the
//     presented cursor whose wall reaches the presented horizon, and the
//     client bootstraps again (merging) and repair-pushes, as for any
//     lost history. The relay keeps, besides the marks of its retained
//     log and the newest, the newest mark below its compaction point
//     (when none lies at it), so that it can judge a position there. A relay of
//     version 7 refuses the member (unknown field), so peers of version
//     7 and 8 do not talk (PROTOCOL_VERSION_MISMATCH, fatal: the client
//     stops and keeps its data until it is updated); upgrade the relay
//     and the app together.
//   - 9: 2026-12-03: apply_result carries first, cursor and chain, the
//     position of the entries the request appended to the log, and the
//     horizon marks at first-1 … cursor ("Acknowledged position" in the
//     package documentation). The relay does not echo a push to its
//     sender, so a device that only wrote (the sole active device, or a
//     writer nobody interleaved with) kept its cursor where its last pull
//     had left it: after retention compaction passed it, the relay
//     answered SNAPSHOT_REQUIRED and the device downloaded the whole
//     database it had written itself; a sealed device never uploaded a
//     checkpoint (its cursor never passed the newest one); its handshake
//     presented a stale position. A client whose cursor stands at
//     first-1 (or within the range) now moves it to cursor, applying the
//     marks as from a push_changes; otherwise it pulls. A client of
//     version 8 refuses the members (unknown field), so peers of version
//     8 and 9 do not talk (PROTOCOL_VERSION_MISMATCH, fatal: the client
//     stops and keeps its data until it is updated); upgrade the relay
//     and the app together.
//   - 10: 2026-12-06: handshake_ack's history "unverified": the relay's
//     log holds the presented cursor, within its retained log, but the
//     handshake carried no chain value there (a cursor taken from a
//     snapshot's header and stored before the first pull brought the
//     chain value). Before, the relay said nothing and the client pulled
//     from that cursor: a relay restored from an older copy, whose log had
//     grown past the cursor again with other entries, was taken as the
//     log the client had bootstrapped from, and the entries it appended
//     below the cursor never reached the client (the simulator's seed
//     4297: another device's deletion, for good). A client now treats
//     the cursor as diverged (it bootstraps again, merging, and
//     repair-pushes); an interrupted snapshot's checkpoint cursor,
//     presented without a chain value, is still resumed (resume_snapshot
//     checks the snapshot's position). And snapshot_complete states the
//     log's chain value at the cursor the client pulls from (cursor,
//     chain), so that a bootstrap whose catch-up pull never answered (a
//     cut, a page refused for clock drift) leaves a cursor the relay can
//     check, not one it must judge "unverified". A client of version 9
//     refuses the value and the members, so peers of version 9 and 10 do not talk
//     (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and the app
//     together.
//   - 11: 2026-12-06: the drop migrations drop_table, drop_column and
//     drop_index ("Schema migrations" in the package documentation). A
//     peer of version 10 refuses a ChangeSet carrying one (unknown
//     migration type): a relay would answer every push of it MALFORMED
//     and a client could not read the relay's log past it, so peers of
//     version 10 and 11 do not talk (PROTOCOL_VERSION_MISMATCH, fatal:
//     the client stops and keeps its data until it is updated); upgrade
//     the relay and the app together.
//   - 12: 2026-12-06: the alter_column migration (a column's notNull and
//     default; "Schema migrations" in the package documentation). A peer
//     of version 11 refuses a ChangeSet carrying one (unknown migration
//     type), with the same consequences as for 11, so peers of version
//     11 and 12 do not talk (PROTOCOL_VERSION_MISMATCH, fatal); upgrade
//     the relay and the app together.
//   - 13: 2026-12-07: the rename_table migration ("Schema migrations" in
//     the package documentation). A peer of version 12 refuses a
//     ChangeSet carrying one (unknown migration type), with the same
//     consequences as for 11, so peers of version 12 and 13 do not talk
//     (PROTOCOL_VERSION_MISMATCH, fatal); upgrade the relay and the app
//     together.
//   - 14: 2026-12-07: binary frames ("Binary frames" in the package
//     documentation). changes, apply_changes and push_changes carrying
//     ChangeSets travel as binary WebSocket messages: a JSON head (the
//     message, its ChangeSets member holding their count) followed by
//     the ChangeSets in a binary form that names tables and columns once
//     per ChangeSet, gives facts the ChangeSet's HLC base and writes a
//     row's primary key once (a 1-row cities push: 220 bytes instead of
//     1,381). A relay keeps storing ChangeSets as JSON and transcodes them
//     when it sends them, so its data directory needs no migration. A
//     sealed ChangeSet's envelope seals the binary form (package seal
//     still opens envelopes of the JSON form, sealed before). A
//     peer of version 13 refuses binary messages (MESSAGE_ERROR), so
//     peers of version 13 and 14 do not talk (PROTOCOL_VERSION_MISMATCH,
//     fatal: the client stops and keeps its data until it is updated);
//     upgrade the relay and the app together.
const ProtocolVersion = 14

// DefaultMaxMessageSize is the largest frame, in bytes, a relay or client
// accepts unless configured otherwise: 16 MiB. A sender splits its work to
// stay below it (ChangeSets are never split, so a single transaction larger
// than the limit cannot be synced and is reported as MESSAGE_TOO_LARGE).
const DefaultMaxMessageSize = 16 << 20

// MaxCursor is the largest cursor (and the largest count) a frame may carry:
// 2^53, the largest integer a JavaScript number holds exactly.
const MaxCursor = 1 << 53

// MaxJSONDepth is the deepest nesting of arrays and objects inside one
// JSON-kind value (1 for [1], 2 for [[1]]). Encode refuses a deeper value
// and Decode rejects one as malformed. It is the engine's limit
// (model.MaxJSONDepth), so a value a replica accepted locally can always
// be pushed.
const MaxJSONDepth = model.MaxJSONDepth

// MaxDepth is the deepest nesting of JSON arrays and objects a frame may
// contain anywhere, counting the frame's own object: room for the deepest
// message structure plus a wrapped JSON value of MaxJSONDepth. Deeper input
// is malformed; the bound keeps a hostile frame from exhausting the
// decoder's stack.
const MaxDepth = 2 * MaxJSONDepth

// MaxDatabaseIDLength is the longest database id ValidDatabaseID accepts.
const MaxDatabaseIDLength = 128

// ValidDatabaseID reports whether s is a well-formed database id: 1 to 128
// characters, each an ASCII letter or digit or one of "_", ".", ":", "-"
// (the pattern ^[A-Za-z0-9_.:-]{1,128}$). The relay answers a handshake
// whose databaseId fails this check with MISSING_DATABASE_ID.
//
//go:noinline
func ValidDatabaseID(s string) bool {
	if len(s) == 0 || len(s) > MaxDatabaseIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// ErrorCode is the code of an error frame. The codes below are the ones this
// version sends; a receiver must accept any other non-empty code as well (a
// newer peer may send one), treating it as transient unless its frame says
// fatal.
type ErrorCode string

// Error codes. Fatal codes end the session: the relay sends the error frame
// and then closes the WebSocket with the code's close status, and the client
// stops reconnecting (retrying would fail the same way). Transient codes
// fail one request; the connection stays open.
const (
	// CodeProtocolVersionMismatch (fatal, close 4003): the handshake's
	// protocolVersion is absent or differs from the relay's. The message
	// names both versions.
	CodeProtocolVersionMismatch ErrorCode = "PROTOCOL_VERSION_MISMATCH"
	// CodeAuthFailed (fatal, close 4001): the token does not grant access
	// to the database.
	CodeAuthFailed ErrorCode = "AUTH_FAILED"
	// CodeMissingDatabaseID (fatal, close 4002): the handshake's databaseId
	// is absent or fails ValidDatabaseID.
	CodeMissingDatabaseID ErrorCode = "MISSING_DATABASE_ID"
	// CodeAlreadyAuthenticated (fatal, close 4004): a second handshake on a
	// connection that already completed one.
	CodeAlreadyAuthenticated ErrorCode = "ALREADY_AUTHENTICATED"

	// CodeNotAuthenticated (transient): a request other than handshake
	// before the handshake completed.
	CodeNotAuthenticated ErrorCode = "NOT_AUTHENTICATED"
	// CodeApplyChangesError (transient): apply_changes failed as a whole
	// (nothing of it was stored) for a reason that may pass when the same
	// ChangeSets are sent again later: a storage failure on the relay.
	// No apply_result follows for it. Relays before 2026-11-30 also sent
	// it for what is now CodeApplyChangesRefused, and before 2026-12-01
	// for what is now CodeClockDrift (the message then said "clock
	// drift").
	CodeApplyChangesError ErrorCode = "APPLY_CHANGES_ERROR"
	// CodeClockDrift (transient): apply_changes was refused as a whole
	// (nothing of it was stored) because a ChangeSet's HLC is more than
	// model.MaxDrift (60,000) ms ahead of the relay's clock: the
	// sending device's clock is ahead. The message says by how much
	// ("clock drift: remote time … ms is 356341 ms ahead of local time …
	// ms (limit 60000 ms)"). It echoes requestId; no apply_result
	// follows. The same ChangeSets pass once the clocks agree (the
	// relay's clock reaches them), so a client retries them with
	// backoff, and must not show itself as synced meanwhile. *Error
	// values of this code match model.ErrClockDrift (errors.Is). A
	// receiver that does not know the code (older than 2026-12-01)
	// treats it as any unknown transient code with a requestId: a failed
	// push, retried.
	CodeClockDrift ErrorCode = "CLOCK_DRIFT"
	// CodeApplyChangesRefused (transient: the connection stays open):
	// apply_changes was refused as a whole for its content (nothing of it
	// was stored), and the same ChangeSets sent again would be refused
	// again: a ChangeSet that is malformed (also an apply_changes frame
	// whose changes do not decode, answered with its requestId), that
	// names another siteId than the connection's handshake, that resends a
	// transactionId with facts other than the ones the relay holds for it,
	// a row or value too large to store, more changes than the relay takes
	// in one apply_changes. The message says which ChangeSet and why. No
	// apply_result follows for it. A client must not resend the batch
	// unchanged: it may split it to isolate the refused ChangeSet, and
	// reports that one. A receiver that does not know this code (it is
	// newer than protocol version 1's first release) treats it as any
	// unknown transient code with a requestId: a failed push, retried.
	CodeApplyChangesRefused ErrorCode = "APPLY_CHANGES_REFUSED"
	// CodeGetChangesError (transient): get_changes failed on the relay.
	CodeGetChangesError ErrorCode = "GET_CHANGES_ERROR"
	// CodeSnapshotError (transient): get_snapshot or resume_snapshot
	// failed; a stream in progress is abandoned (no snapshot_complete
	// follows) and the client retries later from its checkpoint.
	CodeSnapshotError ErrorCode = "SNAPSHOT_ERROR"
	// CodeUnknownMessage (transient): a well-formed frame of an unknown
	// type.
	CodeUnknownMessage ErrorCode = "UNKNOWN_MESSAGE"
	// CodeMessageError (transient): a frame that is not valid JSON or not
	// a valid message of its type.
	CodeMessageError ErrorCode = "MESSAGE_ERROR"
	// CodeMessageTooLarge (transient): a frame above the receiver's size
	// limit (DefaultMaxMessageSize unless configured). A WebSocket
	// implementation may instead close the connection with status 1009.
	CodeMessageTooLarge ErrorCode = "MESSAGE_TOO_LARGE"
	// CodeSnapshotRequired (transient): get_changes asked for changes
	// since a cursor older than the relay's retained log (or from a
	// different log). Delta sync cannot continue; the client bootstraps
	// from a snapshot (get_snapshot) and pulls from its cursor.
	CodeSnapshotRequired ErrorCode = "SNAPSHOT_REQUIRED"
	// CodeRateLimited (transient, no requestId): the connection sent
	// frames or bytes above the relay's per-connection rate for longer
	// than its grace (the relay first only read it more slowly). The relay
	// closes the connection with status 1008 (policy violation) after it.
	// The client reconnects after a backoff that the new session's
	// handshake does not reset, so a client that keeps exceeding the rate
	// waits longer each time. Added 2026-12-01.
	CodeRateLimited ErrorCode = "RATE_LIMITED"

	// CodeSealedMismatch (fatal, close 4005; version 7): the handshake's
	// sealed flag differs from the database's mode (a database is sealed
	// or plain from its creation on, for its life). The message says
	// which the database is. Nothing was stored; the client stops until
	// it is configured for the database's mode.
	CodeSealedMismatch ErrorCode = "SEALED_MISMATCH"
	// CodeEnvelopeRequired (transient; version 7): apply_changes to a
	// sealed database carried a plaintext ChangeSet (changes instead of
	// an envelope). Refused as a whole, nothing stored, requestId echoed;
	// the same batch would be refused again.
	CodeEnvelopeRequired ErrorCode = "ENVELOPE_REQUIRED"
	// CodeEnvelopeRefused (transient; version 7): apply_changes to a
	// plain database carried a sealed ChangeSet (an envelope). Refused as
	// a whole, nothing stored, requestId echoed; the same batch would be
	// refused again.
	CodeEnvelopeRefused ErrorCode = "ENVELOPE_REFUSED"
	// CodeCheckpointRefused (transient; version 7): a put_checkpoint
	// was refused (a plain database, a cursor not above the newest
	// checkpoint's or above the log's head, a part out of order, a
	// checkpoint above the relay's size limit, a clock too far ahead).
	// The upload is abandoned; nothing of it is kept.
	CodeCheckpointRefused ErrorCode = "CHECKPOINT_REFUSED"
)

// WebSocket close statuses the relay uses after a fatal error frame. They
// lie in the 4000–4999 range RFC 6455 reserves for applications.
const (
	CloseAuthFailed              = 4001
	CloseMissingDatabaseID       = 4002
	CloseProtocolVersionMismatch = 4003
	CloseAlreadyAuthenticated    = 4004
	CloseSealedMismatch          = 4005
)

// Fatal reports whether c is one of the codes that end a session.
func (c ErrorCode) Fatal() bool { return c.CloseStatus() != 0 }

// CloseStatus returns the WebSocket close status the relay closes the
// connection with after sending an error of code c, or 0 for transient
// codes (the connection stays open).
func (c ErrorCode) CloseStatus() int {
	switch c {
	case CodeAuthFailed:
		return CloseAuthFailed
	case CodeMissingDatabaseID:
		return CloseMissingDatabaseID
	case CodeProtocolVersionMismatch:
		return CloseProtocolVersionMismatch
	case CodeAlreadyAuthenticated:
		return CloseAlreadyAuthenticated
	case CodeSealedMismatch:
		return CloseSealedMismatch
	}
	return 0
}

// IsFatal reports whether an error code is in the known-fatal set
// (PROTOCOL_VERSION_MISMATCH, AUTH_FAILED, MISSING_DATABASE_ID,
// ALREADY_AUTHENTICATED, SEALED_MISMATCH). It is the fallback for an error frame that lacks
// the fatal flag (servers of the origin protocol predating the flag send
// none): Decode applies it to such frames. Every other code is transient.
func IsFatal(code string) bool { return ErrorCode(code).Fatal() }

// NewError returns an error message of code c with its fatal flag set from
// the known-fatal set.
func NewError(c ErrorCode, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), Fatal: c.Fatal()}
}
