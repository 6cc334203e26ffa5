//go:build js && wasm

package jsbridge

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// opCall builds the call of operation name on d with id and string or
// number arguments, as dispatch would.
func opCall(t *testing.T, d *db, name string, tx, id int, args ...any) *call {
	t.Helper()
	c := &call{b: d.b, handle: d.h, tx: tx, id: id}
	for i := range operations {
		if operations[i].name == name {
			c.op = &operations[i]
		}
	}
	if c.op == nil {
		t.Fatalf("no operation %q", name)
	}
	for i, a := range args {
		switch v := a.(type) {
		case string:
			c.args[i].s = v
		case int:
			c.args[i].n = v
		}
	}
	return c
}

// TestWriteJournal: a write run under a journal token (worker mode's,
// journal.go) records its answer in its own transaction — the row of an
// insert or update, the error of a failed write, undefined for a commit —
// and recall returns it; recall of a token that never ran is NOT_RUN; a
// record's ack drops the journal's records below it.
func TestWriteJournal(t *testing.T) {
	d := dbOf(t, openT(t))
	write := func(token, ack int, c *call) {
		t.Helper()
		c.id = token
		_, _ = d.journaled(c, &journalTok{journal: "jt", token: token, ack: ack}, func() (result, error) { return c.op.work(d, c) })()
	}
	recall := func(token int) string {
		t.Helper()
		r, err := recallOp(d, opCall(t, d, "recall", 0, 0, "jt", token))
		if err != nil {
			t.Fatal(err)
		}
		return r.text
	}
	write(5, 5, opCall(t, d, "insert", 0, 0, "items", `{"id":"x","title":"first"}`))
	write(6, 5, opCall(t, d, "insert", 0, 0, "items", `{"id":"x","title":"again"}`))
	if got := recall(5); !strings.Contains(got, `"first"`) {
		t.Errorf("recall of the insert: %s", got)
	}
	if got := recall(6); !strings.Contains(got, `"CONFLICT"`) {
		t.Errorf("recall of the failed insert: %s", got)
	}
	if got := recall(7); !strings.Contains(got, `"NOT_RUN"`) {
		t.Errorf("recall of a token that never ran: %s", got)
	}
	write(8, 6, opCall(t, d, "update", 0, 0, "items", `["x"]`, `{"title":"second"}`))
	if got := recall(8); !strings.Contains(got, `"second"`) {
		t.Errorf("recall of the update: %s", got)
	}
	if got5, got6 := recall(5), recall(6); !strings.Contains(got5, "NOT_RUN") || !strings.Contains(got6, "CONFLICT") {
		t.Errorf("after a record with ack 6: token 5 %s, token 6 %s; want 5 dropped, 6 kept", got5, got6)
	}
	r, err := beginOp(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx := r.text
	if _, err := d.txs[atoiT(t, tx)].Insert("items", map[string]any{"id": "y", "title": "staged"}); err != nil {
		t.Fatal(err)
	}
	write(9, 8, opCall(t, d, "commit", atoiT(t, tx), 0))
	if got := recall(9); got != "" {
		t.Errorf("recall of a commit: %q, want undefined's empty text", got)
	}
	if n, err := d.eng.Get("items", []any{"y"}); err != nil || n == nil {
		t.Errorf("the committed row: %v, %v", n, err)
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestPruneJournals: the retention loop's pruneJournals drops the records
// of journals made before the horizon (and of names without a time), and
// keeps a journal within it, whose page may still resume and recall them.
func TestPruneJournals(t *testing.T) {
	d := dbOf(t, openT(t))
	now := time.Now()
	name := func(at time.Time) string {
		s := strconv.FormatInt(at.UnixMilli(), 36)
		for len(s) < 9 {
			s = "0" + s
		}
		return s + "abcdef"
	}
	old, recent := name(now.Add(-journalHorizon-time.Hour)), name(now.Add(-journalHorizon+time.Hour))
	for i, j := range []string{old, recent, "notatime"} {
		c := opCall(t, d, "insert", 0, 0, "items", fmt.Sprintf(`{"id":"p%d","title":"t"}`, i))
		c.id = 3
		_, _ = d.journaled(c, &journalTok{journal: j, token: 3, ack: 3}, func() (result, error) { return c.op.work(d, c) })()
	}
	n, err := d.pruneJournals(now)
	if err != nil || n != 2 {
		t.Fatalf("pruneJournals = %d, %v; want the old journal's and the timeless one's records (2)", n, err)
	}
	for j, want := range map[string]string{old: "NOT_RUN", "notatime": "NOT_RUN", recent: `"p1"`} {
		r, err := recallOp(d, opCall(t, d, "recall", 0, 0, j, 3))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.text, want) {
			t.Errorf("journal %s after pruning: %s, want %s", j, r.text, want)
		}
	}
}
