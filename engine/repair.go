package engine

import (
	"bytes"
	"sort"

	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// Repair positions: where PeerFacts resumes. The schema migrations of
// other sites come first (so that a receiver knows a table and its column
// types before its rows), in HLC order, then the rows, in key order.
const (
	repairMigrations byte = 'm'
	repairRows       byte = 'r'
)

// PeerFacts returns, as ChangeSets, the facts of other sites this replica
// holds: the schema migrations it received, then every live cell and
// tombstone of its rows whose HLC is not its own, from the position after
// (nil: the beginning) on. It is what a sync client pushes to a relay that
// lost history (wire's "Repair pushes"): facts that only a replica other
// than their author may still hold, such as a tombstone its author
// pruned.
//
// A ChangeSet here carries one transaction's facts as they stand in this
// page of rows: a transaction that wrote many rows can come back in
// several ChangeSets across pages, each a subset of it (a receiver merges
// facts, so subsets apply as the whole). Facts superseded here are not
// returned. Unlike ChangesSince it reads the rows, not the change log, so
// it works under Options.LocalChangeLogOnly (the browser).
//
// limit bounds the facts returned, at row granularity (a row's facts go in
// whole); limit <= 0 means DefaultChangesLimit. next is the position to
// pass to the next call, nil once every row was read. It reads in one
// kv view; positions stay valid across writes (a row written meanwhile
// is returned if its key is after the position).
func (e *Engine) PeerFacts(after []byte, limit int) (sets []ChangeSet, next []byte, err error) {
	if err := e.checkOpen(); err != nil {
		return nil, nil, err
	}
	if limit <= 0 {
		limit = DefaultChangesLimit
	}
	err = e.store.View(func(tx kv.Tx) error {
		sets, next = nil, nil
		r := peerReader{own: e.site, limit: limit, index: map[HLC]int{}}
		phase, key := repairRows, []byte(nil)
		if len(after) == 0 {
			phase = repairMigrations
		} else {
			phase, key = after[0], after[1:]
			if phase != repairMigrations && phase != repairRows {
				return malformed("repair position of phase %q", phase)
			}
		}
		if phase == repairMigrations {
			last, full, err := r.migrations(tx, key)
			if err != nil {
				return err
			}
			if full {
				next = append([]byte{repairMigrations}, last...)
				sets = r.out
				return nil
			}
			key = nil
		}
		last, full, err := r.rows(tx, key)
		if err != nil {
			return err
		}
		if full {
			next = append([]byte{repairRows}, last...)
		}
		sets = r.out
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for i := range sets {
		cs := &sets[i]
		sort.Slice(cs.Migrations, func(a, b int) bool { return cs.Migrations[a].HLC.Less(cs.Migrations[b].HLC) })
		sortChanges(cs.Changes)
		cs.HLC = maxFactHLC(cs)
	}
	return sets, next, nil
}

// peerReader gathers PeerFacts' page: facts grouped by transaction (base).
type peerReader struct {
	own   SiteID
	limit int
	n     int
	out   []ChangeSet
	index map[HLC]int // base → position in out
}

func (r *peerReader) set(base HLC) *ChangeSet {
	i, ok := r.index[base]
	if !ok {
		i = len(r.out)
		r.index[base] = i
		r.out = append(r.out, ChangeSet{SiteID: base.Site, TransactionID: base.TransactionID()})
	}
	return &r.out[i]
}

// migrations adds the schema migrations of other sites after key (a
// migrations bucket key; nil: the first). It returns the last key read and
// whether the page filled before the end.
func (r *peerReader) migrations(tx kv.Tx, key []byte) (last []byte, full bool, err error) {
	start := []byte{layout.ClassRemote}
	if key != nil {
		start = append(bytes.Clone(key), 0)
	}
	var derr error
	err = tx.Scan(layout.BucketMigrations, kv.Range{Start: start, End: []byte{layout.ClassRemote + 1}}, func(k, v []byte) bool {
		if r.n >= r.limit {
			full = true
			return false
		}
		m, err := decodeMigration(k, v)
		if err != nil {
			derr = err
			return false
		}
		last = bytes.Clone(k)
		if m.HLC.Site == r.own {
			return true
		}
		cs := r.set(m.HLC.Base())
		cs.Migrations = append(cs.Migrations, m)
		r.n++
		return true
	})
	if err == nil {
		err = derr
	}
	return last, full, err
}

// rows adds the facts of other sites of the rows after key (nil: the
// first), whole rows, until the limit. It returns the last row key read
// and whether the page filled before the end.
func (r *peerReader) rows(tx kv.Tx, key []byte) (last []byte, full bool, err error) {
	var start []byte
	if key != nil {
		start = append(bytes.Clone(key), 0)
	}
	var derr error
	err = tx.Scan(layout.BucketRows, kv.Range{Start: start}, func(k, v []byte) bool {
		if r.n >= r.limit {
			full = true
			return false
		}
		table, pk, err := layout.SplitRowKey(k)
		if err == nil {
			var rec *rowrec.Record
			if rec, err = rowrec.Decode(v, pk); err == nil {
				r.row(rec, table, pk)
			}
		}
		if err != nil {
			derr = err
			return false
		}
		last = bytes.Clone(k)
		return true
	})
	if err == nil {
		err = derr
	}
	return last, full, err
}

// row adds one row's facts of other sites, by transaction.
func (r *peerReader) row(rec *rowrec.Record, table string, pk []Value) {
	var bases []HLC
	add := func(h HLC) {
		if h.Site == r.own {
			return
		}
		b := h.Base()
		for _, o := range bases {
			if o == b {
				return
			}
		}
		bases = append(bases, b)
	}
	if rec.HasTomb {
		add(rec.Tomb)
	}
	for i := range rec.Cells {
		add(rec.Cells[i].HLC)
	}
	for _, b := range bases {
		cs := r.set(b)
		n := len(cs.Changes)
		cs.Changes = appendFacts(cs.Changes, rec, b, table, pk)
		r.n += len(cs.Changes) - n
	}
}
