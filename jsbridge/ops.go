//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/replica-sync/replica/engine"
)

// Arguments of the row operations, as facade.js sends them:
//
//	insert, upsert:  a = table, b = row JSON, c = blob buffer
//	update:          a = table, b = key JSON, c = patch JSON, d = blob buffer
//	delete, get:     a = table, b = key JSON, c = blob buffer
//	query, count:    a = table, b = query JSON, c = blob buffer
//
// With a transaction id (call.tx != 0) they act on that staged transaction.

// write handles insert, upsert, update and delete.
func (d *db) write(c *call) {
	table := c.str(0)
	var rowText, keyText, patchText string
	var blobs []byte
	switch c.op {
	case opInsert, opUpsert:
		rowText, blobs = c.str(1), c.bytes(2)
	case opUpdate:
		keyText, patchText, blobs = c.str(1), c.str(2), c.bytes(3)
	case opDelete:
		keyText, blobs = c.str(1), c.bytes(2)
	}
	method := methodName(c, map[int]string{opInsert: "insert", opUpsert: "upsert", opUpdate: "update", opDelete: "delete"}[c.op])
	if c.op == opInsert && c.tx != 0 && d.declared[table] {
		// A staged insert into a declared table is pure computation: run
		// it in the callback rather than hopping to the worker goroutine
		// (a bulk transaction of many inserts pays this per row).
		if cols, ok := d.cachedColumns(table); ok && d.runNow(c, method, table, func() (result, error) {
			st, err := d.staged(c.tx)
			if err != nil {
				return result{}, err
			}
			vals, err := decodeRow(table, rowText, blobs)
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
			text, rb := encodeRows([]engine.Row{row}, cols)
			return result{kind: kindRow, text: text, blobs: rb}, nil
		}) {
			return
		}
	}
	d.run(c, method, table, func() (result, error) {
		st, err := d.staged(c.tx)
		if err != nil {
			return result{}, err
		}
		var row engine.Row
		switch c.op {
		case opInsert, opUpsert:
			vals, err := decodeRow(table, rowText, blobs)
			if err != nil {
				return result{}, err
			}
			switch {
			case c.op == opInsert && st != nil:
				row, err = st.Insert(table, vals)
			case c.op == opInsert:
				row, err = d.eng.Insert(table, vals)
			case st != nil:
				row, err = st.Upsert(table, vals)
			default:
				row, err = d.eng.Upsert(table, vals)
			}
			if err != nil {
				return result{}, err
			}
		case opUpdate:
			pk, err := decodeList(table, "primary key", keyText, blobs)
			if err != nil {
				return result{}, err
			}
			patch, err := decodeRow(table, patchText, blobs)
			if err != nil {
				return result{}, err
			}
			if st != nil {
				row, err = st.Update(table, engine.Key(pk), patch)
			} else {
				row, err = d.eng.Update(table, engine.Key(pk), patch)
			}
			if err != nil {
				return result{}, err
			}
		case opDelete:
			pk, err := decodeList(table, "primary key", keyText, blobs)
			if err != nil {
				return result{}, err
			}
			if st != nil {
				_, err = st.Delete(table, engine.Key(pk))
			} else {
				_, err = d.eng.Delete(table, engine.Key(pk))
			}
			return result{kind: kindUndefined}, err
		}
		return d.rowsResult(kindRow, table, []engine.Row{row}), nil
	})
}

// errStaleColumns: a row has columns the cached schema lacks (another tab
// or a peer added some); cannot happen for a declared table's staged insert,
// whose row has exactly the declared columns.
var errStaleColumns = errors.New("jsbridge: stale column cache")

// read handles get, query and count.
func (d *db) read(c *call) {
	table, text, blobs := c.str(0), c.str(1), c.bytes(2)
	method := methodName(c, map[int]string{opGet: "get", opQuery: "query", opCount: "count"}[c.op])
	d.run(c, method, table, func() (result, error) {
		st, err := d.staged(c.tx)
		if err != nil {
			return result{}, err
		}
		switch c.op {
		case opGet:
			pk, err := decodeList(table, "primary key", text, blobs)
			if err != nil {
				return result{}, err
			}
			var row engine.Row
			if st != nil {
				row, err = st.Get(table, engine.Key(pk))
			} else {
				row, err = d.eng.Get(table, engine.Key(pk))
			}
			if errors.Is(err, engine.ErrNotFound) {
				return result{kind: kindUndefined}, nil
			}
			if err != nil {
				return result{}, err
			}
			return d.rowsResult(kindRow, table, []engine.Row{row}), nil
		case opQuery:
			q, err := parseQuery(table, text, blobs, false)
			if err != nil {
				return result{}, err
			}
			var rows []engine.Row
			if st != nil {
				rows, err = st.Query(table, q)
			} else {
				rows, err = d.eng.Query(table, q)
			}
			if err != nil {
				return result{}, err
			}
			return d.rowsResult(kindRows, table, rows), nil
		default: // opCount
			q, err := parseQuery(table, text, blobs, true)
			if err != nil {
				return result{}, err
			}
			var n int
			if st != nil {
				var rows []engine.Row
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
	})
}

// txControl handles begin (answered at once with the new transaction's
// id), commit and discard (queued behind the transaction's statements).
func (d *db) txControl(c *call) {
	switch c.op {
	case opBegin:
		id := int(d.nextTx.Add(1))
		d.run(c, "db.transaction", "", func() (result, error) {
			d.txs[id] = d.eng.Stage()
			return intResult(id), nil
		})
	case opCommit:
		d.run(c, "db.transaction", "", func() (result, error) {
			st, err := d.staged(c.tx)
			if err != nil {
				return result{}, err
			}
			delete(d.txs, c.tx)
			if _, err := st.Commit(); err != nil {
				return result{}, err
			}
			return result{kind: kindUndefined}, nil
		})
	case opDiscard:
		d.run(c, "db.transaction", "", func() (result, error) {
			if st := d.txs[c.tx]; st != nil {
				st.Discard()
				delete(d.txs, c.tx)
			}
			return result{kind: kindUndefined}, nil
		})
	}
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

func methodName(c *call, op string) string {
	if c.tx != 0 {
		return "tx." + op
	}
	return "db." + op
}

// insertMany handles a batch of staged inserts (tx.insert calls the facade
// queued in one turn of the event loop): a = the tables as a JSON array,
// b = the rows as a JSON array, c = the blob buffer of them all. Each row
// is inserted as one tx.insert call would be, in order, each failing on its
// own; the answer is one result of kind many: the inserted rows as holders
// (null where the insert failed) and the errors as [index, error, ...].
func (d *db) insertMany(c *call) {
	tablesText, rowsText, blobs := c.str(0), c.str(1), c.bytes(2)
	const method = "tx.insert"
	op := func() (result, error) {
		st, err := d.staged(c.tx)
		if err != nil {
			return result{}, err
		}
		tables, err := decodeList("", "tables", tablesText, nil)
		if err != nil {
			return result{}, err
		}
		r := &reader{b: []byte(rowsText), blobs: blobs}
		if err := r.expect('['); err != nil {
			return result{}, err
		}
		e := newEncoder()
		var errs []byte
		for i, t := range tables {
			table, _ := t.(string)
			if ok, err := r.more(']', i == 0); err != nil || !ok {
				return result{}, fmt.Errorf("%w: %d rows for %d tables", errSyntax, i, len(tables))
			}
			vals, rerr := r.row(table)
			if errors.Is(rerr, errSyntax) {
				return result{}, rerr
			}
			var row engine.Row
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
		if ok, err := r.more(']', len(tables) == 0); err != nil || ok {
			return result{}, fmt.Errorf("%w: more rows than tables", errSyntax)
		}
		if err := r.end(); err != nil {
			return result{}, err
		}
		text, rb := e.finishWith(errs)
		return result{kind: kindMany, text: text, blobs: rb}, nil
	}
	if c.tx != 0 && d.allDeclared(tablesText) && d.runNow(c, method, "", op) {
		return
	}
	d.run(c, method, "", op)
}

// allDeclared reports whether every table named in the JSON array text is
// of the declared schema with its columns cached: then the inserts read no
// store and may run inside the dispatch callback (see runNow).
func (d *db) allDeclared(tablesText string) bool {
	tables, err := decodeList("", "tables", tablesText, nil)
	if err != nil {
		return false
	}
	for _, t := range tables {
		name, ok := t.(string)
		if !ok || !d.declared[name] {
			return false
		}
		if _, ok := d.cachedColumns(name); !ok {
			return false
		}
	}
	return true
}
