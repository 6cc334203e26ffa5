//go:build js && wasm

package idbkv

import (
	"context"
	"strings"
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// spyJS wraps IDBDatabase.prototype.transaction to record each call's mode
// and options; it returns the record and the function that restores it.
const spyJS = `
const proto = IDBDatabase.prototype, orig = proto.transaction, seen = [];
proto.transaction = function (names, mode, options) {
	seen.push((mode || "readonly") + ":" + (options && options.durability || "-"));
	return orig.apply(this, arguments);
};
return [seen, () => { proto.transaction = orig; }];`

// TestDurability: Durability("strict") opens every read-write IndexedDB
// transaction with {durability: "strict"}, read-only ones without it; no
// option passes none (the browser's default); an unknown mode fails Open.
func TestDurability(t *testing.T) {
	for _, c := range []struct {
		mode, want string
	}{{"strict", "readwrite:strict"}, {"relaxed", "readwrite:relaxed"}, {"", "readwrite:-"}, {"default", "readwrite:-"}} {
		t.Run("mode="+c.mode, func(t *testing.T) {
			s, _ := openT(t, openOptions{durability: c.mode}, "a")
			spy := js.Global().Get("Function").New(spyJS).Invoke()
			seen := spy.Index(0)
			defer spy.Index(1).Invoke()
			if err := s.Update(func(tx kv.Tx) error { return tx.Put("a", []byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			if err := s.View(func(tx kv.Tx) error { _, err := tx.Get("a", []byte("k")); return err }); err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := 0; i < seen.Length(); i++ {
				got = append(got, seen.Index(i).String())
			}
			if strings.Join(got, " ") != c.want+" readonly:-" {
				t.Fatalf("transactions begun: %q, want %q then a read-only one without options", got, c.want)
			}
		})
	}
	if _, err := Open(context.Background(), "durability-bad", []string{"a"}, Durability("always")); err == nil || !strings.Contains(err.Error(), `durability "always"`) {
		t.Fatalf("Open with durability \"always\": %v", err)
	}
}
