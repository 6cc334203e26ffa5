package wire

import "github.com/replica-sync/replica/model"

// ChainSize is the size in bytes of a Chain value.
const ChainSize = 16

// Chain is a relay log's chain value at one cursor: a digest of the log's
// whole history up to that cursor, so that a client can tell whether the
// log it syncs with now is a continuation of the one it synced with before
// (see "Verifying the relay's log" in the package documentation). The
// value at cursor 0 is GenesisChain; the value at cursor n is
// Chain(n−1).Next(site id, transactionId of entry n). The zero Chain is
// not a chain value: it stands for "none" in messages.
type Chain [ChainSize]byte

// GenesisChain is the chain value of an empty log (cursor 0): the first 16
// bytes of SHA-256("replica arrival log"). A relay log upgraded from a
// format without chain values takes it as the value at its compaction
// point. It is written out (TestGenesisChain checks it) rather than
// computed at start-up, which would link crypto/sha256, and with it the
// FIPS 140 module (about 100 KB of code), into the browser build, whose
// client never computes a chain value (Next is native only:
// chain_notjs.go).
var GenesisChain = Chain{0x75, 0xc1, 0xb7, 0x0d, 0xb8, 0xe9, 0xc4, 0x69, 0xf8, 0xe4, 0x55, 0xa0, 0x32, 0x38, 0xd9, 0xfc}

// chainInput is what Next hashes: c ‖ site (16 bytes) ‖ transactionID
// (UTF-8).
func chainInput(c Chain, site model.SiteID, transactionID string) []byte {
	b := make([]byte, 0, ChainSize+len(site)+len(transactionID))
	b = append(b, c[:]...)
	b = append(b, site[:]...)
	return append(b, transactionID...)
}

// IsZero reports whether c is the zero Chain ("none").
func (c Chain) IsZero() bool { return c == Chain{} }

// String returns the wire form: base64url without padding, 22 characters
// (the encoding of site ids).
func (c Chain) String() string { return urlStrict.EncodeToString(c[:]) }

// ParseChain parses the wire form of a chain value; anything but 22
// base64url characters decoding to 16 bytes, or the zero value, is an
// error matching ErrMalformed.
func ParseChain(s string) (Chain, error) {
	r := newReader([]byte(`"` + s + `"`))
	return r.chain()
}

func appendChain(b []byte, c Chain) []byte {
	b = append(b, '"')
	b = urlStrict.AppendEncode(b, c[:])
	return append(b, '"')
}

// chain reads a JSON string holding a chain value.
func (r *reader) chain() (Chain, error) {
	var c Chain
	start := r.Pos
	if r.Peek() != '"' {
		return c, r.Want("a chain value (a string)")
	}
	s, err := r.StringBytes()
	if err != nil {
		return c, err
	}
	var raw [17]byte
	if len(s) != siteTextLen {
		return c, r.FailAt(start, "chain value: want %d base64url characters, got %d", siteTextLen, len(s))
	}
	if n, err := urlStrict.Decode(raw[:], s); err != nil || n != ChainSize {
		return c, r.FailAt(start, "chain value %q: not base64url without padding", s)
	}
	copy(c[:], raw[:])
	if c.IsZero() {
		return c, r.FailAt(start, "chain value %q: all zeros is not a chain value", s)
	}
	return c, nil
}

// History is the relay's verdict, in handshake_ack, on the log position a
// client presented in its handshake.
type History string

const (
	// HistoryContinues: the relay's log holds the presented cursor with
	// the presented chain value there; the client may pull from its
	// cursor.
	HistoryContinues History = "continues"
	// HistoryDiverged: the relay's log is not a continuation of the
	// presented one (its head is below the cursor, or its chain value at
	// the cursor differs: restored from an older copy, truncated, or
	// replaced). The client's cursor names other entries, or none: the
	// client bootstraps again.
	HistoryDiverged History = "diverged"
	// HistoryUnverified (version 10): the relay's log holds the presented
	// cursor, within its retained log, but the handshake carried no chain
	// value to check it against (a cursor taken from a snapshot's header,
	// stored before the first pull brought the chain value). Nothing tells
	// whether the log's entries up to it are the ones the client saw: a
	// relay restored from an older copy may have appended others since, up
	// to and past the cursor. A client that presented a cursor of its own
	// treats it as diverged; one that presented an interrupted snapshot's
	// checkpoint cursor resumes it (resume_snapshot checks the position
	// the snapshot was taken at).
	HistoryUnverified History = "unverified"
)
