//go:build js && wasm

package jsbridge

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// The write journal of worker mode (web/replica.js). A page running the
// engine in a Worker terminates that Worker when the page freezes (a
// frozen page's Worker is paused too, and would hold its IndexedDB
// transactions open for the whole freeze) and starts another on resume.
// The answers of calls in flight at that moment are lost; for a write the
// page must then learn whether it committed, without running it twice.
//
// So each write call (db.insert, upsert, update, delete, a
// db.transaction's commit, the migrations) carries a journal token, three
// more arguments of its go() call (journalArgs): the call's id (the
// token), the lowest token of the page still waiting for an answer (ack),
// and the page's journal name (named by the time it was made; the page
// makes a new one each day, see pruneJournals, and for each session of
// Workers, whose call ids start from 1 again). The write then stores its
// answer as the engine state "wcall/JOURNAL/TOKEN" in its own IndexedDB
// transaction (engine.SetWriteNote), so the record exists if and only if
// the write committed (a write that changed nothing stores it too,
// alone); a write that fails stores its error in a transaction of its own
// before its answer is sent. Records below ack are dropped (their
// answers reached the page), not by every record but in one range delete
// of the record's transaction once ack has moved journalDropEvery past the
// last drop (see journaled): one IndexedDB request less per write. On
// restore the page asks recall for each write whose answer it lacks: the
// stored answer, or NOT_RUN (then the call never ran, or ran and failed
// without its record: the page sends it again; calls run one at a time in
// call order, so no later call of the page has run either). Recall only
// asks for tokens the page still waits on, at or above its ack, whose
// records no drop touches; tokens are never reused within a journal.

// journalTok is a write call's journal token.
type journalTok struct {
	journal    string
	token, ack int
}

// journalName is the engine state name of token's record.
func journalName(journal string, token int) string {
	return fmt.Sprintf("wcall/%s/%016x", journal, token)
}

// journalArgs reads the journal token that follows a call's own
// arguments: go(op, handle, tx, id, a, b, c, d, token, ack, journal); nil
// for a call without one.
func journalArgs(args []js.Value) *journalTok {
	if len(args) < 11 || args[8].Type() != js.TypeNumber || args[10].Type() != js.TypeString {
		return nil
	}
	j := &journalTok{token: args[8].Int(), ack: args[9].Int(), journal: args[10].String()}
	if j.token <= 0 || j.journal == "" {
		return nil
	}
	return j
}

// journalDropEvery is how far ack moves between two drops of a journal's
// acknowledged records (a variable for tests): a page awaiting each write
// keeps at most this many records of its journal besides those it waits
// on, some tens of kilobytes. A drop every 32 writes measured slower on
// W3 (its range delete, and idbkv's speculation cache checking each of
// its keys against the range).
var journalDropEvery = 256

// journaled wraps work, the write call c, so that its answer is recorded
// under j (see above).
func (d *db) journaled(c *call, j *journalTok, work func() (result, error)) func() (result, error) {
	name := journalName(j.journal, j.token)
	return func() (result, error) {
		stored := false
		n := &engine.WriteNote{
			Name: name,
			Value: func(row model.Row) []byte {
				stored = true
				r := result{kind: kindUndefined}
				if row != nil {
					text, blobs := encodeRows([]model.Row{row}, noteColumns(d, c.str(0), row))
					r = result{kind: kindRow, text: text, blobs: blobs}
				}
				return encodeAnswer(r)
			},
		}
		// The drop: when ack moved journalDropEvery past this replica's
		// last one (or it has made none in this journal).
		// (ack is at most the token: the page counts the call itself
		// among those waiting, so a page awaiting each write sends
		// ack = token, and every record below it is acknowledged.)
		drop := j.ack > 0 && j.ack <= j.token && (j.journal != d.dropped.journal || j.ack-d.dropped.ack >= journalDropEvery)
		if drop {
			n.DropFrom, n.DropTo = journalName(j.journal, 0), journalName(j.journal, j.ack)
		}
		if c.op.table {
			d.columns(c.str(0), false) // cached before the transaction (noteColumns reads no store)
		}
		d.eng.SetWriteNote(n)
		r, err := work()
		d.eng.SetWriteNote(nil)
		if drop && stored && err == nil {
			d.dropped = journalTok{journal: j.journal, ack: j.ack}
		}
		switch {
		case err != nil:
			// Nothing was written: the error, recorded before the
			// answer goes (a failure to record it leaves NOT_RUN,
			// and the page runs the call again).
			_ = d.eng.SetState(name, encodeAnswer(fail(err, c.methodName(), c.tableName())))
		case !stored:
			// A write that took no local engine transaction (a
			// commit of a transaction that staged nothing, or
			// db.applyChanges, whose merge the engine writes in a
			// transaction of its own): recorded just after it.
			_ = d.eng.SetState(name, encodeAnswer(r))
		}
		return r, err
	}
}

// noteColumns is the column order of a write's recorded row (as
// rowsResult's, but from the cache only: it runs inside the write's
// transaction, where reading the schema from the store would wait on that
// transaction): the cached columns, and any column of row they lack (a
// migration added it) after them.
func noteColumns(d *db, table string, row model.Row) []string {
	cols, _ := d.cachedColumns(table)
	if len(row) <= len(cols) || !newColumn(row, cols) {
		return cols
	}
	known := make(map[string]bool, len(cols))
	for _, c := range cols {
		known[c] = true
	}
	var extra []string
	for k := range row {
		if !known[k] && (len(k) == 0 || k[0] != '$') {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(slices.Clip(cols), extra...)
}

// encodeAnswer encodes r as [u8 kind][u32 text length][text][blobs].
func encodeAnswer(r result) []byte {
	b := make([]byte, 0, 5+len(r.text)+len(r.blobs))
	b = append(b, byte(r.kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.text)))
	b = append(b, r.text...)
	return append(b, r.blobs...)
}

func decodeAnswer(b []byte) (result, error) {
	if len(b) < 5 || uint64(len(b)) < 5+uint64(binary.LittleEndian.Uint32(b[1:])) {
		return result{}, fmt.Errorf("jsbridge: a malformed write journal record (%d bytes)", len(b))
	}
	n := 5 + int(binary.LittleEndian.Uint32(b[1:]))
	r := result{kind: int(b[0]), text: string(b[5:n])}
	if n < len(b) {
		r.blobs = b[n:]
	}
	return r, nil
}

// recallOp answers the page's question after a restore: a = the journal,
// b = a token. The answer is the recorded answer of that write call, or
// an error with code NOT_RUN (only web/replica.js sees it).
func recallOp(d *db, c *call) (result, error) {
	v, err := d.eng.State(journalName(c.str(0), c.int(1)))
	if err != nil {
		return result{}, err
	}
	if v == nil {
		return result{kind: kindError, text: `{"code":"NOT_RUN","message":"the call did not run"}`}, nil
	}
	return decodeAnswer(v)
}

// journalHorizon is how long a journal's records are kept: a page that
// resumes later than this after its freeze finds its in-flight writes'
// records gone and sends them again. It is the engine's retention horizon
// (engine.DefaultRetention, 30 days), beyond which a replica's held
// changes are dropped too.
var journalHorizon = engine.DefaultRetention

// journalTime reads the time a journal was made from its name: the page
// names it by Date.now() in base 36, 9 digits, then random letters
// (web/replica.js). A name of another form has no time (ok false).
func journalTime(journal string) (t time.Time, ok bool) {
	if len(journal) < 9 {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(journal[:9], 36, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// pruneJournals deletes the write-journal records (wcall/JOURNAL/TOKEN)
// of journals made before now-journalHorizon, and those whose name has no
// time. A page keeps only its last few records (each record drops those
// whose answers the page has), but every journal leaves those few behind
// (a page makes a new journal each day, so that a page open for months
// never writes under a name this deletes); the retention loop (pruneOnce)
// calls this. It returns how many
// records it deleted.
func (d *db) pruneJournals(now time.Time) (int, error) {
	states, err := d.eng.States("wcall/")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range states {
		journal, _, _ := strings.Cut(strings.TrimPrefix(s.Name, "wcall/"), "/")
		if t, ok := journalTime(journal); ok && now.Sub(t) < journalHorizon {
			continue
		}
		if err := d.eng.SetState(s.Name, nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
