package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"slices"
	"sort"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// Held changes: synced changes this replica cannot apply now (HeldReason),
// kept in the held-changes bucket (layout.BucketHeld, stored under its
// older name "quarantine") under table ‖ HLC (one entry per change, so
// holding the same change twice is a no-op) until their table or column
// appears or the retention horizon passes (docs/design.md § Held changes).
// The stored value:
//
//	flags       1 byte: 1 = forwardable (HoldAndForward), 2 = never
//	            replayed (its key or value does not fit the local table:
//	            HeldKeyMismatch, HeldWrongType)
//	receivedAt  8 bytes, local wall ms
//	change      encodeChange
//
// The reason is not stored: a change without flag 2 is held for an unknown
// table or column, and the schema at replay says which.
type heldChange struct {
	forward    bool
	noReplay   bool
	receivedAt uint64
	change     Change
}

// The flag bits of a stored held change (a stored format: the values stay).
const (
	heldForward  byte = 1
	heldNoReplay byte = 2
)

// heldFlags returns the stored flags of a change held for reason under
// policy: heldNoReplay for a key or value that does not fit, heldForward for
// the others under HoldAndForward.
func heldFlags(reason HeldReason, policy HeldPolicy) byte {
	switch {
	case !reason.Replayed():
		return heldNoReplay
	case policy == HoldAndForward:
		return heldForward
	}
	return 0
}

// holdAs holds c with the given flags (heldForward, heldNoReplay); holding a
// change already held is a no-op.
func (w *writeTx) holdAs(c *Change, flags byte) error {
	k := layout.HeldKey(layout.TableKey(c.Table), c.HLC)
	if _, err := w.kv.Get(layout.BucketHeld, k); err == nil {
		return nil
	} else if !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	b := []byte{flags}
	b = binary.BigEndian.AppendUint64(b, w.e.clock.Now())
	b = encodeChange(b, c)
	if len(b) > kv.MaxValueSize {
		return malformed("held change for table %s is too large to hold (%d bytes, limit %d)", c.Table, len(b), kv.MaxValueSize)
	}
	return w.kv.Put(layout.BucketHeld, k, b)
}

func decodeHeld(v []byte) (heldChange, error) {
	if len(v) < 9 {
		return heldChange{}, malformed("short held change")
	}
	h := heldChange{forward: v[0]&heldForward != 0, noReplay: v[0]&heldNoReplay != 0, receivedAt: binary.BigEndian.Uint64(v[1:9])}
	c, err := decodeChange(v[9:])
	h.change = c
	return h, err
}

// encodeChange is the storage encoding of a Change: type byte, table,
// key tuple (key encoding, length-prefixed), column, value, 30-byte HLC,
// prior flag [prior value, prior HLC], prior row [n, (name, value)*].
func encodeChange(b []byte, c *Change) []byte {
	b = append(b, byte(c.Type))
	b = rowrec.AppendString(b, c.Table)
	pk := keyenc.AppendTuple(nil, c.PK)
	b = binary.AppendUvarint(b, uint64(len(pk)))
	b = append(b, pk...)
	b = rowrec.AppendString(b, c.Column)
	b = rowrec.AppendValue(b, c.Value)
	var h [HLCSize]byte
	c.HLC.Put(h[:])
	b = append(b, h[:]...)
	if c.HasPrior {
		b = append(b, 1)
		b = rowrec.AppendValue(b, c.PriorValue)
		c.PriorHLC.Put(h[:])
		b = append(b, h[:]...)
	} else {
		b = append(b, 0)
	}
	names := make([]string, 0, len(c.PriorRow))
	for n := range c.PriorRow {
		names = append(names, n)
	}
	sort.Strings(names)
	if c.PriorRow == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, n := range names {
			b = rowrec.AppendString(b, n)
			b = rowrec.AppendValue(b, c.PriorRow[n])
		}
	}
	return b
}

func decodeChange(v []byte) (Change, error) {
	rd := rowrec.NewReader(v)
	var c Change
	c.Type = ChangeType(rd.Byte())
	c.Table = rd.Str()
	pkLen := rd.Uvarint()
	pkb := rd.Bytes(pkLen)
	if rd.Err() == nil {
		pk, rest, err := keyenc.DecodeTuple(pkb, -1)
		if err != nil || len(rest) != 0 {
			return c, fmt.Errorf("%w: held change key", ErrMalformed)
		}
		c.PK = pk
	}
	c.Column = rd.Str()
	c.Value = rd.Value()
	if raw := rd.Bytes(HLCSize); raw != nil {
		c.HLC, _ = HLCFromBytes(raw)
	}
	if rd.Byte() == 1 {
		c.HasPrior = true
		c.PriorValue = rd.Value()
		if raw := rd.Bytes(HLCSize); raw != nil {
			c.PriorHLC, _ = HLCFromBytes(raw)
		}
	}
	if rd.Byte() == 1 {
		n := rd.Uvarint()
		if n > uint64(rd.Len()) {
			rd.Fail("prior row size")
		} else {
			c.PriorRow = make(Row, n)
			for i := uint64(0); i < n && rd.Err() == nil; i++ {
				name := rd.Str()
				c.PriorRow[name] = rd.Value()
			}
		}
	}
	if rd.Err() == nil && rd.Len() != 0 {
		rd.Fail("trailing bytes")
	}
	return c, rd.Err()
}

// HeldChange is a synced change this replica holds instead of applying
// (see HeldReason).
type HeldChange struct {
	Change  Change
	Forward bool // re-offered by ChangesSince (HoldAndForward)
	// NeverReplayed: its key or value does not fit the local table
	// (HeldKeyMismatch, HeldWrongType), so it is never replayed; false
	// for a change held for an unknown table or column (HeldUnknownTable,
	// HeldUnknownColumn), replayed when the schema defines it.
	NeverReplayed bool
	ReceivedAt    uint64 // local wall ms when it was held
}

// HeldChanges lists the changes held for table (all tables when table is
// empty), in table then HLC order. A renamed table's held changes are
// listed under its current name and any other (changes keep the name
// their writer knew: Change.Table).
func (e *Engine) HeldChanges(table string) ([]HeldChange, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var out []HeldChange
	err := e.store.View(func(tx kv.Tx) error {
		out = nil
		ranges := []kv.Range{{}}
		if table != "" {
			s, err := e.currentSchema(tx)
			if err != nil {
				return err
			}
			names := []string{table}
			if t, _ := s.named(table); t != nil {
				for n, r := range s.alias {
					if r == t.def.Name && n != table {
						names = append(names, n)
					}
				}
			}
			sort.Strings(names)
			ranges = ranges[:0]
			for _, n := range names {
				ranges = append(ranges, kv.Prefix(layout.TableKey(n)))
			}
		}
		var derr error
		for _, r := range ranges {
			err := tx.Scan(layout.BucketHeld, r, func(k, v []byte) bool {
				h, err := decodeHeld(v)
				if err != nil {
					derr = err
					return false
				}
				out = append(out, HeldChange{Change: h.change, Forward: h.forward, NeverReplayed: h.noReplay, ReceivedAt: h.receivedAt})
				return true
			})
			if err == nil {
				err = derr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// replayBatch bounds the changes replayed per kv transaction.
const replayBatch = 5000

// ReplayHeld replays the changes held for the listed tables (every table
// with held changes when none is listed; for a renamed table, those held
// under any of its names) that now fit the schema — their
// table exists and defines their column — exactly as fresh remote changes
// (LWW, tombstones), and removes them from the hold whether they won or
// not; changes for tables or columns still missing stay held, and those
// whose key or value does not fit are never replayed (docs/design.md §
// Held changes). It returns the number of changes replayed.
// Open and ApplyChanges call it when they create a table.
func (e *Engine) ReplayHeld(tables ...string) (int, error) {
	if err := e.checkOpen(); err != nil {
		return 0, err
	}
	if len(tables) == 0 {
		var err error
		if tables, err = e.heldTables(); err != nil {
			return 0, err
		}
	}
	if len(tables) == 0 {
		return 0, nil // nothing held: no transaction to read the schema in (every Replica.open asks)
	}
	groups, err := e.heldGroups(tables)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, names := range groups {
		replayed := 0
		for _, name := range names {
			for {
				n, more, err := e.replaySome(name)
				total += n
				replayed += n
				if err != nil {
					return total, err
				}
				if !more {
					break
				}
			}
		}
		if replayed > 0 {
			rest := 0
			for _, name := range names {
				n, err := e.heldIn(name)
				if err != nil {
					return total, err
				}
				rest += n
			}
			name := names[0]
			e.emit(Event{Type: HeldReplayed, Tables: []string{name}, Replayed: &ReplayReport{Table: name, Changes: replayed, Remaining: rest}})
		}
	}
	return total, nil
}

// heldGroups groups tables by table: a renamed table's changes are held
// under each of its names (they keep the name their writer knew), which
// replay together, with one HeldReplayed event whose Remaining counts
// them all. Each group starts with the first of its names tables lists;
// the groups keep the order of tables.
func (e *Engine) heldGroups(tables []string) ([][]string, error) {
	var s *schemaState
	if err := e.store.View(func(tx kv.Tx) error {
		var err error
		s, err = e.currentSchema(tx)
		return err
	}); err != nil {
		return nil, err
	}
	var out [][]string
	at := map[string]int{} // a class's root: its group
	for _, name := range tables {
		r := s.resolve(name)
		if i, ok := at[r]; ok {
			if !slices.Contains(out[i], name) {
				out[i] = append(out[i], name)
			}
			continue
		}
		at[r] = len(out)
		names := []string{name}
		var others []string
		if s == nil {
			out = append(out, names)
			continue
		}
		for n, nr := range s.alias {
			if nr == r && n != name {
				others = append(others, n)
			}
		}
		sort.Strings(others)
		out = append(out, append(names, others...))
	}
	return out, nil
}

// heldIn counts the changes held for table (keys only).
func (e *Engine) heldIn(table string) (int, error) {
	n := 0
	err := e.store.View(func(tx kv.Tx) error {
		n = 0
		return tx.Scan(layout.BucketHeld, kv.Range{Start: layout.TableKey(table), End: kv.PrefixEnd(layout.TableKey(table)), KeysOnly: true}, func(_, _ []byte) bool {
			n++
			return true
		})
	})
	return n, err
}

// HeldCount is how many changes are held for one table and reason
// (HeldCounts).
type HeldCount struct {
	Table   string
	Reason  HeldReason
	Changes int
}

// HeldCounts counts the changes held, per table and per reason as the
// schema now stands (a change held for an unknown column whose table a
// migration has since created counts as HeldUnknownColumn, and so on),
// in table then reason order: the sync seeds' getUnknownTableStats. A
// change that fits the schema now is waiting for the replay that the
// migration defining its table or column runs (ReplayHeld), and is
// counted under the reason it was held for: HeldUnknownColumn when its
// table exists, HeldUnknownTable otherwise. It reads every held change.
func (e *Engine) HeldCounts() ([]HeldCount, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var out []HeldCount
	err := e.store.View(func(tx kv.Tx) error {
		out = nil
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		idx := map[HeldCount]int{} // {table, reason} -> index in out
		var derr error
		err = tx.Scan(layout.BucketHeld, kv.Range{}, func(_, v []byte) bool {
			h, err := decodeHeld(v)
			if err != nil {
				derr = err
				return false
			}
			name, reason := heldReasonNow(s, &h)
			k := HeldCount{Table: name, Reason: reason}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, k)
			}
			out[i].Changes++
			return true
		})
		if err == nil {
			err = derr
		}
		return err
	})
	// sort.Slice rather than slices.SortFunc: one more instantiation of
	// the generic sort is ~20 KB of the browser build, for a cold path.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Reason < b.Reason
	})
	return out, err
}

// heldReasonNow is the reason h is held for as schema s stands, and the
// table's current name (a renamed table's; see HeldCounts).
func heldReasonNow(s *schemaState, h *heldChange) (string, HeldReason) {
	reason := HeldUnknownTable
	name := h.change.Table
	if t := s.table(h.change.Table); t != nil {
		name = t.name // a renamed table's current name
		reason = HeldUnknownColumn
		c := h.change
		c.PK = slices.Clone(c.PK)
		var he *holdError
		if err := normalizeChange(t, &c); errors.As(err, &he) {
			reason = he.reason
		}
	}
	return name, reason
}

func (e *Engine) heldTables() ([]string, error) {
	var out []string
	err := e.store.View(func(tx kv.Tx) error {
		var start []byte
		for {
			var k []byte
			err := tx.Scan(layout.BucketHeld, kv.Range{Start: start, Limit: 1, KeysOnly: true}, func(key, _ []byte) bool {
				k = bytes.Clone(key)
				return false
			})
			if err != nil || k == nil {
				return err
			}
			tv, _, err := keyenc.DecodeValue(k)
			if err != nil {
				return err
			}
			out = append(out, tv.Text())
			start = kv.PrefixEnd(layout.TableKey(tv.Text()))
			if start == nil {
				return nil
			}
		}
	})
	return out, err
}

func (e *Engine) replaySome(name string) (n int, more bool, err error) {
	var out applyOutcome
	err = e.store.Update(func(tx kv.Tx) error {
		n, more = 0, false
		w, err := e.begin(tx)
		if err != nil {
			return err
		}
		t := w.effTable(name)
		if t == nil {
			return nil
		}
		var keys [][]byte
		var changes []Change
		var derr error
		err = tx.Scan(layout.BucketHeld, kv.Range{Start: layout.TableKey(name), End: kv.PrefixEnd(layout.TableKey(name))}, func(k, v []byte) bool {
			if len(keys) == replayBatch {
				more = true
				return false
			}
			h, err := decodeHeld(v)
			if err != nil {
				derr = err
				return false
			}
			if h.noReplay {
				return true // never replayed; stays until pruned
			}
			if c := &h.change; c.Type == ColumnChange && !t.asReceived && t.cols[c.Column] == nil {
				return true // its column is not defined yet: stays held
			}
			keys = append(keys, bytes.Clone(k))
			changes = append(changes, h.change)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil || len(keys) == 0 {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(layout.BucketHeld, k); err != nil {
				return err
			}
		}
		out, err = w.applySets(groupIntoSets(changes), true)
		if err != nil {
			return err
		}
		n = len(keys)
		return w.commit()
	})
	if err != nil {
		return 0, false, err
	}
	e.emitApplied(&out)
	return n, more, nil
}

// groupIntoSets regroups loose changes into per-transaction ChangeSets.
func groupIntoSets(changes []Change) []ChangeSet {
	sortChanges(changes)
	var out []ChangeSet
	for _, c := range changes {
		if n := len(out); n > 0 && out[n-1].HLC.SameTransaction(c.HLC) {
			out[n-1].Changes = append(out[n-1].Changes, c)
			out[n-1].HLC = c.HLC
			continue
		}
		out = append(out, ChangeSet{SiteID: c.HLC.Site, TransactionID: c.HLC.TransactionID(), HLC: c.HLC, Changes: []Change{c}})
	}
	return out
}
