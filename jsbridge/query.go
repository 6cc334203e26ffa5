//go:build js && wasm

package jsbridge

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/replica-sync/replica/engine"
)

// Query options arrive from facade.js as
//
//	{"where": [[column, op, value], ...], "opts": {orderBy?, limit?, offset?, ...}}
//
// where facade.js has split the where object into conditions (a bare value
// is op "eq"; an operator object gives one condition per operator; "in"
// carries an array of values) and tagged their values; opts is the rest of
// the options object through JSON.stringify, so unknown keys are seen here.

// whereOps maps the where operators of the JS API to the engine's.
var whereOps = map[string]engine.Op{
	"eq": engine.Eq, "ne": engine.Ne, "gt": engine.Gt, "gte": engine.Ge,
	"lt": engine.Lt, "lte": engine.Le, "in": engine.In, "prefix": engine.Prefix,
}

const opList = "eq, ne, gt, gte, lt, lte, in, prefix"

// parseQuery parses query (or, with countOnly, count) options for table.
func parseQuery(table, text string, blobs []byte, countOnly bool) (engine.Query, error) {
	var q engine.Query
	r := &reader{b: []byte(text), blobs: blobs}
	if err := r.expect('{'); err != nil {
		return q, err
	}
	for first := true; ; first = false {
		ok, err := r.more('}', first)
		if err != nil {
			return q, err
		}
		if !ok {
			break
		}
		key, err := r.str()
		if err != nil {
			return q, err
		}
		if err := r.expect(':'); err != nil {
			return q, err
		}
		switch key {
		case "where":
			if q.Where, err = r.where(table); err != nil {
				return q, err
			}
		case "opts":
			raw, err := r.skip()
			if err != nil {
				return q, err
			}
			if err := parseOpts(&q, raw, countOnly); err != nil {
				return q, err
			}
		default:
			return q, errSyntax
		}
	}
	return q, r.end()
}

func (r *reader) where(table string) ([]engine.Filter, error) {
	if r.peek() == 'n' {
		return nil, r.lit("null")
	}
	if err := r.expect('['); err != nil {
		return nil, err
	}
	var out []engine.Filter
	for first := true; ; first = false {
		ok, err := r.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if err := r.expect('['); err != nil {
			return nil, err
		}
		col, err := r.str()
		if err != nil {
			return nil, err
		}
		if err := r.expect(','); err != nil {
			return nil, err
		}
		opName, err := r.str()
		if err != nil {
			return nil, err
		}
		op, known := whereOps[opName]
		if !known {
			return nil, argError("where.%s: unknown operator %q (operators: %s; to compare a json column with an object, use {eq: value})", col, opName, opList)
		}
		if err := r.expect(','); err != nil {
			return nil, err
		}
		f := engine.Filter{Column: col, Op: op}
		if op == engine.In {
			if r.peek() != '[' {
				if _, err := r.value(); err != nil {
					return nil, err
				}
				return nil, argError("where.%s.in must be an array of values", col)
			}
			if f.Values, err = r.list(table, col); err != nil {
				return nil, err
			}
			if f.Values == nil {
				f.Values = []any{}
			}
		} else {
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			if u, bad := v.(unsupported); bad {
				return nil, unsupportedError(table, col, u)
			}
			if op == engine.Prefix {
				if _, isStr := v.(string); !isStr {
					return nil, &bridgeError{code: codeValidation, table: table, column: col, msg: table + "." + col + ": where prefix needs a string"}
				}
			}
			f.Value = v
		}
		if err := r.expect(']'); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
}

// parseOpts reads orderBy, limit and offset. Every other key is an error.
func parseOpts(q *engine.Query, raw []byte, countOnly bool) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return argError("query options must be an object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case k == "orderBy" && !countOnly:
			order, err := parseOrder(v)
			if err != nil {
				return err
			}
			q.OrderBy = order
		case k == "limit" && !countOnly:
			n, err := parseCount("limit", v, 1)
			if err != nil {
				return err
			}
			q.Limit = n
		case k == "offset" && !countOnly:
			n, err := parseCount("offset", v, 0)
			if err != nil {
				return err
			}
			q.Offset = n
		case countOnly:
			return argError("unknown count option %q (count takes {where})", k)
		default:
			return argError("unknown query option %q (known: where, orderBy, limit, offset)", k)
		}
	}
	return nil
}

// parseCount reads a whole number >= min.
func parseCount(name string, raw json.RawMessage, min int) (int, error) {
	if string(raw) == "null" {
		return 0, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < float64(min) || f > 1<<31 {
		if min == 1 {
			return 0, argError("%s must be a positive whole number (omit it for no limit), got %s", name, raw)
		}
		return 0, argError("%s must be a whole number >= %d, got %s", name, min, raw)
	}
	return int(f), nil
}

// parseOrder reads orderBy: "col", "-col", or an array of those and
// {column, desc} objects.
func parseOrder(raw json.RawMessage) ([]engine.Order, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, argError("orderBy: %v", err)
		}
	} else {
		list = []json.RawMessage{raw}
	}
	var out []engine.Order
	for _, item := range list {
		var s string
		if json.Unmarshal(item, &s) == nil {
			o := engine.Order{Column: s}
			if strings.HasPrefix(s, "-") {
				o = engine.Order{Column: s[1:], Desc: true}
			}
			if o.Column == "" {
				return nil, argError("orderBy: empty column name")
			}
			out = append(out, o)
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil {
			return nil, argError("orderBy entries must be column names or {column, desc} objects, got %s", item)
		}
		var o engine.Order
		for k, v := range obj {
			switch k {
			case "column":
				if err := json.Unmarshal(v, &o.Column); err != nil || o.Column == "" {
					return nil, argError("orderBy: column must be a non-empty string, got %s", v)
				}
			case "desc":
				if err := json.Unmarshal(v, &o.Desc); err != nil {
					return nil, argError("orderBy: desc must be a boolean, got %s", v)
				}
			default:
				return nil, argError("orderBy: unknown key %q (known: column, desc)", k)
			}
		}
		if o.Column == "" {
			return nil, argError("orderBy: an entry has no column")
		}
		out = append(out, o)
	}
	return out, nil
}
