//go:build js && wasm

package jsbridge

import (
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestConflictEventSites: a conflict event names the site of each side
// (localSiteId, remoteSiteId), so apps need not parse HLCs.
func TestConflictEventSites(t *testing.T) {
	local, remote := model.SiteID{1, 2, 3}, model.SiteID{9, 8, 7}
	r := conflictResult(&engine.Conflict{
		Table: "items", Column: "n", PK: []model.Value{model.Text("k")},
		LocalValue: model.Int(1), LocalHLC: model.HLC{Wall: 5, Site: local},
		RemoteValue: model.Int(2), RemoteHLC: model.HLC{Wall: 6, Site: remote},
		RemoteWon: true, WinningHLC: model.HLC{Wall: 6, Site: remote},
	})
	for _, want := range []string{`"localSiteId":"` + local.String() + `"`, `"remoteSiteId":"` + remote.String() + `"`} {
		if !strings.Contains(r.text, want) {
			t.Errorf("conflict event %s lacks %s", r.text, want)
		}
	}
}
