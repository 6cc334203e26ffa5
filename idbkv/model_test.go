//go:build js && wasm

package idbkv

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
)

// TestRandomAgainstModel runs random transactions of Puts, Deletes and
// DeleteRanges mixed with Gets, GetManys and Scans (bounds, reverse, limits,
// keys only) against a map, with tiny pages so that buffered writes, deleted
// spans and IndexedDB pages interleave in every way. Some transactions roll
// back. The seed is logged; -idbkv.seed=N replays one.
func TestRandomAgainstModel(t *testing.T) {
	defer func(f, m int) { firstPage, maxPage = f, m }(firstPage, maxPage)
	firstPage, maxPage = 2, 4
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	for _, d := range allDrivers {
		t.Run(d.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			s, _ := openT(t, d.opts, "x", "y")
			defer s.Close()
			m := &model{t: t, rng: rng, data: map[string]string{}}
			// Committed data to read through.
			err := s.Update(func(tx kv.Tx) error {
				for range 120 {
					k, v := m.key(), m.value()
					m.data[k] = v
					if err := tx.Put("x", []byte(k), []byte(v)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			errRollback := errors.New("roll back")
			for round := range 15 {
				committed := m.data
				m.data = maps.Clone(committed)
				rollback := rng.IntN(4) == 0
				err := s.Update(func(tx kv.Tx) error {
					m.top = ""
					for range 30 {
						if err := m.step(tx); err != nil {
							return err
						}
					}
					if rollback {
						return errRollback
					}
					return nil
				})
				if rollback {
					if err != errRollback {
						t.Fatalf("round %d: Update = %v, want the rollback error", round, err)
					}
					m.data = committed
				} else if err != nil {
					t.Fatalf("round %d: Update: %v", round, err)
				}
				err = s.View(func(tx kv.Tx) error {
					m.checkScan(tx, kv.Range{})
					for range 5 {
						if err := m.read(tx); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatalf("round %d: View: %v", round, err)
				}
				if t.Failed() {
					t.Fatalf("round %d failed (seed %d)", round, seed)
				}
			}
		})
	}
}

var seedFlag = flag.Uint64("idbkv.seed", 0, "seed for TestRandomAgainstModel (0: from the clock)")

// model is the expected content of bucket "x".
type model struct {
	t    *testing.T
	rng  *rand.Rand
	data map[string]string
	top  string // the greatest key the running Update wrote
}

// alphabet makes keys that are prefixes of each other and straddle 0x7f/0x80.
var alphabet = []byte{0x00, 0x01, 'a', 'b', 0x7f, 0x80, 0xfe, 0xff}

func (m *model) key() string {
	b := make([]byte, 1+m.rng.IntN(3))
	for i := range b {
		b[i] = alphabet[m.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// writeKey returns a key to put or delete: half of the time one above
// every key the Update wrote (runs of ascending writes, which the overlay
// keeps apart from its tree until something needs it), else m.key().
func (m *model) writeKey() string {
	k := m.key()
	if m.rng.IntN(2) == 0 && len(m.top) < 12 {
		k = m.top + string(alphabet[m.rng.IntN(len(alphabet))])
	}
	if k > m.top {
		m.top = k
	}
	return k
}

// readKey returns a key to read: often the last of the Update's ascending
// writes (or an extension of it, absent), else m.key().
func (m *model) readKey() string {
	if m.top == "" {
		return m.key()
	}
	switch m.rng.IntN(4) {
	case 0:
		return m.top
	case 1:
		return m.top + string(alphabet[m.rng.IntN(len(alphabet))])
	}
	return m.key()
}

func (m *model) value() string {
	return fmt.Sprintf("%08x", m.rng.Uint32())[:m.rng.IntN(9)]
}

// bound returns nil (unbounded) or a random key.
func (m *model) bound() []byte {
	if m.rng.IntN(4) == 0 {
		return nil
	}
	return []byte(m.key())
}

// step does one random operation inside an Update.
func (m *model) step(tx kv.Tx) error {
	switch n := m.rng.IntN(12); {
	case n < 4:
		k, v := m.writeKey(), m.value()
		m.data[k] = v
		return tx.Put("x", []byte(k), []byte(v))
	case n < 6:
		k := m.writeKey()
		delete(m.data, k)
		return tx.Delete("x", []byte(k))
	case n < 7:
		lo, hi := m.bound(), m.bound()
		for k := range m.data {
			if inRange(k, lo, hi) {
				delete(m.data, k)
			}
		}
		return tx.DeleteRange("x", lo, hi)
	default:
		return m.read(tx)
	}
}

// read does one random read and compares it with the model.
func (m *model) read(tx kv.Tx) error {
	switch m.rng.IntN(3) {
	case 0:
		k := m.readKey()
		v, err := tx.Get("x", []byte(k))
		want, ok := m.data[k]
		switch {
		case !ok && !errors.Is(err, kv.ErrNotFound):
			m.t.Errorf("Get(%q) = %q, %v; want ErrNotFound", k, v, err)
		case ok && (err != nil || string(v) != want || v == nil):
			m.t.Errorf("Get(%q) = %q, %v; want %q", k, v, err, want)
		}
	case 1:
		keys := make([][]byte, 1+m.rng.IntN(6))
		for i := range keys {
			keys[i] = []byte(m.readKey())
		}
		vals, err := tx.GetMany("x", keys)
		if err != nil {
			return err
		}
		for i, k := range keys {
			want, ok := m.data[string(k)]
			if (vals[i] != nil) != ok || string(vals[i]) != want {
				m.t.Errorf("GetMany[%d] (%q) = %q, want %q (present %v)", i, k, vals[i], want, ok)
			}
		}
	default:
		r := kv.Range{Start: m.bound(), End: m.bound(), Reverse: m.rng.IntN(2) == 0, KeysOnly: m.rng.IntN(5) == 0}
		if m.rng.IntN(2) == 0 {
			r.Limit = 1 + m.rng.IntN(6)
		}
		m.checkScan(tx, r)
	}
	return nil
}

// checkScan compares Scan(r) with the model; about half of the time the
// callback stops early.
func (m *model) checkScan(tx kv.Tx, r kv.Range) {
	var want []string
	for k := range m.data {
		if inRange(k, r.Start, r.End) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if r.Reverse {
		slices.Reverse(want)
	}
	if r.Limit > 0 && len(want) > r.Limit {
		want = want[:r.Limit]
	}
	stop := -1
	if m.rng.IntN(2) == 0 && len(want) > 0 {
		stop = m.rng.IntN(len(want))
		want = want[:stop+1]
	}
	var got []string
	err := tx.Scan("x", r, func(k, v []byte) bool {
		got = append(got, string(k))
		if r.KeysOnly && v != nil {
			m.t.Errorf("Scan(KeysOnly) passed value %q for %q", v, k)
		}
		if !r.KeysOnly && string(v) != m.data[string(k)] {
			m.t.Errorf("Scan: %q=%q, want %q", k, v, m.data[string(k)])
		}
		return len(got) != stop+1
	})
	if err != nil {
		m.t.Errorf("Scan(%+v): %v", r, err)
		return
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		m.t.Errorf("Scan(start %q end %q reverse %v limit %d stop %d):\n got  %q\n want %q", r.Start, r.End, r.Reverse, r.Limit, stop, got, want)
	}
}

// inRange reports whether lo <= k < hi with kv.Range's rules for nil and
// empty bounds.
func inRange(k string, lo, hi []byte) bool {
	return (len(lo) == 0 || k >= string(lo)) && (hi == nil || k < string(hi))
}
