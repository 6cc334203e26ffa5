// Package layout is the engine's storage layout: the kv buckets and their
// keys (docs/design.md § Data model; docs/design.md § Storage layout).
//
//	meta        "format" → storage format version (decimal text)
//	            "site" → 16-byte site id
//	            "clock" → 8-byte wall ms, 2-byte counter, 8-byte schema
//	            version (big-endian; the version is bumped when the
//	            migrations change)
//	            "checkpoint" → the snapshot checkpoint, while one exists
//	            "state/<name>" → caller state (sync cursors, watermarks)
//	rows        table ‖ pk → row record (package engine/internal/rowrec)
//	log         the change log, ordered by HLC, in two parts:
//	            own:    ClassOwn ‖ base → the rows written by this
//	                    replica's transaction base (uvarint count, then
//	                    each row key, uvarint length + bytes, ascending):
//	                    one entry per local transaction;
//	            remote: ClassRemote ‖ base ‖ table ‖ pk → empty: one entry
//	                    per (row, transaction of a peer) that still has a
//	                    live fact in the row (absent with
//	                    engine.Options.LocalChangeLogOnly)
//	tombs       base ‖ table ‖ pk → empty: one entry per tombstoned row,
//	            ordered by the deletion's HLC, for engine.Prune; the entry
//	            of a row's own tombstone (this replica's deletion) may hold
//	            instead the 30-byte HLC of the row's shadow, the tombstone
//	            the own one superseded, which has an entry of its own
//	            (engine/writetx.go, putShadow)
//	index       table ‖ index name ‖ column values ‖ pk → empty
//	migrations  class ‖ HLC → schema migration: its JSON form
//	            (model.AppendMigrationJSON; engine/migrate.go), hlc included
//	quarantine  table ‖ HLC → held change (engine/held.go): a synced change
//	            the replica cannot apply now. The bucket's name predates
//	            the term "held change" and stays: it is a stored format.
//
// table, index name and column values use the order-preserving key encoding
// of package engine/internal/keyenc (a table's rows are contiguous and
// ordered by primary key);
// base is the 26-byte HLC base and HLC the 30-byte encoding, so the log and
// the migrations are ordered by HLC. class is ClassOwn for facts this replica
// minted and ClassRemote for facts from elsewhere, so a client's push scans
// only its own facts.
//
// The two parts of the log differ because their costs differ. A local
// transaction writes one entry however many rows it touches (a 10,000-row
// import writes one, not 10,000: IndexedDB charges per request), and an
// entry is not rewritten when a later write supersedes some of its facts —
// the engine's ChangesSince reads the rows and returns only the facts still there, and
// Prune drops entries left with none once they are past the retention
// horizon. A peer's facts are indexed per row, exactly: an entry dies with
// the last fact it points at.
package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/replica-sync/replica/engine/internal/keyenc"
	"github.com/replica-sync/replica/engine/internal/rowrec"
	"github.com/replica-sync/replica/model"
)

// malformed returns an error wrapping model.ErrMalformed.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", model.ErrMalformed, fmt.Sprintf(format, args...))
}

// The kv buckets (engine.Buckets lists them).
const (
	BucketMeta       = "meta"
	BucketRows       = "rows"
	BucketLog        = "log"
	BucketIndex      = "index"
	BucketMigrations = "migrations"
	BucketHeld       = "quarantine" // held changes; the stored name stays
	BucketTombs      = "tombs"
)

// The change-log classes: the first byte of a log or migrations key.
const (
	ClassOwn    byte = 1
	ClassRemote byte = 2
)

// The keys of the meta bucket (MetaStatePrefix: caller state, the name
// follows).
var (
	MetaFormat      = []byte("format")
	MetaSite        = []byte("site")
	MetaClock       = []byte("clock")
	MetaCheckpoint  = []byte("checkpoint")
	MetaStatePrefix = []byte("state/")
)

// TableKey returns the key prefix of a table's rows, index entries and
// held changes.
func TableKey(table string) []byte { return keyenc.AppendValue(nil, model.Text(table)) }

// RowKey returns tk ‖ pk, tk being TableKey(table).
func RowKey(tk []byte, pk []model.Value) []byte {
	k := make([]byte, 0, len(tk)+16*len(pk))
	return AppendRowKey(k, tk, pk)
}

// AppendRowKey appends RowKey(tk, pk) to dst. With a stack buffer it
// computes a key to look up or measure without allocating.
func AppendRowKey(dst, tk []byte, pk []model.Value) []byte {
	return keyenc.AppendTuple(append(dst, tk...), pk)
}

// LogKey returns class ‖ base ‖ rk (a row key).
func LogKey(class byte, base model.HLC, rk []byte) []byte {
	k := make([]byte, 1+model.BaseSize+len(rk))
	k[0] = class
	base.PutBase(k[1:])
	copy(k[1+model.BaseSize:], rk)
	return k
}

// ParseLogKey splits a log key into class, base and row key.
func ParseLogKey(k []byte) (class byte, base model.HLC, rk []byte, err error) {
	if len(k) < 1+model.BaseSize+1 {
		return 0, model.HLC{}, nil, malformed("short change-log key")
	}
	return k[0], model.BaseFromBytes(k[1:]), k[1+model.BaseSize:], nil
}

// SplitRowKey decodes a row key into its table and primary key.
func SplitRowKey(rk []byte) (table string, pk []model.Value, err error) {
	tv, rest, err := keyenc.DecodeValue(rk)
	if err != nil {
		return "", nil, err
	}
	if tv.Kind() != model.KindText {
		return "", nil, malformed("row key without table name")
	}
	pk, _, err = keyenc.DecodeTuple(rest, -1)
	if err != nil {
		return "", nil, err
	}
	return tv.Text(), pk, nil
}

// ClassOf returns the log class of a fact minted by site.
func ClassOf(site, local model.SiteID) byte {
	if site == local {
		return ClassOwn
	}
	return ClassRemote
}

// MigrationKey returns class ‖ h: the key of a migration.
func MigrationKey(class byte, h model.HLC) []byte {
	k := make([]byte, 1+model.HLCSize)
	k[0] = class
	h.Put(k[1:])
	return k
}

// HeldKey returns tk ‖ h: the key of a held change of the table
// whose TableKey is tk.
func HeldKey(tk []byte, h model.HLC) []byte {
	k := make([]byte, 0, len(tk)+model.HLCSize)
	k = append(k, tk...)
	var b [model.HLCSize]byte
	h.Put(b[:])
	return append(k, b[:]...)
}

// OwnLogKey returns ClassOwn ‖ base: the change-log entry of a local
// transaction.
func OwnLogKey(base model.HLC) []byte {
	k := make([]byte, 1+model.BaseSize)
	k[0] = ClassOwn
	base.PutBase(k[1:])
	return k
}

// EncodeRowList encodes sorted, distinct row keys.
func EncodeRowList(rks []string) []byte {
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

// DecodeRowList decodes an own change-log entry's row keys.
func DecodeRowList(v []byte) ([][]byte, error) {
	rd := rowrec.NewReader(v)
	n := rd.Uvarint()
	if n > uint64(len(v)) {
		return nil, malformed("change-log entry row count %d", n)
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n && rd.Err() == nil; i++ {
		l := rd.Uvarint()
		out = append(out, rd.Bytes(l))
	}
	if rd.Err() == nil && rd.Len() != 0 {
		rd.Fail("trailing bytes in a change-log entry")
	}
	if rd.Err() != nil {
		return nil, rd.Err()
	}
	return out, nil
}

// TombKey returns base ‖ rk: the prune index entry of a tombstone.
func TombKey(base model.HLC, rk []byte) []byte {
	k := make([]byte, model.BaseSize+len(rk))
	base.PutBase(k)
	copy(k[model.BaseSize:], rk)
	return k
}
