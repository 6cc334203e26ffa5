//go:build !js

// Package relay is Replica's relay server: the WebSocket endpoint replicas
// sync through. It keeps, per database (tenant), a merged replica and the
// arrival log that numbers every accepted ChangeSet with a gap-free cursor;
// it answers pulls from that log, fans pushes out to the database's other
// connections, streams snapshots to new devices, and prunes what is older
// than the retention horizon. The protocol it speaks is package wire's (its
// package documentation is the reference); DESIGN.md § Sync and § The relay
// say why it works this way.
//
// # Running
//
//	go run ./cmd/relay
//
// starts a relay with no configuration: it listens on 127.0.0.1:8080, keeps
// its databases under ./data, serves ./web at / (the demo app), accepts every
// client for every database (-auth none, logged as a warning), and prints the
// URL to open. Stop it with Ctrl-C (SIGINT) or SIGTERM: see "Shutdown".
//
// In a Go program:
//
//	srv, err := relay.New(relay.Config{DataDir: "/var/lib/replica", Auth: tokens})
//	err = srv.ListenAndServe(ctx, ":8080", nil) // returns after ctx ends, shut down
//
// or mount srv.Handler() in your own http.Server and call srv.Close when it
// stops (Close also closes the WebSockets, which http.Server.Shutdown does
// not track).
//
// # Flags
//
// Every flag of cmd/relay has an environment variable, REPLICA_RELAY_ and
// the flag's name in upper case with '-' as '_'; a flag given on the command
// line wins over its variable. The Config field of the same meaning is
// named.
//
//	-addr                  REPLICA_RELAY_ADDR                  127.0.0.1:8080  listen address (":8080": every interface)
//	-data                  REPLICA_RELAY_DATA                  data            data directory (Config.DataDir)
//	-web                   REPLICA_RELAY_WEB                   web             directory served at /, "" for none (WebDir)
//	-auth                  REPLICA_RELAY_AUTH                  none            none or tokens (Auth)
//	-token-file            REPLICA_RELAY_TOKEN_FILE                            token file for -auth tokens
//	-allow-origin          REPLICA_RELAY_ALLOW_ORIGIN                          other origins allowed to connect from a browser (OriginPatterns)
//	-max-frame             REPLICA_RELAY_MAX_FRAME             16MiB           largest frame in bytes (MaxMessageSize)
//	-max-apply-changes     REPLICA_RELAY_MAX_APPLY_CHANGES     100000          changes per apply_changes (MaxChangesPerApply)
//	-page-changes          REPLICA_RELAY_PAGE_CHANGES          1000            changes per changes/push_changes frame (PageChanges)
//	-send-queue            REPLICA_RELAY_SEND_QUEUE            64              frames queued per connection (SendQueue)
//	-idle-timeout          REPLICA_RELAY_IDLE_TIMEOUT          90s             close silent connections (IdleTimeout)
//	-write-timeout         REPLICA_RELAY_WRITE_TIMEOUT         10s             close connections that take no frame (WriteTimeout)
//	-handshake-timeout     REPLICA_RELAY_HANDSHAKE_TIMEOUT     10s             close connections without a valid handshake by then (HandshakeTimeout)
//	-max-connections       REPLICA_RELAY_MAX_CONNECTIONS       10000           connections open at once; more get HTTP 503 (MaxConnections)
//	-retention             REPLICA_RELAY_RETENTION             30d             arrival log and tombstone horizon (Retention)
//	-maintenance-interval  REPLICA_RELAY_MAINTENANCE_INTERVAL  1h              pruning period (MaintenanceInterval)
//	-db-idle-close         REPLICA_RELAY_DB_IDLE_CLOSE         5m              close unused database files (DatabaseIdleClose)
//	-shutdown-timeout      REPLICA_RELAY_SHUTDOWN_TIMEOUT      10s             graceful shutdown bound (ShutdownTimeout)
//	-log-level             REPLICA_RELAY_LOG_LEVEL             info            debug, info, warn, error
//	-log-format            REPLICA_RELAY_LOG_FORMAT            text            text or json (log/slog)
//
// Durations take Go's units (90s, 5m, 720h); -retention also takes days
// (30d); -max-frame takes a byte count with an optional KiB, MiB or GiB.
//
// # Endpoints
//
//	GET /sync      the WebSocket endpoint (JSON text frames of package wire)
//	GET /healthz   200 "ok" while serving, 503 once shutting down
//	GET /metrics   Prometheus metrics (see "Metrics")
//	GET /          the files of the web directory; .wasm as application/wasm,
//	               a precompressed sibling (replica.wasm.gz, not older than
//	               the file) served with Content-Encoding: gzip to clients
//	               that accept it; Cache-Control: no-cache
//
// Browsers may open /sync only from the relay's own origin unless
// -allow-origin names theirs (a host pattern such as "app.example.com" or
// "*.example.com"; "*" allows any, which lets any web page use the
// credentials a browser holds); native clients send no Origin and are always
// allowed.
//
// # Sessions
//
// Each connection is served by two goroutines: one reads frames and handles
// them one at a time, in order; one writes the connection's bounded send
// queue. The first frame must be a handshake, checked in this order before
// any storage is touched: protocolVersion equals wire.ProtocolVersion (else
// PROTOCOL_VERSION_MISMATCH, close 4003), databaseId passes
// wire.ValidDatabaseID (else MISSING_DATABASE_ID, close 4002), siteId is
// not all zeros (else MESSAGE_ERROR marked fatal, close 1002: a replica's
// site id is random, so the client is broken and must not retry), the
// Authenticator grants it (else AUTH_FAILED, close 4001). Then the database
// is opened if it is not already and handshake_ack names it, the relay's
// site id for it (serverSiteId: the database's merged replica's site id,
// stable for the life of its file) and the connection (connectionId "c-N").
// Frames other than handshake before that get NOT_AUTHENTICATED; a second
// handshake gets ALREADY_AUTHENTICATED (close 4004). A frame that is not a
// valid message gets MESSAGE_ERROR (binary frames too), except, after the
// handshake, valid JSON of type apply_changes: APPLY_CHANGES_REFUSED with
// the frame's requestId (when it is a string), so that the client's push
// in flight ends. An unknown type, or one the relay sends but does not
// take (changes, push_changes, …), gets UNKNOWN_MESSAGE. The connection
// stays usable. ping gets pong; a client's pong or error needs no answer
// and gets none. A connection must complete its handshake within
// HandshakeTimeout, with small frames until then: see "Limits and
// back-pressure".
//
// # Delivery: the arrival log
//
// apply_changes merges the ChangeSets into the database's merged replica
// (engine.Open over the database file, schema-less: every table is
// accepted, values are stored as received, migrations are recorded and
// forwarded) and, in the same kv transaction (engine.ApplyOptions.Extra),
// appends each ChangeSet the log does not hold yet with the next cursor:
// 1, 2, 3, … per database, without gaps. The two commit together or not at
// all. A ChangeSet the log holds already (same site id and transactionId,
// found in the dedup index) is not appended again, so a client that resends
// a batch whose apply_result it lost does not grow the log; the merge still
// runs and is idempotent (the facts count as skipped). Such a resend must
// carry the stored copy's facts or a subset of them (an origin's
// transaction only loses facts, to newer writes): each fact identified by
// its HLC (opSeq included), with the same table, primary key, column (or
// migration) and value; before-images are not compared. A resend with a
// fact the stored copy lacks, or with other content under one of its HLCs,
// is refused whole (APPLY_CHANGES_REFUSED): the merged replica would take
// it while the log kept the first copy, and devices that pull and devices
// that bootstrap would diverge. A transaction carried twice in one
// apply_changes is merged, stored and counted once (a copy that is a subset
// of the other is dropped; copies that differ otherwise refuse the batch).
//
// Nothing of a batch that fails is stored, and the error echoes requestId:
//
//   - refused for its content, so that it would be refused again if resent
//     unchanged: APPLY_CHANGES_REFUSED, logged as a warning. That is a
//     ChangeSet whose siteId is not the one the connection's handshake
//     declared (a connection pushes its own site's transactions only: one
//     pushed in another device's name would reach every device but that
//     one, whose pulls leave its own site out), a resend with other facts
//     (above), a frame whose changes do not decode, a ChangeSet the engine
//     finds malformed (engine.ErrMalformed: among others a value or key
//     value that does not fit a column type the database's migrations
//     declare, such as text for a real column; columns and tables no
//     migration declares are stored as received), a row or value too large to
//     store (engine.ErrValidation, kv.ErrValueTooLarge, kv.ErrInvalidKey),
//     a migration contradicting the stored schema (engine.ErrSchema), a
//     ChangeSet claiming the relay's own site id, or more than
//     MaxChangesPerApply changes in the frame;
//   - an HLC more than 60 s ahead of the relay's clock
//     (engine.ErrClockDrift): APPLY_CHANGES_ERROR saying "clock drift",
//     logged as a warning; it passes once the clocks agree;
//   - a storage failure on the relay: APPLY_CHANGES_ERROR, "retry later",
//     logged as an error.
//
// apply_result echoes requestId and carries the engine's counts.
//
// After the commit the appended ChangeSets go to every other connection of
// the database as push_changes {cursor, changeSets}, paged like changes, in
// cursor order (applies to one database are serialized, fan-out included).
// The sender gets no push of its own ChangeSets.
//
// get_changes {since} returns the ChangeSets with a cursor above since in
// cursor order, whole, at most PageChanges changes and MaxMessageSize bytes a
// frame (a larger ChangeSet travels alone), with more true until the client
// is caught up; a caught-up answer is changes {changeSets: [], cursor:
// current, more: false}. ChangeSets of the requesting client's own site (its
// handshake siteId) are left out of the page, cheaply (the site id is in
// each record's header): the client has them, and its engine would skip them
// as its own echo. The cursor still covers them. A since older than the
// retained log, or above the current cursor (it comes from another log, or
// the database was recreated), is answered with SNAPSHOT_REQUIRED
// (transient): the client bootstraps from a snapshot and pulls from its
// cursor.
//
// # Snapshots
//
// get_snapshot streams engine.Snapshot of the merged replica as
// snapshot_chunk frames (header, schema, per table table_start, rows
// chunks of at most SnapshotChunkRows rows, table_end, footer), then
// snapshot_complete. The header's cursor is the database's cursor read
// before any data, so everything up to it is in the snapshot and the client
// pulls from it afterwards. resume_snapshot {checkpoint} streams only the
// tables the checkpoint has not completed, under its snapshotId and cursor; a
// checkpoint of another relay log (its siteId is not this database's) is
// refused with SNAPSHOT_ERROR. Chunks are read one transaction at a time and
// queued as the connection takes them, so a snapshot of any size needs at
// most SendQueue chunks of memory; the connection's other frames wait until
// the stream ends, and pushes to it are dropped meanwhile (its catch-up from
// the header's cursor fetches them). A failure ends the stream with
// SNAPSHOT_ERROR; the client resumes later from its checkpoint.
//
// # Storage layout
//
// DataDir holds relay.lock (an exclusive flock: a second relay on the same
// directory fails at start) and one bbolt file per database, opened when a
// client first handshakes for it, closed DatabaseIdleClose after its last
// connection left and at shutdown. The file name is the database id with
// every byte other than a lower-case letter, a digit, '_', '-' or '.'
// written as %XX, then ".db": "acme:Trips" is "acme%3A%54rips.db" (two ids
// that differ only in case stay apart on case-insensitive file systems).
// Inside, next to the engine's buckets (engine.Buckets, engine/layout.go):
//
//	relay        "format" → "1"; "cursor" → last cursor (8-byte big-endian);
//	             "pruned" → last cursor removed by retention (8-byte big-endian)
//	arrivals     cursor (8-byte big-endian) → version 1 ‖ arrival time ms (8)
//	             ‖ fact count (4) ‖ uvarint length ‖ dedup key ‖ ChangeSet wire JSON
//	arrivals_tx  site id (16 bytes) ‖ transactionId → cursor (8) ‖ fact count (4)
//
// The ChangeSet is kept as wire JSON as received (wire.MarshalChangeSet of
// the decoded frame), so pages and pushes are assembled from stored bytes
// without decoding. Each database is its own file: a connection is bound to
// the one database its handshake named, and no request reads another.
//
// # Authentication
//
// Config.Auth is an Authenticator: Authenticate(ctx, AuthRequest) returns
// nil to grant the database named in the handshake (for reading and writing,
// for the life of the connection) or an error to refuse it (AUTH_FAILED; the
// error is logged, not sent). The request carries the database id, the
// token, the client's site id, its address and the upgrade request's header
// (cookies, a proxy's identity headers), so a custom hook can check a
// session or a signed token. Two are built in:
//
//   - AllowAll (-auth none): everything is granted. For local development;
//     the relay logs a warning at start.
//   - Tokens (-auth tokens -token-file tokens.json): a JSON object mapping
//     database ids to tokens, {"acme:trips": "tok-3f9a"}; a handshake is
//     granted when its token equals its database's. Tokens are compared in
//     constant time (as SHA-256 digests). The file is read at start;
//     restart to change it.
//
// # Limits and back-pressure
//
//   - Before the handshake: a connection's frames may be HandshakeFrameLimit
//     (64 KiB) at most (a larger one gets MESSAGE_TOO_LARGE, one more than
//     twice as large closes the connection with 1009), and it must send a
//     valid handshake within HandshakeTimeout (10 s) of connecting, pings or
//     not, else it gets NOT_AUTHENTICATED and is closed with 1008
//     "handshake timeout" (the time authentication takes does not count).
//     So a client without credentials holds little memory, and not for
//     long.
//   - MaxConnections (10 000): WebSocket connections open at once,
//     handshake done or not; an upgrade beyond it is answered with HTTP 503
//     (Retry-After: 10) and the client retries with backoff.
//   - MaxMessageSize (16 MiB), once the handshake is accepted: a larger
//     frame is answered with MESSAGE_TOO_LARGE (written before anything
//     else) and skipped; the connection stays usable. A frame more than
//     twice the limit is not read to its end: after the error frame the
//     connection is closed with 1009.
//     The relay also pages changes and push_changes below the limit; clients
//     must accept frames that large (coder/websocket: SetReadLimit).
//   - MaxChangesPerApply (100 000): APPLY_CHANGES_REFUSED naming the limit.
//     A single ChangeSet above it cannot be stored.
//   - SendQueue (64 frames per connection): replies wait for room (so a
//     snapshot streams at the client's pace); a push_changes that finds the
//     queue full is not waited for: the connection is closed with 1013 (try
//     again later), and the client reconnects and pulls from its cursor. A
//     slow or dead connection never stalls applies or other connections.
//   - WriteTimeout (10 s): a connection that takes no frame for that long
//     is closed.
//   - IdleTimeout (90 s): a connection that sent nothing (no frame, no
//     WebSocket ping) for that long while none of its requests was being
//     served is closed with 1001 "idle timeout". Clients ping every 30 s.
//
// # Retention and maintenance
//
// Every MaintenanceInterval (1 h) and on Maintain, for each open database:
// engine.Prune drops tombstones and held changes older than Retention (30
// days), and arrival-log entries that arrived more than Retention ago are
// removed, oldest first, with their dedup entries; "pruned" remembers the
// last removed cursor, so get_changes from before it gets SNAPSHOT_REQUIRED
// (a client offline longer than the horizon re-bootstraps instead of
// missing deletions). A database that is not open is pruned when it next
// is and the loop runs.
//
// # Metrics
//
// /metrics serves, besides the Go runtime and process collectors:
//
//	replica_relay_connections                 gauge    open WebSockets
//	replica_relay_connections_total           counter  accepted WebSockets
//	replica_relay_connections_refused_total   counter  connections refused, by reason (limit: HTTP 503 at
//	                                                   MaxConnections; handshake_timeout: closed, no handshake in time)
//	replica_relay_databases_open              gauge    open database files
//	replica_relay_messages_received_total     counter  frames received, by type ("invalid" if undecodable)
//	replica_relay_messages_sent_total         counter  frames written, by type
//	replica_relay_received_bytes_total        counter  frame payload bytes received
//	replica_relay_sent_bytes_total            counter  frame payload bytes written
//	replica_relay_errors_total                counter  error frames sent, by code
//	replica_relay_changes_applied_total       counter  changes that changed a merged replica
//	replica_relay_changes_skipped_total       counter  changes that did not (older, equal, duplicate)
//	replica_relay_changesets_stored_total     counter  ChangeSets appended to arrival logs
//	replica_relay_apply_duration_seconds      histogram  merge + append + commit of one apply_changes
//	replica_relay_pushes_dropped_total        counter  push_changes not delivered, by reason (queue_full, snapshot)
//	replica_relay_arrivals_pruned_total       counter  arrival-log entries removed by retention
//
// # Shutdown
//
// On SIGINT or SIGTERM (Serve's context ending, or Close) the relay stops
// accepting connections, lets each connection finish the frame it is
// handling (an apply in flight commits and its apply_result is sent; a
// snapshot stream is abandoned, to be resumed), flushes what is queued,
// closes every WebSocket with 1001 (going away), waits up to ShutdownTimeout
// for clients to answer the close, cuts the rest, and closes every database
// file. Every goroutine of the relay has ended when Close returns.
//
// # Operations
//
//   - Backups: stop the relay and copy the data directory; or copy single
//     database files of databases no client is using (a file is closed
//     DatabaseIdleClose after its last connection left). There is no hot
//     backup endpoint yet.
//   - Restoring: a restored copy has the same serverSiteId but an older
//     log, and it will hand out again, for other ChangeSets, cursors that
//     clients which synced after the copy already hold; those clients
//     would skip them. Restore a copy only where no client synced after it
//     was taken. After losing a database otherwise, delete its file: the
//     next handshake creates it anew with a new serverSiteId, every client
//     treats its old cursor as void, bootstraps from the (empty) snapshot
//     and pushes its own changes again, and the database refills from the
//     clients.
//   - Deleting a database: stop the relay (or wait until it is closed) and
//     delete its file. The next handshake creates an empty one with a new
//     serverSiteId, so clients know their cursors are void.
//   - Behind a reverse proxy or TLS terminator: forward /sync as a WebSocket
//     upgrade, and keep the proxy's idle timeout above IdleTimeout.
//   - Several relays may not share a data directory (relay.lock). Scaling
//     beyond one process is DESIGN.md's next step (a shared store and
//     pub/sub), not this package's.
//   - Logs are log/slog records; every connection's carry conn (its
//     connectionId), remote and, after the handshake, database.
package relay
