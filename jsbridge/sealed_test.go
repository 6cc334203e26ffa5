//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// The vectors' sequential key (000102…1f) and passphrase key
// (wire/testdata/envelopes.json; wire's TestWebCryptoVectors checks all).
const (
	seqKeyID        = "422130c940d0df34"
	passphraseKeyID = "2104ede934440504"
)

// TestSealKeys: Replica.importKey and Replica.deriveKey make SealKeys
// {keyId, cryptoKey} with the native key ids and a non-extractable
// AES-GCM CryptoKey; a SealKey survives IndexedDB (structured clone) and
// still works; bad keys reject with INVALID_ARGUMENT.
func TestSealKeys(t *testing.T) {
	api := jsv("Replica")
	k := must(t, api.Call("importKey", jsv("Uint8Array.from({length: 32}, (_, i) => i)")))
	if got := k.Get("keyId").String(); got != seqKeyID {
		t.Errorf("importKey keyId %s, want %s", got, seqKeyID)
	}
	ck := k.Get("cryptoKey")
	if ck.Get("extractable").Bool() || ck.Get("algorithm").Get("name").String() != "AES-GCM" || ck.Get("type").String() != "secret" {
		t.Errorf("cryptoKey %s extractable %v", describe(ck.Get("algorithm")), ck.Get("extractable").Bool())
	}
	if n := jsv("Object.keys").Invoke(k).Length(); n != 2 {
		t.Errorf("a SealKey has %d own properties, want 2 (keyId, cryptoKey): no raw bytes", n)
	}
	p := must(t, api.Call("deriveKey", jsv(`{passphrase: "correct horse battery staple", database: "acme:vault"}`)))
	if got := p.Get("keyId").String(); got != passphraseKeyID {
		t.Errorf("deriveKey keyId %s, want %s", got, passphraseKeyID)
	}
	mustReject(t, api.Call("importKey", jsv("new Uint8Array(31)")), "INVALID_ARGUMENT", "32 bytes")
	mustReject(t, api.Call("importKey", "x"), "INVALID_ARGUMENT", "Uint8Array")
	mustReject(t, api.Call("deriveKey", jsv(`{passphrase: "", database: "d"}`)), "INVALID_ARGUMENT", "passphrase")
	mustReject(t, api.Call("deriveKey", jsv(`{passphrase: "p", database: "bad id!"}`)), "INVALID_ARGUMENT", "database id")

	// Kept in IndexedDB and read back (a reload): the clone is a SealKey.
	stored := must(t, asyncfn("k", `
		const db = await new Promise((res, rej) => { const r = indexedDB.open("sealkey-test", 1);
			r.onupgradeneeded = () => r.result.createObjectStore("keys"); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
		await new Promise((res, rej) => { const tx = db.transaction("keys", "readwrite"); tx.objectStore("keys").put(k, "k"); tx.oncomplete = res; tx.onerror = () => rej(tx.error); });
		const back = await new Promise((res, rej) => { const r = db.transaction("keys").objectStore("keys").get("k"); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
		db.close();
		await new Promise((res) => { const r = indexedDB.deleteDatabase("sealkey-test"); r.onsuccess = r.onerror = res; });
		return back;`).Invoke(k))
	if stored.Get("keyId").String() != seqKeyID || !stored.Get("cryptoKey").InstanceOf(jsv("CryptoKey")) {
		t.Fatalf("SealKey read back from IndexedDB: %s", describe(stored))
	}

	db := openT(t)
	waitFor(t, "leadership", func() bool { return db.Get("isLeader").Bool() })
	s := db.Get("sync")
	d := dbOf(t, db)
	const url = "ws://127.0.0.1:9/sync"
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", key: "secret"}`)), "INVALID_ARGUMENT", "options.key")
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", key: new Uint8Array(16)}`)), "INVALID_ARGUMENT", "32 bytes")
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", oldKeys: []}`)), "INVALID_ARGUMENT", "options.key")
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", key: new Uint8Array(32), oldKeys: 5}`)), "INVALID_ARGUMENT", "oldKeys")
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", key: {keyId: "00", cryptoKey: 1}}`)), "INVALID_ARGUMENT", "options.key")
	mustReject(t, s.Call("connect", url, jsv(`{database: "d", key: {passphrase: ""}}`)), "INVALID_ARGUMENT", "passphrase")
	clKeys := func() []string {
		var ids []string
		d.enqueueWait(func() {
			d.sy.mu.Lock()
			defer d.sy.mu.Unlock()
			if d.sy.cl == nil {
				ids = []string{"no client"}
				return
			}
			for _, k := range d.sy.clKeys {
				ids = append(ids, k.ID().String())
			}
		})
		return ids
	}
	// The stored SealKey, with the passphrase's as an older key.
	connect := jsfn("s, url, o", "return s.connect(url, o)")
	must(t, connect.Invoke(s, url, jsv(`{database: "acme:vault"}`)))
	if ids := clKeys(); len(ids) != 0 {
		t.Errorf("plain connect: client keys %v", ids)
	}
	o := jsv(`{database: "acme:vault"}`)
	o.Set("key", stored)
	o.Set("oldKeys", jsv(`[{passphrase: "correct horse battery staple"}]`))
	must(t, connect.Invoke(s, url, o))
	if ids := clKeys(); len(ids) != 2 || ids[0] != seqKeyID || ids[1] != passphraseKeyID {
		t.Errorf("sealed connect: client keys %v, want [%s %s]", ids, seqKeyID, passphraseKeyID)
	}
	if d.sy.target == nil || len(d.sy.target.Keys) != 2 {
		t.Errorf("target %+v", d.sy.target)
	}
	must(t, s.Call("disconnect"))
}

// TestSealKeysReachLeader: a sealed connect in a tab that is not the
// leader gives the leader the keys (SealKeys over the BroadcastChannel);
// a tab that opens later learns them, and leads with them when the
// leader closes.
func TestSealKeysReachLeader(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "a leads", func() bool { return a.Get("isLeader").Bool() })
	b := openDB(t, name, testSchema)
	da, dbb := dbOf(t, a), dbOf(t, b)
	must(t, b.Get("sync").Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "shared", key: Uint8Array.from({length: 32}, (_, i) => i)}`)))
	hasKey := func(d *db) bool {
		var ok bool
		d.enqueueWait(func() {
			d.sy.mu.Lock()
			defer d.sy.mu.Unlock()
			ok = d.sy.cl != nil && len(d.sy.clKeys) == 1 && d.sy.clKeys[0].ID().String() == seqKeyID
		})
		return ok
	}
	waitFor(t, "the leader to run a sealed client with the key", func() bool { return hasKey(da) })
	if dbb.sy.cl != nil {
		t.Error("a tab that is not the leader runs a client")
	}
	c := openDB(t, name, testSchema)
	dc := dbOf(t, c)
	waitFor(t, "the late tab to learn the keys", func() bool {
		var ok bool
		dc.enqueueWait(func() { ok = dc.sy.target != nil && len(dc.sy.target.Keys) == 1 })
		return ok
	})
	must(t, a.Call("close"))
	waitFor(t, "a new leader with a sealed client", func() bool { return hasKey(dbb) || hasKey(dc) })
	must(t, b.Get("sync").Call("disconnect"))
	must(t, c.Call("close"))
}

// TestSealedConnectOrder: a connect whose key is still being derived (a
// passphrase: PBKDF2, about half a second) does not take effect after a
// disconnect or a connect called after it: the last call wins.
func TestSealedConnectOrder(t *testing.T) {
	db := openT(t)
	waitFor(t, "leadership", func() bool { return db.Get("isLeader").Bool() })
	s := db.Get("sync")
	d := dbOf(t, db)
	target := func() *syncTarget {
		var tg *syncTarget
		d.enqueueWait(func() { tg = d.sy.target })
		return tg
	}
	const url = "ws://127.0.0.1:9/sync"
	both := jsfn("s, url", `return Promise.all([
		s.connect(url, {database: "order", key: {passphrase: "a passphrase being stretched"}}),
		s.disconnect()])`)
	must(t, both.Invoke(s, url))
	if tg := target(); tg != nil {
		t.Errorf("connect (deriving its key) then disconnect: target %+v, want none", tg)
	}
	if st := s.Get("state").Get("status").String(); st != "disconnected" {
		t.Errorf("status %s, want disconnected", st)
	}
	then := jsfn("s, url", `return Promise.all([
		s.connect(url, {database: "order", key: {passphrase: "a passphrase being stretched"}}),
		s.connect(url, {database: "order-plain"})])`)
	must(t, then.Invoke(s, url))
	if tg := target(); tg == nil || tg.Database != "order-plain" || len(tg.Keys) != 0 {
		t.Errorf("sealed connect then plain connect: target %+v, want the plain one", tg)
	}
	must(t, s.Call("disconnect"))
}

// TestSealKeyDatabase: a SealKey derived from a passphrase records its
// database, and connect refuses it (as key or in oldKeys) for another
// database with INVALID_ARGUMENT, leaving the target alone; a key from
// importKey serves any database.
func TestSealKeyDatabase(t *testing.T) {
	api := jsv("Replica")
	p := must(t, api.Call("deriveKey", jsv(`{passphrase: "correct horse battery staple", database: "acme:vault"}`)))
	if got := p.Get("database"); got.Type() != js.TypeString || got.String() != "acme:vault" {
		t.Errorf("deriveKey database %s, want acme:vault", describe(got))
	}
	if n := jsv("Object.keys").Invoke(p).Length(); n != 3 {
		t.Errorf("a passphrase's SealKey has %d own properties, want 3 (keyId, cryptoKey, database)", n)
	}
	k := must(t, api.Call("importKey", jsv("Uint8Array.from({length: 32}, (_, i) => i)")))
	if got := k.Get("database"); !got.IsUndefined() {
		t.Errorf("importKey database %s, want none", describe(got))
	}

	db := openT(t)
	waitFor(t, "leadership", func() bool { return db.Get("isLeader").Bool() })
	s := db.Get("sync")
	d := dbOf(t, db)
	const url = "ws://127.0.0.1:9/sync"
	target := func() string {
		var out string
		d.enqueueWait(func() {
			if d.sy.target != nil {
				out = d.sy.target.Database
			}
		})
		return out
	}
	with := func(database string, key, old js.Value) js.Value {
		o := jsv(`({})`)
		o.Set("database", database)
		o.Set("key", key)
		if !old.IsUndefined() {
			o.Set("oldKeys", jsv("Array").Invoke(old))
		}
		return s.Call("connect", url, o)
	}
	must(t, with("acme:vault", p, js.Undefined()))
	if got := target(); got != "acme:vault" {
		t.Fatalf("target %q after a connect with the database's own key", got)
	}
	mustReject(t, with("acme:other", p, js.Undefined()), "INVALID_ARGUMENT", "acme:vault")
	mustReject(t, with("acme:other", k, p), "INVALID_ARGUMENT", "oldKeys[0]")
	if got := target(); got != "acme:vault" {
		t.Errorf("target %q after refused connects, want acme:vault", got)
	}
	// A key from bytes serves any database; a stored SealKey whose
	// database is not a string is refused.
	must(t, with("acme:other", k, js.Undefined()))
	bad := jsv(`({})`)
	bad.Set("keyId", p.Get("keyId"))
	bad.Set("cryptoKey", p.Get("cryptoKey"))
	bad.Set("database", 7)
	mustReject(t, with("acme:vault", bad, js.Undefined()), "INVALID_ARGUMENT", "database")
	must(t, s.Call("disconnect"))
}
