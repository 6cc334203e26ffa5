package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestPeerFacts: a replica hands back, page by page, exactly the facts of
// other sites it holds (its rows' live cells and tombstones), under
// Options.LocalChangeLogOnly too (where ChangesSince cannot: the browser);
// a fresh replica given those pages plus the replica's own transactions
// holds the same rows, and a deleted row's tombstone travels (an older
// insert of it stays dead there).
func TestPeerFacts(t *testing.T) {
	for _, localOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("LocalChangeLogOnly=%v", localOnly), func(t *testing.T) {
			clock := &manualClock{ms: replaceT0}
			open := func(o Options) *Engine {
				o.Schema, o.Clock = replaceSchema(), clock
				e, err := Open(memkv.New(Buckets...), o)
				mustDo(t, err)
				return e
			}
			author := open(Options{})
			dev := open(Options{LocalChangeLogOnly: localOnly})
			var firstInsert []ChangeSet
			for i := int64(1); i <= 30; i++ {
				clock.ms++
				cs, err := author.Transact(func(tx *Tx) error {
					_, err := tx.Insert("items", map[string]any{"id": i, "name": fmt.Sprintf("n%d", i), "a": "x"})
					return err
				})
				mustDo(t, err)
				if i == 5 {
					firstInsert = append(firstInsert, *cs)
				}
			}
			clock.ms++
			_, err := author.Delete("items", Key{int64(5)})
			mustDo(t, err)
			sets, err := author.ChangesSince(HLC{}, 0, ChangesFilter{})
			mustDo(t, err)
			_, err = dev.ApplyChanges(sets)
			mustDo(t, err)
			for i := int64(100); i < 105; i++ {
				clock.ms++
				_, err := dev.Insert("items", map[string]any{"id": i, "name": "own"})
				mustDo(t, err)
			}
			clock.ms++
			_, err = dev.Update("items", Key{int64(2)}, map[string]any{"name": "dev's"})
			mustDo(t, err)

			var got []ChangeSet
			var pos []byte
			pages := 0
			for {
				page, next, err := dev.PeerFacts(pos, 7)
				mustDo(t, err)
				pages++
				got = append(got, page...)
				if next == nil {
					break
				}
				if slices.Equal(next, pos) {
					t.Fatalf("position did not advance: %x", pos)
				}
				pos = next
			}
			if pages < 4 {
				t.Fatalf("%d pages of at most 7 facts for 30 rows: paging did not bound the pages", pages)
			}
			facts, tombs := 0, 0
			for _, cs := range got {
				if cs.SiteID == dev.SiteID() {
					t.Fatalf("a ChangeSet of the replica's own site: %s", cs.TransactionID)
				}
				for _, c := range cs.Changes {
					if c.HLC.Site != cs.SiteID {
						t.Fatalf("fact of %s in a ChangeSet of %s", c.HLC.Site, cs.SiteID)
					}
					if c.Table == "items" && c.PK[0].Int() == 2 && c.Column == "name" {
						t.Fatal("the superseded name of row 2 came back")
					}
					facts++
					if c.Type == RowDeletion {
						tombs++
					}
				}
			}
			if tombs != 1 {
				t.Fatalf("%d tombstones, want row 5's", tombs)
			}

			// A fresh replica with those pages and dev's own
			// transactions holds dev's rows.
			fresh := open(Options{})
			_, err = fresh.ApplyChanges(got)
			mustDo(t, err)
			own, err := dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
			mustDo(t, err)
			_, err = fresh.ApplyChanges(own)
			mustDo(t, err)
			want, err := dev.Query("items", Query{})
			mustDo(t, err)
			have, err := fresh.Query("items", Query{})
			mustDo(t, err)
			if fmt.Sprint(have) != fmt.Sprint(want) {
				t.Fatalf("rebuilt rows differ:\n have %v\n want %v", have, want)
			}
			// Row 5's first insert stays dead: the tombstone came.
			_, err = fresh.ApplyChanges(firstInsert)
			mustDo(t, err)
			if ids := liveIDs(t, fresh, "items"); slices.Contains(ids, 5) {
				t.Fatal("row 5 revived: its tombstone was not among the peer facts")
			}
		})
	}
}
