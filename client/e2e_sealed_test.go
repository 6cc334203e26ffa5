//go:build !js

package client_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// vaultSchema has names and values no relay file may contain after a
// sealed sync.
func vaultSchema() *model.Schema {
	return &model.Schema{Tables: []model.TableDef{{
		Name: "vaultnotes",
		Columns: []model.ColumnDef{
			{Name: "id", Type: model.KindText},
			{Name: "secretcaption", Type: model.KindText},
			{Name: "secretphoto", Type: model.KindBlob},
			{Name: "secretcount", Type: model.KindInteger},
		},
	}}}
}

func keyring(t testing.TB, current []byte, older ...[]byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKey(current)
	if err != nil {
		t.Fatal(err)
	}
	var ks []seal.Key
	for _, o := range older {
		ko, err := seal.NewKey(o)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, ko)
	}
	r, err := seal.NewKeyring(k, ks...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sealedReplica(t testing.TB, name string, s seal.Sealer) *replica {
	t.Helper()
	return newReplica(t, name, vaultSchema(), engine.Options{}, client.Options{Sealer: s, BackoffBase: 50 * time.Millisecond})
}

// photo is a blob recognizable in a file: 64 bytes no encoding makes.
func photo(i int) []byte {
	b := make([]byte, 64)
	for j := range b {
		b[j] = byte(0x80 + (i*31+j*7)%120)
	}
	return b
}

func writeNote(t testing.TB, r *replica, i int) {
	t.Helper()
	if _, err := r.db.Upsert("vaultnotes", map[string]any{"id": fmt.Sprintf("note%03d", i),
		"secretcaption": fmt.Sprintf("Plaintext-Caption-%03d", i), "secretphoto": photo(i), "secretcount": 900000 + i}); err != nil {
		t.Fatal(err)
	}
}

// reportedErrs returns the errors r reported that match target.
func reportedErrs(r *replica, target error) []error {
	var out []error
	for _, ev := range r.ev.list() {
		if ev.Type == client.ErrorReported && errors.Is(ev.Err, target) {
			out = append(out, ev.Err)
		}
	}
	return out
}

// TestE2ESealedSync: two native clients sync a sealed database through a
// real relay (bbolt files) over loopback WebSockets, both ways; a third,
// new device bootstraps from the relay (an empty snapshot and the whole
// sealed log). Then no file of the relay's data directory contains any
// of the plaintext: the table and column names, the captions, the
// integers' decimal forms, the blobs' bytes, raw or in base64.
func TestE2ESealedSync(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	rl := startRelay(t, dir, nil)
	key := seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key))
	b := sealedReplica(t, "b", keyring(t, key))
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	waitState(t, b, client.Synced)
	for i := range 20 {
		writeNote(t, a, i)
	}
	for i := 20; i < 30; i++ {
		writeNote(t, b, i)
	}
	converged(t, a, b)
	if n := count(t, b.db, "vaultnotes"); n != 30 {
		t.Fatalf("b holds %d notes, want 30", n)
	}
	row, err := b.db.Get("vaultnotes", engine.Key{"note007"})
	if err != nil || !bytes.Equal(row["secretphoto"].Blob(), photo(7)) {
		t.Fatalf("note007 on b: %v, %v", row, err)
	}
	c := sealedReplica(t, "c", keyring(t, key))
	c.connect(t, rl.url, "vault", "")
	converged(t, a, b, c)
	// The control: the same notes in a plain database of the same relay,
	// whose file must show them.
	p := newReplica(t, "p", vaultSchema(), engine.Options{}, client.Options{})
	p.connect(t, rl.url, "control", "")
	for i := range 30 {
		writeNote(t, p, i)
	}
	waitFor(t, "p pushed", func() bool { return pending(t, p) == 0 })

	for _, r := range []*replica{a, b, c, p} {
		r.c.Disconnect()
	}
	rl.stop()
	needles := [][]byte{[]byte("vaultnotes"), []byte("secretcaption"), []byte("secretphoto"), []byte("secretcount"),
		[]byte("Plaintext-Caption"), []byte("900007"), []byte("note007")}
	for i := range 30 {
		needles = append(needles, []byte(base64.StdEncoding.EncodeToString(photo(i))[:24]), photo(i)[:24])
	}
	files, control := 0, 0
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found := 0
		for _, n := range needles {
			if bytes.Contains(data, n) {
				found++
				if filepath.Base(path) != "control.db" {
					t.Errorf("%s contains the plaintext %q", path, n)
				}
			}
		}
		if filepath.Base(path) == "control.db" {
			control = found
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 {
		t.Fatalf("the relay wrote %d files", files)
	}
	// The check is not blind: it finds the plaintext of the plain
	// database (all but the raw blob bytes, which the relay keeps as
	// base64 in its JSON).
	if control < 7+30 {
		t.Fatalf("control.db shows %d of the %d needles: the check is blind", control, len(needles))
	}
}

func TestE2ESealedWrongKey(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key := seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key))
	a.connect(t, rl.url, "vault", "")
	for i := range 5 {
		writeNote(t, a, i)
	}
	waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })

	b := sealedReplica(t, "b", keyring(t, seal.GenerateKey()))
	b.connect(t, rl.url, "vault", "")
	waitFor(t, "DECRYPT_FAILED on b", func() bool { return len(reportedErrs(b, client.ErrDecryptFailed)) > 0 })
	conns := rl.conns.Load()
	time.Sleep(500 * time.Millisecond) // a loop would report again and again
	if n := len(reportedErrs(b, client.ErrDecryptFailed)); n != 1 {
		t.Fatalf("DECRYPT_FAILED reported %d times in one session, want once", n)
	}
	if rl.conns.Load() != conns {
		t.Fatal("b reconnected after DECRYPT_FAILED")
	}
	if n := count(t, b.db, "vaultnotes"); n != 0 {
		t.Fatalf("b applied %d rows with a wrong key", n)
	}
	if st := b.c.State().State; st == client.Synced {
		t.Fatal("b reads Synced while it cannot open the log")
	}
	if !errors.Is(reportedErrs(b, client.ErrDecryptFailed)[0], seal.ErrDecryptFailed) {
		t.Fatal("not seal.ErrDecryptFailed")
	}

	if err := b.c.SetSealer(keyring(t, key)); err != nil {
		t.Fatal(err)
	}
	converged(t, a, b)
	if n := count(t, b.db, "vaultnotes"); n != 5 {
		t.Fatalf("b holds %d notes after the right key, want 5", n)
	}
	if err := newReplica(t, "p", vaultSchema(), engine.Options{}, client.Options{}).c.SetSealer(keyring(t, key)); !errors.Is(err, client.ErrNotSealed) {
		t.Fatalf("SetSealer on a plain client: %v, want ErrNotSealed", err)
	}
}

// TestE2ESealedWrongKeyPushesNothing: a device given a wrong key for a
// database it synced (a typo in a passphrase: SetSealer, or a restart,
// with another key) is caught up, so nothing it pulls tells it the key is
// wrong; it must still push nothing sealed under that key, which the
// others could not open and would hold, stopping them all. Its writes stay
// pending while the others keep syncing, and reach every device once it is
// given the right key.
func TestE2ESealedWrongKeyPushesNothing(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key := seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key))
	b := sealedReplica(t, "b", keyring(t, key))
	c := sealedReplica(t, "c", keyring(t, key))
	for _, r := range []*replica{a, b, c} {
		r.connect(t, rl.url, "vault", "")
	}
	for i := range 3 {
		writeNote(t, a, i)
	}
	converged(t, a, b, c)

	if err := c.c.SetSealer(keyring(t, seal.GenerateKey())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c reconnected", func() bool { return c.c.State().State != client.Disconnected && pending(t, c) == 0 })
	time.Sleep(200 * time.Millisecond) // c's new session catches up: nothing new to open
	for i := 100; i < 103; i++ {
		writeNote(t, c, i)
	}
	time.Sleep(500 * time.Millisecond) // time to push, were it allowed
	for i := 3; i < 6; i++ {
		writeNote(t, a, i)
	}
	waitFor(t, "b applied a's writes", func() bool { return count(t, b.db, "vaultnotes") == 6 })
	for _, r := range []*replica{a, b} {
		if errs := reportedErrs(r, client.ErrDecryptFailed); len(errs) != 0 {
			t.Fatalf("%s cannot open an envelope (c pushed under its wrong key?): %v", r.name, errs)
		}
	}
	if n := pending(t, c); n != 3 {
		t.Fatalf("c has %d transactions pending, want its 3 writes held", n)
	}
	if st := c.c.State().State; st == client.Synced {
		t.Fatal("c reads Synced with its writes held under an unproven key")
	}
	waitFor(t, "DECRYPT_FAILED on c", func() bool { return len(reportedErrs(c, client.ErrDecryptFailed)) > 0 })
	if n := count(t, a.db, "vaultnotes"); n != 6 {
		t.Fatalf("a holds %d notes, want 6 (none of c's)", n)
	}

	if err := c.c.SetSealer(keyring(t, key)); err != nil {
		t.Fatal(err)
	}
	converged(t, a, b, c)
	if n := count(t, b.db, "vaultnotes"); n != 9 {
		t.Fatalf("b holds %d notes, want 9", n)
	}
	for _, r := range []*replica{a, b} {
		if errs := reportedErrs(r, client.ErrDecryptFailed); len(errs) != 0 {
			t.Fatalf("%s: %v", r.name, errs)
		}
	}
}

// TestE2ESealedWrongKeyRestart: the same typo on a restart (a new client
// over the same store, as an app reloaded with a mistyped passphrase):
// the key ids the database is known to use are stored, the wrong one is
// not among them, so the device pushes nothing; with the right key after
// the next restart it pushes at once, though nothing new is pulled (the
// stored key id proves the key).
func TestE2ESealedWrongKeyRestart(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key := seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key))
	b := sealedReplica(t, "b", keyring(t, key))
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	writeNote(t, a, 0)
	converged(t, a, b)

	b2 := b.restart(t, client.Options{Sealer: keyring(t, seal.GenerateKey()), BackoffBase: 50 * time.Millisecond})
	b2.connect(t, rl.url, "vault", "")
	writeNote(t, b2, 1)
	time.Sleep(700 * time.Millisecond)
	if n := pending(t, b2); n != 1 {
		t.Fatalf("b (wrong key) has %d pending, want its write held", n)
	}
	writeNote(t, a, 2)
	waitFor(t, "DECRYPT_FAILED on b", func() bool { return len(reportedErrs(b2, client.ErrDecryptFailed)) > 0 })
	if errs := reportedErrs(a, client.ErrDecryptFailed); len(errs) != 0 {
		t.Fatalf("a: %v", errs)
	}

	b3 := b2.restart(t, client.Options{Sealer: keyring(t, key), BackoffBase: 50 * time.Millisecond})
	b3.connect(t, rl.url, "vault", "")
	converged(t, a, b3)
	if n := count(t, a.db, "vaultnotes"); n != 3 {
		t.Fatalf("a holds %d notes, want 3", n)
	}
}

// TestE2ESealedRotation: a device rotates to a new key (current key2,
// key1 kept to open older envelopes) and writes; a device with key1
// only holds the new envelopes (DECRYPT_FAILED), and pushes nothing, until
// given key2; a new device needs both keys to bootstrap every row from the
// log; a device given key2 alone, once its rotation was proven, pushes.
func TestE2ESealedRotation(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key1, key2 := seal.GenerateKey(), seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key1))
	b := sealedReplica(t, "b", keyring(t, key1))
	a.connect(t, rl.url, "vault", "")
	b.connect(t, rl.url, "vault", "")
	for i := range 5 {
		writeNote(t, a, i)
	}
	converged(t, a, b)

	if err := a.c.SetSealer(keyring(t, key2, key1)); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 10; i++ {
		writeNote(t, a, i)
	}
	waitFor(t, "b cannot open a's new envelopes", func() bool { return len(reportedErrs(b, client.ErrDecryptFailed)) > 0 })
	if n := count(t, b.db, "vaultnotes"); n != 5 {
		t.Fatalf("b holds %d notes, want the 5 sealed with key1", n)
	}
	// While it holds envelopes it cannot open, b pushes nothing, though
	// its key1 is still the database's: its write waits for key2.
	writeNote(t, b, 11)
	time.Sleep(500 * time.Millisecond)
	if n := pending(t, b); n != 1 {
		t.Fatalf("b has %d pending while it misses key2, want its write held", n)
	}
	if err := b.c.SetSealer(keyring(t, key2, key1)); err != nil {
		t.Fatal(err)
	}
	writeNote(t, b, 10) // sealed with key2
	converged(t, a, b)

	c := sealedReplica(t, "c", keyring(t, key2))
	c.connect(t, rl.url, "vault", "")
	waitFor(t, "c cannot open the key1 envelopes", func() bool { return len(reportedErrs(c, client.ErrDecryptFailed)) > 0 })
	if err := c.c.SetSealer(keyring(t, key2, key1)); err != nil {
		t.Fatal(err)
	}
	converged(t, a, b, c)
	if n := count(t, c.db, "vaultnotes"); n != 12 {
		t.Fatalf("c holds %d notes, want 12", n)
	}
	// A later keyring without key1 is proven by key2, stored as the
	// database's when a's rotation was proven (by key1).
	if err := a.c.SetSealer(keyring(t, key2)); err != nil {
		t.Fatal(err)
	}
	writeNote(t, a, 12)
	converged(t, a, b, c)
}

// TestE2ESealedTampered: an envelope altered on the relay's disk (one
// bit of its ciphertext) is refused and reported (ENVELOPE_INVALID) by a
// device pulling it, and the rest of the log applies; the device ends
// Synced.
func TestE2ESealedTampered(t *testing.T) {
	checkNoLeaks(t)
	dir := t.TempDir()
	rl := startRelay(t, dir, nil)
	key := seal.GenerateKey()
	a := sealedReplica(t, "a", keyring(t, key))
	a.connect(t, rl.url, "vault", "")
	waitState(t, a, client.Synced)
	for i := range 3 {
		writeNote(t, a, i)
		waitFor(t, "a pushed", func() bool { return pending(t, a) == 0 })
	}
	a.c.Disconnect()
	rl.stop()

	// Cursor 1 is the schema's transaction; 2, 3, 4 the notes. Flip a
	// bit of note001's envelope (cursor 3).
	st, err := boltkv.Open(filepath.Join(dir, "vault.db"), relay.StoreBuckets(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx kv.Tx) error {
		k := []byte{0, 0, 0, 0, 0, 0, 0, 3}
		v, err := tx.Get("arrivals", k)
		if err != nil {
			return err
		}
		v = append([]byte(nil), v...)
		i := bytes.Index(v, []byte(`"envelope":"`))
		if i < 0 {
			return fmt.Errorf("no envelope at cursor 3: %q", v)
		}
		i += len(`"envelope":"`) + 40 // inside the ciphertext
		if v[i] == 'A' {
			v[i] = 'B'
		} else {
			v[i] = 'A'
		}
		return tx.Put("arrivals", k, v)
	})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	rl2 := startRelay(t, dir, nil)
	b := sealedReplica(t, "b", keyring(t, key))
	b.connect(t, rl2.url, "vault", "")
	waitState(t, b, client.Synced)
	bad := reportedErrs(b, client.ErrEnvelopeInvalid)
	if len(bad) != 1 {
		t.Fatalf("b reported %d invalid envelopes, want 1: %v", len(bad), bad)
	}
	for i, want := range []bool{true, false, true} {
		_, err := b.db.Get("vaultnotes", engine.Key{fmt.Sprintf("note%03d", i)})
		if got := err == nil; got != want {
			t.Fatalf("note%03d on b: present %v, want %v (%v)", i, got, want, err)
		}
	}
}

// TestE2ESealedModeMismatch: a sealed client of a plain database, and a
// plain client of a sealed one, stop in the Error state with the relay's
// SEALED_MISMATCH; nothing is pushed.
func TestE2ESealedModeMismatch(t *testing.T) {
	checkNoLeaks(t)
	rl := startRelay(t, t.TempDir(), nil)
	key := seal.GenerateKey()
	p := newReplica(t, "p", vaultSchema(), engine.Options{}, client.Options{})
	p.connect(t, rl.url, "plaindb", "")
	waitState(t, p, client.Synced)
	s := sealedReplica(t, "s", keyring(t, key))
	s.connect(t, rl.url, "vault", "")
	waitState(t, s, client.Synced)

	s2 := sealedReplica(t, "s2", keyring(t, key))
	s2.connect(t, rl.url, "plaindb", "")
	p2 := newReplica(t, "p2", vaultSchema(), engine.Options{}, client.Options{})
	p2.connect(t, rl.url, "vault", "")
	for _, r := range []*replica{s2, p2} {
		waitState(t, r, client.Error)
		var we *wire.Error
		if err := r.c.State().Err; !errors.As(err, &we) || we.Code != wire.CodeSealedMismatch {
			t.Fatalf("%s: error %v, want SEALED_MISMATCH", r.name, err)
		}
	}
}

// restart closes r's client and returns r with a new one over the same
// engine and store, as an app restarted: only what the store holds
// survives.
func (r *replica) restart(t testing.TB, opts client.Options) *replica {
	t.Helper()
	r.c.Close()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	c := client.New(r.db, opts)
	t.Cleanup(func() { c.Close() })
	return &replica{name: r.name, db: r.db, store: r.store, c: c, ev: record(c)}
}
