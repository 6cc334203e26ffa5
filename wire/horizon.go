package wire

import (
	"strconv"

	"github.com/replica-sync/replica/model"
)

// Horizon is a tombstone horizon mark of a relay log (version 3; "Tombstone
// horizon" in the package documentation): the relay pruned the tombstones
// deleted before Wall after the ChangeSet at Cursor and before the one at
// Cursor+1, so every replica prunes the same tombstones
// (engine.PruneTombstones(Wall)) at the same point of the log and decides
// every later change alike.
//
//	{"cursor":41,"wall":1764633600000,"chain":"<22>","siteHlc":"<40>"}
type Horizon struct {
	// Cursor is the arrival sequence the mark follows (0: before the
	// first ChangeSet), at most MaxCursor.
	Cursor uint64
	// Wall is the horizon: tombstones whose deletion's HLC wall time (ms
	// since the Unix epoch) is before it were pruned. Not 0, at most
	// MaxCursor.
	Wall uint64
	// Chain is the log's chain value at Cursor (required).
	Chain Chain
	// SiteHLC is the highest hlc among the ChangeSets of the receiving
	// connection's site the log held when the relay made the mark
	// (version 4; JSON "siteHlc", optional): the relay pruned those and
	// nothing later of that site, so the receiver keeps, when it prunes
	// at the mark, its own facts above SiteHLC (they reached the relay
	// after the mark, or have not yet) and only those. SiteHLCStated
	// reports that the member is present; the zero HLC says the log held
	// none of the site's. A relay of version 4 states it in every mark it
	// sends; a receiver of a mark without it keeps its own facts above
	// its sent watermark. The relay fills it per connection: the same
	// mark carries another siteHlc to each site.
	SiteHLC       model.HLC
	SiteHLCStated bool
}

// checkHorizons checks marks as a receiver does: each valid (wall not 0,
// cursor and wall at most MaxCursor), ascending (cursors non-decreasing,
// walls increasing), and every cursor within [lo, hi]. The error is
// ErrInvalidMessage on the encoding side (enc) and ErrMalformed, at
// "horizons", on the decoding side.
func checkHorizons(hs []Horizon, lo, hi uint64) (int, string) {
	for i, h := range hs {
		switch {
		case h.Wall == 0:
			return i, "wall must not be 0"
		case h.Wall > MaxCursor:
			return i, "wall " + strconv.FormatUint(h.Wall, 10) + " above 2^53"
		case h.Cursor > MaxCursor:
			return i, "cursor " + strconv.FormatUint(h.Cursor, 10) + " above 2^53"
		case h.Chain.IsZero():
			return i, "chain must not be empty"
		case h.Cursor < lo || h.Cursor > hi:
			return i, "cursor " + strconv.FormatUint(h.Cursor, 10) + " outside the message's range [" +
				strconv.FormatUint(lo, 10) + ", " + strconv.FormatUint(hi, 10) + "]"
		case i > 0 && (h.Cursor < hs[i-1].Cursor || h.Wall <= hs[i-1].Wall):
			return i, "out of order: marks ascend by cursor and wall"
		}
	}
	return -1, ""
}

// appendHorizons appends `,"horizons":[…]` for non-empty hs, checked
// against the range [lo, hi].
func appendHorizons(b []byte, hs []Horizon, lo, hi uint64) ([]byte, error) {
	if len(hs) == 0 {
		return b, nil
	}
	if i, why := checkHorizons(hs, lo, hi); i >= 0 {
		return b, at(atIndex(invalid("%s", why), i), "horizons")
	}
	b = append(b, `,"horizons":`...)
	return AppendHorizons(b, hs), nil
}

// AppendHorizons appends hs as a JSON array of horizon marks
// ([{"cursor":…,"wall":…,"chain":…,"siteHlc":…}, …]; siteHlc when
// stated) without checking them: for a
// relay that assembles changes and push_changes frames from stored bytes
// (the members in this order, as Encode writes them).
func AppendHorizons(b []byte, hs []Horizon) []byte {
	b = append(b, '[')
	for i, h := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"cursor":`...)
		b = appendUint(b, h.Cursor)
		b = append(b, `,"wall":`...)
		b = appendUint(b, h.Wall)
		b = append(b, `,"chain":`...)
		b = appendChain(b, h.Chain)
		if h.SiteHLCStated {
			b = append(b, `,"siteHlc":`...)
			b = appendHLC(b, h.SiteHLC)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// horizons reads a "horizons" array; the caller checks the order and range
// (checkHorizons) once the message's cursor is known.
func (r *reader) horizons() ([]Horizon, error) {
	var out []Horizon
	err := r.elements(func(int) error {
		h, err := r.horizon()
		out = append(out, h)
		return err
	})
	return out, err
}

func (r *reader) horizon() (Horizon, error) {
	var h Horizon
	var seen fields
	const (
		fCursor fields = 1 << iota
		fWall
		fChain
		fSiteHLC
	)
	start := r.Pos
	err := r.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case "cursor":
			if err = seen.See(&r.Reader, fCursor, key); err == nil {
				h.Cursor, err = r.uint(MaxCursor)
			}
		case "wall":
			if err = seen.See(&r.Reader, fWall, key); err == nil {
				h.Wall, err = r.uint(MaxCursor)
			}
		case "chain":
			if err = seen.See(&r.Reader, fChain, key); err == nil {
				h.Chain, err = r.chain()
			}
		case "siteHlc":
			if err = seen.See(&r.Reader, fSiteHLC, key); err == nil {
				h.SiteHLC, err = r.hlc()
				h.SiteHLCStated = err == nil
			}
		default:
			return r.UnknownKey(key)
		}
		return at(err, string(key))
	})
	if err == nil {
		err = seen.Require(&r.Reader, fCursor|fWall|fChain, "cursor", "wall", "chain")
	}
	if err == nil && h.Wall == 0 {
		err = at(r.FailAt(start, "wall must not be 0"), "wall")
	}
	return h, err
}

// checkDecodedHorizons refuses marks out of order or outside [lo, hi], as
// a protocol error at "horizons" (ErrMalformed).
func (r *reader) checkDecodedHorizons(hs []Horizon, lo, hi uint64, start int) error {
	if i, why := checkHorizons(hs, lo, hi); i >= 0 {
		return at(atIndex(r.FailAt(start, "%s", why), i), "horizons")
	}
	return nil
}
