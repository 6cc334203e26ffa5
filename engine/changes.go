package engine

import (
	"bytes"
	"sort"

	"github.com/replica-sync/replica/kv"
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
// an HLC above since that is still part of this replica's state (sync.md §
// Read side: one ChangeSet per transaction). The zero HLC means from the
// beginning.
//
// The log holds only live facts: a cell overwritten by a newer write, or a
// row deleted, no longer yields its old facts, so a transaction can come back
// with fewer facts than it was written with (and one whose facts are all
// superseded does not come back at all).
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
		m, err := readMeta(tx)
		if err != nil {
			return err
		}
		schema, err := e.schemaFor(tx, m.schemaVer)
		if err != nil {
			return err
		}
		classes := []byte{classOwn}
		if !f.OnlyLocal {
			classes = append(classes, classRemote)
		}
		var srcs []*changeSource
		for _, cl := range classes {
			srcs = append(srcs, newLogSource(tx, cl, since), newMigrationSource(tx, cl, since))
		}
		if !f.OnlyLocal && e.declared != nil && e.opts.UnknownTables == StoreAndForward {
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
	tx     kv.Tx
	bucket string
	start  []byte
	end    []byte
	parse  func(k, v []byte) (changeItem, error)
	buf    []changeItem
	pos    int
	done   bool
}

const sourcePage = 512

func newLogSource(tx kv.Tx, class byte, since HLC) *changeSource {
	start := make([]byte, 1+BaseSize)
	start[0] = class
	since.Base().putBase(start[1:])
	return &changeSource{tx: tx, bucket: bucketLog, start: start, end: []byte{class + 1}, parse: func(k, _ []byte) (changeItem, error) {
		_, base, rk, err := parseLogKey(k)
		return changeItem{base: base, rk: bytes.Clone(rk)}, err
	}}
}

func newMigrationSource(tx kv.Tx, class byte, since HLC) *changeSource {
	return &changeSource{tx: tx, bucket: bucketMigrations, start: migrationKey(class, since.Base()), end: []byte{class + 1},
		parse: func(k, v []byte) (changeItem, error) {
			m, err := decodeMigration(k, v)
			return changeItem{base: m.HLC.Base(), mig: &m}, err
		}}
}

// newForwardSource loads the forwardable held changes above since, sorted.
func newForwardSource(tx kv.Tx, since HLC) (*changeSource, error) {
	s := &changeSource{done: true}
	var derr error
	err := tx.Scan(bucketQuarantine, kv.Range{}, func(_, v []byte) bool {
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
	err := s.tx.Scan(s.bucket, kv.Range{Start: s.start, End: s.end, Limit: sourcePage}, func(k, v []byte) bool {
		it, err := s.parse(k, v)
		if err != nil {
			perr = err
			return false
		}
		s.buf = append(s.buf, it)
		last = k
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	if len(s.buf) < sourcePage {
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
		var groups []*group
		entries := 0
		for entries < min(batchEntries, limit-count) {
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
			entries += len(g.items)
		}
		if len(groups) == 0 {
			break
		}
		var keys [][]byte
		for _, g := range groups {
			for _, it := range g.items {
				if it.rk != nil {
					keys = append(keys, it.rk)
				}
			}
		}
		vals, err := r.tx.GetMany(bucketRows, keys)
		if err != nil {
			return nil, err
		}
		ki := 0
		for _, g := range groups {
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
					v := vals[ki]
					ki++
					if v == nil {
						continue // log entry without its row: nothing live
					}
					table, pk, err := splitRowKey(it.rk)
					if err != nil {
						return nil, err
					}
					rec, err := decodeRecord(v, pk)
					if err != nil {
						return nil, err
					}
					for _, c := range factsOf(rec, g.base, table, pk) {
						if r.since.Less(c.HLC) {
							cs.Changes = append(cs.Changes, c)
						}
					}
				}
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

// HasOwnFacts reports whether this replica holds any live data fact it
// minted itself (schema migrations do not count). A sync client bootstraps
// a replica from a snapshot only when it has none: a replica with its own
// data must push it, not be bootstrapped over (sync-protocol.md § Client
// snapshot bootstrap).
func (e *Engine) HasOwnFacts() (bool, error) {
	if err := e.checkOpen(); err != nil {
		return false, err
	}
	found := false
	err := e.store.View(func(tx kv.Tx) error {
		return tx.Scan(bucketLog, kv.Range{Start: []byte{classOwn}, End: []byte{classOwn + 1}, Limit: 1, KeysOnly: true}, func(_, _ []byte) bool {
			found = true
			return false
		})
	})
	return found, err
}
