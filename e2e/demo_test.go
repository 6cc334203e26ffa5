//go:build !js

package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestRelayUnreachableWords: with the relay out of reach the sync bar says
// so in a user's words, consistently (not "Offline" beside "Go offline"),
// and the client's own error text (the dial error) is only in tooltips.
func TestRelayUnreachableWords(t *testing.T) {
	r := startRelay(t)
	// A port nothing listens on: the page's relay is unreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "ws://" + ln.Addr().String() + "/sync"
	_ = ln.Close()

	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=unreachable&relay=" + dead)
	a.waitStatus("retrying", syncTimeout)
	a.waitJS("the retry countdown", `/Trying again/.test(document.getElementById("sync-message").textContent)`, syncTimeout)
	var m struct{ Pill, Toggle, Message, MessageTitle, PillTitle string }
	a.eval(`const $ = (id) => document.getElementById(id);
		return {pill: $("sync-pill").textContent, toggle: $("sync-toggle").textContent, message: $("sync-message").textContent,
			messageTitle: $("sync-message").title, pillTitle: $("sync-pill").title};`, &m)
	if m.Pill != "Reconnecting…" {
		t.Errorf("pill reads %q while the relay is unreachable, want Reconnecting…", m.Pill)
	}
	if m.Toggle == "Go offline" || m.Toggle == "Go online" {
		t.Errorf("toggle reads %q beside the pill %q", m.Toggle, m.Pill)
	}
	if !strings.HasPrefix(m.Message, "Can't reach the relay.") || !strings.Contains(m.Message, "saved on this device") {
		t.Errorf("sync message %q", m.Message)
	}
	for _, raw := range []string{"client:", "WebSocket", "ws://", "1006", "SYNC_FAILED"} {
		if strings.Contains(m.Message, raw) || strings.Contains(m.Pill, raw) {
			t.Errorf("the bar shows developer text %q: pill %q, message %q", raw, m.Pill, m.Message)
		}
	}
	if !strings.Contains(m.MessageTitle, "SYNC_FAILED") || !strings.Contains(m.PillTitle, "SYNC_FAILED") {
		t.Errorf("the technical detail is not in the tooltips: message title %q, pill title %q", m.MessageTitle, m.PillTitle)
	}
	a.shot("retrying")

	// Stop trying: offline by choice, and the toggle offers to go online.
	a.click("#sync-toggle")
	a.waitStatus("offline", syncTimeout)
	if got := a.evalString(`return document.getElementById("sync-pill").textContent + " / " + document.getElementById("sync-toggle").textContent;`); got != "Offline / Go online" {
		t.Errorf("after Stop trying: %q", got)
	}
}

// TestNewTripForm: the new-trip form checks what it can before writing and
// says it beside the form (an empty or blank title); a value the database
// refuses shows a sentence in the toast, the code and message only in its
// tooltip and app.lastError.
func TestNewTripForm(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=form")
	formError := func() string {
		return a.evalString(`const p = document.getElementById("new-trip-error"); return p.hidden ? "" : p.textContent;`)
	}
	toastShown := func() bool {
		var shown bool
		a.eval(`return !document.getElementById("toast").hidden;`, &shown)
		return shown
	}

	a.click(`#new-trip button[type="submit"]`)
	a.waitJS("the form's note", `!document.getElementById("new-trip-error").hidden`, syncTimeout)
	if got := formError(); !strings.Contains(got, "Title is required") {
		t.Errorf("form note after an empty title: %q", got)
	}
	if toastShown() {
		t.Errorf("a toast after an empty form: %q", a.evalString(`return document.getElementById("toast").textContent;`))
	}
	a.shot("empty-title")
	// Typing hides the note; a title of spaces is refused the same way.
	a.do(chromedp.SendKeys(chromedp.CSS(`#new-trip [name="title"]`), "   "))
	if got := formError(); got != "" {
		t.Errorf("the note stays while typing: %q", got)
	}
	a.click(`#new-trip button[type="submit"]`)
	a.waitJS("the form's note", `!document.getElementById("new-trip-error").hidden`, syncTimeout)
	if got := formError(); !strings.Contains(got, "Title is required") {
		t.Errorf("form note after a blank title: %q", got)
	}
	if n := a.evalString(`return String((await db.query("trips")).length);`); n != "0" {
		t.Errorf("%s trips written by refused forms", n)
	}
	a.eval(`document.querySelector('#new-trip [name="title"]').value = ""; return null;`, nil)
	a.addTrip("Valid", "Somewhere", "100")

	// An inline edit the database refuses: a sentence, no codes.
	a.eval(`setField(tripEl("Valid"), "travelers", "2.5"); await wait("the error", () => !document.getElementById("toast").hidden); return null;`, nil)
	var toast struct{ Code, Text, Title string }
	a.eval(`const t = document.getElementById("toast"); return {code: t.dataset.code, text: t.textContent, title: t.title};`, &toast)
	if toast.Code != "VALIDATION" || toast.Text != "Couldn't save the change. Travelers must be a whole number." {
		t.Errorf("toast after travelers 2.5: %+v", toast)
	}
	if !strings.HasPrefix(toast.Title, "VALIDATION edit trip travelers: ") {
		t.Errorf("toast title (the developer's detail): %q", toast.Title)
	}
	a.shot("validation-toast")
}

// TestActivityShowsData: a device that only opens the page (its tables'
// setup) adds nothing to another device's Activity log; a data change
// does, counted in rows; the log survives a reload.
func TestActivityShowsData(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=activity")
	a.waitStatus("synced", syncTimeout)
	a.eval(`window.remoteEvents = []; db.on("remoteChange", (e) => remoteEvents.push(e)); return null;`, nil)
	bb := b.newDevice("B").open(r.URL + "?db=activity")
	bb.waitStatus("synced", syncTimeout)
	a.waitJS("B's table setup on A", `remoteEvents.length > 0`, syncTimeout)
	var remote []string
	a.eval(`return app.log.filter((e) => e.kind === "remote").map((e) => e.text);`, &remote)
	if len(remote) != 0 {
		t.Errorf("A's log after B only opened the page: %q", remote)
	}

	bb.addTrip("Seen on A", "", "")
	a.waitJS("B's trip in A's log", `app.log.some((e) => e.kind === "remote")`, syncTimeout)
	a.eval(`return app.log.filter((e) => e.kind === "remote").map((e) => e.text);`, &remote)
	siteB := bb.evalString(`return db.siteId;`)
	if len(remote) != 1 || remote[0] != "1 trip changed on device "+siteB[:8] {
		t.Errorf("A's log after B's trip: %q", remote)
	}
	a.shot("activity")

	a.do(chromedp.Reload())
	a.waitReady()
	var after []string
	a.eval(`return [...document.querySelectorAll("#log li[data-kind]")].map((li) => li.dataset.kind + ": " + li.querySelector("span").firstChild.textContent);`, &after)
	found := false
	for _, e := range after {
		found = found || e == "remote: 1 trip changed on device "+siteB[:8]
	}
	if !found {
		t.Errorf("A's log after a reload: %q", after)
	}
}

// TestDemoDetails: at a phone's width: a long trip title wraps instead of
// being cut, the stop's visited checkbox has a visible label, code tokens
// in the info card do not break inside; in the Cities view regions show by
// name, and the import button stops being the primary action once the
// cities are in the replica.
func TestDemoDetails(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	p := b.newDevice("phone").open(r.URL+"?db=details", phone)
	long := "Summer road trip through the Scottish Highlands, the islands and back"
	p.addTrip(long, "Scotland", "2400")
	p.eval(`await app.addStop(tripEl(`+jsString(long)+`).dataset.id, "Inverness"); await wait("the stop", () => tripEl(`+jsString(long)+`).querySelector(".stop")); return null;`, nil)

	var m struct {
		TitleCut     bool
		TitleLines   float64
		VisitedLabel string
		BrokenCodes  []string
		Scroll       int
	}
	p.eval(`const ta = tripEl(`+jsString(long)+`).querySelector(".trip-title");
		const cb = tripEl(`+jsString(long)+`).querySelector('.stop [data-field="visited"]');
		const lh = parseFloat(getComputedStyle(ta).lineHeight);
		return {
			titleCut: ta.scrollHeight > ta.clientHeight + 1 || ta.scrollWidth > ta.clientWidth + 1,
			titleLines: Math.round(ta.clientHeight / lh),
			visitedLabel: cb.labels.length ? cb.labels[0].textContent.trim() : "",
			brokenCodes: [...document.querySelectorAll(".share code, .info code")].filter((c) => c.getClientRects().length > 1).map((c) => c.textContent),
			scroll: document.documentElement.scrollWidth,
		};`, &m)
	if m.TitleCut || m.TitleLines < 2 {
		t.Errorf("the long title at 390 px: cut %v, %v lines", m.TitleCut, m.TitleLines)
	}
	if m.VisitedLabel != "Visited" {
		t.Errorf("the visited checkbox's label: %q", m.VisitedLabel)
	}
	if len(m.BrokenCodes) > 0 {
		t.Errorf("code tokens broken across lines: %q", m.BrokenCodes)
	}
	if m.Scroll > 390 {
		t.Errorf("page %d px wide at 390 px", m.Scroll)
	}
	p.shot("trips")
	p.eval(`document.querySelector(".side").scrollIntoView(); return null;`, nil)
	p.shot("info")

	// The Cities view, at a desktop width (the region column is hidden on phones).
	p.do(chromedp.EmulateViewport(1280, 900))
	p.click("#tab-cities")
	p.waitJS("the cities view", `!document.getElementById("view-cities").hidden && document.getElementById("city-country").options.length > 100`, syncTimeout)
	if cls := p.evalString(`return document.getElementById("import").className;`); !strings.Contains(cls, "btn-primary") {
		t.Errorf("the import button before the import: class %q", cls)
	}
	p.click("#import")
	p.waitJS("the import to finish", `document.getElementById("import-label").dataset.done === "true"`, 2*time.Minute)
	p.waitJS("the button demoted", `document.getElementById("import").dataset.imported === "true"`, syncTimeout)
	var btn struct{ Class, Text string }
	p.eval(`const b = document.getElementById("import"); return {class: b.className, text: b.textContent};`, &btn)
	if strings.Contains(btn.Class, "btn-primary") || btn.Text != "Import again" {
		t.Errorf("the import button after the import: %+v", btn)
	}
	p.do(chromedp.SendKeys(chromedp.CSS("#city-q"), "Lisb"))
	p.waitJS("Lisbon", `[...document.querySelectorAll("#city-rows tr")].some((tr) => tr.cells[0].textContent === "Lisbon" && tr.cells[1].textContent === "US")`, syncTimeout)
	if got := p.evalString(`const tr = [...document.querySelectorAll("#city-rows tr")].find((tr) => tr.cells[0].textContent === "Lisbon" && tr.cells[1].textContent === "US"); return tr.cells[2].textContent + " | " + tr.cells[2].title;`); got != "North Dakota | GeoNames code US.ND" {
		t.Errorf("Lisbon's region cell: %q", got)
	}
	p.eval(`const q = document.getElementById("city-q"); q.value = ""; q.dispatchEvent(new Event("input", {bubbles: true}));
		await wait("the first 100 cities", () => document.getElementById("city-rows").dataset.count === "100" && ![...document.querySelectorAll("#city-rows tr")].every((tr) => tr.cells[0].textContent === "Lisbon"));
		return null;`, nil)
	var codes []string
	p.eval(`return [...document.querySelectorAll("#city-rows tr")].map((tr) => tr.cells[2].textContent).filter((s) => /^[0-9A-Z]{1,3}$/.test(s));`, &codes)
	if len(codes) > 0 {
		t.Errorf("region cells still showing codes: %q", codes)
	}
	p.shot("cities")
}

// TestLongTitleWithoutFieldSizing: where CSS cannot size the title's
// textarea to its text (field-sizing is Chromium's; here CSS.supports is
// made to deny it, as in other engines), the page does, for a new card
// and while typing.
func TestLongTitleWithoutFieldSizing(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	noFieldSizing := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
			Source: `(() => { const s = CSS.supports.bind(CSS); CSS.supports = (p, v) => p === "field-sizing" ? false : s(p, v);
				const st = document.createElement("style"); st.textContent = ".trip-title { field-sizing: fixed !important; }";
				document.addEventListener("DOMContentLoaded", () => document.head.append(st)); })();`,
		})
		return chromedp.Void{}, err
	}
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	p := b.newDevice("phone").open(r.URL+"?db=fallback", noFieldSizing, phone)
	long := "Summer road trip through the Scottish Highlands, the islands and back"
	p.addTrip(long, "", "")
	fits := `(() => { const ta = tripEl(` + jsString(long) + `).querySelector(".trip-title");
		return ta.clientHeight > 40 && ta.scrollHeight <= ta.clientHeight + 1; })()`
	p.waitJS("the long title shown whole", fits, syncTimeout)
	p.shot("trips")
}
