//go:build !js

package client_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/relay"
)

// TestE2ERefusedSkipped runs against a real relay whose
// MaxChangesPerApply one transaction exceeds: the relay answers
// APPLY_CHANGES_REFUSED, the client isolates and skips that transaction
// (reported with its id) and the transactions before and after it reach
// another replica; the skipped one stays where it was written.
func TestE2ERefusedSkipped(t *testing.T) {
	checkNoLeaks(t)
	a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
	if _, err := a.db.Insert("notes", map[string]any{"id": "before", "title": "x"}); err != nil {
		t.Fatal(err)
	}
	big, err := a.db.Transact(func(tx *engine.Tx) error {
		for i := range 20 {
			if _, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("big%02d", i), "title": "x"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.Insert("notes", map[string]any{"id": "after", "title": "x"}); err != nil {
		t.Fatal(err)
	}
	sets, err := a.db.ChangesSince(model.HLC{}, 1<<20, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	limit := len(big.Changes) - 1
	for _, cs := range sets {
		if cs.TransactionID != big.TransactionID && len(cs.Changes)+len(cs.Migrations)+3 > limit {
			t.Fatalf("transaction %s has %d facts, too many for the test's limit %d", cs.TransactionID, len(cs.Changes)+len(cs.Migrations), limit)
		}
	}
	srv, err := relay.New(relay.Config{DataDir: t.TempDir(), Auth: relay.AllowAll, NoSync: true, Logger: quietLogger(), MaxChangesPerApply: limit})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync"

	a.connect(t, url, "trips", "")
	waitFor(t, "a's pushes", func() bool { return pending(t, a) == 0 })
	var re *client.RefusedError
	for _, ev := range a.ev.list() {
		if ev.Type == client.ErrorReported {
			if re != nil || !errors.As(ev.Err, &re) {
				t.Fatalf("reported %v (and %v)", ev.Err, re)
			}
		}
	}
	if re == nil || re.TransactionID != big.TransactionID || re.Code != "APPLY_CHANGES_REFUSED" || !errors.Is(re, client.ErrRefused) {
		t.Fatalf("RefusedError %+v", re)
	}

	b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
	b.connect(t, url, "trips", "")
	waitFor(t, "b has before and after", func() bool { return count(t, b.db, "notes") == 2 })
	for _, id := range []string{"before", "after"} {
		if _, err := b.db.Get("notes", engine.Key{id}); err != nil {
			t.Fatalf("b: %s: %v", id, err)
		}
	}
	if n := count(t, a.db, "notes"); n != 22 {
		t.Fatalf("a holds %d rows, want its 22", n)
	}

	// A skipped transaction last (nothing acknowledged after it), then
	// reconnects: the relay's siteHlc is below the sent watermark but not
	// below what it acknowledged, so nothing is pushed or reported again.
	if _, err := a.db.Transact(func(tx *engine.Tx) error {
		for i := range 20 {
			if _, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("tail%02d", i), "title": "x"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reports := func() int {
		n := 0
		for _, ev := range a.ev.list() {
			if ev.Type == client.ErrorReported {
				n++
			}
		}
		return n
	}
	waitFor(t, "the tail transaction skipped", func() bool { return reports() == 2 && pending(t, a) == 0 })
	for range 2 {
		a.c.Disconnect()
		a.connect(t, url, "trips", "")
		waitState(t, a, client.Synced)
	}
	if n := reports(); n != 2 || pending(t, a) != 0 {
		for _, ev := range a.ev.list() {
			if ev.Type == client.ErrorReported {
				t.Log(ev.Err)
			}
		}
		t.Fatalf("after reconnecting: %d errors reported, %d pending; want the 2 refusals, 0", n, pending(t, a))
	}
}
