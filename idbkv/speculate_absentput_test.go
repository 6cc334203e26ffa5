//go:build js && wasm

package idbkv

import (
	"strconv"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// bump is an Update function of the engine's shape over the keys ks (all
// read in its first GetBatch): it records what it read of the last key
// and puts that counter plus one under it, after deleting [from, to) when
// from is set.
func bump(seen *[]string, runs *int, from, to string, ks ...string) func(kv.Tx) error {
	return func(tx kv.Tx) error {
		*runs++
		vals, err := getb(tx, ks...)
		if err != nil {
			return err
		}
		last := vals[len(vals)-1]
		*seen = append(*seen, string(last))
		n := 0
		if last != nil {
			if n, err = strconv.Atoi(string(last)); err != nil {
				return err
			}
		}
		if from != "" {
			if err := tx.DeleteRange("a", []byte(from), []byte(to)); err != nil {
				return err
			}
		}
		return tx.Put("a", []byte(ks[len(ks)-1]), []byte(strconv.Itoa(n+1)))
	}
}

// TestSpeculateAbsentPut: a key a speculative read assumed absent (it is
// cached absent) and the Update then puts must be checked at commit: when
// another Store (another tab) wrote the key since, the Update must run
// again on the stored value, whether the commit also checks other assumed
// values or only that key, and a DeleteRange over the key in the same
// Update must not hide the other Store's value. (A check that issues such
// a put as an IndexedDB add instead of reading the key back was measured:
// no gain, see the branch write-records; these cases guard either way.)
func TestSpeculateAbsentPut(t *testing.T) {
	s, name := openT(t, specOpts, "a")
	defer s.Close()
	other := openNamed(t, name, openOptions{}, "a")
	defer other.Close()
	cases := []struct {
		name     string
		keys     []string // read by the GetBatch; the last one is bumped
		from, to string   // DeleteRange before the put, if from is set
	}{
		{"the key alone", []string{"n"}, "", ""},
		{"with another assumed value", []string{"clock", "m"}, "", ""},
		{"DeleteRange over the key", []string{"clock", "d1"}, "d", "e"},
	}
	put(t, s, "clock", []byte("0"))
	for _, c := range cases {
		k := c.keys[len(c.keys)-1]
		var seen []string
		runs := 0
		// Cache k as absent (and clock as stored): a real read, nothing
		// written to k.
		if err := s.Update(func(tx kv.Tx) error {
			_, err := getb(tx, c.keys...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// A speculative Update that finds k absent, as cached: one run.
		if err := s.Update(bump(&seen, &runs, c.from, c.to, c.keys...)); err != nil {
			t.Fatal(err)
		}
		if runs != 1 || seen[0] != "" {
			t.Errorf("%s: runs %d reading %q, want one speculative run reading nothing", c.name, runs, seen)
		}
		expect(t, s, "a", k, "1")
		// Forget k again, then the other Store writes it.
		del(t, s, k)
		put(t, other, k, []byte("40"))
		seen, runs = nil, 0
		if err := s.Update(bump(&seen, &runs, c.from, c.to, c.keys...)); err != nil {
			t.Fatal(err)
		}
		expect(t, s, "a", k, "41")
		if runs != 2 || seen[0] != "" || seen[1] != "40" {
			t.Errorf("%s: runs %d reading %q, want a speculative run reading nothing, then one reading 40", c.name, runs, seen)
		}
		if c.from != "" {
			continue // the DeleteRange drops k from the cache
		}
		// The cache learned 41: the next Update is right in one run.
		seen, runs = nil, 0
		if err := s.Update(bump(&seen, &runs, c.from, c.to, c.keys...)); err != nil {
			t.Fatal(err)
		}
		expect(t, s, "a", k, "42")
		if runs != 1 || seen[0] != "41" {
			t.Errorf("%s: runs %d reading %q, want one run reading 41", c.name, runs, seen)
		}
	}
}
