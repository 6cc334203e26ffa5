package client

import (
	"fmt"
	"strconv"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// Persisted state. The client keeps its watermarks in the engine's state
// (engine.State, engine.SetState, ApplyOptions.State), so they live in the
// same store as the data they describe and commit with it. The keys are
// documented in the package documentation ("Persisted state").

// namespace returns the key prefix of one relay log: the relay's site id
// (handshake_ack.serverSiteId) and the database id.
func namespace(server engine.SiteID, databaseID string) string {
	return "sync:" + server.String() + "/" + databaseID
}

func cursorKey(ns string) string { return ns + ":cursor" }
func sentKey(ns string) string   { return ns + ":sent" }

// relayKey names the hint that maps a relay URL and database to the
// serverSiteId last seen there, so that Pending can find the sent
// watermark before the handshake.
func relayKey(url, databaseID string) string { return "sync:relay:" + url + "#" + databaseID }

func encodeCursor(c uint64) []byte { return strconv.AppendUint(nil, c, 10) }

func decodeCursor(b []byte) (uint64, error) {
	c, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || c > wire.MaxCursor {
		return 0, fmt.Errorf("client: stored cursor %q is not a cursor", b)
	}
	return c, nil
}

func encodeHLC(h engine.HLC) []byte { return []byte(wire.FormatHLC(h)) }

func decodeHLC(b []byte) (engine.HLC, error) {
	h, err := wire.ParseHLC(string(b))
	if err != nil {
		return engine.HLC{}, fmt.Errorf("client: stored sent watermark: %w", err)
	}
	return h, nil
}

// loadCursor returns the cursor stored for ns and whether there is one.
func loadCursor(db *engine.Engine, ns string) (uint64, bool, error) {
	b, err := db.State(cursorKey(ns))
	if err != nil || b == nil {
		return 0, false, err
	}
	c, err := decodeCursor(b)
	return c, err == nil, err
}

// loadSent returns the sent watermark stored for ns (zero if none).
func loadSent(db *engine.Engine, ns string) (engine.HLC, error) {
	b, err := db.State(sentKey(ns))
	if err != nil || b == nil {
		return engine.HLC{}, err
	}
	return decodeHLC(b)
}
