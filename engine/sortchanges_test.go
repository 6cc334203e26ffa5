package engine

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestSortChangesAsSortFunc: sortChanges orders changes exactly as
// slices.SortFunc by HLC does, ties (the cells of one write share an HLC)
// included.
func TestSortChangesAsSortFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 12, 13, 50, 200, 1000} {
		for range 5 {
			cs := make([]Change, n)
			for i := range cs {
				cs[i] = Change{Type: ColumnChange, Table: "t", Column: "c" + strconv.Itoa(i), HLC: HLC{Wall: uint64(rng.IntN(4)), Counter: uint16(rng.IntN(3))}}
			}
			want := slices.Clone(cs)
			slices.SortFunc(want, func(a, b Change) int { return a.HLC.Compare(b.HLC) })
			sortChanges(cs)
			if !reflect.DeepEqual(cs, want) {
				t.Fatalf("n=%d: sortChanges order differs from slices.SortFunc", n)
			}
		}
	}
}
