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
	defer func(n int) { journalDropEvery = n }(journalDropEvery)
	journalDropEvery = 1 // every record drops those below its ack
	d := dbOf(t, openT(t))
	write := func(token, ack int, c *call) {
		t.Helper()
		c.id = token
		_, _ = d.journaled(c, &journalTok{journal: "jt", token: token, ack: ack}, func() (result, error) { return c.op.work(d, c) })()
	}
	recall := func(token int) string { t.Helper(); return recallT(t, d, "jt", token) }
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

// TestWriteJournalAwaited: a page that awaits each write sends each with
// ack = its own token (it waits on that call alone); the records below
// are dropped once ack has moved journalDropEvery past the last drop, so
// the journal keeps a bounded number of records however many writes run
// (it grew by one per write while a record dropped only below an ack
// smaller than its token). A record the page still waits on (token at or
// above every later ack) is never dropped.
func TestWriteJournalAwaited(t *testing.T) {
	d := dbOf(t, openT(t))
	records := func() int {
		t.Helper()
		states, err := d.eng.States("wcall/ja/")
		if err != nil {
			t.Fatal(err)
		}
		return len(states)
	}
	write := func(token, ack int) {
		t.Helper()
		c := opCall(t, d, "insert", 0, token, "items", fmt.Sprintf(`{"id":"r%d","title":"t"}`, token))
		if _, err := d.journaled(c, &journalTok{journal: "ja", token: token, ack: ack}, func() (result, error) { return c.op.work(d, c) })(); err != nil {
			t.Fatal(err)
		}
	}
	recall := func(token int) string { t.Helper(); return recallT(t, d, "ja", token) }
	n := 3*journalDropEvery + 5
	most := 0
	for token := 1; token <= n; token++ {
		write(token, token)
		most = max(most, records())
		if got := recall(token); !strings.Contains(got, fmt.Sprintf(`"r%d"`, token)) {
			t.Fatalf("recall of write %d just after it: %s", token, got)
		}
	}
	if most > journalDropEvery+1 {
		t.Errorf("after %d awaited writes the journal held up to %d records, want at most %d", n, most, journalDropEvery+1)
	}
	// Write n+1 stays unanswered: later writes ack it at most.
	waiting := n + 1
	write(waiting, waiting)
	for token := waiting + 1; token <= waiting+3*journalDropEvery; token++ {
		write(token, waiting)
	}
	if got := recall(waiting); !strings.Contains(got, fmt.Sprintf(`"r%d"`, waiting)) {
		t.Errorf("recall of the write still waited on, after %d later writes: %s", 3*journalDropEvery, got)
	}
	if got := recall(1); !strings.Contains(got, "NOT_RUN") {
		t.Errorf("recall of the first write, acknowledged long ago: %s, want it dropped", got)
	}
}

// recallT returns the answer recall gives for token of journal.
func recallT(t *testing.T, d *db, journal string, token int) string {
	t.Helper()
	r, err := recallOp(d, opCall(t, d, "recall", 0, 0, journal, token))
	if err != nil {
		t.Fatal(err)
	}
	return r.text
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
