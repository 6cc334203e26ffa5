package wire

import (
	"slices"

	"github.com/replica-sync/replica/engine"
)

// MarshalChangeSet returns the wire form of one ChangeSet, as it appears in
// the changeSets arrays of changes, push_changes and apply_changes (a relay
// may store ChangeSets in this form). Errors match ErrInvalidMessage.
func MarshalChangeSet(cs *engine.ChangeSet) ([]byte, error) {
	return appendChangeSet(nil, cs)
}

// UnmarshalChangeSet decodes the wire form of one ChangeSet. It checks
// structure only (see "ChangeSet" in the package documentation); the engine
// checks the rest when it applies the ChangeSet. Errors match ErrMalformed.
func UnmarshalChangeSet(data []byte) (engine.ChangeSet, error) {
	r := newReader(data)
	if err := checkUTF8(r); err != nil {
		return engine.ChangeSet{}, err
	}
	cs, err := r.changeSet()
	if err == nil {
		err = r.end()
	}
	return cs, err
}

// ---- encoding ----

func appendChangeSets(b []byte, css []engine.ChangeSet) ([]byte, error) {
	b = append(b, '[')
	for i := range css {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendChangeSet(b, &css[i]); err != nil {
			return b, atIndex(err, i)
		}
	}
	return append(b, ']'), nil
}

func appendChangeSet(b []byte, cs *engine.ChangeSet) ([]byte, error) {
	var err error
	if cs.TransactionID == "" {
		return b, at(invalid("must not be empty"), "transactionId")
	}
	b = append(b, `{"siteId":`...)
	b = appendSiteID(b, cs.SiteID)
	b = append(b, `,"transactionId":`...)
	if b, err = appendString(b, cs.TransactionID); err != nil {
		return b, at(err, "transactionId")
	}
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, cs.HLC)
	b = append(b, `,"changes":[`...)
	for i := range cs.Changes {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendChange(b, &cs.Changes[i]); err != nil {
			return b, at(atIndex(err, i), "changes")
		}
	}
	b = append(b, ']')
	if len(cs.Migrations) > 0 {
		b = append(b, `,"schemaMigrations":`...)
		if b, err = appendMigrations(b, cs.Migrations); err != nil {
			return b, at(err, "schemaMigrations")
		}
	}
	return append(b, '}'), nil
}

func appendChange(b []byte, c *engine.Change) ([]byte, error) {
	var err error
	switch c.Type {
	case engine.ColumnChange:
		if c.PriorRow != nil {
			return b, at(invalid("only a delete carries a before-image row"), "priorRow")
		}
		b = append(b, `{"type":"column","table":`...)
	case engine.RowDeletion:
		if c.Column != "" || !c.Value.IsNull() || c.HasPrior {
			return b, invalid("a delete carries no column, value, priorValue or priorHlc")
		}
		b = append(b, `{"type":"delete","table":`...)
	default:
		return b, at(invalid("unknown change type %d", c.Type), "type")
	}
	if b, err = appendName(b, c.Table); err != nil {
		return b, at(err, "table")
	}
	b = append(b, `,"pk":`...)
	if b, err = appendPK(b, c.PK); err != nil {
		return b, at(err, "pk")
	}
	if c.Type == engine.ColumnChange {
		b = append(b, `,"column":`...)
		if b, err = appendName(b, c.Column); err != nil {
			return b, at(err, "column")
		}
		b = append(b, `,"value":`...)
		if b, err = appendValue(b, c.Value); err != nil {
			return b, at(err, "value")
		}
	}
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, c.HLC)
	if c.HasPrior {
		b = append(b, `,"priorValue":`...)
		if b, err = appendValue(b, c.PriorValue); err != nil {
			return b, at(err, "priorValue")
		}
		b = append(b, `,"priorHlc":`...)
		b = appendHLC(b, c.PriorHLC)
	}
	if c.PriorRow != nil {
		b = append(b, `,"priorRow":`...)
		if b, err = appendRow(b, c.PriorRow); err != nil {
			return b, at(err, "priorRow")
		}
	}
	return append(b, '}'), nil
}

// appendName writes a name (table, column, index) that must not be empty.
func appendName(b []byte, name string) ([]byte, error) {
	if name == "" {
		return b, invalid("must not be empty")
	}
	return appendString(b, name)
}

func appendNames(b []byte, names []string) ([]byte, error) {
	b = append(b, '[')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendName(b, n); err != nil {
			return b, atIndex(err, i)
		}
	}
	return append(b, ']'), nil
}

func appendPK(b []byte, pk []engine.Value) ([]byte, error) {
	if len(pk) == 0 {
		return b, invalid("primary key must not be empty")
	}
	return appendValues(b, pk)
}

func appendValues(b []byte, vs []engine.Value) ([]byte, error) {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, v); err != nil {
			return b, atIndex(err, i)
		}
	}
	return append(b, ']'), nil
}

// appendRow writes a row image as an object of column → value, keys in
// byte order so the encoding is deterministic.
func appendRow(b []byte, row engine.Row) ([]byte, error) {
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendName(b, k); err != nil {
			return b, atKey(err, k)
		}
		b = append(b, ':')
		if b, err = appendValue(b, row[k]); err != nil {
			return b, atKey(err, k)
		}
	}
	return append(b, '}'), nil
}

func appendMigrations(b []byte, ms []engine.SchemaMigration) ([]byte, error) {
	b = append(b, '[')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMigration(b, &ms[i]); err != nil {
			return b, atIndex(err, i)
		}
	}
	return append(b, ']'), nil
}

func appendMigration(b []byte, m *engine.SchemaMigration) ([]byte, error) {
	var err error
	n := 0
	for _, set := range []bool{m.Table != nil, m.Column != nil, m.Index != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return b, at(invalid("want exactly one of a table, column or index definition, got %d", n), "ddl")
	}
	switch {
	case m.Type == engine.CreateTable && m.Table != nil:
		if m.Table.Name != m.TableName {
			return b, at(invalid("table definition %q differs from table %q", m.Table.Name, m.TableName), "ddl")
		}
	case m.Type == engine.AddColumn && m.Column != nil:
	case m.Type == engine.AddIndex && m.Index != nil:
	default:
		return b, at(invalid("migration type %q does not match its definition", m.Type), "type")
	}
	b = append(b, `{"type":"`...)
	b = append(b, m.Type...)
	b = append(b, `","table":`...)
	if b, err = appendName(b, m.TableName); err != nil {
		return b, at(err, "table")
	}
	b = append(b, `,"ddl":`...)
	switch {
	case m.Table != nil:
		b, err = appendTableDef(b, m.Table)
	case m.Column != nil:
		b, err = appendColumnDef(b, m.Column)
	default:
		b, err = appendIndexDef(b, m.Index)
	}
	if err != nil {
		return b, at(err, "ddl")
	}
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, m.HLC)
	return append(b, '}'), nil
}

// appendTableDef writes the canonical JSON of a table definition.
func appendTableDef(b []byte, t *engine.TableDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = appendName(b, t.Name); err != nil {
		return b, at(err, "name")
	}
	b = append(b, `,"columns":[`...)
	for i := range t.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendColumnDef(b, &t.Columns[i]); err != nil {
			return b, at(atIndex(err, i), "columns")
		}
	}
	b = append(b, `],"primaryKey":`...)
	if b, err = appendNames(b, t.PrimaryKey); err != nil {
		return b, at(err, "primaryKey")
	}
	if len(t.Indexes) > 0 {
		b = append(b, `,"indexes":[`...)
		for i := range t.Indexes {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendIndexDef(b, &t.Indexes[i]); err != nil {
				return b, at(atIndex(err, i), "indexes")
			}
		}
		b = append(b, ']')
	}
	if t.Coerce {
		b = append(b, `,"coerce":true`...)
	}
	return append(b, '}'), nil
}

// appendColumnDef writes the canonical JSON of a column definition.
func appendColumnDef(b []byte, c *engine.ColumnDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = appendName(b, c.Name); err != nil {
		return b, at(err, "name")
	}
	if c.Type == engine.KindNull || c.Type.String() != kindName(c.Type) {
		return b, at(invalid("not a column type: %v", c.Type), "type")
	}
	b = append(b, `,"type":"`...)
	b = append(b, c.Type.String()...)
	b = append(b, '"')
	if c.NotNull {
		b = append(b, `,"notNull":true`...)
	}
	if c.HasDefault {
		b = append(b, `,"default":`...)
		if b, err = appendValue(b, c.Default); err != nil {
			return b, at(err, "default")
		}
	} else if !c.Default.IsNull() {
		return b, at(invalid("a default value without HasDefault"), "default")
	}
	if c.Coerce {
		b = append(b, `,"coerce":true`...)
	}
	return append(b, '}'), nil
}

// kindName returns the name ParseKind accepts for k, or "" for none.
func kindName(k engine.Kind) string {
	if k == engine.KindNull {
		return ""
	}
	if _, err := engine.ParseKind(k.String()); err != nil {
		return ""
	}
	return k.String()
}

// appendIndexDef writes the canonical JSON of an index definition.
func appendIndexDef(b []byte, ix *engine.IndexDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = appendName(b, ix.Name); err != nil {
		return b, at(err, "name")
	}
	b = append(b, `,"columns":`...)
	if b, err = appendNames(b, ix.Columns); err != nil {
		return b, at(err, "columns")
	}
	return append(b, '}'), nil
}

// ---- decoding ----

func (r *reader) changeSets() ([]engine.ChangeSet, error) {
	var out []engine.ChangeSet
	err := r.elements(func(int) error {
		cs, err := r.changeSet()
		out = append(out, cs)
		return err
	})
	return out, err
}

func (r *reader) changeSet() (engine.ChangeSet, error) {
	var cs engine.ChangeSet
	var seen fields
	const (
		fSite fields = 1 << iota
		fTx
		fHLC
		fChanges
		fMigrations
	)
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "siteId":
			if err = seen.see(r, fSite, key); err == nil {
				cs.SiteID, err = r.siteID()
			}
		case "transactionId":
			if err = seen.see(r, fTx, key); err == nil {
				cs.TransactionID, err = r.nonEmptyStr()
			}
		case "hlc":
			if err = seen.see(r, fHLC, key); err == nil {
				cs.HLC, err = r.hlc()
			}
		case "changes":
			if err = seen.see(r, fChanges, key); err == nil {
				err = r.elements(func(int) error {
					c, err := r.change()
					cs.Changes = append(cs.Changes, c)
					return err
				})
			}
		case "schemaMigrations":
			if err = seen.see(r, fMigrations, key); err == nil {
				cs.Migrations, err = r.migrations()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.require(r, fSite|fTx|fHLC|fChanges, "siteId", "transactionId", "hlc", "changes")
	}
	return cs, err
}

func (r *reader) change() (engine.Change, error) {
	var c engine.Change
	var seen fields
	const (
		fType fields = 1 << iota
		fTable
		fPK
		fColumn
		fValue
		fHLC
		fPriorValue
		fPriorHLC
		fPriorRow
	)
	names := []string{"type", "table", "pk", "column", "value", "hlc", "priorValue", "priorHlc", "priorRow"}
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			if err = seen.see(r, fType, key); err == nil {
				start := r.pos
				var t string
				if t, err = r.str(); err == nil {
					switch t {
					case "column":
						c.Type = engine.ColumnChange
					case "delete":
						c.Type = engine.RowDeletion
					default:
						err = r.failAt(start, "unknown change type %q (want column or delete)", t)
					}
				}
			}
		case "table":
			if err = seen.see(r, fTable, key); err == nil {
				c.Table, err = r.nonEmptyStr()
			}
		case "pk":
			if err = seen.see(r, fPK, key); err == nil {
				c.PK, err = r.pk()
			}
		case "column":
			if err = seen.see(r, fColumn, key); err == nil {
				c.Column, err = r.nonEmptyStr()
			}
		case "value":
			if err = seen.see(r, fValue, key); err == nil {
				c.Value, err = r.value()
			}
		case "hlc":
			if err = seen.see(r, fHLC, key); err == nil {
				c.HLC, err = r.hlc()
			}
		case "priorValue":
			if err = seen.see(r, fPriorValue, key); err == nil {
				c.PriorValue, err = r.value()
			}
		case "priorHlc":
			if err = seen.see(r, fPriorHLC, key); err == nil {
				c.PriorHLC, err = r.hlc()
			}
		case "priorRow":
			if err = seen.see(r, fPriorRow, key); err == nil {
				c.PriorRow, err = r.row()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return c, err
	}
	if err := seen.require(r, fType|fTable|fPK|fHLC, names...); err != nil {
		return c, err
	}
	var need, allowed fields
	switch c.Type {
	case engine.ColumnChange:
		need = fColumn | fValue
		allowed = fType | fTable | fPK | fColumn | fValue | fHLC | fPriorValue | fPriorHLC
		if (seen&fPriorValue != 0) != (seen&fPriorHLC != 0) {
			return c, r.fail("priorValue and priorHlc must come together")
		}
		c.HasPrior = seen&fPriorValue != 0
	case engine.RowDeletion:
		allowed = fType | fTable | fPK | fHLC | fPriorRow
	}
	if err := seen.require(r, need, names...); err != nil {
		return c, err
	}
	if extra := seen &^ allowed; extra != 0 {
		for i, n := range names {
			if extra&(1<<i) != 0 {
				return c, r.fail("field %q not allowed in a %s change", n, c.Type)
			}
		}
	}
	return c, nil
}

// pk reads a non-empty array of values.
func (r *reader) pk() ([]engine.Value, error) {
	start := r.pos
	pk, err := r.values()
	if err == nil && len(pk) == 0 {
		err = r.failAt(start, "primary key must not be empty")
	}
	return pk, err
}

func (r *reader) values() ([]engine.Value, error) {
	var vs []engine.Value
	err := r.elements(func(int) error {
		v, err := r.value()
		vs = append(vs, v)
		return err
	})
	return vs, err
}

// row reads an object of column → value.
func (r *reader) row() (engine.Row, error) {
	row := engine.Row{}
	err := r.members(func(key []byte) error {
		k := string(key)
		if k == "" {
			return r.fail("empty column name")
		}
		if _, dup := row[k]; dup {
			return r.fail("duplicate key %q", k)
		}
		v, err := r.value()
		row[k] = v
		return atKey(err, k)
	})
	return row, err
}

// names reads an array of non-empty strings.
func (r *reader) names() ([]string, error) {
	var out []string
	err := r.elements(func(int) error {
		s, err := r.nonEmptyStr()
		out = append(out, s)
		return err
	})
	return out, err
}

func (r *reader) migrations() ([]engine.SchemaMigration, error) {
	var out []engine.SchemaMigration
	err := r.elements(func(int) error {
		m, err := r.migration()
		out = append(out, m)
		return err
	})
	return out, err
}

func (r *reader) migration() (engine.SchemaMigration, error) {
	var m engine.SchemaMigration
	var seen fields
	const (
		fType fields = 1 << iota
		fTable
		fDDL
		fHLC
	)
	var ddlStart, ddlDepth int
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			if err = seen.see(r, fType, key); err == nil {
				start := r.pos
				var t string
				if t, err = r.str(); err == nil {
					m.Type = engine.MigrationType(t)
					switch m.Type {
					case engine.CreateTable, engine.AddColumn, engine.AddIndex:
					default:
						err = r.failAt(start, "unknown migration type %q (want create_table, add_column or add_index)", t)
					}
				}
			}
		case "table":
			if err = seen.see(r, fTable, key); err == nil {
				m.TableName, err = r.nonEmptyStr()
			}
		case "ddl":
			// Its shape depends on type, which may come later: check
			// the syntax now and read it once the type is known.
			if err = seen.see(r, fDDL, key); err == nil {
				ddlStart, ddlDepth = r.pos, r.depth
				if r.peek() != '{' {
					err = r.want("an object")
				} else {
					_, _, err = r.skip()
				}
			}
		case "hlc":
			if err = seen.see(r, fHLC, key); err == nil {
				m.HLC, err = r.hlc()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.require(r, fType|fTable|fDDL|fHLC, "type", "table", "ddl", "hlc")
	}
	if err != nil {
		return m, err
	}
	end, depth := r.pos, r.depth
	r.pos, r.depth = ddlStart, ddlDepth
	switch m.Type {
	case engine.CreateTable:
		var t engine.TableDef
		if t, err = r.tableDef("", true); err == nil && t.Name != m.TableName {
			err = r.failAt(ddlStart, "table definition %q differs from table %q", t.Name, m.TableName)
		}
		m.Table = &t
	case engine.AddColumn:
		var c engine.ColumnDef
		c, err = r.columnDef("")
		m.Column = &c
	case engine.AddIndex:
		var ix engine.IndexDef
		ix, err = r.indexDef("")
		m.Index = &ix
	}
	r.pos, r.depth = end, depth
	return m, at(err, "ddl")
}

// tableDef reads a table definition. In canonical form (the ddl of a
// create_table migration) it is {"name","columns":[ColumnDef…],
// "primaryKey":[…],"indexes"?:[IndexDef…],"coerce"?:bool}. Otherwise
// (ParseSchema) name may be given by the enclosing key instead (name !=
// ""), columns may be an object of name → type or column object,
// primaryKey a single string, indexes an object of name → columns, and
// primaryKey may be omitted.
func (r *reader) tableDef(name string, canonical bool) (engine.TableDef, error) {
	t := engine.TableDef{Name: name}
	var seen fields
	const (
		fName fields = 1 << iota
		fColumns
		fPK
		fIndexes
		fCoerce
	)
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.see(r, fName, key); err == nil {
				start := r.pos
				var n string
				if n, err = r.nonEmptyStr(); err == nil && name != "" && n != name {
					err = r.failAt(start, "name %q differs from its key %q", n, name)
				}
				t.Name = n
			}
		case "columns":
			if err = seen.see(r, fColumns, key); err == nil {
				t.Columns, err = r.columnDefs(canonical)
			}
		case "primaryKey":
			if err = seen.see(r, fPK, key); err == nil {
				if !canonical && r.peek() == '"' {
					var k string
					k, err = r.nonEmptyStr()
					t.PrimaryKey = []string{k}
				} else {
					t.PrimaryKey, err = r.names()
				}
			}
		case "indexes":
			if err = seen.see(r, fIndexes, key); err == nil {
				t.Indexes, err = r.indexDefs(canonical)
			}
		case "coerce":
			if err = seen.see(r, fCoerce, key); err == nil {
				t.Coerce, err = r.boolean()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return t, err
	}
	need := fColumns
	if canonical {
		need |= fPK
	}
	if name == "" {
		need |= fName
	}
	return t, seen.require(r, need, "name", "columns", "primaryKey")
}

// columnDefs reads the columns of a table: an array of column objects, or
// (not canonical) an object of name → type name or column object, in order.
func (r *reader) columnDefs(canonical bool) ([]engine.ColumnDef, error) {
	var out []engine.ColumnDef
	if !canonical && r.peek() == '{' {
		seen := map[string]bool{}
		err := r.members(func(key []byte) error {
			k := string(key)
			if k == "" {
				return r.fail("empty column name")
			}
			if seen[k] {
				return r.fail("duplicate column %q", k)
			}
			seen[k] = true
			var c engine.ColumnDef
			var err error
			if r.peek() == '"' {
				c.Name = k
				c.Type, err = r.kind()
			} else {
				c, err = r.columnDef(k)
			}
			out = append(out, c)
			return atKey(err, k)
		})
		return out, err
	}
	err := r.elements(func(int) error {
		c, err := r.columnDef("")
		out = append(out, c)
		return err
	})
	return out, err
}

// kind reads a column type name.
func (r *reader) kind() (engine.Kind, error) {
	start := r.pos
	s, err := r.str()
	if err != nil {
		return 0, err
	}
	k, err := engine.ParseKind(s)
	if err != nil {
		return 0, r.failAt(start, "%v", err)
	}
	return k, nil
}

// columnDef reads {"name","type","notNull"?,"default"?,"coerce"?}; name
// may come from the enclosing key instead (name != "").
func (r *reader) columnDef(name string) (engine.ColumnDef, error) {
	c := engine.ColumnDef{Name: name}
	var seen fields
	const (
		fName fields = 1 << iota
		fType
		fNotNull
		fDefault
		fCoerce
	)
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.see(r, fName, key); err == nil {
				start := r.pos
				var n string
				if n, err = r.nonEmptyStr(); err == nil && name != "" && n != name {
					err = r.failAt(start, "name %q differs from its key %q", n, name)
				}
				c.Name = n
			}
		case "type":
			if err = seen.see(r, fType, key); err == nil {
				c.Type, err = r.kind()
			}
		case "notNull":
			if err = seen.see(r, fNotNull, key); err == nil {
				c.NotNull, err = r.boolean()
			}
		case "default":
			if err = seen.see(r, fDefault, key); err == nil {
				c.Default, err = r.value()
				c.HasDefault = true
			}
		case "coerce":
			if err = seen.see(r, fCoerce, key); err == nil {
				c.Coerce, err = r.boolean()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return c, err
	}
	need := fType
	if name == "" {
		need |= fName
	}
	return c, seen.require(r, need, "name", "type")
}

// indexDefs reads an array of index objects, or (not canonical) an object
// of index name → array of column names.
func (r *reader) indexDefs(canonical bool) ([]engine.IndexDef, error) {
	var out []engine.IndexDef
	if !canonical && r.peek() == '{' {
		seen := map[string]bool{}
		err := r.members(func(key []byte) error {
			k := string(key)
			if k == "" {
				return r.fail("empty index name")
			}
			if seen[k] {
				return r.fail("duplicate index %q", k)
			}
			seen[k] = true
			var ix engine.IndexDef
			var err error
			if r.peek() == '{' {
				ix, err = r.indexDef(k)
			} else {
				ix.Name = k
				ix.Columns, err = r.names()
			}
			out = append(out, ix)
			return atKey(err, k)
		})
		return out, err
	}
	err := r.elements(func(int) error {
		ix, err := r.indexDef("")
		out = append(out, ix)
		return err
	})
	return out, err
}

// indexDef reads {"name","columns":[…]}; name may come from the enclosing
// key instead (name != "").
func (r *reader) indexDef(name string) (engine.IndexDef, error) {
	ix := engine.IndexDef{Name: name}
	var seen fields
	const (
		fName fields = 1 << iota
		fColumns
	)
	err := r.members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.see(r, fName, key); err == nil {
				start := r.pos
				var n string
				if n, err = r.nonEmptyStr(); err == nil && name != "" && n != name {
					err = r.failAt(start, "name %q differs from its key %q", n, name)
				}
				ix.Name = n
			}
		case "columns":
			if err = seen.see(r, fColumns, key); err == nil {
				ix.Columns, err = r.names()
			}
		default:
			return r.unknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return ix, err
	}
	need := fColumns
	if name == "" {
		need |= fName
	}
	return ix, seen.require(r, need, "name", "columns")
}
