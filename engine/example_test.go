package engine_test

import (
	"fmt"
	"log"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
)

// ExampleOpen opens a replica over an in-memory store with a declared
// schema, writes two rows and reads them back. A replica that syncs is
// then handed to client.New; one that persists uses kv/boltkv (or idbkv in
// the browser) instead of memkv, with the same engine.Buckets.
func ExampleOpen() {
	store := memkv.New(engine.Buckets...)
	schema := engine.Schema{Tables: []engine.TableDef{{
		Name: "todos",
		Columns: []engine.ColumnDef{
			{Name: "title", Type: engine.KindText, NotNull: true},
			{Name: "done", Type: engine.KindBoolean, Default: engine.Bool(false), HasDefault: true},
		},
	}}}
	db, err := engine.Open(store, engine.Options{Schema: &schema})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// No primary key declared: the key is a text column "id", filled
	// with a new UUIDv7 when a write omits it.
	milk, err := db.Insert("todos", map[string]any{"title": "buy milk"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Insert("todos", map[string]any{"title": "call Ada", "done": true}); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Update("todos", engine.Key{milk["id"].Text()}, map[string]any{"done": true}); err != nil {
		log.Fatal(err)
	}

	rows, err := db.Query("todos", engine.Query{
		Where:   []engine.Filter{{Column: "done", Op: engine.Eq, Value: true}},
		OrderBy: []engine.Order{{Column: "title"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Println(r["title"].Text(), r["done"].Bool())
	}
	// Output:
	// buy milk true
	// call Ada true
}
