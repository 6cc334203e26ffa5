package client

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Persisted state. The client keeps its watermarks in the engine's state
// (engine.State, engine.SetState, ApplyOptions.State), so they live in the
// same store as the data they describe and commit with it. The keys are
// documented in the package documentation ("Persisted state").

// namespace returns the key prefix of one relay log: the relay's site id
// (handshake_ack.serverSiteId) and the database id.
func namespace(server model.SiteID, databaseID string) string {
	return "sync:" + server.String() + "/" + databaseID
}

// namespaceServer returns the relay site id of a namespace, or false when
// ns is not one (a hint that does not decode).
func namespaceServer(ns, databaseID string) (model.SiteID, bool) {
	rest, ok := strings.CutPrefix(ns, "sync:")
	if !ok {
		return model.SiteID{}, false
	}
	site, db, ok := strings.Cut(rest, "/")
	if !ok || db != databaseID {
		return model.SiteID{}, false
	}
	s, err := model.ParseSiteID(site)
	return s, err == nil && !s.IsZero()
}

func cursorKey(ns string) string { return ns + ":cursor" }
func sentKey(ns string) string   { return ns + ":sent" }
func chainKey(ns string) string  { return ns + ":chain" }
func ackedKey(ns string) string  { return ns + ":acked" }

// horizonKey names the tombstone horizon applied for the relay log ns:
// the wall (ms, decimal) of the last horizon mark applied, or of the
// bootstrapping snapshot's header (wire's "Tombstone horizon").
func horizonKey(ns string) string { return ns + ":horizon" }

// echoKey names the range of this replica's own transactions it asks the
// relay log ns to send back (get_changes' ownAbove and ownUpTo, wire's
// "Own ChangeSets after a mark"): "<ownAbove> <ownUpTo>", two HLCs in
// wire's text form; absent: none.
func echoKey(ns string) string { return ns + ":echo" }

// repairKey names the progress of a repair push to the relay log ns
// (wire's "Repair pushes"): "@" followed by the engine.PeerFacts position
// to resume from, base64url without padding ("@" alone: from the
// beginning); absent: no repair pending.
func repairKey(ns string) string { return ns + ":repair" }

func encodeRepair(pos []byte) []byte {
	return append([]byte{'@'}, base64.RawURLEncoding.EncodeToString(pos)...)
}

func decodeRepair(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte{'@'})
	if !ok {
		return nil, fmt.Errorf("client: stored repair position %q does not start with @", b)
	}
	pos, err := base64.RawURLEncoding.DecodeString(string(rest))
	if err != nil {
		return nil, fmt.Errorf("client: stored repair position %q: %w", b, err)
	}
	return pos, nil
}

// ownEcho is such a range; zero upTo: none.
type ownEcho struct{ above, upTo model.HLC }

func (o ownEcho) set() bool { return !o.upTo.IsZero() }

func encodeEcho(o ownEcho) []byte {
	if !o.set() {
		return nil
	}
	return []byte(wire.FormatHLC(o.above) + " " + wire.FormatHLC(o.upTo))
}

func decodeEcho(b []byte) (ownEcho, error) {
	a, u, ok := strings.Cut(string(b), " ")
	if !ok {
		return ownEcho{}, fmt.Errorf("client: stored own range %q: want two HLCs", b)
	}
	var o ownEcho
	var err error
	if o.above, err = wire.ParseHLC(a); err == nil {
		o.upTo, err = wire.ParseHLC(u)
	}
	if err == nil && !o.above.Less(o.upTo) {
		err = errors.New("the upper bound is not above the lower one")
	}
	if err != nil {
		return ownEcho{}, fmt.Errorf("client: stored own range %q: %w", b, err)
	}
	return o, nil
}

// relayKey names the hint that maps a relay URL and database to the
// serverSiteId last seen there, so that Pending can find the sent
// watermark before the handshake.
func relayKey(url, databaseID string) string { return "sync:relay:" + url + "#" + databaseID }

// lastLogKey names the hint that maps a database to the relay log (its
// namespace) this replica last synced it with, at any URL: a relay moved to
// a new URL is presented the position this replica holds in its log, so it
// can still say whether its log continues it (a restored copy at a new
// address is caught as at the old one).
func lastLogKey(databaseID string) string { return "sync:last#" + databaseID }

func encodeCursor(c uint64) []byte { return strconv.AppendUint(nil, c, 10) }

func decodeCursor(b []byte) (uint64, error) {
	c, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || c > wire.MaxCursor {
		return 0, fmt.Errorf("client: stored cursor %q is not a cursor", b)
	}
	return c, nil
}

func encodeHLC(h model.HLC) []byte { return []byte(wire.FormatHLC(h)) }

func decodeHLC(b []byte) (model.HLC, error) {
	h, err := wire.ParseHLC(string(b))
	if err != nil {
		return model.HLC{}, fmt.Errorf("client: stored sent watermark: %w", err)
	}
	return h, nil
}

// encodeChain stores the relay log's chain value at cursor c: "<c> <chain>".
// It names its cursor, so a chain value left behind by a cursor stored
// without one is never taken for the new cursor's.
func encodeChain(c uint64, ch wire.Chain) []byte {
	return append(append(encodeCursor(c), ' '), ch.String()...)
}

func decodeChain(b []byte) (uint64, wire.Chain, error) {
	cs, chs, ok := strings.Cut(string(b), " ")
	if !ok {
		return 0, wire.Chain{}, fmt.Errorf("client: stored chain value %q is not \"<cursor> <chain>\"", b)
	}
	c, err := decodeCursor([]byte(cs))
	if err != nil {
		return 0, wire.Chain{}, fmt.Errorf("client: stored chain value %q: %w", b, err)
	}
	ch, err := wire.ParseChain(chs)
	if err != nil {
		return 0, wire.Chain{}, fmt.Errorf("client: stored chain value %q: %w", b, err)
	}
	return c, ch, nil
}

// cursorState returns the State entries that store cursor c with the
// chain value ch there (zero ch: unknown, and any stored one is deleted).
func cursorState(ns string, c uint64, ch wire.Chain) map[string][]byte {
	st := map[string][]byte{cursorKey(ns): encodeCursor(c), chainKey(ns): nil}
	if !ch.IsZero() {
		st[chainKey(ns)] = encodeChain(c, ch)
	}
	return st
}

// syncState is what the client keeps for one relay log.
type syncState struct {
	cursor     uint64
	haveCursor bool
	chain      wire.Chain // the log's chain value at cursor; zero: unknown
	sent       model.HLC
	sentReset  bool      // the stored sent watermark did not decode
	acked      model.HLC // the highest hlc the relay acknowledged
	haveAcked  bool
	reset      bool // a stored cursor or chain value did not decode
	// horizon is the tombstone horizon applied (horizonKey); 0: none,
	// or it did not decode (marks are then applied again: idempotent).
	horizon uint64
	// echo is the range of own transactions asked back (echoKey).
	echo ownEcho
	// repairing: a repair push is pending (repairKey), to resume from
	// repairPos (nil: the beginning). A position that does not decode
	// starts it again from the beginning.
	repairing bool
	repairPos []byte
}

// errDecode marks a stored value that does not decode.
var errDecode = errors.New("undecodable")

// loadState reads the state kept for ns. A value that does not decode (a
// stray write, a partial upgrade, a bug of an older version) is deleted
// when discard is set, and returned in resets as an ErrSyncStateReset
// error; the state then reads as if it had never been stored. Only a
// storage failure is an error.
func loadState(db *engine.Engine, ns string, discard bool) (st syncState, resets []error, err error) {
	read := func(key string, decode func([]byte) error) (bool, error) {
		b, err := db.State(key)
		if err != nil || b == nil {
			return false, err
		}
		derr := decode(b)
		if derr == nil {
			return true, nil
		}
		if discard {
			if err := db.SetState(key, nil); err != nil {
				return false, fmt.Errorf("client: discarding the undecodable %s: %w", key, err)
			}
		}
		resets = append(resets, fmt.Errorf("%w: %s: %w", ErrSyncStateReset, key, derr))
		return false, nil
	}
	st.haveCursor, err = read(cursorKey(ns), func(b []byte) (err error) {
		st.cursor, err = decodeCursor(b)
		return err
	})
	if err != nil {
		return st, resets, err
	}
	st.reset = len(resets) > 0
	n := len(resets)
	if _, err = read(chainKey(ns), func(b []byte) error {
		c, ch, err := decodeChain(b)
		if err == nil && st.haveCursor && c == st.cursor {
			st.chain = ch
		}
		return err
	}); err != nil {
		return st, resets, err
	}
	st.reset = st.reset || len(resets) > n
	n = len(resets)
	if _, err = read(sentKey(ns), func(b []byte) (err error) {
		st.sent, err = decodeHLC(b)
		return err
	}); err != nil {
		return st, resets, err
	}
	st.sentReset = len(resets) > n
	n = len(resets)
	if st.haveAcked, err = read(ackedKey(ns), func(b []byte) error {
		h, err := wire.ParseHLC(string(b))
		if err != nil {
			return fmt.Errorf("client: stored acknowledged watermark: %w", err)
		}
		st.acked = h
		return nil
	}); err != nil {
		return st, resets, err
	}
	st.sentReset = st.sentReset || len(resets) > n
	if _, err = read(horizonKey(ns), func(b []byte) (err error) {
		st.horizon, err = decodeCursor(b)
		if err != nil {
			err = fmt.Errorf("client: stored tombstone horizon %q is not a wall time", b)
		}
		return err
	}); err != nil {
		return st, resets, err
	}
	if _, err = read(echoKey(ns), func(b []byte) (err error) {
		st.echo, err = decodeEcho(b)
		return err
	}); err != nil {
		return st, resets, err
	}
	n = len(resets)
	if st.repairing, err = read(repairKey(ns), func(b []byte) (err error) {
		st.repairPos, err = decodeRepair(b)
		return err
	}); err != nil {
		return st, resets, err
	}
	// A position that does not decode: the repair starts again.
	st.repairing = st.repairing || len(resets) > n
	return st, resets, nil
}

// loadSent returns the sent watermark stored for ns (zero if none, or if
// it does not decode: every local transaction then counts as pending).
func loadSent(db *engine.Engine, ns string) (model.HLC, error) {
	b, err := db.State(sentKey(ns))
	if err != nil || b == nil {
		return model.HLC{}, err
	}
	h, err := decodeHLC(b)
	if err != nil {
		return model.HLC{}, nil
	}
	return h, nil
}
