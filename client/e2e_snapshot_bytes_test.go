//go:build !js

package client_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

func filesSchema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{Name: "files", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "a", Type: model.KindText}, {Name: "b", Type: model.KindText},
		{Name: "c", Type: model.KindText}, {Name: "d", Type: model.KindBlob}}}}}
}

// TestE2ESnapshotLargeRows: a fresh device bootstraps, from a real relay,
// 1,000 rows of 20 KB (20 MB: 1,000 rows to a chunk used to make a 20 MB
// frame, above the client's 16 MiB read limit), a text of 1.25 MiB of
// control characters (7.5 MiB in JSON, which escapes them 6x), a blob near
// the 2 MiB local row limit, and a row that four devices' columns of ~1.9 MiB merged into
// ~7.6 MiB, near the 8 MiB storage limit. It gets every row over one
// WebSocket. Before the byte bound, the fresh device failed at the first
// rows chunk and reconnected for ever, applying no row.
func TestE2ESnapshotLargeRows(t *testing.T) {
	checkNoLeaks(t)
	r := startRelay(t, t.TempDir(), nil)
	w := newReplica(t, "w", filesSchema(), engine.Options{}, client.Options{})
	w.connect(t, r.url, "files", "")
	for i := 0; i < 1000; i += 50 {
		_, err := w.db.Transact(func(tx *engine.Tx) error {
			for j := i; j < i+50; j++ {
				if _, err := tx.Insert("files", map[string]any{"id": fmt.Sprintf("r%04d", j), "a": strings.Repeat("x", 20_000)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	const near = engine.MaxLocalRowSize - 64<<10
	// The relay stores each ChangeSet's JSON as one value, under the 8 MiB
	// storage limit, so a text of control characters (6x in JSON) syncs
	// only up to ~1.3 MiB: the relay refuses a larger one at the push
	// (APPLY_CHANGES_REFUSED, kv: value too large), a separate limit.
	ctl := strings.Repeat("\x01", 1250<<10)
	for _, row := range []map[string]any{{"id": "ctl", "a": ctl}, {"id": "bin", "d": make([]byte, near)}, {"id": "big"}} {
		if _, err := w.db.Insert("files", row); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "w's writes pushed", func() bool { return pending(t, w) == 0 })
	for _, ev := range w.ev.list() {
		if ev.Type == client.ErrorReported {
			t.Fatalf("w reported %v", ev.Err)
		}
	}

	// Four devices get row big, then each sets its own column offline.
	const quarter = engine.MaxLocalRowSize - 128<<10
	var devs []*replica
	for i, col := range []string{"a", "b", "c", "d"} {
		d := newReplica(t, "dev"+col, filesSchema(), engine.Options{}, client.Options{})
		bootstrap(t, r, d, func() bool { _, err := d.db.Get("files", engine.Key{"big"}); return err == nil })
		d.c.Disconnect()
		var v any = strings.Repeat(string(rune('p'+i)), quarter)
		if col == "d" {
			v = make([]byte, quarter)
		}
		if _, err := d.db.Update("files", engine.Key{"big"}, map[string]any{col: v}); err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	for _, d := range devs {
		d.connect(t, r.url, "files", "")
	}
	for _, d := range devs {
		waitFor(t, d.name+"'s column pushed", func() bool { return pending(t, d) == 0 })
	}

	f := newReplica(t, "fresh", filesSchema(), engine.Options{}, client.Options{})
	bootstrap(t, r, f, func() bool { return f.c.State().State == client.Synced && rowCount(t, f.db) == 1003 })
	row, err := f.db.Get("files", engine.Key{"big"})
	if err != nil {
		t.Fatal(err)
	}
	for i, col := range []string{"a", "b", "c"} {
		if s := row[col].Text(); len(s) != quarter || s[0] != byte('p'+i) {
			t.Fatalf("merged row big: column %s has %d bytes", col, len(s))
		}
	}
	if len(row["d"].Blob()) != quarter {
		t.Fatalf("merged row big: column d has %d bytes", len(row["d"].Blob()))
	}
	if c, err := f.db.Get("files", engine.Key{"ctl"}); err != nil || c["a"].Text() != ctl {
		t.Fatalf("row ctl: %v", err)
	}
	if c, err := f.db.Get("files", engine.Key{"bin"}); err != nil || len(c["d"].Blob()) != near {
		t.Fatalf("row bin: %v", err)
	}
}

// TestE2ESnapshotNoProgressBacksOff: a fresh device whose read limit
// (Options.MaxMessageSize, 64 KiB) is below the relay's rows chunks makes
// no progress on the snapshot: each attempt ends at the first rows chunk.
// It backs off like a failed transfer (delays 1, 2, 4, 8 … base units, not
// the base each time) and reports each attempt (ErrorReported,
// ErrSnapshotStalled naming the read limit). Before, the handshake reset
// the backoff and the device reconnected at the base delay for ever.
func TestE2ESnapshotNoProgressBacksOff(t *testing.T) {
	checkNoLeaks(t)
	r := startRelay(t, t.TempDir(), nil)
	w := newReplica(t, "w", filesSchema(), engine.Options{}, client.Options{})
	w.connect(t, r.url, "files", "")
	_, err := w.db.Transact(func(tx *engine.Tx) error {
		for j := range 100 {
			if _, err := tx.Insert("files", map[string]any{"id": fmt.Sprintf("r%04d", j), "a": strings.Repeat("x", 2_000)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "w's writes pushed", func() bool { return pending(t, w) == 0 })

	const base = 20 * time.Millisecond
	f := newReplica(t, "fresh", filesSchema(), engine.Options{}, client.Options{MaxMessageSize: 64 << 10,
		BackoffBase: base, BackoffMax: time.Hour, Rand: func() float64 { return 0 }})
	f.connect(t, r.url, "files", "")
	waitFor(t, "five attempts", func() bool { return len(f.ev.delays()) >= 5 })
	f.c.Disconnect()
	d := f.ev.delays()
	for i := 1; i < 5; i++ {
		// Each delay doubles (a little less: the delay is measured from
		// the event's delivery).
		if d[i] < base<<i-base/2 {
			t.Fatalf("reconnect delays %v: attempt %d waited %v, want about %v", d, i+1, d[i], base<<i)
		}
	}
	reports := 0
	for _, ev := range f.ev.list() {
		if ev.Type == client.ErrorReported && errors.Is(ev.Err, client.ErrSnapshotStalled) {
			reports++
			if !strings.Contains(ev.Err.Error(), "read limit") {
				t.Fatalf("report does not name the cause: %v", ev.Err)
			}
		}
	}
	if reports < 5 {
		t.Fatalf("%d no-progress reports for %d attempts", reports, len(d))
	}
	if n := rowCount(t, f.db); n != 0 {
		t.Fatalf("%d rows applied", n)
	}
}

func rowCount(t testing.TB, db *engine.Engine) int {
	t.Helper()
	n, err := db.Count("files", nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bootstrap connects the fresh replica d and waits for done, over one
// WebSocket: it fails as soon as d opened a third.
func bootstrap(t testing.TB, r *liveRelay, d *replica, done func() bool) {
	t.Helper()
	before := r.conns.Load()
	d.connect(t, r.url, "files", "")
	waitFor(t, d.name+" bootstrapped", func() bool {
		if n := r.conns.Load() - before; n > 2 {
			t.Fatalf("%s opened %d WebSockets, %d rows applied; state %+v", d.name, n, rowCount(t, d.db), d.c.State())
		}
		return done()
	})
	if n := r.conns.Load() - before; n != 1 {
		t.Fatalf("%s opened %d WebSockets, want 1", d.name, n)
	}
}
