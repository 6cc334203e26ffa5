//go:build js && wasm

package jsbridge

import (
	"errors"
	"math"
	"strconv"
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
	r := newReader([]byte(text), blobs)
	err := r.Members(func(key []byte) error {
		switch string(key) {
		case "where":
			var err error
			q.Where, err = r.where(table)
			return err
		case "opts":
			raw, err := r.skip()
			if err != nil {
				return err
			}
			return parseOpts(&q, raw, countOnly)
		}
		return errSyntax
	})
	if err != nil {
		return q, err
	}
	return q, r.End()
}

func (r *reader) where(table string) ([]engine.Filter, error) {
	if r.Peek() == 'n' {
		return nil, r.null()
	}
	var out []engine.Filter
	err := r.Elements(func(int) error {
		f, err := r.filter(table)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// filter reads one where entry: [column, operator, value].
func (r *reader) filter(table string) (engine.Filter, error) {
	var f engine.Filter
	if err := r.OpenArray(); err != nil {
		return f, err
	}
	if err := r.element(0); err != nil {
		return f, err
	}
	col, err := r.Str()
	if err != nil {
		return f, err
	}
	if err := r.element(1); err != nil {
		return f, err
	}
	opName, err := r.Str()
	if err != nil {
		return f, err
	}
	op, known := whereOps[opName]
	if !known {
		return f, argError("where.%s: unknown operator %q (operators: %s; to compare a json column with an object, use {eq: value})", col, opName, opList)
	}
	if err := r.element(2); err != nil {
		return f, err
	}
	f = engine.Filter{Column: col, Op: op}
	if op == engine.In {
		if r.Peek() != '[' {
			if _, err := r.value(); err != nil {
				return f, err
			}
			return f, argError("where.%s.in must be an array of values", col)
		}
		if f.Values, err = r.list(table, col); err != nil {
			return f, err
		}
		if f.Values == nil {
			f.Values = []any{}
		}
	} else {
		v, err := r.value()
		if err != nil {
			return f, err
		}
		if u, bad := v.(unsupported); bad {
			return f, unsupportedError(table, col, u)
		}
		if op == engine.Prefix {
			if _, isStr := v.(string); !isStr {
				return f, &bridgeError{code: codeValidation, table: table, column: col, msg: table + "." + col + ": where prefix needs a string"}
			}
		}
		f.Value = v
	}
	return f, r.closeArray(3)
}

// parseOpts reads orderBy, limit and offset. Every other key is an error.
func parseOpts(q *engine.Query, raw []byte, countOnly bool) error {
	r := newReader(raw, nil)
	err := r.object(func(key string) (err error) {
		switch {
		case countOnly:
			return argError("unknown count option %q (count takes {where})", key)
		case key == "orderBy":
			q.OrderBy, err = r.order()
		case key == "limit":
			q.Limit, err = r.count("limit", 1)
		case key == "offset":
			q.Offset, err = r.count("offset", 0)
		case key == "system" || key == "deleted":
			var b *bool
			if err = r.optBool(&b, "options."+key); err == nil && b != nil {
				if key == "system" {
					q.System = *b
				} else {
					q.Deleted = *b
				}
			}
		default:
			return argError("unknown query option %q (known: where, orderBy, limit, offset, system, deleted)", key)
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, errSyntax) {
		return argError("query options must be an object")
	}
	return err
}

// count reads a whole number >= min, or null (0).
func (r *reader) count(name string, min int) (int, error) {
	if r.Peek() == 'n' {
		return 0, r.null()
	}
	raw, err := r.skip()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || f < float64(min) || f > 1<<31 {
		if min == 1 {
			return 0, argError("%s must be a positive whole number (omit it for no limit), got %s", name, raw)
		}
		return 0, argError("%s must be a whole number >= %d, got %s", name, min, raw)
	}
	return int(f), nil
}

// order reads orderBy: "col", "-col", or an array of those and {column,
// desc} objects; null is no order.
func (r *reader) order() ([]engine.Order, error) {
	switch r.Peek() {
	case 'n':
		return nil, r.null()
	case '[':
		var out []engine.Order
		err := r.Elements(func(int) error {
			o, err := r.orderItem()
			out = append(out, o)
			return err
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	o, err := r.orderItem()
	if err != nil {
		return nil, err
	}
	return []engine.Order{o}, nil
}

func (r *reader) orderItem() (engine.Order, error) {
	var o engine.Order
	switch r.Peek() {
	case '"':
		s, err := r.Str()
		if err != nil {
			return o, err
		}
		o.Column = s
		if strings.HasPrefix(s, "-") {
			o = engine.Order{Column: s[1:], Desc: true}
		}
		if o.Column == "" {
			return o, argError("orderBy: empty column name")
		}
		return o, nil
	case '{':
		err := r.object(func(key string) error {
			switch key {
			case "column":
				raw, err := r.skip()
				if err != nil {
					return err
				}
				s, err := newReader(raw, nil).Str()
				if err != nil || s == "" {
					return argError("orderBy: column must be a non-empty string, got %s", raw)
				}
				o.Column = s
				return nil
			case "desc":
				var desc *bool
				if err := r.optBool(&desc, "orderBy: desc"); err != nil {
					return err
				}
				o.Desc = desc != nil && *desc
				return nil
			}
			return argError("orderBy: unknown key %q (known: column, desc)", key)
		})
		if err != nil {
			return o, err
		}
		if o.Column == "" {
			return o, argError("orderBy: an entry has no column")
		}
		return o, nil
	}
	raw, err := r.skip()
	if err != nil {
		return o, err
	}
	return o, argError("orderBy entries must be column names or {column, desc} objects, got %s", raw)
}
