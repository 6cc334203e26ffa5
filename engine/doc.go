// Package engine is Replica's core: a replica of a multi-master, column-level
// CRDT database over an ordered key-value store (package kv). It is
// platform-neutral — the same code runs in the browser over IndexedDB and
// natively over bbolt or memory — and never imports syscall/js. Time comes in
// through a Clock. The design is docs/design.md in the repository; where
// this package departs from the design it grew out of, this documentation
// says so.
//
// The data model — HLC, SiteID, Value, the schema types, Change and
// ChangeSet, the snapshot chunks and their errors — is package model
// (github.com/replica-sync/replica/model), which the wire protocol and the
// relay use without the engine. The engine re-exports those names as type
// aliases and forwarding functions (engine.HLC is model.HLC, engine.Int
// calls model.Int) for one release; new code imports model.
//
// # Usage
//
//	st := memkv.New(engine.Buckets...)           // or boltkv.Open, idbkv.Open
//	db, err := engine.Open(st, engine.Options{Schema: &engine.Schema{Tables: []engine.TableDef{{
//		Name:    "trips",
//		Columns: []engine.ColumnDef{{Name: "title", Type: engine.KindText, NotNull: true}},
//	}}}})
//	row, err := db.Insert("trips", map[string]any{"title": "Lisbon"}) // id: a new UUIDv7
//	_, err = db.Update("trips", engine.Key{row["id"].Text()}, map[string]any{"title": "Porto"})
//	rows, err := db.Query("trips", engine.Query{Where: []engine.Filter{{Column: "title", Op: engine.Prefix, Value: "P"}}})
//
//	sets, err := db.ChangesSince(lastSeen, 1000, engine.ChangesFilter{})  // to a peer
//	res, err := peer.ApplyChanges(sets)                                  // merged, idempotent
//
// # Hybrid logical clock
//
// Every fact carries an HLC (Wall ms, Counter, Site, OpSeq), compared in that
// order; its 30-byte big-endian encoding sorts the same way. One local
// transaction ticks the clock once — counter+1 within a millisecond, the next
// millisecond past 0xFFFF — and numbers its facts with OpSeq in write order,
// schema migrations first. Applying remote changes max-merges the clock, so
// the next local write is stamped above everything seen.
//
// The clock state is stored in the kv store and read and advanced inside the
// same kv transaction that stamps the writes. Hazard when that fails: two
// browser tabs over one IndexedDB database would otherwise mint equal HLCs,
// and LWW would then keep whichever arrived first — a silent divergence. A
// restart or a wall clock that jumps back cannot mint a lower HLC either: the
// tick is above the stored state whatever the wall clock says.
//
// A remote HLC more than MaxDrift (60 000 ms) ahead of the local wall clock
// is refused (ErrClockDrift) before anything is written; exactly 60 000 ms is
// accepted. Hazard: a peer with a clock set in the future would otherwise win
// every conflict until real time caught up.
//
// # Merging
//
// Each cell (table, primary key, column) keeps the value and HLC of the write
// that set it. Merging takes the higher HLC per cell (last-writer-wins); an
// equal HLC keeps the local version. A deletion is a tombstone with its own
// HLC: the highest tombstone kills every cell at or below it. Cells written
// after it are kept, and the table's resurrection policy decides what they
// mean: with delete-wins (the default) the row stays deleted until the
// tombstone is pruned (Prune then drops those cells with it); with
// ResurrectionAllowed a cell above the tombstone revives the row (with only
// the cells written after the deletion; other columns read as null).
// Because merging is a join — per-cell maximum, maximum tombstone, cells
// under the tombstone dropped — the result does not depend on the order or
// the duplication of the input, inside one ApplyChanges batch or across
// batches, nor on the policy, and the stored bytes are canonical: replicas
// that have seen the same facts hold byte-identical rows, change logs and
// indexes.
//
// # Resurrection policy
//
// The policy is a property of each table of the database
// (TableDef.Resurrection, ResurrectionPolicy), not of a replica: declared in
// the schema (or by Options.AllowResurrection for the tables that declare
// none), recorded as a set_resurrection_policy migration when the database
// has no policy for the table, and replicated with the migrations, so every
// device, the relay's schema-less merged replica and its snapshots apply
// the same rule. Rules:
//
//   - Per table, because the migrations are per table and apps differ per
//     table (a to-do list may revive, an audit log may not); the origin
//     design's allowResurrection is one switch, which the option still is.
//   - Default: a table no migration declared is delete-wins, as before.
//   - Convergence: a table's policy is that of its lowest-HLC
//     set_resurrection_policy, the rule the fold applies to every other
//     definition (a column's type, a key, an index): independent of arrival
//     order, and a policy a device has written under is never changed by a
//     later app version. The merged state does not depend on the policy, so
//     replicas that learned it late, or learned two concurrent declarations
//     in either order, converge byte for byte (enginetest
//     ResurrectionPolicies).
//   - Contradiction: Open with a declared policy other than the database's
//     fails with a *SchemaError naming both (JavaScript: SCHEMA), and
//     writes nothing. A device whose concurrent declaration lost gets it at
//     its next open.
//   - A policy fixed by a later migration (a table that had none) applies to
//     the rows already there: a deleted row with cells written after its
//     deletion becomes live under ResurrectionAllowed, on every replica
//     alike. Rows merged by a version before this one dropped such cells
//     under delete-wins (the relay's merged replica did, whatever the
//     clients' option): the relay merges its arrival log again when it
//     first opens such a database (relay/doc.go); a device's own store
//     keeps what it lost until it re-bootstraps.
//
// A conflict (a ConflictResolved event, counted in ApplyResult.Conflicts)
// is two sites' writes disagreeing about a cell: re-delivered facts, one
// site's later write superseding its earlier one (whichever arrives
// first), and a write whose before-image is the local version are not
// conflicts.
//
// A custom ConflictResolver (LocalWins, RemoteWins or your own) can replace
// LWW for cells with a local version; anything but LWW gives up convergence.
//
// # Local writes
//
// Insert, Update, Upsert and Delete (and Transact for several at once) are
// validated against the declared schema (a *ValidationError names table,
// column and reason) and write nothing when invalid. A json value nests at
// most MaxJSONDepth (256) levels, the sync protocol's limit, so whatever a
// replica accepts it can push. A row a local write leaves is at most
// MaxLocalRowSize (2 MiB encoded, a quarter of the 8 MiB storage limit):
// merges of concurrent writes to different columns may grow a row beyond
// it, up to the storage limit, which applies keep; a local write that does
// not grow such a row (clearing a column, a delete) is allowed. A single
// value larger than MaxLocalRowSize on its own (text, bytes, a json string)
// is refused before anything else is done with it, so its cost does not
// grow with its size. An insert
// writes every
// column, so the row travels whole; an update writes only the columns whose
// value changes; a delete leaves a tombstone carrying the row's last image;
// changing a key column moves the row (a tombstone at the old key, a full
// insert at the new one). A transaction that fails, or writes nothing, writes
// nothing at all — not even the clock.
//
// # Change log and ChangeSets
//
// ChangesSince returns whole transactions as ChangeSets, in HLC order,
// bounded at transaction granularity, with only the facts still live. The
// change log holds one entry per local transaction (listing its rows) and
// one per (row, peer's transaction) that still has a live fact in the row:
// a peer's entries die with the last fact they point at; a local
// transaction's entry is written once — a 10,000-row transaction is one
// write, not 10,000 — and tidied by Prune once past the retention horizon.
// So the log is bounded by live cells plus tombstones plus the local
// transactions of the horizon, not by history. Replicas that never serve
// their peers' changes (browser clients, the relay) set
// Options.LocalChangeLogOnly and keep no entries for peers at all.
//
// # Held changes, migrations, snapshots, retention
//
// A synced change this replica cannot apply now is a held change: it is
// held durably (the default policy, Hold), dropped (Drop), or held and
// forwarded to peers (HoldAndForward), per Options.HeldChanges; either way
// it is counted in ApplyResult.Held and reported by a ChangesHeld event
// whose HeldReport names the table and a HeldReason, and the rest of the
// batch applies, so a newer app version, a forged or a broken peer blocks
// no one. The engine tells four reasons apart. HeldUnknownTable: the table
// is outside the schema; the change is replayed when the table appears.
// HeldUnknownColumn: the table does not define the column (yet); the change
// is replayed when a migration adds the column, so the order in which a
// column and its values arrive does not matter. Values from peers are
// checked against the schema after the lossless normalization of wire
// spellings (an integral number into a real or timestamp column, a string
// into a json column): HeldKeyMismatch, a key of other columns or a key
// value of another type than its key column (or a key column set to a
// value that contradicts the key), and HeldWrongType, a value
// that is neither null nor of its column's type, are never replayed
// (HeldChanges lists them with NeverReplayed set). Prune drops held changes at
// the horizon. A snapshot applies without the cells and rows that do not
// fit (held and reported the same way) rather than being refused. NotNull is not
// enforced on peers' facts: column-level merges legitimately produce
// partial rows (a row inserted on one device and updated on another may
// arrive as the update alone), so a remote row may read null in a notNull
// column. A schema-less replica (the relay) stores values as received but
// refuses a batch (ErrMalformed) holding a value that does not fit a
// column type it knows from a migration; columns and tables it has no
// migration for are accepted as received. Schema migrations (create_table, add_column,
// add_index, set_resurrection_policy, and the drops and alters below) are stamped and carried in ChangeSets and folded in HLC order,
// so the first definition of an object wins everywhere (an alter_column's
// notNull and default: the latest). When a migration
// changes a table's shape, the rows it already holds are brought in line in
// the same transaction: a new index gets an entry for each of them, and
// cells stored before their column was known are normalized to its type. Snapshot streams a
// replica's whole state in chunks; ApplySnapshotChunk merges it (it never
// clears local data) with a durable checkpoint for resuming;
// ApplySnapshotChunkWith with Replace makes the replica end with the
// snapshot's rows plus its unsent own writes (a device offline past the
// relay's horizon). Prune drops held changes older than the retention
// horizon (30 days by default) and tidies the own change log; tombstones go
// only through PruneTombstones, at a bound every replica shares (the
// relay's horizon marks; docs/design.md § Retention). PruneTombstonesWith
// with KeepUnsent ends a replica as the relay's row at the mark, pruned,
// merged with the replica's own facts the relay did not hold yet; for a
// row whose own deletion superseded an older one, the prune index keeps
// that one (the row's shadow tombstone) to prune by.
//
// # Dropping tables, columns and indexes
//
// DropTable, DropColumn and DropIndex record a drop_table, drop_column or
// drop_index migration (docs/design.md § Schema migrations; the sync
// protocol's names). Rules:
//
//   - Most destructive wins: a drop retires its name for good. The fold
//     ignores every definition of a dropped table, column or index —
//     before the drop, concurrent with it, or after it, whatever its HLC —
//     so replicas that learn a drop and a definition in any order agree,
//     and a device that had not seen the drop cannot undo it. A dropped
//     name is not reused: a new table, column or index takes a new name.
//   - A drop_column of a key column has no effect (DropColumn refuses it
//     with a *SchemaError); an index over a dropped column goes with it.
//   - The state a drop leaves is the state had the thing never been
//     defined, whatever arrived before it: in the transaction that folds
//     it in, a dropped table's rows (tombstones, index entries, peers'
//     change-log entries) and held changes are deleted; a dropped
//     column's cells, before-images and values in tombstones' prior rows
//     are removed from every row (a row left with nothing is deleted),
//     and its held changes deleted; a dropped index's entries are
//     deleted. That pass loads the table's rows into the transaction.
//   - Changes for a dropped table or column arriving later (from a peer,
//     a replay, a snapshot taken before the drop) are discarded and
//     counted in ApplyResult.Skipped, not held: the name never comes back,
//     so a held change would never replay. The other facts of their
//     ChangeSet apply.
//   - Local writes: a dropped table is ErrUnknownTable (the error says it
//     was dropped); a write naming a dropped column is a
//     *ValidationError; an insert through a declaration that still lists
//     it writes the other columns. Open with a declaration naming
//     something dropped is not an error and records no migration.
//   - The schema-less replica (the relay) applies drops alike, so its
//     snapshots carry the drops and none of the dropped data.
//
// # Altering a column's notNull and default
//
// AlterColumn records an alter_column migration that changes a column's
// notNull, its default, or both (docs/design.md § Schema migrations).
// Rules:
//
//   - Per attribute, the latest alter wins: the fold applies a column's
//     alter_column migrations in HLC order after every definition, each
//     setting only the attributes it names, so notNull and the default
//     each take the value of the highest-HLC alter that set them,
//     whatever the arrival order. An alter of a dropped column or table
//     has no effect (the drop retires the name); so has a peer's alter of
//     a key column, and a peer's default that does not fit the column's
//     type (that attribute only). A null default left on a notNull column
//     (two alters, each valid) is no default.
//   - Nothing stored changes: setting notNull on a column holding nulls
//     keeps those rows as they are (nothing is lost); writes after the
//     fold must satisfy it (an insert with no value and no default, an
//     update to null, are refused with a *ValidationError), updates of
//     the row's other columns are not. As before, peers' facts are not
//     checked against notNull. A new default applies to later inserts
//     that omit the column; rows already inserted keep the value stored.
//   - The altered attributes govern local writes whatever the local
//     declaration says (it may predate the alter). Open with a
//     declaration whose notNull or default differs from the database's
//     records nothing and is not an error: a declaration never alters a
//     column (unlike a type, which gets ErrSchema: there the declaration
//     cannot be right). A column no alter changed keeps the declaration's
//     notNull and default for this device's writes, as before.
//   - AlterColumn refuses (*SchemaError) a key column, a column the
//     table does not have or had dropped, an alteration that changes
//     nothing, one that would leave a notNull column with a null default,
//     a default that does not convert to the column's type, and a type
//     change (Alteration.Type other than the column's): a type change
//     does not converge while values that misfit the new type are held
//     and LWW has discarded the values they superseded. Add a new column
//     of the new type, copy the values, and drop the old one instead.
//   - The schema-less replica (the relay) folds alters alike, and
//     snapshots carry them with the other migrations, before the data.
//
// A type change is not built (above).
//
// # Renaming tables
//
// RenameTable records a rename_table migration (docs/design.md § Schema
// migrations, "Renaming tables"). A table has a stable identity, the name
// it was created with: its rows are stored, and its changes and other
// migrations travel, under it whatever the table is called now; its name
// is an attribute of it. Rules:
//
//   - Latest rename wins: a table is called by the rename_table with the
//     highest HLC among its renames, whatever the arrival order (its
//     identity when none). Renaming back to a former name is a rename like
//     any other.
//   - Most destructive wins: a drop_table of any of a table's names drops
//     it, whatever its renames, before or after the drop.
//   - A name, once a table's, is that table's for good. A rename joins the
//     table's names (identity, former names) and its new name into one
//     class, and every name of a class names one table: a create_table of
//     any of them is a definition of that table (as two devices'
//     create_tables of one name always were: first definition wins,
//     columns and indexes unioned), and changes naming any of them land
//     in it. So a device that has not learned the rename and writes to
//     the old name, an old app version that still declares the old name
//     on a fresh device, and a new app version that creates the table
//     under its new name before its first sync all write into the renamed
//     table, on every replica. A concurrent rename of another table to a
//     name the class holds joins the two tables into one (its rows merge
//     with this table's, a column-level join; rows whose key does not fit
//     the joined table's key are held as HeldKeyMismatch); RenameTable
//     refuses such a name locally.
//   - A class's root, whose identity its rows are stored under, is the
//     name created first (lowest create_table HLC; on the schema-less
//     relay, the smallest name when none was created). When a fold makes
//     a name part of another root's class (the join above, or an earlier
//     create_table arriving), the rows stored under it move into the
//     root's rows in the transaction that folds the migration in (a join
//     of their cells, as for a peer's changes; their index entries are
//     rebuilt). Nothing else stored changes when a rename is folded in.
//   - The local API (writes, Get, Query, Count, the schema migrations'
//     methods, Schema, HeldCounts, HeldChanges), a resolver's
//     ConflictContext and events (Event.Tables, Rows, Conflict, Held,
//     Replayed) name a table by its current name (an event carrying a
//     rename lists every name of the table in Tables, so reads of the old
//     name re-run); ChangeSets (Event.ChangeSet, ChangesSince) and held
//     changes keep the name their writer used. Another name of a renamed
//     table is ErrUnknownTable, whose message gives the current name.
//     Open with a declaration of the current name opens onto the table;
//     with a former name (an old app version), it records nothing for it
//     and is not an error, and writes to that name are refused as above
//     (a mapping would show the app rows under a name whose events and
//     subscriptions say another).
//   - RenameTable refuses (*SchemaError) a new name that is not valid,
//     equals the current one, or is (or was) another table's, a dropped
//     table's included; ErrUnknownTable for a table no table is called
//     now. It commits on its own (not inside Transact or a Staged).
//   - The schema-less replica (the relay) folds renames alike: its
//     snapshots carry them with the other migrations, before the data,
//     and rows under the tables' identities.
//
// # Where this differs from its origins
//
//   - One record per row holds the values and the cell versions together
//     (the origin design keeps one key per cell), and the change log has one entry
//     per local transaction: a local write of n rows costs n row puts plus
//     one change-log entry, which is what IndexedDB's per-request cost
//     rewards. Storage overhead for a 6-column row is about 1× the row's
//     own size (BenchmarkStorage).
//   - Applying a snapshot merges instead of replacing, so writes made while
//     it lands are never lost.
//   - Before-images of remote cells are the origin's (carried with the
//     change), so they do not depend on arrival order.
//   - The delivery of changes between devices is decided by the relay's
//     arrival cursor, not by HLC watermarks (see package wire).
//   - A browser replica logs only its own transactions
//     (Options.LocalChangeLogOnly): the seeds' getChangesSince(peer) serves
//     every transaction a replica holds, db.changesSince its own. Applying
//     a synced change then costs row writes only, no change-log entry;
//     devices that sync without a relay exchange their own transactions
//     with each other, and their own HLCs only grow, so an HLC watermark
//     misses nothing (it can for relayed ones: a third device's clock may
//     be behind).
//   - Held changes are counted as they stand (HeldCounts: per table and
//     per reason under the current schema), not as cumulative totals per
//     disposition since open (the seeds' getUnknownTableStats): what an app
//     can act on is what is held now.
//   - A resolver (Options.Resolver; Replica.open's resolver in JS) that
//     fails or, in JS, answers anything but "local" or "remote" leaves the
//     cell to LWW: an app's bug must not stop sync.
//   - A declared schema that omits a stored table or column drops nothing
//     (an older app version must open data a newer one shaped); dropping
//     is a migration of its own (DropTable, DropColumn, DropIndex), and a
//     dropped name is retired for good (the seeds' "most destructive wins"
//     without reuse: migrations carry no causal order, so an HLC rule
//     would let a concurrent definition bring the dropped thing back).
//     rename_table is built with a stable table identity (the seeds'
//     fromTable/table pair carries names only, so a device that had not
//     learned a rename could not tell where its writes belong): see
//     "Renaming tables". alter_column is built for notNull and
//     the default (AlterColumn, latest alter wins per attribute), not
//     for the type: a type change does not converge while misfitting
//     values are held (LWW has discarded the superseded ones by then),
//     which would need a rule of its own; AlterColumn refuses it
//     (*SchemaError), and the way is a new column, a copy, and a drop of
//     the old one. IndexedDB durability is chosen per
//     replica (Replica.open's durability), not per write, and "safe on the
//     relay" is awaited with db.sync.pushed() rather than a per-write
//     option.
//
// # Backups
//
// Do not restore a replica's store from an older copy and keep using it:
// the copy keeps its site id, so it skips its own later facts when peers
// echo them (they look like its own echoes), and its clock may mint HLCs it
// already used for other facts before the copy was taken. To recover a
// device, open a fresh store (a new site id) and bootstrap it from a peer or
// the relay; its unsynced local writes are lost either way.
//
// # Schema conflicts between app versions
//
// The effective schema is the fold of every device's migrations in HLC
// order, so the first definition of a table, column or index wins
// everywhere (unless a drop retired the name, or a rename joined it to
// another table's: see above). A device whose declaration contradicts it (a column declared
// with another type) gets ErrSchema from Open, naming the column: rename the
// column or the table in the new app version. A declaration whose notNull
// or default differs is not an error and records nothing: a column's
// notNull and default change only by AlterColumn (see above). Changes from a device that
// keyed a table differently (another primary key) do not fit the winning
// definition: they are held (HeldChanges lists them with NeverReplayed set, a
// ChangesHeld event says why: HeldKeyMismatch) instead of blocking sync, and pruned at
// the retention horizon; so are, on typed replicas, values written under a
// declaration whose column type lost the fold. The relay, which knows the
// winning type from its migration, refuses a push holding such values
// (ErrMalformed): the device must adopt the winning declaration.
//
// # Concurrency and events
//
// An Engine is safe for concurrent use; the kv store serializes writes.
// Subscribe delivers Events (LocalChange, RemoteChange, ConflictResolved,
// ChangesHeld) after each commit, naming the tables that changed.
//
// # Storage
//
// The layout of the kv buckets is documented in package
// engine/internal/layout (go doc ./engine/internal/layout); Buckets lists
// them and StorageFormat versions them. Format 2 stores each schema
// migration in its one JSON form, the one the sync protocol carries
// (model.AppendMigrationJSON); Open upgrades a store of format 1, whose
// migrations are in a legacy form, by rewriting them and restamping the
// format in the transaction that opens the store, and refuses any other
// format with ErrStorageFormat. The drop migrations did not change the
// format: they are stored in the same JSON form, as new types, and so are
// alter_column and rename_table. An engine that predates them fails with ErrMalformed (unknown migration type)
// when it loads the schema of a store holding one — at Open when it
// declares a schema — rather than misreading it. From wire version 12 on,
// an engine that meets a stored migration of a type it does not know (a
// newer version's, in a store shared with a newer tab) fails with
// ErrStorageFormat instead, whose message says to update (in a browser,
// to reload the page): the data is not corrupt, the code is old.
package engine
