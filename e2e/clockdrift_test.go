//go:build !js

package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/relay"
)

// shiftedClock is the wall clock plus an offset the test sets.
type shiftedClock struct{ offsetMs atomic.Int64 }

func (c *shiftedClock) Now() uint64 { return uint64(time.Now().UnixMilli() + c.offsetMs.Load()) }

// TestClockDriftShown (issue 10 §8): a browser whose clock is 6 minutes
// ahead of the relay's (here the relay's clock is set 6 minutes back) has
// its pushes refused: db.sync.state.lastError.code is CLOCK_DRIFT (before:
// APPLY_CHANGES_ERROR), the status is "syncing", never "synced", while they
// are refused (before: "synced" with changes pending), and the page says
// what to check. Once the clocks agree the writes sync, the error goes and
// the status is "synced".
func TestClockDriftShown(t *testing.T) {
	clock := &shiftedClock{}
	clock.offsetMs.Store(-(6 * time.Minute).Milliseconds())
	r := startRelayConfig(t, relay.Config{Clock: clock})
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=drift")
	a.addTrip("Early", "Tomorrow", "1")
	a.waitJS("lastError CLOCK_DRIFT", `db.sync.state.lastError && db.sync.state.lastError.code === "CLOCK_DRIFT"`, syncTimeout)
	var st struct {
		Statuses []string
		Pending  int
		Message  string
		Note     string
	}
	// Sample the state for 2 s.
	a.eval(`const seen = new Set();
		const end = Date.now() + 2000;
		while (Date.now() < end) { seen.add(db.sync.state.status); await new Promise(r => setTimeout(r, 10)); }
		return {Statuses: [...seen], Pending: db.sync.state.pending, Message: db.sync.state.lastError.message,
			Note: document.getElementById("sync-issue-detail").hidden ? "" : document.getElementById("sync-issue-detail").textContent};`, &st)
	for _, s := range st.Statuses {
		if s == "synced" {
			t.Errorf("status synced while pushes are refused for clock drift (statuses seen: %v)", st.Statuses)
		}
	}
	if st.Pending == 0 {
		t.Error("nothing pending while pushes are refused")
	}
	t.Logf("statuses %v, pending %d, lastError.message %q, note %q", st.Statuses, st.Pending, st.Message, st.Note)
	a.waitJS("the note about the clock", `!document.getElementById("sync-issue-detail").hidden && document.getElementById("sync-issue-detail").textContent.includes("clock") && document.getElementById("sync-issue").dataset.code === "CLOCK_DRIFT"`, syncTimeout)
	a.shot("clock-drift")

	// The note hangs over the top of the page (it appeared while the form
	// was being filled in, and nothing under the pointer moved: addTrip's
	// click landed on "Add trip"). Hidden, it uncovers what it hid; a click
	// on the short note in the bar shows it again.
	a.do(chromedp.Click(chromedp.CSS(`#sync-detail-hide`)))
	a.waitJS("the note hidden, the sample-trip button uncovered", `(() => {
		const b = document.getElementById("sample-trip").getBoundingClientRect();
		return document.getElementById("sync-detail").hidden &&
			document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2) === document.getElementById("sample-trip");
	})()`, syncTimeout)
	a.do(chromedp.Click(chromedp.CSS(`#sync-issue`)))
	a.waitJS("the note shown again", `!document.getElementById("sync-detail").hidden`, syncTimeout)

	clock.offsetMs.Store(0)
	a.waitJS("synced once the clocks agree", `db.sync.state.status === "synced" && !db.sync.state.lastError && db.sync.state.pending === 0`, 3*syncTimeout)
}
