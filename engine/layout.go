package engine

import "github.com/replica-sync/replica/engine/internal/layout"

// Buckets lists the kv buckets the engine stores into. A kv.Store passed to
// Open must have been opened with all of them.
var Buckets = []string{layout.BucketMeta, layout.BucketRows, layout.BucketLog, layout.BucketIndex, layout.BucketMigrations, layout.BucketHeld, layout.BucketTombs}

// StorageFormat is the version of the storage layout (package
// engine/internal/layout), stored under meta "format"
// (decimal text). Open accepts StorageFormat and 1, and refuses a store
// with any other version (ErrStorageFormat).
//
//	1  migrations stored in the legacy "def" form (defaults in the row
//	   record's value encoding)
//	2  migrations stored in model's JSON form, the wire's
//	   (model.AppendMigrationJSON); Open rewrites a format-1 store's
//	   migrations and restamps it 2 in the transaction that opens it
const StorageFormat = 2
