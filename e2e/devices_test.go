//go:build !js

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
	// Each shows its own site id (db.siteId) from the start.
	siteA := a.evalString(`return document.getElementById("info-site").textContent;`)
	if len(siteA) != 22 {
		t.Errorf("A's site id %q: want 22 base64url characters", siteA)
	}
	if siteB := bb.evalString(`return document.getElementById("info-site").textContent;`); len(siteB) != 22 || siteB == siteA {
		t.Errorf("B's site id %q (A's %q): want 22 base64url characters, another one", siteB, siteA)
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

// goOffline presses the sync bar's toggle and waits for "offline".
func (p *page) goOffline() {
	p.t.Helper()
	p.waitJS("the toggle to read Go offline", `document.getElementById("sync-toggle").textContent === "Go offline"`, syncTimeout)
	p.click("#sync-toggle")
	p.waitStatus("offline", syncTimeout)
}

// goOnline presses the toggle and waits for "synced".
func (p *page) goOnline() {
	p.t.Helper()
	p.waitJS("the toggle to read Go online", `document.getElementById("sync-toggle").textContent === "Go online"`, syncTimeout)
	p.click("#sync-toggle")
	p.waitStatus("synced", syncTimeout)
}

// TestOfflineConvergence: both devices go offline and edit the same row
// (one column each, and the same column on both) and different rows; back
// online, both hold identical data: the later writer won the same-column
// conflict, both different-column edits are kept, both new rows exist.
func TestOfflineConvergence(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=shared")
	bb := b.newDevice("B").open(r.URL + "?db=shared")
	a.waitStatus("synced", syncTimeout)
	bb.waitStatus("synced", syncTimeout)
	a.addTrip("Kyoto", "Japan", "2500")
	bb.waitJS("A's trip on B", `tripEl("Kyoto")`, syncTimeout)

	a.goOffline()
	bb.goOffline()
	a.shot("A-offline")

	// A: the title (also edited on B, later) and the budget (only A).
	a.eval(`const t = tripEl("Kyoto"); setField(t, "title", "Kyoto (A)"); setField(t, "budget", "3000");
		await wait("A's edits", async () => { const r = (await db.query("trips"))[0]; return r.title === "Kyoto (A)" && r.budget === 3000; });
		return null;`, nil)
	a.addTrip("Osaka", "Japan", "900")
	var aDone float64
	a.eval(`return Date.now();`, &aDone)
	// B: strictly later by the wall clock, so its title is the later write.
	bb.waitJS("B's clock to pass A's last edit", `Date.now() > `+jsFloat(aDone)+` + 2`, syncTimeout)
	bb.eval(`const t = tripEl("Kyoto"); setField(t, "title", "Kyoto (B)"); setField(t, "travelers", "4"); setField(t, "booked", true);
		await wait("B's edits", async () => { const r = (await db.query("trips"))[0]; return r.title === "Kyoto (B)" && r.travelers === 4 && r.booked; });
		return null;`, nil)
	bb.addTrip("Nara", "Japan", "300")

	// Offline, each device holds its own edits only; the relay saw none.
	if got := a.evalString(`return titles().sort().join(",");`); got != "Kyoto (A),Osaka" {
		t.Errorf("A offline shows %q", got)
	}
	if got := bb.evalString(`return titles().sort().join(",");`); got != "Kyoto (B),Nara" {
		t.Errorf("B offline shows %q", got)
	}

	a.goOnline()
	bb.goOnline()
	rows := waitSame(t, "identical trips on both devices", syncTimeout, []string{"trips", "stops"}, a, bb)
	for _, p := range []*page{a, bb} {
		p.waitJS("both new trips and the merged trip in the list", `titles().sort().join(",") === "Kyoto (B),Nara,Osaka"`, syncTimeout)
	}
	var kyoto struct {
		Title     string  `json:"title"`
		Budget    float64 `json:"budget"`
		Travelers int     `json:"travelers"`
		Booked    bool    `json:"booked"`
	}
	a.eval(`return (await db.query("trips", {where: {destination: "Japan", title: {prefix: "Kyoto"}}}))[0];`, &kyoto)
	if kyoto.Title != "Kyoto (B)" || kyoto.Budget != 3000 || kyoto.Travelers != 4 || !kyoto.Booked {
		t.Errorf("merged Kyoto = %+v, want title from B (the later writer), budget 3000 from A, travelers 4 and booked from B\nall trips: %s", kyoto, rows["trips"])
	}
	// The conflict shows in A's activity log: B's later title won there.
	// The conflict shows in both activity logs: on A, B's later title won;
	// on B, its own title was kept.
	a.waitJS("the conflict in A's log", `app.log.some((e) => e.kind === "conflict" && e.text.startsWith("Conflict in trips.title") && e.text.includes("'s edit won"))`, syncTimeout)
	bb.waitJS("the conflict in B's log", `app.log.some((e) => e.kind === "conflict" && e.text.startsWith("Conflict in trips.title") && e.text.includes("this device's edit was kept"))`, syncTimeout)
	a.shot("A-converged")
	bb.shot("B-converged")
}
