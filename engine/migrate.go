package engine

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

// table is the compiled form of one table of the effective schema.
type table struct {
	// def.Name is the table's identity: the name it was created with
	// (of its class's root, see schemaState.alias), under which its rows
	// are stored and its changes and migrations travel.
	def TableDef
	key []byte // layout.TableKey(def.Name)
	// name is its current name (rename_table), def.Name when never
	// renamed: the name of the local API, queries and events.
	name  string
	cols  map[string]*ColumnDef
	names []string // the column names, sorted
	// byName lists the indexes of def.Columns in name order; nil if two
	// columns share a name.
	byName  []int
	pkCols  []string
	pkDefs  []*ColumnDef
	indexes []*compiledIndex
	// autoID: the key is the single text column "id", filled with a UUIDv7
	// when a write omits it.
	autoID bool
	// asReceived: values from peers are stored exactly as received (the
	// schema-less relay), not normalized to the column types.
	asReceived bool
	// resurrect: the table's resurrection policy (def.Resurrection, folded
	// from set_resurrection_policy migrations) is ResurrectionAllowed: a
	// row with cells written after its tombstone is live.
	resurrect bool
	// policyHLC is the HLC of the migration that fixed the policy (zero
	// when undeclared), for error messages.
	policyHLC HLC
	// dropped are the table's retired columns (drop_column), each with the
	// lowest HLC that dropped it; nil when none. Their cells are neither
	// stored nor read, and changes for them are discarded.
	dropped map[string]HLC
	// droppedIdx are the table's retired indexes (drop_index).
	droppedIdx map[string]HLC
	// altered are the columns an alter_column changed, with the
	// attributes it changed (alteredNotNull, alteredDefault), nil when
	// none: local writes take those attributes from here, not from the
	// local declaration, and the others from the declaration
	// (writeTx.tables, withAltered).
	altered map[string]alteredAttrs
	// alt caches withAltered's last answer for this table: the
	// declaration it was given and the table it made.
	altMu          sync.Mutex
	altFrom, altTo *table
}

type compiledIndex struct {
	def    IndexDef
	prefix []byte // layout.TableKey ‖ name
}

func compileTable(def TableDef) *table {
	t := &table{def: def, key: layout.TableKey(def.Name), name: def.Name, cols: make(map[string]*ColumnDef, len(def.Columns))}
	for i := range t.def.Columns {
		t.cols[t.def.Columns[i].Name] = &t.def.Columns[i]
		t.names = append(t.names, t.def.Columns[i].Name)
	}
	sort.Strings(t.names)
	t.byName = make([]int, len(t.def.Columns))
	for i := range t.byName {
		t.byName[i] = i
	}
	sort.Slice(t.byName, func(a, b int) bool { return t.def.Columns[t.byName[a]].Name < t.def.Columns[t.byName[b]].Name })
	for i := 1; i < len(t.names); i++ {
		if t.names[i] == t.names[i-1] {
			t.byName = nil
			break
		}
	}
	t.pkCols = t.def.PrimaryKey
	for _, n := range t.pkCols {
		t.pkDefs = append(t.pkDefs, t.cols[n])
	}
	t.resurrect = def.Resurrection == ResurrectionAllowed
	t.autoID = len(t.pkCols) == 1 && t.pkCols[0] == "id" && t.pkDefs[0] != nil && t.pkDefs[0].Type == KindText
	for _, ix := range t.def.Indexes {
		p := append(slices.Clone(t.key), keyenc.AppendValue(nil, Text(ix.Name))...)
		t.indexes = append(t.indexes, &compiledIndex{def: ix, prefix: p})
	}
	return t
}

// schemaState is the effective schema: the fold, in HLC order, of every
// schema migration this replica holds (its own and its peers'). Folding in
// HLC order makes it independent of arrival order: the first definition of
// a table, column or index (lowest HLC) wins, later duplicates are no-ops.
type schemaState struct {
	version    uint64
	migrations []SchemaMigration // HLC order
	tables     map[string]*table
	// dropped are the retired tables (drop_table), each with the lowest
	// HLC that dropped it: no longer in tables, whatever defined them.
	// Keyed by root (alias).
	dropped map[string]HLC
	// alias maps every name of a class of names a rename_table joined
	// (the renamed table's identity, every name it was renamed to, and
	// the tables created under one of those names) to the class's root,
	// the identity its rows are stored under (rename.go); nil when no
	// table was ever renamed. A name not in it is its own root.
	alias map[string]string
	// byName maps a renamed table's current name to it (nil when none
	// was renamed): tables is keyed by root.
	byName map[string]*table
}

// resolve returns the root of name's class (itself when no rename joined
// it to another name).
func (s *schemaState) resolve(name string) string {
	if s != nil {
		if r, ok := s.alias[name]; ok {
			return r
		}
	}
	return name
}

// droppedTable returns the HLC of the drop_table that retired name (or
// any name of its class), and whether one did.
func (s *schemaState) droppedTable(name string) (HLC, bool) {
	if s == nil {
		return HLC{}, false
	}
	h, ok := s.dropped[s.resolve(name)]
	return h, ok
}

// table returns the table name identifies as the sync protocol does: by
// any name of its class (its identity, a former name, its current name).
// The local API looks tables up by their current name only (named).
func (s *schemaState) table(name string) *table {
	if s == nil {
		return nil
	}
	return s.tables[s.resolve(name)]
}

// names returns the table identities (the keys of tables), sorted.
func (s *schemaState) names() []string {
	out := make([]string, 0, len(s.tables))
	for n := range s.tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// foldSchema folds migrations into a schema; asReceived marks the tables of
// a schema-less replica (values from peers are kept as received).
//
// Drops (drop_table, drop_column, drop_index) follow "most destructive
// wins" (docs/design.md § Schema migrations): a dropped name is retired for
// good, so every definition of it, before or after the drop in HLC order,
// has no effect, and the result depends only on the set of migrations. A
// drop_column of a key column has no effect (a key cannot change); an
// index over a dropped column is gone with it.
func foldSchema(version uint64, migs []SchemaMigration, asReceived bool) *schemaState {
	sort.Slice(migs, func(i, j int) bool { return migs[i].HLC.Less(migs[j].HLC) })
	orig := migs // kept as they are: a later fold starts from them
	alias := foldAliases(migs)
	resolve := func(n string) string {
		if r, ok := alias[n]; ok {
			return r
		}
		return n
	}
	if alias != nil {
		// Every migration applies to its table's class, named by its
		// root; the caller's migrations are left as they are.
		rs := make([]SchemaMigration, len(migs))
		for i, m := range migs {
			if r := resolve(m.TableName); r != m.TableName {
				if m.Type == CreateTable && m.Table != nil {
					d := cloneTableDef(*m.Table)
					d.Name = r
					m.Table = &d
				}
				m.TableName = r
			}
			rs[i] = m
		}
		migs = rs
	}
	droppedTables := map[string]HLC{}
	droppedCols := map[string]map[string]HLC{}
	droppedIdx := map[string]map[string]HLC{}
	retire := func(m map[string]map[string]HLC, table, name string, h HLC) {
		if m[table] == nil {
			m[table] = map[string]HLC{}
		}
		if _, ok := m[table][name]; !ok {
			m[table][name] = h // HLC order: the first is the lowest
		}
	}
	for _, m := range migs {
		switch m.Type {
		case DropTable:
			if _, ok := droppedTables[m.TableName]; !ok {
				droppedTables[m.TableName] = m.HLC
			}
		case DropColumn:
			retire(droppedCols, m.TableName, m.Name, m.HLC)
		case DropIndex:
			retire(droppedIdx, m.TableName, m.Name, m.HLC)
		}
	}
	defs := map[string]*TableDef{}
	var order []string
	for _, m := range migs {
		if _, ok := droppedTables[m.TableName]; ok {
			continue
		}
		switch m.Type {
		case CreateTable:
			if m.Table == nil {
				continue
			}
			cur, ok := defs[m.TableName]
			if !ok {
				d := cloneTableDef(*m.Table)
				defs[m.TableName] = &d
				order = append(order, m.TableName)
				continue
			}
			for _, c := range m.Table.Columns {
				addColumnDef(cur, c)
			}
			for _, ix := range m.Table.Indexes {
				addIndexDef(cur, ix)
			}
		case AddColumn:
			if cur, ok := defs[m.TableName]; ok && m.Column != nil {
				addColumnDef(cur, *m.Column)
			}
		case AddIndex:
			if cur, ok := defs[m.TableName]; ok && m.Index != nil {
				addIndexDef(cur, *m.Index)
			}
		}
	}
	// Resurrection policies, after every table exists: a table's first
	// declaration (lowest HLC) is its policy, whatever the order in which
	// the migrations arrived; later ones (another app version's
	// contradicting declaration) have no effect. The lowest HLC, as for
	// every other definition the fold keeps: a policy, once a device has
	// declared it and written under it, is never changed behind its back.
	altered := foldAlters(defs, migs)
	policyHLC := map[string]HLC{}
	for _, m := range migs {
		if m.Type != SetResurrectionPolicy {
			continue
		}
		if cur, ok := defs[m.TableName]; ok && cur.Resurrection == ResurrectionUndeclared {
			cur.Resurrection = m.Resurrection
			policyHLC[m.TableName] = m.HLC
		}
	}
	st := &schemaState{version: version, migrations: orig, tables: make(map[string]*table, len(defs)), alias: alias}
	if len(droppedTables) > 0 {
		st.dropped = droppedTables
	}
	for _, n := range order {
		d := defs[n]
		cols := retireColumns(d, droppedCols[n])
		ixs := retireIndexes(d, droppedIdx[n])
		st.tables[n] = compileTable(*d)
		st.tables[n].asReceived = asReceived
		st.tables[n].policyHLC = policyHLC[n]
		st.tables[n].dropped = cols
		st.tables[n].droppedIdx = ixs
		for c, attrs := range altered[n] {
			if _, gone := cols[c]; !gone {
				if st.tables[n].altered == nil {
					st.tables[n].altered = map[string]alteredAttrs{}
				}
				st.tables[n].altered[c] = attrs
			}
		}
	}
	if alias != nil {
		nameTables(st, migs)
	}
	return st
}

// foldAlters applies the alter_column migrations of migs (HLC order) to the
// column definitions of defs, after every definition: per attribute
// (notNull, the default) the alter with the highest HLC wins, whatever the
// order of arrival. An alter has no effect on a key column, a column or
// table no definition holds, or (its default only) when its default does
// not fit the column's type; a null default on a column left notNull is no
// default. A dropped column's alters go with it (retireColumns). It
// returns the columns altered, per table, with the attributes altered.
func foldAlters(defs map[string]*TableDef, migs []SchemaMigration) map[string]map[string]alteredAttrs {
	var out map[string]map[string]alteredAttrs
	for _, m := range migs {
		if m.Type != AlterColumn || m.Alter == nil {
			continue
		}
		d := defs[m.TableName]
		if d == nil || slices.Contains(d.PrimaryKey, m.Name) {
			continue
		}
		i := slices.IndexFunc(d.Columns, func(c ColumnDef) bool { return c.Name == m.Name })
		if i < 0 {
			continue
		}
		c := &d.Columns[i]
		a := m.Alter
		var changed alteredAttrs
		if a.SetNotNull {
			c.NotNull = a.NotNull
			changed |= alteredNotNull
		}
		if a.SetDefault {
			v := model.NormalizeRemote(c, a.Default)
			if !a.HasDefault || model.WrongType(c, v) == "" {
				c.HasDefault, c.Default = a.HasDefault, v
				if !a.HasDefault {
					c.Default = Null
				}
				changed |= alteredDefault
			}
		}
		if changed == 0 {
			continue
		}
		if out == nil {
			out = map[string]map[string]alteredAttrs{}
		}
		if out[m.TableName] == nil {
			out[m.TableName] = map[string]alteredAttrs{}
		}
		out[m.TableName][m.Name] |= changed
	}
	for t, cols := range out {
		d := defs[t]
		for i := range d.Columns {
			if c := &d.Columns[i]; cols[c.Name] != 0 && c.NotNull && c.HasDefault && c.Default.IsNull() {
				c.HasDefault = false
			}
		}
	}
	return out
}

// retireColumns removes from d the columns of dropped but its key columns,
// and the indexes over a removed column; it returns the retired columns
// (nil if none).
func retireColumns(d *TableDef, dropped map[string]HLC) map[string]HLC {
	var out map[string]HLC
	for n, h := range dropped {
		if !slices.Contains(d.PrimaryKey, n) {
			if out == nil {
				out = map[string]HLC{}
			}
			out[n] = h
		}
	}
	if out == nil {
		return nil
	}
	d.Columns = slices.DeleteFunc(d.Columns, func(c ColumnDef) bool { _, gone := out[c.Name]; return gone })
	d.Indexes = slices.DeleteFunc(d.Indexes, func(ix IndexDef) bool {
		return slices.ContainsFunc(ix.Columns, func(c string) bool { _, gone := out[c]; return gone })
	})
	return out
}

// retireIndexes removes from d the indexes of dropped and returns them (nil
// if none).
func retireIndexes(d *TableDef, dropped map[string]HLC) map[string]HLC {
	if len(dropped) == 0 {
		return nil
	}
	d.Indexes = slices.DeleteFunc(d.Indexes, func(ix IndexDef) bool { _, gone := dropped[ix.Name]; return gone })
	return dropped
}

func addColumnDef(t *TableDef, c ColumnDef) {
	for _, x := range t.Columns {
		if x.Name == c.Name {
			return
		}
	}
	t.Columns = append(t.Columns, c)
}

func addIndexDef(t *TableDef, ix IndexDef) {
	for _, x := range t.Indexes {
		if x.Name == ix.Name {
			return
		}
	}
	for _, c := range ix.Columns {
		found := false
		for _, x := range t.Columns {
			if x.Name == c {
				found = true
			}
		}
		if !found {
			return
		}
	}
	t.Indexes = append(t.Indexes, IndexDef{Name: ix.Name, Columns: slices.Clone(ix.Columns)})
}

func cloneTableDef(d TableDef) TableDef {
	d.Columns = slices.Clone(d.Columns)
	d.PrimaryKey = slices.Clone(d.PrimaryKey)
	d.Indexes = slices.Clone(d.Indexes)
	for i := range d.Indexes {
		d.Indexes[i].Columns = slices.Clone(d.Indexes[i].Columns)
	}
	return d
}

// diffSchema returns the migrations (unstamped) that bring the effective
// schema cur up to the declared one, or an error if the declaration
// contradicts what the replica already holds (a column's type or the
// primary key changed: Replica cannot migrate data in place).
func diffSchema(cur *schemaState, declared Schema) ([]SchemaMigration, error) {
	var out []SchemaMigration
	for _, d := range declared.Tables {
		if _, gone := cur.droppedTable(d.Name); gone {
			// Retired for good (most destructive wins): declaring it
			// again creates nothing; writes to it are refused.
			continue
		}
		t, err := cur.named(d.Name)
		if err != nil {
			// A former name of a renamed table (rename_table): declaring
			// it creates nothing; writes to it are refused, saying the
			// table's current name.
			continue
		}
		if t == nil {
			def := cloneTableDef(d)
			def.Resurrection = ResurrectionUndeclared // it travels in its own migration
			out = append(out, SchemaMigration{Type: CreateTable, TableName: d.Name, Table: &def})
			if d.Resurrection != ResurrectionUndeclared {
				out = append(out, SchemaMigration{Type: SetResurrectionPolicy, TableName: d.Name, Resurrection: d.Resurrection})
			}
			continue
		}
		switch have := t.def.Resurrection; {
		case d.Resurrection == ResurrectionUndeclared || d.Resurrection == have:
		case have == ResurrectionUndeclared:
			out = append(out, SchemaMigration{Type: SetResurrectionPolicy, TableName: t.def.Name, Resurrection: d.Resurrection})
		default:
			return nil, &SchemaError{Table: d.Name, Reason: fmt.Sprintf(
				"resurrection policy is declared %s but the database's policy for this table is %s (declared at %s); a table's resurrection policy cannot change once declared — open with the database's policy, or use a new table",
				describePolicy(d.Resurrection), describePolicy(have), t.policyHLC)}
		}
		if !slices.Equal(t.pkCols, d.PrimaryKey) {
			return nil, &SchemaError{Table: d.Name, Reason: fmt.Sprintf(
				"primary key is declared (%v) but the replica holds the table with primary key (%v); a primary key cannot change — use a new table or a new replica name",
				d.PrimaryKey, t.pkCols)}
		}
		for i := range d.Columns {
			c := d.Columns[i]
			have := t.cols[c.Name]
			if _, gone := t.dropped[c.Name]; gone {
				continue // retired: writes naming it are refused
			}
			if have == nil {
				col := c
				out = append(out, SchemaMigration{Type: AddColumn, TableName: t.def.Name, Column: &col})
				continue
			}
			if have.Type != c.Type {
				return nil, &SchemaError{Table: d.Name, Column: c.Name, Reason: fmt.Sprintf(
					"declared as %s but the replica holds it as %s; a column's type cannot change — add a new column instead",
					c.Type, have.Type)}
			}
		}
		for _, ix := range d.Indexes {
			if _, gone := t.droppedIdx[ix.Name]; gone || slices.ContainsFunc(ix.Columns, func(c string) bool { _, gone := t.dropped[c]; return gone }) {
				continue // retired, or over a retired column
			}
			found := false
			for _, x := range t.def.Indexes {
				if x.Name == ix.Name {
					found = true
					if !slices.Equal(x.Columns, ix.Columns) {
						return nil, &SchemaError{Table: d.Name, Index: ix.Name, Reason: fmt.Sprintf(
							"declared over %v but the replica holds it over %v; give the changed index a new name", ix.Columns, x.Columns)}
					}
				}
			}
			if !found {
				x := IndexDef{Name: ix.Name, Columns: slices.Clone(ix.Columns)}
				out = append(out, SchemaMigration{Type: AddIndex, TableName: t.def.Name, Index: &x})
			}
		}
	}
	return out, nil
}

// validateMigration checks a migration that arrived from a peer.
func validateMigration(m *SchemaMigration) error {
	if !ValidName(m.TableName) {
		return malformed("schema migration for invalid table name %q", m.TableName)
	}
	if m.Type != SetResurrectionPolicy && m.Resurrection != ResurrectionUndeclared {
		return malformed("%s migration for %q carries a resurrection policy", m.Type, m.TableName)
	}
	if m.Name != "" && m.Type != DropColumn && m.Type != DropIndex && m.Type != AlterColumn && m.Type != RenameTable {
		return malformed("%s migration for %q carries a dropped name", m.Type, m.TableName)
	}
	if m.Alter != nil && m.Type != AlterColumn {
		return malformed("%s migration for %q carries a column alteration", m.Type, m.TableName)
	}
	switch m.Type {
	case AlterColumn:
		if m.Table != nil || m.Column != nil || m.Index != nil {
			return malformed("alter_column migration for %q carries a table, column or index definition", m.TableName)
		}
		if !ValidName(m.Name) {
			return malformed("alter_column migration for %q: invalid column name %q", m.TableName, m.Name)
		}
		if a := m.Alter; a == nil || (!a.SetNotNull && !a.SetDefault) || (!a.HasDefault && !a.Default.IsNull()) || (a.HasDefault && !a.SetDefault) {
			return malformed("alter_column migration for %s.%s changes nothing or carries an inconsistent default", m.TableName, m.Name)
		}
	case DropTable, DropColumn, DropIndex, RenameTable:
		if m.Table != nil || m.Column != nil || m.Index != nil {
			return malformed("%s migration for %q carries a table, column or index definition", m.Type, m.TableName)
		}
		if m.Type == RenameTable && m.Name == m.TableName {
			// Harmless (it names the table by its identity) but never
			// recorded: RenameTable refuses it.
			return nil
		}
		if m.Type != DropTable && !ValidName(m.Name) {
			return malformed("%s migration for %q: invalid name %q", m.Type, m.TableName, m.Name)
		}
	case SetResurrectionPolicy:
		if m.Table != nil || m.Column != nil || m.Index != nil {
			return malformed("set_resurrection_policy migration for %q carries a table, column or index definition", m.TableName)
		}
		if m.Resurrection != DeleteWins && m.Resurrection != ResurrectionAllowed {
			return malformed("set_resurrection_policy migration for %q declares policy %s (want delete-wins or allow-resurrection)", m.TableName, m.Resurrection)
		}
	case CreateTable:
		if m.Table == nil || m.Column != nil || m.Index != nil {
			return malformed("create_table migration for %q without exactly a table definition", m.TableName)
		}
		if m.Table.Resurrection != ResurrectionUndeclared {
			return malformed("create_table migration for %q carries a resurrection policy (it travels as set_resurrection_policy)", m.TableName)
		}
		if m.Table.Name != m.TableName {
			return malformed("create_table migration names table %q but defines %q", m.TableName, m.Table.Name)
		}
		norm, err := (Schema{Tables: []TableDef{*m.Table}}).Validate()
		if err != nil {
			return fmt.Errorf("%w: create_table %q: %v", ErrMalformed, m.TableName, err)
		}
		if len(norm.Tables[0].PrimaryKey) != len(m.Table.PrimaryKey) || len(norm.Tables[0].Columns) != len(m.Table.Columns) {
			return malformed("create_table %q must list its key and every column explicitly", m.TableName)
		}
		def := norm.Tables[0]
		m.Table = &def
	case AddColumn:
		if m.Column == nil || m.Table != nil || m.Index != nil {
			return malformed("add_column migration for %q without exactly a column definition", m.TableName)
		}
		probe := TableDef{Name: m.TableName, Columns: []ColumnDef{{Name: "__probe_key", Type: KindText}, *m.Column}, PrimaryKey: []string{"__probe_key"}}
		norm, err := (Schema{Tables: []TableDef{probe}}).Validate()
		if err != nil && m.Column.Name != "__probe_key" {
			return fmt.Errorf("%w: add_column %s.%s: %v", ErrMalformed, m.TableName, m.Column.Name, err)
		}
		if err == nil {
			c := norm.Tables[0].Columns[1]
			m.Column = &c
		}
	case AddIndex:
		if m.Index == nil || m.Table != nil || m.Column != nil {
			return malformed("add_index migration for %q without exactly an index definition", m.TableName)
		}
		if !ValidName(m.Index.Name) || len(m.Index.Columns) == 0 {
			return malformed("add_index %s.%q: invalid name or no columns", m.TableName, m.Index.Name)
		}
		for _, c := range m.Index.Columns {
			if !ValidName(c) {
				return malformed("add_index %s.%s: invalid column name %q", m.TableName, m.Index.Name, c)
			}
		}
	default:
		return malformed("unknown schema migration type %q", m.Type)
	}
	return nil
}

// Stored migrations (bucket migrations, key class ‖ HLC). Storage format 2
// stores a migration in its one JSON form, model's (model.AppendMigrationJSON,
// the form the sync protocol carries it in), hlc included: the stored hlc
// must equal the key's.
//
//	{"type":"create_table","table":"trips","ddl":{"name":"trips","columns":[…],
//	  "primaryKey":["id"]},"hlc":"<40 base64 characters>"}
//
// Format 1 stored the legacy "def" form (storedMigration below, with
// defaults in the row record's value encoding). Open rewrites a format-1
// store's migrations to the format-2 form (upgradeFormat1); only that
// upgrade reads the legacy form.

// storedJSONErrors makes the errors of a stored migration's Reader: they
// carry the JSON path (jsontext.PathError), and decodeMigration wraps them
// in ErrMalformed.
var storedJSONErrors jsontext.ErrorMaker = jsontext.PathErrors{}

// encodeMigration returns the stored form of m (format 2). Errors match
// model.ErrUnencodable: a migration the JSON form cannot carry, which
// validateMigration and diffSchema never let through.
func encodeMigration(m *SchemaMigration) ([]byte, error) {
	b, err := model.AppendMigrationJSON(nil, m)
	if err != nil {
		return nil, fmt.Errorf("store schema migration for %q: %w", m.TableName, err)
	}
	return b, nil
}

// migrationKeyHLC returns the HLC of a migrations-bucket key.
func migrationKeyHLC(key []byte) (HLC, error) {
	if len(key) != 1+HLCSize {
		return HLC{}, malformed("migration key length %d", len(key))
	}
	return HLCFromBytes(key[1:])
}

// decodeMigration decodes a stored migration (format 2). Errors match
// ErrMalformed.
func decodeMigration(key, val []byte) (SchemaMigration, error) {
	h, err := migrationKeyHLC(key)
	if err != nil {
		return SchemaMigration{}, err
	}
	// Nesting as the wire allows it: a migration's structure plus a
	// default of at most MaxJSONDepth.
	r := jsontext.Reader{Data: val, MaxDepth: 2 * MaxJSONDepth, Errors: storedJSONErrors}
	err = r.CheckUTF8()
	var m SchemaMigration
	if err == nil {
		m, err = model.ReadMigrationJSON(&r)
	}
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, model.ErrUnknownMigrationType) {
		// Another tab (or an earlier run) of a newer version of Replica
		// stored it: this one cannot read the schema, and must be
		// updated (a page: reloaded), not told the data is corrupt.
		return SchemaMigration{}, fmt.Errorf("%w: the database holds a schema migration of a type this version of Replica does not know, written by a newer version (update it; in a browser, reload the page): %v", ErrStorageFormat, err)
	}
	if err != nil {
		return SchemaMigration{}, fmt.Errorf("%w: stored migration: %v", ErrMalformed, err)
	}
	if m.HLC != h {
		return SchemaMigration{}, malformed("stored migration's hlc %s differs from its key's %s", m.HLC, h)
	}
	normalizeDefaults(&m)
	return m, nil
}

// normalizeDefaults gives the defaults of a decoded migration their
// column's kind: the JSON form writes a timestamp as a number, which
// reads back as an integer (model.NormalizeRemote, as for a value from a
// peer; every other kind reads back as itself).
func normalizeDefaults(m *SchemaMigration) {
	if m.Column != nil && m.Column.HasDefault {
		m.Column.Default = model.NormalizeRemote(m.Column, m.Column.Default)
	}
	if m.Table != nil {
		for i := range m.Table.Columns {
			if c := &m.Table.Columns[i]; c.HasDefault {
				c.Default = model.NormalizeRemote(c, c.Default)
			}
		}
	}
}

// upgradeFormat1 rewrites every stored migration of a format-1 store from
// the legacy "def" form to the format-2 form and stamps the store format
// 2, in tx (the Update that opens the store: the upgrade is all or
// nothing). Migrations are few (one per table, column, index and policy
// ever declared), so they are rewritten at once.
func upgradeFormat1(tx kv.Tx) error {
	type entry struct {
		key []byte
		m   SchemaMigration
	}
	var all []entry
	var derr error
	err := tx.Scan(layout.BucketMigrations, kv.Range{}, func(k, v []byte) bool {
		m, err := decodeLegacyMigration(k, v)
		if err != nil {
			derr = err
			return false
		}
		all = append(all, entry{k, m})
		return true
	})
	if err == nil {
		err = derr
	}
	for i := 0; err == nil && i < len(all); i++ {
		var b []byte
		if b, err = encodeMigration(&all[i].m); err == nil {
			err = tx.Put(layout.BucketMigrations, all[i].key, b)
		}
	}
	if err == nil {
		err = tx.Put(layout.BucketMeta, layout.MetaFormat, []byte(strconv.Itoa(StorageFormat)))
	}
	if err != nil {
		return fmt.Errorf("upgrade storage format 1 to %d: %w", StorageFormat, err)
	}
	return nil
}

// storedMigration is the legacy stored form of a migration (storage
// format 1), which encoding/json wrote for these field tags, in field
// order, defaults in the row record's value encoding:
//
//	{"type":"create_table","table":"trips",
//	 "def":{"name":"trips","columns":[{"name":"id","type":"text","notNull":true,
//	   "hasDefault":true,"default":"<base64>","coerce":true}],"pk":["id"],
//	   "indexes":[{"name":"by_day","columns":["day"]}],"coerce":true},
//	 "column":{…},"index":{…}}
//	{"type":"set_resurrection_policy","table":"trips","policy":"allow-resurrection"}
//
// Members tagged omitempty were left out when false, empty or nil; a nil
// slice without omitempty was null. Only upgradeFormat1 reads it
// (decodeLegacyMigration; json.go's jsonObject reads members as
// encoding/json did).
type storedMigration struct {
	Type   MigrationType `json:"type"`
	Table  string        `json:"table"`
	Def    *storedTable  `json:"def,omitempty"`
	Column *storedColumn `json:"column,omitempty"`
	Index  *storedIndex  `json:"index,omitempty"`
	Policy string        `json:"policy,omitempty"` // ResurrectionPolicy.String
}

type storedIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
}

type storedTable struct {
	Name       string         `json:"name"`
	Columns    []storedColumn `json:"columns"`
	PrimaryKey []string       `json:"pk"`
	Indexes    []storedIndex  `json:"indexes,omitempty"`
	Coerce     bool           `json:"coerce,omitempty"`
}

type storedColumn struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	NotNull    bool   `json:"notNull,omitempty"`
	HasDefault bool   `json:"hasDefault,omitempty"`
	Default    []byte `json:"default,omitempty"`
	Coerce     bool   `json:"coerce,omitempty"`
}

func readStoredMigration(o jsonObject) (sm storedMigration, err error) {
	var typ string
	if typ, err = o.str("type"); err != nil {
		return sm, err
	}
	sm.Type = MigrationType(typ)
	if sm.Table, err = o.str("table"); err != nil {
		return sm, err
	}
	if def, err := o.obj("def"); err != nil {
		return sm, err
	} else if def != nil {
		if sm.Def, err = readStoredTable(def); err != nil {
			return sm, err
		}
	}
	if col, err := o.obj("column"); err != nil {
		return sm, err
	} else if col != nil {
		c, err := readStoredColumn(col)
		if err != nil {
			return sm, err
		}
		sm.Column = &c
	}
	if ix, err := o.obj("index"); err != nil {
		return sm, err
	} else if ix != nil {
		x, err := readStoredIndex(ix)
		if err != nil {
			return sm, err
		}
		sm.Index = &x
	}
	sm.Policy, err = o.str("policy")
	return sm, err
}

func readStoredIndex(o jsonObject) (x storedIndex, err error) {
	if x.Name, err = o.str("name"); err != nil {
		return x, err
	}
	x.Columns, err = o.strs("columns")
	return x, err
}

func readStoredTable(o jsonObject) (*storedTable, error) {
	t := &storedTable{}
	var err error
	if t.Name, err = o.str("name"); err != nil {
		return nil, err
	}
	cols, err := o.objs("columns")
	if err != nil {
		return nil, err
	}
	if cols != nil {
		t.Columns = make([]storedColumn, len(cols))
		for i, c := range cols {
			if t.Columns[i], err = readStoredColumn(c); err != nil {
				return nil, err
			}
		}
	}
	if t.PrimaryKey, err = o.strs("pk"); err != nil {
		return nil, err
	}
	ixs, err := o.objs("indexes")
	if err != nil {
		return nil, err
	}
	if ixs != nil {
		t.Indexes = make([]storedIndex, len(ixs))
		for i, x := range ixs {
			if t.Indexes[i], err = readStoredIndex(x); err != nil {
				return nil, err
			}
		}
	}
	t.Coerce, err = o.boolean("coerce")
	return t, err
}

func readStoredColumn(o jsonObject) (c storedColumn, err error) {
	if c.Name, err = o.str("name"); err != nil {
		return c, err
	}
	if c.Type, err = o.str("type"); err != nil {
		return c, err
	}
	if c.NotNull, err = o.boolean("notNull"); err != nil {
		return c, err
	}
	if c.HasDefault, err = o.boolean("hasDefault"); err != nil {
		return c, err
	}
	if c.Default, err = o.bytes("default"); err != nil {
		return c, err
	}
	c.Coerce, err = o.boolean("coerce")
	return c, err
}

func fromStoredIndexes(ix []storedIndex) []IndexDef {
	if ix == nil {
		return nil
	}
	out := make([]IndexDef, len(ix))
	for i, x := range ix {
		out[i] = IndexDef{Name: x.Name, Columns: x.Columns}
	}
	return out
}

func fromStoredColumn(sc storedColumn) (ColumnDef, error) {
	k, err := ParseKind(sc.Type)
	if err != nil {
		return ColumnDef{}, err
	}
	c := ColumnDef{Name: sc.Name, Type: k, NotNull: sc.NotNull, HasDefault: sc.HasDefault, Coerce: sc.Coerce}
	if sc.HasDefault {
		rd := rowrec.NewReader(sc.Default)
		c.Default = rd.Value()
		if rd.Err() != nil {
			return ColumnDef{}, rd.Err()
		}
	}
	return c, nil
}

// decodeLegacyMigration decodes a migration stored in the legacy form
// (storage format 1). Errors match ErrMalformed.
func decodeLegacyMigration(key, val []byte) (SchemaMigration, error) {
	h, err := migrationKeyHLC(key)
	if err != nil {
		return SchemaMigration{}, err
	}
	o, err := decodeJSONObject(val)
	if err != nil {
		return SchemaMigration{}, fmt.Errorf("%w: stored migration: %v", ErrMalformed, err)
	}
	sm, err := readStoredMigration(o)
	if err != nil {
		return SchemaMigration{}, fmt.Errorf("%w: stored migration: %v", ErrMalformed, err)
	}
	m := SchemaMigration{Type: sm.Type, TableName: sm.Table, HLC: h}
	if sm.Policy != "" {
		p, err := ParseResurrectionPolicy(sm.Policy)
		if err != nil {
			return m, fmt.Errorf("%w: stored migration: %v", ErrMalformed, err)
		}
		m.Resurrection = p
	}
	if sm.Index != nil {
		m.Index = &IndexDef{Name: sm.Index.Name, Columns: sm.Index.Columns}
	}
	if sm.Def != nil {
		td := &TableDef{Name: sm.Def.Name, PrimaryKey: sm.Def.PrimaryKey, Indexes: fromStoredIndexes(sm.Def.Indexes), Coerce: sm.Def.Coerce}
		for _, sc := range sm.Def.Columns {
			c, err := fromStoredColumn(sc)
			if err != nil {
				return m, err
			}
			td.Columns = append(td.Columns, c)
		}
		m.Table = td
	}
	if sm.Column != nil {
		c, err := fromStoredColumn(*sm.Column)
		if err != nil {
			return m, err
		}
		m.Column = &c
	}
	return m, nil
}
