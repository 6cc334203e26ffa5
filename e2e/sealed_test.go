//go:build !js

package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/relay"
)

// openSealed types the passphrase into the demo's key form and submits it.
func (p *page) openSealed(passphrase string) {
	p.t.Helper()
	p.waitJS("the key form", `!document.getElementById("key-form").hidden`, syncTimeout)
	p.do(
		chromedp.SendKeys(chromedp.CSS(`#key-passphrase`), passphrase),
		chromedp.Click(chromedp.CSS(`#key-open`)),
	)
}

// TestSealedDemo: the demo with ?sealed=1 asks for a passphrase and does
// not connect before it; two devices given it share trips; the "What the
// relay holds" card shows the relay's stored entries, envelopes without
// the trip; a reload needs no passphrase (the non-extractable key is kept
// in IndexedDB); a device given a wrong passphrase shows DECRYPT_FAILED
// and no trip, and the right one, after Forget key, brings it.
func TestSealedDemo(t *testing.T) {
	r := startRelayConfig(t, relay.Config{Inspect: true})
	b := newBrowser(t, "")
	url := r.URL + "?sealed=1&db=vault"
	a := b.newDevice("A").open(url)
	if got := a.evalString(`return String(app.db.sync.state.status) + "|" + document.getElementById("key-form").hidden;`); got != "disconnected|false" {
		t.Errorf("before the passphrase: status|form hidden %s, want disconnected|false", got)
	}
	a.openSealed("a long passphrase for the vault")
	a.waitStatus("synced", syncTimeout)
	if id := a.evalString(`return app.key.keyId;`); len(id) != 16 {
		t.Errorf("key id %q", id)
	}
	a.addTrip("Secret Lisbon", "Hidden Portugal", "4321")

	bb := b.newDevice("B").open(url)
	bb.openSealed("a long passphrase for the vault")
	bb.waitJS("A's trip on B", `tripEl("Secret Lisbon")`, syncTimeout)

	// What the relay holds: envelopes, not the trip.
	a.waitJS("the relay's entries", `(app.showRelayHolds(), app.relayEntries && app.relayEntries.length > 0 && document.getElementById("relay-entries").textContent.includes("envelope"))`, syncTimeout)
	held := a.evalString(`return document.getElementById("relay-entries").textContent;`)
	t.Logf("what the relay holds (start):\n%.400s", held)
	for _, s := range []string{"Secret Lisbon", "Hidden Portugal", "4321", "trips", "destination"} {
		if strings.Contains(held, s) {
			t.Errorf("the relay's entries show %q:\n%s", s, held)
		}
	}

	// A reload: the key is kept, nothing to type.
	a.eval(`window.beforeReload = true; location.reload(); return null;`, nil)
	a.waitNewDocument("beforeReload")
	a.waitStatus("synced", syncTimeout)
	if got := a.evalString(`return String(document.getElementById("key-form").hidden);`); got != "true" {
		t.Error("the key form shows after a reload")
	}

	// A wrong passphrase: DECRYPT_FAILED, nothing shown; then the right one.
	c := b.newDevice("C").open(url)
	c.openSealed("not the passphrase")
	c.waitJS("DECRYPT_FAILED", `app.syncState.lastError && app.syncState.lastError.code === "DECRYPT_FAILED"`, syncTimeout)
	if got := c.evalString(`return String(app.trips.length);`); got != "0" {
		t.Errorf("with a wrong key the page shows %s trips", got)
	}
	c.click(`#key-forget`)
	c.openSealed("a long passphrase for the vault")
	c.waitJS("the trip with the right key", `tripEl("Secret Lisbon")`, syncTimeout)
	for _, p := range []*page{a, bb, c} {
		p.checkErrors()
	}
}
