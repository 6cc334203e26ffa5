package seal

import (
	"fmt"

	"github.com/replica-sync/replica/wire"
)

// sealKey is what keySet needs of a key: its id and whether it can seal
// and open (not the zero value). Key (native) and WebKey (the browser)
// implement it.
type sealKey interface {
	ID() wire.KeyID
	usable() bool
}

// keySet holds the keys of a keyring, Keyring's and WebKeyring's alike:
// the current key, which seals, and every key by id, which open (see
// "Rotation"). It is read-only after newKeySet, so safe for concurrent
// use.
type keySet[K sealKey] struct {
	current K
	keys    map[wire.KeyID]K
}

// newKeySet returns the key set of current and older; keys with the same
// id are the same key and kept once. Errors: a key that is not usable
// (kind names its type in the message).
func newKeySet[K sealKey](kind string, current K, older []K) (keySet[K], error) {
	if !current.usable() {
		return keySet[K]{}, fmt.Errorf("seal: the current key is the zero %s", kind)
	}
	s := keySet[K]{current: current, keys: map[wire.KeyID]K{current.ID(): current}}
	for i, k := range older {
		if !k.usable() {
			return keySet[K]{}, fmt.Errorf("seal: older key %d is the zero %s", i, kind)
		}
		if _, ok := s.keys[k.ID()]; !ok {
			s.keys[k.ID()] = k
		}
	}
	return s, nil
}

// Current returns the id of the key that seals.
func (s *keySet[K]) Current() wire.KeyID { return s.current.ID() }

// KeyIDs implements Sealer: the current key's id first, then the older
// keys' (in no particular order).
func (s *keySet[K]) KeyIDs() []wire.KeyID {
	cur := s.current.ID()
	ids := make([]wire.KeyID, 0, len(s.keys))
	ids = append(ids, cur)
	for id := range s.keys {
		if id != cur {
			ids = append(ids, id)
		}
	}
	return ids
}

// opening parses envelope and returns the key that opens it, the parsed
// envelope and its associated data (ad with the envelope's key id), for
// Open to decrypt e.Sealed with. Errors wrap ErrEnvelopeInvalid (it does
// not parse, or ad does not encode) or ErrDecryptFailed (a newer envelope
// version, or a key id the set does not hold).
func (s *keySet[K]) opening(ad wire.EnvelopeAD, envelope []byte) (k K, e wire.Envelope, aad []byte, err error) {
	e, err = wire.ParseEnvelope(envelope)
	if err != nil {
		return k, e, nil, fmt.Errorf("%w: %w", ErrEnvelopeInvalid, err)
	}
	if e.Version != wire.EnvelopeVersion {
		return k, e, nil, fmt.Errorf("%w: envelope version %d, this build opens version %d", ErrDecryptFailed, e.Version, wire.EnvelopeVersion)
	}
	k, ok := s.keys[e.KeyID]
	if !ok {
		return k, e, nil, fmt.Errorf("%w: sealed with key id %s, not among the %d keys given", ErrDecryptFailed, e.KeyID, len(s.keys))
	}
	if aad, err = ad.Append(nil, e.KeyID); err != nil {
		return k, e, nil, fmt.Errorf("%w: %w", ErrEnvelopeInvalid, err)
	}
	return k, e, aad, nil
}
