//go:build js && wasm

package seal

import (
	"errors"
	"fmt"
	"syscall/js"

	"github.com/replica-sync/replica/wire"
)

// The browser's Sealer: WebCrypto (crypto.subtle) does HKDF, PBKDF2 and
// AES-256-GCM, so the wasm build links none of Go's ciphers. Keys, key ids
// and envelopes are those of the native Keyring byte for byte (see
// "Keys"; wire/testdata/envelopes.json holds the shared vectors).
//
// Every function here that returns after a WebCrypto Promise settles
// blocks its goroutine until then: call it from a goroutine of its own,
// never from a js.FuncOf callback (the Promise could never settle: the
// callback holds the only thread) and never inside a kv transaction
// (IndexedDB commits a transaction whose callbacks went idle).

var (
	jsCrypto     = js.Global().Get("crypto")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsObject     = js.Global().Get("Object")
	jsCryptoKey  = js.Global().Get("CryptoKey")
)

// ErrNoWebCrypto is returned when the page offers no crypto.subtle (an
// insecure context: a page served over http:// from a host other than
// localhost).
var ErrNoWebCrypto = errors.New("seal: WebCrypto (crypto.subtle) is not available: a sealed database needs a secure context (https://, or http://localhost)")

func subtle() (js.Value, error) {
	if jsCrypto.Type() != js.TypeObject {
		return js.Value{}, ErrNoWebCrypto
	}
	s := jsCrypto.Get("subtle")
	if s.Type() != js.TypeObject {
		return js.Value{}, ErrNoWebCrypto
	}
	return s, nil
}

// settled is a Promise's outcome.
type settled struct {
	v   js.Value
	err error
}

// await blocks until promise settles and returns its value, or its
// rejection as an error (a js.Error). Both callbacks are released before it
// returns, whatever happens (promise not a thenable, its then throwing);
// neither blocks (the channel has room for the one that runs).
func await(promise js.Value) (_ js.Value, err error) {
	ch := make(chan settled, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := js.Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		ch <- settled{v: v}
		return nil
	})
	defer ok.Release()
	fail := js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := js.Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		ch <- settled{err: js.Error{Value: v}}
		return nil
	})
	defer fail.Release()
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("seal: awaiting a WebCrypto answer: %v", r)
			}
		}()
		if promise.Type() != js.TypeObject || promise.Get("then").Type() != js.TypeFunction {
			err = fmt.Errorf("seal: WebCrypto answered %s, not a Promise", promise.Type())
			return
		}
		promise.Call("then", ok, fail)
	}()
	if err != nil {
		return js.Value{}, err
	}
	r := <-ch
	return r.v, r.err
}

// call calls crypto.subtle's method with args and awaits the Promise it
// returns. A synchronous throw (a bad argument) is returned as an error.
func call(method string, args ...any) (v js.Value, err error) {
	s, err := subtle()
	if err != nil {
		return js.Value{}, err
	}
	var p js.Value
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("seal: crypto.subtle.%s: %v", method, r)
			}
		}()
		p = s.Call(method, args...)
	}()
	if err != nil {
		return js.Value{}, err
	}
	return await(p)
}

// toJS copies b into a new Uint8Array.
func toJS(b []byte) js.Value {
	a := jsUint8Array.New(len(b))
	js.CopyBytesToJS(a, b)
	return a
}

// fromJS copies an ArrayBuffer's bytes into Go.
func fromJS(buf js.Value) []byte {
	a := jsUint8Array.New(buf)
	b := make([]byte, a.Get("length").Int())
	js.CopyBytesToGo(b, a)
	return b
}

// obj builds a plain JS object from alternating keys and values.
func obj(kv ...any) js.Value {
	o := jsObject.New()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func hkdfParams(info string) js.Value {
	return obj("name", "HKDF", "hash", "SHA-256", "salt", jsUint8Array.New(0), "info", toJS([]byte(info)))
}

// WebKey is one key of a sealed database in the browser: a non-extractable
// WebCrypto CryptoKey (AES-GCM, 256 bits, usages encrypt and decrypt) with
// its key id. A WebKey holds no key bytes: the CryptoKey can be stored in
// IndexedDB or posted to another tab (structured clone) but never read.
// The zero WebKey is not usable.
type WebKey struct {
	id  wire.KeyID
	key js.Value
}

// ImportWebKey returns the WebKey of 32 raw bytes (KeySize): HKDF-SHA-256
// of raw (empty salt) derives the AES-256 key (info HKDFInfoAESKey) as a
// non-extractable CryptoKey and the key id (info HKDFInfoKeyID, 8 bytes),
// as NewKey does natively. raw is not kept. It blocks until WebCrypto
// answers (milliseconds). Errors: raw not 32 bytes; ErrNoWebCrypto;
// WebCrypto's.
func ImportWebKey(raw []byte) (WebKey, error) {
	if len(raw) != KeySize {
		return WebKey{}, fmt.Errorf("seal: a key is %d bytes, got %d", KeySize, len(raw))
	}
	r := toJS(raw)
	base, err := call("importKey", "raw", r, "HKDF", false, []any{"deriveKey", "deriveBits"})
	r.Call("fill", 0)
	if err != nil {
		return WebKey{}, fmt.Errorf("seal: importing the key: %w", err)
	}
	aes, err := call("deriveKey", hkdfParams(HKDFInfoAESKey), base, obj("name", "AES-GCM", "length", 256), false, []any{"encrypt", "decrypt"})
	if err != nil {
		return WebKey{}, fmt.Errorf("seal: deriving the AES key: %w", err)
	}
	idBits, err := call("deriveBits", hkdfParams(HKDFInfoKeyID), base, 8*wire.EnvelopeKeyIDSize)
	if err != nil {
		return WebKey{}, fmt.Errorf("seal: deriving the key id: %w", err)
	}
	var id wire.KeyID
	copy(id[:], fromJS(idBits))
	return WebKey{id: id, key: aes}, nil
}

// PassphraseWebKey returns the WebKey of a passphrase for database
// databaseID: the 32 bytes of PBKDF2-HMAC-SHA-256 with PBKDF2Iterations
// iterations and salt PassphraseSalt(databaseID), as PassphraseKey derives
// them natively, given to ImportWebKey and then overwritten. passphrase
// is its UTF-8 bytes (bytes, not a string, so that the caller can
// overwrite them when done; PassphraseWebKey neither keeps nor changes
// them). It blocks for as long as the browser takes (about half a second
// in Chromium, by design). Errors: an empty passphrase, an invalid
// database id; ErrNoWebCrypto; WebCrypto's.
func PassphraseWebKey(passphrase []byte, databaseID string) (WebKey, error) {
	if len(passphrase) == 0 {
		return WebKey{}, fmt.Errorf("seal: empty passphrase")
	}
	if !wire.ValidDatabaseID(databaseID) {
		return WebKey{}, fmt.Errorf("seal: invalid database id %q", databaseID)
	}
	p := toJS(passphrase)
	base, err := call("importKey", "raw", p, "PBKDF2", false, []any{"deriveBits"})
	p.Call("fill", 0)
	if err != nil {
		return WebKey{}, fmt.Errorf("seal: importing the passphrase: %w", err)
	}
	bits, err := call("deriveBits", obj("name", "PBKDF2", "hash", "SHA-256", "salt", toJS(PassphraseSalt(databaseID)),
		"iterations", PBKDF2Iterations), base, 8*KeySize)
	if err != nil {
		return WebKey{}, fmt.Errorf("seal: stretching the passphrase: %w", err)
	}
	raw := fromJS(bits)
	jsUint8Array.New(bits).Call("fill", 0)
	k, err := ImportWebKey(raw)
	clear(raw)
	return k, err
}

// NewWebKey returns the WebKey of a CryptoKey that ImportWebKey or
// PassphraseWebKey made (WebKey.CryptoKey), kept by the application
// (IndexedDB) or received from another tab, with its key id. The CryptoKey
// must be a non-extractable AES-GCM 256-bit key for encrypt and decrypt;
// that it belongs to id cannot be checked (a wrong pairing opens nothing:
// ENVELOPE_INVALID on envelopes of id).
func NewWebKey(id wire.KeyID, cryptoKey js.Value) (WebKey, error) {
	if jsCryptoKey.Type() != js.TypeFunction || cryptoKey.Type() != js.TypeObject || !cryptoKey.InstanceOf(jsCryptoKey) {
		return WebKey{}, fmt.Errorf("seal: not a CryptoKey")
	}
	alg := cryptoKey.Get("algorithm")
	if alg.Get("name").String() != "AES-GCM" || alg.Get("length").Type() != js.TypeNumber || alg.Get("length").Int() != 256 {
		return WebKey{}, fmt.Errorf("seal: the CryptoKey is not an AES-GCM 256-bit key")
	}
	if cryptoKey.Get("extractable").Bool() {
		return WebKey{}, fmt.Errorf("seal: the CryptoKey is extractable; Replica uses non-extractable keys only")
	}
	usages := cryptoKey.Get("usages")
	if !usages.Call("includes", "encrypt").Bool() || !usages.Call("includes", "decrypt").Bool() {
		return WebKey{}, fmt.Errorf("seal: the CryptoKey's usages lack encrypt or decrypt")
	}
	if id == (wire.KeyID{}) {
		return WebKey{}, fmt.Errorf("seal: the zero key id names no key")
	}
	return WebKey{id: id, key: cryptoKey}, nil
}

// ID returns the key's id, as envelopes sealed with it carry it.
func (k WebKey) ID() wire.KeyID { return k.id }

// CryptoKey returns the non-extractable AES-GCM CryptoKey.
func (k WebKey) CryptoKey() js.Value { return k.key }

func (k WebKey) usable() bool { return k.key.Type() == js.TypeObject }

func gcmParams(nonce []byte, aad []byte) js.Value {
	return obj("name", "AES-GCM", "iv", toJS(nonce), "additionalData", toJS(aad), "tagLength", 8*wire.EnvelopeTagSize)
}

// WebKeyring is the browser's Sealer: a current WebKey, which seals, and
// older ones, which with it open (see "Rotation"). Its methods block while
// WebCrypto works (see the note at the top of this file). It is safe for
// concurrent use.
type WebKeyring struct {
	keySet[WebKey]
}

var _ Sealer = (*WebKeyring)(nil)

// NewWebKeyring returns a WebKeyring sealing with current and opening
// envelopes of current and of every older key; keys with the same id are
// kept once. Errors: a zero WebKey.
func NewWebKeyring(current WebKey, older ...WebKey) (*WebKeyring, error) {
	s, err := newKeySet("WebKey", current, older)
	if err != nil {
		return nil, err
	}
	return &WebKeyring{s}, nil
}

// Seal implements Sealer: the current key, a random 96-bit nonce from
// crypto.getRandomValues, AES-256-GCM by crypto.subtle.encrypt.
func (r *WebKeyring) Seal(ad wire.EnvelopeAD, plaintext []byte) ([]byte, error) {
	aad, err := ad.Append(nil, r.current.id)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if jsCrypto.Type() != js.TypeObject {
		return nil, ErrNoWebCrypto
	}
	n := jsUint8Array.New(wire.EnvelopeNonceSize)
	jsCrypto.Call("getRandomValues", n)
	var nonce [wire.EnvelopeNonceSize]byte
	js.CopyBytesToGo(nonce[:], n)
	ct, err := call("encrypt", gcmParams(nonce[:], aad), r.current.key, toJS(plaintext))
	if err != nil {
		return nil, fmt.Errorf("seal: AES-GCM: %w", err)
	}
	a := jsUint8Array.New(ct)
	out := make([]byte, wire.EnvelopeHeaderSize+a.Get("length").Int())
	wire.AppendEnvelopeHeader(out[:0], r.current.id, nonce)
	js.CopyBytesToGo(out[wire.EnvelopeHeaderSize:], a)
	return out, nil
}

// Open implements Sealer: errors wrap ErrDecryptFailed (no key of the
// ring is named, or a newer envelope version) or ErrEnvelopeInvalid
// (crypto.subtle.decrypt refused it: it does not authenticate).
func (r *WebKeyring) Open(ad wire.EnvelopeAD, envelope []byte) ([]byte, error) {
	if _, err := subtle(); err != nil {
		return nil, err
	}
	k, e, aad, err := r.opening(ad, envelope)
	if err != nil {
		return nil, err
	}
	pt, err := call("decrypt", gcmParams(e.Nonce[:], aad), k.key, toJS(e.Sealed))
	if err != nil {
		return nil, fmt.Errorf("%w: key id %s: %w", ErrEnvelopeInvalid, e.KeyID, err)
	}
	return fromJS(pt), nil
}
