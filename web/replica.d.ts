// Type definitions for Replica, a local-first database for web apps.
//
// This file is the contract of the JavaScript API: what web/replica.js and
// replica.wasm install as the global `Replica`. It is documentation first:
// every type, method, event and error code is described here. Tests check
// that every method and property declared on Static, Database, Transaction,
// Sync and Operations exists on the real objects replica.js installs, and
// that they have no other public members (cmd/wasm TestLoaderTwoScriptTags),
// and that every error code the implementation produces is declared below
// (cmd/wasm TestErrorCodesDocumented).
//
// Loading, with two script tags (or only the second: replica.js loads
// wasm_exec.js from its own directory when `Go` is not defined):
//
//     <script src="/replica/wasm_exec.js"></script>
//     <script src="/replica/replica.js"></script>
//     <script>
//       const db = await Replica.open({
//         name: "trips",
//         schema: {tables: {
//           trips: {columns: {title: {type: "text", notNull: true}, budget: "real", start: "timestamp"},
//                   indexes: {by_title: ["title"]}},
//         }},
//       });
//       const trip = await db.insert("trips", {title: "Lisbon", budget: 900, start: new Date()});
//       const unsubscribe = db.subscribe("trips", {orderBy: "-start", limit: 20}, (rows) => render(rows));
//     </script>
//
// As an ES module (the npm package @replica-sync/replica, built by `make
// package`; its index.d.ts is this file with the namespace and Replica
// exported instead of declared globally):
//
//     import { Replica } from "@replica-sync/replica";
//     Replica.configure({wasmURL: "/assets/replica.wasm"}); // optional: default beside index.js
//     const db = await Replica.open({name: "trips", schema});
//
// Everything works offline. Every method that returns a Promise rejects only
// with a ReplicaError (an Error with a stable `code`); the few methods that
// return synchronously (subscribe, on) throw a ReplicaError for bad
// arguments or a closed replica.
//
// Calls on one replica run one at a time in call order, so calls that are
// not awaited behave like IndexedDB requests: a read issued after a write
// sees it.
//
// Values. A row is an object mapping column names to values. By column type:
//
//   | column type | JS value written                         | JS value read back                     |
//   |-------------|------------------------------------------|----------------------------------------|
//   | text        | string                                   | string                                 |
//   | integer     | number (whole), bigint                   | number within ±(2^53−1), else bigint   |
//   | real        | number (finite; -0 kept)                 | number                                 |
//   | boolean     | boolean                                  | boolean                                |
//   | timestamp   | Date, or number of ms since the epoch (within ±8.64e15, a Date's range) | Date (ms precision, UTC instant) |
//   | blob        | Uint8Array, ArrayBuffer, any TypedArray/DataView (its bytes) | Uint8Array (a fresh copy) |
//   | json        | plain object, array, string, number, boolean (as JSON.stringify writes it; nested at most 256 levels) | the parsed JSON value |
//
// null is the null value of every column type (it reads back as null; a
// `notNull` column refuses it). undefined means "not given": an omitted column on insert takes its default
// (or null); in an update patch it is left unchanged. A value of another JS
// type than the column's is a VALIDATION error unless the column or table
// declares `coerce: true` (then "42" goes into an integer column, etc.).
// Functions, Symbols, Maps, Sets, invalid Dates, NaN and ±Infinity are
// always VALIDATION errors, also anywhere inside a json value (where
// JSON.stringify would silently write null for NaN and ±Infinity; the
// message says where, e.g. "NaN at .a[2]"). Inside json values, Dates
// become ISO strings (JSON.stringify semantics), BigInts are an error, and
// numbers beyond 2^53 lose precision when read back (JSON.parse semantics).

declare namespace Replica {
	/**
	 * Every rejection's `code`:
	 *
	 * - `VALIDATION`: a value does not fit its column (wrong type, out of range,
	 *   invalid text), an unknown column, a missing `notNull` value, an
	 *   unknown table, a key of the wrong arity, a row that a local write
	 *   would make larger than 2 MiB encoded (merges of other devices' writes
	 *   may grow a row up to 8 MiB; a write that does not grow such a row is
	 *   allowed). A single value larger than 2 MiB on its own (a string's
	 *   length, a Uint8Array's byteLength, the strings inside a json object)
	 *   is refused at once, whatever its size, before it is copied or
	 *   converted. `table` and, when one column is at fault, `column` are set.
	 *   Nothing was written.
	 * - `NOT_FOUND`: `update` of a row that does not exist (or is deleted).
	 * - `CONFLICT`: `insert` of an existing key; re-inserting a deleted key
	 *   of a delete-wins table (see `allowResurrection`); a transaction whose statement
	 *   previewed fine but conflicts with a write that committed meanwhile.
	 *   Nothing was written.
	 * - `CLOSED`: the replica was closed (`db.close()`, or the browser closed
	 *   the IndexedDB connection, e.g. because the database was deleted in
	 *   another tab); also a `tx` used after its transaction callback settled.
	 * - `QUOTA_EXCEEDED`: the browser refused to store more (storage quota),
	 *   or Replica did, to keep a margin when the replica was opened with
	 *   `storageQuota`: a write that would take the
	 *   origin's storage use (`navigator.storage.estimate().usage`, refreshed
	 *   every MiB written and every 5 s of writing) past half of
	 *   min(`estimate().quota`, `storageQuota`) is refused, because the
	 *   browser's storage engine (LevelDB in Chromium) needs up to the
	 *   database's size again while it compacts, and a disk that fills up
	 *   then fails with an IO error after which Chromium may discard the
	 *   whole database. Nothing of that call was written; reads, deletes and
	 *   smaller writes still work. Chromium reports `estimate().quota` as
	 *   usage + 1 GiB whatever the disk's size (a 40 MiB disk: enforced quota
	 *   25 MB, reported 1.07 GB), so without `storageQuota` there is no
	 *   margin (half of that would refuse every growing write once the
	 *   origin uses 1 GiB, whatever the disk) and on a small disk only
	 *   `storageQuota` protects the replica.
	 * - `STORAGE_ERROR`: the browser's storage failed (an IO error, such as
	 *   a full disk: "FILE_ERROR_NO_SPACE"). The replica closes itself: every
	 *   pending and later call rejects at once (STORAGE_ERROR or CLOSED).
	 *   The same code when the browser closed the database's connection on
	 *   its own (storage failed or was cleared). Chromium may discard the
	 *   database after such an error; open the replica again (after a
	 *   reload) to see what is still stored. `Replica.open` on a disk still
	 *   too full for the browser to open the database rejects with
	 *   QUOTA_EXCEEDED; it opens once space is freed.
	 * - `CLOCK_DRIFT`: (sync, in `SyncState.lastError`) this device's clock
	 *   and another's disagree by more than 60 s: changes from the relay
	 *   stamped more than 60 s ahead of this device's clock are refused here
	 *   (this device is behind), or the relay refuses this device's pushes,
	 *   stamped more than 60 s ahead of its own clock (this device is ahead;
	 *   the relay's code CLOCK_DRIFT). Nothing is lost: both are retried with
	 *   backoff and sync once the clocks agree; meanwhile the status is
	 *   "syncing", not "synced".
	 * - `SCHEMA`: `Replica.open` with an invalid schema (no tables, an unknown
	 *   column type, a bad key or index, a default its column refuses), or one
	 *   that contradicts the schema already stored (e.g. a column's type
	 *   changed, or a resurrection policy other than the database's: the
	 *   message names both, e.g. `table "notes": resurrection policy is
	 *   declared delete-wins (allowResurrection: false) but the database's
	 *   policy for this table is allow-resurrection (allowResurrection:
	 *   true)`).
	 * - `STORAGE_FORMAT`: the stored data was written by an incompatible
	 *   version of Replica.
	 * - `INVALID_ARGUMENT`: a call of the wrong shape: an argument of the wrong
	 *   type, an unknown option, an unknown `where` operator, a bad
	 *   `limit`/`offset`/`orderBy`, an unknown event name.
	 * - `PROTOCOL_VERSION_MISMATCH`: (sync) in `SyncState.error`: the relay
	 *   speaks another protocol version; syncing stopped (status "error").
	 * - `AUTH_FAILED`: (sync) in `SyncState.error`: the relay refused the
	 *   token; syncing stopped (status "error").
	 * - `SYNC_FAILED`: (sync) in `SyncState.error`: any other failure of the
	 *   connection (the relay unreachable or not answering, a relay error);
	 *   the client retries with backoff unless the status is "error".
	 * - `SEALED_MISMATCH`: (sync, sealed databases) in `SyncState.error`:
	 *   the relay's database is sealed and `connect` gave no `key`, or it is
	 *   plain and `connect` gave one (a database is sealed or plain from its
	 *   creation on, for its life). Nothing was sent; syncing stopped (status
	 *   "error") until `connect` is called again with the database's mode.
	 * - `DECRYPT_FAILED`: (sync, sealed) in `SyncState.lastError`: the relay's
	 *   log holds an envelope that no key given to `connect` opens (a wrong
	 *   key or passphrase, or a key another device rotated to that this one
	 *   was not given). Nothing from that point of the log on is applied; the
	 *   envelopes stay held in the relay's log, this device stops pulling (no
	 *   retry loop) and the status stays "syncing". `connect` with the right
	 *   key (as `key` or in `oldKeys`) applies them. `Replica.importKey` and
	 *   `deriveKey` never reject with it: a key is only found wrong against
	 *   an envelope. This device pushes nothing while it holds envelopes it
	 *   cannot open, nor before its key is proven (it opened an envelope or
	 *   checkpoint of the database, in this connection or an earlier one,
	 *   or the database was empty): its writes stay pending locally, not
	 *   lost, and go out, sealed with the right key, after a `connect` with
	 *   it. So a mistyped key never pushes envelopes the other devices
	 *   cannot open; a wrong key that meets nothing to open (nobody else
	 *   writes) shows as status "syncing" with writes pending, and
	 *   DECRYPT_FAILED as soon as another device writes.
	 * - `ENVELOPE_INVALID`: (sync, sealed) in `SyncState.lastError`: an
	 *   envelope names a key this device holds but does not authenticate
	 *   (altered by the relay or on the way, or moved to another database,
	 *   site, transaction or HLC). That one transaction is refused (for
	 *   this device, for good) and the rest applies; the error stays until a
	 *   newer one, a `disconnect` or a connect to another target.
	 * - `ENVELOPE_REQUIRED`: (sync, sealed) in `SyncState.lastError`: the
	 *   relay's code refusing a plaintext push to a sealed database (a
	 *   client bug or a mode lie; not expected from Replica).
	 * - `ENVELOPE_REFUSED`: (sync) in `SyncState.lastError`: the relay's code
	 *   refusing a sealed push to a plain database.
	 * - `CHECKPOINT_REFUSED`: (sync, sealed) in `SyncState.lastError`: a
	 *   sealed checkpoint (the bootstrap of a sealed database) did not
	 *   verify, was refused before, or the relay refused one; the device
	 *   falls back to the relay's log from 0 (when the relay pruned that
	 *   log, it cannot bootstrap until a device uploads a newer checkpoint).
	 * - `INTERNAL`: a bug in Replica (it is logged to the console); the
	 *   replica keeps working.
	 */
	type ErrorCode =
		| "VALIDATION"
		| "NOT_FOUND"
		| "CONFLICT"
		| "CLOSED"
		| "QUOTA_EXCEEDED"
		| "STORAGE_ERROR"
		| "CLOCK_DRIFT"
		| "SCHEMA"
		| "STORAGE_FORMAT"
		| "INVALID_ARGUMENT"
		| "PROTOCOL_VERSION_MISMATCH"
		| "AUTH_FAILED"
		| "SYNC_FAILED"
		| "SEALED_MISMATCH"
		| "DECRYPT_FAILED"
		| "ENVELOPE_INVALID"
		| "ENVELOPE_REQUIRED"
		| "ENVELOPE_REFUSED"
		| "CHECKPOINT_REFUSED"
		| "INTERNAL";

	/** The error every rejection carries. `instanceof Replica.ReplicaError` holds. */
	interface ReplicaError extends Error {
		readonly name: "ReplicaError";
		/** Stable code; branch on this, not on the message. */
		readonly code: ErrorCode;
		/** The message names the method ("db.insert: ..."), table, column or argument at fault. */
		readonly message: string;
		/** VALIDATION: the table at fault. Absent otherwise. */
		readonly table?: string;
		/** VALIDATION: the column at fault, when one is. Absent otherwise. */
		readonly column?: string;
	}

	interface ReplicaErrorConstructor {
		new(code: ErrorCode, message: string, table?: string, column?: string): ReplicaError;
		readonly prototype: ReplicaError;
	}

	/** A JSON value, as stored in json columns. */
	type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

	/** A value read from a row (see the table at the top of this file). */
	type Value = string | number | bigint | boolean | null | Date | Uint8Array | JsonValue;

	/** A value accepted by writes, keys and filters; undefined means "not given". */
	type InputValue = Value | ArrayBuffer | ArrayBufferView | undefined;

	/** A row as read: every column of the table, in schema order; null where unset. */
	type Row = { [column: string]: Value };

	/** A row or patch as written: columns to values; omitted or undefined columns are not given. */
	type InputRow = { [column: string]: InputValue };

	/** A key column's value. */
	type KeyValue = string | number | bigint | boolean | Date | Uint8Array;

	/**
	 * A primary key: the value itself for a single-column key (the default
	 * key is the text column `id`), or an array of the key columns' values in
	 * `primaryKey` order for a composite key.
	 */
	type PrimaryKey = KeyValue | KeyValue[];

	/** Column types. */
	type ColumnType = "text" | "integer" | "real" | "boolean" | "blob" | "json" | "timestamp";

	interface ColumnDef {
		type: ColumnType;
		/**
		 * Reject null (explicit, or omitted without a default) on this tab's
		 * insert and update. Default false. Not enforced on changes from other
		 * devices: column-level merging can yield rows that lack a cell (e.g.
		 * a device running an older schema), so a synced row may read null.
		 */
		notNull?: boolean;
		/**
		 * Value for an omitted column on insert (a JSON value: timestamps as ms
		 * numbers; `null` is a null default, distinct from none).
		 */
		default?: JsonValue;
		/** Accept obvious conversions ("42" into integer, 1 into boolean, ISO text into timestamp). Default false. */
		coerce?: boolean;
	}

	interface TableDef {
		/**
		 * Columns by name, in order (object key order is column order; avoid
		 * names that look like array indexes, which JavaScript orders first).
		 * A column is a type name or a ColumnDef.
		 */
		columns: { [column: string]: ColumnType | ColumnDef };
		/**
		 * Key columns, in key order. Omitted: a text column `id` (added first if
		 * not declared), filled with a new UUIDv7 when a write omits it.
		 */
		primaryKey?: string | string[];
		/** Secondary indexes: name to columns. Queries use the best one for their where and orderBy. */
		indexes?: { [name: string]: string[] } | Array<{ name: string; columns: string[] }>;
		/** `coerce` for every column of the table. */
		coerce?: boolean;
		/**
		 * The table's resurrection policy, a property of the database: true,
		 * a write newer than a row's deletion revives the row with the cells
		 * written after the deletion ("allow-resurrection"); false, a deleted
		 * row stays deleted whatever later writes say ("delete-wins").
		 * Omitted: `OpenOptions.allowResurrection` decides, else the table
		 * follows the database (delete-wins while no device declared
		 * anything). See `OpenOptions.allowResurrection`.
		 */
		allowResurrection?: boolean;
	}

	/**
	 * The declared tables: at least one (a schema with no tables is refused
	 * with SCHEMA). Opening with a schema that adds tables, columns or
	 * indexes migrates the stored replica (and the migration syncs to peers).
	 * A schema that omits a table or column the replica has (an older app
	 * version on data a newer one shaped, or one no longer used) opens:
	 * nothing is dropped — reads still return the column and it syncs;
	 * writes naming the omitted column are refused with VALIDATION; an
	 * omitted table stays readable and writable with its stored
	 * definition. Changing a stored column's type or key is refused with
	 * SCHEMA (nothing changes). A schema whose `notNull` or `default`
	 * differs from the stored column's opens without error and changes
	 * nothing: change them with `db.alterColumn`. To remove a table,
	 * column or index, use `db.dropTable`, `db.dropColumn` or
	 * `db.dropIndex`; to rename a table, `db.renameTable` (a schema that
	 * declares a table's new name opens onto it; one that still declares
	 * its old name opens, records nothing for it, and calls naming the old
	 * name are refused with VALIDATION saying the new one). Retyping
	 * columns is not a migration Replica has (add a new column, copy, drop
	 * the old one).
	 */
	interface Schema {
		tables: { [table: string]: TableDef } | Array<TableDef & { name: string }>;
	}

	/** What `db.alterColumn` changes; a member left out is left as it is. */
	interface ColumnChange {
		/** Make the column required (true) or optional (false). */
		notNull?: boolean;
		/** The column's new default (null: a null default). */
		default?: Value;
		/** Remove the column's default (not with `default`). */
		dropDefault?: true;
		/** A column's type cannot change (SCHEMA): add a new column, copy, drop the old one. */
		type?: never;
	}

	interface OpenOptions {
		/**
		 * The replica's name. Its IndexedDB database is "replica:" + name; its
		 * BroadcastChannel is "replica:" + name; its Web Locks leader lock is
		 * "replica-leader:" + name. Tabs of one browser profile that open the
		 * same name share one replica (and one site id).
		 */
		name: string;
		/**
		 * See Schema. Left out, the replica opens with the schema it
		 * already holds (every table, column and index, however they came:
		 * declared by the app, or synced from other devices): how a tool
		 * such as the inspector opens an app's replica by name. Rejects
		 * with NOT_FOUND when the profile holds no replica of that name
		 * with tables (checked with `indexedDB.databases()` first where the
		 * browser has it, so nothing is created). `null` is
		 * INVALID_ARGUMENT.
		 */
		schema?: Schema;
		/**
		 * Declares the resurrection policy of every table whose `TableDef`
		 * does not: true, a write newer than a row's deletion revives it;
		 * false, delete wins. Omitted: nothing is declared, and such tables
		 * follow the database (delete-wins while no device declared anything).
		 *
		 * The policy belongs to the database, not to this device: the first
		 * declaration of a table is stored as a migration and syncs to every
		 * device and to the relay, whose merged replica and snapshots apply
		 * it (a new device bootstrapping from the relay sees revived rows).
		 * Once a table has a policy it cannot change: opening with the other
		 * one rejects with SCHEMA naming both policies, and nothing is
		 * written. When two app versions declare different policies
		 * concurrently (offline), every device ends with the one declared
		 * first (lowest HLC) and the other version's next open rejects with
		 * SCHEMA. Declaring a policy for a table that had none applies to
		 * its existing rows: a row deleted and written again afterwards by
		 * another device becomes live under allow-resurrection (devices of
		 * this version keep those later cells under delete-wins too; rows
		 * merged by older versions lost them and stay deleted).
		 */
		allowResurrection?: boolean;
		/**
		 * What to do with held changes: synced changes this replica cannot
		 * apply now — for a table this schema lacks, a column it does not
		 * define yet, or whose key or value does not fit the table (see
		 * HeldReason). "hold" (the default) keeps them and applies those for
		 * a missing table or column when it appears; "drop" discards them,
		 * those for known tables that do not fit included; "hold-and-forward"
		 * holds them and, on a replica that pushes other sites' changes on
		 * (a native Go peer), forwards those for a missing table or column;
		 * a browser replica pushes only its own changes, so there it acts as
		 * "hold". Whichever it is, each batch fires a `held` event per table.
		 */
		heldChanges?: HeldPolicy;
		/**
		 * @deprecated The older name of `heldChanges` (with the values
		 * "quarantine" for "hold", "ignore" for "drop", "store-and-forward"
		 * for "hold-and-forward"), accepted for one release. It governs
		 * every held change, not only those for unknown tables. Setting both
		 * names rejects with INVALID_ARGUMENT.
		 */
		unknownTableDisposition?: "quarantine" | "ignore" | "store-and-forward" | HeldPolicy;
		/**
		 * Bytes this origin's storage may use (a share of the disk the app
		 * knows it may take). Replica refuses writes that would take the
		 * origin's usage past half of min(storageQuota, the quota
		 * `navigator.storage.estimate()` reports) with QUOTA_EXCEEDED (see
		 * ErrorCode). Default: none, no margin (Chromium's reported quota
		 * is not derived from the disk's size); the browser's own quota
		 * errors still reject with QUOTA_EXCEEDED. A positive number.
		 */
		storageQuota?: number;
		/**
		 * The retention horizon, in milliseconds (sync.md's
		 * retentionHorizonMs): the leader tab's retention pass drops held
		 * changes kept longer than this and tidies change-log entries of
		 * its own transactions older than it whose facts later writes
		 * replaced. Tombstones are not pruned by it: they go at the relay's
		 * horizon marks (the relay's `-retention`, also 30 days by default),
		 * so that no device forgets a deletion another may still need.
		 * Default 2,592,000,000 (30 days); a whole number from 60,000 (one
		 * minute) to ten years.
		 */
		retentionHorizonMs?: number;
		/**
		 * The most changes (cell writes, deletions and schema migrations)
		 * one push to the relay carries, counted in whole transactions (a
		 * larger transaction goes alone): sync.md's batchSize. Smaller
		 * batches mean earlier acknowledgments on slow links, larger ones
		 * fewer round trips. Default 1,000; a whole number from 1 to
		 * 100,000. The leader tab's value applies (it holds the connection).
		 */
		batchSize?: number;
		/**
		 * IndexedDB's durability hint for this replica's writes (every
		 * IndexedDB transaction that writes, in this tab). "strict": a
		 * write's promise resolves only once the browser has flushed it to
		 * the disk, so it survives a power loss or an OS crash; "relaxed":
		 * once the OS has it (it survives the browser crashing, not the
		 * machine); "default" (the default): the browser's choice, which in
		 * Chromium acts as "relaxed". Strict costs a disk flush per
		 * IndexedDB transaction: measured in headless Chromium on a shared
		 * 2-core machine, 3.9× the time of a single-row write and 1.1× that
		 * of a 1,000-row transaction (idbkv's BenchmarkIdbkv, strict beside
		 * default in one run). Open every tab of a replica with the same
		 * value.
		 */
		durability?: "strict" | "relaxed" | "default";
		/**
		 * Who wins a conflict: a synced write of a cell this replica holds
		 * another version of (jsbridge/resolver.go). "lww" (the default):
		 * the later HLC, the same winner on every replica. "localWins" /
		 * "remoteWins": the version already here / the incoming one, which
		 * leaves replicas disagreeing (each keeps its own, or takes the
		 * last it received): for one-way flows only. A function gets a
		 * ResolverContext and returns "local" or "remote", synchronously:
		 * it runs inside the IndexedDB transaction of the apply, so it
		 * must not await (a Promise counts as no answer) and should be
		 * quick. For replicas to converge it must pick the same version
		 * whichever side calls it — a function of the two versions alone,
		 * such as "the larger value wins" — and every device and every tab
		 * must use the same one. An exception or any other answer is
		 * reported to the console and "lww" decides that cell; the sync
		 * goes on. Only cells with two versions reach it; deletions follow
		 * the table's resurrection policy.
		 */
		resolver?: "lww" | "localWins" | "remoteWins" | ((conflict: ResolverContext) => "local" | "remote");
		/**
		 * Where the replica runs. `true`: worker mode — replica.wasm (the
		 * engine, IndexedDB and the sync client) runs in a dedicated Worker
		 * (replica-worker.js, beside the loader or at
		 * `LoadOptions.workerURL`), so its work never blocks the page's
		 * main thread. `false`: page mode — replica.wasm runs on the page's
		 * own thread. Default: `LoadOptions.worker` (worker mode in a
		 * window unless configured otherwise; page mode where the loader
		 * itself runs in a Worker). A resolver function cannot run in the
		 * Worker: with worker mode only the default (not asked for with
		 * `worker: true`, `configure({worker: true})` or a `data-worker`
		 * attribute), a replica opened with one runs in page mode.
		 *
		 * The API is the same in both modes: the same methods, results,
		 * events, subscriptions and errors (codes and the `ReplicaError`
		 * class). Calls are proxied: the calls one event-loop turn makes go
		 * to the Worker as one message (a `db.transaction` issuing 10,000
		 * `tx.insert`s without awaiting each sends them together), and the
		 * results of one turn of the Worker come back as one; byte values
		 * are copied (the page keeps its copy until the answer, for a
		 * restore) and results' bytes transferred. Each awaited call costs one
		 * round trip to the Worker (see the README for figures).
		 * Subscriptions' callbacks and event listeners run in the page.
		 *
		 * Tabs: every tab (page-mode or worker-mode alike, and replicas
		 * opened inside an app's own Workers) still shares the one
		 * IndexedDB database, one site id, one leader tab holding the
		 * relay connection, and the sibling-tab notices: the page keeps the
		 * BroadcastChannel, the Web Lock and the page-lifecycle handling,
		 * the Worker runs the rest. A SharedWorker is not used: see the
		 * README (§ Worker mode).
		 *
		 * Frozen tabs: on `freeze` (and a `pagehide` into the
		 * back/forward cache) the page terminates its Worker, which aborts
		 * the Worker's IndexedDB transactions at once (a frozen tab holds
		 * no lock another tab waits for), and on resume starts another (a
		 * spare started 2 s after each Worker, which loaded its files and
		 * compiled replica.wasm already, so a tab resumed offline restores
		 * without the network) and restores the session: the replicas, listeners, subscriptions
		 * (which deliver their current result again) and sync targets.
		 * Calls in flight at the freeze settle as if nothing happened:
		 * each write records its answer in its own IndexedDB transaction,
		 * so one that committed is answered from that record and one that
		 * did not runs then (none runs twice; `db.applyChanges` records
		 * its answer just after its transaction and may run again, which
		 * changes nothing but counts its changes as skipped); reads run
		 * again. Calls made
		 * meanwhile wait for the new Worker. One exception: a
		 * `db.transaction` whose callback was still staging at the freeze
		 * lost its staged statements; its pending statements and its
		 * commit reject with CLOSED, and nothing of it is written (run it
		 * again). A transaction committed with statements not awaited,
		 * whose answers the freeze lost, resolves; those statements
		 * reject with CLOSED saying the transaction committed (read the
		 * rows back; do not run it again).
		 *
		 * Not in worker mode: a resolver function (it is called
		 * synchronously inside the apply's IndexedDB transaction, which a
		 * Worker cannot do across threads): `open` with `worker: true`
		 * (or with worker mode configured) rejects with INVALID_ARGUMENT
		 * saying so; use `worker: false` for it. Each page
		 * runs one Worker for all its worker-mode replicas; it is
		 * terminated when the last of them closes (calls still waiting
		 * then reject with CLOSED); if it fails, waiting and later calls
		 * reject with INTERNAL.
		 */
		worker?: boolean;
	}

	/** The argument of a resolver function (OpenOptions.resolver). */
	interface ResolverContext {
		table: string;
		/** The row's primary key, in key-column order. */
		pk: Value[];
		column: string;
		/** The version this replica holds. */
		localValue: Value;
		/** Its HLC, "wall.counter@siteId/opSeq". */
		localHlc: string;
		/** The site that wrote it. */
		localSiteId: string;
		/** The incoming version. */
		remoteValue: Value;
		remoteHlc: string;
		remoteSiteId: string;
		/** The value the incoming write replaced on its device, when it carried it. */
		remotePriorValue?: Value;
		remotePriorHlc?: string;
	}

	/**
	 * Conditions on one column. Several operators on one column all must hold
	 * ({gte: 1, lt: 10}). Comparisons use the column's type (numbers
	 * numerically, text by UTF-8 bytes, timestamps by time). A null column
	 * value matches only `eq: null` and `ne` of a non-null value.
	 */
	interface Operators {
		eq?: InputValue;
		ne?: InputValue;
		gt?: InputValue;
		gte?: InputValue;
		lt?: InputValue;
		lte?: InputValue;
		/** One of these values (nulls never match). */
		in?: InputValue[];
		/** Text columns: starts with this string. */
		prefix?: string;
	}

	/**
	 * Conditions, all of which must hold: column to value (equality; `null`
	 * matches nulls) or to an Operators object, e.g.
	 * `{country: "FR", pop: {gt: 1000}, name: {prefix: "Par"}, id: {in: ["a", "b"]}, x: {ne: null}}`.
	 * A plain object is read as operators: to compare a json column with an
	 * object, write `{meta: {eq: {a: 1}}}`. An undefined value is an
	 * INVALID_ARGUMENT error (it would otherwise match everything).
	 */
	type Where = { [column: string]: InputValue | Operators };

	/**
	 * Sort order: a column name ("name"), a name with "-" for descending
	 * ("-pop"), or a list of those and {column, desc} objects
	 * (["-pop", "name"], [{column: "pop", desc: true}]). Rows with equal sort
	 * values come in primary-key order.
	 */
	type OrderBy = string | Array<string | { column: string; desc?: boolean }>;

	interface QueryOptions {
		where?: Where;
		/** Default: primary-key order (or the order of the index the query uses). */
		orderBy?: OrderBy;
		/** At most this many rows: a whole number >= 1. Omit for all. */
		limit?: number;
		/** Skip this many rows first: a whole number >= 0. Default 0. */
		offset?: number;
		/**
		 * Add the system columns to each row, derived from the HLCs the
		 * replica keeps per cell: `$createdAt` (Date: when the row was
		 * inserted), `$updatedAt` (Date: its last write, by any device)
		 * and `$siteId` (the site id of the device that wrote it last:
		 * compare with `db.siteId`). `where` and `orderBy` may name them
		 * (`{system: true, orderBy: "-$updatedAt"}`). Times are the
		 * writing device's clock. Also `$pending` (boolean, the seeds'
		 * pendingSync): the row holds a write of this replica the relay
		 * has not acknowledged yet (counted against the last sync target,
		 * as `sync.state.pending` is; true for every own write before the
		 * first sync); subscriptions re-run when it changes. Default
		 * false.
		 */
		system?: boolean;
		/**
		 * Return the deleted rows instead of the live ones — a trash view —
		 * each as it was when deleted (the image its tombstone keeps; a row
		 * deleted on a device that did not send it has its key and nulls),
		 * with the system columns and `$deletedAt` (Date), for the
		 * retention horizon (tombstones are pruned after it). `where`,
		 * `orderBy`, `limit` apply; reads every row of the table (deleted
		 * rows have no index entries). Undo by inserting the row again
		 * (without the `$` columns) in a table that allows resurrection
		 * (`allowResurrection`; otherwise CONFLICT). Default false.
		 */
		deleted?: boolean;
	}

	interface CountOptions {
		where?: Where;
	}

	/**
	 * The row operations, on a Database (each call is its own transaction)
	 * and on a Transaction (staged until the transaction commits).
	 */
	interface Operations {
		/**
		 * Insert a row and resolve with it as stored: defaults filled, a
		 * generated `id` (UUIDv7) when the table has the default key and the row
		 * omits it. Rejects: VALIDATION, CONFLICT (the key exists, or was
		 * deleted and resurrection is off), INVALID_ARGUMENT, CLOSED,
		 * QUOTA_EXCEEDED. On a Transaction, resolves at once with the row it
		 * will write (its generated id is the one committed); a duplicate key
		 * is then reported by the commit.
		 */
		insert(table: string, row: InputRow): Promise<Row>;
		/**
		 * Set the columns in `patch` on the row with key `pk` and resolve with
		 * the whole row. Columns whose value does not change are not written.
		 * Changing a key column moves the row. Rejects: NOT_FOUND, VALIDATION,
		 * CONFLICT (moved onto an existing key), INVALID_ARGUMENT, CLOSED,
		 * QUOTA_EXCEEDED.
		 */
		update(table: string, pk: PrimaryKey, patch: InputRow): Promise<Row>;
		/**
		 * Insert the row, or, when a row with its key exists, update the
		 * columns it gives. Resolves with the whole row. Rejects as insert and
		 * update.
		 */
		upsert(table: string, row: InputRow): Promise<Row>;
		/**
		 * Delete the row with key `pk` (a tombstone that syncs, kept for the
		 * retention horizon: see Replica.open). Resolves with
		 * undefined, also when there was no such row. Rejects: VALIDATION,
		 * INVALID_ARGUMENT, CLOSED, QUOTA_EXCEEDED.
		 */
		delete(table: string, pk: PrimaryKey): Promise<void>;
		/** The row with key `pk`, or undefined. Rejects: VALIDATION, INVALID_ARGUMENT, CLOSED. */
		get(table: string, pk: PrimaryKey): Promise<Row | undefined>;
		/**
		 * The rows matching `options` (all rows when omitted). One call returns
		 * the whole result. Rejects: VALIDATION (unknown table or column),
		 * INVALID_ARGUMENT (bad options), CLOSED.
		 */
		query(table: string, options?: QueryOptions): Promise<Row[]>;
		/** The number of rows matching `options.where`. Rejects as query. */
		count(table: string, options?: CountOptions): Promise<number>;
	}

	/**
	 * The `tx` of `db.transaction(async tx => ...)`. Its writes are validated
	 * and previewed at once (reads through `tx` see them; reads through `db`
	 * do not), and committed together when the callback's promise resolves.
	 * Using it after the callback settled rejects with CLOSED.
	 */
	interface Transaction extends Operations { }

	/** Payload of `change` and `remoteChange`. */
	interface ChangeEvent {
		/** The tables whose rows (or schema) changed, sorted. */
		tables: string[];
		/** true: changes that arrived from the relay; false: a local write (this tab or another). */
		remote: boolean;
		/** true: the commit happened in another tab (or another Replica.open of the same name). */
		fromOtherTab: boolean;
		/** The committed transaction's id, "wallMs:counter:siteId" (the same on every peer); null if unknown. */
		transactionId: string | null;
		/**
		 * Site id of the replica that made the transaction: `db.siteId` for a
		 * local write (this tab's or another tab's), the writing device's for
		 * a remote one; null if unknown (a remote change without its
		 * transaction). Compare it with `db.siteId` rather than parsing ids.
		 */
		siteId: string | null;
		/** When this replica committed or applied it (ms since the epoch, this device's clock). */
		at: number;
		/**
		 * The rows it changed, in (table, key) order: what an app needs to
		 * update a view without querying again. Absent only from a notice
		 * another tab sends for several commits it made before this tab
		 * opened. A remote change lists only what changed this replica
		 * (facts that lost to newer ones here are not listed).
		 */
		changes?: RowChangeInfo[];
	}

	/** One row a transaction changed (ChangeEvent.changes). */
	interface RowChangeInfo {
		table: string;
		/** The row's key values, in primary-key order. */
		pk: Value[];
		/** The columns written, by name (sorted); empty for a deletion. */
		columns: string[];
		/** Whether the transaction deleted the row. */
		deleted: boolean;
		/**
		 * The row as it stood before the deletion, when known: a local
		 * delete of a live row, or a remote one whose device sent it.
		 */
		priorRow?: Row;
	}

	/** Payload of `conflict`: a synced change met a concurrent local version of the same cell. */
	interface ConflictEvent {
		table: string;
		/** The row's key values, in primary-key order. */
		pk: Value[];
		column: string;
		localValue: Value;
		/** HLCs as "wallMs.counter@siteId/opSeq". */
		localHlc: string;
		/** Site id of the replica that wrote the local value (this one's, `db.siteId`, unless it came from another device earlier). */
		localSiteId: string;
		remoteValue: Value;
		remoteHlc: string;
		/** Site id of the device that wrote the remote value. */
		remoteSiteId: string;
		/** Whether the remote value won (last writer wins by HLC). */
		remoteWon: boolean;
		winningHlc: string;
		/**
		 * The value the remote write replaced on its device, and its HLC,
		 * when it carried them: whether the remote writer saw the local
		 * value before overwriting it (then `remotePriorHlc` is `localHlc`)
		 * or wrote concurrently.
		 */
		remotePriorValue?: Value;
		remotePriorHlc?: string;
	}

	/** The `heldChanges` option: what happens to held changes. */
	type HeldPolicy = "hold" | "drop" | "hold-and-forward";

	/**
	 * Why a synced change is held instead of applied:
	 * - "unknownTable": the schema lacks its table; applied when a schema
	 *   or migration declaring the table arrives.
	 * - "unknownColumn": the table does not define its column (yet);
	 *   applied when a migration adds the column.
	 * - "keyMismatch": its primary key does not fit the table's (another
	 *   number of key columns or a key value of another type: two app
	 *   versions declared the table with different keys; or a key column's
	 *   value that contradicts the key). Never applied.
	 * - "wrongType": its value is not of the column's type (or out of its
	 *   range: a timestamp beyond a Date's, invalid UTF-8, JSON nested too
	 *   deeply). Never applied.
	 */
	type HeldReason = "unknownTable" | "unknownColumn" | "keyMismatch" | "wrongType";

	/**
	 * Payload of `held`: synced changes of one table this replica holds
	 * back instead of applying (one event per table per batch). The rest of
	 * the batch applies; held changes are dropped after the retention
	 * horizon (30 days) if not applied by then.
	 */
	interface HeldEvent {
		table: string;
		/** Why the first of them was held; the others in the batch may have other reasons. */
		reason: HeldReason;
		/** Why, in words, naming the column and the type or key it does not fit; absent for "unknownTable". */
		detail?: string;
		/** The replica's `heldChanges` policy: under "drop" the changes were counted but not kept. */
		policy: HeldPolicy;
		/** Number of changes held (or dropped) for the table in this batch. */
		changes: number;
		/** Site id (base64url) of the origin of the first of them. */
		site: string;
		/** Highest HLC among them, "wallMs.counter@siteId/opSeq". */
		latestHlc: string;
	}

	/** Payload of `heldReplayed`. */
	interface HeldReplayedEvent {
		table: string;
		/** Changes replayed: applied as fresh synced changes (last-writer-wins against what the replica holds) and no longer held. */
		changes: number;
		/** Changes still held for the table (columns it still lacks, or keys and values that do not fit). */
		remaining: number;
	}

	/**
	 * What `db.heldChanges()` counts: the changes held now, per table and
	 * per reason as the schema stands (HeldReason; a reason with none is
	 * absent).
	 */
	interface HeldStats {
		total: number;
		tables: { [table: string]: { total: number } & { [R in HeldReason]?: number } };
	}

	/**
	 * `db.inspect`: a replica's contents and CRDT metadata, for the
	 * inspector page (served by the relay at `/inspect`) and for tests and
	 * tools. Every method is read-only and paged; each page is read in
	 * IndexedDB transactions of at most 4,096 records that wait on nothing
	 * else, so inspecting a large table never holds back the app's writes
	 * for long. HLCs are written as the conflict event writes them,
	 * "wallMs.counter@siteId/opSeq"; page cursors (`next`) are opaque
	 * strings to pass back as `after` (or `before`). Rejections:
	 * INVALID_ARGUMENT for a bad argument or option (an unknown option, a
	 * limit outside 1-1000, a cursor that is not one), VALIDATION for a
	 * table the replica does not hold, CLOSED after close.
	 */
	interface Inspector {
		/**
		 * Every table of the replica's schema (declared or synced), in
		 * creation order, with its row counts as `count` gives them
		 * (`counts: false` leaves them out: counting reads every row
		 * record, seconds for 171,075 rows).
		 */
		tables(options?: { counts?: boolean }): Promise<InspectTable[]>;
		/**
		 * A table's stored rows: live ones, and deleted ones (whose
		 * tombstone hides them). Reads each row record's head, in
		 * transactions of at most 4,096 records (`db.count` reads the table
		 * in one, which holds the app's writes back meanwhile).
		 */
		count(table: string): Promise<{ rows: number; deleted: number }>;
		/**
		 * A page of a table's stored rows in primary-key order: live rows,
		 * or with `deleted: true` the deleted ones (tombstones). `search`
		 * keeps the rows one of whose cells contains it (case-insensitive;
		 * a text value as is, numbers, booleans, dates and JSON as text;
		 * blobs never match), or starts with it with `prefix: true`. A
		 * search reads the table in key order until it has `limit` rows:
		 * `maxScan` bounds the row records one call reads, and the page
		 * then has fewer rows with `next` set, to ask again from there.
		 */
		rows(table: string, options?: InspectRowsOptions): Promise<InspectRowsPage>;
		/**
		 * This replica's change log: one entry per transaction it wrote
		 * (schema migrations included), newest first, each marked `unsent`
		 * when it is above the sent watermark (what `db.sync.state.pending`
		 * counts). A browser replica keeps only its own transactions in the
		 * log (rows synced from elsewhere have none). `unsent: true` lists
		 * the unsent ones only; `before` is the previous page's `next`.
		 */
		changeLog(options?: { before?: string; limit?: number; unsent?: boolean }): Promise<ChangeLogPage>;
		/**
		 * The synced changes this replica holds instead of applying (see
		 * `db.heldChanges()` for the counts), one by one in table then HLC
		 * order, each with the reason it is held for as the schema stands
		 * and its table's current name. `table`: a table of the schema by
		 * its current name (a renamed table's former name is VALIDATION
		 * saying the new one), or any other name, the changes held for a
		 * table this replica does not have (none: an empty page).
		 */
		heldChanges(options?: { table?: string; after?: string; limit?: number }): Promise<HeldChangesPage>;
		/** Where sync stands: the target, the sent watermark and the sync client's persisted cursors. */
		sync(): Promise<InspectSync>;
		/**
		 * Calls `listener` with every conflict a tab of this replica
		 * resolves: this tab's (as `db.on("conflict")`) and, forwarded over
		 * the tabs' BroadcastChannel, the others' (the leader tab applies
		 * what the relay sends), marked `fromOtherTab`. Other tabs emit
		 * their conflicts once they know an inspector listens (within
		 * milliseconds; conflicts before that are not shown). Returns the
		 * function that stops it. Throws INVALID_ARGUMENT for a listener
		 * that is not a function.
		 */
		conflicts(listener: (conflict: ConflictEvent & { fromOtherTab?: boolean }) => void): () => void;
		/**
		 * Opens the inspector page on this replica in a new window (or the
		 * window named `target`, default "replica-inspect:" + name) and
		 * returns it (null when the browser blocked the pop-up: call it
		 * from a click). The page is `url` (default "/inspect", resolved
		 * against the page's URL) with `?db=` the replica's name; it must be
		 * served from the app's origin to open the same IndexedDB replica:
		 * the relay serves it when started with `-inspect` (as `make run`
		 * does), and a dev server can proxy `/inspect`, `/inspect.js` and
		 * `/inspect.css` to the relay (a URL on the relay's own origin
		 * shows that origin's replicas, not the app's). Meant for
		 * development: the page shows
		 * every row. Throws INVALID_ARGUMENT in a Worker (no window).
		 */
		open(options?: { url?: string; target?: string }): Window | null;
	}

	/** A table as `db.inspect.tables()` lists it. */
	interface InspectTable {
		name: string;
		/** In the schema's order; `default` in the value's text form ("1", "\"x\"", "null"). */
		columns: { name: string; type: ColumnType; notNull: boolean; default?: string }[];
		primaryKey: string[];
		indexes: { name: string; columns: string[] }[];
		/** Live rows; absent with `{counts: false}`. */
		rows?: number;
		/** Deleted rows (tombstones); absent with `{counts: false}`. */
		deleted?: number;
	}

	interface InspectRowsOptions {
		/** The previous page's `next`. */
		after?: string;
		/** Rows per page, 1-1000; default 50. */
		limit?: number;
		search?: string;
		prefix?: boolean;
		deleted?: boolean;
		/** The row records one call reads at most (default: no bound). */
		maxScan?: number;
	}

	/** A cell's version: the write that set it. */
	interface CellVersion {
		/** "wallMs.counter@siteId/opSeq". */
		hlc: string;
		/** The HLC's wall time, ms since the Unix epoch. */
		at: number;
		/** The site id of the replica that wrote it (`db.siteId` for this one's). */
		siteId: string;
	}

	/** One row as `db.inspect.rows` returns it. */
	interface InspectRow {
		/** The primary key's values, in key order: text as is, integers and reals as numbers (integers beyond ±(2^53−1), timestamps, booleans and others as text). */
		key: (string | number)[];
		/**
		 * Its values as `db.query` returns them (every column, schema
		 * order); for a deleted row, the image it had when deleted where
		 * the deleting replica recorded it (else the key, nulls elsewhere).
		 */
		values: Row;
		/**
		 * The version of each stored cell by column: every column written
		 * since the row was created; a deleted row's cells are those its
		 * deletion left (none when it dropped them).
		 */
		cells: { [column: string]: CellVersion };
		deleted: boolean;
		/** The newest deletion of the row, if any (a live row of a table that allows resurrection may carry one). */
		tombstone?: CellVersion;
	}

	interface InspectRowsPage {
		rows: InspectRow[];
		/** `after` for the next page; null at the table's end. */
		next: string | null;
		/** Row records read for this page (matching or not). */
		scanned: number;
	}

	/** One transaction of this replica's change log. */
	interface ChangeLogEntry {
		/** Its base HLC (opSeq 0): "wallMs.counter@siteId/0". */
		hlc: string;
		/** Wall time, ms since the Unix epoch. */
		at: number;
		/** Rows it wrote. */
		rows: number;
		/** Rows it wrote per table, by the table's current name. */
		tables: { [table: string]: number };
		/**
		 * Its schema migrations, as "type table" ("create_table trips"),
		 * the table named as the migration named it (a renamed table by
		 * the name it was created with); a rename as "rename_table trips
		 * to journeys".
		 */
		migrations: string[];
		/** Not yet acknowledged by the relay (above the sent watermark). */
		unsent: boolean;
		/**
		 * For an unsent entry: later writes (this device's or synced ones)
		 * replaced every fact it wrote, so there is nothing of it to push;
		 * it still counts in `db.sync.state.pending` until a later push
		 * moves the sent watermark past it. Always false for sent entries.
		 */
		superseded: boolean;
	}

	interface ChangeLogPage {
		entries: ChangeLogEntry[];
		/** `before` for the next (older) page; null when none is left. */
		next: string | null;
		/**
		 * The sent watermark: the sync target's (the one this tab or the
		 * leader syncs with), else the newest stored for any relay; null
		 * when nothing was ever acknowledged.
		 */
		sentWatermark: string | null;
	}

	/** One held change (see `Inspector.heldChanges`). */
	interface HeldChangeInfo {
		table: string;
		key: (string | number)[];
		/** "column": a cell's write; "delete": a row's deletion. */
		type: "column" | "delete";
		column?: string;
		/** The value as text (at most 200 characters). */
		value?: string;
		hlc: string;
		at: number;
		/** The writing replica. */
		siteId: string;
		reason: HeldReason;
		/** Replayed once the schema defines its table or column (false: its key or value does not fit; dropped at the retention horizon). */
		replayable: boolean;
		/** Offered again to peers (the hold-and-forward policy). */
		forward: boolean;
		/** When this replica held it, ms since the Unix epoch (local clock). */
		receivedAt: number;
	}

	interface HeldChangesPage {
		changes: HeldChangeInfo[];
		next: string | null;
	}

	/** What `db.inspect.sync()` returns. */
	interface InspectSync {
		siteId: string;
		/** Whether this tab leads (holds the relay connection). */
		leader: boolean;
		/** The relay and database this replica syncs with (this tab's or the leader's target, else the last one); null before any. */
		target: { url: string; database: string; sealed: boolean } | null;
		/** As in ChangeLogPage. */
		sentWatermark: string | null;
		/** Local transactions above the sent watermark. */
		unsent: number;
		/**
		 * The sync client's persisted state, by name: per relay log
		 * ("sync:<relaySiteId>/<database>") its `:cursor` (the last relay
		 * sequence applied), `:sent` (the sent watermark), `:chain`,
		 * `:horizon` and the others client/doc.go lists, and the
		 * `sync:relay:<url>#<database>` hints; values as text.
		 */
		state: { name: string; value: string }[];
		/** `db.sync.state` at the time of the call. */
		status: SyncState;
	}

	/**
	 * @deprecated Payload of `unknownTable`, the older name of `held`
	 * (HeldEvent), which fires alongside it for one release: the same
	 * batch, for unknown tables and for changes to known tables that do
	 * not fit alike.
	 */
	interface UnknownTableEvent {
		table: string;
		/** HeldEvent.detail: why the changes do not fit a table this replica has; absent for an unknown table. */
		reason?: string;
		/** HeldEvent.policy under its older name. */
		disposition: "quarantine" | "ignore" | "store-and-forward";
		/** Number of changes held (or dropped) for the table in this batch. */
		changes: number;
		/** Site id (base64url) of the origin of the first of them. */
		site: string;
		/** Highest HLC among them, "wallMs.counter@siteId/opSeq". */
		latestHlc: string;
	}

	/** Payload of `leaderChange`. */
	interface LeaderChangeEvent {
		/** Whether this tab now holds the leader lock (and so the relay connection). */
		isLeader: boolean;
	}

	/** Where syncing stands: `db.sync.state`, and the payload of `syncState`. */
	interface SyncState {
		/**
		 * "disconnected": not connected (never connected, disconnected, not the
		 * leader tab, or waiting to reconnect: see retryAt); "connecting":
		 * dialing the relay, or (in any tab) the leader tab closed, froze or
		 * was hidden and the next leader has not reported its state yet (no
		 * tab is syncing; `pending` is the last count known); "syncing":
		 * connected, catching up (snapshot, first pull), or a pull or push
		 * failing and waiting for its retry (see lastError); "synced": caught
		 * up, live, nothing failing; "error": a fatal error stopped syncing
		 * (see error) until connect is called again. The status never reads
		 * "synced" while pushes are being refused (CLOCK_DRIFT,
		 * APPLY_CHANGES_ERROR): after a refused push it is "synced" again only
		 * once the relay acknowledges a push, also after a reconnect; nor
		 * while changes from the relay cannot be applied here, or while the
		 * relay's answers break the protocol.
		 */
		status: "disconnected" | "connecting" | "syncing" | "synced" | "error";
		/** Why the last session ended (disconnected) or syncing stopped (error). */
		error?: { code: ErrorCode; message: string };
		/**
		 * The most recent transient sync error, while its condition lasts:
		 * something failed but the session went on. For example a push the
		 * relay refused (APPLY_CHANGES_REFUSED) or failed (APPLY_CHANGES_ERROR
		 * or CLOCK_DRIFT, retried), a local transaction too large to push,
		 * changes from the relay that could not be applied here, an answer
		 * of the relay that breaks the protocol (SYNC_ERROR, retried), an
		 * error frame from the relay. While a failed push or pull waits for
		 * its retry the status is "syncing"; a transaction given up on (below)
		 * leaves it "synced". A
		 * transaction the relay refuses on its own, or too large to push, is
		 * given up: it stays on this device, as written, but is not synced
		 * (and no longer counted in `pending`).
		 *
		 * `code` is the relay's error code when the relay sent one (the
		 * protocol's codes, e.g. "APPLY_CHANGES_REFUSED", "GET_CHANGES_ERROR";
		 * a newer relay may send others), else "TRANSACTION_TOO_LARGE" (a
		 * local transaction above the message size limit), "CLOCK_DRIFT"
		 * (changes from the relay stamped more than 60 s ahead of this
		 * device's clock; the relay's own CLOCK_DRIFT refuses pushes stamped
		 * more than 60 s ahead of its clock), "QUOTA_EXCEEDED",
		 * "SYNC_STATE_RESET" (sync state this device stored, a cursor or
		 * watermark, did not decode: it was discarded, reported once, and is
		 * being rebuilt by a new bootstrap and by pushing this device's
		 * writes again; nothing is lost), "RELAY_DIVERGED" (the relay's log
		 * is not the one this device synced with: the relay was restored
		 * from an older backup, its log truncated or replaced; this device
		 * bootstraps again and pushes the writes the relay lost),
		 * "DECRYPT_FAILED", "ENVELOPE_INVALID" or "CHECKPOINT_REFUSED" (a
		 * sealed database: see ErrorCode; a DECRYPT_FAILED stays until
		 * changes apply again, after a connect with the right key) or
		 * "SYNC_ERROR" (anything else); `message` says what failed; `at` is
		 * when it last happened, ms since the epoch.
		 * A SNAPSHOT_REQUIRED answer is not an error (the replica
		 * bootstraps); a bootstrap attempt that applied nothing new before
		 * its connection ended is (SYNC_ERROR, "snapshot transfer
		 * stalled: …" with the cause), and the next attempt waits longer.
		 *
		 * Cleared when its condition clears: an error of a push (the relay's
		 * answer to one, APPLY_CHANGES_*, MESSAGE_TOO_LARGE) when the relay
		 * next acknowledges a push; any other also when changes from the
		 * relay are applied or the session reaches "synced". A transaction
		 * given up on never syncs, so no success clears its error: it stays
		 * until a newer error replaces it. Every one is cleared by
		 * `disconnect`, a connect to another relay or database, or a change
		 * of leader tab. Each change fires `syncState`, and other tabs see it
		 * like the rest of the state.
		 */
		lastError?: { code: string; message: string; at: number };
		/** While waiting to reconnect: when the next attempt is due, ms since the epoch. */
		retryAt?: number;
		/** While a snapshot is being applied (a new device bootstrapping). */
		progress?: {
			table: string;
			tablesDone: number;
			tablesTotal: number;
			rowsApplied: number;
			/** 0 when unknown. */
			rowsTotal: number;
		};
		/**
		 * Local transactions (of every tab) not yet acknowledged by the relay
		 * last connected to (all of them before the first connect), counted by
		 * the leader: writes made offline included, updated after every commit
		 * in any tab (a `syncState` event when the count changes, if anyone
		 * listens or another tab shows it) and after each acknowledged push; 0
		 * before the first count. A transaction all of whose writes were since
		 * overwritten by newer ones may be counted until the next push.
		 */
		pending: number;
		/** Whether this tab is the one holding the relay connection. */
		leader: boolean;
	}

	/** Event names and their payloads, for `db.on`. */
	interface EventMap {
		/** After every commit that changed rows or schema: local, remote, or in another tab. */
		change: ChangeEvent;
		/** After changes from the relay were applied (here or in the leader tab). */
		remoteChange: ChangeEvent;
		/** A synced change met a concurrent local version of a cell. */
		conflict: ConflictEvent;
		/** Synced changes this replica cannot apply now were held (or dropped), per table and batch (in the leader tab, which applies what sync brings; not forwarded to other tabs). */
		held: HeldEvent;
		/** Changes held for a table were replayed: a migration or a newer schema now defines their table or column (in the tab that applied it). */
		heldReplayed: HeldReplayedEvent;
		/** @deprecated The older name of `held`, fired alongside it for one release (same batches, older payload). */
		unknownTable: UnknownTableEvent;
		/** The sync state changed (in the leader tab, and forwarded to the other tabs with leader: false). */
		syncState: SyncState;
		/** This tab became (or stopped being) the leader. */
		leaderChange: LeaderChangeEvent;
	}

	/**
	 * A key of a sealed database, as `Replica.importKey` and
	 * `Replica.deriveKey` make it: the key id and a non-extractable
	 * WebCrypto AES-GCM 256-bit CryptoKey derived from the key (HKDF-SHA-256,
	 * as the native Go client derives it, so both open each other's
	 * envelopes). It holds no key bytes and no passphrase, and nothing can
	 * read them out of it. It survives structured clone: keep it in
	 * IndexedDB (or post it to a worker) and give it to `connect` after a
	 * reload, with no re-entry of the passphrase. Anyone who can run script
	 * in this origin can use it (seal and open) while it is stored, though
	 * not copy it elsewhere.
	 */
	interface SealKey {
		/** The key id envelopes carry: 16 hex digits; the same key gives the same id in every database. */
		readonly keyId: string;
		/** Non-extractable; algorithm AES-GCM, length 256; usages encrypt and decrypt. */
		readonly cryptoKey: CryptoKey;
		/**
		 * The database a key from `Replica.deriveKey` (or a `{passphrase}`
		 * key option) was derived for: the passphrase's salt holds its id, so
		 * the key is that database's only, and `connect` to another database
		 * rejects it (INVALID_ARGUMENT). Absent for a key from
		 * `Replica.importKey`, which serves any database.
		 */
		readonly database?: string;
	}

	/**
	 * A key option of `connect`: a SealKey, a Uint8Array of 32 random bytes
	 * (`crypto.getRandomValues(new Uint8Array(32))`; the app keeps them), or
	 * `{passphrase}`, stretched with PBKDF2-HMAC-SHA-256, 600,000
	 * iterations, salt "replica passphrase v1 " + the database id (about half
	 * a second in Chromium). Bytes and passphrases become SealKeys in the
	 * calling tab and go no further.
	 */
	type SyncKey = SealKey | Uint8Array | { passphrase: string };

	/** `db.sync.connect`'s options. */
	interface SyncOptions {
		/** The relay's database id: 1–128 of [A-Za-z0-9_.:-]. */
		database: string;
		/** Presented to the relay (its auth). */
		token?: string;
		/**
		 * Makes the database sealed (end-to-end encrypted; the relay stores
		 * envelopes it cannot read: docs/SECURITY.md): every change this
		 * replica pushes is sealed with this key (AES-256-GCM in WebCrypto,
		 * outside any IndexedDB transaction), every change it pulls is
		 * opened with it or one of `oldKeys`. A database is sealed or plain
		 * for its life: the relay refuses the other mode (SEALED_MISMATCH).
		 * Replica never sends a key, and never stores one: the app keeps it
		 * (e.g. a SealKey in IndexedDB) and gives it to every connect.
		 */
		key?: SyncKey;
		/**
		 * Rotation: the keys before `key`, still opening the envelopes they
		 * sealed (another device's, or the relay's log and checkpoints from
		 * before the rotation). To rotate, connect every device with the new
		 * key as `key` and the old one in `oldKeys`; drop the old key once
		 * every device has the new one and the relay's log before the
		 * rotation is pruned. Needs `key`.
		 */
		oldKeys?: SyncKey[];
	}

	/**
	 * Syncing with a relay. Only the leader tab holds the connection: other
	 * tabs' writes reach it through the BroadcastChannel and it pushes them.
	 * When the leader closes, the next leader connects with the same
	 * arguments and resumes from the persisted watermarks.
	 *
	 * Sealed databases and tabs: the keys of a connect reach every tab as
	 * SealKeys (non-extractable CryptoKeys, posted over the
	 * BroadcastChannel with the target; a tab that opens later gets them
	 * from the leader), so whichever tab leads seals and opens. They live
	 * only in the tabs' memory: when every tab is closed they are gone, and
	 * the next page's connect gives them again. The leader tab opens and
	 * uploads sealed checkpoints as native clients do (a new device
	 * bootstraps from the newest; the relay prunes the log below it): one
	 * when its cursor is 1000 ChangeSets past the relay's newest, or past it
	 * at all once that one is 24 h old (`client.Options.CheckpointChanges`
	 * and `CheckpointInterval`, the defaults).
	 */
	interface Sync {
		/**
		 * Start syncing this replica with database `options.database` of the
		 * relay at `url` (ws://, wss://, http(s):// is rewritten), presenting
		 * `options.token`. Resolves at once; follow progress with `state` and
		 * the `syncState` event (reconnects with backoff until disconnect).
		 * In a tab that is not the leader it only records the target, used when
		 * it becomes leader (every tab learns the target of a connect made in any
		 * tab). Connecting again to the target the leader is connected to (every
		 * page calling connect on load) leaves its connection alone. Connection failures do not reject: they show in `state` and the
		 * `syncState` event. Rejects: INVALID_ARGUMENT (an empty url, or one not ws://, wss://, http:// or https://, a database id
		 * not of 1–128 of [A-Za-z0-9_.:-], unknown option, a key that is not a
		 * SyncKey, key bytes not 32, an empty passphrase, a SealKey derived
		 * from a passphrase for another database, `oldKeys` without
		 * `key`, no WebCrypto: a page not in a secure context), CLOSED.
		 * Connecting again with other keys to the same target (a rotation,
		 * or the right key after DECRYPT_FAILED) reconnects with them and
		 * pulls again what the old keys could not open; the same keys leave
		 * the connection alone. With a `{passphrase}` it resolves once the
		 * key is derived. Calls of `connect` and `disconnect` take effect in
		 * the order they were made (one still deriving its key holds back the
		 * ones after it). `url` may be an array: relays serving the same
		 * database (several relays on one PostgreSQL); a connection attempt
		 * that fails goes to the next one, round robin, with the backoff.
		 */
		connect(url: string | string[], options: SyncOptions): Promise<void>;
		/** Stop syncing (in every tab's name: the target is forgotten). Resolves when the socket is closed. */
		disconnect(): Promise<void>;
		/**
		 * Ask for a fresh snapshot from the relay (merged into the replica;
		 * nothing local is lost) in the current or next session of the leader
		 * tab. Rejects: CLOSED.
		 */
		requestSnapshot(): Promise<void>;
		/**
		 * Resolves once the relay has every transaction this replica wrote
		 * before the call (in any tab): each acknowledged by the sync
		 * target's relay after it stored it (or one whose values later
		 * writes replaced, which needs no push). A write's own promise
		 * resolves when it is in IndexedDB; `await db.sync.pushed()` after
		 * it says it is also off the device:
		 * `await db.insert("notes", n); await db.sync.pushed();`.
		 * Resolves at once when nothing is unsent; offline, it waits
		 * through reconnects and through `disconnect` for the next
		 * `connect` (race it with a timer for a deadline). Works in every
		 * tab: the acknowledged position is shared through IndexedDB. A
		 * transaction the relay refuses for its content
		 * (APPLY_CHANGES_REFUSED in `state.lastError`: it would be refused
		 * again) is passed over, not retried, and does not hold it back.
		 * Rejects: CLOSED (also for a wait cut short by close).
		 */
		pushed(): Promise<void>;
		/** The current state (a copy). */
		readonly state: SyncState;
	}

	/** An open replica: `await Replica.open(...)`. */
	interface Database extends Operations {
		/** The name it was opened with. */
		readonly name: string;
		/**
		 * This replica's site id: 22 characters of base64url (16 random bytes),
		 * the same in every tab of a browser profile, and the origin named in
		 * the HLCs of its writes ("...@siteId") and in transaction ids.
		 */
		readonly siteId: string;
		/**
		 * Whether this tab holds the replica's Web Locks leader lock
		 * ("replica-leader:" + name). Exactly one open replica of a name per
		 * browser profile does; when it closes, or the browser freezes or
		 * hides it (a background tab, the back/forward cache: the freeze and
		 * pagehide events), it gives the lock and its relay connection up and
		 * another tab takes over within a second. A frozen tab holds no
		 * IndexedDB transaction (one running at the freeze is run again when
		 * the tab resumes: its call settles then, as if nothing happened), so
		 * no tab's call waits on a frozen one. Resumed, the tab leads again
		 * only if no other does (it queues for the lock; until then it shows
		 * the leader's sync state). false until the lock is granted; true
		 * without Web Locks. A tab that stops running without a freeze event
		 * (stuck in a long task) keeps the lock until it runs again.
		 */
		readonly isLeader: boolean;
		/**
		 * The browser's answer to `navigator.storage.persist()`, which
		 * Replica asks once when the replica opens (never awaited: a browser
		 * may ask the user): true if the origin's storage is kept under
		 * storage pressure, false if it may be evicted, null until the
		 * browser answers (or without the Storage API).
		 */
		readonly persisted: boolean | null;
		/** Syncing with a relay. */
		readonly sync: Sync;
		/**
		 * Run `fn` as one transaction: its statements commit together with one
		 * HLC when the promise `fn` returns resolves, and nothing is written if
		 * it rejects or throws (then `transaction` rejects with that same
		 * error). Resolves with `fn`'s result. `fn` may await anything between
		 * statements: no IndexedDB transaction is held across them; the
		 * statements are staged and executed in one IndexedDB transaction at
		 * commit. Rejects also with the commit's error: CONFLICT or NOT_FOUND
		 * when another write changed the rows meanwhile (nothing written),
		 * QUOTA_EXCEEDED, CLOSED.
		 */
		transaction<T>(fn: (tx: Transaction) => Promise<T> | T): Promise<T>;
		/**
		 * Live query: call `callback` with the rows of `query(table, options)`
		 * now, then again whenever they change — after a local write, a synced
		 * change, or a write in another tab to `table`, and only when the rows
		 * differ (compared by value, blobs byte-wise). Writes to other tables
		 * never re-run it; bursts are coalesced (about once per animation frame
		 * while writes keep coming). Callbacks run asynchronously, never inside
		 * the call that caused them. Returns the function that stops it.
		 * `onError` gets the error if the query cannot run (VALIDATION,
		 * INVALID_ARGUMENT, ...), which ends the subscription; without it the
		 * error is reported to the console. Throws INVALID_ARGUMENT for bad
		 * arguments and CLOSED after close.
		 */
		subscribe(table: string, options: QueryOptions | undefined, callback: (rows: Row[]) => void, onError?: (error: ReplicaError) => void): () => void;
		subscribe(table: string, callback: (rows: Row[]) => void, onError?: (error: ReplicaError) => void): () => void;
		/**
		 * Listen to an event (see EventMap); returns the function that removes
		 * the listener. Listeners run asynchronously; an exception in one is
		 * reported and does not affect others. Throws INVALID_ARGUMENT for an
		 * unknown event, CLOSED after close.
		 */
		on<K extends keyof EventMap>(event: K, listener: (payload: EventMap[K]) => void): () => void;
		/**
		 * The synced changes this replica holds instead of applying (see
		 * `OpenOptions.heldChanges` and the `held` event), counted per table
		 * and reason: a dashboard of what an older app version cannot show
		 * yet. Held changes for a table or column a later schema defines
		 * are replayed then (`heldReplayed`); the others are dropped at the
		 * retention horizon. Reads every held change. Rejects: CLOSED.
		 */
		heldChanges(): Promise<HeldStats>;
		/**
		 * Read-only views of what this replica holds, with the metadata
		 * queries leave out (cell HLCs, tombstones, held changes, the change
		 * log, sync cursors), and `open()`, which opens the inspector page.
		 * See Inspector.
		 */
		readonly inspect: Inspector;
		/**
		 * Drop migrations (docs/design.md § Schema migrations): remove a
		 * table (its rows), a column (its values in every row, and indexes
		 * over it) or an index, on this replica and, through sync, on every
		 * replica, whatever order the migrations and data arrive in. The
		 * most destructive change wins: a dropped name is retired for good —
		 * no later or concurrent definition (another device's create or add,
		 * a schema given to `Replica.open` that still lists it) brings it
		 * back, and synced writes to it are discarded; use a new name.
		 * Afterwards writes naming a dropped column are refused with
		 * VALIDATION, and a dropped table is unknown (VALIDATION). A drop
		 * rewrites every row of the table in one IndexedDB transaction.
		 * Peers must speak protocol version 13 or later. Rejects: VALIDATION
		 * (unknown table), SCHEMA (no such column or index, or a primary
		 * key column), INVALID_ARGUMENT, QUOTA_EXCEEDED, CLOSED.
		 */
		dropTable(table: string): Promise<void>;
		dropColumn(table: string, column: string): Promise<void>;
		dropIndex(table: string, index: string): Promise<void>;
		/**
		 * Alter a column's `notNull` and default (an alter_column migration,
		 * docs/design.md § Schema migrations), on this replica and, through
		 * sync, on every replica. Per attribute the latest alter wins
		 * everywhere, whatever order they arrive in; an alter of a dropped
		 * column has no effect. Nothing stored changes: rows holding null
		 * in a column made `notNull` keep it, and later writes must satisfy
		 * it (an insert without a value or default, an update to null:
		 * VALIDATION); a new default applies to later inserts that omit the
		 * column. The altered attributes hold on every device whatever
		 * schema it opened with. Peers must speak protocol version 13 or later.
		 * Rejects: VALIDATION (unknown table, or a default that is not a
		 * value), SCHEMA (no such column, a primary key column, a change of
		 * nothing, a null default on a `notNull` column, a default of the
		 * wrong type, or a type change — it would not converge while values
		 * misfitting the new type are held and LWW has discarded what they
		 * superseded: add a new column, copy the values, drop the old one),
		 * INVALID_ARGUMENT, QUOTA_EXCEEDED, CLOSED.
		 */
		alterColumn(table: string, column: string, change: ColumnChange): Promise<void>;
		/**
		 * Rename a table (a rename_table migration, docs/design.md § Schema
		 * migrations, "Renaming tables"), on this replica and, through sync,
		 * on every replica. The table keeps its rows, indexes and policy;
		 * afterwards queries, subscriptions, events and writes use `to`,
		 * and calls naming `from` are refused with VALIDATION saying the
		 * new name (a subscription on `from` is re-run and gets that
		 * error). Writes a device made under the old name before it
		 * learned the rename land in the renamed table on every replica.
		 * Of concurrent renames of one table the latest wins everywhere; a
		 * drop wins over renames. A name, once a table's, is that table's
		 * for good: renaming to another table's current or former name (or
		 * a dropped table's) is refused, and a table another device creates
		 * under this table's new or old name before it learns the rename is
		 * this table (their rows merge, column by column, latest write
		 * wins). It commits on its own: not available inside
		 * `db.transaction`. Peers must speak protocol version 13 or later. Rejects:
		 * VALIDATION (no table is called `from`, it was renamed or
		 * dropped), SCHEMA (`to` is not a valid name, is `from`, or is or
		 * was another table's), INVALID_ARGUMENT (`to` not a non-empty
		 * string), QUOTA_EXCEEDED, CLOSED.
		 */
		renameTable(from: string, to: string): Promise<void>;
		/**
		 * The transport-agnostic API, for syncing over a channel of your own
		 * (WebRTC, postMessage, a file) instead of, or beside, a relay: the
		 * transactions this replica made after the watermark `since` (a
		 * ChangeSet's `hlc`, e.g. the last page's `next`; null or omitted:
		 * from the beginning, its schema's creation first), whole and in HLC
		 * order, as ChangeSets in the sync protocol's JSON form (plain data:
		 * JSON.stringify and structuredClone keep them; values as in
		 * wire/doc.go: integers beyond 2^53 as {__bigint}, blobs as {__bin}).
		 * Each holds the facts still part of this replica's state (a cell
		 * overwritten since comes back with its new value only). Page with
		 * `next` while `more` is true.
		 *
		 * Only this replica's own transactions: in the browser a replica
		 * does not log what it receives (a remote apply writes rows only),
		 * so with more than two devices each exchanges its own with every
		 * other, or passes on what it received as it came (or use a relay).
		 * Its own HLCs only grow, so the watermark misses nothing; applying a
		 * ChangeSet twice is harmless. Rejects: INVALID_ARGUMENT (a since
		 * that is not an HLC, unknown options), CLOSED.
		 */
		changesSince(since?: string | null, options?: ChangesSinceOptions): Promise<ChangesPage>;
		/**
		 * Apply ChangeSets from another replica (what its `changesSince`
		 * returned, as an array or its JSON text), as synced changes are
		 * applied: the whole batch in one IndexedDB transaction or nothing of
		 * it; in any order (the result is the same as in HLC order); column
		 * last-writer-wins and tombstones; this replica's own ChangeSets
		 * skipped; changes it cannot apply yet held (`held` event, see
		 * `OpenOptions.heldChanges`); `remoteChange` events and subscriptions
		 * follow, in every tab. They are not forwarded to a relay: each
		 * device pushes its own transactions. Rejects: INVALID_ARGUMENT (not
		 * an array of well-formed ChangeSets; the message names the index),
		 * CLOCK_DRIFT (an HLC more than 60 s ahead of this device's clock:
		 * nothing is written), QUOTA_EXCEEDED, CLOSED.
		 */
		applyChanges(changeSets: ChangeSetJSON[] | string): Promise<ApplyResult>;
		/**
		 * Close the replica: subscriptions and listeners stop at once; calls
		 * made before complete; then the IndexedDB connection closes, the leader
		 * lock is released (another tab takes over) and the promise resolves.
		 * Afterwards every call rejects (or throws) with CLOSED. Calling it again
		 * returns the same promise.
		 */
		close(): Promise<void>;
	}

	/**
	 * One transaction of one replica in the sync protocol's JSON form
	 * (wire/doc.go § ChangeSet): `changes` are
	 * `{type: "column", table, pk, column, value, hlc, priorValue?, priorHlc?}`
	 * or `{type: "delete", table, pk, hlc, priorRow?}`; `schemaMigrations`
	 * create tables, columns and indexes ahead of the data. Treat it as
	 * opaque: pass it on unchanged.
	 */
	interface ChangeSetJSON {
		siteId: string;
		transactionId: string;
		/** The highest HLC of its facts (40 base64 characters): a watermark for `changesSince`. */
		hlc: string;
		changes: unknown[];
		schemaMigrations?: unknown[];
	}

	interface ChangesSinceOptions {
		/**
		 * Changes and schema migrations per page, counted in whole
		 * transactions (one larger than the limit comes whole): 1 to 100,000.
		 * Default 1,000.
		 */
		limit?: number;
	}

	/** A page of `changesSince`. */
	interface ChangesPage {
		changeSets: ChangeSetJSON[];
		/** The last ChangeSet's `hlc` (the `since` given when the page is empty): the next call's watermark. */
		next: string;
		/** Whether a call from `next` may return more (false: this page reached the end). */
		more: boolean;
	}

	/** What `applyChanges` did, in changes (cell writes, deletions, migrations). */
	interface ApplyResult {
		/** Changed this replica's state. */
		applied: number;
		/** Did not: older than or equal to what it holds, behind a tombstone, or its own. */
		skipped: number;
		/** Met a concurrent local write of the same cell (whichever won; see the `conflict` event). */
		conflicts: number;
		/** Held instead of applied (unknown table or column, a misfit): see the `held` event. */
		held: number;
		/** ChangeSets processed (this replica's own excluded). */
		transactions: number;
	}

	/**
	 * Where the loader fetches its files from, and where replicas run by
	 * default (`Static.configure`). Relative URLs are resolved against the
	 * page's (or worker's) URL.
	 */
	interface LoadOptions {
		/**
		 * replica.wasm. Default: beside the loader (the script tag: the
		 * directory replica.js was loaded from; the ES module:
		 * `new URL("./replica.wasm", import.meta.url)`, which bundlers such
		 * as Vite rewrite to the file they emit). Serve it as
		 * `application/wasm` (other types work, more slowly).
		 */
		wasmURL?: string | URL;
		/**
		 * Go's wasm_exec.js, loaded only when `globalThis.Go` is not defined.
		 * It must come from the Go release that built replica.wasm. Default:
		 * beside the loader, as `wasmURL`.
		 */
		wasmExecURL?: string | URL;
		/**
		 * replica-worker.js, the script of worker mode (`OpenOptions.worker`),
		 * started as a classic dedicated Worker at the first worker-mode
		 * `open`; it loads `wasmURL` and `wasmExecURL` itself. Default:
		 * beside the loader (the ES module: `new URL("./replica-worker.js",
		 * import.meta.url)`, which Vite emits as a file). It must be
		 * same-origin (a Worker's rule); a Content-Security-Policy needs
		 * `worker-src` (or `script-src`) to allow it. A worker-mode `open`
		 * rejects with INTERNAL naming it when it cannot be loaded or
		 * started, or sends nothing within 30 s (a script that is not
		 * replica-worker.js). Settable until a Worker first runs: after
		 * such a rejection `configure` corrects it and the next
		 * worker-mode `open` uses it.
		 */
		workerURL?: string | URL;
		/**
		 * The default of `OpenOptions.worker`, and where `ready`,
		 * `importKey` and `deriveKey` run (true: in the Worker; `ready`
		 * then resolves once the Worker runs replica.wasm). Settable at
		 * any time, in both builds; it applies to later calls. Default:
		 * true (worker mode: the page never loads replica.wasm) in a
		 * window; false (page mode) where the loader runs in a Worker. The
		 * script tag's `data-worker` attribute sets it: `data-worker` or
		 * `data-worker="true"` true, `data-worker="false"` false (page
		 * mode: the tag then loads replica.wasm into the page at once).
		 */
		worker?: boolean;
	}

	/** The global `Replica` (the script tag), or the `Replica` the ES module exports. */
	interface Static {
		/**
		 * Resolves when replica.wasm is loaded and running (in worker mode,
		 * the default: in the Worker); rejects (code INTERNAL) when it
		 * cannot be fetched or started. `open` waits for it. Loading starts
		 * at the first use of `ready`, `open`, `importKey` or `deriveKey`,
		 * or, for the script tag with `data-worker="false"`, at once.
		 */
		readonly ready: Promise<void>;
		/**
		 * Name where replica.wasm and wasm_exec.js come from, before loading
		 * starts: in the ES module, before the first `ready`, `open`,
		 * `importKey` or `deriveKey` in page mode (`workerURL`: until a
		 * Worker first runs); `worker` at any time. Throws a
		 * ReplicaError (code INVALID_ARGUMENT) for an unknown option, a
		 * value that is not a URL (or, for `worker`, not a boolean), or a
		 * URL given after its loading started (always so for `wasmURL` and
		 * `wasmExecURL` with a script tag that has `data-worker="false"`,
		 * which loads from its own directory at once).
		 */
		configure(options: LoadOptions): void;
		/**
		 * Open (creating or migrating it) the replica `options.name`. Rejects:
		 * INVALID_ARGUMENT (missing name or schema, unknown option, a
		 * resolver function with worker mode asked for), SCHEMA (an
		 * invalid schema, e.g. one with no tables — `{tables: {}}` — or an
		 * unknown column type; or one that contradicts the stored schema),
		 * STORAGE_FORMAT, QUOTA_EXCEEDED, INTERNAL (IndexedDB unavailable, e.g.
		 * in some private modes).
		 *
		 * Retention: while a replica is open, its leader tab (see
		 * `Database.isLeader`) prunes it about 30 s after becoming leader and
		 * then every 6 hours: held changes (see `heldChanges`) kept longer
		 * than `retentionHorizonMs` (30 days) are removed, and its change log
		 * is tidied of entries that later writes superseded. Tombstones go
		 * when the relay's horizon passes them (the sync client applies the
		 * relay's horizon marks: 30 days by default). A device offline for
		 * longer than the relay's horizon re-bootstraps from a snapshot when
		 * it next syncs.
		 */
		open(options: OpenOptions): Promise<Database>;
		/**
		 * The SealKey of 32 key bytes (a sealed database's key, see
		 * `SyncOptions.key`): HKDF-SHA-256 in WebCrypto; the bytes are not
		 * kept. Rejects: INVALID_ARGUMENT (not a Uint8Array of 32 bytes; no
		 * WebCrypto: not a secure context).
		 */
		importKey(bytes: Uint8Array): Promise<SealKey>;
		/**
		 * The SealKey of a passphrase for database `options.database`:
		 * PBKDF2-HMAC-SHA-256, 600,000 iterations, salt "replica passphrase
		 * v1 " + database id, then as `importKey`; about half a second in
		 * Chromium. The salt is public: a passphrase is as strong as it is
		 * long (docs/SECURITY.md). The SealKey records the database
		 * (`SealKey.database`): a connect to another database rejects it.
		 * Rejects: INVALID_ARGUMENT (an empty passphrase, an invalid
		 * database id, no WebCrypto).
		 */
		deriveKey(options: { passphrase: string; database: string }): Promise<SealKey>;
		/** The class of every error Replica rejects with. */
		readonly ReplicaError: ReplicaErrorConstructor;
	}
}

/** Installed by replica.js (or by replica.wasm itself when run without the loader). */
declare var Replica: Replica.Static;
