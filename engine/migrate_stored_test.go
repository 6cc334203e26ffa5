package engine

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// storedMigrationFixtures are stored migrations byte for byte as databases
// of storage format 1 (the legacy "def" form) hold them (boltkv files,
// IndexedDB): Open upgrades such a store, so the legacy reader must keep
// reading these.
var storedMigrationFixtures = []struct {
	stored string
	want   SchemaMigration
}{
	{`{"type":"create_table","table":"trips","def":{"name":"trips","columns":[{"name":"id","type":"text","notNull":true},{"name":"n","type":"integer","hasDefault":true,"default":"Aw4="},{"name":"at","type":"timestamp","hasDefault":true,"default":"Bfb5tMDmYw=="},{"name":"note","type":"text","hasDefault":true,"default":"BgQ8w6k+"}],"pk":["id"],"indexes":[{"name":"by_n","columns":["n","id"]}],"coerce":true}}`,
		SchemaMigration{Type: CreateTable, TableName: "trips", Table: &TableDef{Name: "trips", PrimaryKey: []string{"id"}, Coerce: true,
			Columns: []ColumnDef{{Name: "id", Type: KindText, NotNull: true}, {Name: "n", Type: KindInteger, HasDefault: true, Default: Int(7)},
				{Name: "at", Type: KindTimestamp, HasDefault: true, Default: TimestampMillis(1714564800123)}, {Name: "note", Type: KindText, HasDefault: true, Default: Text("<é>")}},
			Indexes: []IndexDef{{Name: "by_n", Columns: []string{"n", "id"}}}}}},
	{`{"type":"add_column","table":"trips","column":{"name":"meta","type":"json","hasDefault":true,"default":"Bw17ImEiOlsxLCJ4Il19"}}`,
		SchemaMigration{Type: AddColumn, TableName: "trips", Column: &ColumnDef{Name: "meta", Type: KindJSON, HasDefault: true, Default: jsonV(`{"a":[1,"x"]}`)}}},
	{`{"type":"add_column","table":"trips","column":{"name":"data","type":"blob","hasDefault":true,"default":"CAMAAf8="}}`,
		SchemaMigration{Type: AddColumn, TableName: "trips", Column: &ColumnDef{Name: "data", Type: KindBlob, HasDefault: true, Default: Blob([]byte{0, 1, 255})}}},
	{`{"type":"add_column","table":"trips","column":{"name":"r","type":"real","notNull":true,"hasDefault":true,"default":"BAAAAAAAAPg/","coerce":true}}`,
		SchemaMigration{Type: AddColumn, TableName: "trips", Column: &ColumnDef{Name: "r", Type: KindReal, NotNull: true, HasDefault: true, Default: Real(1.5), Coerce: true}}},
	{`{"type":"add_index","table":"t\u003cx\u003e \u0026 \u2028","index":{"name":"by_at","columns":["at"]}}`,
		SchemaMigration{Type: AddIndex, TableName: "t<x> & \u2028", Index: &IndexDef{Name: "by_at", Columns: []string{"at"}}}},
	{`{"type":"set_resurrection_policy","table":"trips","policy":"allow-resurrection"}`,
		SchemaMigration{Type: SetResurrectionPolicy, TableName: "trips", Resurrection: ResurrectionAllowed}},
}

// TestStoredMigrationFixtures: legacy stored migrations read back as what

// TestStoredMigrationFixtures: legacy (format-1) stored migrations read
// back as what was stored.
func TestStoredMigrationFixtures(t *testing.T) {
	key := append([]byte{layout.ClassOwn}, fixtureHLC.Bytes()...)
	for _, f := range storedMigrationFixtures {
		got, err := decodeLegacyMigration(key, []byte(f.stored))
		if err != nil {
			t.Fatalf("decodeLegacyMigration(%s): %v", f.stored, err)
		}
		if got.HLC != fixtureHLC || got.Type != f.want.Type || got.TableName != f.want.TableName || !migrationsEqual(&got, &f.want) {
			t.Errorf("decodeLegacyMigration(%s) = %+v, want %+v", f.stored, got, f.want)
		}
	}
}

// migrationsEqual reports whether two migrations define the same thing
// (ignoring their HLCs): their stored forms at one HLC are equal, and so
// are their defaults' kinds (a timestamp and an integer are both a number
// in the stored form).
func migrationsEqual(a, b *SchemaMigration) bool {
	x, y := *a, *b
	x.HLC, y.HLC = HLC{}, HLC{}
	ea, err1 := encodeMigration(&x)
	eb, err2 := encodeMigration(&y)
	if err1 != nil || err2 != nil || string(ea) != string(eb) {
		return false
	}
	kinds := func(m *SchemaMigration) (out []Kind) {
		if m.Column != nil {
			out = append(out, m.Column.Default.Kind())
		}
		if m.Table != nil {
			for _, c := range m.Table.Columns {
				out = append(out, c.Default.Kind())
			}
		}
		return out
	}
	ka, kb := kinds(a), kinds(b)
	if len(ka) != len(kb) {
		return false
	}
	for i := range ka {
		if ka[i] != kb[i] {
			return false
		}
	}
	return true
}

// fixtureHLC is the HLC of the stored migration fixtures.
var fixtureHLC = HLC{Wall: 42, Counter: 1, Site: SiteID{7}}

// storedMigrationFixtures2 are the format-2 stored forms of the
// migrations of storedMigrationFixtures, at fixtureHLC: model's JSON form
// of a migration (the wire's), byte for byte. A later change of the
// stored form must keep reading these.
var storedMigrationFixtures2 = []string{
	`{"type":"create_table","table":"trips","ddl":{"name":"trips","columns":[{"name":"id","type":"text","notNull":true},{"name":"n","type":"integer","default":7},{"name":"at","type":"timestamp","default":1714564800123},{"name":"note","type":"text","default":"<é>"}],"primaryKey":["id"],"indexes":[{"name":"by_n","columns":["n","id"]}],"coerce":true},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
	`{"type":"add_column","table":"trips","ddl":{"name":"meta","type":"json","default":{"a":[1,"x"]}},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
	`{"type":"add_column","table":"trips","ddl":{"name":"data","type":"blob","default":{"__bin":"AAH/"}},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
	`{"type":"add_column","table":"trips","ddl":{"name":"r","type":"real","notNull":true,"default":1.5,"coerce":true},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
	"{\"type\":\"add_index\",\"table\":\"t<x> & \u2028\",\"ddl\":{\"name\":\"by_at\",\"columns\":[\"at\"]},\"hlc\":\"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA\"}",
	`{"type":"set_resurrection_policy","table":"trips","ddl":{"policy":"allow-resurrection"},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
}

// TestStoredMigrationFixtures2: a migration is stored (format 2) as these
// bytes, and they read back as the migration, defaults of their column's
// kind (the timestamp default a Timestamp, not an Integer).
func TestStoredMigrationFixtures2(t *testing.T) {
	key := append([]byte{layout.ClassOwn}, fixtureHLC.Bytes()...)
	for i, f := range storedMigrationFixtures {
		want := f.want
		want.HLC = fixtureHLC
		if b, err := encodeMigration(&want); err != nil || string(b) != storedMigrationFixtures2[i] {
			t.Errorf("encodeMigration(%+v) = %s, %v; want %s", want, b, err, storedMigrationFixtures2[i])
		}
		got, err := decodeMigration(key, []byte(storedMigrationFixtures2[i]))
		if err != nil {
			t.Fatalf("decodeMigration(%s): %v", storedMigrationFixtures2[i], err)
		}
		if got.HLC != fixtureHLC || got.Type != want.Type || got.TableName != want.TableName || !migrationsEqual(&got, &want) {
			t.Errorf("decodeMigration(%s) = %+v, want %+v", storedMigrationFixtures2[i], got, want)
		}
	}
}

// TestDecodeMigrationRefuses: a stored migration that is not one in the
// format-2 form, or whose hlc is not its key's, is ErrMalformed, naming
// where it went wrong.
func TestDecodeMigrationRefuses(t *testing.T) {
	key := append([]byte{layout.ClassOwn}, fixtureHLC.Bytes()...)
	for _, c := range []struct{ stored, want string }{
		{`{"type":"set_resurrection_policy","table":"trips","ddl":{"policy":"allow-resurrection"},"hlc":"AAAAAAAAACsAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "differs from its key"},
		{storedMigrationFixtures[0].stored, `unknown field "def"`},
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"varchar"},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "ddl.type"},
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"text","default":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `},"hlc":"AAAAAAAAACoAAQcAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "ddl.default: JSON value nested deeper than 256"},
		{`{"type":"add_column","table":"t","ddl":{"name":"c","type":"text"}}`, `missing required field "hlc"`},
		{"{\"type\":\"add_index\",\"table\":\"\xff\"}", "invalid UTF-8"},
		{storedMigrationFixtures2[5] + " x", "at byte"},
	} {
		_, err := decodeMigration(key, []byte(c.stored))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeMigration(%s) = %v; want ErrMalformed with %q", c.stored, err, c.want)
		}
	}
	if _, err := decodeMigration(key[:5], []byte(storedMigrationFixtures2[5])); !errors.Is(err, ErrMalformed) {
		t.Errorf("decodeMigration with a short key = %v; want ErrMalformed", err)
	}
}

// legacyStore returns a memkv store as a format-1 engine left it, written
// through the kv API: format "1", a site id, a clock record and the
// legacy fixtures as stored migrations (the first three this replica's
// own, the others a peer's). keys are the migrations' keys, in fixture
// order.
func legacyStore(t *testing.T) (store *memkv.Store, site SiteID, keys [][]byte) {
	t.Helper()
	store = memkv.New(Buckets...)
	site, peer := SiteID{1, 2, 3}, SiteID{9, 9}
	err := store.Update(func(tx kv.Tx) error {
		clock := make([]byte, 18) // wall ms, counter, schema version
		binary.BigEndian.PutUint64(clock, 1000)
		binary.BigEndian.PutUint64(clock[10:], uint64(len(storedMigrationFixtures)))
		for _, p := range [][2][]byte{{[]byte("format"), []byte("1")}, {[]byte("site"), site[:]}, {[]byte("clock"), clock}} {
			if err := tx.Put(layout.BucketMeta, p[0], p[1]); err != nil {
				return err
			}
		}
		for i, f := range storedMigrationFixtures {
			h, class := HLC{Wall: uint64(100 + i), Site: site}, layout.ClassOwn
			if i >= 3 {
				h.Site, class = peer, layout.ClassRemote
			}
			k := layout.MigrationKey(class, h)
			keys = append(keys, k)
			if err := tx.Put(layout.BucketMigrations, k, []byte(f.stored)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return store, site, keys
}

func countMigrations(t *testing.T, store kv.Store) int {
	t.Helper()
	n := 0
	if err := store.View(func(tx kv.Tx) error {
		return tx.Scan(layout.BucketMigrations, kv.Range{}, func(_, _ []byte) bool { n++; return true })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOpenUpgradesFormat1: a format-1 store opens; its schema is what its
// legacy migrations define; it is format 2 afterwards with every migration
// in the format-2 form; and reopened (now format 2, with that schema
// declared) it records no new migration and fills rows' defaults from the
// upgraded migrations, each of its column's kind.
func TestOpenUpgradesFormat1(t *testing.T) {
	store, site, keys := legacyStore(t)
	e, err := Open(store, Options{})
	if err != nil {
		t.Fatalf("Open(format 1): %v", err)
	}
	if e.SiteID() != site {
		t.Errorf("site id %v, want %v", e.SiteID(), site)
	}
	schema, err := e.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if len(schema.Tables) != 1 || schema.Tables[0].Name != "trips" || schema.Tables[0].Resurrection != ResurrectionAllowed ||
		len(schema.Tables[0].Columns) != 7 || len(schema.Tables[0].Indexes) != 1 {
		t.Fatalf("schema after upgrade: %+v", schema)
	}
	if at := schema.Tables[0].Columns[2]; at.Name != "at" || at.Default.Kind() != KindTimestamp || at.Default.Int() != 1714564800123 {
		t.Errorf("column at after upgrade: %+v", at)
	}
	e.Close()

	err = store.View(func(tx kv.Tx) error {
		if f, err := tx.Get(layout.BucketMeta, layout.MetaFormat); err != nil || string(f) != "2" {
			t.Errorf("format after upgrade: %q, %v; want \"2\"", f, err)
		}
		for i, k := range keys {
			v, err := tx.Get(layout.BucketMigrations, k)
			if err != nil {
				return err
			}
			m, err := decodeMigration(k, v)
			if err != nil {
				t.Errorf("migration %d after upgrade: %v (%s)", i, err, v)
				continue
			}
			if want := storedMigrationFixtures[i].want; !migrationsEqual(&m, &want) {
				t.Errorf("migration %d after upgrade: %s, want %+v", i, v, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countMigrations(t, store); n != len(keys) {
		t.Errorf("%d stored migrations after upgrade, want %d", n, len(keys))
	}

	e, err = Open(store, Options{Schema: &schema})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e.Close()
	row, err := e.Insert("trips", map[string]any{"id": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if row["at"].Kind() != KindTimestamp || row["at"].Int() != 1714564800123 || row["n"].Int() != 7 || row["note"].Text() != "<é>" ||
		row["r"].Real() != 1.5 || string(row["data"].Blob()) != "\x00\x01\xff" || string(row["meta"].JSON()) != `{"a":[1,"x"]}` {
		t.Errorf("row with the upgraded defaults: %v", row)
	}
	if n := countMigrations(t, store); n != len(keys) {
		t.Errorf("reopening with the same schema: %d stored migrations, want %d", n, len(keys))
	}
}

// TestOpenRefusesOtherFormats: a store of a format other than 1 and 2 is
// ErrStorageFormat, and its migrations are left as they are.
func TestOpenRefusesOtherFormats(t *testing.T) {
	for _, f := range []string{"3", "0", "", "2x"} {
		store, _, keys := legacyStore(t)
		if err := store.Update(func(tx kv.Tx) error { return tx.Put(layout.BucketMeta, layout.MetaFormat, []byte(f)) }); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(store, Options{}); !errors.Is(err, ErrStorageFormat) {
			t.Errorf("Open(format %q) = %v; want ErrStorageFormat", f, err)
		}
		if err := store.View(func(tx kv.Tx) error {
			v, err := tx.Get(layout.BucketMigrations, keys[0])
			if err == nil && string(v) != storedMigrationFixtures[0].stored {
				t.Errorf("Open(format %q) rewrote a migration: %s", f, v)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecodeMigration: decoding any stored bytes (either form's fixtures as
// seeds) never panics and fails only with ErrMalformed, and what decodes
// encodes again, to bytes that decode and encode to themselves.
func FuzzDecodeMigration(f *testing.F) {
	for i, s := range storedMigrationFixtures2 {
		f.Add([]byte(s))
		f.Add([]byte(storedMigrationFixtures[i].stored))
	}
	key := append([]byte{layout.ClassOwn}, fixtureHLC.Bytes()...)
	f.Fuzz(func(t *testing.T, stored []byte) {
		m, err := decodeMigration(key, stored)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("decodeMigration(%q) = %v; want ErrMalformed", stored, err)
			}
			return
		}
		b, err := encodeMigration(&m)
		if err != nil {
			t.Fatalf("decodeMigration(%q) decoded %+v, which does not encode: %v", stored, m, err)
		}
		back, err := decodeMigration(key, b)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", b, err)
		}
		again, err := encodeMigration(&back)
		if err != nil || string(again) != string(b) {
			t.Fatalf("%s re-encodes as %s, %v", b, again, err)
		}
	})
}

// TestStoredUnknownMigrationType: a store holding a migration of a type
// this version does not know (a newer version's, in a store another tab
// shares) fails Open with ErrStorageFormat, saying to update, not with
// ErrMalformed as if the data were corrupt; nothing is written.
func TestStoredUnknownMigrationType(t *testing.T) {
	store := memkv.New(Buckets...)
	schema := &Schema{Tables: []TableDef{{Name: "t", Columns: []ColumnDef{{Name: "id", Type: KindText}, {Name: "v", Type: KindText}}}}}
	e, err := Open(store, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	h := HLC{Wall: uint64(time.Now().UnixMilli()), Site: SiteID{9, 9}}
	stored := `{"type":"retype_table","table":"t","ddl":{"name":"u"},"hlc":"` + h.String() + `"}`
	if err := store.Update(func(tx kv.Tx) error {
		return tx.Put(layout.BucketMigrations, layout.MigrationKey(layout.ClassRemote, h), []byte(stored))
	}); err != nil {
		t.Fatal(err)
	}
	before := countMigrations(t, store)
	_, err = Open(store, Options{Schema: schema})
	if !errors.Is(err, ErrStorageFormat) || errors.Is(err, ErrMalformed) {
		t.Fatalf("Open over a store holding a retype_table migration: %v, want ErrStorageFormat (not ErrMalformed)", err)
	}
	if !strings.Contains(err.Error(), "newer version") || !strings.Contains(err.Error(), `unknown migration type "retype_table"`) {
		t.Errorf("the error does not say what happened: %v", err)
	}
	if n := countMigrations(t, store); n != before {
		t.Errorf("%d migrations stored after the refused Open, %d before", n, before)
	}
}
