package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// Op is a filter operator.
type Op string

// Filter operators. Comparisons follow Compare on values of the column's
// type. A null column value matches Eq null and Ne anything non-null; it
// never matches Lt, Le, Gt, Ge, In or Prefix.
const (
	Eq     Op = "="
	Ne     Op = "!="
	Lt     Op = "<"
	Le     Op = "<="
	Gt     Op = ">"
	Ge     Op = ">="
	In     Op = "in"     // Values lists the candidates
	Prefix Op = "prefix" // text columns: the value starts with Value (a string)
)

// Filter is one condition of a Query; a Query's filters all must hold.
// Value (or Values for In) takes any form a write accepts for the column.
type Filter struct {
	Column string
	Op     Op
	Value  any
	Values []any
}

// Order sorts by one column, ascending unless Desc.
type Order struct {
	Column string
	Desc   bool
}

// Query selects live rows of one table. Rows come sorted by OrderBy, then
// by primary key; without OrderBy, in the order of the access path used (the
// primary key, or an index and then the primary key). Offset skips rows;
// Limit > 0 caps the result.
//
// The planner uses the primary key or the secondary index whose leading
// columns best fit the filters: equality (or one In) on leading columns,
// then a range or prefix on the next one. When the index also yields the
// requested order, scanning stops after Offset+Limit matches.
type Query struct {
	Where   []Filter
	OrderBy []Order
	Limit   int
	Offset  int
	// System adds the system columns to each row ($createdAt,
	// $updatedAt, $siteId; see SysCreatedAt), which Where and OrderBy
	// may then name.
	System bool
	// PendingAbove, with System, adds $pending: whether the row holds a
	// write of this replica above this HLC, a sync client's sent
	// watermark (client.SentWatermark): a local change not yet on the
	// relay (the seeds' pendingSync).
	PendingAbove *HLC
	// Deleted returns the deleted rows instead of the live ones (a trash
	// view), with the system columns and $deletedAt: each as the image
	// its tombstone kept (Change.PriorRow: the values it had when it was
	// deleted, where the deleting replica recorded them; the key
	// otherwise), read from the rows, not an index.
	Deleted bool
}

// System columns (Query.System, Query.Deleted): names no table column can
// take (model.ValidName refuses '$'), derived from the HLCs the row
// record keeps (docs/design.md § Storage layout).
const (
	// SysCreatedAt: the wall time (timestamp) of the row's oldest live
	// cell, which is its insert's (key cells are never rewritten); null
	// for a deleted row whose cells the deletion dropped.
	SysCreatedAt = "$createdAt"
	// SysUpdatedAt: the wall time of its newest cell (of its tombstone
	// for a deleted row).
	SysUpdatedAt = "$updatedAt"
	// SysSiteID: the site id (text) of the replica that wrote that newest
	// cell, or deleted the row.
	SysSiteID = "$siteId"
	// SysDeletedAt: the wall time of the deletion (Query.Deleted only).
	SysDeletedAt = "$deletedAt"
	// SysPending: whether the row holds a write of this replica above
	// Query.PendingAbove (boolean; with it only).
	SysPending = "$pending"
)

// sysColumn returns the definition of system column name (nil: none).
func sysColumn(name string, deleted, pending bool) *ColumnDef {
	switch name {
	case SysPending:
		if pending {
			return &ColumnDef{Name: name, Type: KindBoolean}
		}
	case SysCreatedAt, SysUpdatedAt:
		return &ColumnDef{Name: name, Type: KindTimestamp}
	case SysSiteID:
		return &ColumnDef{Name: name, Type: KindText}
	case SysDeletedAt:
		if deleted {
			return &ColumnDef{Name: name, Type: KindTimestamp}
		}
	}
	return nil
}

// ownAbove reports whether rec holds a cell or tombstone of site above h.
func ownAbove(rec *rowrec.Record, site SiteID, h HLC) bool {
	if rec.HasTomb && rec.Tomb.Site == site && h.Less(rec.Tomb) {
		return true
	}
	for i := range rec.Cells {
		if c := rec.Cells[i].HLC; c.Site == site && h.Less(c) {
			return true
		}
	}
	return false
}

// addSystem sets rec's system columns in row.
func addSystem(row Row, rec *rowrec.Record, deleted bool) {
	var oldest, newest HLC
	for i := range rec.Cells {
		h := rec.Cells[i].HLC
		if i == 0 || h.Less(oldest) {
			oldest = h
		}
		if newest.Less(h) {
			newest = h
		}
	}
	row[SysCreatedAt] = Null
	if len(rec.Cells) > 0 {
		row[SysCreatedAt] = TimestampMillis(int64(oldest.Wall))
	}
	if deleted || (rec.HasTomb && newest.Less(rec.Tomb)) {
		newest = rec.Tomb
	}
	row[SysUpdatedAt] = TimestampMillis(int64(newest.Wall))
	row[SysSiteID] = Text(newest.Site.String())
	if deleted {
		row[SysDeletedAt] = TimestampMillis(int64(rec.Tomb.Wall))
	}
}

// Get returns the live row of table with key pk, or ErrNotFound.
func (e *Engine) Get(table string, pk Key) (Row, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var row Row
	err := e.store.View(func(tx kv.Tx) error {
		s, t, err := e.readTable(tx, table)
		if err != nil {
			return err
		}
		_ = s
		key, err := t.coerceKeyLoose(pk)
		if err != nil {
			return err
		}
		v, err := tx.Get(layout.BucketRows, layout.RowKey(t.key, key))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("%w: %s %s", ErrNotFound, table, fmtKey(key))
		}
		if err != nil {
			return err
		}
		rec, err := rowrec.Decode(v, key)
		if err != nil {
			return err
		}
		if !rec.Visible(t.resurrect) {
			return fmt.Errorf("%w: %s %s", ErrNotFound, table, fmtKey(key))
		}
		row = t.rowOf(rec, key)
		return nil
	})
	return row, err
}

// Query returns the live rows of table matching q.
func (e *Engine) Query(table string, q Query) ([]Row, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var rows []Row
	err := e.store.View(func(tx kv.Tx) error {
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		rows, err = e.query(tx, s, table, q)
		return err
	})
	return rows, err
}

// Count returns the number of live rows of table matching where. It keeps
// no rows: without filters it reads only the head of each row record
// (tombstone flag and cell count), with filters it builds each row to test
// it and drops it.
func (e *Engine) Count(table string, where []Filter) (int, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	err := e.store.View(func(tx kv.Tx) error {
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		n, err = e.count(tx, s, table, where)
		return err
	})
	return n, err
}

func (e *Engine) readTable(tx kv.Tx, name string) (*schemaState, *table, error) {
	s, err := e.currentSchema(tx)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.named(name)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		if e.declared != nil {
			return nil, nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
		}
		t = &table{def: TableDef{Name: name}, key: layout.TableKey(name)}
	}
	return s, t, nil
}

// coerceKeyLoose is coerceKey for reads, also working schema-less.
func (t *table) coerceKeyLoose(pk Key) ([]Value, error) {
	if len(t.pkCols) > 0 {
		return t.coerceKey(pk)
	}
	out := make([]Value, len(pk))
	for i, v := range pk {
		x, err := anyValue(t.def.Name, "", v)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	if err := t.checkKeySize(out); err != nil {
		return nil, err
	}
	return out, nil
}

// anyValue converts a Go value without a column type (schema-less reads).
func anyValue(table, col string, v any) (Value, error) {
	var k Kind
	switch v.(type) {
	case nil:
		return Null, nil
	case Value:
		return v.(Value), nil
	case bool:
		k = KindBoolean
	case string:
		k = KindText
	case []byte:
		k = KindBlob
	case float32, float64:
		k = KindReal
	default:
		k = KindInteger
	}
	return coerceValue(&TableDef{Name: table}, &ColumnDef{Name: col, Type: k}, v)
}

// cond is a compiled filter.
type cond struct {
	col    string
	op     Op
	val    Value
	vals   []Value
	prefix string
}

func (c *cond) match(row Row) bool {
	v := row[c.col]
	switch c.op {
	case Eq:
		return Compare(v, c.val) == 0
	case Ne:
		return Compare(v, c.val) != 0
	case Lt, Le, Gt, Ge:
		if v.IsNull() {
			return false
		}
		x := Compare(v, c.val)
		switch c.op {
		case Lt:
			return x < 0
		case Le:
			return x <= 0
		case Gt:
			return x > 0
		}
		return x >= 0
	case In:
		if v.IsNull() {
			return false
		}
		for _, w := range c.vals {
			if Compare(v, w) == 0 {
				return true
			}
		}
		return false
	case Prefix:
		return v.Kind() == KindText && strings.HasPrefix(v.Text(), c.prefix)
	}
	return false
}

// compileFilters checks and converts filter values. They are converted by
// the local declaration of the column when there is one (decl, the same
// rules local writes follow), else by the effective schema's.
func compileFilters(t, decl *table, where []Filter, system func(col string) *ColumnDef) ([]cond, error) {
	out := make([]cond, 0, len(where))
	conv := func(col string, v any) (Value, error) {
		if system != nil {
			if d := system(col); d != nil {
				return coerceValue(&t.def, d, v)
			}
		}
		if decl != nil {
			if d := decl.cols[col]; d != nil {
				return coerceValue(&decl.def, d, v)
			}
		}
		if d := t.cols[col]; d != nil {
			return coerceValue(&t.def, d, v)
		}
		return anyValue(t.def.Name, col, v)
	}
	for _, f := range where {
		if system != nil && system(f.Column) != nil {
			// a system column (Query.System): converted by conv
		} else if len(t.cols) > 0 && t.cols[f.Column] == nil {
			return nil, &ValidationError{Table: t.name, Column: f.Column, Reason: "unknown column in filter"}
		}
		c := cond{col: f.Column, op: f.Op}
		switch f.Op {
		case Eq, Ne, Lt, Le, Gt, Ge:
			v, err := conv(f.Column, f.Value)
			if err != nil {
				return nil, err
			}
			c.val = v
		case In:
			for _, x := range f.Values {
				v, err := conv(f.Column, x)
				if err != nil {
					return nil, err
				}
				c.vals = append(c.vals, v)
			}
		case Prefix:
			s, ok := f.Value.(string)
			if !ok {
				if v, isVal := f.Value.(Value); isVal && v.Kind() == KindText {
					s, ok = v.Text(), true
				}
			}
			if !ok {
				return nil, &ValidationError{Table: t.name, Column: f.Column, Reason: fmt.Sprintf("prefix filter needs a string, got %T", f.Value)}
			}
			if d := t.cols[f.Column]; d != nil && d.Type != KindText {
				return nil, &ValidationError{Table: t.name, Column: f.Column, Reason: "prefix filter on a " + d.Type.String() + " column (text only)"}
			}
			c.prefix = s
		default:
			return nil, &ValidationError{Table: t.name, Column: f.Column, Reason: fmt.Sprintf("unknown filter operator %q", f.Op)}
		}
		out = append(out, c)
	}
	return out, nil
}

// plan is a chosen access path: scans over the rows bucket (primary) or the
// index bucket, each a key range.
type plan struct {
	index   *compiledIndex // nil: primary key
	ranges  []kv.Range
	ordered bool // the scan order is the requested order
	reverse bool
	// ties: rows tied on the requested order do not come in primary-key
	// order (a reverse scan, or index columns between the order columns
	// and the key).
	ties bool
}

// planQuery chooses the access path for conds and order: the primary key or
// the index that scores best (4 per leading column fixed by equality, 2 for
// a range or prefix on the next, 1 when the scan yields order); on a tie
// the primary key wins, then the index declared first. Without a primary
// key or index, a scan of the whole table.
func (e *Engine) planQuery(t *table, conds []cond, order []Order) plan {
	best := plan{ranges: []kv.Range{kv.Prefix(t.key)}}
	bestScore := -1
	if len(t.pkCols) > 0 {
		best, bestScore = planPath(nil, t.pkCols, t.key, conds, order)
	}
	for _, ix := range t.indexes {
		if p, score := planPath(ix, ix.def.Columns, ix.prefix, conds, order); score > bestScore {
			best, bestScore = p, score
		}
	}
	if bestScore < 0 {
		best.ordered = len(order) == 0
	}
	return best
}

// planPath plans a scan of the keys starting with prefix, whose next
// columns are cols (then the primary key): index ix, or the primary key
// when ix is nil. It returns the plan and its score (see planQuery).
func planPath(ix *compiledIndex, cols []string, prefix []byte, conds []cond, order []Order) (plan, int) {
	prefixes, used := eqPrefixes(cols, conds, prefix)
	score := 4 * used
	ranges := make([]kv.Range, 0, len(prefixes))
	rangeUsed := false
	if used < len(cols) {
		for _, p := range prefixes {
			r, bounded := boundRange(p, cols[used], conds)
			ranges = append(ranges, r)
			rangeUsed = rangeUsed || bounded
		}
	} else {
		for _, p := range prefixes {
			ranges = append(ranges, kv.Prefix(p))
		}
	}
	if rangeUsed {
		score += 2
	}
	ordered, reverse := false, false
	if len(ranges) == 1 {
		ordered, reverse = orderFits(cols[used:], order)
	}
	if ordered && len(order) > 0 {
		score++
	}
	ties := ordered && len(order) > 0 && (reverse || (ix != nil && len(cols)-used > len(order)))
	return plan{index: ix, ranges: ranges, ordered: ordered, reverse: reverse, ties: ties}, score
}

// eqPrefixes extends prefix by the values of the equality conditions (or
// one In, of at most 64 values) on the leading columns of cols. It returns
// the key prefixes, sorted and distinct, and how many columns they fix.
func eqPrefixes(cols []string, conds []cond, prefix []byte) ([][]byte, int) {
	prefixes := [][]byte{prefix}
	used := 0
	for used < len(cols) {
		eq := eqCond(cols[used], conds, len(prefixes) == 1)
		if eq == nil {
			break
		}
		var next [][]byte
		vals := []Value{eq.val}
		if eq.op == In {
			vals = eq.vals
		}
		seen := map[string]bool{}
		for _, p := range prefixes {
			for _, v := range vals {
				k := keyenc.AppendValue(bytes.Clone(p), v)
				if !seen[string(k)] { // In may repeat a value
					seen[string(k)] = true
					next = append(next, k)
				}
			}
		}
		sort.Slice(next, func(i, j int) bool { return bytes.Compare(next[i], next[j]) < 0 })
		prefixes = next
		used++
	}
	return prefixes, used
}

// eqCond returns the condition fixing col to values: an Eq, else (when
// inOK) an In of at most 64 values; nil if there is none.
func eqCond(col string, conds []cond, inOK bool) *cond {
	var eq *cond
	for i := range conds {
		if conds[i].col == col && (conds[i].op == Eq || (conds[i].op == In && inOK && len(conds[i].vals) <= 64)) {
			if eq == nil || conds[i].op == Eq {
				eq = &conds[i]
			}
		}
	}
	return eq
}

// boundRange returns the range of the keys starting with p that the range
// and prefix conditions on col, the column after p, allow, and whether
// any condition narrowed its start or end.
func boundRange(p []byte, col string, conds []cond) (r kv.Range, bounded bool) {
	r = kv.Prefix(p)
	for i := range conds {
		c := &conds[i]
		if c.col != col {
			continue
		}
		switch c.op {
		case Gt, Ge:
			k := keyenc.AppendValue(bytes.Clone(p), c.val)
			if c.op == Gt {
				k = kv.PrefixEnd(k)
			}
			if bytes.Compare(k, r.Start) > 0 {
				r.Start, bounded = k, true
			}
		case Lt, Le:
			k := keyenc.AppendValue(bytes.Clone(p), c.val)
			if c.op == Le {
				k = kv.PrefixEnd(k)
			}
			if r.End == nil || bytes.Compare(k, r.End) < 0 {
				r.End, bounded = k, true
			}
		case Prefix:
			k := keyenc.AppendTextPrefix(bytes.Clone(p), c.prefix)
			if bytes.Compare(k, r.Start) > 0 {
				r.Start, bounded = k, true
			}
			if end := kv.PrefixEnd(k); r.End == nil || bytes.Compare(end, r.End) < 0 {
				r.End = end
			}
		}
	}
	return r, bounded
}

// orderFits reports whether scanning columns cols (then the primary key)
// yields order, and whether in reverse.
func orderFits(cols []string, order []Order) (ok, reverse bool) {
	if len(order) == 0 {
		return true, false
	}
	if len(order) > len(cols) {
		return false, false
	}
	desc := order[0].Desc
	for i, o := range order {
		if o.Column != cols[i] || o.Desc != desc {
			return false, false
		}
	}
	return true, desc
}

func (e *Engine) query(tx kv.Tx, s *schemaState, name string, q Query) ([]Row, error) {
	return e.scanRows(tx, s, name, q, nil)
}

// count counts the rows query would return for where, keeping none.
func (e *Engine) count(tx kv.Tx, s *schemaState, name string, where []Filter) (int, error) {
	n := 0
	_, err := e.scanRows(tx, s, name, Query{Where: where}, &n)
	return n, err
}

// scanRows runs q. With counted set, it only counts the matching rows into
// *counted and returns none (q must then have no order, limit or offset).
func (e *Engine) scanRows(tx kv.Tx, s *schemaState, name string, q Query, counted *int) ([]Row, error) {
	t, err := s.named(name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if e.declared != nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
		}
		t = &table{def: TableDef{Name: name}, key: layout.TableKey(name)}
	}
	conds, err := e.compileQuery(t, name, q)
	if err != nil {
		return nil, err
	}
	sc := rowScan{tx: tx, t: t, conds: conds, order: q.OrderBy, stopAt: -1, counted: counted, system: q.System, deleted: q.Deleted, pending: q.PendingAbove, site: e.site}
	if q.Deleted {
		// A deleted row has no index entries: the primary key path.
		sc.p = plan{ranges: []kv.Range{kv.Prefix(t.key)}, ordered: len(q.OrderBy) == 0}
		if len(t.pkCols) > 0 {
			sc.p, _ = planPath(nil, t.pkCols, t.key, conds, q.OrderBy)
		}
	} else {
		sc.p = e.planQuery(t, conds, q.OrderBy)
	}
	if sc.p.ordered && q.Limit > 0 {
		sc.stopAt = q.Offset + q.Limit
	}
	// Counting without filters needs only each record's head.
	sc.headOnly = counted != nil && len(conds) == 0
	for _, r := range sc.p.ranges {
		if sc.full() {
			break
		}
		r.Reverse = sc.p.reverse
		if sc.p.index == nil {
			err = sc.tableScan(r)
		} else {
			err = sc.indexScan(r)
		}
		if err != nil {
			return nil, err
		}
	}
	return sc.result(q), nil
}

// compileQuery checks q's limit, offset and order columns for t, and
// compiles its filters.
func (e *Engine) compileQuery(t *table, name string, q Query) ([]cond, error) {
	if q.Limit < 0 || q.Offset < 0 {
		return nil, &ValidationError{Table: name, Reason: "limit and offset must not be negative"}
	}
	sys := q.System || q.Deleted
	for _, o := range q.OrderBy {
		if sys && sysColumn(o.Column, q.Deleted, q.PendingAbove != nil && q.System) != nil {
			continue
		}
		if len(t.cols) > 0 && t.cols[o.Column] == nil {
			return nil, &ValidationError{Table: name, Column: o.Column, Reason: "unknown column in orderBy"}
		}
	}
	if !sys {
		return compileFilters(t, e.declared[name], q.Where, nil)
	}
	return compileFilters(t, e.declared[name], q.Where, func(col string) *ColumnDef { return sysColumn(col, q.Deleted, q.PendingAbove != nil && q.System) })
}

// rowScan is one run of scanRows over the ranges of its plan: the rows
// accepted so far, or their count.
type rowScan struct {
	tx       kv.Tx
	t        *table
	conds    []cond
	order    []Order
	p        plan
	stopAt   int  // with an ordered scan and a limit, the rows wanted (Offset+Limit); else -1
	counted  *int // count only, into *counted
	headOnly bool // counting without filters: read only each record's head
	system   bool // Query.System
	deleted  bool // Query.Deleted
	pending  *HLC // Query.PendingAbove (with system)
	site     SiteID
	rows     []Row
	pks      [][]Value // scratch of indexKeys: the keys' primary keys
}

// full reports whether the scan has the rows it needs. An ordered scan
// yields rows tied on the order in the order of what follows the order
// columns in its key (see result); then an early stop completes the tie
// group at the cut, so a limit keeps the same rows whatever the access
// path.
func (s *rowScan) full() bool {
	if s.stopAt < 0 || len(s.rows) < s.stopAt {
		return false
	}
	if !s.p.ties {
		return true
	}
	return len(s.rows) > s.stopAt && !sameOrderKey(s.rows[len(s.rows)-1], s.rows[s.stopAt-1], s.order)
}

// accept adds the row of rec (key pk) if it is live and matches every
// condition.
func (s *rowScan) accept(rec *rowrec.Record, pk []Value) {
	var row Row
	switch visible := rec.Visible(s.t.resurrect); {
	case s.deleted:
		if visible || !rec.HasTomb {
			return
		}
		row = make(Row, len(rec.PriorRow)+len(pk)+4)
		for k, v := range rec.PriorRow {
			row[k] = v
		}
		for i, n := range s.t.pkCols {
			if i < len(pk) {
				row[n] = pk[i]
			}
		}
		for _, c := range s.t.def.Columns {
			if _, ok := row[c.Name]; !ok {
				row[c.Name] = Null
			}
		}
		addSystem(row, rec, true)
	case !visible:
		return
	default:
		row = s.t.rowOf(rec, pk)
		if s.system {
			addSystem(row, rec, false)
			if s.pending != nil {
				row[SysPending] = Bool(ownAbove(rec, s.site, *s.pending))
			}
		}
	}
	for i := range s.conds {
		if !s.conds[i].match(row) {
			return
		}
	}
	if s.counted != nil {
		*s.counted++
		return
	}
	s.rows = append(s.rows, row)
}

// tableScan scans range r of the rows bucket.
func (s *rowScan) tableScan(r kv.Range) error {
	var derr error
	err := s.tx.Scan(layout.BucketRows, r, func(k, v []byte) bool {
		if s.headOnly {
			live, err := rowrec.Live(v, s.t.resurrect)
			if err != nil {
				derr = err
				return false
			}
			if live {
				*s.counted++
			}
			return true
		}
		_, pk, err := layout.SplitRowKey(k)
		if err == nil {
			var rec *rowrec.Record
			rec, err = rowrec.Decode(v, pk)
			if err == nil {
				s.accept(rec, pk)
			}
		}
		if err != nil {
			derr = err
			return false
		}
		return !s.full()
	})
	if err == nil {
		err = derr
	}
	return err
}

// indexPage is the number of index keys an index scan reads at a time.
const indexPage = 256

// indexScan scans range r of the index bucket: it collects keys a page at
// a time and reads their rows at once. With a limit, a page holds only the
// keys still wanted (plus one, for a tie at the cut): reading 256 rows for
// a limit of 50 cost 2.3 row reads per row returned.
func (s *rowScan) indexScan(r kv.Range) error {
	r.KeysOnly = true
	for {
		lim := indexPage
		if s.stopAt >= 0 {
			lim = min(indexPage, max(s.stopAt-len(s.rows), 0)+1)
		}
		r.Limit = lim
		keys, last, err := s.indexKeys(r)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := s.readIndexed(keys); err != nil {
				return err
			}
		}
		if len(keys) < lim || s.full() {
			return nil
		}
		if r.Reverse {
			r.End = bytes.Clone(last)
		} else {
			r.Start = append(bytes.Clone(last), 0)
		}
	}
}

// indexKeys reads the index keys of r: it returns their rows' keys (their
// primary keys in s.pks) and the last index key read.
func (s *rowScan) indexKeys(r kv.Range) (keys [][]byte, last []byte, err error) {
	s.pks = s.pks[:0]
	ix := s.p.index
	var derr error
	err = s.tx.Scan(layout.BucketIndex, r, func(k, _ []byte) bool {
		last = k
		rest := k[len(ix.prefix):]
		_, rest, err := keyenc.DecodeTuple(rest, len(ix.def.Columns))
		if err != nil {
			derr = err
			return false
		}
		pk, _, err := keyenc.DecodeTuple(rest, -1)
		if err != nil {
			derr = err
			return false
		}
		s.pks = append(s.pks, pk)
		keys = append(keys, layout.RowKey(s.t.key, pk))
		return true
	})
	if err == nil {
		err = derr
	}
	return keys, last, err
}

// readIndexed reads the rows of keys (indexKeys) and accepts them, until
// the scan is full.
func (s *rowScan) readIndexed(keys [][]byte) error {
	vals, err := s.tx.GetMany(layout.BucketRows, keys)
	if err != nil {
		return err
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		rec, err := rowrec.Decode(v, s.pks[i])
		if err != nil {
			return err
		}
		s.accept(rec, s.pks[i])
		if s.full() {
			break
		}
	}
	return nil
}

// result sorts the rows when the scan did not yield q's order, and applies
// q's offset and limit.
func (s *rowScan) result(q Query) []Row {
	// An ordered scan yields rows tied on OrderBy in the order of what
	// follows the order columns in its key: the primary key when scanning
	// forward right after them, but descending on a reverse scan, and by
	// other index columns when the order covers only a prefix of them
	// (p.ties). Then the rows are sorted afterwards (ties by primary key,
	// as documented).
	rows := s.rows
	if !s.p.ordered || len(s.p.ranges) > 1 || s.p.ties {
		sortRows(rows, q.OrderBy, s.t)
	}
	if q.Offset >= len(rows) {
		return []Row{}
	}
	rows = rows[q.Offset:]
	if q.Limit > 0 && len(rows) > q.Limit {
		rows = rows[:q.Limit]
	}
	return rows
}

// sameOrderKey reports whether a and b tie on every column of order.
func sameOrderKey(a, b Row, order []Order) bool {
	for _, o := range order {
		if Compare(a[o.Column], b[o.Column]) != 0 {
			return false
		}
	}
	return true
}

func sortRows(rows []Row, order []Order, t *table) {
	sort.SliceStable(rows, func(i, j int) bool {
		for _, o := range order {
			c := Compare(rows[i][o.Column], rows[j][o.Column])
			if c != 0 {
				if o.Desc {
					return c > 0
				}
				return c < 0
			}
		}
		for _, n := range t.pkCols {
			if c := Compare(rows[i][n], rows[j][n]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}
