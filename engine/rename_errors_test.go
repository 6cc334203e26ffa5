package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestRenamedWriteErrors: after a rename in the session that declared the
// table by its old name, a local write's errors (a key move onto an
// existing row, an unknown column, a missing notNull value, a key of the
// wrong arity) name the table by its current name, which is the only name
// the local API accepts, not by its identity.
func TestRenamedWriteErrors(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "a", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "n", Type: model.KindInteger, NotNull: true}}}}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []string{"x", "y"} {
		if _, err := db.Insert("a", map[string]any{"id": id, "n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RenameTable("a", "b"); err != nil {
		t.Fatal(err)
	}
	check := func(what, want string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want %q: the table named b)", what, err, want)
		}
		var ve *engine.ValidationError
		if errors.As(err, &ve) && ve.Table != "b" {
			t.Errorf("%s: ValidationError.Table = %q, want b", what, ve.Table)
		}
	}
	_, err = db.Update("b", engine.Key{"x"}, map[string]any{"id": "y"})
	check("move onto an existing key", "move b [", err)
	_, err = db.Insert("b", map[string]any{"id": "z", "n": 1, "bogus": 1})
	check("unknown column", "b.bogus", err)
	_, err = db.Insert("b", map[string]any{"id": "z"})
	check("missing notNull", "b.n", err)
	_, err = db.Update("b", engine.Key{"x", "y"}, map[string]any{"n": 2})
	check("key arity", "b: primary key", err)
}
