// Package client is Replica's sync client: it keeps one engine.Engine in
// sync with one database of a relay over a WebSocket, natively
// (github.com/coder/websocket) and in the browser (GOOS=js GOARCH=wasm, the
// browser's own WebSocket). It speaks the protocol of package wire, whose
// documentation is the reference for every frame named here, and follows
// docs/design.md § Sync (connection lifecycle, push/ack correlation,
// backoff, fatal and transient errors, debouncing, snapshot bootstrap),
// where changes are delivered by the relay's arrival cursor, not by HLC.
//
// # Usage
//
//	c := client.New(db, client.Options{})
//	defer c.Close()
//	unsubscribe := c.Subscribe(func(ev client.Event) { log.Println(ev.Type, ev.Status.State) })
//	defer unsubscribe()
//	if err := c.Connect("wss://relay.example/sync", "acme:trips", token); err != nil { … }
//	…
//	st := c.State()        // Synced, Snapshot progress, the last error …
//	n, err := c.Pending()  // local transactions the relay has not acknowledged
//	c.Disconnect()         // watermarks stay; Connect resumes
//
// Local writes need no call: the client subscribes to the engine's
// LocalChange events. Writes made through another Engine over the same
// store (another browser tab) are announced with Notify.
//
// # States
//
//	Disconnected ──Connect──▶ Connecting ──socket open──▶ Syncing ──caught up──▶ Synced
//	     ▲                        │                          │                      │
//	     └── backoff ◀────────────┴──── close, error ────────┴──────────────────────┘
//	Error ◀── fatal error (from any state but Disconnected), until Connect or Disconnect
//
// Disconnected: not connected, either idle (after New, Disconnect) or
// waiting to reconnect (Status.Retry is when, Status.Err why the last session
// ended). Connecting: dialing. Syncing: the socket is open; the handshake,
// a snapshot bootstrap (Status.Snapshot has its progress) and the first pull
// are under way, or a request is failing (below). Synced: the first pull
// returned more = false; live changes flow both ways; the state stays Synced
// across pushes, acks and later pulls. Error: a fatal error (Status.Err)
// ended the session and the client does not reconnect.
//
// Synced means caught up and nothing failing, so the state goes back from
// Synced to Syncing (in the same session, with no other change) while a
// later snapshot lands, and while a pull or a push has failed and waits for
// its retry: a pull whose changes the engine refuses (model.ErrClockDrift:
// this device's clock is more than 60 s behind the device that wrote them)
// or that the relay fails, a push the relay refuses for a reason that may
// pass (CLOCK_DRIFT: this device's clock is more than 60 s ahead of the
// relay's; APPLY_CHANGES_ERROR), an answer that breaks the protocol
// (ErrProtocol, see "Answers that make no progress"), live changes
// (push_changes) the engine refuses. Each failure is reported as an
// ErrorReported event (jsbridge shows the latest as SyncState.lastError),
// after the state moved: the event's Status, and State read after it, are
// never the Synced the failure left. It is Synced again when the failed pull succeeds,
// or when a push is acknowledged. A failed push keeps the client from
// Synced across sessions: after a reconnect, the first pull catching up is
// not enough, the first push must be acknowledged too. So the state never
// reads Synced while pushes are being refused, except before the first
// push of a new Client was answered (it cannot know earlier). A push
// refused for its content (APPLY_CHANGES_REFUSED, see "Transactions that
// cannot be synced") does not leave Synced: the transaction is skipped and
// the pushes after it go on.
//
// # A session
//
// A session is one WebSocket connection. The client dials, sends handshake
// {protocolVersion, databaseId, siteId, token} with its position in the
// relay log last seen at the URL (serverSiteId, cursor, chain: see
// "Verifying the relay") and waits for handshake_ack. An ack whose
// protocolVersion differs from wire.ProtocolVersion, or has none, is fatal
// (ErrProtocolVersion), as is one for another database. The client repairs
// what the ack's history and siteHlc say the relay lost. Then, in this
// order:
//
//  1. Bootstrap, when needed: if the engine holds a snapshot checkpoint (an
//     interrupted transfer, model.SnapshotCheckpoint), resume_snapshot
//     {checkpoint}; else, if the replica is brand-new for this relay
//     database — no cursor stored for it and engine.HasOwnFacts false —, or
//     the relay's log diverged, or the stored cursor did not decode, or
//     RequestSnapshot was called and the replica holds no cursor of its own
//     in this log, get_snapshot. RequestSnapshot with its own cursor pulls
//     first (step 2) and sends get_snapshot once caught up.
//  2. Pull: get_changes {since: cursor} until a changes reply says more =
//     false. Then the state is Synced (unless a push failed, see "States").
//     Without a cursor of its own in the log and without a bootstrap (it
//     holds facts of its own: a relay wiped, or a bootstrap after a
//     diverged history that failed or was cut), it pulls from 0 and asks
//     back every own transaction the log holds (get_changes' ownAbove
//     zero, ownUpTo the higher of the sent watermark and the ack's
//     siteHlc; stored like a mark's range, see "The tombstone horizon"):
//     the pull stands for the snapshot, and this replica may lack own
//     facts the log holds, pruned at a mark of a history the relay lost
//     (the simulator's seed 3931). They merge in their place in the log
//     (engine.ApplyOptions.MergeOwn); those it holds merge as no-ops.
//  3. Push every local transaction above the sent watermark, then keep
//     pushing as local changes happen.
//
// Incoming frames are handled one at a time, in arrival order, on one
// goroutine: an apply finishes before the next frame is looked at, and the
// relay's answers (which come in request order) meet a consistent state.
// Frames the client does not expect (an ack for no push in flight, a changes
// reply to no pull) are ignored; frames that do not decode, a binary
// message that is not a binary frame (protocol version 14 sends ChangeSets
// in binary frames, as binary messages), or a snapshot stream out of order end the session (ErrProtocol) and the
// client reconnects. A well-formed frame of an unknown type is reported and
// skipped.
//
// # Snapshots
//
// Chunks are applied in order with engine.ApplySnapshotChunkWith, each
// reported as a SnapshotProgressed event and in Status.Snapshot. A snapshot
// merges (nothing local is lost), except the one SNAPSHOT_REQUIRED starts
// for this replica's own cursor in this relay log (stored for it and not
// voided by the handshake, or taken from a snapshot or advanced by a pull in this session): that
// device was offline past the relay's horizon, the relay pruned the
// tombstones of rows deleted meanwhile, and a merge would keep those rows
// for good. That snapshot replaces
// (engine.ApplySnapshotOptions.Replace): rows the device holds that the
// snapshot lacks disappear (a RemoteChange event names their table;
// nothing is pushed for them), a row the snapshot carries becomes the
// snapshot's, and its unsent writes — the facts of its own transactions
// above what the relay holds (the sent watermark, after the handshake
// lowered it, or the handshake_ack's siteHlc when above it: a push the
// relay appended whose acknowledgement was lost), cells and tombstones —
// are kept and pushed after the catch-up pull. The header's horizon is
// pruned with the same bound. A first
// bootstrap, one after a diverged or unverified history, one RequestSnapshot
// asks for, and a checkpoint of another relay log merge, since the relay
// may then lack facts this device holds (from ApplyChanges, kept by an
// earlier merge, a skipped transaction) — unless this replica holds its own
// cursor in that relay log and the snapshot's header carries a tombstone
// horizon above the one it applied there: the relay then pruned the tombstones of rows deleted before a
// mark this replica never applied, a merge would keep those rows for good,
// and the transfer replaces as above from its header on (a resumed merging
// transfer replaces its remaining tables; the simulator's seed 96). Facts
// the relay never had are then lost from this device; they could not reach
// any other (a client pushes only its own), so that keeps the replicas
// converged. Known gap: a skipped transaction
// lies below the sent watermark, so a replacing snapshot drops its facts
// from this device. The mode is stored in the checkpoint: an
// interrupted replacing transfer resumes replacing. The cursor to pull from afterwards is the header's, or,
// when the header resumes the stored checkpoint (same snapshotId), the
// checkpoint's; it is stored once the footer is applied. While a snapshot
// lands, pushes wait and changes and push_changes frames are dropped
// (the cursor does not move, so the catch-up pull fetches them again). A
// transfer that receives no chunk for the stall timeout (60 s) closes the
// socket; the reconnect resumes it from the checkpoint. A failed transfer
// (SNAPSHOT_ERROR, a chunk the engine refuses, a stall) also counts toward
// the reconnect backoff (see below), and so does a session that ended, for
// any reason (a frame above MaxMessageSize, a dropped connection), while a
// transfer was in flight that applied no chunk beyond the furthest any
// earlier attempt at that snapshot reached (a resume starts its table
// again): it made no progress, is reported (ErrorReported with
// ErrSnapshotStalled wrapping the cause; SyncState.lastError in the
// browser) and the next attempt backs off further, so a transfer that
// cannot proceed is never retried in a tight loop. An attempt that gets
// further resets the count. SNAPSHOT_REQUIRED, the relay's answer to
// a cursor it cannot serve, starts a snapshot in the same session.
// RequestSnapshot while a transfer is in flight joins it: exactly one
// get_snapshot goes on the wire. With this replica's own cursor (stored and
// not voided, a snapshot's, or one a pull in this session advanced) it
// pulls from that cursor first and asks for the snapshot once caught up, so
// that a device offline past the horizon takes the replacing
// SNAPSHOT_REQUIRED path above rather than merging a snapshot that lacks
// the rows deleted meanwhile (the simulator's seed 48). A session that
// ends before the pull caught up leaves the request to the next one; a
// pull that fails starts the snapshot at once (it merges unless its header
// carries a horizon above the one this replica applied in that log, see
// "Snapshots").
//
// # Pulling: the cursor
//
// The received watermark is the relay's arrival sequence of the last
// ChangeSet applied (the cursor). A changes reply is applied with
// engine.Apply and its cursor stored in the same kv transaction
// (ApplyOptions.State), so the cursor moves exactly when the changes it
// covers land; an empty reply stores its cursor alone. The cursor never moves
// back, except to a snapshot's.
//
// A push_changes {cursor: p, changeSets: n of them} carries the sequences
// p−n+1 … p. With the client at cursor c:
//
//   - p ≤ c: nothing new; ignored.
//   - p−n ≤ c < p: it continues the log; applied, and the cursor becomes p
//     in the same transaction.
//   - c < p−n: a gap (a frame was dropped, or this client's own push took
//     the sequences between): not applied (a tombstone horizon mark may
//     lie in the gap, and what follows a mark must be applied after its
//     pruning: see "The tombstone horizon"), the cursor stays, and
//     get_changes {since: c} pulls the gap and the push's ChangeSets in
//     order. A gap seen while a pull is in flight is pulled once that pull
//     ends.
//
// # The tombstone horizon
//
// Replicas do not prune tombstones by their own clocks: one that pruned a
// tombstone would let a late change (an old update from a device that was
// offline) revive the row, one that kept it would not, and they would
// disagree for good. The relay prunes at horizon marks of its log (wire's
// "Tombstone horizon", docs/design.md § Retention), and the client
// follows them at the same point of the log:
//
//   - changes and push_changes carry the marks of their range. Marks at the
//     position before the message's first ChangeSet (since for changes,
//     p−n for a push) are applied first; marks at its cursor after its
//     ChangeSets, once the cursor is stored. A relay ends a changes page
//     at a mark, so there are no others (a mark between is a protocol
//     error, the pull retried after a backoff; in a push it makes the push
//     out of order, pulled instead).
//   - Applying a mark prunes the tombstones deleted before its wall
//     (engine.PruneTombstonesWith), except this replica's own facts the
//     relay did not hold when it made the mark (above the mark's siteHlc;
//     above the sent watermark for a mark without one, made before
//     version 4): its own deletes (pruned, they would never be pushed)
//     and its own cells of a delete-wins row whose tombstone goes (the
//     row keeps them alone, as the relay will once they arrive); a later
//     mark prunes them once its siteHlc covers them. A kept own deletion
//     that superseded an older one (received after this replica deleted
//     the row) stands where the relay's row still had the older one:
//     when the mark prunes that one, a delete-wins row keeps only the own
//     deletion and the own cells above siteHlc, as the relay, which
//     pruned the row and then applied the own deletion. When the mark's
//     siteHlc is below the highest of its own transactions it had
//     pushed (the sent watermark, the handshake_ack's siteHlc, a push in
//     flight), the relay got those after the mark and applies them after
//     its pruning, and this replica's rows may no longer hold all of their
//     facts (a later fact of another site superseded one, and the mark
//     pruned that fact): its pulls ask them back (get_changes' ownAbove
//     and ownUpTo, wire's "Own ChangeSets after a mark") until the next
//     mark, and it merges them in their place in the log
//     (engine.ApplyOptions.MergeOwn), as the relay did. A changes page
//     whose leading marks set that range was read without it and is not
//     applied; the pull asks again. Then it
//     stores the wall as this relay log's
//     horizon (sync:<serverSiteId>/<databaseId>:horizon). A mark whose wall
//     is not above the stored horizon is skipped, so marks carried again
//     (every page from a mark's cursor repeats it) apply once. A crash
//     between the steps replays correctly: the cursor stored at a mark
//     makes the next pull start there, which serves the mark again, and
//     pruning is idempotent.
//   - A snapshot bootstrap prunes at the header's horizon and stores it
//     (replacing any earlier one) when the header arrives, before any of
//     its rows merge: the rows may carry tombstones below it of late
//     deletes the relay applied after its mark, which every replica keeps
//     until the next mark.
//
// A change older than the horizon for a deleted row may revive it (a
// partial row), but alike on every replica. A pull the marks of which fail
// to apply (a storage failure) is retried like a failed pull.
//
// Only one get_changes is in flight at a time. A pull whose changes the
// engine refuses (clock drift, malformed) or that the relay fails
// (GET_CHANGES_ERROR) is reported and retried after a backoff delay
// (min(1 s·2^k, 60 s) plus jitter, k counting consecutive failures).
//
// # Answers that make no progress
//
// Asking again at once after an answer that does not move the client
// forward would loop as fast as the relay answers (a proxy echoing since
// as the cursor made a client send 18,000 get_changes in 3 s). A changes
// reply to get_changes {since: s} must keep wire's paging rules: cursor ≥
// s + the number of its ChangeSets; when more is true, cursor > s and at
// least one ChangeSet; when more is false, cursor at least the highest
// push_changes cursor the client had seen when it sent the request. A
// reply breaking them is not applied (the cursor stays) and is reported as
// ErrProtocol; the pull is retried after the backoff delay above, and the
// state is Syncing until a pull succeeds. The same holds for pushes: the
// relay answers requests in order, one frame each, so an apply_result with
// another requestId than the push in flight answers that push wrongly; it
// is reported as ErrProtocol (the watermark does not move) and the push is
// sent again after a backoff delay under the next requestId. A relay that
// answers nothing is covered by the request timeout (see "Keepalive and
// timeouts"). The snapshot path has its own stall and failure rules (see
// "Snapshots").
//
// # Pushing: the sent watermark and the debounce
//
// The sent watermark is an HLC: everything this replica minted up to it is
// stored on the relay. A push is apply_changes {requestId, changes} with
// engine.ChangesSince(sent, PushLimit, ChangesFilter{OnlyLocal: true}), whole
// transactions, halved until the frame fits MaxMessageSize (the rest
// follows in the next push). requestIds are
// "apply-1", "apply-2", … counting over the Client's life. Only one push is
// in flight at a time. The watermark moves only on the apply_result whose
// requestId is the push in flight, only forward, to the highest ChangeSet hlc
// of that push, and is stored (engine.SetState); a stale, duplicated or
// unknown ack while no push is in flight changes nothing, and one with
// another requestId while a push is in flight is a protocol error (see
// "Answers that make no progress"). An error frame answering the
// push (its requestId, or APPLY_CHANGES_ERROR, CLOCK_DRIFT or
// APPLY_CHANGES_REFUSED without a requestId while it is in flight) is
// reported and the push retried after a backoff delay, as for pulls, and
// the state is Syncing until a push is acknowledged — except
// APPLY_CHANGES_REFUSED with the push's requestId, and MESSAGE_TOO_LARGE
// while a push is in flight (see "Transactions that cannot be synced"). After a full push (the limit reached) the next batch
// is read while the relay works, and sent when the ack comes.
//
// The relay sends no push_changes of a push back to its sender; the
// apply_result says where the log holds what the push appended (wire
// version 9, wire's "Acknowledged position": first, cursor, chain, and
// the horizon marks at first-1 … cursor). When those entries continue the
// cursor (first-1 ≤ cursor < last) the client applies the marks at first-1,
// stores last and its chain value as its cursor, and applies the marks at
// last, as for a push_changes of entries it holds; so a device that only
// writes keeps its cursor at the log's head (a stale one would be answered
// SNAPSHOT_REQUIRED after retention compaction, and a sealed device would
// never upload a checkpoint). Otherwise (other devices' entries between,
// or a mark after which it asks its own ChangeSets back and this push's
// are among them) the cursor stays and it pulls.
//
// Local changes are debounced (docs/design.md § Client behaviour):
// the first change after a quiet period is pushed at once and opens a window
// of DebounceWindow (50 ms); changes inside the window wait, each
// extending it, and go out together when it passes quietly, or when the
// oldest of them has waited MaxWait (250 ms). A push opens a new window.
// A push that comes due while another is in flight goes out when that one's
// ack comes.
//
// # Transactions that cannot be synced
//
// Some local transactions can never be pushed as they are, and retrying
// them would hold every later push behind them forever:
//
//   - the relay refuses them for their content with APPLY_CHANGES_REFUSED
//     (a malformed ChangeSet, a row or value too large for it to store, more
//     changes and migrations than it takes in one apply_changes — 100,000
//     by default —, a schema migration contradicting its schema);
//   - one transaction alone encodes above Options.MaxMessageSize, or does
//     not encode at all;
//   - the relay answers MESSAGE_TOO_LARGE (its frame limit is below
//     MaxMessageSize; it could not read the frame, so the answer has no
//     requestId — after the handshake only a push can be that large) for
//     a push of one transaction. A frame over twice the relay's limit
//     closes the connection instead, and the push is retried after
//     reconnecting: keep MaxMessageSize at most the relay's limit.
//
// On APPLY_CHANGES_REFUSED or MESSAGE_TOO_LARGE for a push of several
// transactions, the client
// splits it: it pushes the first half, then the rest, and so on until the
// refused transaction goes alone (no backoff delay: each step is
// answered at once; only the isolated refusal is reported). A transaction
// refused alone, too large or not encodable is skipped: the client
// reports it as an ErrorReported event whose Err is a *RefusedError
// (TransactionID, HLC, the relay's Code and Message; errors.Is ErrRefused,
// and ErrTooLarge for the size), moves the sent watermark past it and
// stores it, exactly as an ack would, and pushes the transactions after
// it. The skipped transaction stays in this replica — nothing is deleted
// or rolled back, its rows read as written — but it is not synced: no
// other replica receives it, and this client will not push it again
// (Pending no longer counts it). A later write to the same rows is a new
// transaction and syncs normally.
//
// So split bulk imports into transactions that each encode under the
// relay's frame limit (16 MiB by default, MaxMessageSize here must not
// exceed it): rows of the GeoNames cities shape (a generated UUIDv7 id
// and six columns: a name, two reals, three short texts) encode to about
// 1,180 bytes each as a ChangeSet, so 16 MiB holds about 14,000 of them;
// transactions of 10,000 rows of that shape, or 1,000 to be comfortable,
// stay well under both that limit and the relay's 100,000 changes per
// apply_changes. Wider rows or longer values fit fewer.
//
// # Reconnecting
//
// Every unintended end of a session (a close, a network error, a timeout, a
// protocol violation) is followed by a reconnect after
// min(BackoffBase·2^n, BackoffMax) · (1 + BackoffJitter·r), r from
// Options.Rand: 1 s, 2 s, 4 s … 60 s plus up to 25 %. n counts attempts since
// the last session whose handshake_ack arrived (a relay that accepts sockets
// and refuses handshakes sees growing delays); a session that ended with a
// failed snapshot transfer makes n at least the number of consecutive
// failed transfers, and one that ended with a protocol violation
// (ErrProtocol) at least the number of consecutive sessions that did (a
// relay breaking the protocol after every handshake is redialed after 2 s,
// 4 s, 8 s …, not every second). A session the relay ends for exceeding its rate limits
// (RATE_LIMITED, reported, then close status 1008; or 1008 alone) does not
// reset n, so a client that keeps exceeding them waits longer each time.
//
// Fatal errors stop the client in the Error state without reconnecting: an
// error frame with fatal set (or, from a relay predating the flag, one of
// wire's known-fatal codes: AUTH_FAILED, MISSING_DATABASE_ID,
// PROTOCOL_VERSION_MISMATCH, ALREADY_AUTHENTICATED), a close status 4001 to
// 4004 without its error frame, a protocol version mismatch in the ack, an
// ack for another database, and a closed engine. Every other error frame is
// transient: reported as an ErrorReported event (a push's refusal as its
// isolated transaction's *RefusedError); the session goes on.
// Disconnect stops reconnecting; Connect starts again (leaving Error).
//
// # Verifying the relay
//
// The relay may have lost data behind the client's back: restored from an
// older copy of its data directory (same serverSiteId, an older log that
// hands out again, for other ChangeSets, cursors this client holds), its
// log truncated or replaced. The client does not take "synced" on faith
// (wire's "Verifying the relay's log"):
//
//   - It keeps, with its cursor, the relay's chain value at that cursor
//     (changes.chain, push_changes.chain) and presents both in the
//     handshake, with the tombstone horizon it applied in that log
//     (protocol version 8: a copy restored from before a mark the relay
//     made at its head holds the same chain value there, and only the
//     horizon tells that this replica pruned at a mark the relay lost).
//     When the ack says history "diverged", the cursor (and an
//     interrupted snapshot's checkpoint) is discarded and the client
//     bootstraps again: the snapshot merges into the replica, so nothing
//     local is lost, and it pulls from the snapshot's cursor. A
//     snapshot's cursor gets its chain value from snapshot_complete
//     (protocol version 10), or else from the first pull after it; a
//     cursor presented without one that the relay's log holds is judged
//     "unverified" (version 10) and discarded like a diverged one: a
//     relay restored from an older copy may have grown past it again with
//     other entries, which pulling from it would skip for good. An
//     interrupted snapshot's checkpoint so judged is resumed
//     (resume_snapshot checks its position).
//
//   - It keeps the highest hlc the relay acknowledged (the acknowledged
//     watermark; a skipped transaction moves the sent watermark only).
//     When the ack's siteHlc, the newest transaction of this replica the
//     relay holds, is below it, the sent watermark and the acknowledged
//     one drop to siteHlc, and every local transaction above it is pushed
//     again once the session is synced (the relay deduplicates). Pending
//     counts them meanwhile.
//
//   - Either finding, or a log this replica holds no cursor in while it
//     last synced with another one (a relay whose data directory was
//     deleted is a new log, a new serverSiteId), starts a repair push when
//     the replica holds facts of other sites (wire's "Repair pushes",
//     protocol version 6): once synced, after its own transactions, it
//     pushes every fact of other sites it holds (engine.PeerFacts), page
//     by page, marked repair; the relay appends those that change its
//     merged replica, and every replica, their author and this one
//     included, pulls them (this one merges them in their place in the
//     log, after the marks before them, as every other replica does). So a write that only another device still holds (its
//     author is gone for good, or pruned it) is not lost. The progress is
//     stored (sync:…:repair); a repair resumes after a lost connection,
//     but starts again from the beginning after a horizon mark that kept
//     facts of other sites (it may have pushed them before the mark, and
//     the relay pruned them there: the simulator's seed 7143).
//     The state reads Synced during a repair as during any push.
//
// Either finding is reported once per session as an ErrorReported event
// whose Err matches ErrRelayDiverged, saying what was found. Once every
// device that holds a fact has reconnected, every device, and a fresh
// one, holds every row. A relay whose data directory was deleted is a new
// log: the client pushes everything, its own transactions and, by the
// repair, the facts of others it holds, and pulls the new log from the
// start. A relay of protocol version 1 states nothing: the client of
// version 2 cannot talk to it (PROTOCOL_VERSION_MISMATCH).
//
// One window remains unchecked: a relay restored from a copy older than
// its retention horizon cannot judge cursors it pruned (those get
// SNAPSHOT_REQUIRED anyway). (Before protocol version 10 a second one
// did: a snapshot's cursor stored before any pull brought its chain
// value was taken on faith; the simulator's seed 4297.)
//
// # Sealed databases
//
// With Options.Sealer set (natively a *seal.Keyring, in the browser a
// *seal.WebKeyring: a current key and older ones), the client syncs a sealed database (docs/design.md §
// Sealed databases; wire's "Sealed databases"; docs/SECURITY.md): its
// handshake says sealed, and an ack or an error saying otherwise
// (SEALED_MISMATCH) stops it (fatal). It seals each ChangeSet of a push
// into an envelope at push time, outside any kv transaction (the Sealer
// may block, as WebCrypto does in the browser), and opens each ChangeSet
// of a changes or push_changes frame before the apply transaction. A
// push_changes whose envelopes do not all open is not applied; the pull it
// triggers handles them:
//
//   - An envelope no key opens (its key id names none of the Sealer's keys:
//     a wrong key, or a key another device rotated to) stops the session's
//     pulls: nothing of that page is applied, the cursor stays before it,
//     the envelopes stay held in the relay's log, and ErrDecryptFailed
//     (DECRYPT_FAILED) is reported once. The state is Syncing, not Synced;
//     nothing retries in a loop. SetSealer with the right keys drops the
//     session, and the next one applies them. While a session holds such
//     envelopes it pushes nothing (below).
//   - An envelope that does not authenticate under the key its key id
//     names (altered, or moved to another database, site, transaction or
//     HLC), or opens to another ChangeSet, is refused: reported as
//     ErrEnvelopeInvalid (ENVELOPE_INVALID), left out, and the rest of the
//     page applies; the cursor moves past it.
//
// A sealed client pushes nothing sealed under a key the database is not
// known to use, so that one device given a wrong key (a mistyped
// passphrase) cannot stop every other one (they would hold its envelopes,
// DECRYPT_FAILED). A session pushes (and uploads checkpoints) only once its
// Sealer's key is proven, and never while it holds envelopes no key of its
// opens (the point above). The key is proven when the session opens an
// envelope pulled from the relay (changes, push_changes) or a part of a
// sealed checkpoint, when its first pull finds the relay's log empty (the
// first device of a new database: its key becomes the database's), or at
// the handshake when one of the Sealer's key ids (seal.Sealer's KeyIDs) is
// among those stored as the database's (sync:keys#<databaseId>: the key
// ids of envelopes this replica opened, and the current key of each proven
// session; so a restart with the same keys pushes at once, even with
// nothing new to pull). Until then the session's writes stay pending
// (Pending counts them), and the state is Syncing, not Synced; they go out,
// sealed with the current key, once the key is proven: a pull that opens
// an envelope of another device, or SetSealer with the right keys. A
// device given a wrong key that meets nothing to open (caught up, nobody
// else writing) thus waits, holding its writes, rather than push what no
// other device opens; a device given a right key with a stored record
// pushes at once.
//
// Rotation and a missed key: a device that holds envelopes sealed under a
// key another device rotated to, which it was not given, stops pushing
// too, though its old key is still the database's (the others keep it to
// open older envelopes, so its pushes would be readable): it cannot tell a
// missed rotation from other devices' wrong key, and pushing under the old
// key after a rotation would extend what a leaked old key opens. Its
// writes wait, pending, until SetSealer gives it the new key; they are
// then sealed with it. A rotated-to key is proven by the old key it comes
// with (seal.NewKeyring(newKey, oldKey) opens the old envelopes, or the
// old key id is stored), and stored as the database's once proven, so a
// later keyring without the old key is proven too.
//
// A sealed client takes no plaintext content from the relay: a ChangeSet
// without an envelope is refused as above (ErrEnvelopeInvalid), and the
// only plaintext snapshot it takes is the empty one at cursor 0 that a
// relay without a sealed checkpoint streams (a header without tables,
// rows or horizon, an empty schema, a footer counting nothing); any other
// snapshot_chunk is a protocol violation (ErrProtocol, reported; nothing
// of it applied; the session ends and the next one backs off).
//
// A sealed client sends no repair pushes (wire's "Repair pushes": the
// relay cannot merge envelopes): after the relay lost history it pushes
// back its own transactions and bootstraps from the newest sealed
// checkpoint, and facts only another device than their author holds are
// not restored.
//
// Rotation: SetSealer(seal.NewKeyring(newKey, oldKey)) seals from then on
// with the new key and still opens the old one's envelopes. A new device
// bootstraps from the newest sealed checkpoint and the log after it (the
// whole log while there is none), so it needs every key those were sealed
// with. The relay never sees a key, and the client stores none.
//
// # Sealed checkpoints
//
// The relay cannot snapshot a sealed database, so devices upload sealed
// checkpoints (wire's "Sealed checkpoints"). A sealed client that is
// caught up (after a pull that says more = false, or a push_changes
// continuing its cursor), with nothing above its sent watermark, no
// push, snapshot or upload in flight and no key missing, uploads one
// when its cursor is Options.CheckpointChanges (1000) ChangeSets past the
// relay's newest checkpoint (handshake_ack.checkpointCursor), or past it
// at all once that one is Options.CheckpointInterval (24 h) old: its
// engine.Snapshot at its cursor, header.horizon its applied tombstone
// horizon, each chunk sealed into one put_checkpoint part, one in flight
// at a time (rows chunks sized so that a part fits MaxMessageSize). A
// CheckpointUploaded event reports the relay's stored:true. A horizon mark
// applied meanwhile abandons the upload (its rows would straddle the
// mark); CHECKPOINT_REFUSED, or a part that cannot be made, abandons it
// for the session. Native and browser clients upload alike; in the
// browser each chunk is read in a kv read transaction that ends before
// the chunk is sealed (WebCrypto) and sent, never inside one.
//
// A bootstrapping sealed client sends get_snapshot (never
// resume_snapshot, which would name its tables); the relay streams the
// newest checkpoint's parts. The client opens each, checks that it
// follows the previous one (a part missing or out of order fails the
// transfer like a plain snapshot's missing chunk: retried after a backoff
// delay), and applies the chunk inside exactly as a plain snapshot's
// chunk (progress events, the stall timeout, the engine's checkpoint). After each table the engine completes it stores where to
// resume (sync:<serverSiteId>/<databaseId>:sealedsnap: the checkpoint,
// the next part, the tables and rows done); an interrupted transfer asks
// for that checkpoint from that part (get_snapshot's checkpointId and
// fromPart), and hands the engine the header with the tables not yet
// completed and the footer with the resumed stream's counts. A stored
// point that does not match the engine's checkpoint is ignored (every
// part is streamed again).
//
// A part no key of the client opens (ErrDecryptFailed) is held like the
// log's envelopes: nothing more is applied, it is reported once and the
// session pulls no more until SetSealer. A part that does not
// authenticate (ErrEnvelopeInvalid: altered, renumbered, spliced from
// another checkpoint) or holds a malformed chunk refuses the checkpoint:
// reported as
// ErrCheckpointRefused wrapping the cause, remembered for the client's
// life, the rest of the stream ignored, the engine's snapshot checkpoint
// discarded (rows already applied stay: they are authentic), and at
// snapshot_complete the client pulls the log from cursor 0 instead. When
// the relay pruned the log below that checkpoint, the pull gets
// SNAPSHOT_REQUIRED: the client reports it (ErrCheckpointRefused) and
// pulls no more in that session, until a device uploads a newer one. A
// relay that answers SNAPSHOT_REQUIRED to the cursor of the checkpoint it
// just streamed (a newer one was stored and the log pruned below it while
// this one streamed; or a relay serving an old one) gets the bootstrap
// again, up to 3 times in a session; then the client reports ErrProtocol
// and pulls no more in that session.
//
// A replacing bootstrap from a sealed checkpoint (SNAPSHOT_REQUIRED at this
// replica's own cursor, or a header under a horizon it never applied:
// "Snapshots") drops the own facts up to the sent watermark that the
// snapshot lacks, as for a plain snapshot. But a sealed checkpoint stands
// for the log up to its cursor only, and this replica's own transactions
// the relay appended after it are in the log after that cursor, which the
// relay leaves out of what it sends their author. So the client asks them
// back (get_changes' ownAbove zero, ownUpTo the watermark kept; stored as
// after a mark, sync:<serverSiteId>/<databaseId>:echo), and the catch-up
// pull merges them in their place (otherwise they would be gone from this
// replica for good, while the relay and the other devices hold them).
//
// # Keepalive and timeouts
//
// Every PingInterval (30 s) the client sends ping if it received nothing,
// or sent nothing, for that long (the relay closes connections that send it
// nothing for its idle timeout, 90 s by default, even while it pushes to
// them); a session that received nothing for twice the interval is closed
// (ErrTimeout), as is one whose get_changes or apply_changes stayed
// unanswered for RequestTimeout (60 s), or whose dial and handshake took
// longer than HandshakeTimeout (30 s). The client answers the relay's pings.
//
// # Timing
//
// Every timer goes through Options.Clock and jitter through Options.Rand, so
// tests drive them with a fake clock. The defaults are the constants
// DefaultDebounceWindow (50 ms), DefaultMaxWait (250 ms), BackoffBase (1 s),
// BackoffMax (60 s), BackoffJitter (0.25), DefaultPingInterval (30 s),
// DefaultHandshakeTimeout (30 s), DefaultSnapshotStallTimeout (60 s) and
// DefaultRequestTimeout (60 s); Options overrides each.
//
// # Persisted state
//
// The client keeps its watermarks in the engine's state (engine.State,
// engine.SetState, ApplyOptions.State), in the replica's own store, under
// keys namespaced by the relay log they belong to: the relay's site id
// (handshake_ack.serverSiteId, base64url, 22 characters) and the database
// id. A relay log is identified by these, not by the URL, as wire's
// documentation requires: the same relay under two URLs shares its
// watermarks, and a relay whose storage was replaced (a new serverSiteId) is
// a new log, to which this replica pushes everything again.
//
//	sync:<serverSiteId>/<databaseId>:cursor  the cursor, decimal ASCII ("4211")
//	sync:<serverSiteId>/<databaseId>:chain   the relay log's chain value at a
//	                                         cursor, "<cursor> <chain>" ("4211
//	                                         I-zgrM9zk1Rcq6zDbIfU6Q"); taken only
//	                                         when its cursor is the stored one
//	sync:<serverSiteId>/<databaseId>:sent    the sent watermark, an HLC in
//	                                         wire's text form (40 characters)
//	sync:<serverSiteId>/<databaseId>:acked   the highest hlc the relay
//	                                         acknowledged, same form; only
//	                                         while it is below the sent
//	                                         watermark (after a skipped
//	                                         transaction), else absent
//	sync:<serverSiteId>/<databaseId>:horizon the tombstone horizon applied: the
//	                                         wall (ms, decimal) of the last horizon
//	                                         mark applied or of the bootstrapping
//	                                         snapshot's header; absent: none. One
//	                                         that does not decode is discarded (the
//	                                         marks apply again)
//	sync:<serverSiteId>/<databaseId>:echo    own transactions asked back after
//	                                         the last mark applied (see "The
//	                                         tombstone horizon"), or by a pull
//	                                         from 0 (see "A session"): "<ownAbove>
//	                                         <ownUpTo>", two HLCs in wire's text
//	                                         form; absent: none. One that does not
//	                                         decode is discarded
//	sync:<serverSiteId>/<databaseId>:repair  a repair push pending (wire's "Repair
//	                                         pushes"): "@" and the engine.PeerFacts
//	                                         position to resume from, base64url
//	                                         ("@" alone: the beginning); absent:
//	                                         none. Written at a handshake that finds
//	                                         the log lost history (diverged or
//	                                         unverified cursor, siteHlc below the
//	                                         acknowledged watermark, no cursor in a
//	                                         log other than the last one seen) while
//	                                         this replica holds facts of other
//	                                         sites; one that does not decode starts
//	                                         the repair again
//	sync:<serverSiteId>/<databaseId>:sealedsnap where an interrupted transfer
//	                                         of a sealed checkpoint resumes:
//	                                         "<checkpointId> <snapshotId>
//	                                         <fromPart> <tables> <rows>" (ids as
//	                                         quoted Go strings); absent: none.
//	                                         One that does not decode or match
//	                                         the engine's checkpoint is ignored
//	sync:keys#<databaseId>                   sealed databases: the key ids (hex,
//	                                         space-separated) the database is
//	                                         known to use: of envelopes and
//	                                         checkpoint parts this replica opened,
//	                                         and the current key of each session
//	                                         whose key was proven (see "Sealed
//	                                         databases"). Not secret: every
//	                                         envelope shows its key id
//	sync:relay:<url>#<databaseId>            "sync:<serverSiteId>/<databaseId>" last
//	                                         seen at that URL (lets Pending find
//	                                         the watermark before a handshake)
//	sync:last#<databaseId>                   "sync:<serverSiteId>/<databaseId>" last
//	                                         seen for that database at any URL:
//	                                         at a URL never used, the handshake
//	                                         presents the position in that log
//	                                         (a relay moved to a new address)
//
// All survive Disconnect, Close and restarts, and are shared by every tab
// over one IndexedDB database. The snapshot checkpoint is the engine's own
// (model.SnapshotCheckpoint).
//
// A value that does not decode (a stray write, a partial upgrade, a bug of
// an older version) never stops syncing: at the handshake_ack it is
// deleted, reported once as an ErrorReported event whose Err matches
// ErrSyncStateReset (naming the key and why), and rebuilt. A lost cursor
// or chain value: the client bootstraps again by snapshot (its own unsent
// transactions stay: a snapshot merges, and they are above the sent
// watermark). A lost sent or acknowledged watermark: both are rebuilt from
// the ack's siteHlc, and every local transaction above it is pushed again.
// A snapshot checkpoint that does not decode (engine.ErrStorageFormat) is
// discarded and the snapshot taken again. Pending and PendingCount read an
// undecodable sent watermark as none (everything counts as pending) until
// the next handshake repairs it.
//
// # Events
//
// Subscribe delivers StateChanged, SnapshotProgressed, ErrorReported,
// PushAcked, ChangesApplied and CheckpointUploaded events in order on one
// goroutine the client owns (never the caller's, never the session's),
// from an unbounded queue, so a slow subscriber delays later events but
// never the sync.
//
// # Goroutines
//
// New starts the event goroutine; Connect starts the connection loop; each
// session adds a reader and a writer goroutine. Every one of them selects on
// a context that Disconnect or Close cancels, including while waiting out a
// backoff, and Disconnect and Close wait for them to end (litestream's
// replica.go is the model). A Client is safe for concurrent use.
//
// # The browser
//
// Natively the socket is github.com/coder/websocket. In the browser
// (GOOS=js) the client uses the page's own WebSocket object through
// syscall/js instead (socket_js.go, behind the small socket interface of
// socket.go; the native side is socket_notjs.go). The design and the issue
// that introduced this package asked for coder/websocket in both builds,
// but its browser API links net/http (its Dial returns an *http.Response),
// which brings crypto/tls, crypto/x509, the elliptic curves, math/big and
// mime into replica.wasm: measured with `-trimpath -ldflags="-s -w"`,
// coder/websocket cost 1.57 MB raw, 455 KB gzip -9 and 355 KB brotli of
// an 8.27 MB (2.23 MB gzip) build. The browser socket keeps the same
// behaviour: text frames and binary frames (as ArrayBuffers) in and out,
// the frames that arrived before the
// peer's close read first, the peer's close status (4001–4004 are fatal as
// natively), the read limit (MaxMessageSize; a longer frame ends the
// session), context cancellation of the dial and of reads; a binary
// message that is not a binary frame ends the session as a protocol
// violation. Connect reads the relay URL
// with the browser's own URL parser (new URL), as the WebSocket
// constructor does, instead of net/url (another 190 KB of replica.wasm);
// it refuses the same URLs as natively where the two parsers differ on
// what has a host ("ws:///sync"), and maps http(s) to ws(s).
//
// Both offer the relay permessage-deflate (RFC 7692): the browser on its
// own (Chromium: "permessage-deflate; client_max_window_bits"), natively
// as Options.Compression says (by default without context takeover, which
// a relay accepts by default: relay "Compression", where the bytes it
// saves and what it costs are measured). Frames of 512 bytes or more then
// travel deflated; the wire's JSON is the same.
//
// A browser lets a page close a socket only with status 1000 or
// 3000–4999, so the client always closes with 1000 there (natively, a
// broken session is dropped without a closing handshake), and closing waits
// for the browser's close event. The browser gives a page no flow control:
// frames are queued as they arrive until the session reads them, and the
// browser buffers what the client sends.
//
// A js.FuncOf callback must not wait (the browser's event loop, which
// delivers what it would wait for, is blocked while it runs): Notify,
// RequestSnapshot, State, Subscribe and Connect never block and may be
// called from one; Disconnect, Close and Pending wait (for the socket to
// close, for IndexedDB) and must be called from a goroutine, as jsbridge
// does. Subscribe callbacks run on the
// client's own goroutine and may call into JavaScript.
//
// # Errors
//
// Errors of the relay are *wire.Error (RelayError extracts one). Clock drift
// is errors.Is(err, model.ErrClockDrift) in both directions: the relay's
// CLOCK_DRIFT refusing a push (this device is ahead) and the engine's
// *model.DriftError refusing changes from the relay (this device is
// behind). The client's
// own are ErrDecryptFailed and ErrEnvelopeInvalid (sealed databases, see
// "Sealed databases"; package seal's errors), ErrCheckpointRefused ("Sealed
// checkpoints"), ErrNotSealed (SetSealer),
// ErrProtocolVersion, ErrProtocol, ErrTimeout, ErrSnapshotStalled,
// ErrTooLarge, ErrRefused (a *RefusedError: a local transaction skipped,
// see "Transactions that cannot be synced"), ErrSyncStateReset and
// ErrRelayDiverged (reported, repaired: see "Persisted state" and
// "Verifying the relay") and ErrClosed; engine and
// network errors are wrapped with what the client was doing.
package client
