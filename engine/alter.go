package engine

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/model"
)

// Altering a column's notNull and default (an alter_column migration;
// docs/design.md § Schema migrations). Per attribute, the alter_column
// with the highest HLC wins (foldAlters), so replicas that learn alters in
// any order agree. An alter changes what later local writes must satisfy
// and what a later insert that omits the column stores; it changes no row
// already held, on any replica (see Alteration).

// Alteration is what AlterColumn changes; a member left unset leaves its
// attribute as it is.
type Alteration struct {
	// NotNull, when non-nil, makes the column required (true) or
	// optional (false).
	NotNull *bool
	// SetDefault makes Default the column's default: converted to the
	// column's type as an inserted value is (nil is a null default, which
	// a notNull column refuses). DropDefault removes the default instead.
	SetDefault  bool
	Default     any
	DropDefault bool
	// Type, when not KindNull, must be the column's type: a type change
	// is refused (*SchemaError). It does not converge: a replica holds
	// the values that misfit the new type apart (held changes), while
	// column-level LWW has already discarded the values they superseded,
	// so replicas that learn the change at different moments would keep
	// different cells. Add a new column of the new type, copy the values
	// into it, and drop the old one (DropColumn) instead.
	Type Kind
}

// AlterColumn changes column of table's notNull and default (an
// alter_column migration, recorded and replicated like every migration).
// Per attribute, the latest alter (highest HLC) wins on every replica,
// whatever the order in which they learn them; an alter of a dropped
// column or table has no effect.
//
// Nothing already stored changes: rows holding null in a column made
// notNull keep it (nothing is lost), and later local writes must satisfy
// it (an insert without a value or a default, an update to null, are
// refused with a *ValidationError); as before, peers' facts are not
// checked against notNull (column-level merges produce partial rows). A
// new default applies to later inserts that omit the column. The altered
// attributes govern local writes even when the local declaration (Open's
// Schema) says otherwise: a declaration never alters a column, and Open
// records nothing for a notNull or default that differs from the
// database's.
//
// Errors: ErrUnknownTable; *SchemaError (matching ErrSchema) when the
// table has no such column, the column is part of the primary key, the
// alteration changes nothing or changes the type, sets and drops the
// default at once, gives a default that does not convert to the column's
// type, or would leave a notNull column with a null default; ErrClosed,
// and the store's.
func (e *Engine) AlterColumn(table, column string, change Alteration) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	lc, err := e.write(func(w *writeTx) error {
		a, err := checkAlter(w.schema, table, column, change)
		if err != nil {
			return err
		}
		// Named by the table's identity (a renamed table's too).
		return w.recordMigration(&SchemaMigration{Type: AlterColumn, TableName: w.schema.table(table).def.Name, Name: column, Alter: a})
	})
	if err != nil {
		return err
	}
	e.emitLocal(lc)
	return nil
}

// checkAlter checks change against the effective schema s and returns the
// alteration it records.
func checkAlter(s *schemaState, table, column string, change Alteration) (*ColumnAlter, error) {
	t, err := s.named(table)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if h, gone := s.droppedTable(table); gone {
			return nil, fmt.Errorf("%w: %q was dropped (drop_table at %s)", ErrUnknownTable, table, h)
		}
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, table)
	}
	fail := func(format string, args ...any) error {
		return &SchemaError{Table: table, Column: column, Reason: fmt.Sprintf(format, args...)}
	}
	c := t.cols[column]
	switch {
	case c == nil:
		if _, gone := t.dropped[column]; gone {
			return nil, fail("no such column to alter (it was dropped)")
		}
		return nil, fail("no such column to alter")
	case t.isKey(column):
		return nil, fail("a primary key column cannot be altered (it is always notNull and always given)")
	case change.Type != KindNull && change.Type != c.Type:
		return nil, fail("the type cannot change (%s to %s): a type change does not converge while values that misfit the new type are held and LWW has discarded the values they superseded — add a new column of type %s, copy the values, and drop this one",
			c.Type, change.Type, change.Type)
	case change.SetDefault && change.DropDefault:
		return nil, fail("an alteration sets the default or drops it, not both")
	case change.NotNull == nil && !change.SetDefault && !change.DropDefault:
		return nil, fail("the alteration changes nothing (give notNull, a default, or dropDefault)")
	}
	a := &ColumnAlter{}
	after := *c
	if change.NotNull != nil {
		a.SetNotNull, a.NotNull = true, *change.NotNull
		after.NotNull = a.NotNull
	}
	switch {
	case change.DropDefault:
		a.SetDefault = true
		after.HasDefault, after.Default = false, Null
	case change.SetDefault:
		v, err := model.CoerceValue(&t.def, c, change.Default)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				return nil, fail("invalid default: %s", ve.Reason)
			}
			return nil, fail("invalid default: %v", err)
		}
		a.SetDefault, a.HasDefault, a.Default = true, true, v
		after.HasDefault, after.Default = true, v
	}
	if after.NotNull && after.HasDefault && after.Default.IsNull() {
		return nil, fail("a notNull column cannot have a null default (drop the default, or give another)")
	}
	return a, nil
}

// withAltered returns v (a local declaration's table, possibly without
// its dropped columns) with the notNull and default of the columns an
// alter_column changed in store, or v itself when none differs: an
// alter, not the declaration, governs local writes.
func withAltered(v, store *table) *table {
	if len(store.altered) == 0 {
		return v
	}
	differs := false
	for n, attrs := range store.altered {
		c, have := v.cols[n], store.cols[n]
		if c != nil && have != nil && !sameAltered(c, have, attrs) {
			differs = true
		}
	}
	if !differs {
		return v
	}
	store.altMu.Lock()
	defer store.altMu.Unlock()
	if store.altFrom == v {
		return store.altTo
	}
	def := cloneTableDef(v.def)
	for i := range def.Columns {
		c := &def.Columns[i]
		have, attrs := store.cols[c.Name], store.altered[c.Name]
		if have == nil {
			continue
		}
		if attrs&alteredNotNull != 0 {
			c.NotNull = have.NotNull
		}
		if attrs&alteredDefault != 0 {
			c.HasDefault, c.Default = have.HasDefault, have.Default
		}
	}
	t := compileTable(def)
	t.asReceived, t.policyHLC = v.asReceived, v.policyHLC
	store.altFrom, store.altTo = v, t
	return t
}

// alteredAttrs are the attributes of a column alter_column migrations
// changed: alteredNotNull, alteredDefault.
type alteredAttrs uint8

const (
	alteredNotNull alteredAttrs = 1 << iota
	alteredDefault
)

// sameAltered reports whether a and b agree on the attributes attrs names.
func sameAltered(a, b *ColumnDef, attrs alteredAttrs) bool {
	if attrs&alteredNotNull != 0 && a.NotNull != b.NotNull {
		return false
	}
	if attrs&alteredDefault != 0 && (a.HasDefault != b.HasDefault || a.HasDefault && !a.Default.Equal(b.Default)) {
		return false
	}
	return true
}
