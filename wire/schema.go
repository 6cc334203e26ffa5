package wire

import (
	"github.com/replica-sync/replica/model"
)

// ParseSchema parses a schema declaration: the object a web developer
// passes to Replica.open as its schema, or a Go program loads from a file.
// Two forms are accepted, and may not be mixed at the top level.
//
// The object form, keyed by name; key order is column order:
//
//	{"tables": {
//	  "trips": {
//	    "columns": {
//	      "id":     "text",
//	      "title":  {"type": "text", "notNull": true},
//	      "budget": {"type": "real", "default": 0}
//	    },
//	    "primaryKey": ["id"],            // or "id"; may be omitted
//	    "indexes": {"by_title": ["title"]},  // or [{"name", "columns"}]
//	    "coerce": false,
//	    "allowResurrection": true        // may be omitted: see below
//	  }
//	}}
//
// The array form, the canonical form MarshalSchema writes:
//
//	{"tables": [{"name": "trips", "columns": [{"name": "id", "type": "text"}, …],
//	             "primaryKey": ["id"], "indexes": [{"name": "by_title", "columns": ["title"]}]}]}
//
// In the array form a table's columns and indexes may also use the object
// forms, and primaryKey may be a single string or omitted. A column is a
// type name or {"type", "notNull"?, "default"?, "coerce"?} (plus "name"
// where no key gives it); "default": null is a null default, distinct from
// none. Defaults are read as wire values without a schema (0 is an integer,
// {"__bin": …} a blob).
//
// "allowResurrection" declares the table's resurrection policy (true:
// model.ResurrectionAllowed, false: model.DeleteWins); omitted, the table
// follows the database's policy (model.ResurrectionUndeclared). The policy
// is the database's, replicated as a set_resurrection_policy migration (see
// model.ResurrectionPolicy and wire/doc.go).
//
// ParseSchema checks structure only: JSON syntax, known fields (unknown
// ones are errors), types, type names, duplicate names within one object.
// Naming rules, keys, and coercing defaults to their column's type are
// model.Schema.Validate's. Errors match model.ErrSchema and name the
// offending field, e.g. `tables["trips"].columns["title"].type`.
func ParseSchema(data []byte) (model.Schema, error) {
	var s model.Schema
	r := newReader(data)
	r.errSentinel = model.ErrSchema
	if err := checkUTF8(r); err != nil {
		return s, err
	}
	seen := false
	err := r.Members(func(key []byte) error {
		if string(key) != "tables" {
			return r.UnknownKey(key)
		}
		if seen {
			return r.Fail("duplicate key %q", key)
		}
		seen = true
		var err error
		if r.Peek() == '{' {
			names := map[string]bool{}
			err = r.Members(func(key []byte) error {
				k := string(key)
				if k == "" {
					return r.Fail("empty table name")
				}
				if names[k] {
					return r.Fail("duplicate table %q", k)
				}
				names[k] = true
				t, err := r.tableDef(k, false)
				s.Tables = append(s.Tables, t)
				return atKey(err, k)
			})
		} else {
			err = r.elements(func(int) error {
				t, err := r.tableDef("", false)
				s.Tables = append(s.Tables, t)
				return err
			})
		}
		return at(err, "tables")
	})
	if err == nil && !seen {
		err = r.Fail(`missing required field "tables"`)
	}
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return model.Schema{}, err
	}
	return s, nil
}

// MarshalSchema returns the canonical JSON of s, the array form of
// ParseSchema: {"tables":[TableDef…]} with each TableDef as in a
// create_table migration's ddl. ParseSchema reads it back to an equal
// Schema. A column of no valid type, an empty name, or a default that
// cannot be encoded is an error matching ErrInvalidMessage.
func MarshalSchema(s model.Schema) ([]byte, error) {
	b := []byte(`{"tables":[`)
	for i := range s.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendTableDef(b, &s.Tables[i]); err != nil {
			return nil, at(atIndex(err, i), "tables")
		}
	}
	return append(b, "]}"...), nil
}
