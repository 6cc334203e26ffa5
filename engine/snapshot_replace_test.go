package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// manualClock is a wall clock (ms) the test moves.
type manualClock struct{ ms uint64 }

func (c *manualClock) Now() uint64 { return c.ms }

const replaceT0 = 1795910400000

func replaceSchema() *Schema {
	return &Schema{Tables: []TableDef{
		{
			Name: "items",
			Columns: []ColumnDef{
				{Name: "id", Type: KindInteger},
				{Name: "name", Type: KindText},
				{Name: "a", Type: KindText},
				{Name: "b", Type: KindText},
				{Name: "c", Type: KindText},
			},
			PrimaryKey: []string{"id"},
			Indexes:    []IndexDef{{Name: "by_name", Columns: []string{"name"}}},
		},
		{
			Name:       "notes",
			Columns:    []ColumnDef{{Name: "id", Type: KindInteger}, {Name: "body", Type: KindText}},
			PrimaryKey: []string{"id"},
		},
	}}
}

// replaceFixture is a "relay" replica src and a device dev that synced
// with it, then went away while src deleted rows and pruned their
// tombstones, while dev wrote rows of its own.
type replaceFixture struct {
	clock    *manualClock
	src, dev *Engine
	devStore kv.Store
	// sent is dev's "sent watermark": the base HLC of its last transaction
	// src holds.
	sent HLC
	// want is the live id set dev must end with, per table, after a
	// replacing apply of src's snapshot.
	want map[string][]int64
}

func openReplace(t *testing.T, st kv.Store, clock *manualClock) *Engine {
	t.Helper()
	e, err := Open(st, Options{Schema: replaceSchema(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func applyAll(t *testing.T, dst *Engine, src *Engine, so SnapshotOptions, o ApplySnapshotOptions) {
	t.Helper()
	for c, err := range src.Snapshot(so) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.ApplySnapshotChunkWith(c, o); err != nil {
			t.Fatalf("%s chunk: %v", c.Type, err)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func liveIDs(t *testing.T, e *Engine, table string) []int64 {
	t.Helper()
	rows, err := e.Query(table, Query{})
	mustDo(t, err)
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r["id"].Int())
	}
	slices.Sort(ids)
	return ids
}

func newReplaceFixture(t *testing.T) *replaceFixture {
	clock := &manualClock{ms: replaceT0}
	f := &replaceFixture{clock: clock, devStore: memkv.New(Buckets...)}
	f.src = openReplace(t, memkv.New(Buckets...), clock)
	f.dev = openReplace(t, f.devStore, clock)
	big := strings.Repeat("x", 300)
	for i := int64(1); i <= 40; i++ {
		v := map[string]any{"id": i, "name": fmt.Sprintf("n%d", i)}
		if i == 20 || i == 33 {
			v["a"], v["b"], v["c"] = big, big, big // travels in parts
		}
		_, err := f.src.Insert("items", v)
		mustDo(t, err)
		clock.ms++
	}
	for i := int64(1); i <= 6; i++ {
		_, err := f.src.Insert("notes", map[string]any{"id": i, "body": "b"})
		mustDo(t, err)
		clock.ms++
	}
	// dev bootstraps (a merge), then writes a row src receives: sent.
	applyAll(t, f.dev, f.src, SnapshotOptions{}, ApplySnapshotOptions{})
	_, err := f.dev.Insert("items", map[string]any{"id": 101, "name": "n101"})
	mustDo(t, err)
	clock.ms++
	sets, err := f.dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	if len(sets) == 0 {
		t.Fatal("dev has no own transactions")
	}
	f.sent = sets[len(sets)-1].HLC
	_, err = f.src.ApplyChanges(sets)
	mustDo(t, err)
	// dev goes away. src deletes rows (33 is a row in parts, 40 the
	// last, 101 is dev's, 3 dev updates meanwhile) and notes 2..6; row
	// 20 stays and travels in parts.
	for _, id := range []int64{3, 5, 15, 33, 39, 40, 101} {
		_, err := f.src.Delete("items", Key{id})
		mustDo(t, err)
		clock.ms++
	}
	for id := int64(2); id <= 6; id++ {
		_, err := f.src.Delete("notes", Key{id})
		mustDo(t, err)
		clock.ms++
	}
	// dev's unsent writes: a new row, an update of row 3 (deleted on
	// src), a deletion of row 7 (alive on src).
	_, err = f.dev.Insert("items", map[string]any{"id": 102, "name": "n102"})
	mustDo(t, err)
	clock.ms++
	_, err = f.dev.Update("items", Key{3}, map[string]any{"name": "mine"})
	mustDo(t, err)
	clock.ms++
	_, err = f.dev.Delete("items", Key{7})
	mustDo(t, err)
	clock.ms++
	// src prunes the tombstones: its snapshot no longer says the rows
	// were deleted.
	r, err := f.src.PruneTombstones(clock.ms + 1)
	mustDo(t, err)
	if r.Tombstones != 12 {
		t.Fatalf("src pruned %d tombstones, want 12", r.Tombstones)
	}
	var items []int64
	for i := int64(1); i <= 40; i++ {
		if !slices.Contains([]int64{5, 7, 15, 33, 39, 40}, i) {
			items = append(items, i) // 3 stays: dev's unsent update
		}
	}
	f.want = map[string][]int64{"items": append(items, 102), "notes": {1}}
	return f
}

func (f *replaceFixture) check(t *testing.T, replaced bool) {
	t.Helper()
	for _, table := range []string{"items", "notes"} {
		got := liveIDs(t, f.dev, table)
		want := f.want[table]
		if !replaced {
			want = map[string][]int64{
				"items": {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
					31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 101, 102},
				"notes": {1, 2, 3, 4, 5, 6}}[table]
		}
		if !slices.Equal(got, want) {
			t.Errorf("dev's %s = %v\nwant %v", table, got, want)
		}
	}
	if !replaced {
		return
	}
	r20, err := f.dev.Get("items", Key{20})
	mustDo(t, err)
	if len(r20["a"].Text()) != 300 || len(r20["c"].Text()) != 300 {
		t.Errorf("dev's row 20, sent in parts, is %v", r20)
	}
	// The dropped rows left no index entry, no tombstone, nothing to push.
	for _, name := range []string{"n5", "n33", "n40", "n101"} {
		rows, err := f.dev.Query("items", Query{Where: []Filter{{Column: "name", Op: Eq, Value: name}}})
		mustDo(t, err)
		if len(rows) != 0 {
			t.Errorf("dev's index by_name still finds %s: %v", name, rows)
		}
	}
	_ = f.dev.store.View(func(tx kv.Tx) error {
		n := 0
		_ = tx.Scan(layout.BucketTombs, kv.Range{}, func(_, _ []byte) bool { n++; return true })
		if n != 1 {
			t.Errorf("dev holds %d tombstones, want 1 (its own deletion of row 7)", n)
		}
		for _, id := range []int64{5, 33, 40, 101} {
			if _, err := tx.Get(layout.BucketRows, layout.RowKey(layout.TableKey("items"), []Value{Int(id)})); err == nil {
				t.Errorf("dev still stores a record of items %d", id)
			}
		}
		return nil
	})
	sets, err := f.dev.ChangesSince(f.sent, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	if len(sets) != 3 {
		t.Errorf("dev has %d unsent transactions, want its 3 (the drop pushes nothing)", len(sets))
	}
	for _, cs := range sets {
		for _, c := range cs.Changes {
			if c.Type == RowDeletion && c.PK[0].Int() != 7 {
				t.Errorf("dev would push a deletion of %v", c.PK)
			}
		}
	}
	// Applied to src, dev's unsent writes make the two replicas alike.
	_, err = f.src.ApplyChanges(sets)
	mustDo(t, err)
	for _, table := range []string{"items", "notes"} {
		if a, b := liveIDs(t, f.src, table), liveIDs(t, f.dev, table); !slices.Equal(a, b) {
			t.Errorf("%s: src %v, dev %v", table, a, b)
		}
	}
	// Not only the same rows: the same facts (row 3 is dev's update of
	// a row src deleted and pruned: its name alone, on both).
	if a, b := crdtState(t, f.src), crdtState(t, f.dev); a != b {
		t.Errorf("src and dev hold different facts:\nsrc %s\ndev %s", a, b)
	}
}

// crdtState is e's whole CRDT state as text: every row of its snapshot
// with its tombstone and its cells with their HLCs, in key order.
func crdtState(t *testing.T, e *Engine) string {
	t.Helper()
	var b strings.Builder
	for c, err := range e.Snapshot(SnapshotOptions{}) {
		mustDo(t, err)
		for _, row := range c.Rows {
			fmt.Fprintf(&b, "\n%s %v", c.Table, row.PK)
			if row.HasTombstone {
				fmt.Fprintf(&b, " tomb@%s", row.Tombstone)
			}
			cells := slices.Clone(row.Cells)
			slices.SortFunc(cells, func(a, b SnapshotCell) int { return strings.Compare(a.Column, b.Column) })
			for _, cell := range cells {
				fmt.Fprintf(&b, " %s=%v@%s", cell.Column, cell.Value, cell.HLC)
			}
		}
	}
	return b.String()
}

// TestSnapshotReplaceSetsCarriedRows: a row the snapshot carries ends as
// the snapshot's row plus the unsent own facts: the local cells the sender
// let go (killed by a tombstone it pruned, in a resurrection-allowed table
// where a later cell kept the row) go, and so does a foreign tombstone the
// sender pruned; a merge would keep them on this device alone.
func TestSnapshotReplaceSetsCarriedRows(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	schema := func() *Schema {
		s := replaceSchema()
		s.Tables[0].Resurrection = ResurrectionAllowed
		return s
	}
	open := func() *Engine {
		e, err := Open(memkv.New(Buckets...), Options{Schema: schema(), Clock: clock})
		mustDo(t, err)
		return e
	}
	src, peer, dev := open(), open(), open()
	sync := func(dst, from *Engine) {
		sets, err := from.ChangesSince(HLC{}, 0, ChangesFilter{})
		mustDo(t, err)
		_, err = dst.ApplyChanges(sets)
		mustDo(t, err)
	}
	tick := func() { clock.ms++ }
	_, err := src.Insert("items", map[string]any{"id": 1, "name": "n1", "a": "a1"})
	mustDo(t, err)
	tick()
	_, err = src.Insert("items", map[string]any{"id": 2, "name": "n2"})
	mustDo(t, err)
	tick()
	sync(peer, src)
	applyAll(t, dev, src, SnapshotOptions{}, ApplySnapshotOptions{})
	// dev goes away. peer renames row 1 while src deletes it: the row
	// lives on with the name alone. src deletes row 2; dev learns that
	// deletion (as if from another relay's page) but src prunes it.
	_, err = src.Delete("items", Key{1})
	mustDo(t, err)
	tick()
	_, err = peer.Update("items", Key{1}, map[string]any{"name": "renamed"})
	mustDo(t, err)
	tick()
	sync(src, peer)
	_, err = src.Delete("items", Key{2})
	mustDo(t, err)
	tick()
	sync(dev, src)
	_, err = src.Insert("items", map[string]any{"id": 2, "name": "again"})
	mustDo(t, err)
	tick()
	clock.ms += 10
	_, err = src.PruneTombstones(clock.ms)
	mustDo(t, err)
	// dev's own transactions (its schema's migrations) are all sent.
	own, err := dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	var sent HLC
	if len(own) > 0 {
		sent = own[len(own)-1].HLC
	}
	applyAll(t, dev, src, smallChunks, ApplySnapshotOptions{Replace: true, KeepOwnAfter: sent})
	if a, b := crdtState(t, src), crdtState(t, dev); a != b {
		t.Errorf("after a replacing apply, src and dev hold different facts:\nsrc %s\ndev %s", a, b)
	}
	r1, err := dev.Get("items", Key{1})
	mustDo(t, err)
	if r1["name"].Text() != "renamed" || !r1["a"].IsNull() {
		t.Errorf("dev's row 1 = %v, want the name alone", r1)
	}
}

// smallChunks makes rows chunks of at most 3 rows, and row 20 (900 bytes
// of text) travels in parts.
var smallChunks = SnapshotOptions{ChunkRows: 3, ChunkBytes: 400}

// TestSnapshotReplaceDropsAbsentRows: a replacing apply leaves the device
// with src's rows plus its unsent own writes, across many small chunks and
// rows split in parts; the rows dropped are gone from the indexes, leave no
// tombstone and push nothing.
func TestSnapshotReplaceDropsAbsentRows(t *testing.T) {
	f := newReplaceFixture(t)
	parts := 0
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		if c.Type == ChunkRows && len(c.Rows) == 1 && c.Rows[0].PK[0].Int() == 20 {
			parts++
		}
	}
	if parts < 2 {
		t.Fatalf("row 20 travelled in %d chunks, want parts", parts)
	}
	applyAll(t, f.dev, f.src, smallChunks, ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent})
	f.check(t, true)
}

// TestSnapshotMergeIsDefault: ApplySnapshotChunk (and zero options) still
// merge: nothing local is lost.
func TestSnapshotMergeIsDefault(t *testing.T) {
	f := newReplaceFixture(t)
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunk(c); err != nil {
			t.Fatal(err)
		}
	}
	f.check(t, false)
}

// TestSnapshotReplaceKeepOwnAfterZero: a zero KeepOwnAfter keeps every row
// holding an own fact (101, which src deleted, too).
func TestSnapshotReplaceKeepOwnAfterZero(t *testing.T) {
	f := newReplaceFixture(t)
	applyAll(t, f.dev, f.src, smallChunks, ApplySnapshotOptions{Replace: true})
	got := liveIDs(t, f.dev, "items")
	if !slices.Contains(got, 101) || slices.Contains(got, 5) || slices.Contains(got, 40) {
		t.Errorf("dev's items = %v: want 101 kept, 5 and 40 dropped", got)
	}
}

// TestSnapshotReplaceResumed: a replacing apply interrupted after the first
// table and a chunk of the second, the engine reopened, resumes from its
// checkpoint with plain ApplySnapshotChunk and still replaces.
func TestSnapshotReplaceResumed(t *testing.T) {
	f := newReplaceFixture(t)
	o := ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent}
	tableEnds, rowsInSecond := 0, 0
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunkWith(c, o); err != nil {
			t.Fatal(err)
		}
		if c.Type == ChunkTableEnd {
			tableEnds++
		}
		if tableEnds == 1 && c.Type == ChunkRows {
			rowsInSecond++
		}
		if rowsInSecond == 1 {
			break
		}
	}
	mustDo(t, f.dev.Close())
	f.dev = openReplace(t, f.devStore, f.clock)
	cp, err := f.dev.SnapshotCheckpoint()
	mustDo(t, err)
	if cp == nil || !cp.Replace || cp.KeepOwnAfter != f.sent || len(cp.CompletedTables) != 1 {
		t.Fatalf("checkpoint %+v: want a replacing one with KeepOwnAfter %v and one completed table", cp, f.sent)
	}
	so := smallChunks
	so.Resume = cp
	for c, err := range f.src.Snapshot(so) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("%s chunk: %v", c.Type, err)
		}
	}
	f.check(t, true)
}

// TestSnapshotReplaceEvents: rows dropped emit a RemoteChange naming their
// table, at the rows chunk that covers them or at table_end for those after
// the last row.
func TestSnapshotReplaceEvents(t *testing.T) {
	f := newReplaceFixture(t)
	var got []Event
	f.dev.Subscribe(func(ev Event) { got = append(got, ev) })
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		got = nil
		if _, err := f.dev.ApplySnapshotChunkWith(c, ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent}); err != nil {
			t.Fatal(err)
		}
		if c.Type == ChunkTableEnd {
			// items: 40 and 101 lie after src's last row (38); notes:
			// 2..6 after its only one.
			if len(got) != 1 || got[0].Type != RemoteChange || !slices.Equal(got[0].Tables, []string{c.Table}) {
				t.Errorf("table_end of %s emitted %+v, want one RemoteChange of the table", c.Table, got)
			}
		}
	}
}

// TestSnapshotReplaceOldCheckpoint: a checkpoint stored before the mode
// existed reads as a merge.
func TestSnapshotReplaceOldCheckpoint(t *testing.T) {
	st := memkv.New(Buckets...)
	for _, cp := range []SnapshotCheckpoint{
		{SnapshotID: "s1", SiteID: SiteID{1}, HLC: HLC{Wall: 5, Site: SiteID{1}}, Cursor: 3},
		{SnapshotID: "s2", SiteID: SiteID{1}, HLC: HLC{Wall: 5, Site: SiteID{1}}, Replace: true, KeepOwnAfter: HLC{Wall: 9, Counter: 2, Site: SiteID{7}}},
	} {
		var v []byte
		mustDo(t, st.Update(func(tx kv.Tx) error { return writeCheckpoint(tx, &cp) }))
		mustDo(t, st.View(func(tx kv.Tx) error {
			var err error
			v, err = tx.Get(layout.BucketMeta, layout.MetaCheckpoint)
			return err
		}))
		if !cp.Replace && strings.Contains(string(v), "replace") {
			t.Errorf("a merging checkpoint is stored as %s: want the old shape", v)
		}
		back, err := decodeCheckpoint(v)
		mustDo(t, err)
		if back.Replace != cp.Replace || back.KeepOwnAfter != cp.KeepOwnAfter {
			t.Errorf("checkpoint %s decodes as %+v, want %+v", v, back, cp)
		}
	}
}

// TestSnapshotReplaceStripEvent (found in review): a row the snapshot
// lacks that keeps an unsent own cell is stripped, not dropped, at
// table_end; that change emits the RemoteChange too, or subscriptions
// would show the stripped cells.
func TestSnapshotReplaceStripEvent(t *testing.T) {
	clock := &manualClock{ms: replaceT0}
	src := openReplace(t, memkv.New(Buckets...), clock)
	dev := openReplace(t, memkv.New(Buckets...), clock)
	for _, id := range []int64{1, 2} {
		_, err := src.Insert("items", map[string]any{"id": id, "name": "src"})
		mustDo(t, err)
		clock.ms++
	}
	applyAll(t, dev, src, SnapshotOptions{}, ApplySnapshotOptions{})
	own, err := dev.ChangesSince(HLC{}, 0, ChangesFilter{OnlyLocal: true})
	mustDo(t, err)
	var sent HLC
	if len(own) > 0 {
		sent = own[len(own)-1].HLC
	}
	_, err = src.Delete("items", Key{2})
	mustDo(t, err)
	clock.ms++
	_, err = dev.Update("items", Key{2}, map[string]any{"a": "mine"})
	mustDo(t, err)
	clock.ms += 10
	_, err = src.PruneTombstones(clock.ms)
	mustDo(t, err)
	var events []Event
	dev.Subscribe(func(ev Event) { events = append(events, ev) })
	for c, err := range src.Snapshot(SnapshotOptions{}) {
		mustDo(t, err)
		events = nil
		_, err := dev.ApplySnapshotChunkWith(c, ApplySnapshotOptions{Replace: true, KeepOwnAfter: sent})
		mustDo(t, err)
		if c.Type == ChunkTableEnd && c.Table == "items" {
			if rows, _ := dev.Query("items", Query{Where: []Filter{{Column: "name", Op: Eq, Value: "src"}}}); len(rows) != 1 {
				t.Errorf("index by_name finds %v", rows)
			}
			r2, err := dev.Get("items", Key{2})
			mustDo(t, err)
			if r2["a"].Text() != "mine" || !r2["name"].IsNull() {
				t.Errorf("row 2 after table_end = %v, want its unsent a alone", r2)
			}
			if len(events) == 0 {
				t.Errorf("row 2 changed at table_end (name dropped) but no RemoteChange was emitted")
			}
		}
	}
}

// TestSnapshotReplaceResumeLowersKeepOwnAfter: a replacing apply resumed
// with a lower KeepOwnAfter than its checkpoint's (the client learned at
// the handshake that the relay lost acknowledged transactions) keeps the
// own facts above the lower one: row 101, dev's sent insert that src
// deleted, stays.
func TestSnapshotReplaceResumeLowersKeepOwnAfter(t *testing.T) {
	f := newReplaceFixture(t)
	o := ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent}
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunkWith(c, o); err != nil {
			t.Fatal(err)
		}
		if c.Type == ChunkRows {
			break // in items, before 101
		}
	}
	cp, err := f.dev.SnapshotCheckpoint()
	mustDo(t, err)
	if cp == nil || cp.KeepOwnAfter != f.sent {
		t.Fatalf("checkpoint %+v: want KeepOwnAfter %v", cp, f.sent)
	}
	so := smallChunks
	so.Resume = cp
	for c, err := range f.src.Snapshot(so) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunkWith(c, ApplySnapshotOptions{Replace: true}); err != nil {
			t.Fatalf("%s chunk: %v", c.Type, err)
		}
	}
	if got := liveIDs(t, f.dev, "items"); !slices.Contains(got, 101) || slices.Contains(got, 5) {
		t.Errorf("dev's items = %v: want 101 kept (KeepOwnAfter lowered to zero), 5 dropped", got)
	}
}

// TestSnapshotReplaceLostChunk (the simulator's seed 96, whose network
// drops frames): a replacing apply refuses the rows chunk after a lost one,
// and a table_end after a lost last chunk, before applying anything of it
// (SnapshotChunk.Offset); the rows the lost chunk carried stay on the
// device, the table is not recorded as complete, and the resumed transfer
// ends as a whole one does. Before, the next chunk dropped the lost
// chunk's rows as absent, and the table completed without them.
func TestSnapshotReplaceLostChunk(t *testing.T) {
	for _, lose := range []string{"a middle rows chunk", "the last rows chunk"} {
		t.Run(lose, func(t *testing.T) {
			f := newReplaceFixture(t)
			o := ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent}
			var chunks []SnapshotChunk
			for c, err := range f.src.Snapshot(smallChunks) {
				mustDo(t, err)
				chunks = append(chunks, c)
			}
			// The first table's rows chunks: lose the second or the last.
			var rowsAt []int
			for i, c := range chunks {
				if c.Type == ChunkTableEnd {
					break
				}
				if c.Type == ChunkRows {
					rowsAt = append(rowsAt, i)
				}
			}
			lost := rowsAt[1]
			if lose == "the last rows chunk" {
				lost = rowsAt[len(rowsAt)-1]
			}
			before := liveIDs(t, f.dev, chunks[lost].Table)
			var failed error
			for i, c := range chunks {
				if i == lost {
					continue
				}
				if _, err := f.dev.ApplySnapshotChunkWith(c, o); err != nil {
					failed = err
					break
				}
			}
			if !errors.Is(failed, ErrMalformed) || !strings.Contains(failed.Error(), "lost or repeated") {
				t.Fatalf("the stream without chunk %d: %v, want ErrMalformed (a chunk lost)", lost, failed)
			}
			after := liveIDs(t, f.dev, chunks[lost].Table)
			for _, r := range chunks[lost].Rows {
				id := r.PK[0].Int()
				if slices.Contains(before, id) && !slices.Contains(after, id) {
					t.Errorf("row %d of the lost chunk was dropped from dev", id)
				}
			}
			cp, err := f.dev.SnapshotCheckpoint()
			mustDo(t, err)
			if cp == nil || len(cp.CompletedTables) != 0 {
				t.Fatalf("checkpoint %+v: want one with no completed table", cp)
			}
			so := smallChunks
			so.Resume = cp
			for c, err := range f.src.Snapshot(so) {
				mustDo(t, err)
				if _, err := f.dev.ApplySnapshotChunk(c); err != nil {
					t.Fatalf("resumed %s chunk: %v", c.Type, err)
				}
			}
			f.check(t, true)
		})
	}
}

// TestSnapshotMergeResumedReplacing: a merging transfer resumed with
// Replace goes on replacing (the tables still to come: the client learned
// that the sender pruned past what this replica applied), and its
// checkpoint says so; the tables it completed merging stay merged. A
// replacing transfer never goes back to merging.
func TestSnapshotMergeResumedReplacing(t *testing.T) {
	f := newReplaceFixture(t)
	for c, err := range f.src.Snapshot(smallChunks) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunk(c); err != nil {
			t.Fatal(err)
		}
		if c.Type == ChunkTableEnd {
			break // items merged
		}
	}
	cp, err := f.dev.SnapshotCheckpoint()
	mustDo(t, err)
	if cp == nil || cp.Replace || !slices.Equal(cp.CompletedTables, []string{"items"}) {
		t.Fatalf("checkpoint %+v: want a merging one with items completed", cp)
	}
	so := smallChunks
	so.Resume = cp
	o := ApplySnapshotOptions{Replace: true, KeepOwnAfter: f.sent}
	for c, err := range f.src.Snapshot(so) {
		mustDo(t, err)
		if _, err := f.dev.ApplySnapshotChunkWith(c, o); err != nil {
			t.Fatalf("resumed %s chunk: %v", c.Type, err)
		}
		if c.Type == ChunkHeader {
			if cp, err := f.dev.SnapshotCheckpoint(); err != nil || cp == nil || !cp.Replace || cp.KeepOwnAfter != f.sent {
				t.Fatalf("checkpoint after the resumed header %+v, %v: want a replacing one", cp, err)
			}
		}
	}
	if got := liveIDs(t, f.dev, "notes"); !slices.Equal(got, f.want["notes"]) {
		t.Errorf("notes (replaced) = %v, want %v", got, f.want["notes"])
	}
	if got := liveIDs(t, f.dev, "items"); !slices.Contains(got, 5) {
		t.Errorf("items (merged before) = %v: want 5, which src deleted, still there", got)
	}
}
