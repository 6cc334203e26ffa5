//go:build !js

package pgstore_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay/pgstore"
	"github.com/replica-sync/replica/wire"
)

// The measurement behind the choice of the merged replica's
// representation on PostgreSQL (issue 14; relay/doc.go § Several relays
// on PostgreSQL gives the figures): the engine over pgkv, which the relay
// runs, against relational cells with the LWW rule in SQL, built here in
// test code only (relReplica). They get the same ChangeSets, minted by a
// real engine, in one run, interleaved ChangeSet by ChangeSet (each going
// first in turn), so that the machine's load falls on them alike:
//
//	go test -run '^$' -bench BenchmarkRelationalApply -benchtime 300x -count 5 ./relay/pgstore
//	go test -run '^$' -bench BenchmarkRelationalSnapshot -benchtime 20x -count 5 ./relay/pgstore
//
// BenchmarkRelationalApply/tx1 and /tx100: ChangeSets of 1 and 100 rows
// of a 6-column table (inserts, updates of two columns, deletes), each
// applied alone (one transaction each) to the engine over pgkv (as
// relay.database opens it, Apply without the arrival log's append, which
// either representation would add to the same transaction), to
// relReplica in one round trip (apply) and to another relReplica in the
// shape of the relay's transaction, two round trips (applyTx: rel2). An
// op is one ChangeSet applied to the three; eng-ns/tx, rel-ns/tx,
// rel2-ns/tx and the per-row forms are each one's share, rel/eng and
// rel2/eng the ratios in this run, and *-rt/tx the round trips to
// PostgreSQL per ChangeSet.
//
// BenchmarkRelationalSnapshot: reading a 10,000-row table out of each
// representation as a snapshot's rows chunks (model.SnapshotRow: key,
// cells with their HLCs, tombstone; 1,000 rows a chunk, each chunk its own
// read): engine.Snapshot, as the relay streams it, relReplica's keyset
// pages of facts (rel) and of rows aggregated in SQL (agg). An op is one
// snapshot of each.
//
// TestRelationalMatchesEngine checks that relReplica is a correct merged
// replica for what the benchmarks feed it: the same ChangeSets, in order
// and shuffled with duplicates, leave it holding the engine's snapshot.

// relSchema is the relational merged replica: one row per cell, with the
// cell's HLC in the 30-byte big-endian encoding (model.HLC.Bytes), whose
// byte order (bytea's, memcmp) is HLC order; a deleted row's highest
// deletion is its cell of the empty column name (which no column has), so
// that a row's facts are one range of one index, which a snapshot page
// reads in key order; and the migrations as received.
const relSchema = `
CREATE TABLE IF NOT EXISTS rel_cells (
	db  text  NOT NULL,
	tbl text  NOT NULL,
	pk  bytea NOT NULL,
	col text  NOT NULL,
	val bytea NOT NULL,
	hlc bytea NOT NULL,
	PRIMARY KEY (db, tbl, pk, col)
);
CREATE TABLE IF NOT EXISTS rel_migrations (
	db  text  NOT NULL,
	hlc bytea NOT NULL,
	m   bytea NOT NULL,
	PRIMARY KEY (db, hlc)
)`

// The apply's statements, each over arrays (unnest): one statement per
// kind of fact whatever the ChangeSet's size, all in one pipelined batch,
// one implicit transaction, one round trip.
const (
	// The database's transaction lock, as pgkv's Update takes it: the
	// relay's log append, in the same transaction, needs it either way.
	relLock = `SELECT pg_advisory_xact_lock($1)`
	relMigs = `INSERT INTO rel_migrations (db, hlc, m)
SELECT $1, h, m FROM unnest($2::bytea[], $3::bytea[]) AS u(h, m)
ON CONFLICT (db, hlc) DO NOTHING`
	// Tombstones first: the highest deletion wins.
	relTombs = `INSERT INTO rel_cells AS c (db, tbl, pk, col, val, hlc)
SELECT $1, t, p, '', '', h FROM unnest($2::text[], $3::bytea[], $4::bytea[]) AS u(t, p, h)
ON CONFLICT (db, tbl, pk, col) DO UPDATE SET hlc = excluded.hlc WHERE excluded.hlc > c.hlc`
	// A deletion removes the cells at or below it: found by probes of the
	// primary key (a LATERAL subquery that OFFSET 0 keeps from being
	// flattened into a join), deleted by their tuple ids. (As DELETE …
	// USING unnest(…), the cached generic plan read every cell of the
	// database.)
	relCut = `DELETE FROM rel_cells WHERE ctid = ANY (ARRAY(
SELECT x.ctid FROM unnest($2::text[], $3::bytea[], $4::bytea[]) AS u(t, p, h)
CROSS JOIN LATERAL (SELECT r.ctid FROM rel_cells r WHERE r.db = $1 AND r.tbl = u.t AND r.pk = u.p AND r.col <> '' AND r.hlc <= u.h OFFSET 0) AS x))`
	// Cells: LWW, the higher HLC wins (an equal one keeps the stored
	// version); a cell at or below its row's tombstone is not stored. The
	// tombstone is looked up per cell by its primary key (LATERAL …
	// LIMIT 1 keeps it a probe of the index: as NOT EXISTS, the cached
	// generic plan, estimating 10 cells and no tombstones, compared each
	// cell with every tombstone of the database).
	relCells = `INSERT INTO rel_cells AS c (db, tbl, pk, col, val, hlc)
SELECT $1, t, p, k, v, h FROM unnest($2::text[], $3::bytea[], $4::text[], $5::bytea[], $6::bytea[]) AS u(t, p, k, v, h)
LEFT JOIN LATERAL (SELECT r.hlc FROM rel_cells r WHERE r.db = $1 AND r.tbl = u.t AND r.pk = u.p AND r.col = '' LIMIT 1) AS d ON true
WHERE d.hlc IS NULL OR d.hlc < u.h
ON CONFLICT (db, tbl, pk, col) DO UPDATE SET val = excluded.val, hlc = excluded.hlc WHERE excluded.hlc > c.hlc`
	// A snapshot page: the facts of the rows after a key, in key order
	// (an index range scan).
	relPage = `SELECT pk, col, val, hlc FROM rel_cells WHERE db = $1 AND tbl = $2 AND pk > $3 ORDER BY pk, col LIMIT $4`
	// The same page a row per row: its facts aggregated into arrays
	// (one GroupAggregate over the same index range), so the page is
	// exactly $4 rows.
	relPageRows = `SELECT pk, array_agg(col), array_agg(val), array_agg(hlc) FROM rel_cells
WHERE db = $1 AND tbl = $2 AND pk > $3 GROUP BY pk ORDER BY pk LIMIT $4`
)

// relReplica is one database's relational merged replica.
type relReplica struct {
	pool *pgxpool.Pool
	db   string
	lock int64
}

func newRelReplica(ctx context.Context, pool *pgxpool.Pool, db string) (*relReplica, error) {
	if _, err := pool.Exec(ctx, relSchema); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte("rel/" + db))
	return &relReplica{pool: pool, db: db, lock: int64(h.Sum64())}, nil
}

type relCellKey struct{ tbl, pk, col string }
type relRowKey struct{ tbl, pk string }

// apply merges sets in one transaction and returns the number of cells
// and tombstones that changed the replica (rows affected).
func (r *relReplica) apply(ctx context.Context, sets []model.ChangeSet) (int64, error) {
	b, err := r.batch(sets)
	if err != nil {
		return 0, err
	}
	// Without BEGIN and COMMIT the batch, one pipeline ending in one Sync,
	// runs as one implicit transaction: all of it or nothing.
	br := r.pool.SendBatch(ctx, b)
	var changed int64
	for i := 0; i < b.Len(); i++ {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return 0, err
		}
		if i > 0 && !tag.Delete() {
			changed += tag.RowsAffected()
		}
	}
	return changed, br.Close()
}

// applyTx is apply in the shape of the relay's apply transaction, whose
// log needs a read before its writes: BEGIN with the lock (a round trip,
// where the relay's read would travel), then the statements with the
// COMMIT (a second one, where the relay's writes would travel).
func (r *relReplica) applyTx(ctx context.Context, sets []model.ChangeSet) error {
	b, err := r.batch(sets)
	if err != nil {
		return err
	}
	c, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	begin := &pgx.Batch{}
	begin.Queue("BEGIN")
	begin.Queue(b.QueuedQueries[0].SQL, b.QueuedQueries[0].Arguments...) // the lock
	if err := c.SendBatch(ctx, begin).Close(); err != nil {
		return err
	}
	b.QueuedQueries = b.QueuedQueries[1:]
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		_, _ = c.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// batch returns the statements that merge sets.
func (r *relReplica) batch(sets []model.ChangeSet) (*pgx.Batch, error) {
	// One version per cell and per row: ON CONFLICT DO UPDATE may not
	// touch a row twice in one statement, and only the highest can win.
	cells := map[relCellKey]*model.Change{}
	tombs := map[relRowKey]model.HLC{}
	var migH, migM [][]byte
	var pkBuf []byte
	for i := range sets {
		for j := range sets[i].Migrations {
			m := &sets[i].Migrations[j]
			js, err := model.AppendMigrationJSON(nil, m)
			if err != nil {
				return nil, err
			}
			migH, migM = append(migH, m.HLC.Bytes()), append(migM, js)
		}
		for j := range sets[i].Changes {
			c := &sets[i].Changes[j]
			pkBuf = relAppendTuple(pkBuf[:0], c.PK)
			switch c.Type {
			case model.ColumnChange:
				k := relCellKey{c.Table, string(pkBuf), c.Column}
				if o := cells[k]; o == nil || o.HLC.Less(c.HLC) {
					cells[k] = c
				}
			case model.RowDeletion:
				k := relRowKey{c.Table, string(pkBuf)}
				if o, ok := tombs[k]; !ok || o.Less(c.HLC) {
					tombs[k] = c.HLC
				}
			default:
				return nil, fmt.Errorf("change of type %v", c.Type)
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(relLock, r.lock)
	if len(migH) > 0 {
		b.Queue(relMigs, r.db, migH, migM)
	}
	if len(tombs) > 0 {
		ts, ps, hs := make([]string, 0, len(tombs)), make([][]byte, 0, len(tombs)), make([][]byte, 0, len(tombs))
		for k, h := range tombs {
			ts, ps, hs = append(ts, k.tbl), append(ps, []byte(k.pk)), append(hs, h.Bytes())
		}
		b.Queue(relTombs, r.db, ts, ps, hs)
		b.Queue(relCut, r.db, ts, ps, hs)
	}
	if len(cells) > 0 {
		n := len(cells)
		ts, ps, ks, vs, hs := make([]string, 0, n), make([][]byte, 0, n), make([]string, 0, n), make([][]byte, 0, n), make([][]byte, 0, n)
		for k, c := range cells {
			ts, ps, ks = append(ts, k.tbl), append(ps, []byte(k.pk)), append(ks, k.col)
			vs, hs = append(vs, relAppendValue(nil, c.Value)), append(hs, c.HLC.Bytes())
		}
		b.Queue(relCells, r.db, ts, ps, ks, vs, hs)
	}
	return b, nil
}

// snapshotRows is snapshot with relPageRows: a row a result row.
func (r *relReplica) snapshotRows(ctx context.Context, table string, chunkRows int, fn func([]model.SnapshotRow) error) error {
	after := []byte{}
	for {
		rows, err := r.pool.Query(ctx, relPageRows, r.db, table, after, chunkRows)
		if err != nil {
			return err
		}
		page := make([]model.SnapshotRow, 0, chunkRows)
		var last []byte
		var cols []string
		var vals, hlcs [][]byte
		for rows.Next() {
			var pk []byte
			if err := rows.Scan(&pk, &cols, &vals, &hlcs); err != nil {
				rows.Close()
				return err
			}
			pkv, err := relDecodeTuple(pk)
			if err != nil {
				rows.Close()
				return err
			}
			row := model.SnapshotRow{PK: pkv, Cells: make([]model.SnapshotCell, 0, len(cols))}
			for i, c := range cols {
				h, err := model.HLCFromBytes(hlcs[i])
				if err != nil {
					rows.Close()
					return err
				}
				if c == "" {
					row.HasTombstone, row.Tombstone = true, h
					continue
				}
				v, err := relDecodeValue(vals[i])
				if err != nil {
					rows.Close()
					return err
				}
				row.Cells = append(row.Cells, model.SnapshotCell{Column: c, Value: v, HLC: h})
			}
			page, last = append(page, row), pk
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if len(page) < chunkRows {
			return nil
		}
		after = last
	}
}

// snapshot reads table's rows in key order, in pages of at most chunkRows
// rows, each page its own statement (as the engine reads each chunk in a
// read transaction of its own), and calls fn with each page.
func (r *relReplica) snapshot(ctx context.Context, table string, chunkRows int, fn func([]model.SnapshotRow) error) error {
	limit := chunkRows * 8 // facts a page: 6 cells and a tombstone a row, and room
	after := []byte{}
	for {
		rows, err := r.pool.Query(ctx, relPage, r.db, table, after, limit)
		if err != nil {
			return err
		}
		var page []model.SnapshotRow
		var cur []byte // the key of page's last row
		n, more := 0, false
		for rows.Next() {
			n++
			raw := rows.RawValues()
			pk := raw[0]
			if cur == nil || !bytes.Equal(pk, cur) {
				if len(page) == chunkRows {
					more = true // a row after a full page: the page is complete
					break
				}
				vals, err := relDecodeTuple(pk)
				if err != nil {
					rows.Close()
					return err
				}
				cur = bytes.Clone(pk)
				page = append(page, model.SnapshotRow{PK: vals})
			}
			row := &page[len(page)-1]
			h, err := model.HLCFromBytes(raw[3])
			if err != nil {
				rows.Close()
				return err
			}
			if len(raw[1]) == 0 {
				row.HasTombstone, row.Tombstone = true, h
				continue
			}
			v, err := relDecodeValue(raw[2])
			if err != nil {
				rows.Close()
				return err
			}
			row.Cells = append(row.Cells, model.SnapshotCell{Column: string(raw[1]), Value: v, HLC: h})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !more && n == limit {
			// The limit may have cut the last row: it starts the next page.
			if len(page) == 1 {
				limit *= 2 // one row with more facts than a page holds
				continue
			}
			page, more = page[:len(page)-1], true
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		after = relAppendTuple(nil, page[len(page)-1].PK)
	}
}

// relAppendValue appends v's encoding: its kind, then its payload.
func relAppendValue(b []byte, v model.Value) []byte {
	b = append(b, byte(v.Kind()))
	switch v.Kind() {
	case model.KindNull:
	case model.KindBoolean:
		if v.Bool() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case model.KindInteger, model.KindTimestamp:
		b = binary.BigEndian.AppendUint64(b, uint64(v.Int()))
	case model.KindReal:
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v.Real()))
	case model.KindText:
		b = append(b, v.Text()...)
	case model.KindJSON:
		b = append(b, v.JSON()...)
	case model.KindBlob:
		b = append(b, v.Blob()...)
	}
	return b
}

func relDecodeValue(b []byte) (model.Value, error) {
	if len(b) == 0 {
		return model.Value{}, fmt.Errorf("empty value")
	}
	p := b[1:]
	switch model.Kind(b[0]) {
	case model.KindNull:
		return model.Null, nil
	case model.KindBoolean:
		if len(p) == 1 {
			return model.Bool(p[0] == 1), nil
		}
	case model.KindInteger:
		if len(p) == 8 {
			return model.Int(int64(binary.BigEndian.Uint64(p))), nil
		}
	case model.KindTimestamp:
		if len(p) == 8 {
			return model.TimestampMillis(int64(binary.BigEndian.Uint64(p))), nil
		}
	case model.KindReal:
		if len(p) == 8 {
			return model.Real(math.Float64frombits(binary.BigEndian.Uint64(p))), nil
		}
	case model.KindText:
		return model.Text(string(p)), nil
	case model.KindJSON:
		return model.JSONValue(bytes.Clone(p))
	case model.KindBlob:
		return model.Blob(bytes.Clone(p)), nil
	}
	return model.Value{}, fmt.Errorf("bad value %x", b)
}

// relAppendTuple appends a key's encoding: each value's, length-prefixed.
// The snapshot reads rows in the order of these bytes, which is a fixed
// order but not the engine's key order (a receiver merges rows in any
// order).
func relAppendTuple(b []byte, vs []model.Value) []byte {
	for _, v := range vs {
		n := len(b)
		b = append(b, 0, 0, 0, 0)
		b = relAppendValue(b, v)
		binary.BigEndian.PutUint32(b[n:], uint32(len(b)-n-4))
	}
	return b
}

func relDecodeTuple(b []byte) ([]model.Value, error) {
	var vs []model.Value
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("bad key")
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			return nil, fmt.Errorf("bad key")
		}
		v, err := relDecodeValue(b[4 : 4+n])
		if err != nil {
			return nil, err
		}
		vs, b = append(vs, v), b[4+n:]
	}
	return vs, nil
}

// relTable is the benchmarks' table: a text key and five columns of
// several types.
func relTable() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{
		Name: "items",
		Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText},
			{Name: "title", Type: model.KindText},
			{Name: "qty", Type: model.KindInteger},
			{Name: "price", Type: model.KindReal},
			{Name: "done", Type: model.KindBoolean},
			{Name: "note", Type: model.KindText},
		},
	}}}
}

// relWriter mints the ChangeSets: a device's engine (over memkv) whose
// transactions insert, update and delete rows of relTable.
type relWriter struct {
	e    *engine.Engine
	rng  *rand.Rand
	next int
	live []string // keys of rows committed and not deleted
}

func newRelWriter(b testing.TB, seed uint64) *relWriter {
	b.Helper()
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: relTable()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return &relWriter{e: e, rng: rand.New(rand.NewPCG(seed, 14))}
}

// schemaSet returns the writer's first ChangeSet, its schema's.
func (w *relWriter) schemaSet(b testing.TB) model.ChangeSet {
	b.Helper()
	sets, err := w.e.ChangesSince(model.HLC{}, 1<<30, engine.ChangesFilter{OnlyLocal: true})
	if err != nil || len(sets) != 1 {
		b.Fatalf("schema ChangeSet: %d, %v", len(sets), err)
	}
	return sets[0]
}

// tx commits one transaction of rows row operations and returns its
// ChangeSet: with inserts only, inserts; else, once there are rows, 60%
// inserts, 30% updates of two columns and 10% deletes, of rows other
// operations of the transaction leave alone.
func (w *relWriter) tx(b testing.TB, rows int, insertsOnly bool) model.ChangeSet {
	b.Helper()
	touched := map[string]bool{}
	var deleted []string
	cs, err := w.e.Transact(func(tx *engine.Tx) error {
		for range rows {
			p := w.rng.IntN(10)
			if insertsOnly || len(w.live) < 2*rows || p < 6 {
				w.next++
				id := fmt.Sprintf("item-%08d", w.next)
				_, err := tx.Insert("items", map[string]any{
					"id": id, "title": "title of " + id, "qty": w.rng.IntN(1000),
					"price": float64(w.rng.IntN(100000)) / 100, "done": w.rng.IntN(2) == 0,
					"note": "a note of some length, as rows carry " + strconv.Itoa(w.rng.IntN(1e6)),
				})
				if err != nil {
					return err
				}
				touched[id] = true
				continue
			}
			id := w.live[w.rng.IntN(len(w.live))]
			for touched[id] {
				id = w.live[w.rng.IntN(len(w.live))]
			}
			touched[id] = true
			if p < 9 {
				if _, err := tx.Update("items", engine.Key{id}, map[string]any{"qty": w.rng.IntN(1000), "done": w.rng.IntN(2) == 0}); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.Delete("items", engine.Key{id}); err != nil {
				return err
			}
			deleted = append(deleted, id)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for id := range touched {
		if !slices.Contains(deleted, id) && !slices.Contains(w.live, id) {
			w.live = append(w.live, id)
		}
	}
	if len(deleted) > 0 {
		w.live = slices.DeleteFunc(w.live, func(id string) bool { return slices.Contains(deleted, id) })
	}
	return *cs
}

// relPair is one database held both ways in one PostgreSQL database: the
// engine over pgkv, as the relay opens a plain database's merged replica,
// and relReplica; each on its own pool, whose round trips are counted.
type relPair struct {
	eng        *engine.Engine
	rel        *relReplica
	engTrips   *atomic.Int64
	relTrips   *atomic.Int64
	rel2       *relReplica // applied with applyTx
	rel2Trips  *atomic.Int64
	engElapsed time.Duration
	relElapsed time.Duration
	rel2Elapse time.Duration
	turn       int
}

var relSeq atomic.Int64

func newRelPair(b testing.TB, url string) *relPair {
	b.Helper()
	ctx := context.Background()
	db := "rel-" + strconv.FormatInt(relSeq.Add(1), 10)
	ec, rc := &tripCounter{}, &tripCounter{}
	st, err := pgstore.New(ctx, newPool(b, url, ec), newPool(b, url, ec))
	if err != nil {
		b.Fatal(err)
	}
	kvs, err := st.Open(db)
	if err != nil {
		b.Fatal(err)
	}
	// As relay.database opens it: schema-less, the relay's options but
	// its clock (the system's) and a quiet logger.
	eng, err := engine.Open(kvs, engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		eng.Close()
		kvs.Close()
	})
	rel, err := newRelReplica(ctx, newPool(b, url, rc), db)
	if err != nil {
		b.Fatal(err)
	}
	r2c := &tripCounter{}
	rel2, err := newRelReplica(ctx, newPool(b, url, r2c), db+"-tx")
	if err != nil {
		b.Fatal(err)
	}
	return &relPair{eng: eng, rel: rel, rel2: rel2, engTrips: &ec.n, relTrips: &rc.n, rel2Trips: &r2c.n}
}

// apply applies sets to the three, timing each, in an order that turns
// from one call to the next (whichever goes first after a pause may pay
// for waking up).
func (p *relPair) apply(b testing.TB, sets []model.ChangeSet) {
	ctx := context.Background()
	steps := [3]func() error{
		func() error { _, err := p.eng.Apply(sets, engine.ApplyOptions{}); return err },
		func() error { _, err := p.rel.apply(ctx, sets); return err },
		func() error { return p.rel2.applyTx(ctx, sets) },
	}
	into := [3]*time.Duration{&p.engElapsed, &p.relElapsed, &p.rel2Elapse}
	p.turn++
	for k := range 3 {
		i := (k + p.turn) % 3
		start := time.Now()
		if err := steps[i](); err != nil {
			b.Fatal(err)
		}
		*into[i] += time.Since(start)
	}
}

// analyze updates PostgreSQL's statistics of both representations'
// tables, so that both start timing with the plans of the data they
// hold. (Cached generic plans chosen while a table was small scan a
// whole database where an index probe would do: relReplica's statements
// are written so that they cannot; pgkv's batched read, which the engine
// uses, can, until autovacuum analyzes replica_kv.)
func (p *relPair) analyze(b testing.TB) {
	b.Helper()
	if _, err := p.rel.pool.Exec(context.Background(), "ANALYZE replica_kv, rel_cells"); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkRelationalApply(b *testing.B) {
	// One PostgreSQL database for the run, each round a database id of
	// its own in it.
	url := pgtest.NewDatabase(b)
	for _, rows := range []int{1, 100} {
		b.Run("tx"+strconv.Itoa(rows), func(b *testing.B) { benchRelApply(b, url, rows) })
	}
}

func benchRelApply(b *testing.B, url string, rows int) {
	p := newRelPair(b, url)
	w := newRelWriter(b, 1)
	p.apply(b, []model.ChangeSet{w.schemaSet(b)})
	// Rows to update and delete: the table holds at least a few hundred.
	for range max(1, 500/rows) {
		p.apply(b, []model.ChangeSet{w.tx(b, rows, true)})
	}
	sets := make([]model.ChangeSet, b.N)
	for i := range sets {
		sets[i] = w.tx(b, rows, false)
	}
	p.analyze(b)
	p.engElapsed, p.relElapsed, p.rel2Elapse = 0, 0, 0
	et, rt, rt2 := p.engTrips.Load(), p.relTrips.Load(), p.rel2Trips.Load()
	b.ResetTimer()
	for i := range sets {
		p.apply(b, sets[i:i+1])
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(p.engElapsed.Nanoseconds())/n, "eng-ns/tx")
	b.ReportMetric(float64(p.relElapsed.Nanoseconds())/n, "rel-ns/tx")
	b.ReportMetric(float64(p.engElapsed.Nanoseconds())/n/float64(rows), "eng-ns/row")
	b.ReportMetric(float64(p.relElapsed.Nanoseconds())/n/float64(rows), "rel-ns/row")
	b.ReportMetric(float64(p.relElapsed)/float64(p.engElapsed), "rel/eng")
	b.ReportMetric(float64(p.rel2Elapse.Nanoseconds())/n, "rel2-ns/tx")
	b.ReportMetric(float64(p.rel2Elapse)/float64(p.engElapsed), "rel2/eng")
	b.ReportMetric(float64(p.engTrips.Load()-et)/n, "eng-rt/tx")
	b.ReportMetric(float64(p.relTrips.Load()-rt)/n, "rel-rt/tx")
	b.ReportMetric(float64(p.rel2Trips.Load()-rt2)/n, "rel2-rt/tx")
}

// snapshotRows is the table BenchmarkRelationalSnapshot reads.
const snapshotRows = 10_000

func BenchmarkRelationalSnapshot(b *testing.B) {
	p := newRelPair(b, pgtest.NewDatabase(b))
	w := newRelWriter(b, 2)
	p.apply(b, []model.ChangeSet{w.schemaSet(b)})
	for range snapshotRows / 100 {
		p.apply(b, []model.ChangeSet{w.tx(b, 100, true)})
	}
	p.analyze(b)
	ctx := context.Background()
	var engT, relT, aggT time.Duration
	b.ResetTimer()
	count := func(read func(context.Context, string, int, func([]model.SnapshotRow) error) error) func() (int, error) {
		return func() (int, error) {
			n := 0
			err := read(ctx, "items", engine.DefaultSnapshotChunkRows, func(rows []model.SnapshotRow) error {
				n += len(rows)
				return nil
			})
			return n, err
		}
	}
	steps := [3]func() (int, error){
		func() (int, error) {
			n := 0
			for ch, err := range p.eng.Snapshot(engine.SnapshotOptions{RowBytes: wire.SnapshotRowSize}) {
				if err != nil {
					return n, err
				}
				n += len(ch.Rows)
			}
			return n, nil
		},
		count(p.rel.snapshot),
		count(p.rel.snapshotRows),
	}
	into := [3]*time.Duration{&engT, &relT, &aggT}
	for i := range b.N {
		for k := range 3 { // each goes first in turn
			j := (k + i) % 3
			start := time.Now()
			n, err := steps[j]()
			if err != nil {
				b.Fatal(err)
			}
			*into[j] += time.Since(start)
			if n != snapshotRows {
				b.Fatalf("snapshot %d: %d rows, want %d", j, n, snapshotRows)
			}
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(engT.Nanoseconds())/n, "eng-ns/snap")
	b.ReportMetric(float64(relT.Nanoseconds())/n, "rel-ns/snap")
	b.ReportMetric(float64(engT.Nanoseconds())/n/snapshotRows, "eng-ns/row")
	b.ReportMetric(float64(relT.Nanoseconds())/n/snapshotRows, "rel-ns/row")
	b.ReportMetric(float64(relT)/float64(engT), "rel/eng")
	b.ReportMetric(float64(aggT.Nanoseconds())/n, "agg-ns/snap")
	b.ReportMetric(float64(aggT)/float64(engT), "agg/eng")
}

// TestRelationalMatchesEngine: relReplica, fed the benchmarks'
// ChangeSets, holds what the engine's merged replica holds (its snapshot
// rows): in order one at a time, and shuffled, in batches, each twice.
func TestRelationalMatchesEngine(t *testing.T) {
	url := pgtest.NewDatabase(t)
	// Two devices with the same seed write the same keys (concurrent
	// versions of the same cells, deletions of the same rows).
	w, w2 := newRelWriter(t, 3), newRelWriter(t, 3)
	sets := []model.ChangeSet{w.schemaSet(t), w2.schemaSet(t)}
	for i := range 60 {
		sets = append(sets, w.tx(t, 1+i%7*5, i < 5), w2.tx(t, 1+i%7*5, i < 5))
	}
	ctx := context.Background()
	inOrder := newRelPair(t, url)
	for i := range sets {
		inOrder.apply(t, sets[i:i+1])
	}
	want := engineRows(t, inOrder.eng)
	if len(want) < 100 {
		t.Fatalf("only %d rows", len(want))
	}
	deleted := 0
	for _, r := range want {
		if r.HasTombstone {
			deleted++
		}
	}
	if deleted == 0 {
		t.Fatal("no tombstones")
	}
	check := func(name string, rel *relReplica) {
		t.Helper()
		for i, read := range []func(context.Context, string, int, func([]model.SnapshotRow) error) error{rel.snapshot, rel.snapshotRows} {
			var got []model.SnapshotRow
			// Small pages, so that pages are cut inside rows too.
			err := read(ctx, "items", 7, func(rows []model.SnapshotRow) error {
				got = append(got, rows...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := rowsText(got), rowsText(want); g != w {
				t.Fatalf("%s, reader %d: relational rows differ from the engine's:\n%s\nwant\n%s", name, i, g, w)
			}
		}
	}
	check("in order", inOrder.rel)
	check("in order, applyTx", inOrder.rel2)

	shuffled := newRelPair(t, url)
	rng := rand.New(rand.NewPCG(4, 4))
	order := append(slices.Clone(sets), sets...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for len(order) > 0 {
		k := min(len(order), 1+rng.IntN(4))
		shuffled.apply(t, order[:k])
		order = order[k:]
	}
	if g, w := rowsText(engineRows(t, shuffled.eng)), rowsText(want); g != w {
		t.Fatalf("the engine, shuffled: rows differ:\n%s\nwant\n%s", g, w)
	}
	check("shuffled", shuffled.rel)
	check("shuffled, applyTx", shuffled.rel2)
}

func engineRows(t testing.TB, e *engine.Engine) []model.SnapshotRow {
	t.Helper()
	var rows []model.SnapshotRow
	for ch, err := range e.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, ch.Rows...)
	}
	return rows
}

// rowsText prints rows in a canonical order.
func rowsText(rows []model.SnapshotRow) string {
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		cells := slices.Clone(r.Cells)
		slices.SortFunc(cells, func(a, b model.SnapshotCell) int { return cmp.Compare(a.Column, b.Column) })
		s := fmt.Sprint(r.PK)
		if r.HasTombstone {
			s += " deleted@" + r.Tombstone.String()
		}
		for _, c := range cells {
			s += fmt.Sprintf(" %s=%v@%s", c.Column, c.Value, c.HLC)
		}
		lines = append(lines, s)
	}
	slices.Sort(lines)
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	return buf.String()
}
