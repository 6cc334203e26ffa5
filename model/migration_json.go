package model

import "github.com/replica-sync/replica/internal/jsontext"

// The JSON form of schema migrations and table definitions: the form the
// sync protocol carries them in (wire/doc.go, "Schema migrations") and the
// engine stores them in (storage format 2). One migration is
//
//	{"type":"create_table","table":"trips","ddl":{"name":"trips",
//	  "columns":[{"name":"id","type":"text","notNull":true,"default":…,"coerce":true}],
//	  "primaryKey":["id"],"indexes":[{"name":"by_day","columns":["day"]}],"coerce":true},
//	 "hlc":"<40 base64 characters>"}
//	{"type":"add_column","table":"trips","ddl":{ColumnDef},"hlc":…}
//	{"type":"add_index","table":"trips","ddl":{"name":"by_day","columns":["day"]},"hlc":…}
//	{"type":"set_resurrection_policy","table":"trips","ddl":{"policy":"allow-resurrection"},"hlc":…}
//	{"type":"drop_table","table":"trips","ddl":{},"hlc":…}
//	{"type":"drop_column","table":"trips","ddl":{"name":"budget"},"hlc":…}
//	{"type":"drop_index","table":"trips","ddl":{"name":"by_day"},"hlc":…}
//	{"type":"alter_column","table":"trips","ddl":{"name":"budget","notNull":true,"default":0},"hlc":…}
//	{"type":"alter_column","table":"trips","ddl":{"name":"budget","notNull":false,"dropDefault":true},"hlc":…}
//	{"type":"rename_table","table":"trips","ddl":{"name":"journeys"},"hlc":…}
//
// (an alter_column's ddl names the column and holds at least one of
// notNull, default and dropDefault, the attributes it changes; default and
// dropDefault exclude each other, dropDefault is only ever true)
// with defaults in the value form of AppendValueJSON, members in this
// order, and notNull, default, coerce and indexes left out when false,
// absent or empty. The Read functions accept members in any order and
// refuse unknown and repeated ones; their errors are made by the Reader's
// Errors and carry the JSON path (jsontext.At), as do the Append
// functions' errors (*jsontext.PathError matching ErrUnencodable).

// AppendMigrationJSON appends the JSON form of m. It checks that m has
// exactly one definition, matching its type (a create_table's table
// definition named as the migration's table and without a resurrection
// policy; a drop_column's or drop_index's name, a rename_table's new
// name; none for drop_table);
// errors match ErrUnencodable and name the offending member.
func AppendMigrationJSON(b []byte, m *SchemaMigration) ([]byte, error) {
	var err error
	n := 0
	for _, set := range []bool{m.Table != nil, m.Column != nil, m.Index != nil, m.Resurrection != ResurrectionUndeclared, m.Name != "" && m.Type != AlterColumn, m.Alter != nil} {
		if set {
			n++
		}
	}
	switch {
	case m.Type == DropTable && n != 0:
		return b, jsontext.At(unencodable("a drop_table carries no definition or name, got %d", n), "ddl")
	case m.Type == AlterColumn && (m.Name == "" || m.Alter == nil || n != 1):
		return b, jsontext.At(unencodable("an alter_column carries a column name and an alteration only"), "ddl")
	case m.Type != DropTable && n != 1:
		return b, jsontext.At(unencodable("want exactly one of a table, column, index or resurrection policy definition or a dropped name, got %d", n), "ddl")
	}
	switch {
	case m.Type == CreateTable && m.Table != nil:
		if m.Table.Name != m.TableName {
			return b, jsontext.At(unencodable("table definition %q differs from table %q", m.Table.Name, m.TableName), "ddl")
		}
		if m.Table.Resurrection != ResurrectionUndeclared {
			return b, jsontext.At(unencodable("a create_table definition carries no resurrection policy (it travels as set_resurrection_policy)"), "ddl")
		}
	case m.Type == AddColumn && m.Column != nil:
	case m.Type == AddIndex && m.Index != nil:
	case m.Type == SetResurrectionPolicy && (m.Resurrection == DeleteWins || m.Resurrection == ResurrectionAllowed):
	case m.Type == DropTable:
	case (m.Type == DropColumn || m.Type == DropIndex || m.Type == RenameTable) && m.Name != "":
	case m.Type == AlterColumn:
	default:
		return b, jsontext.At(unencodable("migration type %q does not match its definition", m.Type), "type")
	}
	b = append(b, `{"type":"`...)
	b = append(b, m.Type...)
	b = append(b, `","table":`...)
	if b, err = AppendNameJSON(b, m.TableName); err != nil {
		return b, jsontext.At(err, "table")
	}
	b = append(b, `,"ddl":`...)
	switch {
	case m.Table != nil:
		b, err = AppendTableDefJSON(b, m.Table)
	case m.Column != nil:
		b, err = appendColumnDef(b, m.Column)
	case m.Index != nil:
		b, err = appendIndexDef(b, m.Index)
	case m.Type == DropTable:
		b = append(b, `{}`...)
	case m.Alter != nil:
		b, err = appendColumnAlter(b, m.Name, m.Alter)
	case m.Name != "":
		b = append(b, `{"name":`...)
		b, err = AppendNameJSON(b, m.Name)
		b = append(b, '}')
		err = jsontext.At(err, "name")
	default:
		b = append(b, `{"policy":"`...)
		b = append(b, m.Resurrection.String()...)
		b = append(b, `"}`...)
	}
	if err != nil {
		return b, jsontext.At(err, "ddl")
	}
	b = append(b, `,"hlc":`...)
	b = AppendHLCJSON(b, m.HLC)
	return append(b, '}'), nil
}

// appendColumnAlter appends the ddl of an alter_column of column name.
func appendColumnAlter(b []byte, name string, a *ColumnAlter) ([]byte, error) {
	if !a.SetNotNull && !a.SetDefault {
		return b, unencodable("an alter_column changes nothing (neither notNull nor the default)")
	}
	if (!a.SetDefault || !a.HasDefault) && !a.Default.IsNull() {
		return b, jsontext.At(unencodable("a default value without SetDefault and HasDefault"), "default")
	}
	b = append(b, `{"name":`...)
	b, err := AppendNameJSON(b, name)
	if err != nil {
		return b, jsontext.At(err, "name")
	}
	if a.SetNotNull {
		b = append(b, `,"notNull":false`...)
		if a.NotNull {
			b = append(b[:len(b)-len("false")], "true"...)
		}
	}
	switch {
	case a.SetDefault && a.HasDefault:
		b = append(b, `,"default":`...)
		if b, err = AppendValueJSON(b, a.Default); err != nil {
			return b, jsontext.At(err, "default")
		}
	case a.SetDefault:
		b = append(b, `,"dropDefault":true`...)
	}
	return append(b, '}'), nil
}

// AppendTableDefJSON appends the canonical JSON of a table definition (the
// ddl of a create_table migration, an element of wire.MarshalSchema's
// tables); a resurrection policy other than undeclared is written as
// "allowResurrection", which only the schema declaration form reads.
func AppendTableDefJSON(b []byte, t *TableDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = AppendNameJSON(b, t.Name); err != nil {
		return b, jsontext.At(err, "name")
	}
	b = append(b, `,"columns":[`...)
	for i := range t.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendColumnDef(b, &t.Columns[i]); err != nil {
			return b, jsontext.At(jsontext.AtIndex(err, i), "columns")
		}
	}
	b = append(b, `],"primaryKey":`...)
	if b, err = AppendNamesJSON(b, t.PrimaryKey); err != nil {
		return b, jsontext.At(err, "primaryKey")
	}
	if len(t.Indexes) > 0 {
		b = append(b, `,"indexes":[`...)
		for i := range t.Indexes {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendIndexDef(b, &t.Indexes[i]); err != nil {
				return b, jsontext.At(jsontext.AtIndex(err, i), "indexes")
			}
		}
		b = append(b, ']')
	}
	if t.Coerce {
		b = append(b, `,"coerce":true`...)
	}
	switch t.Resurrection {
	case ResurrectionUndeclared:
	case DeleteWins:
		b = append(b, `,"allowResurrection":false`...)
	case ResurrectionAllowed:
		b = append(b, `,"allowResurrection":true`...)
	default:
		return b, jsontext.At(unencodable("not a resurrection policy: %v", t.Resurrection), "allowResurrection")
	}
	return append(b, '}'), nil
}

// appendColumnDef writes the canonical JSON of a column definition.
func appendColumnDef(b []byte, c *ColumnDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = AppendNameJSON(b, c.Name); err != nil {
		return b, jsontext.At(err, "name")
	}
	if c.Type == KindNull || c.Type.String() != kindName(c.Type) {
		return b, jsontext.At(unencodable("not a column type: %v", c.Type), "type")
	}
	b = append(b, `,"type":"`...)
	b = append(b, c.Type.String()...)
	b = append(b, '"')
	if c.NotNull {
		b = append(b, `,"notNull":true`...)
	}
	if c.HasDefault {
		b = append(b, `,"default":`...)
		if b, err = AppendValueJSON(b, c.Default); err != nil {
			return b, jsontext.At(err, "default")
		}
	} else if !c.Default.IsNull() {
		return b, jsontext.At(unencodable("a default value without HasDefault"), "default")
	}
	if c.Coerce {
		b = append(b, `,"coerce":true`...)
	}
	return append(b, '}'), nil
}

// kindName returns the name ParseKind accepts for k, or "" for none.
func kindName(k Kind) string {
	if k == KindNull {
		return ""
	}
	if _, err := ParseKind(k.String()); err != nil {
		return ""
	}
	return k.String()
}

// appendIndexDef writes the canonical JSON of an index definition.
func appendIndexDef(b []byte, ix *IndexDef) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	if b, err = AppendNameJSON(b, ix.Name); err != nil {
		return b, jsontext.At(err, "name")
	}
	b = append(b, `,"columns":`...)
	if b, err = AppendNamesJSON(b, ix.Columns); err != nil {
		return b, jsontext.At(err, "columns")
	}
	return append(b, '}'), nil
}

// AppendNameJSON appends a name (table, column, index) as a JSON string;
// an empty name is an error (ErrUnencodable).
func AppendNameJSON(b []byte, name string) ([]byte, error) {
	if name == "" {
		return b, unencodable("must not be empty")
	}
	return AppendTextJSON(b, name)
}

// AppendNamesJSON appends names as an array (AppendNameJSON).
func AppendNamesJSON(b []byte, names []string) ([]byte, error) {
	b = append(b, '[')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendNameJSON(b, n); err != nil {
			return b, jsontext.AtIndex(err, i)
		}
	}
	return append(b, ']'), nil
}

// ReadNamesJSON reads an array of non-empty strings.
func ReadNamesJSON(r *jsontext.Reader) ([]string, error) {
	var out []string
	err := elementsAt(r, func(int) error {
		s, err := r.NonEmptyStr()
		out = append(out, s)
		return err
	})
	return out, err
}

// ReadMigrationJSON reads one migration in the form AppendMigrationJSON
// writes. It checks structure only (known type, a ddl of that type's
// shape, a create_table's definition named as its table); the engine
// validates the rest (model.SchemaMigration's rules). The Reader's input
// must be valid UTF-8 (Reader.CheckUTF8).
func ReadMigrationJSON(r *jsontext.Reader) (SchemaMigration, error) {
	var m SchemaMigration
	var seen jsontext.Fields
	const (
		fType jsontext.Fields = 1 << iota
		fTable
		fDDL
		fHLC
	)
	var ddlStart, ddlDepth int
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			if err = seen.See(r, fType, key); err == nil {
				m.Type, err = readMigrationType(r)
			}
		case "table":
			if err = seen.See(r, fTable, key); err == nil {
				m.TableName, err = r.NonEmptyStr()
			}
		case "ddl":
			// Its shape depends on type, which may come later: check
			// the syntax now and read it once the type is known.
			if err = seen.See(r, fDDL, key); err == nil {
				ddlStart, ddlDepth = r.Pos, r.Depth
				if r.Peek() != '{' {
					err = r.Want("an object")
				} else {
					_, _, err = r.Skip()
				}
			}
		case "hlc":
			if err = seen.See(r, fHLC, key); err == nil {
				m.HLC, err = ReadHLCJSON(r)
			}
		default:
			return r.UnknownKey(key)
		}
		return jsontext.At(err, string(key))
	})
	if err == nil {
		err = seen.Require(r, fType|fTable|fDDL|fHLC, "type", "table", "ddl", "hlc")
	}
	if err != nil {
		return m, err
	}
	end, depth := r.Pos, r.Depth
	r.Pos, r.Depth = ddlStart, ddlDepth
	err = readMigrationDDL(r, &m)
	r.Pos, r.Depth = end, depth
	return m, jsontext.At(err, "ddl")
}

// readMigrationType reads a migration's type; an unknown one is an error
// (the type read is returned with it).
func readMigrationType(r *jsontext.Reader) (MigrationType, error) {
	start := r.Pos
	t, err := r.Str()
	if err != nil {
		return "", err
	}
	switch m := MigrationType(t); m {
	case CreateTable, AddColumn, AddIndex, SetResurrectionPolicy, DropTable, DropColumn, DropIndex, AlterColumn, RenameTable:
		return m, nil
	default:
		return m, unknownTypeError{r.FailAt(start, "unknown migration type %q (want create_table, add_column, add_index, set_resurrection_policy, drop_table, drop_column, drop_index, alter_column or rename_table)", t)}
	}
}

// readMigrationDDL reads the ddl of m, the Reader at it, in the shape of
// m's type (its syntax was checked already), into m's definition.
func readMigrationDDL(r *jsontext.Reader, m *SchemaMigration) error {
	start := r.Pos
	var err error
	switch m.Type {
	case CreateTable:
		var t TableDef
		if t, err = ReadTableDefJSON(r, "", true); err == nil && t.Name != m.TableName {
			err = r.FailAt(start, "table definition %q differs from table %q", t.Name, m.TableName)
		}
		m.Table = &t
	case AddColumn:
		var c ColumnDef
		c, err = readColumnDef(r, "")
		m.Column = &c
	case AddIndex:
		var ix IndexDef
		ix, err = readIndexDef(r, "")
		m.Index = &ix
	case SetResurrectionPolicy:
		m.Resurrection, err = readPolicyDef(r)
	case DropTable:
		err = r.Members(func(key []byte) error { return r.UnknownKey(key) })
	case DropColumn, DropIndex, RenameTable:
		m.Name, err = readDropName(r)
	case AlterColumn:
		var a ColumnAlter
		m.Name, a, err = readColumnAlter(r)
		m.Alter = &a
	}
	return err
}

// readColumnAlter reads the ddl of an alter_column migration:
// {"name", "notNull"?, "default"? | "dropDefault": true}, at least one
// attribute, nothing else.
func readColumnAlter(r *jsontext.Reader) (string, ColumnAlter, error) {
	start := r.Pos
	var name string
	var a ColumnAlter
	var seen jsontext.Fields
	const (
		fName jsontext.Fields = 1 << iota
		fNotNull
		fDefault
		fDropDefault
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.See(r, fName, key); err == nil {
				name, err = r.NonEmptyStr()
			}
		case "notNull":
			if err = seen.See(r, fNotNull, key); err == nil {
				a.NotNull, err = r.Boolean()
				a.SetNotNull = true
			}
		case "default":
			if err = seen.See(r, fDefault, key); err == nil {
				a.Default, err = ReadValueJSON(r, nil)
				a.SetDefault, a.HasDefault = true, true
			}
		case "dropDefault":
			if err = seen.See(r, fDropDefault, key); err == nil {
				vstart := r.Pos
				var drop bool
				if drop, err = r.Boolean(); err == nil && !drop {
					err = r.FailAt(vstart, "dropDefault is only ever true (leave it out to keep the default)")
				}
			}
		default:
			return r.UnknownKey(key)
		}
		return jsontext.At(err, string(key))
	})
	if err == nil {
		err = seen.Require(r, fName, "name")
	}
	if err != nil {
		return name, a, err
	}
	switch {
	case seen&fDefault != 0 && seen&fDropDefault != 0:
		return name, a, r.FailAt(start, "an alter_column sets default or dropDefault, not both")
	case seen&fDropDefault != 0:
		a.SetDefault = true
	case seen&(fNotNull|fDefault) == 0:
		return name, a, r.FailAt(start, "an alter_column changes notNull, default or dropDefault; this one changes nothing")
	}
	return name, a, nil
}

// readDropName reads the ddl of a drop_column, drop_index or rename_table
// migration:
// {"name": non-empty string}, nothing else.
func readDropName(r *jsontext.Reader) (string, error) {
	var name string
	var seen jsontext.Fields
	const fName jsontext.Fields = 1
	err := r.Members(func(key []byte) error {
		if string(key) != "name" {
			return r.UnknownKey(key)
		}
		err := seen.See(r, fName, key)
		if err == nil {
			name, err = r.NonEmptyStr()
		}
		return jsontext.At(err, "name")
	})
	if err != nil {
		return name, err
	}
	return name, seen.Require(r, fName, "name")
}

// readPolicyDef reads the ddl of a set_resurrection_policy migration:
// {"policy":"delete-wins"|"allow-resurrection"}.
func readPolicyDef(r *jsontext.Reader) (ResurrectionPolicy, error) {
	var p ResurrectionPolicy
	var seen jsontext.Fields
	const fPolicy jsontext.Fields = 1
	err := r.Members(func(key []byte) error {
		if string(key) != "policy" {
			return r.UnknownKey(key)
		}
		err := seen.See(r, fPolicy, key)
		if err == nil {
			p, err = readParsed(r, ParseResurrectionPolicy)
		}
		return jsontext.At(err, "policy")
	})
	if err != nil {
		return p, err
	}
	return p, seen.Require(r, fPolicy, "policy")
}

// readParsed reads a string and parses it with parse (a column type name,
// a resurrection policy name); a parse error is reported at the string.
func readParsed[T any](r *jsontext.Reader, parse func(string) (T, error)) (T, error) {
	var zero T
	start := r.Pos
	s, err := r.Str()
	if err != nil {
		return zero, err
	}
	v, err := parse(s)
	if err != nil {
		return zero, r.FailAt(start, "%v", err)
	}
	return v, nil
}

// ReadTableDefJSON reads a table definition. In canonical form (the ddl of a
// create_table migration) it is {"name","columns":[ColumnDef…],
// "primaryKey":[…],"indexes"?:[IndexDef…],"coerce"?:bool}. Otherwise
// (wire.ParseSchema's declaration form) name may be given by the enclosing key instead (name !=
// ""), columns may be an object of name → type or column object,
// primaryKey a single string, indexes an object of name → columns,
// primaryKey may be omitted, and "allowResurrection": bool declares the
// table's resurrection policy (TableDef.Resurrection).
func ReadTableDefJSON(r *jsontext.Reader, name string, canonical bool) (TableDef, error) {
	t := TableDef{Name: name}
	var seen jsontext.Fields
	const (
		fName jsontext.Fields = 1 << iota
		fColumns
		fPK
		fIndexes
		fCoerce
		fResurrection
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.See(r, fName, key); err == nil {
				t.Name, err = readDefName(r, name)
			}
		case "allowResurrection":
			if canonical {
				// A create_table's ddl carries no policy: it travels as
				// set_resurrection_policy.
				return r.UnknownKey(key)
			}
			if err = seen.See(r, fResurrection, key); err == nil {
				t.Resurrection, err = readAllowResurrection(r)
			}
		case "columns":
			if err = seen.See(r, fColumns, key); err == nil {
				t.Columns, err = readColumnDefs(r, canonical)
			}
		case "primaryKey":
			if err = seen.See(r, fPK, key); err == nil {
				t.PrimaryKey, err = readPrimaryKey(r, canonical)
			}
		case "indexes":
			if err = seen.See(r, fIndexes, key); err == nil {
				t.Indexes, err = readIndexDefs(r, canonical)
			}
		case "coerce":
			if err = seen.See(r, fCoerce, key); err == nil {
				t.Coerce, err = r.Boolean()
			}
		default:
			return r.UnknownKey(key)
		}
		return jsontext.At(err, string(key))
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
	return t, seen.Require(r, need, "name", "columns", "primaryKey")
}

// readDefName reads the "name" of a table, column or index definition: a
// non-empty string, equal to key when the enclosing key names the
// definition too (key != "").
func readDefName(r *jsontext.Reader, key string) (string, error) {
	start := r.Pos
	n, err := r.NonEmptyStr()
	if err == nil && key != "" && n != key {
		err = r.FailAt(start, "name %q differs from its key %q", n, key)
	}
	return n, err
}

// readAllowResurrection reads the declaration form's "allowResurrection":
// true declares ResurrectionAllowed, false DeleteWins.
func readAllowResurrection(r *jsontext.Reader) (ResurrectionPolicy, error) {
	allow, err := r.Boolean()
	switch {
	case err != nil:
		return ResurrectionUndeclared, err
	case allow:
		return ResurrectionAllowed, nil
	default:
		return DeleteWins, nil
	}
}

// readPrimaryKey reads a table's primary key: an array of column names,
// or (not canonical) a single one.
func readPrimaryKey(r *jsontext.Reader, canonical bool) ([]string, error) {
	if canonical || r.Peek() != '"' {
		return ReadNamesJSON(r)
	}
	k, err := r.NonEmptyStr()
	return []string{k}, err
}

// readDefs reads the column or index definitions (what) of a table: an
// array of definition objects (readDef), or (not canonical) an object of
// name → definition (keyed), in order, its names non-empty and distinct.
func readDefs[D any](r *jsontext.Reader, canonical bool, what string, readDef func(*jsontext.Reader, string) (D, error), keyed func(name string) (D, error)) ([]D, error) {
	var out []D
	if !canonical && r.Peek() == '{' {
		seen := map[string]bool{}
		err := r.Members(func(key []byte) error {
			k := string(key)
			if k == "" {
				return r.Fail("empty %s name", what)
			}
			if seen[k] {
				return r.Fail("duplicate %s %q", what, k)
			}
			seen[k] = true
			d, err := keyed(k)
			out = append(out, d)
			return jsontext.AtKey(err, k)
		})
		return out, err
	}
	err := elementsAt(r, func(int) error {
		d, err := readDef(r, "")
		out = append(out, d)
		return err
	})
	return out, err
}

// readColumnDefs reads the columns of a table: an array of column objects, or
// (not canonical) an object of name → type name or column object, in order.
func readColumnDefs(r *jsontext.Reader, canonical bool) ([]ColumnDef, error) {
	return readDefs(r, canonical, "column", readColumnDef, func(name string) (ColumnDef, error) {
		if r.Peek() != '"' {
			return readColumnDef(r, name)
		}
		k, err := readParsed(r, ParseKind)
		return ColumnDef{Name: name, Type: k}, err
	})
}

// readColumnDef reads {"name","type","notNull"?,"default"?,"coerce"?}; name
// may come from the enclosing key instead (name != "").
func readColumnDef(r *jsontext.Reader, name string) (ColumnDef, error) {
	c := ColumnDef{Name: name}
	var seen jsontext.Fields
	const (
		fName jsontext.Fields = 1 << iota
		fType
		fNotNull
		fDefault
		fCoerce
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.See(r, fName, key); err == nil {
				c.Name, err = readDefName(r, name)
			}
		case "type":
			if err = seen.See(r, fType, key); err == nil {
				c.Type, err = readParsed(r, ParseKind)
			}
		case "notNull":
			if err = seen.See(r, fNotNull, key); err == nil {
				c.NotNull, err = r.Boolean()
			}
		case "default":
			if err = seen.See(r, fDefault, key); err == nil {
				c.Default, err = ReadValueJSON(r, nil)
				c.HasDefault = true
			}
		case "coerce":
			if err = seen.See(r, fCoerce, key); err == nil {
				c.Coerce, err = r.Boolean()
			}
		default:
			return r.UnknownKey(key)
		}
		return jsontext.At(err, string(key))
	})
	if err != nil {
		return c, err
	}
	need := fType
	if name == "" {
		need |= fName
	}
	return c, seen.Require(r, need, "name", "type")
}

// readIndexDefs reads an array of index objects, or (not canonical) an object
// of index name → array of column names (or index object).
func readIndexDefs(r *jsontext.Reader, canonical bool) ([]IndexDef, error) {
	return readDefs(r, canonical, "index", readIndexDef, func(name string) (IndexDef, error) {
		if r.Peek() == '{' {
			return readIndexDef(r, name)
		}
		cols, err := ReadNamesJSON(r)
		return IndexDef{Name: name, Columns: cols}, err
	})
}

// readIndexDef reads {"name","columns":[…]}; name may come from the enclosing
// key instead (name != "").
func readIndexDef(r *jsontext.Reader, name string) (IndexDef, error) {
	ix := IndexDef{Name: name}
	var seen jsontext.Fields
	const (
		fName jsontext.Fields = 1 << iota
		fColumns
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			if err = seen.See(r, fName, key); err == nil {
				ix.Name, err = readDefName(r, name)
			}
		case "columns":
			if err = seen.See(r, fColumns, key); err == nil {
				ix.Columns, err = ReadNamesJSON(r)
			}
		default:
			return r.UnknownKey(key)
		}
		return jsontext.At(err, string(key))
	})
	if err != nil {
		return ix, err
	}
	need := fColumns
	if name == "" {
		need |= fName
	}
	return ix, seen.Require(r, need, "name", "columns")
}

// elementsAt iterates over an array, calling fn at each element with its
// index; fn must consume the element. An error's path gets the index.
func elementsAt(r *jsontext.Reader, fn func(i int) error) error {
	return r.Elements(func(i int) error {
		if err := fn(i); err != nil {
			return jsontext.AtIndex(err, i)
		}
		return nil
	})
}
