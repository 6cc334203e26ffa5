package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// ApplyOptions tune ApplyChanges.
type ApplyOptions struct {
	// State entries are written in the same kv transaction as the changes
	// (nil values delete), so a sync cursor advances exactly when the
	// changes it covers land. See Engine.State.
	State map[string][]byte
	// Extra, if set, runs inside the same kv transaction after the
	// changes are merged; an error aborts the whole batch. The relay
	// appends to its arrival log here, atomically with the merge. It must
	// only use buckets the engine does not own.
	Extra func(tx kv.Tx, res ApplyResult) error
	// ExtraSets is Extra with, per ChangeSet of the batch (by index),
	// whether merging it changed this replica's state: a fact or
	// schema migration of it applied. It runs after Extra, in the same
	// transaction. The relay appends a repair push's ChangeSet to its
	// arrival log only when it changed the merged replica (wire's
	// "Repair pushes").
	ExtraSets func(tx kv.Tx, res ApplyResult, changed []bool) error
	// SetResults, when not nil, receives on success what merging each
	// ChangeSet of the batch did, by index (len(sets) entries): the same
	// counts as the result, split by the ChangeSet the change belongs
	// to, so they sum to it. The relay answers each sender of a group
	// it merged in one transaction with its own ChangeSets' counts. A
	// change that another ChangeSet of the same batch superseded counts
	// as skipped, and conflicts are judged against the row as it was
	// before the batch, as for the batch's result. A ChangeSet that Keep
	// left out has a zero entry.
	SetResults *[]ApplyResult
	// MergeOwn merges the changes of this replica's own ChangeSets
	// (their schema migrations are its own already) instead of skipping
	// them as its own echo. The sync client sets it for the ChangeSets of
	// its own the relay sends back after a horizon mark (wire's "Own
	// ChangeSets after a mark"): the relay applied them after pruning, to
	// rows that may no longer hold them here. Facts a row still holds
	// merge as no-ops; none counts as a conflict.
	MergeOwn bool
	// Prefetch names keys (of buckets the engine does not own) that
	// Keep, Extra or ExtraSets will read: on a store whose transactions
	// implement kv.Prefetcher they travel with the engine's first read of
	// the transaction, instead of costing a round trip each later (so do
	// the rows the batch changes, up to guessMaxRows of them).
	Prefetch []kv.BucketKey
	// Keep, if set, runs inside the transaction after the engine's first
	// read and before the merge, and returns per ChangeSet of the batch
	// (by index) whether to merge it: the others are left out of the
	// merge and of the result, and ExtraSets' changed indexes the kept
	// ones. A nil slice keeps every ChangeSet; one of another length is
	// an error. An error aborts the batch and is returned unchanged. The
	// relay leaves out there the transactions its log holds already, in
	// the merge's own transaction.
	Keep func(tx kv.Tx) ([]bool, error)
}

// ApplyChanges merges ChangeSets from peers into this replica (docs/design.md §
// Applying changes) and returns what it did.
//
//   - Column-level LWW: per cell the higher HLC wins; an equal HLC keeps the
//     local version and counts as skipped. A ConflictResolver in Options
//     replaces LWW for cells with a local version.
//   - Tombstones: the highest deletion wins over every cell at or below it;
//     cells above it are kept, and the table's resurrection policy
//     (TableDef.Resurrection, from the database's migrations) decides
//     whether they revive the row (ResurrectionAllowed) or the row stays
//     deleted (delete-wins). So the merged state is the same whatever the
//     policy and whenever it was learned. This holds inside one batch as
//     across batches.
//   - The result is the same for any order and any duplication of the
//     input: merging is a join (per-cell maximum, maximum tombstone), and
//     the stored bytes are canonical.
//   - The whole batch commits in one kv transaction, or nothing of it does.
//     Validation (ErrMalformed) and the drift check (ErrClockDrift) run
//     before anything is written.
//   - ChangeSets minted by this replica are skipped (its own echo).
//   - Changes this replica cannot apply now are held changes, held (or
//     dropped) per Options.HeldChanges, counted in ApplyResult.Held and
//     reported by a ChangesHeld event with their HeldReason: a table
//     outside the schema (a schema-less replica accepts every table) or a
//     column the table does not define yet, both replayed when a
//     migration adds them; a key of other columns or types, or a value
//     that is neither null nor of its column's type, never replayed. The
//     rest of the batch applies. NotNull is not enforced on peers' facts:
//     column-level merges legitimately produce partial rows. A schema-less
//     replica refuses the batch (ErrMalformed) for a value that does not
//     fit a column type a migration declared.
//   - Schema migrations apply first; a duplicate migration is a no-op.
//
// Events (RemoteChange, ConflictResolved, ChangesHeld) are emitted after
// the commit. If the batch created tables or columns that had held
// changes, those are replayed afterwards in a transaction of their own.
func (e *Engine) ApplyChanges(sets []ChangeSet) (ApplyResult, error) {
	return e.Apply(sets, ApplyOptions{})
}

// Apply is ApplyChanges with options.
func (e *Engine) Apply(sets []ChangeSet, opts ApplyOptions) (ApplyResult, error) {
	if err := e.checkOpen(); err != nil {
		return ApplyResult{}, err
	}
	// Work on copies: validation and normalization rewrite values, and the
	// caller's ChangeSets are theirs.
	sets = cloneSets(sets)
	var maxH HLC
	for i := range sets {
		if err := validateChangeSet(&sets[i]); err != nil {
			return ApplyResult{}, fmt.Errorf("ChangeSet %d (%s): %w", i, sets[i].TransactionID, err)
		}
		if sets[i].SiteID != e.site && maxH.Less(sets[i].HLC) {
			maxH = sets[i].HLC
		}
	}
	if err := checkDrift(maxH, e.clock.Now()); err != nil {
		return ApplyResult{}, err
	}
	var out applyOutcome
	var kept []bool // Keep's flags of the committed transaction (nil: all)
	var folded *schemaState
	err := e.store.Update(func(tx kv.Tx) error {
		kept, folded = nil, nil
		if p, ok := tx.(kv.Prefetcher); ok {
			if err := p.Prefetch(append(guessRowKeys(sets), opts.Prefetch...)); err != nil {
				return err
			}
		}
		w, err := e.begin(tx)
		if err != nil {
			return err
		}
		w.mergeOwn = opts.MergeOwn
		batch := sets
		if opts.Keep != nil {
			keep, err := opts.Keep(tx)
			if err != nil {
				return err
			}
			if keep != nil {
				if len(keep) != len(sets) {
					return fmt.Errorf("engine: ApplyOptions.Keep returned %d flags for %d ChangeSets", len(keep), len(sets))
				}
				kept = keep
				batch = make([]ChangeSet, 0, len(sets))
				for i, k := range keep {
					if k {
						batch = append(batch, sets[i])
					}
				}
			}
		}
		out, err = w.applySets(batch, false)
		if err != nil {
			return err
		}
		for k, v := range opts.State {
			if err := putState(tx, k, v); err != nil {
				return err
			}
		}
		if err := w.commit(); err != nil {
			return err
		}
		if w.schemaChanged {
			folded = w.schema
		}
		if opts.Extra != nil {
			if err := opts.Extra(tx, out.result); err != nil {
				return err
			}
		}
		if opts.ExtraSets != nil {
			return opts.ExtraSets(tx, out.result, out.changed)
		}
		return nil
	})
	if err != nil {
		return ApplyResult{}, err
	}
	e.publishSchema(folded)
	e.emitApplied(&out)
	if len(out.created) > 0 {
		if _, err := e.ReplayHeld(out.created...); err != nil {
			e.log.Warn("replica: replaying held changes failed; they stay held for the next replay", "tables", out.created, "err", err)
		}
	}
	if opts.SetResults != nil {
		per := out.perSet
		if kept != nil {
			// By index of sets: the ones Keep left out count nothing.
			per = make([]ApplyResult, len(sets))
			j := 0
			for i, k := range kept {
				if k {
					per[i] = out.perSet[j]
					j++
				}
			}
		}
		*opts.SetResults = per
	}
	return out.result, nil
}

// guessMaxRows bounds the rows guessRowKeys names: a larger batch reads
// its rows by ranges (rangePrefetchMin).
const guessMaxRows = rangePrefetchMin

// guessRowKeys returns the keys in the rows bucket of the rows sets
// change, as received (before the merge normalizes their keys), for a
// kv.Prefetcher to read with the transaction's first read: the merge reads
// them after the meta record, and a store whose reads cost a round trip
// each (kv/pgkv) then answers it from what it prefetched. A key that
// normalization changes is only a wasted read. None for a batch of more
// than guessMaxRows rows.
func guessRowKeys(sets []ChangeSet) []kv.BucketKey {
	var keys []kv.BucketKey
	seen := map[string]bool{}
	for i := range sets {
		for j := range sets[i].Changes {
			c := &sets[i].Changes[j]
			k := layout.RowKey(layout.TableKey(c.Table), c.PK)
			if seen[string(k)] {
				continue
			}
			if len(keys) == guessMaxRows {
				return nil
			}
			seen[string(k)] = true
			keys = append(keys, kv.BucketKey{Bucket: layout.BucketRows, Key: k})
		}
	}
	return keys
}

type applyOutcome struct {
	result    ApplyResult
	remote    []*ChangeSet // per applied ChangeSet, the facts that changed state
	conflicts []Conflict
	held      []HeldReport
	created   []string      // tables created or given columns by this batch
	changed   []bool        // per ChangeSet: a fact or migration of it applied
	perSet    []ApplyResult // per ChangeSet: its share of result
}

// The counters of an apply: each adds to the batch's result and, when
// perSet has its entry (an apply of ChangeSets; a snapshot chunk's merge
// has none), to the share of ChangeSet set (its index in the batch).
func (o *applyOutcome) share(set int) *ApplyResult {
	if set < len(o.perSet) {
		return &o.perSet[set]
	}
	return &ApplyResult{}
}

func (o *applyOutcome) applied(set int)    { o.result.Applied++; o.share(set).Applied++ }
func (o *applyOutcome) skipped(set, n int) { o.result.Skipped += n; o.share(set).Skipped += n }
func (o *applyOutcome) conflict(set int)   { o.result.Conflicts++; o.share(set).Conflicts++ }
func (o *applyOutcome) held1(set int)      { o.result.Held++; o.share(set).Held++ }
func (o *applyOutcome) transaction(set int) {
	o.result.Transactions++
	o.share(set).Transactions++
}

// columnCounts returns the columns of each table of s (the table's
// compiled column map, which a fold never changes).
func columnCounts(s *schemaState) map[string]map[string]*ColumnDef {
	out := make(map[string]map[string]*ColumnDef, len(s.tables))
	for n, t := range s.tables {
		out[n] = t.cols
	}
	return out
}

// grownTables lists, sorted, the tables of s that are new or have a column
// they had not before (columnCounts; a batch may add one column and drop
// another): changes held for them (an unknown table, a column not defined
// yet) may fit now.
func grownTables(before map[string]map[string]*ColumnDef, s *schemaState) []string {
	var out []string
	for n, t := range s.tables {
		cols, ok := before[n]
		grown := !ok
		for c := range t.cols {
			if cols[c] == nil {
				grown = true
			}
		}
		if grown {
			out = append(out, n)
		}
	}
	// Changes held under another name of a table's class (a name a
	// rename_table joined to it: changes travel under the name their
	// writer knew) may fit now too; replaying a name holding none
	// costs one empty read.
	for n, r := range s.alias {
		if n != r && s.tables[r] != nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (e *Engine) emitApplied(out *applyOutcome) {
	for _, cs := range out.remote {
		e.emit(Event{Type: RemoteChange, Tables: tablesOf(cs), ChangeSet: cs})
	}
	for i := range out.conflicts {
		c := out.conflicts[i]
		e.emit(Event{Type: ConflictResolved, Tables: []string{c.Table}, Conflict: &c})
	}
	for i := range out.held {
		h := out.held[i]
		e.emit(Event{Type: ChangesHeld, Tables: []string{h.Table}, Held: &h})
	}
}

func cloneSets(in []ChangeSet) []ChangeSet {
	out := slices.Clone(in)
	for i := range out {
		out[i].Changes = slices.Clone(out[i].Changes)
		out[i].Migrations = slices.Clone(out[i].Migrations)
	}
	return out
}

// validateChangeSet checks the structure of a ChangeSet from a peer.
func validateChangeSet(cs *ChangeSet) error {
	if cs.SiteID.IsZero() {
		return malformed("no site id")
	}
	if cs.Sealed() {
		return malformed("sealed ChangeSet (an envelope): open it with the database's key before applying")
	}
	n := len(cs.Changes) + len(cs.Migrations)
	if n == 0 {
		return malformed("empty ChangeSet")
	}
	var base HLC
	if len(cs.Migrations) > 0 {
		base = cs.Migrations[0].HLC.Base()
	} else {
		base = cs.Changes[0].HLC.Base()
	}
	if base.Site != cs.SiteID {
		return malformed("facts minted by %s in a ChangeSet of %s", base.Site, cs.SiteID)
	}
	seen := make(map[uint32]bool, n)
	var maxH HLC
	check := func(h HLC) error {
		if !h.SameTransaction(base) {
			return malformed("facts of several transactions (%s and %s) in one ChangeSet", base.TransactionID(), h.TransactionID())
		}
		if seen[h.OpSeq] {
			return malformed("opSeq %d used twice", h.OpSeq)
		}
		seen[h.OpSeq] = true
		if maxH.Less(h) {
			maxH = h
		}
		return nil
	}
	for i := range cs.Migrations {
		m := &cs.Migrations[i]
		if err := check(m.HLC); err != nil {
			return err
		}
		if err := validateMigration(m); err != nil {
			return err
		}
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if err := check(c.HLC); err != nil {
			return err
		}
		if err := validateChange(c); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
	}
	if cs.HLC != maxH {
		return malformed("hlc %s is not the maximum fact HLC %s", cs.HLC, maxH)
	}
	if want := base.TransactionID(); cs.TransactionID != want {
		return malformed("transactionId %q, want %q (derived from the base HLC)", cs.TransactionID, want)
	}
	return nil
}

func validateChange(c *Change) error {
	if err := validateChangeKey(c.Table, c.PK); err != nil {
		return err
	}
	return validateChangeBody(c)
}

// validateChangeKey is the part of validateChange that depends only on the
// table and key: facts sharing them need it once.
func validateChangeKey(table string, pk []Value) error {
	if !ValidName(table) {
		return malformed("invalid table name %q", table)
	}
	if len(pk) == 0 {
		return malformed("%s: empty primary key", table)
	}
	for _, v := range pk {
		if v.IsNull() {
			return malformed("%s: null primary key value", table)
		}
		if err := checkFinite(v); err != nil {
			return fmt.Errorf("%s: primary key: %w", table, err)
		}
	}
	if n := len(layout.RowKey(layout.TableKey(table), pk)); n > maxRowKey {
		return malformed("%s: primary key is too long (%d bytes encoded, limit %d)", table, n, maxRowKey)
	}
	return nil
}

// validateChangeBody is the rest of validateChange.
func validateChangeBody(c *Change) error {
	switch c.Type {
	case ColumnChange:
		if !ValidName(c.Column) {
			return malformed("%s: invalid column name %q", c.Table, c.Column)
		}
		if err := checkFinite(c.Value); err != nil {
			return fmt.Errorf("%s.%s: %w", c.Table, c.Column, err)
		}
		if c.HasPrior {
			if err := checkFinite(c.PriorValue); err != nil {
				return fmt.Errorf("%s.%s prior: %w", c.Table, c.Column, err)
			}
		}
		if c.PriorRow != nil {
			return malformed("%s.%s: a column change carries no prior row", c.Table, c.Column)
		}
	case RowDeletion:
		if c.Column != "" || !c.Value.IsNull() || c.HasPrior {
			return malformed("%s: a deletion carries no column, value or prior value", c.Table)
		}
		for n, v := range c.PriorRow {
			if !ValidName(n) {
				return malformed("%s: prior row has invalid column name %q", c.Table, n)
			}
			if err := checkFinite(v); err != nil {
				return fmt.Errorf("%s: prior row: %w", c.Table, err)
			}
		}
	default:
		return malformed("%s: unknown change type %d", c.Table, c.Type)
	}
	return nil
}

func checkFinite(v Value) error {
	if f := v.Real(); v.Kind() == KindReal && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return malformed("non-finite real %v", f)
	}
	if v.Kind() > KindBlob {
		return malformed("invalid value kind %d", v.Kind())
	}
	return nil
}

// pendingFact is one incoming change bound to its row.
type pendingFact struct {
	set int
	c   *Change
	own bool // of this replica's own ChangeSet (ApplyOptions.MergeOwn)
}

// applySets merges sets into the transaction. replay marks a replay of
// held changes (already validated and held; none is held again).
// It works in phases: the migrations first (applySetMigrations), then the
// data changes bound to their rows (groupSetChanges, holding those this
// replica cannot apply), every row loaded with one read per table
// (prefetchRows), merged (mergeRows), and the events of what landed
// (emitSets). The maps are made here and passed down so that they stay
// off the heap while small.
func (w *writeTx) applySets(sets []ChangeSet, replay bool) (applyOutcome, error) {
	out := applyOutcome{perSet: make([]ApplyResult, len(sets))}
	appliedMigs := map[int][]SchemaMigration{}
	maxH, err := w.applySetMigrations(sets, appliedMigs, &out)
	if err != nil {
		return out, err
	}
	rows := map[string]*setRowFacts{}
	rowOrder, err := w.groupSetChanges(sets, replay, rows, &out)
	if err != nil {
		return out, err
	}
	if err := w.prefetchRows(rows, rowOrder); err != nil {
		return out, err
	}
	appliedFacts := map[int][]Change{}
	w.mergeRows(rows, rowOrder, appliedFacts, &out)
	local := w.e.site
	if w.mergeOwn {
		local = SiteID{} // own facts that landed change rows too
	}
	emitSets(sets, local, appliedFacts, appliedMigs, &out)
	w.receiveClock(maxH)
	return out, nil
}

// applySetMigrations counts the sets (those of this replica are skipped;
// under MergeOwn only their migrations, mergeRows counting their changes),
// and stores their schema migrations not stored yet, in HLC order, adding
// to applied those it stored, per set. It returns the sets' greatest HLC.
func (w *writeTx) applySetMigrations(sets []ChangeSet, applied map[int][]SchemaMigration, out *applyOutcome) (HLC, error) {
	local := w.e.site
	var maxH HLC
	before := columnCounts(w.schema)
	type migRef struct {
		set int
		m   *SchemaMigration
	}
	var migs []migRef
	for i := range sets {
		cs := &sets[i]
		if cs.SiteID == local {
			out.skipped(i, len(cs.Migrations))
			if !w.mergeOwn {
				// Under MergeOwn, mergeRows counts the changes.
				out.skipped(i, len(cs.Changes))
			}
			continue
		}
		out.transaction(i)
		if maxH.Less(cs.HLC) {
			maxH = cs.HLC
		}
		for j := range cs.Migrations {
			migs = append(migs, migRef{i, &cs.Migrations[j]})
		}
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].m.HLC.Less(migs[j].m.HLC) })
	for _, ref := range migs {
		k := layout.MigrationKey(layout.ClassRemote, ref.m.HLC)
		if _, err := w.kv.Get(layout.BucketMigrations, k); err == nil {
			out.skipped(ref.set, 1)
			continue
		} else if !errors.Is(err, kv.ErrNotFound) {
			return maxH, err
		}
		if err := w.storeMigration(ref.m, layout.ClassRemote); err != nil {
			return maxH, err
		}
		out.applied(ref.set)
		applied[ref.set] = append(applied[ref.set], *ref.m)
	}
	if w.e.declared != nil {
		out.created = grownTables(before, w.schema)
	}
	return maxH, nil
}

// setRowFacts is one row's incoming changes.
type setRowFacts struct {
	t     *table
	pk    []Value
	facts []pendingFact
}

// heldTally counts the changes of applySets held (or dropped) instead of
// applied, per table, in the order the tables first appear.
type heldTally struct {
	tables map[string]*HeldReport // nil until a change is held
	order  []string
	set    int // the index of the ChangeSet whose change is being bound
}

// groupSetChanges binds the data changes of sets (but this replica's own)
// to their rows in rows (by row key), and reports in out the changes
// held. It returns the row keys in the order rows first appear.
func (w *writeTx) groupSetChanges(sets []ChangeSet, replay bool, rows map[string]*setRowFacts, out *applyOutcome) ([]string, error) {
	var rowOrder []string
	var d heldTally
	for i := range sets {
		cs := &sets[i]
		own := cs.SiteID == w.e.site
		if own && !w.mergeOwn {
			continue
		}
		for j := range cs.Changes {
			c := &cs.Changes[j] // sets are the caller's copies (cloneSets) or ours
			d.set = i
			t, err := w.bindChange(&d, cs, c, replay, out)
			if err != nil {
				return nil, err
			}
			if t == nil {
				continue
			}
			rk := string(layout.RowKey(t.key, c.PK))
			rf := rows[rk]
			if rf == nil {
				rf = &setRowFacts{t: t, pk: c.PK}
				rows[rk] = rf
				rowOrder = append(rowOrder, rk)
			}
			rf.facts = append(rf.facts, pendingFact{set: i, c: c, own: own})
		}
	}
	for _, n := range d.order {
		out.held = append(out.held, *d.tables[n])
	}
	return rowOrder, nil
}

// bindChange normalizes c, of cs, for its table and returns the table; a
// change for an unknown table, or that does not fit its table, is held
// instead (into d) and the table is nil.
func (w *writeTx) bindChange(d *heldTally, cs *ChangeSet, c *Change, replay bool, out *applyOutcome) (*table, error) {
	if w.retiredTable(c.Table) {
		out.result.Skipped++ // its table was dropped: discarded
		return nil, nil
	}
	t := w.effTable(c.Table)
	if t == nil {
		if replay {
			return nil, nil
		}
		return nil, w.hold(d, cs, c, HeldUnknownTable, "", out)
	}
	if err := normalizeChange(t, c); err != nil {
		if errors.Is(err, errRetired) {
			out.result.Skipped++ // its column was dropped: discarded
			return nil, nil
		}
		return nil, w.holdUnfit(d, cs, c, err, replay, out)
	}
	return t, nil
}

// holdUnfit holds c, of cs, whose normalizeChange failed with err: a
// *holdError; any other error is returned.
//
// The change does not fit this replica's definition of the table: its key
// has other columns or types (two app versions declared the table
// differently), or its value is not of the column's type (a forged or
// broken peer). Rejecting the batch would block sync with that peer
// forever; storing it would put a value the schema forbids in front of the
// app; dropping it would lose a write. It is held, like a change for an
// unknown table, reported, and never replayed (HeldChanges lists it; Prune
// drops it at the horizon). A change for a column the table does not
// define (yet) is held the same way but replayed when a migration adds the
// column, so the order in which a column and its values arrive does not
// matter.
func (w *writeTx) holdUnfit(d *heldTally, cs *ChangeSet, c *Change, err error, replay bool, out *applyOutcome) error {
	var he *holdError
	if !errors.As(err, &he) {
		return err
	}
	if replay {
		// Taken out of the hold by this replay: put it back,
		// marked so it is not replayed again.
		if !he.reason.Replayed() {
			w.e.log.Warn("replica: held change does not fit its table; it stays held", "table", c.Table, "err", err)
		}
		return w.holdAs(c, heldFlags(he.reason, w.e.opts.HeldChanges))
	}
	w.e.log.Warn("replica: a peer's change does not fit its table; it is held", "table", c.Table, "err", err)
	return w.hold(d, cs, c, he.reason, he.msg, out)
}

// hold keeps (or, under Drop, drops) c, of cs, a change this replica
// cannot apply for reason (detail: why, in words), and counts and reports
// it in d and out.
func (w *writeTx) hold(d *heldTally, cs *ChangeSet, c *Change, reason HeldReason, detail string, out *applyOutcome) error {
	h := d.tables[c.Table]
	if h == nil {
		if d.tables == nil {
			d.tables = map[string]*HeldReport{}
		}
		h = &HeldReport{Table: c.Table, Reason: reason, Detail: detail, Policy: w.e.opts.HeldChanges, Site: cs.SiteID}
		d.tables[c.Table] = h
		d.order = append(d.order, c.Table)
	}
	h.Changes++
	if h.LatestHLC.Less(c.HLC) {
		h.LatestHLC = c.HLC
	}
	out.held1(d.set)
	if w.e.opts.HeldChanges == Drop {
		return nil
	}
	return w.holdAs(c, heldFlags(reason, w.e.opts.HeldChanges))
}

// prefetchRows loads every row of rows (listed by rowOrder), with one read
// per table.
func (w *writeTx) prefetchRows(rows map[string]*setRowFacts, rowOrder []string) error {
	byTable := map[*table][][]Value{}
	for _, rk := range rowOrder {
		rf := rows[rk]
		byTable[rf.t] = append(byTable[rf.t], rf.pk)
	}
	for t, pks := range byTable {
		if err := w.prefetch(t, pks); err != nil {
			return err
		}
	}
	return nil
}

// mergeRows merges each row's changes (mergeRow), in rowOrder, and counts
// them applied or skipped, adding to applied those that landed, per set.
func (w *writeTx) mergeRows(rows map[string]*setRowFacts, rowOrder []string, applied map[int][]Change, out *applyOutcome) {
	for _, rk := range rowOrder {
		rf := rows[rk]
		r := w.rows[rk]
		w.mergeRow(r, rf.facts, out)
		for _, f := range rf.facts {
			if factLanded(r, f.c) {
				out.applied(f.set)
				applied[f.set] = append(applied[f.set], *f.c)
			} else {
				out.skipped(f.set, 1)
			}
		}
	}
}

// emitSets adds to out.remote, for its event, one ChangeSet per set of
// another site than local with changes or migrations that landed.
func emitSets(sets []ChangeSet, local SiteID, appliedFacts map[int][]Change, appliedMigs map[int][]SchemaMigration, out *applyOutcome) {
	out.changed = make([]bool, len(sets))
	for i := range sets {
		out.changed[i] = len(appliedFacts[i]) > 0 || len(appliedMigs[i]) > 0
		cs := &sets[i]
		if cs.SiteID == local {
			continue
		}
		facts, ms := appliedFacts[i], appliedMigs[i]
		if len(facts) == 0 && len(ms) == 0 {
			continue
		}
		sortChanges(facts)
		out.remote = append(out.remote, &ChangeSet{SiteID: cs.SiteID, TransactionID: cs.TransactionID, HLC: cs.HLC, Migrations: ms, Changes: facts})
	}
}

// normalizeChange converts a peer's values to the column types of t (an
// Integer into a real column becomes Real, …), losslessly, so the row key
// and stored values are the same whatever JSON spelling carried them. A
// value that is neither null nor of its column's type after that, a key of
// other columns or types, or a column t does not define, is a *holdError
// with its HeldReason: the caller holds the change instead of applying it.
//
// A schema-less replica (the relay) stores values exactly as received, so
// its tables are only checked, never converted: a value or key value for a
// column whose type a migration declared must fit it, or the change is
// malformed (refused whole: the relay would otherwise store and forward
// it); columns without a declaration are accepted as received.
func normalizeChange(t *table, c *Change) error {
	pk, _, err := normalizeKey(t, c.Table, c.PK)
	if err != nil {
		return err
	}
	c.PK = pk
	return normalizeFact(t, c)
}

// normalizeKey is the key part of normalizeChange: the key converted to
// t's key types (a new slice; pk is not modified) and its row key.
func normalizeKey(t *table, table string, pk []Value) ([]Value, []byte, error) {
	if len(t.pkCols) > 0 {
		if len(pk) != len(t.pkCols) {
			return nil, nil, &holdError{reason: HeldKeyMismatch, msg: fmt.Sprintf("%s: primary key has %d values, the table's key has %d columns (%v)", table, len(pk), len(t.pkCols), t.pkCols)}
		}
		npk := make([]Value, len(pk))
		for i, v := range pk {
			if d := t.pkDefs[i]; d != nil {
				n := normalizeRemote(d, v)
				if why := model.WrongType(d, n); why != "" {
					if t.asReceived {
						return nil, nil, malformed("%s: key column %s: %s", table, d.Name, why)
					}
					return nil, nil, &holdError{reason: HeldKeyMismatch, msg: fmt.Sprintf("%s: key column %s: %s", table, d.Name, why)}
				}
				if !t.asReceived {
					v = n
				}
			}
			npk[i] = v
		}
		pk = npk
	}
	rk := layout.RowKey(t.key, pk)
	if n := len(rk); n > maxRowKey {
		return nil, nil, malformed("%s: primary key is too long (%d bytes encoded, limit %d)", table, n, maxRowKey)
	}
	return pk, rk, nil
}

// normalizeFact is the rest of normalizeChange, for a change whose key is
// normalized already.
func normalizeFact(t *table, c *Change) error {
	if c.PriorRow != nil {
		c.PriorRow = stripPriorRow(priorImage(c.PriorRow), t.dropped)
	}
	if c.Type == ColumnChange {
		if _, gone := t.dropped[c.Column]; gone {
			return errRetired
		}
		d := t.cols[c.Column]
		switch {
		case d == nil && !t.asReceived:
			return &holdError{reason: HeldUnknownColumn, msg: fmt.Sprintf("%s: column %s is not defined", c.Table, c.Column)}
		case d == nil:
		case t.asReceived:
			if why := model.WrongType(d, normalizeRemote(d, c.Value)); why != "" {
				return malformed("%s.%s: %s", c.Table, c.Column, why)
			}
		default:
			c.Value = normalizeRemote(d, c.Value)
			if why := model.WrongType(d, c.Value); why != "" {
				return &holdError{reason: HeldWrongType, msg: fmt.Sprintf("%s.%s: %s", c.Table, c.Column, why)}
			}
			if c.HasPrior {
				c.PriorValue = normalizeRemote(d, c.PriorValue)
				if model.WrongType(d, c.PriorValue) != "" {
					// A before-image is informational: one that does
					// not fit is dropped, not the change.
					c.HasPrior, c.PriorValue, c.PriorHLC = false, Null, HLC{}
				}
			}
		}
		if c.HasPrior && !priorKept(c.PriorValue) {
			// Kept by no replica (maxPriorValue), whoever sent it.
			c.HasPrior, c.PriorValue, c.PriorHLC = false, Null, HLC{}
		}
		for i, n := range t.pkCols {
			if n == c.Column && !c.Value.Equal(c.PK[i]) {
				return &holdError{reason: HeldKeyMismatch, msg: fmt.Sprintf("%s: key column %s is %s but the change's key says %s", c.Table, n, c.Value, c.PK[i])}
			}
		}
	}
	return nil
}

// holdError is a remote change that does not fit the local definition
// of its table, to be held: reason says how (its key, its value's type,
// its column), msg says it in words (HeldReport.Detail).
type holdError struct {
	reason HeldReason
	msg    string
}

func (e *holdError) Error() string { return e.msg }

// Is makes a holdError match ErrMalformed, should one ever escape the
// paths that hold it (ApplyChanges, a replay of held changes, snapshot
// rows).
func (e *holdError) Is(target error) bool { return target == ErrMalformed }

// mergeRow joins the facts into the row: deletions (mergeDeletion) and
// cells (mergeCell), then the conflicts with the row's state before the
// batch are reported (rowConflicts).
func (w *writeTx) mergeRow(r *txRow, facts []pendingFact, out *applyOutcome) {
	resolver := w.e.opts.Resolver
	if r.cur == nil {
		r.cur = &rowrec.Record{Cells: make([]rowrec.Cell, 0, len(facts))}
	}
	for _, f := range facts {
		switch f.c.Type {
		case RowDeletion:
			if r.cur.HasTomb && f.c.HLC.Less(r.cur.Tomb) && r.cur.Tomb.Site == w.e.site && (r.tbl == nil || !r.tbl.resurrect) {
				// A deletion the own one superseded: the row's shadow
				// until the own one reaches the relay (putShadow); a
				// delete-wins row's only, the one pruning by it
				// decides (pruneShadow).
				r.noteShadow(f.c.HLC)
			}
			r.mergeDeletion(f.c)
		case ColumnChange:
			r.mergeCell(f.c, resolver)
		}
	}
	r.cur.DropDead()
	r.rowConflicts(facts, out)
}

// mergeDeletion joins the row deletion c into the row: the later tombstone
// wins, and a re-delivered one brings its prior row if the row has none.
func (r *txRow) mergeDeletion(c *Change) {
	if !r.cur.HasTomb || r.cur.Tomb.Less(c.HLC) {
		r.cur.HasTomb, r.cur.Tomb, r.cur.PriorRow = true, c.HLC, c.PriorRow
		r.dirty = true
	} else if r.cur.Tomb == c.HLC && r.cur.PriorRow == nil && c.PriorRow != nil {
		r.cur.PriorRow = c.PriorRow
		r.dirty = true
	}
}

// mergeCell joins the column change c into the row: a cell the tombstone
// killed is dropped, a new column taken, and of two writes of a column the
// later (LWW, or resolver's choice when set) kept.
func (r *txRow) mergeCell(c *Change, resolver ConflictResolver) {
	if r.cur.HasTomb && !r.cur.Tomb.Less(c.HLC) {
		return // killed by the tombstone
	}
	in := rowrec.Cell{Col: c.Column, Val: c.Value, HLC: c.HLC}
	if c.HasPrior {
		in.Prior = &rowrec.Prior{Val: c.PriorValue, HLC: c.PriorHLC}
	}
	i := r.cur.Find(c.Column)
	if i < 0 {
		r.cur.Set(in)
		r.dirty = true
		return
	}
	x := &r.cur.Cells[i]
	if x.HLC == c.HLC {
		if x.Prior == nil && c.HasPrior {
			x.Prior = in.Prior
			r.dirty = true
		}
		return
	}
	takeRemote := x.HLC.Less(c.HLC)
	if resolver != nil {
		name := r.table
		if r.tbl != nil && r.tbl.name != "" {
			name = r.tbl.name // a renamed table's current name, as the app knows it
		}
		takeRemote = resolver(ConflictContext{Table: name, PK: r.pk, Column: c.Column,
			LocalValue: x.Val, LocalHLC: x.HLC, RemoteValue: c.Value, RemoteHLC: c.HLC,
			HasRemotePrior: c.HasPrior, RemotePriorValue: c.PriorValue, RemotePriorHLC: c.PriorHLC})
	}
	if takeRemote {
		*x = in
		r.dirty = true
	}
}

// rowConflicts reports in out the column changes of facts that disagreed
// with the row's state before the batch (r.orig), once merged.
//
// Conflicts are judged against the state before the batch, on rows
// that are live before or after it: under delete-wins a deleted row's
// cells written after its tombstone are kept but dead, and writers
// disagreeing about them disagree about nothing anyone sees.
func (r *txRow) rowConflicts(facts []pendingFact, out *applyOutcome) {
	orig := r.orig
	if orig == nil || (r.tbl != nil && !orig.Visible(r.tbl.resurrect) && !r.cur.Visible(r.tbl.resurrect)) {
		return
	}
	for _, f := range facts {
		c := f.c
		if c.Type != ColumnChange || f.own {
			continue
		}
		i := orig.Find(c.Column)
		if i < 0 {
			continue
		}
		o := &orig.Cells[i]
		if o.HLC == c.HLC || o.Val.Equal(c.Value) {
			continue // the same fact again, or no disagreement
		}
		if o.HLC.Site == c.HLC.Site {
			// One site's writes are ordered by its own clock: its later
			// write superseded its earlier one (either may arrive last,
			// a re-delivery included). Two writers did not disagree.
			continue
		}
		if (c.HasPrior && c.PriorHLC == o.HLC) || (o.Prior != nil && o.Prior.HLC == c.HLC) {
			continue // one write directly replaced the other: no concurrency
		}
		out.conflict(f.set)
		out.conflicts = append(out.conflicts, r.conflict(o, c))
	}
}

// conflict describes the disagreement of change c with o, the row's cell
// before the batch, after the merge.
func (r *txRow) conflict(o *rowrec.Cell, c *Change) Conflict {
	j := r.cur.Find(c.Column)
	remoteWon := j >= 0 && r.cur.Cells[j].HLC == c.HLC
	win := o.HLC
	if remoteWon {
		win = c.HLC
	} else if j >= 0 {
		win = r.cur.Cells[j].HLC
	}
	return Conflict{Table: r.table, PK: r.pk, Column: c.Column,
		LocalValue: o.Val, LocalHLC: o.HLC, RemoteValue: c.Value, RemoteHLC: c.HLC,
		RemoteWon: remoteWon, WinningHLC: win,
		HasRemotePrior: c.HasPrior, RemotePriorValue: c.PriorValue, RemotePriorHLC: c.PriorHLC}
}

// factLanded reports whether c is part of r's merged state and was not
// before the batch.
func factLanded(r *txRow, c *Change) bool {
	has := func(rec *rowrec.Record) bool {
		if rec == nil {
			return false
		}
		if c.Type == RowDeletion {
			return rec.HasTomb && rec.Tomb == c.HLC
		}
		i := rec.Find(c.Column)
		return i >= 0 && rec.Cells[i].HLC == c.HLC
	}
	return has(r.cur) && !has(r.orig)
}
