//go:build js && wasm

package jsbridge

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// db.inspect (replica.d.ts Inspector): read-only, paged views of what the
// replica holds with the metadata queries leave out, for the inspector
// page (web/inspect.js) and for tests. Each is one operation on the
// replica's worker, read through engine's Inspect* reads (bounded kv
// transactions that wait on nothing else). HLCs are written as the
// conflict event writes them, "wallMs.counter@siteId/opSeq"; page cursors
// are opaque strings (base64url of a stored key).

// inspectOptions is the options object of an inspect call, read with the
// keys the call knows (an unknown one is INVALID_ARGUMENT).
type inspectOptions struct {
	after, before, search, table *string
	limit, maxScan               *float64
	prefix, deleted, unsent      *bool
	counts                       *bool
}

func parseInspectOptions(text string, known ...string) (inspectOptions, error) {
	var o inspectOptions
	if text == "" {
		return o, nil
	}
	r := newReader([]byte(text), nil)
	err := r.object(func(key string) error {
		if !contains(known, key) {
			return argError("unknown option %q (known: %s)", key, strings.Join(known, ", "))
		}
		what := "options." + key
		switch key {
		case "after":
			return r.optString(&o.after, what)
		case "before":
			return r.optString(&o.before, what)
		case "search":
			return r.optString(&o.search, what)
		case "table":
			return r.optString(&o.table, what)
		case "limit":
			return r.optNumber(&o.limit, what)
		case "maxScan":
			return r.optNumber(&o.maxScan, what)
		case "prefix":
			return r.optBool(&o.prefix, what)
		case "deleted":
			return r.optBool(&o.deleted, what)
		case "unsent":
			return r.optBool(&o.unsent, what)
		case "counts":
			return r.optBool(&o.counts, what)
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, errSyntax) {
		return o, argError("options must be an object")
	}
	return o, err
}

// whole returns *f as an int from lo to hi (0 when f is nil), or an
// INVALID_ARGUMENT error naming what.
func whole(f *float64, what string, lo, hi int) (int, error) {
	if f == nil {
		return 0, nil
	}
	if *f != float64(int(*f)) || *f < float64(lo) || *f > float64(hi) {
		return 0, argError("%s must be an integer from %d to %d, got %v", what, lo, hi, *f)
	}
	return int(*f), nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// cursor decodes a page cursor (nil when p is nil or "").
func cursor(p *string, what string) ([]byte, error) {
	if str(p) == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*p)
	if err != nil || len(b) == 0 {
		return nil, argError("%s must be a page's next cursor, got %q", what, *p)
	}
	return b, nil
}

func encodeCursor(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// hlcText parses an HLC given as "wallMs.counter@siteId/opSeq".
func hlcText(p *string, what string) (model.HLC, error) {
	var h model.HLC
	if str(p) == "" {
		return h, nil
	}
	if err := h.UnmarshalText([]byte(*p)); err != nil {
		return h, argError("%s must be an HLC as an entry's hlc gives it (wallMs.counter@siteId/opSeq), got %q", what, *p)
	}
	return h, nil
}

func appendHLCObject(b []byte, h model.HLC) []byte {
	b = append(b, `{"hlc":`...)
	b = appendString(b, h.String())
	b = append(b, `,"at":`...)
	b = strconv.AppendUint(b, h.Wall, 10)
	b = append(b, `,"siteId":`...)
	b = appendString(b, h.Site.String())
	return append(b, '}')
}

// inspectTablesOp answers db.inspect.tables(): [{name, columns: [{name,
// type, notNull, default?}], primaryKey, indexes: [{name, columns}],
// rows, deleted}] for every table of the effective schema, counting the
// live and deleted rows (engine.InspectCount; left out with options
// {counts: false}).

func inspectTablesOp(d *db, c *call) (result, error) {
	o, err := parseInspectOptions(c.str(0), "counts")
	if err != nil {
		return result{}, err
	}
	counts := o.counts == nil || *o.counts
	s, err := d.eng.Schema()
	if err != nil {
		return result{}, err
	}
	b := []byte{'['}
	for i, t := range s.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		var to jsonObject
		to.str("name", t.Name)
		cols := []byte{'['}
		for j, col := range t.Columns {
			if j > 0 {
				cols = append(cols, ',')
			}
			var co jsonObject
			co.str("name", col.Name)
			co.str("type", col.Type.String())
			co.bool("notNull", col.NotNull)
			if col.HasDefault {
				co.str("default", col.Default.String())
			}
			cols = append(cols, co.done()...)
		}
		to.raw("columns", string(append(cols, ']')))
		pk := []byte{'['}
		for j, n := range t.PrimaryKey {
			if j > 0 {
				pk = append(pk, ',')
			}
			pk = appendString(pk, n)
		}
		to.raw("primaryKey", string(append(pk, ']')))
		ix := []byte{'['}
		for j, x := range t.Indexes {
			if j > 0 {
				ix = append(ix, ',')
			}
			var xo jsonObject
			xo.str("name", x.Name)
			xs := []byte{'['}
			for k, n := range x.Columns {
				if k > 0 {
					xs = append(xs, ',')
				}
				xs = appendString(xs, n)
			}
			xo.raw("columns", string(append(xs, ']')))
			ix = append(ix, xo.done()...)
		}
		to.raw("indexes", string(append(ix, ']')))
		if counts {
			live, deleted, err := d.eng.InspectCount(t.Name)
			if err != nil {
				return result{}, err
			}
			to.int("rows", int64(live))
			to.int("deleted", int64(deleted))
		}
		b = append(b, to.done()...)
	}
	b = append(b, ']')
	return result{kind: kindJSON, text: string(b)}, nil
}

// inspectCountOp answers db.inspect.count(table): {rows, deleted}
// (engine.InspectCount).
func inspectCountOp(d *db, c *call) (result, error) {
	live, deleted, err := d.eng.InspectCount(c.str(0))
	if err != nil {
		return result{}, err
	}
	var o jsonObject
	o.int("rows", int64(live))
	o.int("deleted", int64(deleted))
	return o.result(), nil
}

// inspectRowsOp answers db.inspect.rows(table, options): a = table, b =
// options JSON {after?, limit?, search?, prefix?, deleted?, maxScan?}.
// The result is kind many: holders are the rows' values (a deleted row's
// image at its deletion, key included), and the third element holds the
// page ({next, scanned}) then one {key, cells: {column: {hlc, at,
// siteId}}, deleted, deletedHlc?} per row; facade.js joins them.
func inspectRowsOp(d *db, c *call) (result, error) {
	table := c.str(0)
	o, err := parseInspectOptions(c.str(1), "after", "limit", "search", "prefix", "deleted", "maxScan")
	if err != nil {
		return result{}, err
	}
	var io engine.InspectOptions
	if io.After, err = cursor(o.after, "options.after"); err != nil {
		return result{}, err
	}
	if io.Limit, err = whole(o.limit, "options.limit", 1, engine.MaxInspectLimit); err != nil {
		return result{}, err
	}
	if io.MaxScan, err = whole(o.maxScan, "options.maxScan", 1, 1<<30); err != nil {
		return result{}, err
	}
	io.Search = str(o.search)
	io.Prefix = o.prefix != nil && *o.prefix
	io.Deleted = o.deleted != nil && *o.deleted
	page, err := d.eng.InspectRows(table, io)
	if err != nil {
		return result{}, err
	}
	cols := d.columns(table, false)
	pkCols := pkColumns(d, table)
	e := newEncoder()
	meta := []byte(`{"next":`)
	if page.Next == nil {
		meta = append(meta, "null"...)
	} else {
		meta = appendString(meta, encodeCursor(page.Next))
	}
	meta = append(meta, `,"scanned":`...)
	meta = strconv.AppendInt(meta, int64(page.Scanned), 10)
	meta = append(meta, '}')
	for i := range page.Rows {
		r := &page.Rows[i]
		values := model.Row{}
		if r.Deleted {
			for k, v := range r.PriorRow {
				values[k] = v
			}
		} else {
			for _, cell := range r.Cells {
				values[cell.Column] = cell.Value
			}
		}
		for j, v := range r.Key {
			if j < len(pkCols) {
				values[pkCols[j]] = v
			}
		}
		for _, c := range cols {
			if _, ok := values[c]; !ok {
				values[c] = model.Null // as db.query: every column
			}
		}
		e.row(i, values, cols)
		meta = append(meta, `,{"key":`...)
		meta = appendKeyJSON(meta, r.Key)
		meta = append(meta, `,"cells":{`...)
		for j, cell := range r.Cells {
			if j > 0 {
				meta = append(meta, ',')
			}
			meta = appendString(meta, cell.Column)
			meta = append(meta, ':')
			meta = appendHLCObject(meta, cell.HLC)
		}
		meta = append(meta, `},"deleted":`...)
		meta = strconv.AppendBool(meta, r.Deleted)
		if !r.Tomb.IsZero() {
			meta = append(meta, `,"tombstone":`...)
			meta = appendHLCObject(meta, r.Tomb)
		}
		meta = append(meta, '}')
	}
	text, blobs := e.finishWith(meta)
	return result{kind: kindMany, text: text, blobs: blobs}, nil
}

// pkColumns returns table's primary key columns.
func pkColumns(d *db, table string) []string {
	s, err := d.eng.Schema()
	if err != nil {
		return nil
	}
	for _, t := range s.Tables {
		if t.Name == table {
			return t.PrimaryKey
		}
	}
	return nil
}

// appendKeyJSON writes a key's values for display: text as is, integers
// (within ±(2^53−1)) and reals as numbers, others in model.Value.String's
// form.
func appendKeyJSON(b []byte, key []model.Value) []byte {
	b = append(b, '[')
	for i, v := range key {
		if i > 0 {
			b = append(b, ',')
		}
		switch v.Kind() {
		case model.KindText:
			b = appendString(b, v.Text())
		case model.KindInteger:
			if i := v.Int(); i >= -maxSafe && i <= maxSafe {
				b = strconv.AppendInt(b, i, 10)
				continue
			}
			b = appendString(b, v.String())
		case model.KindReal:
			if f := v.Real(); !math.IsNaN(f) && !math.IsInf(f, 0) {
				b = jsontext.AppendFloat(b, f, 64)
				continue
			}
			b = appendString(b, v.String())
		default:
			b = appendString(b, v.String())
		}
	}
	return append(b, ']')
}

// sentWatermark is the sent watermark the inspector marks entries unsent
// against: the sync target's (this tab's, else the leader's as shared),
// else the last one counted, else the newest stored for any relay.
func (d *db) sentWatermark() (model.HLC, error) {
	d.sy.mu.Lock()
	t := d.sy.target
	if t == nil {
		t = d.sy.last
	}
	d.sy.mu.Unlock()
	if t != nil {
		return client.SentWatermark(d.eng, firstURL(t.URL), t.Database)
	}
	hints, err := d.eng.States("sync:relay:")
	if err != nil {
		return model.HLC{}, err
	}
	var best model.HLC
	for _, h := range hints {
		url, db, ok := strings.Cut(strings.TrimPrefix(h.Name, "sync:relay:"), "#")
		if !ok {
			continue
		}
		wm, err := client.SentWatermark(d.eng, url, db)
		if err != nil {
			return model.HLC{}, err
		}
		if best.Less(wm) {
			best = wm
		}
	}
	return best, nil
}

// inspectLogOp answers db.inspect.changeLog(options): b = options JSON
// {before?, limit?, unsent?}: {entries: [{hlc, at, rows, tables: {table:
// rows}, migrations: ["create_table trips", ...], unsent, superseded}], next (the before of the next page, or null),
// sentWatermark (or null when nothing was ever sent)}.
func inspectLogOp(d *db, c *call) (result, error) {
	o, err := parseInspectOptions(c.str(0), "before", "limit", "unsent")
	if err != nil {
		return result{}, err
	}
	var lo engine.LogOptions
	if lo.Before, err = hlcText(o.before, "options.before"); err != nil {
		return result{}, err
	}
	if lo.Limit, err = whole(o.limit, "options.limit", 1, engine.MaxInspectLimit); err != nil {
		return result{}, err
	}
	sent, err := d.sentWatermark()
	if err != nil {
		return result{}, err
	}
	if o.unsent != nil && *o.unsent {
		lo.After = sent
	}
	lo.Checked = &sent
	entries, more, err := d.eng.InspectLog(lo)
	if err != nil {
		return result{}, err
	}
	b := []byte(`{"entries":[`)
	for i, en := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		var eo jsonObject
		eo.str("hlc", en.HLC.String())
		eo.int("at", int64(en.HLC.Wall))
		n := 0
		var tables jsonObject
		for _, t := range sortedKeys(en.Rows) {
			tables.int(t, int64(en.Rows[t]))
			n += en.Rows[t]
		}
		eo.int("rows", int64(n))
		eo.raw("tables", tables.done())
		ms := []byte{'['}
		for j, m := range en.Migrations {
			if j > 0 {
				ms = append(ms, ',')
			}
			ms = appendString(ms, m)
		}
		eo.raw("migrations", string(append(ms, ']')))
		eo.bool("unsent", sent.Base().Less(en.HLC))
		eo.bool("superseded", en.Superseded)
		b = append(b, eo.done()...)
	}
	b = append(b, `],"next":`...)
	if more {
		b = appendString(b, entries[len(entries)-1].HLC.String())
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"sentWatermark":`...)
	if sent.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendString(b, sent.String())
	}
	b = append(b, '}')
	return result{kind: kindJSON, text: string(b)}, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// inspectHeldOp answers db.inspect.heldChanges(options): b = options JSON
// {table?, after?, limit?}: {changes: [{table, key, type ("column" or
// "delete"), column?, value? (as text), hlc, at, siteId, reason,
// replayable, forward, receivedAt}], next}.
func inspectHeldOp(d *db, c *call) (result, error) {
	o, err := parseInspectOptions(c.str(0), "table", "after", "limit")
	if err != nil {
		return result{}, err
	}
	after, err := cursor(o.after, "options.after")
	if err != nil {
		return result{}, err
	}
	limit, err := whole(o.limit, "options.limit", 1, engine.MaxInspectLimit)
	if err != nil {
		return result{}, err
	}
	held, next, err := d.eng.InspectHeld(str(o.table), after, limit)
	if err != nil {
		return result{}, err
	}
	b := []byte(`{"changes":[`)
	for i, h := range held {
		if i > 0 {
			b = append(b, ',')
		}
		ch := &h.Change
		var ho jsonObject
		ho.str("table", ch.Table)
		ho.raw("key", string(appendKeyJSON(nil, ch.PK)))
		if ch.Type == model.RowDeletion {
			ho.str("type", "delete")
		} else {
			ho.str("type", "column")
			ho.str("column", ch.Column)
			ho.str("value", displayValue(ch.Value))
		}
		ho.str("hlc", ch.HLC.String())
		ho.int("at", int64(ch.HLC.Wall))
		ho.str("siteId", ch.HLC.Site.String())
		ho.str("reason", h.Reason.String())
		ho.bool("replayable", !h.NeverReplayed)
		ho.bool("forward", h.Forward)
		ho.int("receivedAt", int64(h.ReceivedAt))
		b = append(b, ho.done()...)
	}
	b = append(b, `],"next":`...)
	if next == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, encodeCursor(next))
	}
	b = append(b, '}')
	return result{kind: kindJSON, text: string(b)}, nil
}

// displayValue is v as text for display (at most 200 bytes).
func displayValue(v model.Value) string {
	s := v.String()
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// inspectSyncOp answers db.inspect.sync(): {siteId, leader, target: {url,
// database} or null, sentWatermark, unsent, state: [{name, value}] (the
// sync client's persisted cursors and watermarks: engine state under
// "sync:", values as text)}. The live status is db.sync.state.
func inspectSyncOp(d *db, _ *call) (result, error) {
	var o jsonObject
	o.str("siteId", d.eng.SiteID().String())
	o.bool("leader", d.leader.Load())
	d.sy.mu.Lock()
	t := d.sy.target
	if t == nil {
		t = d.sy.last
	}
	d.sy.mu.Unlock()
	if t == nil {
		o.raw("target", "null")
	} else {
		var to jsonObject
		to.str("url", t.URL)
		to.str("database", t.Database)
		to.bool("sealed", len(t.Keys) > 0)
		o.raw("target", to.done())
	}
	sent, err := d.sentWatermark()
	if err != nil {
		return result{}, err
	}
	if sent.IsZero() {
		o.raw("sentWatermark", "null")
	} else {
		o.str("sentWatermark", sent.String())
	}
	n, err := d.eng.CountLocalTransactions(sent)
	if err != nil {
		return result{}, err
	}
	o.int("unsent", int64(n))
	st, err := d.eng.States("sync:")
	if err != nil {
		return result{}, err
	}
	b := []byte{'['}
	for i, s := range st {
		if i > 0 {
			b = append(b, ',')
		}
		var so jsonObject
		so.str("name", s.Name)
		if utf8.Valid(s.Value) {
			so.str("value", string(s.Value))
		} else {
			so.str("value", "base64:"+base64.StdEncoding.EncodeToString(s.Value))
		}
		b = append(b, so.done()...)
	}
	o.raw("state", string(append(b, ']')))
	return o.result(), nil
}
