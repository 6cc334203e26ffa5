// Package wire is Replica's sync protocol: the frames a client and the relay
// exchange over a WebSocket, their JSON encoding, and the codec both ends
// import (Encode, Decode). It builds natively and for GOOS=js GOARCH=wasm
// and uses only the standard library. This comment is the protocol's
// reference: a compatible client can be written from it alone.
//
// The protocol follows the one Replica's design grew out of (message names,
// requestId acknowledgements, fatal and transient errors, snapshot
// bootstrap and resume) and departs from it where docs/design.md § Sync says so,
// chiefly in delivering changes by the relay's arrival cursor instead of by
// HLC (see "Delivery by cursor" below).
//
// # Frames
//
// Every WebSocket message is a text frame holding exactly one JSON object
// (RFC 8259, UTF-8) with a string member "type" naming the message, or
// (version 14) a binary frame: a changes, apply_changes or push_changes
// message carrying at least one ChangeSet, its ChangeSets in their binary
// form (see "Binary frames"). The encoder writes "type" first and no
// insignificant whitespace; a decoder accepts members in any order and
// whitespace wherever JSON allows it. A text frame travels as a text
// WebSocket message, a binary frame as a binary message; a receiver
// refuses a binary message that is not a binary frame, and a text message
// that is one (MESSAGE_ERROR). The WebSocket may compress frames
// (permessage-deflate, RFC 7692, which the relay accepts without context
// takeover unless configured otherwise: relay "Compression"); what it
// carries is the same frame.
//
// Decoding is strict. These are all errors (ErrMalformed, answered with
// MESSAGE_ERROR), never silently zero values:
//
//   - invalid JSON or invalid UTF-8; anything after the object;
//   - a member this version does not define ("unknown field"), including
//     members that differ from a defined one only in case;
//   - a duplicate member;
//   - a missing required member;
//   - a member of the wrong JSON type, including null where the member's
//     type is not a value (only values may be null, see "Values");
//   - an encoding that does not parse: an HLC or site id of the wrong length
//     or alphabet, a count or cursor that is not a non-negative integer
//     literal, an unpaired UTF-16 surrogate escape ("\ud800").
//
// Optional members are omitted when absent, never null. A well-formed frame
// whose "type" is unknown is ErrUnknownType, answered with UNKNOWN_MESSAGE.
// After the handshake, an apply_changes frame that is valid JSON but not a
// valid message (an HLC of the wrong length in its changes, say) is
// answered with APPLY_CHANGES_REFUSED instead of MESSAGE_ERROR, echoing its
// requestId when that member is a string, so that the client's push in
// flight ends.
// The one exception to strictness is the handshake: see "Protocol version".
//
// # Session
//
// A session is one WebSocket connection. Frames flow as follows (">" client
// to relay, "<" relay to client); testdata/transcripts holds complete
// examples.
//
//  1. Handshake. The client's first frame is handshake. The relay checks,
//     in this order and before touching any storage: protocolVersion equals
//     its ProtocolVersion (else PROTOCOL_VERSION_MISMATCH, close 4003);
//     databaseId passes ValidDatabaseID (else MISSING_DATABASE_ID, close
//     4002); siteId is not all zeros (else MESSAGE_ERROR marked fatal,
//     close 1002); the token grants the database (else AUTH_FAILED, close
//     4001); and, for an existing database, sealed equals its mode (else
//     SEALED_MISMATCH, close 4005; a handshake that creates the database
//     sets its mode). It then answers handshake_ack. A frame other than
//     handshake before that is answered with NOT_AUTHENTICATED; a second
//     handshake with ALREADY_AUTHENTICATED (close 4004). The client checks the ack's
//     protocolVersion the same way and stops, without reconnecting, when it
//     differs or is absent. A returning client presents its position in
//     the relay's log (serverSiteId, cursor, chain) and repairs what the
//     ack's history and siteHlc say is missing: see "Verifying the relay's
//     log".
//
//  2. Bootstrap, when needed. A client that has never synced with this
//     relay and database (no cursor kept for the ack's serverSiteId and
//     databaseId) and has no local changes of its own sends get_snapshot;
//     one holding a snapshot checkpoint (an interrupted apply) sends
//     resume_snapshot. The relay streams snapshot_chunk frames, then
//     snapshot_complete. The client then keeps the header's cursor (for a
//     resumed stream: the checkpoint's) as its cursor.
//
//  3. Pull until caught up. > get_changes {since: cursor}; < changes
//     {cursor, more, changeSets}. The client applies the ChangeSets, then
//     stores changes.cursor as its cursor, and asks again while more is
//     true. A cursor the relay can no longer serve from its log is answered
//     with SNAPSHOT_REQUIRED: the client bootstraps (step 2) and pulls from
//     the snapshot's cursor.
//
//  4. Push. Local transactions go out as > apply_changes {requestId,
//     changes}: whole ChangeSets, any number per frame within the size
//     limit. The relay stores them all or none and answers < apply_result
//     echoing requestId. Only then does the client move its sent watermark
//     (the highest HLC of its own facts known stored) to the highest
//     ChangeSet hlc of that request. Resending after a lost ack is safe:
//     applying is idempotent. The apply_result says where the log holds
//     what the request appended (version 9: first, cursor, chain), so a
//     client whose cursor stood just before them moves it past its own
//     writes (see "Acknowledged position").
//
//  5. Live updates. When another connection of the database pushes, the
//     relay forwards the newly stored ChangeSets to every other connection
//     of the database as < push_changes {cursor, changeSets}. The relay does
//     not echo a push back to the connection that sent it (but for a repair
//     push): its apply_result says where they were stored instead.
//
//  6. Keepalive. Either side may send ping at any time; the other answers
//     pong. A client should ping after some idle time (say 30 s) and treat a
//     connection silent for two intervals as dead.
//
// The relay handles one connection's frames in order and answers each
// request with exactly one frame, its response or an error frame, in
// request order: handshake → handshake_ack, get_changes → changes,
// apply_changes → apply_result, put_checkpoint → checkpoint_result, ping
// → pong, and get_snapshot or resume_snapshot → a snapshot stream ending in
// snapshot_complete (an error frame ends it early; for a sealed database
// with a checkpoint, checkpoint_part frames: see "Sealed checkpoints"). push_changes may arrive between any two frames,
// except inside a snapshot stream. A client applying a snapshot drops any
// changes or push_changes that reach it meanwhile, leaving its cursor
// where it was, so the catch-up pull after the snapshot fetches them.
//
// # Message handshake
//
// Client → relay, first frame of a session (type Handshake).
//
//	{"type":"handshake","protocolVersion":4,"databaseId":"acme:trips","siteId":"AY86XH4RQpugDcRVbiGQ_g","token":"tok-3f9a",
//	 "serverSiteId":"-_-_ABCDEFGHIJKLMNOPQQ","cursor":41,"chain":"I-zgrM9zk1Rcq6zDbIfU6Q"}
//
// Members:
//
//   - protocolVersion (integer, required): the client's ProtocolVersion.
//   - databaseId (string, required): the database (tenant) to sync,
//     matching ^[A-Za-z0-9_.:-]{1,128}$. Decode reads an absent one as ""
//     so that the relay can answer it, like an invalid one, with
//     MISSING_DATABASE_ID.
//   - siteId (site id, required): the client replica's site id (16 random
//     bytes, never all zeros). The connection may push ChangeSets of this
//     site only.
//   - token (string, optional): the credential for databaseId; how it is
//     checked is the relay's configuration.
//   - serverSiteId (site id, optional; with cursor): the relay log the
//     client synced with last (the serverSiteId of the handshake_ack it
//     got then).
//   - cursor (cursor, optional; with serverSiteId): the client's cursor in
//     that log (or, with no cursor kept, an interrupted snapshot's
//     checkpoint cursor).
//   - chain (chain value, optional; needs cursor): the log's chain value at
//     cursor, as the relay sent it with the changes or push_changes that
//     brought the client there (or, version 10, the snapshot_complete of
//     the snapshot it bootstrapped from). Absent when the client does not
//     know it (a snapshot whose snapshot_complete did not arrive, before
//     the first pull; state of an older version): a cursor above 0 within
//     the retained log is then judged "unverified" (version 10).
//   - horizon (wall time ms, version 8, optional; needs cursor; omitted
//     when 0): the tombstone horizon the client applied in that log (the
//     wall of the newest horizon mark it pruned at, or the horizon of the
//     snapshot header it bootstrapped under). See "Verifying the relay's
//     log".
//   - sealed (boolean, version 7, optional, written only when true): the
//     client expects a sealed database (see "Sealed databases"). The
//     handshake that creates a database decides its mode for good; the
//     relay answers a handshake of the other mode with SEALED_MISMATCH
//     (fatal, close 4005), after checking the token.
//
// The position is what the relay judges in handshake_ack.history.
//
// # Message handshake_ack
//
// Relay → client, accepting a handshake (type HandshakeAck).
//
//	{"type":"handshake_ack","protocolVersion":4,"databaseId":"acme:trips","serverSiteId":"-_-_ABCDEFGHIJKLMNOPQQ","connectionId":"c-17",
//	 "siteHlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","history":"continues"}
//
// Members:
//
//   - protocolVersion (integer, required): the relay's ProtocolVersion.
//   - databaseId (string, required): the handshake's, echoed.
//   - serverSiteId (site id, required): the relay's site id, stable across
//     restarts. A client keys its cursor and sent watermark by it and
//     databaseId: a different serverSiteId means a different log, so the
//     old cursor is meaningless there.
//   - connectionId (string, required): names the connection in the
//     relay's logs.
//   - siteHlc (HLC, written by relays of version 2): the highest hlc among
//     the ChangeSets of the handshake's siteId the relay's log ever stored
//     (kept when retention prunes them); the zero HLC
//     ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") when it stored none. A
//     client whose relay acknowledged more than that (a restored relay)
//     lowers its sent watermark to it and pushes the rest again.
//   - history (string, optional): the relay's verdict on the handshake's
//     position: "continues" (its log holds cursor with that chain value:
//     pull from cursor), "diverged" (its head is below cursor, or its chain
//     value at cursor differs, or, version 8, it holds no horizon mark at
//     or below cursor whose wall reaches the handshake's horizon: the
//     cursor names other entries or none, or the client pruned at a mark
//     the log lost, so the client bootstraps again), "unverified" (version
//     10: its retained log holds cursor, but the handshake carried no chain
//     value to check it against: a client treats its own cursor as
//     diverged, and resumes an interrupted snapshot's checkpoint cursor);
//     absent when the handshake presented no position, one of another log
//     (another serverSiteId), or a cursor below the retained log
//     (get_changes answers SNAPSHOT_REQUIRED).
//   - sealed (boolean, version 7, optional, written only when true): the
//     database is sealed. It equals the handshake's; a client whose mode
//     differs stops (fatal).
//   - checkpointCursor, checkpointAt (version 7, optional, omitted when
//     0): the cursor of the sealed database's newest sealed checkpoint,
//     and when the relay stored it (ms since the Unix epoch, the relay's
//     clock); see "Sealed checkpoints".
//
// # Message get_changes
//
// Client → relay (type GetChanges).
//
//	{"type":"get_changes","since":41}
//
// Members:
//
//   - since (cursor, optional): the cursor of the last ChangeSet the client
//     applied; absent (or 0) means from the beginning of the log.
//   - ownAbove, ownUpTo (HLC, version 5, optional, both or neither;
//     ownUpTo above ownAbove): the client's own ChangeSets whose
//     transaction lies above ownAbove's and at most ownUpTo's are sent
//     too, in their place (see "Own ChangeSets after a mark").
//
// Answered by changes, or by an error: SNAPSHOT_REQUIRED when since is
// older than the oldest ChangeSet the relay still holds (its log was
// compacted) or larger than its current cursor (since comes from another
// log); GET_CHANGES_ERROR when reading failed.
//
// # Message changes
//
// Relay → client, answering get_changes (type Changes).
//
//	{"type":"changes","cursor":43,"chain":"7qRX3-C5OH0YePni69iW0w","more":false,"changeSets":[ChangeSet…]}
//
// Members:
//
//   - cursor (cursor, required): the arrival sequence of the last
//     ChangeSet this page covers (see changeSets); when more is false, the
//     relay's current cursor (the sequence of the last ChangeSet it
//     stored, 0 for an empty log). The client stores it as its cursor once
//     it has applied the ChangeSets.
//   - more (boolean, required): true when ChangeSets after cursor exist
//     that did not fit this frame; the client asks again with since =
//     cursor.
//   - changeSets (array of ChangeSet, required): the ChangeSets that
//     arrived after since, in arrival order, up to cursor; whole
//     ChangeSets only, never split. The relay leaves out ChangeSets the
//     requesting client's own site (the handshake's siteId) pushed as its
//     own (a repair push's entries are not left out, version 6: see
//     "Repair pushes"). The client has them, and its
//     engine would skip its own as its echo; but those get_changes asked
//     back (ownAbove, ownUpTo: version 5). Their
//     sequences still count, so the carried sequences are consecutive
//     only when none was left out. A page with more true carries at least
//     one ChangeSet, unless it ends at a tombstone horizon mark (version
//     3: a page ends at the first mark after since, see "Tombstone
//     horizon"; its ChangeSets may all have been the client's own).
//   - chain (chain value, written by relays of version 2): the log's chain
//     value at cursor. The client keeps it with its cursor and presents
//     both at its next handshake.
//   - horizons (array of horizon marks, version 3, optional, omitted when
//     empty): every tombstone horizon mark of the log with since ≤
//     mark cursor ≤ cursor, ascending by cursor and wall (see "Tombstone
//     horizon"). A mark at since repeats across pages and pulls; the
//     client skips one it applied already.
//
// So every answer makes progress or says it is caught up: cursor is at
// least since plus the number of ChangeSets (never below since), above
// since when more is true, and, when more is false, at least the cursor of
// every push_changes the relay sent before it read the request. A client
// treats an answer breaking these rules as a protocol error: it applies
// none of it, keeps its cursor, reports it and retries the pull after a
// backoff delay (asking again at once would loop).
//
// # Message apply_changes
//
// Client → relay, pushing the client's own transactions (type
// ApplyChanges).
//
//	{"type":"apply_changes","requestId":"apply-3","changes":[ChangeSet…]}
//
// Members:
//
//   - requestId (string, optional): echoed verbatim in the apply_result
//     (and in an error answering this frame). A client numbers its pushes
//     ("apply-1", "apply-2", …) and promotes its sent watermark only for
//     the ack whose id matches, and only forward. Since the relay answers
//     in request order, an apply_result arriving while a push is in
//     flight answers that push: one with another id is a protocol error
//     (the client retries the push after a backoff delay); one arriving
//     while no push is in flight (stale, duplicate) is ignored.
//   - repair (boolean, version 6, optional: true or omitted): a repair
//     push (see "Repair pushes").
//   - changes (array of ChangeSet, required): the ChangeSets to store.
//     Without repair, every one of the site the handshake declared
//     (siteId): a client pushes its own transactions only. A batch with a
//     ChangeSet of another site is refused whole (APPLY_CHANGES_REFUSED,
//     naming both site ids): the relay leaves a client's own site out of
//     its pulls, so a ChangeSet pushed in another device's name would
//     reach every device but that one. With repair, every one of another
//     site than the sender's and the relay's (the same refusal
//     otherwise).
//
// The relay validates and stores every ChangeSet or none. A batch refused
// for its content, which would be refused again if resent unchanged, is
// answered with APPLY_CHANGES_REFUSED (see "Error codes"); one with an HLC
// more than 60 s (model.MaxDrift) ahead of the relay's clock, with
// CLOCK_DRIFT (it passes once the clocks agree); one that failed for
// another reason that may pass later (a storage failure), with
// APPLY_CHANGES_ERROR. All three echo requestId. Each newly
// stored ChangeSet gets the next arrival sequence; a ChangeSet the relay
// already holds (same siteId and transactionId, as after a client resent a
// push whose ack it lost) need not be stored again. A transaction's facts
// never change once pushed, so a resend carries the same facts or fewer
// (newer local writes superseded some): each identified by its HLC, opSeq
// included, with the same table, pk, column (or migration) and value. A
// resend with a fact the relay's copy lacks, or with other content under
// one of its HLCs, is refused whole with APPLY_CHANGES_REFUSED.
//
// # Message apply_result
//
// Relay → client, answering apply_changes (type ApplyResult). The counts
// are the relay's merge of the request (model.ApplyResult); each is a
// non-negative integer.
//
//	{"type":"apply_result","requestId":"apply-3","applied":2,"skipped":1,"conflicts":1,"transactions":1}
//
// Members:
//
//   - requestId (string, optional): the request's, echoed; absent when the
//     request had none.
//   - applied (required): changes that changed the relay's state,
//     migrations included.
//   - skipped (required): changes that did not (older or equal versions,
//     blocked by a tombstone, already present).
//   - conflicts (required): column changes that met a concurrent version of
//     the same cell with a different value, whichever won.
//   - transactions (required): ChangeSets processed.
//   - unknownTable (optional, absent when 0): changes the relay held
//     instead of applying (model.ApplyResult.Held; the name is older than
//     the term "held change" and stays).
//   - first, cursor (cursors, version 9, both or neither): the arrival
//     sequences of the first and the last ChangeSet the request appended
//     to the log, which holds them at first … cursor, consecutive (1 ≤
//     first ≤ cursor). Absent when it appended none: every ChangeSet was
//     held already (a resend), or a repair push (its entries reach the
//     sender as push_changes, see "Repair pushes").
//   - chain (chain value, version 9, required with cursor): the log's
//     chain value at cursor.
//   - horizons (array of horizon marks, version 3's shape, version 9,
//     optional, only with cursor): the tombstone horizon marks at cursors
//     first−1 … cursor, each with the sender's siteHlc, as a push_changes
//     of the same entries would carry them.
//
// An apply_result with a position:
//
//	{"type":"apply_result","requestId":"apply-6","applied":3,"skipped":0,"conflicts":0,"transactions":2,"first":42,"cursor":43,"chain":"<22>"}
//
// See "Acknowledged position" for what the client does with them.
//
// # Acknowledged position
//
// The relay does not echo a push back to its sender, so before version 9
// a device that only wrote (the sole active device, or a writer nobody
// interleaved with) kept its cursor where its last pull had left it: once
// retention compaction passed that cursor the relay answered
// SNAPSHOT_REQUIRED and the device downloaded the whole database it had
// written itself; a sealed device never uploaded a checkpoint (its cursor
// never passed the newest one); its handshake presented a stale position.
// Version 9's apply_result carries the position of the entries the request
// appended (first, cursor, chain, and the marks in first−1 … cursor). The
// client treats them as a push_changes of its own entries that it need
// not apply (it holds them): when its cursor c satisfies first−1 ≤ c <
// cursor, it applies the marks at first−1 (at its position, as a pull
// applies marks at since), stores cursor and chain as its position and
// applies the marks at cursor. The relay makes marks at its head, so none
// lies strictly between first−1 and cursor. When c < first−1 (entries of
// other devices lie between, their push_changes lost or not yet applied)
// it keeps its cursor and pulls, as for a push_changes with a gap. When a
// mark it applies makes it ask its own ChangeSets back (see "Own
// ChangeSets after a mark") and the request's ChangeSets lie in that
// range, it keeps its cursor too: the pull brings them back to be merged
// after the pruning, where the relay merged them. Sealed databases do the
// same (cursors, chain values and marks are not secret).
//
// # Message push_changes
//
// Relay → client, unsolicited (type PushChanges).
//
//	{"type":"push_changes","cursor":44,"chain":"xxD0AY1lfyiAW1jQpbFJgg","changeSets":[ChangeSet…]}
//
// Members:
//
//   - cursor (cursor, required): the arrival sequence of the last ChangeSet.
//   - changeSets (array of ChangeSet, required): ChangeSets other
//     connections just pushed (one or several: a relay merging several
//     connections' pushes in one commit may carry them in one frame),
//     with consecutive sequences ending at cursor.
//   - chain (chain value, written by relays of version 2): the log's chain
//     value at cursor, kept with the cursor when the client moves to it.
//   - horizons (array of horizon marks, version 3, optional, omitted when
//     empty): the tombstone horizon marks at cursors first−1 … cursor,
//     first being the sequence of the first ChangeSet carried (see
//     "Tombstone horizon"). A relay making a mark while a client is
//     connected sends it with that client's next push_changes or changes,
//     whichever comes first; a push_changes may carry marks and no
//     ChangeSet (its marks are then at cursor).
//
// The client applies them. It may store cursor as its cursor only when the
// push continues exactly where it stands (its cursor equals cursor minus
// the number of ChangeSets); otherwise (a frame was missed, or its own
// push came between) it keeps its cursor and the next get_changes
// re-delivers, which is harmless because applying is idempotent. The
// marks of a push it does not apply in order are ignored: the pull brings
// them again, in order.
//
// # Message get_snapshot
//
// Client → relay: stream a full snapshot of the database (type
// GetSnapshot).
//
//	{"type":"get_snapshot"}
//	{"type":"get_snapshot","checkpointId":"c4211-5f0e","fromPart":12}
//
// checkpointId and fromPart (version 7, sealed databases only, both or
// neither): resume an interrupted transfer of the sealed checkpoint
// checkpointId: if it is still the newest, the relay streams its parts 0
// and 1 and then its parts from fromPart on; otherwise the newest from
// part 0 (see "Sealed checkpoints").
//
// # Message resume_snapshot
//
// Client → relay: continue an interrupted snapshot (type ResumeSnapshot).
//
//	{"type":"resume_snapshot","checkpoint":{"snapshotId":"snap-0193a1b2","siteId":"-_-_ABCDEFGHIJKLMNOPQQ","hlc":"AAABmszqUqAAAPv/vwAQgxBRhyCSizDTj0EAAAAA","cursor":4211,"completedTables":["trips"],"rowsApplied":1200,"createdAt":1764374501234}}
//
// checkpoint (object, required) is model.SnapshotCheckpoint, every member
// required:
//
//   - snapshotId (string, non-empty): the interrupted stream's.
//   - siteId (site id), hlc (HLC): the original header's sender and clock.
//   - cursor (cursor): the original header's cursor.
//   - completedTables (array of strings): tables wholly applied, in stream
//     order; the relay skips them.
//   - rowsApplied (count): row entries applied so far, for progress.
//   - createdAt (integer, ms since the Unix epoch): when the apply began, on
//     the client's clock.
//
// The relay streams the tables not yet completed, reading them live, under
// the same snapshotId. Because the data is read at or after the original
// cursor, the client resumes pulling from checkpoint.cursor (never the new
// header's), which may re-fetch a little: applying is idempotent. A relay
// that cannot confirm its log still holds the checkpoint's position
// (restored from an older copy, which keeps its serverSiteId and hands out
// that cursor again for other entries; pruned past it) streams a fresh
// snapshot instead: another snapshotId, its current cursor, every table.
// The client takes it as a new transfer and pulls from its header's
// cursor. (The relay binds the chain value at a new snapshot's cursor
// into its snapshotId; clients treat the id as opaque.)
//
// # Message snapshot_chunk
//
// Relay → client, one piece of a snapshot stream (type SnapshotChunk).
//
//	{"type":"snapshot_chunk","chunk":{"type":"table_start","table":"trips"}}
//
// chunk (object, required) is a model.SnapshotChunk; see "Snapshot
// chunks".
//
// # Message snapshot_complete
//
// Relay → client, after the footer chunk: the stream is over (type
// SnapshotComplete).
//
//	{"type":"snapshot_complete","cursor":41,"chain":"I-zgrM9zk1Rcq6zDbIfU6Q"}
//
// Members (version 10, optional, both or neither):
//
//   - cursor (cursor): the cursor the client pulls from after this
//     snapshot: the header's, or, for a resumed transfer, the checkpoint's.
//   - chain (chain value): the log's chain value at cursor. The client
//     stores it with its cursor (if that is still cursor), so that its next
//     handshake presents a position the relay can check even when no pull
//     has answered since (a pull cut, or failing to apply: clock drift).
//     Without it the cursor waits for the catch-up pull's chain value, and
//     a handshake presenting it before that is judged "unverified".
//     A relay that cannot tell the value (the cursor is below its
//     retained log) leaves both out.
//
// # Messages ping and pong
//
// Either direction (types Ping, Pong). No other members.
//
//	{"type":"ping"}
//	{"type":"pong"}
//
// # Message error
//
// Relay → client (type Error).
//
//	{"type":"error","code":"AUTH_FAILED","message":"token rejected","fatal":true}
//
// Members:
//
//   - code (string, required, non-empty): see "Error codes". Accept codes
//     you do not know.
//   - message (string, required, may be empty): for humans.
//   - fatal (boolean, written always, optional on input): true when the
//     session is over. A frame without it (a relay predating the flag) is
//     read with fatal = IsFatal(code).
//   - requestId (string, optional): the requestId of the apply_changes this
//     error answers.
//
// # Encodings
//
// Cursor: a relay's arrival sequence number, a JSON integer literal in
// [0, 2^53] (MaxCursor): digits only, no sign, fraction or exponent. Counts
// (apply_result, rowCount, tableCount, rowsApplied, createdAt) are written
// the same way.
//
// HLC: the standard base64 (RFC 4648 § 4, "+/" alphabet; padded, though
// 30 bytes need no padding) of the 30-byte big-endian encoding of
// model.HLC (wall ms uint64, counter uint16, site 16 bytes, opSeq
// uint32): exactly 40 characters, e.g. "AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE".
// Byte order equals HLC order. FormatHLC and ParseHLC convert it.
//
// Site id: the base64url of the 16 bytes without padding (RFC 4648 § 5,
// "-_" alphabet), exactly 22 characters, e.g. "AY86XH4RQpugDcRVbiGQ_g"
// (model.SiteID.String). Padding or the standard alphabet is an error.
//
// Chain value: the base64url of 16 bytes without padding, 22 characters,
// like a site id (Chain.String, ParseChain); all zeros is not a chain
// value. See "Verifying the relay's log".
//
// Names (tables, columns, indexes) and ids (transactionId, snapshotId,
// connectionId) are non-empty strings. Strings are UTF-8; an encoder
// escapes only '"', '\' and the control characters below U+0020; a decoder
// accepts every JSON escape except an unpaired surrogate.
//
// # Values
//
// A value (model.Value: a cell, a primary-key component, a default) is
// written by kind:
//
//	null       null
//	boolean    true, false
//	integer    a JSON number when within ±2^53: 42, -9007199254740992
//	           else {"__bigint":"<decimal>"}: {"__bigint":"9007199254740993"}
//	real       a JSON number, finite, shortest round-trip form, written so
//	           it reads back as a real: 1.5, 1.0, -0.0, 1e+21, 5e-324
//	text       a JSON string: "Lisboa 🚋"
//	blob       {"__bin":"<standard base64, padded>"}: {"__bin":"AAH+/w=="}, {"__bin":""}
//	json       the JSON itself when it is an object or array: {"a":[1]}
//	           else {"__json":<JSON>}: {"__json":"s"}, {"__json":null}
//	timestamp  integer milliseconds since the Unix epoch: 1764374400123
//
// JSON-kind values are wrapped in {"__json": …} exactly when writing them
// bare would read back as another kind: scalars (a JSON string would read
// as text, a number as integer or real, null as null) and objects whose
// only key is "__bin", "__bigint" or "__json". Other objects and arrays are
// written bare. The content of {"__json": …} is taken literally (nested
// tags are not interpreted). NaN and ±Inf cannot be encoded.
//
// A decoder knows no schema (the relay has none) and reads:
//
//   - an integer literal (no fraction, no exponent) within ±2^53 as an
//     integer ("-0" is 0); any other number as a real, so
//     100000000000000000000 (JavaScript's 1e20) and 9007199254740993 are
//     reals; a number beyond the float64 range is an error;
//   - a string as text;
//   - an object whose only key is "__bin" as a blob (strict padded standard
//     base64), "__bigint" as an integer (a canonical decimal: optional "-",
//     no leading zeros, not "-0", within int64; small values are accepted
//     too), "__json" as a JSON value of its content; a tag with a value of
//     the wrong type is an error;
//   - any other object, and any array, as a JSON value, kept as written
//     minus insignificant whitespace (member order, duplicate keys and
//     escapes are its own business);
//   - true/false as a boolean, null as null.
//
// Timestamps therefore arrive as integers, and a peer may write a real
// without a fraction as 1. The receiving engine normalizes each value to
// its column's type before using it (an integer into a real column becomes
// a real, an integer or integral real into a timestamp column a timestamp,
// an integral real into an integer column an integer, a scalar into a json
// column its JSON), so a REAL 1.0 sent as 1 stays real end to end, and
// primary keys match whatever spelling carried them.
//
// # ChangeSet
//
// One transaction of one site (model.ChangeSet), never split or merged:
//
//	{"siteId":"AY86XH4RQpugDcRVbiGQ_g","transactionId":"1764374400000:0:AY86XH4RQpugDcRVbiGQ_g",
//	 "hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","changes":[Change…],"schemaMigrations":[SchemaMigration…]}
//
// Members:
//
//   - siteId (site id, required): the origin replica.
//   - transactionId (string, required, non-empty): "wall:counter:site" of
//     the transaction's base HLC (model.HLC.TransactionID).
//   - hlc (HLC, required): the highest fact HLC of the transaction.
//   - changes (array of Change, required unless envelope, may be empty).
//   - schemaMigrations (array of SchemaMigration, optional, omitted when
//     empty): applied before the changes.
//   - envelope (string, version 7): a sealed ChangeSet (see "Sealed
//     databases"): the padded standard base64 of an envelope (see
//     "Envelopes"), at least 37 bytes, sealing the ChangeSet's plaintext
//     wire form. With it, changes and schemaMigrations are absent (a frame
//     with both is malformed), and siteId, transactionId and hlc are the
//     sealed ChangeSet's own, bound into the envelope.
//
// A sealed ChangeSet:
//
//	{"siteId":"AY86XH4RQpugDcRVbiGQ_g","transactionId":"1764374405000:2:AY86XH4RQpugDcRVbiGQ_g",
//	 "hlc":"AAABmszo34gAAgGPOlx+EUKboA3EVW4hkP4AAAAC","envelope":"AQswVXqf…"}
//
// A decoder checks structure only; the engine checks meaning (every fact
// of the transaction's site and base, hlc the maximum, known tables and
// columns) when it applies the ChangeSet.
//
// A Change is a column change or a row deletion:
//
//	{"type":"column","table":"trips","pk":["t1"],"column":"budget","value":1350,
//	 "hlc":"…","priorValue":1200.0,"priorHlc":"…"}
//	{"type":"delete","table":"trips","pk":["old"],"hlc":"…","priorRow":{"id":"old","title":"x"}}
//
// Members:
//
//   - type (required): "column" or "delete".
//   - table (string, required).
//   - pk (array of values, required, non-empty): the row's primary key in
//     key-column order.
//   - column (string, required for "column", absent for "delete").
//   - value (value, required for "column", absent for "delete"; may be
//     null).
//   - hlc (HLC, required).
//   - priorValue (value) and priorHlc (HLC): optional, "column" only, both
//     or neither: the cell version this write replaced at its origin.
//   - priorRow (object of column → value): optional, "delete" only: the
//     row's last image; encoders write its keys in byte order.
//
// # Binary frames
//
// Version 14 sends the ChangeSets of changes, apply_changes and
// push_changes in a binary form: a ChangeSet of one row costs about a
// sixth of its JSON form (cities rows: 220 bytes for the apply_changes
// frame, 1,381 in JSON; 1.6 times the row's own compact JSON), because it
// names each table and column once per ChangeSet, gives each fact's HLC as
// the ChangeSet's with the next opSeq, and writes its primary key once per
// row. A message with no ChangeSet (a caught-up changes page, a
// push_changes of marks only) stays a text frame with "changeSets":[].
//
//	binary frame = 0xB1 (BinaryFrameTag) ‖ uvarint len(head) ‖ head ‖ item{N}
//	head         = the message's JSON object, as its text frame would be,
//	               but the ChangeSets member ("changeSets"; "changes" for
//	               apply_changes) holds N, the count of items (an integer
//	               literal, 1 ≤ N)
//	item         = uvarint len(changeSet) ‖ changeSet
//
// uvarint is the unsigned LEB128 varint of encoding/binary (7 bits a byte,
// low first, high bit set on all but the last byte; at most 10 bytes);
// varint is its zigzag form for signed integers (binary.AppendVarint). The
// head must be valid UTF-8 and is decoded strictly like a text frame; the
// items must fill the rest of the frame exactly. A binary frame of another
// type, or whose head holds the ChangeSets as an array, is malformed.
// Receivers of version 14 also read the JSON form of ChangeSets in a text
// frame (version 13's frames; tools and tests write them); senders of
// version 14 send binary frames.
//
// One ChangeSet (MarshalChangeSetBinary, UnmarshalChangeSetBinary):
//
//	changeSet  = flags (1 byte) ‖ hlc (30 bytes: model.HLC.Bytes)
//	             ‖ [siteId (16 bytes), when flags & 2]
//	             ‖ [uvarint len ‖ transactionId (UTF-8, non-empty), when flags & 4]
//	             ‖ sealed:   uvarint len ‖ envelope (at least 37 bytes; see "Envelopes")
//	             ‖ otherwise: names ‖ migrations ‖ facts
//	flags      = 1: sealed; 2: siteId differs from hlc's site (else it is hlc's
//	             site); 4: transactionId differs from hlc's "wall:counter:site"
//	             (model.HLC.TransactionID; else it is that). Other bits: malformed.
//	names      = uvarint n ‖ (uvarint len ‖ name (UTF-8, non-empty)){n}: every
//	             table, column and priorRow column the facts name, in order of
//	             first use; facts refer to them by index
//	migrations = uvarint n ‖ (uvarint len ‖ SchemaMigration's JSON (see
//	             "Schema migrations")){n}, applied before the facts
//	facts      = uvarint n ‖ fact{n}
//	fact       = fflags (1 byte)
//	             ‖ [uvarint table name index, unless fflags & 4]
//	             ‖ [uvarint k ‖ value{k} (the pk, k ≥ 1), unless fflags & 8]
//	             ‖ [HLC as fflags bits 4–5 say]
//	             ‖ column: uvarint column name index ‖ value
//	                       ‖ [value (priorValue) ‖ 30 bytes (priorHlc), when fflags & 64]
//	             ‖ delete: [uvarint m ‖ (uvarint column name index ‖ value){m}
//	                       (priorRow, columns ascending by byte order, no repeats),
//	                       when fflags & 64]
//	fflags     = bits 0–1: 1 column change, 2 delete (0 and 3: malformed);
//	             4: the previous fact's table; 8: the previous fact's pk (not on
//	             the first fact); bits 4–5, the fact's HLC: 0, the ChangeSet
//	             hlc's base (wall, counter, site) with opSeq one above the
//	             previous fact's (0 for the first fact); 1, that base with a
//	             uvarint opSeq (< 2^32); 2, 30 bytes of its own; 3 malformed;
//	             64: column, priorValue and priorHlc follow; delete, priorRow
//	             follows. Bit 7: malformed.
//	value      = tag (1 byte) ‖ payload:
//	             0 null; 1 false; 2 true;
//	             3 integer: varint; 5 timestamp: varint ms since the Unix epoch;
//	             4 real: 8 bytes, IEEE 754 binary64 big-endian (NaN and ±Inf are
//	               malformed; -0 is kept);
//	             6 text: uvarint len ‖ UTF-8;
//	             9 text that is a UUID in canonical lowercase form
//	               (8-4-4-4-12 hex digits): its 16 bytes;
//	             7 json: uvarint len ‖ JSON text (valid, nested at most
//	               MaxJSONDepth; stored compacted);
//	             8 blob: uvarint len ‖ bytes;
//	             10 (a column change's value only): the fact's pk[0], nothing
//	               follows (a key column's own fact).
//	             Other tags: malformed.
//
// The binary form carries exactly what the JSON form carries, and more
// precisely: kinds are kept (a timestamp stays a timestamp, an integer
// beyond 2^53 needs no tag, a real 1.0 stays a real), so a ChangeSet
// decodes to the ChangeSet that was encoded, and MarshalChangeSet of it
// gives the JSON form of the original. The encoder refuses what the JSON
// encoder refuses (ErrInvalidMessage: NaN, text that is not UTF-8, empty
// names or pk, a delete with a column...). The decoder checks structure as
// UnmarshalChangeSet does (the engine checks meaning) and refuses, with
// ErrMalformed naming the field and byte offset, truncated input, a length
// or count beyond the bytes left, an unknown flag or tag, a name index
// out of range, bytes after the ChangeSet; counts are checked against the
// input before anything is allocated, and a frame may carry at most
// MaxBinaryChanges changes and migrations (a one-byte fact decodes to a
// model.Change of about 200 bytes). The encoding is deterministic: equal
// ChangeSets give equal bytes.
//
// Sealed ChangeSets carry their envelope as raw bytes (a third smaller
// than its base64 in JSON), and the envelope seals the binary form (see
// "Envelopes"); envelopes sealed before version 14, whose plaintext is
// the JSON form, still open. Snapshot chunks stay JSON: their
// rows chunk already names columns and HLC bases once per chunk (see
// "Snapshot chunks").
//
// A relay may keep ChangeSets in their JSON form (package relay does, so
// that data directories of earlier versions are served unchanged) and
// write the binary form when it sends them (TranscodeChangeSet,
// AppendTranscodedItem, BinaryFrame).
//
// # Schema migrations
//
// A SchemaMigration (model.SchemaMigration) carries its DDL as JSON, not
// SQL:
//
//	{"type":"create_table","table":"trips","ddl":TableDef,"hlc":"…"}
//	{"type":"add_column","table":"trips","ddl":ColumnDef,"hlc":"…"}
//	{"type":"add_index","table":"trips","ddl":IndexDef,"hlc":"…"}
//	{"type":"set_resurrection_policy","table":"trips","ddl":{"policy":"allow-resurrection"},"hlc":"…"}
//	{"type":"drop_table","table":"trips","ddl":{},"hlc":"…"}
//	{"type":"drop_column","table":"trips","ddl":{"name":"budget"},"hlc":"…"}
//	{"type":"drop_index","table":"trips","ddl":{"name":"by_title"},"hlc":"…"}
//
// all members required; for create_table, ddl.name equals table. The
// definitions, as MarshalSchema also writes them:
//
//	TableDef   {"name":"trips","columns":[ColumnDef…],"primaryKey":["id"],"indexes":[IndexDef…],"coerce":true}
//	           (indexes omitted when none, coerce when false; primaryKey always written;
//	           in a schema, not in a create_table ddl, "allowResurrection": bool
//	           declares the table's policy, omitted when undeclared)
//	ColumnDef  {"name":"budget","type":"real","notNull":true,"default":0.0,"coerce":true}
//	           (type one of text, integer, real, boolean, blob, json, timestamp;
//	           notNull and coerce omitted when false, false accepted on input;
//	           "default" present exactly when the column has a default, even
//	           a null one)
//	IndexDef   {"name":"by_title","columns":["title"]}
//
// set_resurrection_policy declares a table's resurrection policy
// (model.ResurrectionPolicy): ddl.policy is "delete-wins" (a deleted row
// stays deleted) or "allow-resurrection" (a write with an HLC above the
// row's tombstone revives it), nothing else, and ddl has no other member.
// The policy is data of the database, not of a device: every replica,
// the relay's merged replica included, folds these migrations, and a
// table's policy is that of its lowest-HLC set_resurrection_policy, so
// concurrent contradicting declarations converge whatever order they
// arrive in; a table with none is delete-wins. A create_table's ddl never
// carries the policy. Snapshots carry the migrations in their schema chunk
// and, per row, the tombstone with the cells written after it under either
// policy, so a device bootstrapping from the relay shows a revived row.
//
// drop_table, drop_column and drop_index retire a table, a column of
// table or an index of table: a drop_table's ddl is the empty object, a
// drop_column's and drop_index's {"name": the column or index}, nothing
// else. Conflicts follow "most destructive wins" (docs/design.md § Schema
// migrations): a dropped name is retired for good, so a drop wins over
// every create_table, add_column or add_index of the same name, whatever
// their HLCs and arrival order, and no replica ever defines it again; a
// drop_column of a key column has no effect; an index over a dropped
// column goes with it. Every replica, the relay's merged replica included,
// removes the dropped rows or cells when it folds the drop in and
// discards later changes for them, so its snapshots and its log's
// ChangeSets carry the drops (among the migrations, ahead of data) but
// no data of what they dropped. They are new in protocol version 11: a
// peer of an earlier version refuses them (unknown migration type), so
// the versions do not talk (see "Protocol version").
//
// alter_column changes a column's notNull or default: its ddl is
// {"name": the column, "notNull"?: bool, "default"?: value | "dropDefault": true},
// with at least one of notNull, default and dropDefault, and default and
// dropDefault not both (dropDefault removes the default; "default":null
// is a null default). It never carries a type: a column's type does not
// change. Per attribute, the alter_column with the highest HLC wins on
// every replica (the relay's merged replica included), whatever the
// arrival order; an alter of a dropped column or table, or of a key
// column, has no effect, and so has a default that does not fit the
// column's type (on the default only). Nothing stored changes when an
// alter is folded in. Snapshots carry alter_column migrations in their
// schema chunk with the others. It is new in protocol version 12 (see
// "Protocol version").
//
// rename_table gives a table a new name: its "table" names the table by
// its identity, the name it was created with (which its rows, changes and
// other migrations keep carrying, whatever it is called now), and its ddl
// is {"name": the new name}, nothing else. Per table, the rename_table
// with the highest HLC names it on every replica, whatever the arrival
// order. Names are claimed for good: a rename joins the table's names and
// its new one into one table, so a create_table of any of them (a device
// that had not learned the rename), and the changes naming it, are the
// renamed table's; a rename of another table to a name the table holds
// (only concurrent ones: a device refuses it locally) joins the two
// tables. A drop_table of any of a table's names drops it, whatever its
// renames (most destructive wins). Nothing stored changes when a rename
// is folded in, except that rows stored under a name that joined another
// table's move into that table (a join of their cells). Snapshots carry
// rename_table migrations in their schema chunk with the others, and
// rows under the table's identity (docs/design.md § Schema migrations,
// "Renaming tables"). It is new in protocol version 13 (see "Protocol
// version").
//
// ParseSchema reads these and the friendlier form a web page passes to
// Replica.open.
//
// # Snapshot chunks
//
// A snapshot stream is, in this order:
//
//	header → schema → (table_start → rows* → table_end)* → footer
//
// each chunk the "chunk" of one snapshot_chunk frame (model.SnapshotChunk),
// followed by snapshot_complete. The header:
//
//	{"type":"header","format":1,"snapshotId":"snap-0193a1b2","siteId":"…","hlc":"…","tables":["trips"],"rowCount":3,"cursor":4211}
//
// Members:
//
//   - format (integer): model.SnapshotFormat (1); a receiver refuses
//     another before touching anything.
//   - snapshotId (string): names the transfer; a resumed stream keeps it.
//   - siteId (site id), hlc (HLC): the sender's site and clock; the
//     receiver drift-checks hlc before touching anything.
//   - tables (array of strings): the tables the stream carries, in order.
//   - rowCount (count): row entries to come, for progress; 0 if unknown.
//   - cursor (cursor): the relay's cursor before it read the data; the
//     client pulls changes after it once the snapshot is applied.
//   - horizon (wall time ms, version 3, optional, omitted when 0): the
//     wall of the relay's newest tombstone horizon mark when cursor was
//     taken. Once the snapshot is applied the client prunes its
//     tombstones deleted before it (as for a mark) before its first pull.
//
// All members but horizon are required.
//
// The other chunks but rows:
//
//	{"type":"schema","schemaMigrations":[SchemaMigration…]}   every migration, before any data
//	{"type":"table_start","table":"trips"}
//	{"type":"table_end","table":"trips","offset":3}           offset: the table's row entries sent
//	{"type":"footer","tableCount":1,"rowCount":3}            what the stream carried
//
// A rows chunk carries up to a few thousand rows of one table in a compact
// form: per-chunk tables of column names and of HLC bases, cells as small
// arrays referring to them. Its frame must fit the receiver's frame limit
// (see "Snapshot chunk sizes" under Limits). Consecutive rows chunks may
// carry the same row (same pk), each with some of its cells: a receiver
// merges every row entry into its row (a join), so parts of one row add up
// to the row; the footer's rowCount counts row entries as sent.
//
// A rows chunk and a table_end carry offset (version 4; integer in
// [0, 2^53], omitted when 0): the number of the table's row entries the
// stream carried before the chunk (for table_end, all of them; a
// table_start, which has none, restarts the count). A receiver refuses a
// chunk whose offset is not the count it applied, before applying any of
// it, as malformed: a rows chunk lost or repeated on the way would
// otherwise go unnoticed until the footer, after a replacing snapshot had
// dropped the local rows the lost chunk carried as absent and recorded the
// table as complete.
//
//	{"type":"rows","table":"trips","columns":["id","title","budget"],"key":[0],
//	 "bases":["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4=", …],
//	 "rows":[[null,[[0,"t1",0,1],[1,"Lisboa"],[2,1350,1,0]]],
//	         [["old"],[],[1,2]]]}
//
// Members:
//
//   - columns (array of strings): distinct column names; cells refer to
//     them by index.
//   - key (array of column indexes): the primary-key columns in key order,
//     or [] when the chunk has none.
//   - bases (array of strings): distinct HLC bases, each the standard
//     base64 (padded, 36 characters) of the first 26 bytes of an HLC
//     (wall, counter, site; no opSeq).
//   - rows (array): the rows (model.SnapshotRow), each [pk, cells] or
//     [pk, cells, tombstone], described below.
//   - offset (integer, version 4, omitted when 0): the table's row entries
//     the stream carried before this chunk (above).
//
// In a row, pk is the array of primary-key values, or null when key is not
// empty and the row's pk is the values of its cells of the key columns (the
// first cell of each; a row with a null pk must have them).
//
// cells is an array of cells, each [c, v, b, s] or [c, v]: column index c,
// value v, and the cell's HLC as base index b and opSeq s (0 to
// 4294967295). The short form [c, v] means: the HLC of the previous cell in
// the chunk (across rows, in order) with opSeq + 1. The first cell of a
// chunk, and a cell after one with opSeq 4294967295, must use the long
// form.
//
// tombstone, present exactly when the row is deleted, is [b, s].
//
// An encoder builds the tables in first-appearance order, infers key from
// the first row with cells (for each pk value, the first cell holding an
// equal value) and writes null wherever it holds, and uses [c, v] wherever
// it can. On 1000-row chunks of the GeoNames cities (7 text cells, a
// UUIDv7 key), bulk-imported, this takes about 129 bytes a row, against
// about 1330 bytes a row as ChangeSets; see BenchmarkRowsChunk.
//
// # Error codes
//
// Fatal (the relay sends the error, then closes the WebSocket with the
// status given; the client reports it and stops reconnecting):
//
//	PROTOCOL_VERSION_MISMATCH  4003  protocolVersion absent or different
//	AUTH_FAILED                4001  token does not grant the database
//	MISSING_DATABASE_ID        4002  databaseId absent or invalid
//	ALREADY_AUTHENTICATED      4004  a second handshake on the connection
//	SEALED_MISMATCH            4005  the handshake's sealed differs from the
//	                                 database's mode (version 7)
//
// Transient (one request failed; the connection stays open):
//
//	NOT_AUTHENTICATED      a request before the handshake completed
//	APPLY_CHANGES_ERROR    apply_changes failed as a whole, may pass when resent
//	                       later (a storage failure on the relay)
//	CLOCK_DRIFT            apply_changes refused as a whole: an HLC more than
//	                       60 s ahead of the relay's clock (the device's clock
//	                       is ahead); passes once the clocks agree (since
//	                       2026-12-01; APPLY_CHANGES_ERROR before)
//	APPLY_CHANGES_REFUSED  apply_changes refused as a whole for its content; the
//	                       same ChangeSets would be refused again (malformed,
//	                       too large to store, above the relay's per-frame
//	                       limit): do not resend them unchanged
//	GET_CHANGES_ERROR      get_changes failed
//	SNAPSHOT_ERROR         a snapshot stream failed or was abandoned
//	UNKNOWN_MESSAGE        a well-formed frame of an unknown type
//	MESSAGE_ERROR          a frame that is not valid JSON or not a valid message
//	                       (fatal, close 1002, for a handshake whose siteId is
//	                       all zeros: the frame says fatal)
//	MESSAGE_TOO_LARGE      a frame above the size limit (a WebSocket library may
//	                       close with status 1009 instead)
//	SNAPSHOT_REQUIRED      get_changes cannot be served from the log: bootstrap
//	RATE_LIMITED           the connection stayed above the relay's frame or byte
//	                       rate; the relay closes it next (status 1008): reconnect
//	                       after a growing backoff (since 2026-12-01)
//	ENVELOPE_REQUIRED      apply_changes to a sealed database carried a plaintext
//	                       ChangeSet; refused whole, nothing stored (version 7)
//	ENVELOPE_REFUSED       apply_changes to a plain database carried an envelope;
//	                       refused whole, nothing stored (version 7)
//	CHECKPOINT_REFUSED     put_checkpoint refused; the upload is abandoned (version 7)
//
// Codes this list lacks are transient unless their frame says fatal. The
// ErrorCode constants, ErrorCode.CloseStatus, IsFatal and DecodeErrorCode
// encode these rules.
//
// # Protocol version
//
// ProtocolVersion is an integer, compared for equality at the handshake;
// its changelog sits above the constant. This package speaks version 14
// (2026-12-07: binary frames, see "Binary frames"; version 13,
// 2026-12-07, the rename_table migration, see "Schema migrations";
// version 12, 2026-12-06, the alter_column migration; version 11, 2026-12-06, the drop migrations; version 10,
// 2026-12-06, handshake_ack's history "unverified", see "Verifying the
// relay's log"; version 9, 2026-12-03, apply_result's position, see
// "Acknowledged position";
// version 8, 2026-12-03, the handshake's horizon, see "Verifying the
// relay's log"; version 7, 2026-12-03, sealed databases, see "Sealed databases"; version 6,
// 2026-12-03, repair pushes, see "Repair pushes"; version 5, 2026-12-03,
// own ChangeSets asked back after a mark, see "Own ChangeSets after a
// mark"; version 4, 2026-12-02, siteHlc in marks; version 3,
// tombstone horizon marks, see "Tombstone horizon"; version 2,
// 2026-12-01, verified the relay's log, see "Verifying the relay's log");
// a peer of another version is answered with PROTOCOL_VERSION_MISMATCH and
// stops, keeping its data, until it is updated. Every version must be able to read
// the version of a peer of any other version, so the handshake and
// handshake_ack are decoded version first: when protocolVersion is absent
// (read as 0) or not this package's ProtocolVersion, Decode checks only that
// the frame is valid JSON and returns the message with nothing but
// ProtocolVersion set, ignoring members it may not understand. The relay
// then answers PROTOCOL_VERSION_MISMATCH (fatal, close 4003) and the client
// stops. The shape of the error frame is frozen for the same reason.
//
// # Delivery by cursor
//
// The origin protocol pulls "changes since my HLC watermark". That loses data:
// a device that was offline for a day reconnects and pushes edits stamped
// with day-old HLCs, below the watermark of every client that synced in the
// meantime, so those clients only see the edits if they happen to be
// connected for the broadcast. Replica separates the two jobs of a
// timestamp (docs/design.md § Delivery by cursor):
//
//   - The HLC decides conflicts: per cell, the higher HLC wins.
//   - The relay's arrival sequence decides delivery. The relay numbers the
//     ChangeSets of each database 1, 2, 3, … as it stores them, without
//     gaps. A client's received watermark is the cursor of the last
//     ChangeSet it applied, kept per relay and database; get_changes
//     {since: cursor} returns everything stored after it, however old its
//     HLCs, so a late arrival is never skipped.
//   - The sent watermark stays an HLC over the client's own facts (its own
//     clock is monotonic), moved only by the matching apply_result.
//   - A cursor older than the relay's retained log is answered with
//     SNAPSHOT_REQUIRED instead of silently missing deleted rows.
//   - Pulls are paged (more) until the client is caught up.
//
// Cursors are meaningful only for the log that issued them (serverSiteId
// and databaseId, and the history the chain value at the cursor names: see
// "Verifying the relay's log"), and they never exceed 2^53, so JavaScript
// numbers hold them exactly.
//
// # Tombstone horizon
//
// Tombstones cannot be kept for ever, and a replica that prunes one
// decides a late change for that row (an update with an old HLC, from a
// device that was offline) otherwise than one that still holds it: without
// the tombstone the change revives the row (a partial row), with it the
// deletion wins. Replicas that prune by their own clocks would therefore
// disagree for good. So pruning is an event of the relay's log
// (docs/design.md § Retention): in its maintenance pass the relay stores a
// horizon mark {cursor, wall, chain} — cursor the log's head, wall its
// clock minus the retention period (30 days by default), chain the chain
// value at cursor — and prunes its merged replica's tombstones deleted
// before wall, with no ChangeSet appended in between. Every replica does
// the same at the same point of the log. A mark (type Horizon) is
//
//	{"cursor":41,"wall":1764633600000,"chain":"I-zgrM9zk1Rcq6zDbIfU6Q","siteHlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE"}
//
// Members, all required but siteHlc:
//
//   - cursor (cursor): the mark follows the ChangeSet at cursor and
//     precedes the one at cursor+1 (0: before the first).
//   - wall (wall time ms since the Unix epoch, not 0, at most 2^53): the
//     tombstones whose deletion's HLC wall time is before it are pruned
//     (engine.PruneTombstones(wall)).
//   - chain (chain value): the log's chain value at cursor.
//   - siteHlc (HLC, version 4, optional): the highest hlc among the
//     ChangeSets of the receiving connection's site that the log held when
//     the relay made the mark (the zero HLC: none). The relay pruned those
//     of the site's facts and no later one: it applies the later ones to
//     the pruned rows as they arrive. So a receiver pruning at the mark
//     keeps its own facts above siteHlc — tombstones, and the cells of a
//     delete-wins row whose tombstone goes — and prunes the others as the
//     relay did. The relay fills it per connection, so the same mark
//     carries another siteHlc to each site; a relay of version 4 always
//     sends it, and a receiver of a mark without it keeps its own facts
//     above its sent watermark.
//
// A changes page ends at the first mark after since (more true), so the
// marks of a message are at the position before its first ChangeSet
// (since, or first−1 for push_changes: applied before them) or at its
// cursor (applied after them); ChangeSets carry no cursor of their own. A
// receiver applies the ChangeSets up to a mark's cursor (storing that
// cursor), prunes at the mark's wall, records the wall as its horizon for
// the relay log, then goes on; it skips a mark whose wall is not above the
// horizon it recorded, so marks carried again (pages, pulls after a
// reconnect, a crash between the steps) apply once. Marks are ascending by
// cursor and strictly by wall; several may share a cursor. A receiver
// refuses, as a protocol error, marks out of order, a wall of 0, a cursor
// above 2^53 or outside the message's range. A snapshot's header carries
// the horizon its data was read under, and the bootstrapped replica prunes
// at it before its first pull.
//
// The relay keeps its marks with its arrival log, pruned with it (always
// keeping the newest), and makes none while a snapshot of the database is
// streaming (it tries again at its next pass), so that a snapshot's data
// and its header's horizon agree. A change older than the horizon for a
// deleted row may revive it (a partial row), but alike on every replica.
//
// # Own ChangeSets after a mark
//
// A receiver keeps, at a mark, its own facts above siteHlc, which the
// relay applies after its pruning. Those it had pushed before it applied
// the mark are fixed, though, and its rows may no longer hold all of
// them: a later fact of another site (a cell, a deletion) that the log
// held at the mark superseded one, the mark pruned that fact with its
// row, and the relay, and every replica pulling the log, then revive the
// row from the pushed fact — which the writer alone never received, as a
// relay leaves a client's own ChangeSets out of what it sends it. So
// (version 5) a client that applies a mark whose siteHlc is below the
// highest of its own ChangeSets it pushed before (its sent watermark, the
// handshake_ack's siteHlc, a push in flight) asks them back: its
// get_changes carry ownAbove (the mark's siteHlc) and ownUpTo (that
// highest hlc) until it applies the next mark, which sets the range anew
// (none when its siteHlc covers them). The relay sends the requester's own
// ChangeSets in that range in their place in the log, and the client
// merges them there (engine.ApplyOptions.MergeOwn), after its pruning, as
// the relay did; facts its rows still hold merge as no-ops. A page
// answering a request without the range, whose leading marks set one, may
// lack some: the client applies none of it and asks again. The client
// stores the range with its cursor (client's "Persisted state").
//
// The same range from the first transaction (ownAbove the zero HLC) asks
// back every own ChangeSet of the log up to ownUpTo: a client does so
// when it pulls a log from 0 without a cursor of its own there instead of
// bootstrapping from a snapshot (it holds facts of its own, and a
// bootstrap after a diverged history failed), as it may lack own facts
// the log holds (pruned at a mark of a history the relay lost), and after
// a replacing bootstrap from a sealed checkpoint (client's "Sealed
// checkpoints"). The next mark sets the range anew, as above.
//
// # Repair pushes
//
// A relay that lost history (restored from an older copy, its storage
// wiped, or simply a relay new to a device that synced elsewhere) may lack
// facts that only a device other than their author still holds: a
// tombstone its author pruned at a tombstone horizon mark the relay lost,
// the writes of a device that is gone for good. Pushing back its own
// transactions (see "Verifying the relay's log") cannot bring those back.
// So (version 6) a client that finds the relay's history lost — its
// cursor diverged or could not be verified, the relay holds fewer of its
// transactions than it acknowledged (siteHlc), or the log is one it holds
// no cursor in — pushes, once it caught up with the log, every fact of
// other sites it holds (engine.PeerFacts: its rows' live cells and
// tombstones and the schema migrations it received), in apply_changes
// frames with repair: true, bounded like any push. Such a ChangeSet is a
// subset of its transaction (a transaction's facts as one page of rows
// holds them), under its author's siteId and transactionId.
//
// The relay merges a repair push into its merged replica like any push
// and appends to its log, at the next cursors, the ChangeSets that changed
// it (a fact or migration applied), under the sender's name: the entry's
// chain input is the sender's siteId and the transactionId
// "repair <author siteId> <transactionId>". A ChangeSet that changed
// nothing is not appended: every fact of it is held, or superseded, by
// what the log already carries. Repair entries neither raise the author's
// siteHlc nor enter the deduplication index (a repair resent changes
// nothing the second time). A repair entry reaches every replica, in
// push_changes and in pulls, its author included (whose engine merges its
// own facts back: MergeOwn) and its sender too: the sender merges it in
// its place in the log like every other replica. It holds those facts,
// but may prune some at a mark the relay made before it appended the
// entry and that the sender applies only after its push (a mark reaches
// a client with the next changes after it): every other replica merges
// the entry after that mark, and so must the sender, or a later mark
// prunes on them what it keeps (the simulator's seeds 41 and 66; until
// 2026-12-03 a pull left out the entries the requester sent).
// A mark's siteHlc counts the receiver's own pushes only, not its facts
// that repair entries of other replicas gave the log back before the
// mark: a receiver treats those (it pulled them, merged as its own) as
// held by the relay at the mark, and prunes them as the relay did,
// rather than keeping them as unsent (an own deletion the relay held
// decides its row alone: the simulator's seed 16). Until its repair
// push is done, a receiver keeps at a mark the facts of other sites it
// holds that it did not pull from the log (it held them before the loss
// of history): the relay did not hold them when it pruned, and the
// repair push gives them to it after the mark, where it applies them as
// late facts, as does every replica pulling the repair entries (pruned,
// a deletion would take the cells of a delete-wins row with it on that
// replica alone: the simulator's seed 55).
// Every replica thus converges to the union of what the devices hold. A
// delete that every device pruned and the relay lost is gone for good:
// rows the relay's older copy still holds come back everywhere, the
// inherent limit of restoring a copy older than the retention horizon.
//
// A client stores how far its repair came (client's "Persisted state"),
// so it resumes after a crash or a lost connection; a new loss of history
// starts it again from the beginning. The cost is one upload of the
// device's state per device and loss, merged by the relay (only the first
// copy of a fact is appended), and every appended entry pulled by every
// replica, its sender's included.
//
// Sealed databases (version 7) have no repair pushes: the relay cannot
// merge envelopes to tell which facts it lacks. It refuses a repair push
// to a sealed database with APPLY_CHANGES_REFUSED, and a sealed client
// sends none: after a loss of history its devices push back their own
// transactions (siteHlc) and bootstrap from the newest sealed checkpoint,
// and facts only a non-author holds are not restored (a known limit).
//
// # Verifying the relay's log
//
// A relay can lose data behind its clients' backs: its data restored from
// an older copy, its log truncated or replaced (docs/design.md §
// Clients verify the relay). A restored copy keeps its serverSiteId, and hands out again,
// for other ChangeSets, cursors its clients already hold. So the relay
// keeps a hash chain over its arrival log, and clients check it.
//
// The chain value at cursor 0 is GenesisChain (the first 16 bytes of
// SHA-256("replica arrival log")); at cursor n it is the first 16 bytes of
// SHA-256(chain(n−1) ‖ siteId (16 bytes) ‖ transactionId (UTF-8)) of the
// ChangeSet stored at n (Chain.Next). It depends on the entries' identity,
// not their content: a transaction pushed again with fewer facts (newer
// writes superseded some) is the same entry. The relay keeps the value of
// every retained cursor and of its compaction point (the last cursor
// retention removed), so a position there can still be checked; a log of
// an older relay format takes GenesisChain at its compaction point.
//
// A client keeps the chain value that came with its cursor (changes.chain,
// push_changes.chain) and presents both in its next handshake. The relay
// answers in handshake_ack:
//
//   - history "continues": the same history; the client pulls from its
//     cursor.
//   - history "diverged": the relay's head is below the cursor, or its
//     chain value there differs. The cursor is void, and so is a snapshot
//     checkpoint taken from it: the client bootstraps again (get_snapshot,
//     which merges: nothing local is lost) and pulls from the snapshot's
//     cursor.
//   - history "unverified" (version 10): the log holds the cursor, but the
//     handshake carried no chain value (a client stores a snapshot's
//     cursor without one, until its first pull brings it). Pulling from
//     it could skip, for good, the entries a relay restored from an older
//     copy appended below it since: the client treats its cursor as
//     diverged. An interrupted snapshot's checkpoint cursor, presented
//     without a chain value, is resumed: resume_snapshot checks that the
//     log still holds the position the snapshot was taken at.
//   - no history: nothing to judge (see handshake_ack); a cursor below
//     the retained log gets SNAPSHOT_REQUIRED from get_changes.
//
// The chain covers the entries, not the horizon marks between them: a
// relay restored from a copy taken before it made a mark at its head holds
// the same chain value there, and a client at that cursor may have applied
// the lost mark, pruning tombstones the restored merged replica still
// holds; replicas then decide later facts of those rows differently for
// good (a late cell revives a delete-wins row where the tombstone is gone
// and stays dead where it is not). So (version 8) the client presents, with
// its cursor, the horizon it applied in that log (handshake.horizon), and
// the relay answers "diverged" when the newest mark it holds at or below
// the cursor has a lower wall, or when it holds none there (a client
// applies marks up to its cursor only, and every mark it applied was one of
// this log's). The client then bootstraps again like any client whose
// history diverged: it voids the horizon applied with its cursor (pulling
// the log again, it applies every mark again), the merging snapshot brings
// back the tombstones it pruned at the lost mark, its header's horizon
// becomes the one applied, and its repair push gives the relay the facts of other sites it holds,
// so that every replica holds the relay's older state merged with theirs
// and prunes it at the relay's next marks, alike. The relay judges a
// cursor from its compaction point up (below it get_changes answers
// SNAPSHOT_REQUIRED anyway): it keeps, besides the marks of its retained
// log and its newest one, the newest mark below the compaction point when
// none lies at it. A
// store whose older version dropped that mark may answer "diverged" once
// to a client at a cursor with no retained mark below it: a needless
// bootstrap, never a lost fact.
//
// Independently, siteHlc says what the relay holds of the client's own
// transactions: when it is below the highest hlc the relay had
// acknowledged to this client, the relay lost some, and the client lowers
// its sent watermark to siteHlc and pushes everything above it again (the
// relay deduplicates by site id and transactionId, so pushing what it
// still holds is harmless). A client that lost its sent watermark rebuilds
// it from siteHlc. After the repair every device, and a fresh one, holds
// every row: each device pushes back what only it had, and devices whose
// cursor pointed into the lost history bootstrap from the relay's merged
// replica. A relay whose storage was deleted is a new log (a new
// serverSiteId): clients treat their old cursor as void and push
// everything again, as before.
//
// # Sealed databases
//
// A database is plain or sealed (docs/design.md § Sealed databases),
// decided by the handshake that creates it (sealed) and kept for its
// life. In a sealed database every ChangeSet travels as an envelope (the
// ChangeSet's envelope member): the client seals its own transactions
// before apply_changes and opens what changes and push_changes bring
// before it applies them, with keys the relay never sees. The relay stores,
// deduplicates (by site id and transactionId: a resend, sealed anew with
// another nonce, is not stored again), sequences and fans out envelopes
// without reading them, exactly as plain ChangeSets, and checks what it
// can see: the sender's site id, that hlc names transactionId, and the
// 60 s clock-drift gate on hlc (CLOCK_DRIFT). It keeps no merged replica
// of a sealed database, so it cannot make snapshots: devices upload sealed
// checkpoints instead (see "Sealed checkpoints"). Tombstone horizon marks
// work as in plain databases: devices prune at them. The relay answers a
// plaintext ChangeSet pushed to a sealed database with ENVELOPE_REQUIRED
// and an envelope pushed to a plain one with ENVELOPE_REFUSED; a refused
// batch stores nothing.
//
// The HLC stays visible, as in Evolu, so that the relay keeps its drift
// gate and the delivery rules that use HLCs (siteHlc, ownAbove and
// ownUpTo) work unchanged. What the relay learns, and what it can still
// do, is docs/SECURITY.md.
//
// # Sealed checkpoints
//
// A sealed checkpoint is a device's snapshot at a cursor, sealed part by
// part (secsync's design): part n seals the frame of the n-th
// snapshot_chunk of the device's own snapshot stream (header, schema,
// table_start, rows, table_end, footer, exactly as a relay would stream
// it; header.cursor is the checkpoint's cursor, header.horizon the
// tombstone horizon the device applied), in an envelope of kind 2 bound to
// the checkpoint's id, uploader, HLC, cursor, part number and last flag
// (see "Envelopes"). The relay keeps the newest.
//
// Who uploads and when: a device decides (client's Options
// CheckpointChanges, default 1000, and CheckpointInterval, default 24 h):
// once it is caught up, holds nothing the relay lacks (no transaction
// above its sent watermark) and no upload or snapshot is in flight, when
// its cursor is CheckpointChanges ChangeSets past the relay's newest
// checkpoint (handshake_ack's checkpointCursor), or past it at all once
// that one is CheckpointInterval old (checkpointAt). Several devices may
// upload at once; the relay keeps the highest cursor.
//
//	> {"type":"put_checkpoint","checkpointId":"c4211-5f0e","siteId":"AY86XH4RQpugDcRVbiGQ_g","hlc":"AAABmszo7ygAAAGPOlx+EUKboA3EVW4hkP4AAAAA","cursor":4211,"part":0,"envelope":"AQsw…"}
//	< {"type":"checkpoint_result","checkpointId":"c4211-5f0e","part":0}
//	…
//	> {"type":"put_checkpoint",…,"part":7,"last":true,"envelope":"…"}
//	< {"type":"checkpoint_result","checkpointId":"c4211-5f0e","part":7,"stored":true}
//
// Members of put_checkpoint and checkpoint_part (CheckpointPart), all
// required but last:
//
//   - checkpointId (string, 1 to 128 bytes): chosen by the uploader.
//   - siteId (site id): the uploader's, the connection's.
//   - hlc (HLC): the uploader's clock; the relay drift-checks it.
//   - cursor (cursor): the position in the log the checkpoint stands for.
//   - part (integer, 0 to 2^32−1): parts are numbered from 0 without gaps.
//   - last (boolean, written only when true): the final part (the footer).
//   - envelope (padded standard base64 of an envelope, kind 2).
//
// The client sends one part at a time and the relay answers each with
// checkpoint_result {checkpointId, part, stored}, stored true for the last
// once the checkpoint is the database's newest, or with CHECKPOINT_REFUSED
// (the upload is abandoned and nothing of it kept): on a plain database;
// for a part 0 whose cursor is above the log's head or not above the
// newest checkpoint's, whose siteId or hlc's site is not the connection's,
// or whose hlc is more than 60 s ahead, or whose checkpointId (with its
// siteId) names a checkpoint the relay still holds; for a part that does not follow
// the connection's upload (another id, hlc or cursor, a gap); above the
// relay's size limit; when another checkpoint at a cursor not below this
// one's was stored meanwhile. A part 0 starts a new upload, dropping the
// connection's unfinished one; a connection that ends drops its own.
//
// Bootstrap: get_snapshot (and resume_snapshot) on a sealed database with
// a checkpoint is answered with its parts as checkpoint_part frames, in
// order, then snapshot_complete; with none, with an empty snapshot at
// cursor 0 (the relay prunes nothing of a sealed log before a checkpoint).
// The client opens each part, checks that parts follow one another (same
// checkpointId, siteId, hlc and cursor; consecutive part numbers; part 0 a
// header at that cursor; last exactly on the footer), and applies the
// chunk inside as a plain snapshot's, then pulls from the cursor. A part
// that does not open, or a header or last flag out of place, refuses the
// checkpoint: the client applies nothing more of it, and pulls the log
// from 0 instead (see client's "Sealed checkpoints"). A part missing or
// out of order fails the transfer, retried as a plain snapshot's. A sealed client sends get_snapshot, never
// resume_snapshot (whose completedTables would name tables to the relay).
// To resume an interrupted transfer it names the checkpoint and the part
// after the last table its engine completed (get_snapshot's checkpointId
// and fromPart); the relay streams parts 0 and 1 and the parts from there,
// and the client hands its engine the header with the tables not yet
// completed and the footer with this stream's counts, as a plain relay's
// resumed stream carries them. Progress, stalls and failures are those of
// a plain snapshot.
//
// Retention: the relay may prune a sealed log, as a plain one, after its
// retention period, but never above its newest checkpoint's cursor; a
// device behind that gets SNAPSHOT_REQUIRED and bootstraps from the
// checkpoint.
//
// # Envelopes
//
// An envelope is AES-256-GCM (NIST SP 800-38D) of a plaintext under one
// key of the database, with associated data binding it to its place:
//
//	envelope = version (1 byte, 1) ‖ key id (8) ‖ nonce (12) ‖ ciphertext ‖ tag (16)
//
// The plaintext of a ChangeSet's envelope is the ChangeSet's binary form
// (MarshalChangeSetBinary, see "Binary frames"; sealed since version 14)
// or, in envelopes sealed before, its JSON wire form (MarshalChangeSet:
// siteId, transactionId, hlc, changes, schemaMigrations, as in
// "ChangeSet"). A receiver tells them by the first byte ('{' for JSON, a
// flags byte below 8 for the binary form), opens either, and refuses the
// ChangeSet unless its siteId, transactionId and hlc equal the visible
// ones. Blob values are sealed inside it like any other value.
//
// The associated data (never sent; both ends build it) is
//
//	"replica-envelope" (16 ASCII bytes) ‖ version (1) ‖ kind (1; 1 = ChangeSet, 2 = sealed
//	checkpoint part) ‖ key id (8) ‖ len(databaseId) (2, big-endian) ‖ databaseId ‖
//	siteId (16) ‖ len(transactionId) (2, big-endian) ‖ transactionId (UTF-8) ‖ hlc (30 bytes,
//	the HLC's binary form)
//	[kind 2 only:] ‖ cursor (8, big-endian) ‖ part (4, big-endian) ‖ last (1: 1 or 0)
//
// so an envelope moved to another database, attributed to another site or
// transaction, or given another HLC does not authenticate. For a
// checkpoint part, transactionId is the checkpointId, siteId and hlc the
// uploader's, and the plaintext the frame of one snapshot_chunk; a part
// renumbered, moved to another cursor, or marked last (or not) otherwise
// than sealed does not authenticate either, so the relay cannot reorder,
// drop from the end, or splice checkpoints.
//
// The nonce is 96 random bits (a CSPRNG) per envelope, not a counter: a
// counter would have to be kept per site and key across browser tabs,
// restores from backups and devices, and a repeated nonce breaks
// AES-GCM; random nonces need no state. The price is NIST SP 800-38D §
// 8.3's bound of 2^32 envelopes per key (over every device using it) to
// keep the chance of a repeat below 2^-32: rotate the key well before
// (seal.MaxEnvelopesPerKey; Replica does not count).
//
// Keys (package seal's "Keys"): a key is 32 bytes, random or
// PBKDF2-HMAC-SHA-256 of a passphrase (600,000 iterations, salt "replica
// passphrase v1 " followed by the database id). HKDF-SHA-256 (RFC 5869,
// empty salt) of the key derives the AES-256 key (info "replica
// aes-256-gcm v1", 32 bytes) and the key id (info "replica key id v1", 8
// bytes), which names the key without revealing it. A receiver holding
// several keys (rotation) picks the one the key id names. One whose key
// id names none of its keys, or whose version it does not know, cannot
// open the envelope (DECRYPT_FAILED: the client holds it); one naming a
// key it holds that does not authenticate is refused (ENVELOPE_INVALID).
//
// testdata/envelopes.json holds test vectors (keys, key ids, a
// passphrase, associated data and envelopes for fixed nonces, and
// envelopes that must not open) that every implementation reproduces
// (package seal's TestEnvelopeVectors; checked independently with
// Python's hashlib and cryptography.AESGCM when written). This package
// holds the layout only (EnvelopeAD, ParseEnvelope,
// AppendEnvelopeHeader), no cipher: the browser build links none.
//
// # Limits
//
//   - Frame size: DefaultMaxMessageSize (16 MiB) unless configured. Senders
//     page to stay under it; a single ChangeSet larger than the receiver's
//     limit cannot travel (MESSAGE_TOO_LARGE). Until it has accepted the
//     handshake, the relay reads frames of 64 KiB at most. The limit
//     counts a binary frame's bytes as they travel (before
//     permessage-deflate's inflation, like a text frame's).
//   - Changes per binary frame: MaxBinaryChanges (2^20 changes and
//     migrations); a relay's own MaxChangesPerApply (100,000 by default)
//     is lower for apply_changes.
//   - Handshake deadline: the relay closes a connection that sent no valid
//     handshake within its handshake timeout (10 s unless configured),
//     pings or not: NOT_AUTHENTICATED, then close status 1008.
//   - Connections: a relay at its connection limit answers the WebSocket
//     upgrade with HTTP 503; the client retries with backoff.
//   - Rate: a relay limits the frames and bytes per second of each
//     connection (500 frames/s and 64 MiB/s sustained unless configured):
//     over them it reads the connection more slowly, and one that stays
//     over them for its grace (10 s) gets RATE_LIMITED and is closed with
//     status 1008.
//   - Cursors and counts: at most MaxCursor (2^53).
//   - Snapshot chunk sizes: a rows chunk's frame is at most
//     MaxRowsChunkOverhead (512) bytes plus SnapshotRowSize of each of
//     its rows, an upper bound of what a row adds, escapes included. The
//     relay fills a chunk up to its SnapshotChunkBytes (4 MiB by default,
//     never above the frame limit minus MaxRowsChunkOverhead) and up to
//     1000 rows. A row stored up to the 8 MiB storage limit can encode
//     far larger: a blob in base64 takes 4/3 of its bytes, text takes 2
//     bytes for each '"', backslash, newline, tab, CR, BS or FF and 6 (\u00XX)
//     for each other control character, so an 8 MiB row of control
//     characters would be a 48 MiB frame. Such a row (only merges of
//     several devices' columns make one: a local write leaves at most
//     engine.MaxLocalRowSize, 2 MiB) travels in parts, a rows chunk of one
//     row each with as many of its cells as fit, down to one cell. One
//     cell always fits: it reached the relay in an apply_changes frame
//     within the same limit, and its rows-chunk form is smaller than its
//     ChangeSet form. (At most 2 MiB of control characters, 12 MiB
//     escaped, fits 16 MiB; a cell above a relay's frame limit, left by
//     a higher limit since lowered, is refused with SNAPSHOT_ERROR, as
//     no client with that limit could read it.) Hence the rule: a client's
//     frame limit must be at least the relay's.
//   - Nesting: a JSON value at most MaxJSONDepth (256) deep; a frame at
//     most MaxDepth (512) deep anywhere.
//   - databaseId: 1 to 128 characters of [A-Za-z0-9_.:-].
//   - protocolVersion, snapshot format and tableCount: at most 2^31 − 1.
//
// # Go API
//
// Encode and Decode convert between frames and the message types (pointer
// types implementing Message). They are safe for concurrent use and keep no
// reference to their arguments; the rows of one decoded rows chunk share
// backing arrays (each row's slices are capped, so appending to one never
// disturbs another). EncodeClient is Encode for the messages a client
// sends (ClientMessage): a client that encodes through it alone, as the
// browser build does, leaves the relay's encoders out of its binary.
// MarshalValue, UnmarshalValue, MarshalChangeSet,
// UnmarshalChangeSet, FormatHLC and ParseHLC expose the pieces;
// ParseSchema and MarshalSchema read and write schema declarations;
// ParseEnvelope, AppendEnvelopeHeader, EnvelopeAD (ChangeSetAD,
// CheckpointAD) and EncodeSnapshotChunk give the envelope layout and what
// a checkpoint part seals (package seal seals and opens). Errors
// match ErrMalformed (decoding), ErrUnknownType (decoding, unknown type),
// ErrInvalidMessage (encoding) or model.ErrSchema (ParseSchema), and name
// the offending member by its path, as in
// "wire: malformed input: changeSets[2].changes[0].pk: primary key must not be empty (at byte 912)".
package wire
