//go:build js && wasm

package jsbridge

import (
	"encoding/hex"
	"errors"
	"strconv"
	"syscall/js"

	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// Keys of sealed databases (db.sync.connect's key and oldKeys; the d.ts's
// SealKey). In JavaScript a key is a SealKey, {keyId, cryptoKey}: the key
// id as 16 hex digits and a non-extractable AES-GCM CryptoKey
// (seal.WebKey), which an app can keep in IndexedDB and tabs post to each
// other over the BroadcastChannel (structured clone). A key derived from a
// passphrase also records the database it was derived for (database: the
// PBKDF2 salt holds that id), and connect refuses it for another database;
// a key from 32 bytes is any database's. facade.js turns a
// Uint8Array(32) or a {passphrase} into a SealKey with the sealKey
// operation before connecting; the raw bytes and the passphrase go no
// further, and no tab stores or posts them.

// sealKeyOp serves Replica.importKey and Replica.deriveKey (and the key
// options of db.sync.connect): a = database id (for a passphrase), b =
// the key's 32 bytes, or c = the passphrase as UTF-8 bytes (facade.js
// encodes it and overwrites its copy once Go has copied it, so that no Go
// string, which could not be overwritten, ever holds it). It derives the
// key on a goroutine of its own (WebCrypto answers asynchronously; PBKDF2
// takes about half a second), overwrites the bytes and resolves with a
// SealKey.
func sealKeyOp(c *call) {
	database, raw, pass := c.str(0), c.bytes(1), c.bytes(2)
	go func() {
		k, err := func() (k seal.WebKey, err error) {
			defer clear(raw)
			defer clear(pass)
			defer func() {
				if p := recover(); p != nil {
					err = panicError("deriving a key", p)
				}
			}()
			if raw != nil {
				if len(raw) != seal.KeySize {
					return k, argError("a key is a Uint8Array of %d bytes, got %d", seal.KeySize, len(raw))
				}
				return seal.ImportWebKey(raw)
			}
			if len(pass) == 0 {
				return k, argError("the passphrase must be a non-empty string")
			}
			if !wire.ValidDatabaseID(database) {
				return k, argError("a passphrase needs the database id it is for: %q is not a valid database id", database)
			}
			return seal.PassphraseWebKey(pass, database)
		}()
		if err != nil {
			if errors.Is(err, seal.ErrNoWebCrypto) {
				err = argError("%v", err)
			}
			method := "Replica.deriveKey"
			if raw != nil {
				method = "Replica.importKey"
			}
			c.b.reply(c.id, fail(err, method, ""))
			return
		}
		o := sealKeyJS(k)
		if raw == nil {
			o.Set("database", database)
		}
		c.b.settleValue(c.id, o)
	}()
}

// sealKeyJS is the SealKey of k: {keyId, cryptoKey}.
func sealKeyJS(k seal.WebKey) js.Value {
	o := jsObject.New()
	o.Set("keyId", k.ID().String())
	o.Set("cryptoKey", k.CryptoKey())
	return o
}

// parseSealKeys reads an array of SealKeys (the current key first, then
// older ones) for database, as facade.js passes them; undefined or null:
// none (a plain database). A SealKey derived from a passphrase for another
// database (its database member) is refused: it is not the key the
// database's other devices derive from that passphrase.
func parseSealKeys(v js.Value, database string) ([]seal.WebKey, error) {
	if v.Type() != js.TypeObject {
		return nil, nil
	}
	n := v.Length()
	keys := make([]seal.WebKey, 0, n)
	for i := 0; i < n; i++ {
		what := "options.key"
		if i > 0 {
			what = "options.oldKeys[" + strconv.Itoa(i-1) + "]"
		}
		o := v.Index(i)
		if o.Type() != js.TypeObject || o.Get("keyId").Type() != js.TypeString {
			return nil, argError("%s must be a Uint8Array of %d bytes, {passphrase}, or a key from Replica.importKey or Replica.deriveKey", what, seal.KeySize)
		}
		var id wire.KeyID
		b, err := hex.DecodeString(o.Get("keyId").String())
		if err != nil || len(b) != len(id) {
			return nil, argError("%s.keyId must be %d hex digits", what, 2*len(id))
		}
		copy(id[:], b)
		switch db := o.Get("database"); db.Type() {
		case js.TypeUndefined:
		case js.TypeString:
			if db.String() != database {
				return nil, argError("%s was derived from a passphrase for database %q, not %q: derive the key for this database", what, db.String(), database)
			}
		default:
			return nil, argError("%s.database must be a string (the database a passphrase key was derived for)", what)
		}
		k, err := seal.NewWebKey(id, o.Get("cryptoKey"))
		if err != nil {
			return nil, argError("%s.cryptoKey: %v", what, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// sameKeys reports whether a and b hold the keys of the same ids in the
// same order (the same current key, the same older ones).
func sameKeys(a, b []seal.WebKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID() != b[i].ID() {
			return false
		}
	}
	return true
}

// keyring returns the Sealer of keys (keys[0] seals).
func keyring(keys []seal.WebKey) (seal.Sealer, error) {
	return seal.NewWebKeyring(keys[0], keys[1:]...)
}
