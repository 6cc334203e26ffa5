package client

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Errors of sealed databases (see "Sealed databases" in the package
// documentation). They are package seal's, so errors.Is matches either.
var (
	// ErrDecryptFailed (code DECRYPT_FAILED) is reported (ErrorReported)
	// when the relay's log holds an envelope that no key of the client's
	// Sealer opens: a wrong key, or one another device rotated to that
	// this one was not given. Nothing from that point of the log on is
	// applied: the cursor stays before it, the envelopes stay held in the
	// relay's log, and the client stops pulling until SetSealer gives it
	// keys (or it reconnects), then applies them.
	ErrDecryptFailed = seal.ErrDecryptFailed
	// ErrEnvelopeInvalid (code ENVELOPE_INVALID) is reported when an
	// envelope names a key the client holds but does not authenticate
	// (altered by the relay or on the way, moved to another database,
	// site, transaction or HLC). That ChangeSet is refused; the rest of
	// the page applies and the cursor moves past it.
	ErrEnvelopeInvalid = seal.ErrEnvelopeInvalid
	// ErrNotSealed is returned by SetSealer on a client created without
	// Options.Sealer: a database's mode is fixed, and so is the client's.
	ErrNotSealed = errors.New("client: not a sealed client (Options.Sealer was nil)")
)

// SetSealer replaces the client's Sealer (Options.Sealer), for instance with
// the right key after DECRYPT_FAILED, or with a new current key after a
// rotation (keeping the old ones to open older envelopes). The current
// session is dropped so that the next one pulls, with the new keys, the
// envelopes the old ones could not open. It never blocks. Errors:
// ErrNotSealed for a client of a plain database; a nil s.
func (c *Client) SetSealer(s seal.Sealer) error {
	if s == nil {
		return fmt.Errorf("client: SetSealer(nil): a sealed client keeps a Sealer")
	}
	c.mu.Lock()
	if c.sealer == nil {
		c.mu.Unlock()
		return ErrNotSealed
	}
	c.sealer = s
	c.mu.Unlock()
	c.DropConnection()
	return nil
}

// sealerNow returns the current Sealer, nil for a plain client.
func (c *Client) sealerNow() seal.Sealer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sealer
}

// sealed reports whether the client syncs a sealed database.
func (c *Client) sealed() bool { return c.opts.Sealer != nil }

// sealSets returns sets sealed for the push (a plain client: sets as is).
func (s *session) sealSets(sets []model.ChangeSet) ([]model.ChangeSet, error) {
	sl := s.c.sealerNow()
	if sl == nil {
		return sets, nil
	}
	out := make([]model.ChangeSet, len(sets))
	for i := range sets {
		var err error
		if out[i], err = seal.SealChangeSet(sl, s.t.databaseID, &sets[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openSets returns the plain ChangeSets of sets received from the relay
// (a plain client: sets as is). An envelope that does not authenticate
// (ErrEnvelopeInvalid) is left out and reported; with quiet, it fails
// instead, reporting nothing. One that no key opens stops it: it returns
// an error wrapping ErrDecryptFailed, and the caller applies nothing of
// sets.
func (s *session) openSets(sets []model.ChangeSet, quiet bool) ([]model.ChangeSet, error) {
	sl := s.c.sealerNow()
	if sl == nil {
		return sets, nil
	}
	out := make([]model.ChangeSet, 0, len(sets))
	var opened []wire.KeyID
	for i := range sets {
		cs, err := seal.OpenChangeSet(sl, s.t.databaseID, &sets[i])
		switch {
		case errors.Is(err, seal.ErrDecryptFailed), err != nil && quiet:
			return nil, err
		case err != nil:
			err = fmt.Errorf("client: refused a ChangeSet from the relay (the rest applies): %w", err)
			s.c.log.Warn("replica sync: an envelope does not authenticate", "err", err)
			s.c.report(err)
			continue
		}
		out = append(out, cs)
		if e, err := wire.ParseEnvelope(sets[i].Envelope); err == nil {
			opened = append(opened, e.KeyID)
		}
	}
	if len(opened) > 0 {
		if err := s.proveKey(opened...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keyMissing stops pulling after an envelope no key opens (err wraps
// ErrDecryptFailed): nothing is applied, the cursor stays, and no pull is
// sent until the next session (SetSealer starts one). The state is Syncing.
func (s *session) keyMissing(err error) {
	s.keyStalled = true
	s.pullFails++
	s.showState()
	err = fmt.Errorf("client: the changes after cursor %d are held, not applied, until a key that opens them is given (SetSealer): %w", s.cursor, err)
	s.c.log.Warn("replica sync: no key opens an envelope", "err", err)
	s.c.report(err)
}

// knownKeysKey names the ids of the keys a sealed database is known to
// use, as this replica learned them (see "Sealed databases" in the package
// documentation): key ids in hex, separated by spaces. A key id reveals
// nothing of its key (the relay sees them on every envelope).
func knownKeysKey(databaseID string) string { return "sync:keys#" + databaseID }

// loadKeyProof reads the database's known key ids at the handshake; the
// session's key is proven at once when the Sealer holds one of them.
func (s *session) loadKeyProof() error {
	s.keyProven, s.knownKeys = false, nil
	if !s.c.sealed() {
		return nil
	}
	b, err := s.db.State(knownKeysKey(s.t.databaseID))
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(b)) {
		var id wire.KeyID
		if n, err := hex.Decode(id[:], []byte(f)); err == nil && n == len(id) {
			s.knownKeys = append(s.knownKeys, id)
		}
	}
	for _, id := range s.c.sealerNow().KeyIDs() {
		if slices.Contains(s.knownKeys, id) {
			return s.proveKey()
		}
	}
	return nil
}

// proveKey records that the session's Sealer holds a key of the database:
// it opened envelopes (or a checkpoint part) sealed with the keys opened,
// pulled from the relay, or the relay's log is empty (this device is the
// first), or it holds a key id stored as the database's. The ids opened
// and the Sealer's current key id are stored as the database's, so a
// later session with the same keys (a restart) is proven at once. From
// then on the session may push (pushHeld).
func (s *session) proveKey(opened ...wire.KeyID) error {
	ids := append(opened, s.c.sealerNow().KeyIDs()[0])
	n := len(s.knownKeys)
	for _, id := range ids {
		if !slices.Contains(s.knownKeys, id) {
			s.knownKeys = append(s.knownKeys, id)
		}
	}
	if !s.keyProven {
		s.c.log.Debug("replica sync: the key is proven to be the sealed database's", "database", s.t.databaseID)
	}
	s.keyProven = true
	if len(s.knownKeys) == n {
		return nil
	}
	f := make([]string, len(s.knownKeys))
	for i, id := range s.knownKeys {
		f[i] = id.String()
	}
	return s.db.SetState(knownKeysKey(s.t.databaseID), []byte(strings.Join(f, " ")))
}

// pushHeld reports whether a sealed session holds its pushes (and
// checkpoint uploads): until its key is proven to be the database's
// (proveKey), so that a device given a wrong key pushes nothing the
// others cannot open; and while it holds envelopes no key of its opens
// (keyStalled: a wrong key, or one another device rotated to), so that
// it writes again only once given the keys the database uses. Its writes
// stay in the replica, pending (Client.Pending), and go out once the
// session is proven and not stalled (SetSealer with the right keys).
func (s *session) pushHeld() bool {
	return s.c.sealed() && (!s.keyProven || s.keyStalled)
}
