package kvtest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// boundCase is a [start, end) range over scanKeys and the keys it selects in
// ascending order.
type boundCase struct {
	name       string
	start, end []byte
	want       []string
}

// scanKeys are the keys the Scan and DeleteRange bound cases run over.
var scanKeys = []string{"b", "c", "d", "e", "f"}

func boundCases() []boundCase {
	b := func(s string) []byte { return []byte(s) }
	return []boundCase{
		{"nil_nil", nil, nil, scanKeys},
		{"start_nil", b("c"), nil, []string{"c", "d", "e", "f"}},
		{"nil_end", nil, b("e"), []string{"b", "c", "d"}},
		{"start_end", b("c"), b("e"), []string{"c", "d"}},
		{"between_keys", b("bb"), b("dd"), []string{"c", "d"}},
		{"beyond_both_ends", b("a"), b("z"), scanKeys},
		{"start_is_last_key", b("f"), nil, []string{"f"}},
		{"end_is_first_key", nil, b("b"), nil},
		{"start_past_last", b("g"), nil, nil},
		{"end_before_first", nil, b("a"), nil},
		{"start_equals_end", b("c"), b("c"), nil},
		{"start_after_end", b("e"), b("c"), nil},
		{"adjacent", b("c"), b("c\x00"), []string{"c"}},
		{"empty_start", []byte{}, b("d"), []string{"b", "c"}},
		{"empty_nonnil_end", nil, []byte{}, nil},
	}
}

func scanEntries() []entry {
	var es []entry
	for _, k := range scanKeys {
		es = append(es, entry{k, "value of " + k})
	}
	return es
}

func entriesFor(keys []string) []entry {
	var es []entry
	for _, k := range keys {
		es = append(es, entry{k, "value of " + k})
	}
	return es
}

func (s *suite) testScan(t *testing.T) {
	t.Run("Bounds", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		// A neighbouring bucket must not leak into scans.
		putAll(t, st, bucketB, entry{"a", "x"}, entry{"c0", "x"}, entry{"z", "x"})
		for _, c := range boundCases() {
			for _, reverse := range []bool{false, true} {
				name := c.name
				want := entriesFor(c.want)
				if reverse {
					name += "_reverse"
					want = reversed(want)
				}
				t.Run(name, func(t *testing.T) {
					mustView(t, st, func(tx kv.Tx) error {
						got, err := scan(tx, bucketA, kv.Range{Start: c.start, End: c.end, Reverse: reverse})
						if err != nil {
							return err
						}
						checkEntries(t, fmt.Sprintf("Scan [%q, %q)", c.start, c.end), got, want)

						got, err = scan(tx, bucketA, kv.Range{Start: c.start, End: c.end, Reverse: reverse, Limit: 2})
						if err != nil {
							return err
						}
						checkEntries(t, fmt.Sprintf("Scan [%q, %q) Limit 2", c.start, c.end), got, want[:min(2, len(want))])
						return nil
					})
				})
			}
		}
	})

	t.Run("Limit", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		all := scanEntries()
		mustView(t, st, func(tx kv.Tx) error {
			for _, limit := range []int{0, 1, 2, 4, 5, 6, 100} {
				n := len(all)
				if limit > 0 {
					n = min(limit, len(all))
				}
				got, err := scan(tx, bucketA, kv.Range{Limit: limit})
				if err != nil {
					return err
				}
				checkEntries(t, fmt.Sprintf("Limit %d", limit), got, all[:n])
				got, err = scan(tx, bucketA, kv.Range{Limit: limit, Reverse: true})
				if err != nil {
					return err
				}
				checkEntries(t, fmt.Sprintf("Limit %d reverse", limit), got, reversed(all)[:n])
			}
			return nil
		})
	})

	t.Run("KeysOnly", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		check := func(tx kv.Tx) error {
			for _, reverse := range []bool{false, true} {
				var keys []string
				err := tx.Scan(bucketA, kv.Range{Start: []byte("c"), KeysOnly: true, Reverse: reverse}, func(k, v []byte) bool {
					if v != nil {
						t.Errorf("KeysOnly Scan passed value %q for key %q, want nil", v, k)
					}
					keys = append(keys, string(k))
					return true
				})
				if err != nil {
					return err
				}
				want := []string{"c", "d", "e", "f"}
				if reverse {
					want = reversed(want)
				}
				if !slices.Equal(keys, want) {
					t.Errorf("KeysOnly Scan (reverse %v) keys = %q, want %q", reverse, keys, want)
				}
			}
			return nil
		}
		mustView(t, st, check)
		mustUpdate(t, st, check)
	})

	t.Run("EarlyStop", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		mustView(t, st, func(tx kv.Tx) error {
			for _, reverse := range []bool{false, true} {
				var keys []string
				err := tx.Scan(bucketA, kv.Range{Reverse: reverse}, func(k, _ []byte) bool {
					keys = append(keys, string(k))
					return len(keys) < 3
				})
				if err != nil {
					return err
				}
				want := scanKeys[:3]
				if reverse {
					want = reversed(scanKeys)[:3]
				}
				if !slices.Equal(keys, want) {
					t.Errorf("Scan stopping after 3 (reverse %v) visited %q, want %q", reverse, keys, want)
				}
			}
			return nil
		})
	})

	t.Run("EmptyBucket", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketB, entry{"k", "v"})
		mustView(t, st, func(tx kv.Tx) error {
			for _, r := range []kv.Range{{}, {Reverse: true}, {Start: []byte("a"), End: []byte("z")}, {Limit: 1}} {
				got, err := scan(tx, bucketA, r)
				if err != nil {
					return err
				}
				checkEntries(t, fmt.Sprintf("Scan %+v of an empty bucket", r), got, nil)
			}
			return nil
		})
	})

	t.Run("Prefix", func(t *testing.T) {
		st := s.store(t)
		keys := orderKeys()
		var es []entry
		for _, k := range keys {
			es = append(es, entry{k, "v" + k})
		}
		putAll(t, st, bucketA, es...)
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		for _, p := range []string{"", "a", "a\x00", "a\xff", "\xff", "\xff\xff", "\x00", "\x7f", "zz"} {
			var want []entry
			for _, k := range sorted {
				if strings.HasPrefix(k, p) {
					want = append(want, entry{k, "v" + k})
				}
			}
			mustView(t, st, func(tx kv.Tx) error {
				r := kv.Prefix([]byte(p))
				got, err := scan(tx, bucketA, r)
				if err != nil {
					return err
				}
				checkEntries(t, fmt.Sprintf("Prefix(%q)", p), got, want)
				r.Reverse = true
				got, err = scan(tx, bucketA, r)
				if err != nil {
					return err
				}
				checkEntries(t, fmt.Sprintf("Prefix(%q) reverse", p), got, reversed(want))
				return nil
			})
		}
	})
}

// orderKeys are keys whose bytewise order trips up signed-byte comparison,
// string collation, length-first ordering and NUL-terminated strings.
func orderKeys() []string {
	return []string{
		"\x00", "\x00\x00", "\x00\x01", "\x01", "\x7f", "\x80", "\xfe", "\xff",
		"\xff\x00", "\xff\xff", "\xff\xff\xff",
		"a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x01", "a\x7f", "a\x80", "a\xfe",
		"a\xff", "a\xff\x00", "a\xff\xff", "aa", "ab", "b", "B", "Z", "ä", "z",
	}
}

func (s *suite) testOrder(t *testing.T) {
	t.Run("Bytewise", func(t *testing.T) {
		st := s.store(t)
		keys := orderKeys()
		want := slices.Clone(keys)
		slices.Sort(want) // Go compares strings bytewise, unsigned.
		shuffled := slices.Clone(keys)
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		})
		// One key per transaction, in shuffled order.
		for _, k := range shuffled {
			putAll(t, st, bucketA, entry{k, "v" + k})
		}
		got := keysOf(dump(t, st, bucketA))
		if !slices.Equal(got, want) {
			t.Errorf("forward Scan order:\n got  %q\n want %q", got, want)
		}
		mustView(t, st, func(tx kv.Tx) error {
			es, err := scan(tx, bucketA, kv.Range{Reverse: true})
			if err != nil {
				return err
			}
			if got := keysOf(es); !slices.Equal(got, reversed(want)) {
				t.Errorf("reverse Scan order:\n got  %q\n want %q", got, reversed(want))
			}
			for _, k := range keys {
				checkGet(t, tx, bucketA, k, "v"+k)
			}
			return nil
		})
	})

	t.Run("PrefixesOfEachOther", func(t *testing.T) {
		st := s.store(t)
		keys := []string{"k", "k\x00", "k\x00\x00", "kk", "kkk", "kkk\xff"}
		mustUpdate(t, st, func(tx kv.Tx) error {
			for i := len(keys) - 1; i >= 0; i-- {
				if err := tx.Put(bucketA, []byte(keys[i]), []byte{byte(i)}); err != nil {
					return err
				}
			}
			return nil
		})
		if got := keysOf(dump(t, st, bucketA)); !slices.Equal(got, keys) {
			t.Errorf("order of keys that are prefixes of each other:\n got  %q\n want %q", got, keys)
		}
		// Deleting the short key keeps its extensions, and vice versa.
		mustUpdate(t, st, func(tx kv.Tx) error {
			if err := tx.Delete(bucketA, []byte("k")); err != nil {
				return err
			}
			return tx.Delete(bucketA, []byte("kkk\xff"))
		})
		if got, want := keysOf(dump(t, st, bucketA)), keys[1:5]; !slices.Equal(got, want) {
			t.Errorf("after deletes:\n got  %q\n want %q", got, want)
		}
	})
}

func (s *suite) testDeleteRange(t *testing.T) {
	t.Run("Bounds", func(t *testing.T) {
		for _, c := range boundCases() {
			t.Run(c.name, func(t *testing.T) {
				st := s.store(t)
				putAll(t, st, bucketA, scanEntries()...)
				putAll(t, st, bucketB, scanEntries()...)
				mustUpdate(t, st, func(tx kv.Tx) error { return tx.DeleteRange(bucketA, c.start, c.end) })
				var want []entry
				for _, e := range scanEntries() {
					if !slices.Contains(c.want, e.key) {
						want = append(want, e)
					}
				}
				checkEntries(t, fmt.Sprintf("after DeleteRange [%q, %q)", c.start, c.end), dump(t, st, bucketA), want)
				checkEntries(t, "other bucket", dump(t, st, bucketB), scanEntries())
			})
		}
	})

	t.Run("ReadYourDeleteRange", func(t *testing.T) {
		st := s.store(t)
		putAll(t, st, bucketA, scanEntries()...)
		errAbort := fmt.Errorf("kvtest: abort")
		err := st.Update(func(tx kv.Tx) error {
			if err := tx.Put(bucketA, []byte("cc"), []byte("uncommitted")); err != nil {
				return err
			}
			if err := tx.DeleteRange(bucketA, []byte("c"), []byte("e")); err != nil {
				return err
			}
			checkAbsent(t, tx, bucketA, "c")
			checkAbsent(t, tx, bucketA, "cc")
			checkAbsent(t, tx, bucketA, "d")
			if err := tx.Put(bucketA, []byte("d"), []byte("again")); err != nil {
				return err
			}
			got, err := scan(tx, bucketA, kv.Range{})
			if err != nil {
				return err
			}
			checkEntries(t, "inside the Update", got, []entry{
				{"b", "value of b"}, {"d", "again"}, {"e", "value of e"}, {"f", "value of f"},
			})
			return errAbort
		})
		if err != errAbort {
			t.Fatalf("Update = %v, want %v", err, errAbort)
		}
		checkEntries(t, "after rolling back a DeleteRange", dump(t, st, bucketA), scanEntries())
	})

	t.Run("PrefixWithFF", func(t *testing.T) {
		st := s.store(t)
		keys := orderKeys()
		var es []entry
		for _, k := range keys {
			es = append(es, entry{k, "v"})
		}
		putAll(t, st, bucketA, es...)
		r := kv.Prefix([]byte("a\xff"))
		mustUpdate(t, st, func(tx kv.Tx) error { return tx.DeleteRange(bucketA, r.Start, r.End) })
		var want []string
		for _, k := range keys {
			if !strings.HasPrefix(k, "a\xff") {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := keysOf(dump(t, st, bucketA)); !slices.Equal(got, want) {
			t.Errorf("after DeleteRange(Prefix(\"a\\xff\")):\n got  %q\n want %q", got, want)
		}
	})

	t.Run("Thousands", func(t *testing.T) {
		st := s.store(t)
		mustUpdate(t, st, func(tx kv.Tx) error {
			for i := range 5000 {
				if err := tx.Put(bucketA, be32(uint32(i)), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		})
		mustUpdate(t, st, func(tx kv.Tx) error { return tx.DeleteRange(bucketA, be32(1000), be32(4000)) })
		got := dump(t, st, bucketA)
		if len(got) != 2000 {
			t.Fatalf("after deleting 3000 of 5000 keys, %d remain, want 2000", len(got))
		}
		if got[999].key != string(be32(999)) || got[1000].key != string(be32(4000)) {
			t.Errorf("wrong keys around the deleted range: %q, %q", got[999].key, got[1000].key)
		}
	})
}

func be32(i uint32) []byte { return binary.BigEndian.AppendUint32(nil, i) }

func (s *suite) testLarge(t *testing.T) {
	for _, size := range []int{1 << 20, kv.MaxValueSize} {
		t.Run(fmt.Sprintf("Value%dKiB", size>>10), func(t *testing.T) {
			st := s.store(t)
			big := pattern(size, byte(size>>10))
			check := func(tx kv.Tx) {
				v, err := tx.Get(bucketA, []byte("big"))
				if err != nil || len(v) != size || string(v) != string(big) {
					t.Errorf("Get of a %d-byte value: %d bytes, %v; content equal: %v", size, len(v), err, string(v) == string(big))
				}
				vs, err := tx.GetMany(bucketA, [][]byte{[]byte("before"), []byte("big"), []byte("z")})
				if err != nil || len(vs) != 3 || string(vs[1]) != string(big) || string(vs[0]) != "b" || string(vs[2]) != "z" {
					t.Errorf("GetMany around a %d-byte value: %v", size, err)
				}
				n := 0
				if err := tx.Scan(bucketA, kv.Range{}, func(k, v []byte) bool {
					n++
					if string(k) == "big" && string(v) != string(big) {
						t.Errorf("Scan: %d-byte value differs (%d bytes)", size, len(v))
					}
					return true
				}); err != nil || n != 3 {
					t.Errorf("Scan: %d entries, %v", n, err)
				}
			}
			mustUpdate(t, st, func(tx kv.Tx) error {
				for _, e := range []entry{{"before", "b"}, {"big", string(big)}, {"z", "z"}} {
					if err := tx.Put(bucketA, []byte(e.key), []byte(e.value)); err != nil {
						return err
					}
				}
				check(tx)
				return nil
			})
			mustView(t, st, func(tx kv.Tx) error { check(tx); return nil })
			// Shrink it again.
			putAll(t, st, bucketA, entry{"big", "small"})
			mustView(t, st, func(tx kv.Tx) error { checkGet(t, tx, bucketA, "big", "small"); return nil })
		})
	}

	t.Run("TenThousandKeys", func(t *testing.T) {
		const n = 10000
		st := s.store(t)
		key := func(i int) []byte { return fmt.Appendf(nil, "key/%06d", i) }
		// Value lengths 0..49, so empty values appear at scale too.
		val := func(i int) []byte { return pattern(i%50, byte(i)) }
		order := rand.New(rand.NewPCG(3, 4)).Perm(n)
		// Half in one transaction, the rest in ten smaller ones.
		mustUpdate(t, st, func(tx kv.Tx) error {
			for _, i := range order[:n/2] {
				if err := tx.Put(bucketA, key(i), val(i)); err != nil {
					return err
				}
			}
			return nil
		})
		for c := range 10 {
			part := order[n/2:][c*n/20 : (c+1)*n/20]
			mustUpdate(t, st, func(tx kv.Tx) error {
				for _, i := range part {
					if err := tx.Put(bucketA, key(i), val(i)); err != nil {
						return err
					}
				}
				return nil
			})
		}
		mustView(t, st, func(tx kv.Tx) error {
			for _, reverse := range []bool{false, true} {
				i, step := 0, 1
				if reverse {
					i, step = n-1, -1
				}
				visited := 0
				err := tx.Scan(bucketA, kv.Range{Reverse: reverse}, func(k, v []byte) bool {
					visited++
					if string(k) != string(key(i)) || !sameBytes(v, val(i)) {
						t.Errorf("Scan (reverse %v) entry %d: %q=%x, want %q=%x", reverse, visited-1, k, v, key(i), val(i))
						return false
					}
					i += step
					return true
				})
				if err != nil {
					return err
				}
				if visited != n {
					t.Errorf("Scan (reverse %v) visited %d entries, want %d", reverse, visited, n)
				}
			}
			got, err := scan(tx, bucketA, kv.Range{Start: key(1234), End: key(1334)})
			if err != nil {
				return err
			}
			if len(got) != 100 || got[0].key != string(key(1234)) || got[99].key != string(key(1333)) {
				t.Errorf("bounded Scan over 10,000 keys returned %d entries", len(got))
			}
			return nil
		})
	})
}
