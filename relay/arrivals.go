//go:build !js

package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/replica-sync/replica/engine"
)

// Storage layout of a database file, next to the engine's buckets
// (engine.Buckets, described in engine/layout.go):
//
//	relay        "format" → "1" (relayFormat, decimal text)
//	             "cursor" → 8-byte big-endian: the last cursor issued (0: none)
//	             "pruned" → 8-byte big-endian: the last cursor removed by
//	                        retention (0: none); cursors 1…pruned are gone
//	arrivals     8-byte big-endian cursor → arrival record (below)
//	arrivals_tx  site id (16 bytes) ‖ transactionId → 8-byte big-endian
//	             cursor ‖ 4-byte big-endian fact count: the dedup index
//
// An arrival record is
//
//	version (1 byte, 1) ‖ arrival time (8 bytes, ms since the Unix epoch)
//	‖ facts (4 bytes: changes plus schema migrations) ‖ dedup key length
//	(uvarint) ‖ dedup key (the arrivals_tx key) ‖ the ChangeSet's wire JSON
//	(wire.MarshalChangeSet of the ChangeSet as received)
//
// so that a page of changes is assembled from stored bytes without decoding,
// and retention can drop the dedup entry of a pruned record.
const (
	bucketRelay      = "relay"
	bucketArrivals   = "arrivals"
	bucketArrivalsTx = "arrivals_tx"

	relayFormat   = "1"
	recordVersion = 1
	recordHeader  = 1 + 8 + 4
)

var (
	keyFormat = []byte("format")
	keyCursor = []byte("cursor")
	keyPruned = []byte("pruned")
)

// storeBuckets are the buckets a database file is opened with.
var storeBuckets = append(append([]string(nil), engine.Buckets...), bucketRelay, bucketArrivals, bucketArrivalsTx)

// errCorrupt is returned when a stored relay record does not parse.
var errCorrupt = errors.New("relay: corrupt arrival log")

func cursorKey(c uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], c)
	return k[:]
}

func parseUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: %d-byte counter", errCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// dedupKey is the arrivals_tx key of a ChangeSet: its site id and
// transactionId.
func dedupKey(cs *engine.ChangeSet) []byte {
	k := make([]byte, 0, len(cs.SiteID)+len(cs.TransactionID))
	k = append(k, cs.SiteID[:]...)
	return append(k, cs.TransactionID...)
}

// facts counts the changes and schema migrations of a ChangeSet.
func facts(cs *engine.ChangeSet) int { return len(cs.Changes) + len(cs.Migrations) }

// encodeRecord builds an arrival record.
func encodeRecord(arrivedMs uint64, nfacts int, key, js []byte) []byte {
	b := make([]byte, 0, recordHeader+binary.MaxVarintLen32+len(key)+len(js))
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint64(b, arrivedMs)
	b = binary.BigEndian.AppendUint32(b, uint32(nfacts))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return append(b, js...)
}

// record is a parsed arrival record; key and json alias the stored bytes.
type record struct {
	arrivedMs uint64
	facts     int
	key       []byte
	json      []byte
}

func decodeRecord(v []byte) (record, error) {
	if len(v) < recordHeader || v[0] != recordVersion {
		return record{}, fmt.Errorf("%w: bad record header", errCorrupt)
	}
	r := record{arrivedMs: binary.BigEndian.Uint64(v[1:]), facts: int(binary.BigEndian.Uint32(v[9:]))}
	n, w := binary.Uvarint(v[recordHeader:])
	rest := v[recordHeader+max(w, 0):]
	if w <= 0 || n > uint64(len(rest)) {
		return record{}, fmt.Errorf("%w: bad dedup key length", errCorrupt)
	}
	r.key, r.json = rest[:n], rest[n:]
	return r, nil
}

// site returns the site id a record's dedup key starts with.
func (r *record) site() (s engine.SiteID, ok bool) {
	if len(r.key) < len(s) {
		return s, false
	}
	copy(s[:], r.key)
	return s, true
}

// dbFileName maps a database id to its file name in the data directory:
// lower-case letters, digits, '_', '-' and '.' as they are, every other byte
// (upper-case letters, ':') as %XX, then ".db". Escaping upper case keeps two
// ids that differ only in case apart on case-insensitive file systems
// (macOS, Windows). "acme:Trips" → "acme%3A%54rips.db".
func dbFileName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteString(".db")
	return b.String()
}
