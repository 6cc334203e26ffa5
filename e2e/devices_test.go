package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const syncTimeout = 20 * time.Second

// addTrip fills the "New trip" form and submits it, as a user would, and
// waits until the trip shows in the list.
func (p *page) addTrip(title, destination, budget string) {
	p.t.Helper()
	p.do(
		chromedp.SendKeys(chromedp.CSS(`#new-trip [name="title"]`), title),
		chromedp.SendKeys(chromedp.CSS(`#new-trip [name="destination"]`), destination),
		chromedp.SendKeys(chromedp.CSS(`#new-trip [name="budget"]`), budget),
		chromedp.Click(chromedp.CSS(`#new-trip button[type="submit"]`)),
	)
	p.waitJS("the new trip "+title, "tripEl("+jsString(title)+")", syncTimeout)
}

// TestTwoDevices: a row inserted on device A appears on device B, an update
// on B appears on A, a delete on A disappears from B; stops added and
// reordered on one device show in order on the other.
func TestTwoDevices(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=trips")
	bb := b.newDevice("B").open(r.URL + "?db=trips")
	a.waitStatus("synced", syncTimeout)
	bb.waitStatus("synced", syncTimeout)

	// Insert on A, through the form.
	a.addTrip("Lisbon", "Portugal", "1200")
	bb.waitJS("A's trip on B", `tripEl("Lisbon")`, syncTimeout)
	if got := bb.evalString(`const t = tripEl("Lisbon"); return t.querySelector('[data-field="destination"]').value + "|" + t.querySelector('[data-field="budget"]').value;`); got != "Portugal|1200" {
		t.Errorf("B shows destination|budget %q, want Portugal|1200", got)
	}
	// A learned its site id from its own write; B has none yet.
	siteA := a.evalString(`return document.getElementById("info-site").textContent;`)
	if len(siteA) != 22 {
		t.Errorf("A's site id %q: want 22 base64url characters", siteA)
	}

	// Stops: added on A, reordered on B.
	for _, s := range []string{"Alfama", "Belém", "Sintra"} {
		a.do(
			chromedp.SendKeys(chromedp.CSS(`#trips .trip .add-stop input`), s),
			chromedp.Click(chromedp.CSS(`#trips .trip .add-stop button`)),
		)
		a.waitJS("stop "+s, `[...tripEl("Lisbon").querySelectorAll(".stop-name")].some((e) => e.value === `+jsString(s)+`)`, syncTimeout)
	}
	const stopOrder = `[...tripEl("Lisbon").querySelectorAll(".stop-name")].map((e) => e.value).join(",")`
	bb.waitJS("A's three stops on B", stopOrder+` === "Alfama,Belém,Sintra"`, syncTimeout)
	bb.eval(`tripEl("Lisbon").querySelectorAll(".stop")[2].querySelector('[data-action="up"]').click(); return null;`, nil)
	bb.waitJS("the move on B", stopOrder+` === "Alfama,Sintra,Belém"`, syncTimeout)
	a.waitJS("B's move on A", stopOrder+` === "Alfama,Sintra,Belém"`, syncTimeout)

	// Update on B, inline: type a new title and press Enter.
	bb.eval(`const i = tripEl("Lisbon").querySelector(".trip-title"); i.focus(); i.select(); return null;`, nil)
	bb.do(chromedp.KeyEvent("Lisbon and Sintra\r"))
	bb.waitJS("B's own edit", `tripEl("Lisbon and Sintra")`, syncTimeout)
	a.waitJS("B's edit on A", `tripEl("Lisbon and Sintra")`, syncTimeout)
	a.waitJS("the remote change in A's log", `app.log.some((e) => e.kind === "remote")`, syncTimeout)
	a.shot("A-after-update")
	bb.shot("B-after-update")

	// Delete on A.
	a.click(`#trips .trip [data-action="delete-trip"]`)
	a.waitJS("the delete on A", `!tripEl("Lisbon and Sintra")`, syncTimeout)
	bb.waitJS("A's delete on B", `!tripEl("Lisbon and Sintra") && document.getElementById("trips-empty").hidden === false`, syncTimeout)
	waitSame(t, "the same rows on both", syncTimeout, []string{"trips", "stops"}, a, bb)
	if got := bb.evalString(`return String((await db.query("stops")).length);`); got != "0" {
		t.Errorf("B still has %s stops of the deleted trip", got)
	}
	bb.shot("B-after-delete")
}
