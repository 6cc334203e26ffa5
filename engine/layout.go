package engine

import (
	"encoding/binary"

	"github.com/replica-sync/replica/engine/internal/keyenc"
)

// Storage layout: the kv buckets and their keys (docs/design.md § Data model;
// docs/design.md § Storage layout).
//
//	meta        "format" → storage format version (decimal text)
//	            "site" → 16-byte site id
//	            "clock" → 8-byte wall ms, 2-byte counter, 8-byte schema
//	            version (big-endian; the version is bumped when the
//	            migrations change)
//	            "checkpoint" → the snapshot checkpoint, while one exists
//	            "state/<name>" → caller state (sync cursors, watermarks)
//	rows        table ‖ pk → row record (record.go)
//	log         the change log, ordered by HLC, in two parts:
//	            own:    classOwn ‖ base → the rows written by this
//	                    replica's transaction base (uvarint count, then
//	                    each row key, uvarint length + bytes, ascending):
//	                    one entry per local transaction;
//	            remote: classRemote ‖ base ‖ table ‖ pk → empty: one entry
//	                    per (row, transaction of a peer) that still has a
//	                    live fact in the row (absent with
//	                    Options.LocalChangeLogOnly)
//	tombs       base ‖ table ‖ pk → empty: one entry per tombstoned row,
//	            ordered by the deletion's HLC, for Prune
//	index       table ‖ index name ‖ column values ‖ pk → empty
//	migrations  class ‖ HLC → schema migration: its JSON form
//	            (model.AppendMigrationJSON; migrate.go), hlc included
//	quarantine  table ‖ HLC → held change for an unknown table
//
// table, index name and column values use the order-preserving key encoding
// of package engine/internal/keyenc (a table's rows are contiguous and ordered by primary key);
// base is the 26-byte HLC base and HLC the 30-byte encoding, so the log and
// the migrations are ordered by HLC. class is classOwn for facts this replica
// minted and classRemote for facts from elsewhere, so a client's push scans
// only its own facts.
//
// The two parts of the log differ because their costs differ. A local
// transaction writes one entry however many rows it touches (a 10,000-row
// import writes one, not 10,000: IndexedDB charges per request), and an
// entry is not rewritten when a later write supersedes some of its facts —
// ChangesSince reads the rows and returns only the facts still there, and
// Prune drops entries left with none once they are past the retention
// horizon. A peer's facts are indexed per row, exactly: an entry dies with
// the last fact it points at.
const (
	bucketMeta       = "meta"
	bucketRows       = "rows"
	bucketLog        = "log"
	bucketIndex      = "index"
	bucketMigrations = "migrations"
	bucketQuarantine = "quarantine"
	bucketTombs      = "tombs"
)

// Buckets lists the kv buckets the engine stores into. A kv.Store passed to
// Open must have been opened with all of them.
var Buckets = []string{bucketMeta, bucketRows, bucketLog, bucketIndex, bucketMigrations, bucketQuarantine, bucketTombs}

// StorageFormat is the version of this layout, stored under meta "format"
// (decimal text). Open accepts StorageFormat and 1, and refuses a store
// with any other version (ErrStorageFormat).
//
//	1  migrations stored in the legacy "def" form (defaults in the row
//	   record's value encoding)
//	2  migrations stored in model's JSON form, the wire's
//	   (model.AppendMigrationJSON); Open rewrites a format-1 store's
//	   migrations and restamps it 2 in the transaction that opens it
const StorageFormat = 2

const (
	classOwn    byte = 1
	classRemote byte = 2
)

var (
	metaFormat     = []byte("format")
	metaSite       = []byte("site")
	metaClock      = []byte("clock")
	metaCheckpoint = []byte("checkpoint")
	metaStatePfx   = []byte("state/")
)

// tableKey returns the key prefix of a table's rows, index entries and
// quarantined changes.
func tableKey(table string) []byte { return keyenc.AppendValue(nil, Text(table)) }

// rowKey returns tableKey ‖ pk.
func rowKey(tk []byte, pk []Value) []byte {
	k := make([]byte, 0, len(tk)+16*len(pk))
	return appendRowKey(k, tk, pk)
}

// appendRowKey appends rowKey(tk, pk) to dst. With a stack buffer it
// computes a key to look up or measure without allocating.
func appendRowKey(dst, tk []byte, pk []Value) []byte {
	return keyenc.AppendTuple(append(dst, tk...), pk)
}

// logKey returns class ‖ base ‖ rowKey.
func logKey(class byte, base HLC, rk []byte) []byte {
	k := make([]byte, 1+BaseSize+len(rk))
	k[0] = class
	base.PutBase(k[1:])
	copy(k[1+BaseSize:], rk)
	return k
}

// parseLogKey splits a log key into class, base and row key.
func parseLogKey(k []byte) (class byte, base HLC, rk []byte, err error) {
	if len(k) < 1+BaseSize+1 {
		return 0, HLC{}, nil, malformed("short change-log key")
	}
	return k[0], baseFromBytes(k[1:]), k[1+BaseSize:], nil
}

// splitRowKey decodes a row key into its table and primary key.
func splitRowKey(rk []byte) (table string, pk []Value, err error) {
	tv, rest, err := keyenc.DecodeValue(rk)
	if err != nil {
		return "", nil, err
	}
	if tv.Kind() != KindText {
		return "", nil, malformed("row key without table name")
	}
	pk, _, err = keyenc.DecodeTuple(rest, -1)
	if err != nil {
		return "", nil, err
	}
	return tv.Text(), pk, nil
}

// classOf returns the log class of a fact minted by site.
func classOf(site, local SiteID) byte {
	if site == local {
		return classOwn
	}
	return classRemote
}

func migrationKey(class byte, h HLC) []byte {
	k := make([]byte, 1+HLCSize)
	k[0] = class
	h.Put(k[1:])
	return k
}

func quarantineKey(tk []byte, h HLC) []byte {
	k := make([]byte, 0, len(tk)+HLCSize)
	k = append(k, tk...)
	var b [HLCSize]byte
	h.Put(b[:])
	return append(k, b[:]...)
}

// ownLogKey returns classOwn ‖ base: the change-log entry of a local
// transaction.
func ownLogKey(base HLC) []byte {
	k := make([]byte, 1+BaseSize)
	k[0] = classOwn
	base.PutBase(k[1:])
	return k
}

// encodeRowList encodes sorted, distinct row keys.
func encodeRowList(rks []string) []byte {
	n := binary.MaxVarintLen64
	for _, rk := range rks {
		n += binary.MaxVarintLen64 + len(rk)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(rks)))
	for _, rk := range rks {
		b = binary.AppendUvarint(b, uint64(len(rk)))
		b = append(b, rk...)
	}
	return b
}

// decodeRowList decodes an own change-log entry's row keys.
func decodeRowList(v []byte) ([][]byte, error) {
	rd := &recReader{b: v}
	n := rd.uvarint()
	if n > uint64(len(v)) {
		return nil, malformed("change-log entry row count %d", n)
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n && rd.err == nil; i++ {
		l := rd.uvarint()
		out = append(out, rd.bytes(l))
	}
	if rd.err == nil && len(rd.b) != 0 {
		rd.fail("trailing bytes in a change-log entry")
	}
	if rd.err != nil {
		return nil, rd.err
	}
	return out, nil
}

// tombKey returns base ‖ rowKey: the prune index entry of a tombstone.
func tombKey(base HLC, rk []byte) []byte {
	k := make([]byte, BaseSize+len(rk))
	base.PutBase(k)
	copy(k[BaseSize:], rk)
	return k
}
