package engine

import "github.com/replica-sync/replica/engine/internal/rowrec"

// A row's stored state, its record, and the record's encoding are package
// engine/internal/rowrec's; what the engine keeps in a record is decided
// here and in the writers (apply.go, writetx.go, snapshot.go).

// maxPriorValue bounds the before-images a record keeps: a prior value
// (of a cell, or in a tombstone's row image) whose text, JSON or blob is
// longer is not kept. Before-images are best-effort; without the bound a row
// holding a value over half the kv value limit could never be updated (the
// record would carry the value and its before-image) nor, with
// resurrection, re-created after a delete.
const maxPriorValue = 4096

func priorKept(v Value) bool { return v.Len() <= maxPriorValue }

// priorImage returns row without the values too large to keep as a
// before-image (row itself when it has none).
func priorImage(row Row) Row {
	var out Row
	for n, v := range row {
		if !priorKept(v) {
			if out == nil {
				out = make(Row, len(row))
				for k, x := range row {
					out[k] = x
				}
			}
			delete(out, n)
		}
	}
	if out == nil {
		return row
	}
	return out
}

// rowOf returns the row as callers see it: every cell, the key columns from
// the key (a row revived by a partial write may lack their cells), and null
// for the table's other columns that have no cell.
func (t *table) rowOf(rec *rowrec.Record, pk []Value) Row {
	row := rec.Row()
	for i, n := range t.pkCols {
		if _, ok := row[n]; !ok && i < len(pk) {
			row[n] = pk[i]
		}
	}
	for i := range t.def.Columns {
		if n := t.def.Columns[i].Name; row[n].IsNull() {
			row[n] = Null
		}
	}
	return row
}
