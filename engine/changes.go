package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// DefaultChangesLimit is the ChangesSince limit used when none is given.
const DefaultChangesLimit = 1000

// ChangesFilter selects the origins ChangesSince returns.
type ChangesFilter struct {
	// OnlyLocal returns only transactions this replica minted (what a
	// client pushes), scanning only its own part of the change log.
	OnlyLocal bool
	// ExcludeSite skips transactions of that site (the peer being
	// answered: it has them). The zero SiteID excludes nothing.
	ExcludeSite SiteID
}

// ChangesSince returns, as whole transactions in HLC order, every fact with
// an HLC above since that is still part of this replica's state (docs/design.md §
// Changes and ChangeSets). The zero HLC means from the
// beginning.
//
// Only live facts come back: a cell overwritten by a newer write, or a row
// deleted, no longer yields its old facts, so a transaction can come back
// with fewer facts than it was written with (and one whose facts are all
// superseded does not come back at all). With Options.LocalChangeLogOnly
// only this replica's own transactions are returned.
//
// limit bounds the result at transaction granularity: transactions are added
// until the number of changes and migrations reaches limit; one transaction
// larger than limit is returned whole. limit <= 0 means
// DefaultChangesLimit. To page, call again with the last ChangeSet's HLC; a
// call that returns fewer than limit facts has reached the end.
func (e *Engine) ChangesSince(since HLC, limit int, f ChangesFilter) ([]ChangeSet, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultChangesLimit
	}
	var out []ChangeSet
	err := e.store.View(func(tx kv.Tx) error {
		out = nil
		schema, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		classes := []byte{layout.ClassOwn}
		if !f.OnlyLocal && !e.opts.LocalChangeLogOnly {
			classes = append(classes, layout.ClassRemote)
		}
		var srcs []*changeSource
		for _, cl := range classes {
			srcs = append(srcs, newLogSource(tx, cl, since), newMigrationSource(tx, cl, since))
		}
		if !f.OnlyLocal && !e.opts.LocalChangeLogOnly && e.declared != nil && e.opts.HeldChanges == HoldAndForward {
			s, err := newForwardSource(tx, since)
			if err != nil {
				return err
			}
			srcs = append(srcs, s)
		}
		r := &changeReader{tx: tx, e: e, schema: schema, since: since, srcs: srcs, filter: f}
		out, err = r.read(limit)
		return err
	})
	return out, err
}

// changeItem is one entry of a source: a log entry (rk set), a migration or
// a forwardable held change.
type changeItem struct {
	base HLC
	rk   []byte
	mig  *SchemaMigration
	held *Change
}

// changeSource yields items in ascending base order, reading pages from one
// bucket range.
type changeSource struct {
	tx       kv.Tx
	bucket   string
	start    []byte
	end      []byte
	parse    func(k, v []byte, out []changeItem) ([]changeItem, error)
	buf      []changeItem
	pos      int
	done     bool
	keysOnly bool
	page     int // entries per scan; 0 means sourcePage
}

// Entries read per scan: a peer's entry is one row, a local transaction's
// lists all its rows (thousands for an import), so its pages are short.
const (
	sourcePage    = 512
	ownSourcePage = 8
)

func newLogSource(tx kv.Tx, class byte, since HLC) *changeSource {
	start := make([]byte, 1+BaseSize)
	start[0] = class
	since.Base().PutBase(start[1:])
	if class == layout.ClassOwn {
		// One entry per local transaction, listing its rows.
		return &changeSource{tx: tx, bucket: layout.BucketLog, start: start, end: []byte{class + 1}, parse: func(k, v []byte, out []changeItem) ([]changeItem, error) {
			if len(k) != 1+BaseSize {
				return out, malformed("own change-log key of %d bytes", len(k))
			}
			base := baseFromBytes(k[1:])
			rks, err := layout.DecodeRowList(v)
			if err != nil {
				return out, err
			}
			for _, rk := range rks {
				// Bytes from a Scan stay valid until the transaction ends,
				// and ChangesSince reads everything in one transaction.
				out = append(out, changeItem{base: base, rk: rk})
			}
			return out, nil
		}, page: ownSourcePage}
	}
	return &changeSource{tx: tx, bucket: layout.BucketLog, start: start, end: []byte{class + 1}, keysOnly: true, parse: func(k, _ []byte, out []changeItem) ([]changeItem, error) {
		_, base, rk, err := layout.ParseLogKey(k)
		return append(out, changeItem{base: base, rk: rk}), err
	}}
}

func newMigrationSource(tx kv.Tx, class byte, since HLC) *changeSource {
	return &changeSource{tx: tx, bucket: layout.BucketMigrations, start: layout.MigrationKey(class, since.Base()), end: []byte{class + 1},
		parse: func(k, v []byte, out []changeItem) ([]changeItem, error) {
			m, err := decodeMigration(k, v)
			return append(out, changeItem{base: m.HLC.Base(), mig: &m}), err
		}}
}

// newForwardSource loads the forwardable held changes above since, sorted.
func newForwardSource(tx kv.Tx, since HLC) (*changeSource, error) {
	s := &changeSource{done: true}
	var derr error
	err := tx.Scan(layout.BucketHeld, kv.Range{}, func(_, v []byte) bool {
		h, err := decodeHeld(v)
		if err != nil {
			derr = err
			return false
		}
		if h.forward && since.Less(h.change.HLC) {
			c := h.change
			s.buf = append(s.buf, changeItem{base: c.HLC.Base(), held: &c})
		}
		return true
	})
	if err == nil {
		err = derr
	}
	sort.SliceStable(s.buf, func(i, j int) bool { return s.buf[i].held.HLC.Less(s.buf[j].held.HLC) })
	return s, err
}

func (s *changeSource) peek() (*changeItem, error) {
	if s.pos < len(s.buf) {
		return &s.buf[s.pos], nil
	}
	if s.done {
		return nil, nil
	}
	s.buf, s.pos = s.buf[:0], 0
	var last []byte
	var perr error
	n := 0
	page := s.page
	if page == 0 {
		page = sourcePage
	}
	err := s.tx.Scan(s.bucket, kv.Range{Start: s.start, End: s.end, Limit: page, KeysOnly: s.keysOnly}, func(k, v []byte) bool {
		n++
		s.buf, perr = s.parse(k, v, s.buf)
		if perr != nil {
			return false
		}
		last = k
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	if n < page {
		s.done = true
	} else {
		s.start = append(bytes.Clone(last), 0)
	}
	if len(s.buf) == 0 {
		return nil, nil
	}
	return &s.buf[0], nil
}

type changeReader struct {
	tx     kv.Tx
	e      *Engine
	schema *schemaState
	since  HLC
	srcs   []*changeSource
	filter ChangesFilter
}

// group is one transaction's items, before its rows are read.
type group struct {
	base  HLC
	items []changeItem
}

// nextGroup gathers every item with the smallest base across sources.
func (r *changeReader) nextGroup() (*group, error) {
	var min *HLC
	for _, s := range r.srcs {
		it, err := s.peek()
		if err != nil {
			return nil, err
		}
		if it != nil && (min == nil || it.base.Less(*min)) {
			b := it.base
			min = &b
		}
	}
	if min == nil {
		return nil, nil
	}
	g := &group{base: *min}
	for _, s := range r.srcs {
		for {
			it, err := s.peek()
			if err != nil {
				return nil, err
			}
			if it == nil || it.base != *min {
				break
			}
			g.items = append(g.items, *it)
			s.pos++
		}
	}
	return g, nil
}

// read assembles ChangeSets until limit facts, reading rows in batches.
func (r *changeReader) read(limit int) ([]ChangeSet, error) {
	var out []ChangeSet
	count := 0
	const batchEntries = 2048
	for count < limit {
		// Gather a batch of groups, then read their rows at once.
		groups, err := r.nextBatch(min(batchEntries, limit-count))
		if err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			break
		}
		vals, err := r.tx.GetMany(layout.BucketRows, groupRowKeys(groups))
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			cs, err := r.changeSetOf(g, &vals)
			if err != nil {
				return nil, err
			}
			if count >= limit {
				break
			}
			n := len(cs.Changes) + len(cs.Migrations)
			if n == 0 {
				continue
			}
			sort.Slice(cs.Migrations, func(i, j int) bool { return cs.Migrations[i].HLC.Less(cs.Migrations[j].HLC) })
			sortChanges(cs.Changes)
			cs.HLC = maxFactHLC(&cs)
			out = append(out, cs)
			count += n
		}
		if count >= limit {
			break
		}
	}
	return out, nil
}

// nextBatch gathers groups (but those of the excluded site) until they hold
// at least entries items, or the sources end.
func (r *changeReader) nextBatch(entries int) ([]*group, error) {
	var groups []*group
	n := 0
	for n < entries {
		g, err := r.nextGroup()
		if err != nil {
			return nil, err
		}
		if g == nil {
			break
		}
		if r.filter.ExcludeSite != (SiteID{}) && g.base.Site == r.filter.ExcludeSite {
			continue
		}
		groups = append(groups, g)
		n += len(g.items)
	}
	return groups, nil
}

// groupRowKeys lists the row keys of the groups' row items, in order.
func groupRowKeys(groups []*group) [][]byte {
	var keys [][]byte
	for _, g := range groups {
		for _, it := range g.items {
			if it.rk != nil {
				keys = append(keys, it.rk)
			}
		}
	}
	return keys
}

// changeSetOf assembles g's ChangeSet (unsorted, without its HLC): its
// migrations and held changes, and the facts of its rows after r.since.
// *vals holds the rows of the row items, in order, from g's on; changeSetOf
// consumes g's.
func (r *changeReader) changeSetOf(g *group, vals *[][]byte) (ChangeSet, error) {
	cs := ChangeSet{SiteID: g.base.Site, TransactionID: g.base.TransactionID()}
	for _, it := range g.items {
		switch {
		case it.mig != nil:
			if r.since.Less(it.mig.HLC) {
				cs.Migrations = append(cs.Migrations, *it.mig)
			}
		case it.held != nil:
			cs.Changes = append(cs.Changes, *it.held)
		default:
			v := (*vals)[0]
			*vals = (*vals)[1:]
			if v == nil {
				continue // log entry without its row: nothing live
			}
			table, pk, err := layout.SplitRowKey(it.rk)
			if err != nil {
				return cs, err
			}
			rec, err := rowrec.Decode(v, pk)
			if err != nil {
				return cs, err
			}
			for _, c := range factsOf(rec, g.base, table, pk) {
				if r.since.Less(c.HLC) {
					cs.Changes = append(cs.Changes, c)
				}
			}
		}
	}
	return cs, nil
}

// HasOwnFacts reports whether this replica holds any live data fact it
// minted itself (schema migrations do not count). A sync client bootstraps
// a replica from a snapshot only when it has none: a replica with its own
// data must push it, not be bootstrapped over (docs/design.md §
// Snapshots).
func (e *Engine) HasOwnFacts() (bool, error) {
	if err := e.checkOpen(); err != nil {
		return false, err
	}
	found := false
	err := e.store.View(func(tx kv.Tx) error {
		src := newLogSource(tx, layout.ClassOwn, HLC{})
		for !found {
			it, err := src.peek()
			if err != nil || it == nil {
				return err
			}
			src.pos++
			// An entry may list rows whose facts of it were since
			// superseded: look at the row.
			v, err := tx.Get(layout.BucketRows, it.rk)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			table, pk, err := layout.SplitRowKey(it.rk)
			if err != nil {
				return err
			}
			rec, err := rowrec.Decode(v, pk)
			if err != nil {
				return err
			}
			found = len(factsOf(rec, it.base, table, pk)) > 0
		}
		return nil
	})
	return found, err
}

// ChangeLogReport describes a store's change log, for diagnostics and
// tests (see InspectChangeLog).
type ChangeLogReport struct {
	// Live lists every (transaction, row) pair the log lists whose row
	// still holds a fact of that transaction, as "base/rowkey" in hex,
	// sorted. It does not depend on which replica minted the facts, so two
	// replicas holding the same facts report the same list.
	Live []string
	// Stale counts rows listed by an own entry that no longer hold a fact
	// of it (allowed: Prune tidies them past the retention horizon).
	Stale int
	// Dead counts per-row entries of peers' transactions whose row holds no
	// fact of the transaction: always 0 unless the log is damaged.
	Dead int
}

// InspectChangeLog reads a store's change log and checks it against the
// rows. It is a diagnostic (and what the engine's tests compare replicas
// by); it reads the whole log.
func InspectChangeLog(st kv.Store) (ChangeLogReport, error) {
	var rep ChangeLogReport
	err := st.View(func(tx kv.Tx) error {
		for _, class := range []byte{layout.ClassOwn, layout.ClassRemote} {
			src := newLogSource(tx, class, HLC{})
			for {
				it, err := src.peek()
				if err != nil {
					return err
				}
				if it == nil {
					break
				}
				src.pos++
				live := false
				v, err := tx.Get(layout.BucketRows, it.rk)
				if err != nil && !errors.Is(err, kv.ErrNotFound) {
					return err
				}
				if err == nil {
					table, pk, err := layout.SplitRowKey(it.rk)
					if err != nil {
						return err
					}
					rec, err := rowrec.Decode(v, pk)
					if err != nil {
						return err
					}
					live = len(factsOf(rec, it.base, table, pk)) > 0
				}
				switch {
				case live:
					var b [BaseSize]byte
					it.base.PutBase(b[:])
					rep.Live = append(rep.Live, fmt.Sprintf("%x/%x", b, it.rk))
				case class == layout.ClassOwn:
					rep.Stale++
				default:
					rep.Dead++
				}
			}
		}
		return nil
	})
	sort.Strings(rep.Live)
	return rep, err
}
