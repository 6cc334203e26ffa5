//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/idbkv"
	"github.com/replica-sync/replica/model"
)

// operation is one entry point of the Go side: facade.js calls
// go(op, handle, tx, id, a, b, c, d) with op the operation's number, its
// index in operations plus one (facade.js reads the numbers by name from
// its OPS argument, so the two sides cannot disagree).
type operation struct {
	name string // the key in facade.js's OPS
	// method is the JavaScript method its errors name: one without a dot
	// ("insert") reads "db.insert", or "tx.insert" in a transaction
	// (call.tx != 0); one with a dot ("db.sync.connect") is used as is.
	method string
	queue  queue
	table  bool // argument a is the table its errors name
	closes bool // later calls of the replica fail with CLOSED
	// work (queue worker) runs on the worker and settles the call's
	// promise with its result.
	work func(d *db, c *call) (result, error)
	// inline (queue worker, optional) runs the call at once inside the
	// dispatch callback when it can (see runNow) and reports whether it
	// did.
	inline func(d *db, c *call) bool
	// now (the other queues) is the operation, run inside the dispatch
	// callback: its value is dispatch's return value for queue answered
	// (nil otherwise); d is nil for queue noReplica.
	now func(d *db, c *call) any
}

// queue is where an operation runs.
type queue uint8

const (
	// worker: on the replica's worker goroutine, one call at a time in
	// call order (see db.run); the answer settles the call's promise.
	worker queue = iota
	// inDispatch: inside the dispatch callback, never blocking; no
	// promise (a subscription's errors go to its callback).
	inDispatch
	// answered: inside the dispatch callback, which returns the answer
	// (no promise); runs even while the replica is closing.
	answered
	// noReplica: before any replica exists (Replica.open).
	noReplica
)

// operations is every operation, each named once. Arguments (a, b, c, d)
// are as facade.js sends them; with a transaction id (call.tx != 0) the
// row operations act on that staged transaction.
var operations = [...]operation{
	// Replica.importKey, Replica.deriveKey: a = database id, b = the
	// passphrase or the key's bytes (see sealKeyOp)
	{name: "sealKey", method: "Replica.importKey", queue: noReplica, now: func(_ *db, c *call) any { sealKeyOp(c); return nil }},
	// a = the options as JSON
	{name: "open", queue: noReplica, now: func(_ *db, c *call) any { c.b.open(c); return nil }},
	{name: "close", method: "db.close", queue: worker, closes: true, work: closeOp},
	// a = table, b = row JSON, c = blob buffer
	{name: "insert", method: "insert", queue: worker, table: true, work: insertOp, inline: insertNow},
	// a = table, b = key JSON, c = patch JSON, d = blob buffer
	{name: "update", method: "update", queue: worker, table: true, work: updateOp},
	// a = table, b = row JSON, c = blob buffer
	{name: "upsert", method: "upsert", queue: worker, table: true, work: upsertOp},
	// a = table, b = key JSON, c = blob buffer
	{name: "delete", method: "delete", queue: worker, table: true, work: deleteOp},
	{name: "get", method: "get", queue: worker, table: true, work: getOp},
	// a = table, b = query JSON, c = blob buffer
	{name: "query", method: "query", queue: worker, table: true, work: queryOp},
	{name: "count", method: "count", queue: worker, table: true, work: countOp},
	// begin answers with the new transaction's id; commit and discard act
	// on call.tx, queued behind the transaction's statements.
	{name: "begin", method: "db.transaction", queue: worker, work: beginOp},
	{name: "commit", method: "db.transaction", queue: worker, work: commitOp},
	{name: "discard", method: "db.transaction", queue: worker, work: discardOp},
	// a = sid, b = table, c = query JSON, d = blob buffer
	{name: "subscribe", method: "db.subscribe", queue: inDispatch, now: func(d *db, c *call) any { d.subs.subscribe(c); return nil }},
	// a = sid
	{name: "unsubscribe", queue: inDispatch, now: func(d *db, c *call) any { d.subs.unsubscribe(c.int(0)); return nil }},
	// another tab committed: a = tables JSON, b = 1 if remote changes, c = commits (0: 1)
	{name: "tablesChanged", queue: inDispatch, now: tablesChangedOp},
	// a = 1 if this tab now holds the leader lock
	{name: "leader", queue: inDispatch, now: leaderOp},
	// a = url, b = options JSON
	{name: "syncConnect", method: "db.sync.connect", queue: worker, work: (*db).syncConnect},
	{name: "syncDisconnect", method: "db.sync.disconnect", queue: worker, work: (*db).syncDisconnect},
	{name: "syncSnapshot", method: "db.sync.requestSnapshot", queue: worker, work: (*db).syncSnapshot},
	// another tab's sync target: a = target JSON or "null", b = its
	// SealKeys (an array) or undefined; no promise
	{name: "syncTarget", method: "db.sync", queue: worker, work: (*db).syncTarget},
	// a = mask of listen* bits
	{name: "listen", queue: inDispatch, now: listenOp},
	// db.sync.state's getter in the leader tab: answered at once, so the
	// count is current without an event per commit
	{name: "pending", queue: answered, now: func(d *db, _ *call) any { return d.pendingNow() }},
	// another tab made itself known
	{name: "peer", queue: inDispatch, now: func(d *db, _ *call) any { d.subs.markAll(); d.peerJoined(); return nil }},
	// staged inserts batched by the facade: a = tables JSON array, b = rows
	// JSON array, c = blob buffer (see insertManyOp)
	{name: "insertMany", method: "tx.insert", queue: worker, work: insertManyOp, inline: insertManyNow},
	// db.sync.pushed: the newest local transaction's HLC (null: nothing to
	// wait for), then whether each waiting HLC (a = JSON array) is sent
	{name: "pushedTarget", method: "db.sync.pushed", queue: worker, work: (*db).pushedTargetOp},
	{name: "pushedCheck", method: "db.sync.pushed", queue: worker, work: (*db).pushedCheckOp},
	// the leader's unsent count changed (another tab): $pending may have
	{name: "pendingMoved", queue: inDispatch, now: func(d *db, _ *call) any { d.subs.markSystem(); return nil }},
	// db.dropTable (a = table), db.dropColumn (a = table, b = column),
	// db.dropIndex (a = table, b = index): drop migrations
	{name: "dropTable", method: "db.dropTable", queue: worker, table: true, work: dropOp},
	{name: "dropColumn", method: "db.dropColumn", queue: worker, table: true, work: dropOp},
	{name: "dropIndex", method: "db.dropIndex", queue: worker, table: true, work: dropOp},
	// db.renameTable: a = the table's current name, b = its new name: a
	// rename_table migration
	{name: "renameTable", method: "db.renameTable", queue: worker, table: true, work: renameOp},
	// db.alterColumn: a = table, b = column, c = the change as a row
	// object {notNull?, default?, dropDefault?, type?} (decodeRow), d = its
	// blobs: an alter_column migration
	{name: "alterColumn", method: "db.alterColumn", queue: worker, table: true, work: alterOp},
	// db.heldChanges: counts per table and reason
	{name: "heldCounts", method: "db.heldChanges", queue: worker, work: heldCountsOp},
	// a = the watermark HLC ("" = the beginning), b = options JSON (changes.go)
	{name: "changesSince", method: "db.changesSince", queue: worker, work: changesSinceOp},
	// a = a JSON array of wire ChangeSets (changes.go)
	{name: "applyChanges", method: "db.applyChanges", queue: worker, work: applyChangesOp},
	// the page is being frozen or hidden: see suspend
	{name: "freeze", queue: inDispatch, now: func(d *db, _ *call) any { d.suspend(); return nil }},
	// it runs again; other tabs' notices may have been missed
	{name: "resume", queue: inDispatch, now: func(d *db, _ *call) any { d.store.Resume(); d.subs.markAll(); return nil }},
	// db.inspect (inspect.go): a = options JSON, or a = table and b =
	// options JSON for rows
	{name: "inspectTables", method: "db.inspect.tables", queue: worker, work: inspectTablesOp},
	{name: "inspectRows", method: "db.inspect.rows", queue: worker, table: true, work: inspectRowsOp},
	{name: "inspectLog", method: "db.inspect.changeLog", queue: worker, work: inspectLogOp},
	{name: "inspectHeld", method: "db.inspect.heldChanges", queue: worker, work: inspectHeldOp},
	{name: "inspectSync", method: "db.inspect.sync", queue: worker, work: inspectSyncOp},
	{name: "inspectCount", method: "db.inspect.count", queue: worker, table: true, work: inspectCountOp},
	// worker mode's write journal (journal.go): recall (a = journal,
	// b = token) of a call's recorded answer
	{name: "recall", method: "db", queue: worker, work: recallOp},
}

// methodName is the JavaScript method c's errors name (see operation.method).
func (c *call) methodName() string {
	m := c.op.method
	switch {
	case strings.Contains(m, "."):
		return m
	case c.tx != 0:
		return "tx." + m
	}
	return "db." + m
}

// tableName is the table c's errors name ("" if none).
func (c *call) tableName() string {
	if c.op.table {
		return c.str(0)
	}
	return ""
}

func closeOp(d *db, _ *call) (result, error) { d.close(); return result{}, nil }

func tablesChangedOp(d *db, c *call) any {
	if tables, err := parseTables(c.str(0)); err == nil {
		d.subs.markDirty(tables)
	}
	if c.int(1) == 0 {
		d.notifyOtherTabWrite(max(c.int(2), 1))
	}
	return nil
}

func leaderOp(d *db, c *call) any {
	leader := c.int(0) != 0
	d.leader.Store(leader)
	d.enqueue(func() {
		defer func() {
			if p := recover(); p != nil {
				_ = panicError("leader change", p)
			}
		}()
		d.leaderChanged(leader)
	})
	return nil
}

func listenOp(d *db, c *call) any {
	mask := uint32(c.int(0))
	if old := d.listening.Swap(mask); old&listenPeers == 0 && mask&listenPeers != 0 {
		d.announce()
	}
	return nil
}

// rowTarget is what a row operation acts on: the engine, or a staged
// transaction.
type rowTarget interface {
	Insert(table string, values map[string]any) (model.Row, error)
	Upsert(table string, values map[string]any) (model.Row, error)
	Update(table string, pk engine.Key, patch map[string]any) (model.Row, error)
	Delete(table string, pk engine.Key) (bool, error)
	Get(table string, pk engine.Key) (model.Row, error)
	Query(table string, q engine.Query) ([]model.Row, error)
}

// target returns the staged transaction id, or the engine for 0. Runs on
// the worker.
func (d *db) target(id int) (rowTarget, error) {
	if id == 0 {
		return d.eng, nil
	}
	return d.staged(id)
}

// staged returns the staged transaction id (nil for 0). Runs on the worker.
func (d *db) staged(id int) (*engine.Staged, error) {
	if id == 0 {
		return nil, nil
	}
	st := d.txs[id]
	if st == nil {
		return nil, &bridgeError{code: codeClosed, msg: "the transaction has finished (its callback settled); use the tx only inside the callback"}
	}
	return st, nil
}

func insertOp(d *db, c *call) (result, error) { return writeRow(d, c, false) }
func upsertOp(d *db, c *call) (result, error) { return writeRow(d, c, true) }

// writeRow runs insert (or upsert) of the row JSON text.
func writeRow(d *db, c *call, upsert bool) (result, error) {
	table := c.str(0)
	t, err := d.target(c.tx)
	if err != nil {
		return result{}, err
	}
	vals, err := decodeRow(table, c.str(1), c.bytes(2))
	if err != nil {
		return result{}, err
	}
	var row model.Row
	if upsert {
		row, err = t.Upsert(table, vals)
	} else {
		row, err = t.Insert(table, vals)
	}
	if err != nil {
		return result{}, err
	}
	return d.rowsResult(kindRow, table, []model.Row{row}), nil
}

// insertNow runs a staged insert into a declared table in the dispatch
// callback, if it can, rather than hopping to the worker goroutine (a bulk
// transaction of many inserts pays this per row): it is pure computation.
// It reports whether it answered the call.
func insertNow(d *db, c *call) bool {
	table := c.str(0)
	if c.tx == 0 || !d.declared[table] || d.eng.StagedInsertReads(table) {
		return false // queued: the staged insert reads the store
	}
	cols, ok := d.cachedColumns(table)
	return ok && d.runNow(c, c.methodName(), table, func() (result, error) {
		st, err := d.staged(c.tx)
		if err != nil {
			return result{}, err
		}
		vals, err := decodeRow(table, c.str(1), c.bytes(2))
		if err != nil {
			return result{}, err
		}
		row, err := st.Insert(table, vals)
		if err != nil {
			return result{}, err
		}
		if len(row) > len(cols) {
			return result{}, errStaleColumns
		}
		text, rb := encodeRows([]model.Row{row}, cols)
		return result{kind: kindRow, text: text, blobs: rb}, nil
	})
}

// errStaleColumns: a row has columns the cached schema lacks (another tab
// or a peer added some); cannot happen for a declared table's staged insert,
// whose row has exactly the declared columns.
var errStaleColumns = errors.New("jsbridge: stale column cache")

// keyed resolves the target and primary key of a call whose arguments
// start (table, key JSON text) and whose blob buffer is argument blobArg:
// update, delete and get.
func keyed(d *db, c *call, blobArg int) (t rowTarget, table string, pk engine.Key, err error) {
	table = c.str(0)
	if t, err = d.target(c.tx); err != nil {
		return nil, table, nil, err
	}
	vals, err := decodeList(table, "primary key", c.str(1), c.bytes(blobArg))
	return t, table, engine.Key(vals), err
}

func updateOp(d *db, c *call) (result, error) {
	t, table, pk, err := keyed(d, c, 3)
	if err != nil {
		return result{}, err
	}
	patch, err := decodeRow(table, c.str(2), c.bytes(3))
	if err != nil {
		return result{}, err
	}
	row, err := t.Update(table, pk, patch)
	if err != nil {
		return result{}, err
	}
	return d.rowsResult(kindRow, table, []model.Row{row}), nil
}

func deleteOp(d *db, c *call) (result, error) {
	t, table, pk, err := keyed(d, c, 2)
	if err != nil {
		return result{}, err
	}
	_, err = t.Delete(table, pk)
	return result{kind: kindUndefined}, err
}

func getOp(d *db, c *call) (result, error) {
	t, table, pk, err := keyed(d, c, 2)
	if err != nil {
		return result{}, err
	}
	row, err := t.Get(table, pk)
	if errors.Is(err, engine.ErrNotFound) {
		return result{kind: kindUndefined}, nil
	}
	if err != nil {
		return result{}, err
	}
	return d.rowsResult(kindRow, table, []model.Row{row}), nil
}

func queryOp(d *db, c *call) (result, error) {
	table, text, blobs := c.str(0), c.str(1), c.bytes(2)
	t, err := d.target(c.tx)
	if err != nil {
		return result{}, err
	}
	q, err := parseQuery(table, text, blobs, false)
	if err == nil {
		q, err = d.withPending(q)
	}
	if err != nil {
		return result{}, err
	}
	rows, err := t.Query(table, q)
	if err != nil {
		return result{}, err
	}
	return d.rowsResult(kindRows, table, rows), nil
}

func countOp(d *db, c *call) (result, error) {
	table, text, blobs := c.str(0), c.str(1), c.bytes(2)
	st, err := d.staged(c.tx)
	if err != nil {
		return result{}, err
	}
	q, err := parseQuery(table, text, blobs, true)
	if err != nil {
		return result{}, err
	}
	var n int
	if st != nil {
		var rows []model.Row
		rows, err = st.Query(table, q)
		n = len(rows)
	} else {
		n, err = d.eng.Count(table, q.Where)
	}
	if err != nil {
		return result{}, err
	}
	return intResult(n), nil
}

func beginOp(d *db, _ *call) (result, error) {
	id := int(d.nextTx.Add(1))
	d.txs[id] = d.eng.Stage()
	return intResult(id), nil
}

func commitOp(d *db, c *call) (result, error) {
	st, err := d.staged(c.tx)
	if err != nil {
		return result{}, err
	}
	if _, err := st.Commit(); err != nil {
		if !errors.Is(err, idbkv.ErrSuspended) { // kept: it runs again (resumable)
			delete(d.txs, c.tx)
		}
		return result{}, err
	}
	delete(d.txs, c.tx)
	return result{kind: kindUndefined}, nil
}

func discardOp(d *db, c *call) (result, error) {
	if st := d.txs[c.tx]; st != nil {
		st.Discard()
		delete(d.txs, c.tx)
	}
	return result{kind: kindUndefined}, nil
}

// insertManyOp handles a batch of staged inserts (tx.insert calls the facade
// queued in one turn of the event loop): a = the tables as a JSON array,
// b = the rows as a JSON array, c = the blob buffer of them all. Each row
// is inserted as one tx.insert call would be, in order, each failing on its
// own; the answer is one result of kind many: the inserted rows as holders
// (null where the insert failed) and the errors as [index, error, ...].
func insertManyOp(d *db, c *call) (result, error) {
	tablesText, rowsText, blobs := c.str(0), c.str(1), c.bytes(2)
	method := c.methodName()
	st, err := d.staged(c.tx)
	if err != nil {
		return result{}, err
	}
	tables, err := decodeTables(tablesText)
	if err != nil {
		return result{}, err
	}
	r := newReader([]byte(rowsText), blobs)
	if err := r.OpenArray(); err != nil {
		return result{}, err
	}
	e := newEncoder()
	var errs []byte
	var names []string // the columns of tables[i-1], whose names the rows' share
	for i, table := range tables {
		if ok, err := r.ArrayNext(i); err != nil || !ok {
			return result{}, fmt.Errorf("%w: %d rows for %d tables", errSyntax, i, len(tables))
		}
		if i == 0 || table != tables[i-1] {
			names, _ = d.cachedColumns(table)
		}
		vals, rerr := r.rowNamed(table, names)
		if errors.Is(rerr, errSyntax) {
			return result{}, rerr
		}
		var row model.Row
		res := guard(method, table, func() (result, error) {
			if rerr != nil {
				return result{}, rerr
			}
			var err error
			row, err = st.Insert(table, vals)
			return result{}, err
		})
		if res.kind == kindError {
			if len(errs) > 0 {
				errs = append(errs, ',')
			}
			errs = strconv.AppendInt(errs, int64(i), 10)
			errs = append(errs, ',')
			errs = append(errs, res.text...)
			e.beginHolder(i, 'n')
			e.b = append(e.b, "ull"...)
			continue
		}
		cols := d.columns(table, false)
		if len(row) > len(cols) {
			cols = d.columns(table, true)
		}
		e.row(i, row, cols)
	}
	if ok, err := r.ArrayNext(len(tables)); err != nil || ok {
		return result{}, fmt.Errorf("%w: more rows than tables", errSyntax)
	}
	if err := r.End(); err != nil {
		return result{}, err
	}
	text, rb := e.finishWith(errs)
	return result{kind: kindMany, text: text, blobs: rb}, nil
}

// insertManyNow runs insertMany at once (runNow) when every table is of
// the declared schema, and reports whether it did.
func insertManyNow(d *db, c *call) bool {
	return c.tx != 0 && d.allDeclared(c.str(0)) && d.runNow(c, c.methodName(), "", func() (result, error) { return insertManyOp(d, c) })
}

// allDeclared reports whether every table named in the JSON array text is
// of the declared schema with its columns cached, and none has dropped
// columns (engine.StagedInsertReads): then the inserts read no store and
// may run inside the dispatch callback (see runNow).
func (d *db) allDeclared(tablesText string) bool {
	tables, err := decodeTables(tablesText)
	if err != nil {
		return false
	}
	for i, name := range tables {
		if i > 0 && name == tables[i-1] {
			continue
		}
		if !d.declared[name] || d.eng.StagedInsertReads(name) {
			return false
		}
		if _, ok := d.cachedColumns(name); !ok {
			return false
		}
	}
	return true
}

// heldCountsOp answers db.heldChanges (HeldStats in replica.d.ts):
// {total, tables: {table: {total, unknownTable?, unknownColumn?,
// keyMismatch?, wrongType?}}}, from engine.HeldCounts.
func heldCountsOp(d *db, _ *call) (result, error) {
	counts, err := d.eng.HeldCounts()
	if err != nil {
		return result{}, err
	}
	total := 0
	var tables jsonObject
	for i := 0; i < len(counts); {
		j, n := i, 0
		var t jsonObject
		for ; j < len(counts) && counts[j].Table == counts[i].Table; j++ {
			t.int(counts[j].Reason.String(), int64(counts[j].Changes))
			n += counts[j].Changes
		}
		t.int("total", int64(n))
		tables.raw(counts[i].Table, t.done())
		total += n
		i = j
	}
	var o jsonObject
	o.int("total", int64(total))
	o.raw("tables", tables.done())
	return o.result(), nil
}

// dropOp answers db.dropTable, db.dropColumn and db.dropIndex: a drop
// migration (engine.DropTable, DropColumn, DropIndex; docs/design.md §
// Schema migrations), committed and synced like any, after which the
// column order cached for results is read again.
func dropOp(d *db, c *call) (result, error) {
	table, name := c.str(0), c.str(1)
	var err error
	switch c.op.name {
	case "dropTable":
		err = d.eng.DropTable(table)
	case "dropColumn":
		if name == "" {
			return result{}, argError("column must be a non-empty string")
		}
		err = d.eng.DropColumn(table, name)
	default:
		if name == "" {
			return result{}, argError("index must be a non-empty string")
		}
		err = d.eng.DropIndex(table, name)
	}
	if err != nil {
		return result{}, err
	}
	d.columns("", true)
	return result{kind: kindUndefined}, nil
}

// renameOp answers db.renameTable: a rename_table migration
// (engine.RenameTable; docs/design.md § Schema migrations, "Renaming
// tables"), committed and synced like any, after which the column order
// cached for results is read again and every subscription re-runs (one on
// the old name now fails with VALIDATION, saying the new one).
func renameOp(d *db, c *call) (result, error) {
	from, to := c.str(0), c.str(1)
	if to == "" {
		return result{}, argError("to must be a non-empty string")
	}
	if err := d.eng.RenameTable(from, to); err != nil {
		return result{}, err
	}
	d.columns("", true)
	d.subs.markAll()
	return result{kind: kindUndefined}, nil
}

// alterOp answers db.alterColumn: an alter_column migration
// (engine.AlterColumn; docs/design.md § Schema migrations) of the
// column's notNull and default, committed and synced like any. The change
// arrives encoded as a row (facade.js checked its members), so a default
// is converted as an inserted value is. A type other than the column's is
// refused by the engine (SCHEMA, with the reason and the way).
func alterOp(d *db, c *call) (result, error) {
	table, column := c.str(0), c.str(1)
	if column == "" {
		return result{}, argError("column must be a non-empty string")
	}
	change, err := decodeRow(table, c.str(2), c.bytes(3))
	if err != nil {
		return result{}, err
	}
	var a engine.Alteration
	for k, v := range change {
		switch k {
		case "notNull":
			b, ok := v.(bool)
			if !ok {
				return result{}, argError("change.notNull must be a boolean")
			}
			a.NotNull = &b
		case "default":
			a.SetDefault, a.Default = true, v
		case "dropDefault":
			if v != true {
				return result{}, argError("change.dropDefault must be true when given")
			}
			a.DropDefault = true
		case "type":
			name, _ := v.(string)
			k, err := model.ParseKind(name)
			if err != nil {
				return result{}, argError("change.type: %v", err)
			}
			a.Type = k
		default:
			return result{}, argError("change has an unknown member %q (want notNull, default or dropDefault)", k)
		}
	}
	if err := d.eng.AlterColumn(table, column, a); err != nil {
		return result{}, err
	}
	return result{kind: kindUndefined}, nil
}
