package wire

import (
	"slices"

	"github.com/replica-sync/replica/model"
)

// MarshalChangeSet returns the wire form of one ChangeSet, as it appears in
// the changeSets arrays of changes, push_changes and apply_changes (a relay
// may store ChangeSets in this form). Errors match ErrInvalidMessage.
func MarshalChangeSet(cs *model.ChangeSet) ([]byte, error) {
	return appendChangeSet(nil, cs)
}

// UnmarshalChangeSet decodes the wire form of one ChangeSet. It checks
// structure only (see "ChangeSet" in the package documentation); the engine
// checks the rest when it applies the ChangeSet. Errors match ErrMalformed.
func UnmarshalChangeSet(data []byte) (model.ChangeSet, error) {
	r := newReader(data)
	if err := checkUTF8(r); err != nil {
		return model.ChangeSet{}, err
	}
	cs, err := r.changeSet()
	if err == nil {
		err = r.End()
	}
	return cs, err
}

// ---- encoding ----

func appendChangeSets(b []byte, css []model.ChangeSet) ([]byte, error) {
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

func appendChangeSet(b []byte, cs *model.ChangeSet) ([]byte, error) {
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
	if cs.Sealed() {
		if len(cs.Changes) > 0 || len(cs.Migrations) > 0 {
			return b, at(invalid("a sealed ChangeSet carries no changes or migrations beside its envelope"), "envelope")
		}
		if len(cs.Envelope) < EnvelopeOverhead {
			return b, at(invalid("%d bytes, shorter than an envelope's %d of header and tag", len(cs.Envelope), EnvelopeOverhead), "envelope")
		}
		b = append(b, `,"envelope":"`...)
		b = stdStrict.AppendEncode(b, cs.Envelope)
		return append(b, `"}`...), nil
	}
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

func appendChange(b []byte, c *model.Change) ([]byte, error) {
	var err error
	switch c.Type {
	case model.ColumnChange:
		if c.PriorRow != nil {
			return b, at(invalid("only a delete carries a before-image row"), "priorRow")
		}
		b = append(b, `{"type":"column","table":`...)
	case model.RowDeletion:
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
	if c.Type == model.ColumnChange {
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
	b, err := model.AppendNameJSON(b, name)
	return b, wireErr(err)
}

func appendNames(b []byte, names []string) ([]byte, error) {
	b, err := model.AppendNamesJSON(b, names)
	return b, wireErr(err)
}

func appendPK(b []byte, pk []model.Value) ([]byte, error) {
	if len(pk) == 0 {
		return b, invalid("primary key must not be empty")
	}
	return appendValues(b, pk)
}

func appendValues(b []byte, vs []model.Value) ([]byte, error) {
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
func appendRow(b []byte, row model.Row) ([]byte, error) {
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

func appendMigrations(b []byte, ms []model.SchemaMigration) ([]byte, error) {
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

// appendMigration writes one migration (model.AppendMigrationJSON).
func appendMigration(b []byte, m *model.SchemaMigration) ([]byte, error) {
	b, err := model.AppendMigrationJSON(b, m)
	return b, wireErr(err)
}

// appendTableDef writes the canonical JSON of a table definition
// (model.AppendTableDefJSON).
func appendTableDef(b []byte, t *model.TableDef) ([]byte, error) {
	b, err := model.AppendTableDefJSON(b, t)
	return b, wireErr(err)
}

// ---- decoding ----

func (r *reader) changeSets() ([]model.ChangeSet, error) {
	if r.bin != nil {
		return r.binaryChangeSets()
	}
	var out []model.ChangeSet
	err := r.elements(func(int) error {
		cs, err := r.changeSet()
		out = append(out, cs)
		return err
	})
	return out, err
}

func (r *reader) changeSet() (model.ChangeSet, error) {
	var cs model.ChangeSet
	var seen fields
	const (
		fSite fields = 1 << iota
		fTx
		fHLC
		fChanges
		fMigrations
		fEnvelope
	)
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "siteId":
			if err = seen.See(&r.Reader, fSite, key); err == nil {
				cs.SiteID, err = r.siteID()
			}
		case "transactionId":
			if err = seen.See(&r.Reader, fTx, key); err == nil {
				cs.TransactionID, err = r.NonEmptyStr()
			}
		case "hlc":
			if err = seen.See(&r.Reader, fHLC, key); err == nil {
				cs.HLC, err = r.hlc()
			}
		case "changes":
			if err = seen.See(&r.Reader, fChanges, key); err == nil {
				err = r.elements(func(int) error {
					c, err := r.change()
					cs.Changes = append(cs.Changes, c)
					return err
				})
			}
		case "schemaMigrations":
			if err = seen.See(&r.Reader, fMigrations, key); err == nil {
				cs.Migrations, err = r.migrations()
			}
		case "envelope":
			if err = seen.See(&r.Reader, fEnvelope, key); err == nil {
				cs.Envelope, err = r.envelope()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return cs, err
	}
	if seen&fEnvelope != 0 {
		// A sealed ChangeSet (version 7): the envelope replaces
		// changes and schemaMigrations.
		if seen&(fChanges|fMigrations) != 0 {
			return cs, r.Fail("a ChangeSet carries either an envelope or changes, not both")
		}
		return cs, seen.Require(&r.Reader, fSite|fTx|fHLC, "siteId", "transactionId", "hlc")
	}
	return cs, seen.Require(&r.Reader, fSite|fTx|fHLC|fChanges, "siteId", "transactionId", "hlc", "changes")
}

// The members of a change, as bits of a fields set (change, checkChangeShape).
const (
	cfType fields = 1 << iota
	cfTable
	cfPK
	cfColumn
	cfValue
	cfHLC
	cfPriorValue
	cfPriorHLC
	cfPriorRow
)

// changeFieldNames names the cf fields, bit i at index i.
var changeFieldNames = []string{"type", "table", "pk", "column", "value", "hlc", "priorValue", "priorHlc", "priorRow"}

func (r *reader) change() (model.Change, error) {
	var c model.Change
	var seen fields
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			if err = seen.See(&r.Reader, cfType, key); err == nil {
				c.Type, err = r.changeType()
			}
		case "table":
			if err = seen.See(&r.Reader, cfTable, key); err == nil {
				c.Table, err = r.NonEmptyStr()
			}
		case "pk":
			if err = seen.See(&r.Reader, cfPK, key); err == nil {
				c.PK, err = r.pk()
			}
		case "column":
			if err = seen.See(&r.Reader, cfColumn, key); err == nil {
				c.Column, err = r.NonEmptyStr()
			}
		case "value":
			if err = seen.See(&r.Reader, cfValue, key); err == nil {
				c.Value, err = r.value()
			}
		case "hlc":
			if err = seen.See(&r.Reader, cfHLC, key); err == nil {
				c.HLC, err = r.hlc()
			}
		case "priorValue":
			if err = seen.See(&r.Reader, cfPriorValue, key); err == nil {
				c.PriorValue, err = r.value()
			}
		case "priorHlc":
			if err = seen.See(&r.Reader, cfPriorHLC, key); err == nil {
				c.PriorHLC, err = r.hlc()
			}
		case "priorRow":
			if err = seen.See(&r.Reader, cfPriorRow, key); err == nil {
				c.PriorRow, err = r.row()
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err != nil {
		return c, err
	}
	return c, r.checkChangeShape(&c, seen)
}

// changeType reads a change's type: "column" or "delete".
func (r *reader) changeType() (model.ChangeType, error) {
	start := r.Pos
	t, err := r.Str()
	if err != nil {
		return 0, err
	}
	switch t {
	case "column":
		return model.ColumnChange, nil
	case "delete":
		return model.RowDeletion, nil
	}
	return 0, r.FailAt(start, "unknown change type %q (want column or delete)", t)
}

// checkChangeShape checks that a change read with members seen has those
// its type needs and no others, and sets c.HasPrior for a column change
// (priorValue and priorHlc come together or not at all).
func (r *reader) checkChangeShape(c *model.Change, seen fields) error {
	if err := seen.Require(&r.Reader, cfType|cfTable|cfPK|cfHLC, changeFieldNames...); err != nil {
		return err
	}
	var need, allowed fields
	switch c.Type {
	case model.ColumnChange:
		need = cfColumn | cfValue
		allowed = cfType | cfTable | cfPK | cfColumn | cfValue | cfHLC | cfPriorValue | cfPriorHLC
		if (seen&cfPriorValue != 0) != (seen&cfPriorHLC != 0) {
			return r.Fail("priorValue and priorHlc must come together")
		}
		c.HasPrior = seen&cfPriorValue != 0
	case model.RowDeletion:
		allowed = cfType | cfTable | cfPK | cfHLC | cfPriorRow
	}
	if err := seen.Require(&r.Reader, need, changeFieldNames...); err != nil {
		return err
	}
	if extra := seen &^ allowed; extra != 0 {
		for i, n := range changeFieldNames {
			if extra&(1<<i) != 0 {
				return r.Fail("field %q not allowed in a %s change", n, c.Type)
			}
		}
	}
	return nil
}

// pk reads a non-empty array of values.
func (r *reader) pk() ([]model.Value, error) {
	start := r.Pos
	pk, err := r.values()
	if err == nil && len(pk) == 0 {
		err = r.FailAt(start, "primary key must not be empty")
	}
	return pk, err
}

func (r *reader) values() ([]model.Value, error) {
	var vs []model.Value
	err := r.elements(func(int) error {
		v, err := r.value()
		vs = append(vs, v)
		return err
	})
	return vs, err
}

// row reads an object of column → value.
func (r *reader) row() (model.Row, error) {
	row := model.Row{}
	err := r.Members(func(key []byte) error {
		k := string(key)
		if k == "" {
			return r.Fail("empty column name")
		}
		if _, dup := row[k]; dup {
			return r.Fail("duplicate key %q", k)
		}
		v, err := r.value()
		row[k] = v
		return atKey(err, k)
	})
	return row, err
}

// names reads an array of non-empty strings.
func (r *reader) names() ([]string, error) { return model.ReadNamesJSON(&r.Reader) }

func (r *reader) migrations() ([]model.SchemaMigration, error) {
	var out []model.SchemaMigration
	err := r.elements(func(int) error {
		m, err := r.migration()
		out = append(out, m)
		return err
	})
	return out, err
}

// migration reads one migration (model.ReadMigrationJSON).
func (r *reader) migration() (model.SchemaMigration, error) {
	return model.ReadMigrationJSON(&r.Reader)
}

// tableDef reads a table definition (model.ReadTableDefJSON): canonical,
// the ddl of a create_table; else ParseSchema's declaration form, name
// given by the enclosing key when not "".
func (r *reader) tableDef(name string, canonical bool) (model.TableDef, error) {
	return model.ReadTableDefJSON(&r.Reader, name, canonical)
}

// envelope reads a JSON string holding an envelope: padded standard base64
// of at least EnvelopeOverhead bytes.
func (r *reader) envelope() ([]byte, error) {
	start := r.Pos
	if r.Peek() != '"' {
		return nil, r.Want("an envelope (a string)")
	}
	s, err := r.StringBytes()
	if err != nil {
		return nil, err
	}
	out := make([]byte, stdStrict.DecodedLen(len(s)))
	n, err := stdStrict.Decode(out, s)
	if err != nil {
		return nil, r.FailAt(start, "envelope: not padded standard base64")
	}
	if n < EnvelopeOverhead {
		return nil, r.FailAt(start, "envelope: %d bytes, shorter than an envelope's %d of header and tag", n, EnvelopeOverhead)
	}
	return out[:n:n], nil
}
