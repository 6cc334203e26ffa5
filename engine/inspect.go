package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
	"github.com/replica-sync/replica/kv"
)

// The inspector's reads (InspectRows, InspectLog, States): what a replica
// holds, with the CRDT metadata queries leave out, for tools such as the
// JavaScript API's db.inspect and the relay's /inspect page. They are
// read-only and paged; each kv transaction they open reads at most
// inspectChunk records and waits on nothing else, so a scan of a large
// table never holds the store (an IndexedDB transaction) for long, and
// writes interleave between its chunks.

// inspectChunk bounds the row records one kv transaction of InspectRows
// reads.
const inspectChunk = 4096

// DefaultInspectLimit is the page size of InspectRows and InspectLog when
// the options give none; MaxInspectLimit is the largest they take.
const (
	DefaultInspectLimit = 50
	MaxInspectLimit     = 1000
)

// InspectOptions selects a page of InspectRows.
type InspectOptions struct {
	// After is where the page starts: the Next of the previous page (an
	// opaque key); nil starts at the table's first row.
	After []byte
	// Limit is the number of rows wanted, 1 to MaxInspectLimit; 0 means
	// DefaultInspectLimit.
	Limit int
	// Search keeps the rows one of whose cells' text (a text value as is,
	// other values as model.Value.String writes them, key cells included)
	// contains it, compared case-insensitively; "" keeps every row.
	Search string
	// Prefix makes Search match the start of a cell's text only.
	Prefix bool
	// Deleted returns the deleted rows (those whose tombstone hides them)
	// instead of the live ones.
	Deleted bool
	// MaxScan bounds the row records this call reads (0: no bound): a
	// search that finds few rows then returns fewer than Limit with Next
	// set, and the caller asks again from there.
	MaxScan int
}

// InspectCell is one stored cell: its column, its value and the HLC of
// the write that set it (HLC.Site is the writing replica).
type InspectCell struct {
	Column string
	Value  Value
	HLC    HLC
}

// InspectRow is one stored row with its metadata.
type InspectRow struct {
	// Key is the primary key's values, in the key columns' order.
	Key []Value
	// Cells are the row's live cells in column name order: every column
	// written since the row was created (or last deleted, when the
	// deletion dropped its cells); key cells included.
	Cells []InspectCell
	// Deleted reports that a tombstone hides the row; Tomb is the HLC of
	// the newest deletion (zero when none), which a row of a table that
	// allows resurrection may carry while live.
	Deleted bool
	Tomb    HLC
	// PriorRow is a deleted row's image at its deletion, where the
	// deleting replica recorded it (nil otherwise).
	PriorRow Row
}

// InspectPage is one page of InspectRows.
type InspectPage struct {
	Rows []InspectRow
	// Next is the After of the following page; nil when the table has no
	// more rows. It is only valid for the same table.
	Next []byte
	// Scanned counts the row records read for this page.
	Scanned int
}

// InspectRows returns a page of table's stored rows, live ones (or,
// with o.Deleted, deleted ones) in primary key order, each cell with its
// HLC. Errors: ErrUnknownTable for a table the replica does not hold,
// *ValidationError for a bad limit, ErrBadCursor for an o.After that is
// not one of this table's, ErrClosed, and the store's errors.
func (e *Engine) InspectRows(name string, o InspectOptions) (InspectPage, error) {
	var page InspectPage
	if err := e.checkOpen(); err != nil {
		return page, err
	}
	limit, err := inspectLimit(name, o.Limit)
	if err != nil {
		return page, err
	}
	t, err := e.inspectTable(name)
	if err != nil {
		return page, err
	}
	m := newInspectMatcher(o.Search, o.Prefix)
	start := t.key
	if o.After != nil {
		if !bytes.HasPrefix(o.After, t.key) {
			return page, fmt.Errorf("%w: %s: the page cursor is not one of this table's", ErrBadCursor, name)
		}
		start = append(bytes.Clone(o.After), 0) // the first key after it
	}
	end := kv.PrefixEnd(t.key)
	for {
		chunk := inspectChunk
		if o.MaxScan > 0 {
			chunk = min(chunk, o.MaxScan-page.Scanned)
		}
		var last []byte
		n, more := 0, false
		err := e.store.View(func(tx kv.Tx) error {
			var derr error
			err := tx.Scan(layout.BucketRows, kv.Range{Start: start, End: end, Limit: chunk + 1}, func(k, v []byte) bool {
				if len(page.Rows) == limit || n == chunk {
					more = true // a record after the page, or after the chunk
					return false
				}
				n++
				last = k
				if !m.mayMatch(k, v) {
					return true
				}
				_, pk, err := layout.SplitRowKey(k)
				if err == nil {
					var rec *rowrec.Record
					if rec, err = rowrec.Decode(v, pk); err == nil {
						if r, ok := t.inspectRow(rec, pk, o.Deleted, &m); ok {
							page.Rows = append(page.Rows, r)
						}
					}
				}
				if err != nil {
					derr = err
					return false
				}
				return true
			})
			if err == nil {
				err = derr
			}
			if last != nil {
				last = bytes.Clone(last)
			}
			return err
		})
		if err != nil {
			return InspectPage{}, err
		}
		page.Scanned += n
		if !more {
			return page, nil // the table's end
		}
		page.Next = last
		if len(page.Rows) == limit || (o.MaxScan > 0 && page.Scanned >= o.MaxScan) {
			return page, nil
		}
		start = append(last, 0)
	}
}

func inspectLimit(table string, n int) (int, error) {
	switch {
	case n == 0:
		return DefaultInspectLimit, nil
	case n < 0 || n > MaxInspectLimit:
		return 0, &ValidationError{Table: table, Reason: fmt.Sprintf("limit must be from 1 to %d, got %d", MaxInspectLimit, n)}
	}
	return n, nil
}

// inspectRow returns rec's InspectRow if it is of the kind wanted (live,
// or deleted) and matches m.
func (t *table) inspectRow(rec *rowrec.Record, pk []Value, deleted bool, m *inspectMatcher) (InspectRow, bool) {
	visible := rec.Visible(t.resurrect)
	if deleted == visible || (deleted && !rec.HasTomb) {
		return InspectRow{}, false
	}
	if m.needle != "" && !m.row(rec, pk) {
		return InspectRow{}, false
	}
	r := InspectRow{Key: pk, Deleted: !visible, Cells: make([]InspectCell, len(rec.Cells))}
	for i := range rec.Cells {
		c := &rec.Cells[i]
		r.Cells[i] = InspectCell{Column: c.Col, Value: c.Val, HLC: c.HLC}
	}
	if rec.HasTomb {
		r.Tomb = rec.Tomb
	}
	if r.Deleted {
		r.PriorRow = rec.PriorRow
	}
	return r, true
}

// inspectMatcher is InspectOptions.Search, lower-cased.
type inspectMatcher struct {
	needle string
	prefix bool
	// anchor: when no value but text and JSON can show needle (it holds
	// a character that no number, boolean or timestamp writes), its
	// longest run of ASCII characters that only ASCII characters lower-
	// case to (anchorSafe): a row whose stored bytes lack it in any ASCII
	// case cannot match and is not decoded (mayMatch).
	anchor []byte
}

// nonText lists the characters of the text forms of numbers, booleans and
// timestamps (model.Value.String: 1.5e+06, NaN, -Inf, true, false,
// 2026-01-02T03:04:05.6Z), lower-cased.
const nonText = "0123456789+-.:eEtTzZnNaAiIfFrRuUlLsS"

// anchorSafe marks the ASCII bytes that no other rune lower-cases to
// (not 'k', the Kelvin sign's, nor 'i', that of İ), besides 0 (which
// keyenc escapes). It is a constant table rather than a scan of every
// rune at package init: that scan (1.1 million unicode.ToLower calls)
// cost 36 ms natively and over 100 ms in replica.wasm's start, before
// Replica.open could run. TestAnchorSafe recomputes it from the Unicode
// tables.
var anchorSafe = func() (safe [128]bool) {
	for c := 1; c < 128; c++ {
		safe[c] = true
	}
	for _, c := range anchorUnsafe {
		safe[c] = false
	}
	return safe
}()

// anchorUnsafe lists the ASCII letters another rune lower-cases to:
// unicode.ToLower('\u212A') (KELVIN SIGN) = 'k', unicode.ToLower('\u0130')
// (LATIN CAPITAL LETTER I WITH DOT ABOVE) = 'i'.
const anchorUnsafe = "ik"

func newInspectMatcher(search string, prefix bool) inspectMatcher {
	m := inspectMatcher{needle: strings.ToLower(search), prefix: prefix}
	if strings.IndexFunc(m.needle, func(r rune) bool { return !strings.ContainsRune(nonText, r) }) < 0 {
		return m // a number, boolean or timestamp may show it
	}
	best, start := "", -1
	for i := 0; i <= len(m.needle); i++ {
		if i < len(m.needle) && m.needle[i] < 128 && anchorSafe[m.needle[i]] {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start > len(best) {
			best = m.needle[start:i]
		}
		start = -1
	}
	if best != "" {
		m.anchor = []byte(best)
	}
	return m
}

// mayMatch reports whether the row stored under key k with record v may
// match: false only when m.anchor is set and neither the key nor the
// record holds it in any ASCII case (text is stored as its bytes in both:
// keyenc escapes only the byte 0). A text value that matches holds, lower-
// cased, the anchor; each of its bytes was an ASCII byte of the value,
// lower-case or not, since no other rune lower-cases to it.
func (m *inspectMatcher) mayMatch(k, v []byte) bool {
	if m.anchor == nil {
		return true
	}
	return containsFoldASCII(v, m.anchor) || containsFoldASCII(k, m.anchor)
}

// containsFoldASCII reports whether h holds a (lower-case ASCII) with any
// of its letters in either case.
func containsFoldASCII(h, a []byte) bool {
	n := len(a)
outer:
	for i := 0; i+n <= len(h); i++ {
		for j := 0; j < n; j++ {
			c := h[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != a[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

func (m *inspectMatcher) row(rec *rowrec.Record, pk []Value) bool {
	for _, v := range pk {
		if m.value(v) {
			return true
		}
	}
	for i := range rec.Cells {
		if m.value(rec.Cells[i].Val) {
			return true
		}
	}
	for _, v := range rec.PriorRow {
		if m.value(v) {
			return true
		}
	}
	return false
}

func (m *inspectMatcher) value(v Value) bool {
	var s string
	switch v.Kind() {
	case KindNull:
		return false
	case KindText:
		s = v.Text()
	case KindBlob:
		return false
	default:
		s = v.String()
	}
	if len(s) < len(m.needle) {
		return false
	}
	s = strings.ToLower(s)
	if m.prefix {
		return strings.HasPrefix(s, m.needle)
	}
	return strings.Contains(s, m.needle)
}

// LogEntry is one entry of this replica's change log: one local
// transaction.
type LogEntry struct {
	// HLC is the transaction's base (OpSeq 0): its id and its place in
	// the log.
	HLC HLC
	// Rows counts the rows it wrote, per table (by the table's current
	// name).
	Rows map[string]int
	// Migrations lists its schema migrations as "type table" (e.g.
	// "create_table trips"), in order: the table as the migration named
	// it (a renamed table's identity, the name it was created with), and
	// a rename as "rename_table trips to journeys".
	Migrations []string
	// Superseded, for an entry LogOptions.Checked selects, reports that
	// later writes (this replica's or synced ones) replaced every fact it
	// wrote and it has no migration: ChangesSince skips it, so a sync
	// client never pushes it, although CountLocalTransactions counts it
	// until the sent watermark passes it.
	Superseded bool
	rks        [][]byte
}

// LogOptions selects a page of InspectLog. The log is read newest first,
// between After and Before (both exclusive, by transaction base; zero:
// no bound).
type LogOptions struct {
	Before, After HLC
	// Limit is the number of entries wanted, 1 to MaxInspectLimit; 0
	// means DefaultInspectLimit.
	Limit int
	// Checked, when not nil: entries above it (by base; all of them for
	// the zero HLC) are checked for LogEntry.Superseded, reading their
	// rows until one still holds a fact of theirs (a sent watermark: the
	// unsent ones).
	Checked *HLC
}

// InspectLog returns entries of the change log of this replica's own
// transactions (what a sync client pushes), schema migrations included,
// newest first, and whether
// older ones remain within o's bounds. An entry stays in the log after
// later writes superseded its facts, until Prune tidies it past the
// retention horizon. Errors: *ValidationError for a bad limit, ErrClosed
// and the store's errors.
func (e *Engine) InspectLog(o LogOptions) ([]LogEntry, bool, error) {
	if err := e.checkOpen(); err != nil {
		return nil, false, err
	}
	limit, err := inspectLimit("", o.Limit)
	if err != nil {
		return nil, false, err
	}
	r := kv.Range{Start: []byte{layout.ClassOwn}, End: []byte{layout.ClassOwn + 1}, Reverse: true, Limit: limit + 1}
	if !o.After.IsZero() {
		r.Start = append(layout.OwnLogKey(o.After.Base()), 0)
	}
	if !o.Before.IsZero() {
		r.End = layout.OwnLogKey(o.Before.Base())
	}
	var out []LogEntry
	migs := map[HLC][]string{}
	err = e.store.View(func(tx kv.Tx) error {
		// Migrations are few: every own one within the bounds.
		mr := kv.Range{Start: []byte{layout.ClassOwn}, End: []byte{layout.ClassOwn + 1}}
		if !o.After.IsZero() {
			mr.Start = append(layout.OwnLogKey(o.After.Base()), 0xff, 0xff, 0xff, 0xff, 0)
		}
		if !o.Before.IsZero() {
			mr.End = layout.OwnLogKey(o.Before.Base())
		}
		// Rows are counted under their table's current name (a renamed
		// table's rows are stored under its identity).
		cur, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		var derr error
		err = tx.Scan(layout.BucketMigrations, mr, func(k, v []byte) bool {
			m, err := decodeMigration(k, v)
			if err != nil {
				derr = err
				return false
			}
			b := m.HLC.Base()
			d := string(m.Type) + " " + m.TableName
			if m.Type == RenameTable {
				d += " to " + m.Name // the table's identity, then its new name
			}
			migs[b] = append(migs[b], d)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
		err = tx.Scan(layout.BucketLog, r, func(k, v []byte) bool {
			if len(k) != 1+BaseSize {
				derr = malformed("own change-log key of %d bytes", len(k))
				return false
			}
			rks, err := layout.DecodeRowList(v)
			if err != nil {
				derr = err
				return false
			}
			en := LogEntry{HLC: baseFromBytes(k[1:]), Rows: map[string]int{}}
			if o.Checked != nil && o.Checked.Base().Less(en.HLC) {
				en.rks = rks // Scan's bytes stay valid until the transaction ends
			}
			for _, rk := range rks {
				table, _, err := layout.SplitRowKey(rk)
				if err != nil {
					derr = err
					return false
				}
				if t := cur.table(table); t != nil {
					table = t.name
				}
				en.Rows[table]++
			}
			out = append(out, en)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
		for i := range out {
			if out[i].rks == nil {
				continue
			}
			if out[i].Superseded, err = superseded(tx, out[i].HLC, out[i].rks); err != nil {
				return err
			}
			out[i].rks = nil
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	for b, ms := range migs {
		i, found := sort.Find(len(out), func(i int) int { return -b.Compare(out[i].HLC) })
		if found {
			out[i].Migrations = ms
			out[i].Superseded = false
			continue
		}
		out = slices.Insert(out, i, LogEntry{HLC: b, Rows: map[string]int{}, Migrations: ms})
	}
	more := len(out) > limit
	return out[:min(len(out), limit)], more, nil
}

// StateEntry is one entry of the caller state (see State).
type StateEntry struct {
	Name  string
	Value []byte
}

// States returns the caller state entries whose names start with prefix
// ("" for all), in name order: the sync client's cursors and watermarks,
// for inspection. The returned values are the caller's.
func (e *Engine) States(prefix string) ([]StateEntry, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var out []StateEntry
	p := append(append([]byte(nil), layout.MetaStatePrefix...), prefix...)
	err := e.store.View(func(tx kv.Tx) error {
		return tx.Scan(layout.BucketMeta, kv.Prefix(p), func(k, v []byte) bool {
			out = append(out, StateEntry{Name: string(k[len(layout.MetaStatePrefix):]), Value: bytes.Clone(v)})
			return true
		})
	})
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return nil, err
	}
	return out, nil
}

// InspectedHeld is a held change with the reason it is held for as the
// schema now stands (see HeldCounts).
type InspectedHeld struct {
	HeldChange
	Reason HeldReason
}

// InspectHeld returns a page of the held changes (of table, or of every
// table when table is ""; a renamed table's by its current name, under
// which each change names it), in table then HLC order, from after (the next
// of the previous page; nil: the first), and the next page's after (nil:
// none left). Errors: *ValidationError for a bad limit, ErrBadCursor for
// an after that is not a held change's key, ErrUnknownTable for a renamed
// table's former name, ErrClosed and the
// store's errors.
func (e *Engine) InspectHeld(table string, after []byte, limit int) ([]InspectedHeld, []byte, error) {
	if err := e.checkOpen(); err != nil {
		return nil, nil, err
	}
	limit, err := inspectLimit(table, limit)
	if err != nil {
		return nil, nil, err
	}
	var out []InspectedHeld
	var next []byte
	err = e.store.View(func(tx kv.Tx) error {
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		// Held changes are stored under the table name their change
		// carries. A table the schema holds is asked for by its current
		// name and may have been renamed: its changes can be under its
		// identity or any former name, so every held change is read and
		// those of its current name kept. Any other name (a table the
		// schema lacks) is a prefix of the held keys.
		r := kv.Range{Limit: limit + 1}
		keep := ""
		if table != "" {
			t, err := s.named(table) // a former name: an error saying the current one
			if err != nil {
				return err
			}
			if t != nil {
				keep = t.name
				r.Limit = 0
			} else {
				r = kv.Prefix(layout.TableKey(table))
				r.Limit = limit + 1
			}
		}
		if after != nil {
			// A held key begins with its table's name (and, asked for by
			// name, that table's).
			if tv, _, err := keyenc.DecodeValue(after); err != nil || tv.Kind() != KindText || (keep == "" && table != "" && !bytes.HasPrefix(after, layout.TableKey(table))) {
				return fmt.Errorf("%w: the held-change cursor is not one", ErrBadCursor)
			}
			r.Start = append(bytes.Clone(after), 0)
		}
		var derr error
		var last []byte
		err = tx.Scan(layout.BucketHeld, r, func(k, v []byte) bool {
			h, err := decodeHeld(v)
			if err != nil {
				derr = err
				return false
			}
			name, reason := heldReasonNow(s, &h)
			if keep != "" && name != keep {
				return true
			}
			if len(out) == limit {
				next = bytes.Clone(last)
				return false
			}
			last = k
			c := h.change
			c.Table = name // a renamed table's current name
			out = append(out, InspectedHeld{HeldChange: HeldChange{Change: c, Forward: h.forward, NeverReplayed: h.noReplay, ReceivedAt: h.receivedAt}, Reason: reason})
			return true
		})
		if err == nil {
			err = derr
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, next, nil
}

// superseded reports whether none of rks still holds a fact of the
// transaction base.
func superseded(tx kv.Tx, base HLC, rks [][]byte) (bool, error) {
	for _, rk := range rks {
		v, err := tx.Get(layout.BucketRows, rk)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		table, pk, err := layout.SplitRowKey(rk)
		if err != nil {
			return false, err
		}
		rec, err := rowrec.Decode(v, pk)
		if err != nil {
			return false, err
		}
		if len(factsOf(rec, base, table, pk)) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// inspectTable returns the table whose current name is name, read in a kv
// transaction of its own. As in the rest of the local API, a renamed
// table's former name is an error saying the new one; a name the schema
// lacks is ErrUnknownTable.
func (e *Engine) inspectTable(name string) (*table, error) {
	var t *table
	err := e.store.View(func(tx kv.Tx) error {
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		if t, err = s.named(name); err == nil && t == nil {
			err = fmt.Errorf("%w: %q", ErrUnknownTable, name)
		}
		return err
	})
	return t, err
}

// InspectCount counts table's stored rows: live ones and deleted ones
// (tombstones that hide their row), reading each record's head only, in
// kv transactions of at most inspectChunk records (Count reads the whole
// table in one). Errors: ErrUnknownTable, ErrClosed and the store's
// errors.
func (e *Engine) InspectCount(name string) (live, deleted int, err error) {
	if err := e.checkOpen(); err != nil {
		return 0, 0, err
	}
	t, err := e.inspectTable(name)
	if err != nil {
		return 0, 0, err
	}
	start, end := t.key, kv.PrefixEnd(t.key)
	for {
		n, more := 0, false
		var last []byte
		err := e.store.View(func(tx kv.Tx) error {
			var derr error
			err := tx.Scan(layout.BucketRows, kv.Range{Start: start, End: end, Limit: inspectChunk + 1}, func(k, v []byte) bool {
				if n == inspectChunk {
					more = true
					return false
				}
				n++
				last = k
				ok, err := rowrec.Live(v, t.resurrect)
				if err != nil {
					derr = err
					return false
				}
				if ok {
					live++
				} else {
					deleted++
				}
				return true
			})
			if err == nil {
				err = derr
			}
			if last != nil {
				last = bytes.Clone(last)
			}
			return err
		})
		if err != nil {
			return 0, 0, err
		}
		if !more {
			return live, deleted, nil
		}
		start = append(last, 0)
	}
}
