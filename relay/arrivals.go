//go:build !js

package relay

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Storage layout of a database file, next to the engine's buckets
// (engine.Buckets, described in engine/internal/layout):
//
//	relay          "format" → "2" (relayFormat, decimal text)
//	               "cursor" → 8-byte big-endian: the last cursor issued (0: none)
//	               "pruned" → 8-byte big-endian: the last cursor removed by
//	                          retention (0: none); cursors 1…pruned are gone
//	               "chain" → 16 bytes: the chain value at "cursor"
//	               "prunedChain" → 16 bytes: the chain value at "pruned"
//	                          (absent: wire.GenesisChain)
//	               "horizonPending" → 8-byte big-endian wall: a horizon mark
//	                          stored whose pruning has not completed (absent
//	                          otherwise)
//	               "merged" → "2" (mergedGen, remerge.go): the merged replica
//	                          was built under this version's merge rules
//	arrivals       8-byte big-endian cursor → arrival record (below)
//	arrivals_tx    site id (16 bytes) ‖ transactionId → 8-byte big-endian
//	               cursor ‖ 4-byte big-endian fact count: the dedup index
//	arrivals_chain 8-byte big-endian cursor → 16 bytes: the chain value at
//	               that cursor (wire.Chain.Next of the previous one and the
//	               record's site id and transactionId), for every retained
//	               record
//	arrivals_site  site id (16 bytes) → 30 bytes (model.HLC.Bytes): the
//	               highest hlc among the ChangeSets of that site ever
//	               appended; kept when retention removes the records
//	arrivals_horizon 8-byte big-endian cursor → wall ‖ chain: the
//	               tombstone horizon marks (horizon.go)
//	arrivals_horizon_site cursor ‖ site id → hlc: per mark, arrivals_site
//	               when it was made (horizon.go)
//
// Format 1 lacked "chain", "prunedChain", arrivals_chain and arrivals_site;
// open upgrades such a file in place (upgradeFormat1).
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
	bucketChain      = "arrivals_chain"
	bucketSites      = "arrivals_site"
	// bucketCheckpoint holds the parts of sealed checkpoints: the newest
	// one's, and those of an upload in progress (checkpointPartKey).
	bucketCheckpoint = "checkpoint_parts"

	relayFormat   = "2"
	recordVersion = 1
	recordHeader  = 1 + 8 + 4
)

var (
	keyFormat = []byte("format")
	keyCursor = []byte("cursor")
	keyPruned = []byte("pruned")
	// keyHorizonPending is the wall of a horizon mark stored and not yet
	// pruned at (horizon.go): present only between the two.
	keyHorizonPending = []byte("horizonPending")
	keyChain          = []byte("chain")
	// keySealed is "1" in a sealed database's file (written when the
	// file is created, never changed); absent: plain.
	keySealed = []byte("sealed")
	// keyCheckpoint is the newest sealed checkpoint's record
	// (encodeCheckpointMeta); absent: none.
	keyCheckpoint = []byte("checkpoint")
	// keyPrunedChain is the chain value at the compaction point.
	keyPrunedChain = []byte("prunedChain")
)

// storeBuckets are the buckets a database file is opened with.
var storeBuckets = append(append([]string(nil), engine.Buckets...), bucketRelay, bucketArrivals, bucketArrivalsTx, bucketChain, bucketSites, bucketHorizons, bucketHorizonSites, bucketCheckpoint)

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
func dedupKey(cs *model.ChangeSet) []byte {
	k := make([]byte, 0, len(cs.SiteID)+len(cs.TransactionID))
	k = append(k, cs.SiteID[:]...)
	return append(k, cs.TransactionID...)
}

// facts counts the changes and schema migrations of a ChangeSet.
func facts(cs *model.ChangeSet) int {
	if cs.Sealed() {
		return 1 // an envelope counts as one change for the limits and pages
	}
	return len(cs.Changes) + len(cs.Migrations)
}

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
func (r *record) site() (s model.SiteID, ok bool) {
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

// dedupKeySite splits a dedup key into its site id and transactionId.
func dedupKeySite(key []byte) (model.SiteID, string, bool) {
	var s model.SiteID
	if len(key) < len(s) {
		return s, "", false
	}
	copy(s[:], key)
	return s, string(key[len(s):]), true
}

// nextChain returns the chain value after appending the record of dedup
// key key to a log at chain value prev.
func nextChain(prev wire.Chain, key []byte) wire.Chain {
	site, txID, _ := dedupKeySite(key)
	return prev.Next(site, txID)
}

// getChain reads a 16-byte chain value of bucket at key; absent gives def.
func getChain(tx kv.Tx, bucket string, key []byte, def wire.Chain) (wire.Chain, bool, error) {
	v, err := tx.Get(bucket, key)
	if errors.Is(err, kv.ErrNotFound) {
		return def, false, nil
	}
	if err != nil {
		return def, false, err
	}
	if len(v) != wire.ChainSize {
		return def, false, fmt.Errorf("%w: %d-byte chain value", errCorrupt, len(v))
	}
	var c wire.Chain
	copy(c[:], v)
	return c, true, nil
}

// chainAt returns the chain value of the log at cursor c, and false when
// the log does not hold c (above the head, below the compaction point).
func chainAt(tx kv.Tx, c uint64) (wire.Chain, bool, error) {
	cur, err := getCounter(tx, keyCursor)
	if err != nil {
		return wire.Chain{}, false, err
	}
	pruned, err := getCounter(tx, keyPruned)
	if err != nil {
		return wire.Chain{}, false, err
	}
	switch {
	case c > cur || c < pruned:
		return wire.Chain{}, false, nil
	case c == cur:
		ch, _, err := getChain(tx, bucketRelay, keyChain, wire.GenesisChain)
		return ch, err == nil, err
	case c == pruned:
		ch, _, err := getChain(tx, bucketRelay, keyPrunedChain, wire.GenesisChain)
		return ch, err == nil, err
	}
	ch, ok, err := getChain(tx, bucketChain, cursorKey(c), wire.Chain{})
	if err == nil && !ok {
		err = fmt.Errorf("%w: no chain value for cursor %d", errCorrupt, c)
	}
	return ch, err == nil, err
}

// snapshotIDSep separates a new snapshot's random id from the chain value
// bound to it (base64url has no '.').
const snapshotIDSep = "."

// bindSnapshotID returns the id of a new snapshot taken at a cursor whose
// chain value is chain: its random id, snapshotIDSep, the chain value.
// Clients echo it in resume_snapshot, where holdsSnapshotPosition checks
// the log still holds that position.
func bindSnapshotID(id string, chain wire.Chain) string {
	return id + snapshotIDSep + chain.String()
}

// boundChain returns the chain value bound into a snapshot id, and false
// for an id that binds none (another relay's, or of a relay before ids
// were bound).
func boundChain(id string) (wire.Chain, bool) {
	i := strings.LastIndex(id, snapshotIDSep)
	if i < 0 {
		return wire.Chain{}, false
	}
	ch, err := wire.ParseChain(id[i+len(snapshotIDSep):])
	return ch, err == nil && !ch.IsZero()
}

// chainAt returns the chain value of the database's log at cursor c, and
// false when the log does not hold c (above the head, below the
// compaction point).
func (d *database) chainAt(c uint64) (ch wire.Chain, ok bool, err error) {
	err = d.store.View(func(tx kv.Tx) error {
		ch, ok, err = chainAt(tx, c)
		return err
	})
	return ch, ok, err
}

// snapshotComplete returns the snapshot_complete that ends a snapshot
// stream whose client pulls from cursor: with the log's chain value there
// (wire version 10), so that the client stores its cursor with it; without
// one when the log does not hold cursor (pruned past it meanwhile) or it
// cannot be read (the client then learns it from its next pull, and a
// handshake before that is judged "unverified").
func (d *database) snapshotComplete(cursor uint64) *wire.SnapshotComplete {
	ch, ok, err := d.chainAt(cursor)
	if err != nil || !ok {
		return &wire.SnapshotComplete{}
	}
	return &wire.SnapshotComplete{Cursor: cursor, Chain: ch}
}

// holdsSnapshotPosition reports whether the log still holds the position
// cp's snapshot was taken at: cp's cursor, with the chain value bound into
// its snapshot id. False for a log restored from an older copy (the cursor
// names other entries, or none), pruned past the cursor, or an id that
// binds no chain value (nothing to judge by).
func (d *database) holdsSnapshotPosition(cp *model.SnapshotCheckpoint) (bool, error) {
	want, ok := boundChain(cp.SnapshotID)
	if !ok {
		return false, nil
	}
	held, ok, err := d.chainAt(cp.Cursor)
	return ok && held == want, err
}

// siteHLC returns the highest hlc among the ChangeSets of site the log
// ever appended, and false when it appended none.
func siteHLC(tx kv.Tx, site model.SiteID) (model.HLC, bool, error) {
	v, err := tx.Get(bucketSites, site[:])
	if errors.Is(err, kv.ErrNotFound) {
		return model.HLC{}, false, nil
	}
	if err != nil {
		return model.HLC{}, false, err
	}
	h, err := model.HLCFromBytes(v)
	if err != nil {
		return model.HLC{}, false, fmt.Errorf("%w: site %s: %w", errCorrupt, site, err)
	}
	return h, true, nil
}

// raiseSiteHLC records h as site's highest appended hlc if it is higher.
func raiseSiteHLC(tx kv.Tx, site model.SiteID, h model.HLC) error {
	old, ok, err := siteHLC(tx, site)
	if err != nil {
		return err
	}
	if ok && !old.Less(h) {
		return nil
	}
	return tx.Put(bucketSites, site[:], h.Bytes())
}

// upgradeFormat1 gives a format-1 file what format 2 adds: chain values for
// every retained record, starting from wire.GenesisChain at the compaction
// point (no client holds a chain value of a format-1 log), and the highest
// hlc per site among the retained records (a site whose records were all
// pruned gets none: its clients push their transactions again, which the
// merged replica skips as already held).
func upgradeFormat1(tx kv.Tx) error {
	type entry struct {
		cursor []byte
		chain  wire.Chain
		site   model.SiteID
		hlc    model.HLC
	}
	var es []entry
	ch := wire.GenesisChain
	var derr error
	err := tx.Scan(bucketArrivals, kv.Range{}, func(k, v []byte) bool {
		r, err := decodeRecord(v)
		if err != nil {
			derr = err
			return false
		}
		ch = nextChain(ch, r.key)
		var probe struct {
			HLC string `json:"hlc"`
		}
		if err := json.Unmarshal(r.json, &probe); err != nil {
			derr = fmt.Errorf("%w: record %x: %w", errCorrupt, k, err)
			return false
		}
		h, err := wire.ParseHLC(probe.HLC)
		if err != nil {
			derr = fmt.Errorf("%w: record %x: %w", errCorrupt, k, err)
			return false
		}
		site, _, _ := dedupKeySite(r.key)
		es = append(es, entry{cursor: bytes.Clone(k), chain: ch, site: site, hlc: h})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := tx.Put(bucketChain, e.cursor, e.chain[:]); err != nil {
			return err
		}
		if err := raiseSiteHLC(tx, e.site, e.hlc); err != nil {
			return err
		}
	}
	if err := tx.Put(bucketRelay, keyChain, ch[:]); err != nil {
		return err
	}
	return tx.Put(bucketRelay, keyFormat, []byte(relayFormat))
}

// StoreBuckets returns the buckets a database's store must hold (a new
// slice): a Config.OpenStore store is opened with them.
func StoreBuckets() []string { return append([]string(nil), storeBuckets...) }
