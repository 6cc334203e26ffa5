//go:build js && wasm

package jsbridge

import (
	"fmt"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
)

// TestIssueForRepairedSyncState: the client's reports of discarded sync
// state and of a diverged relay log reach SyncState.lastError with their
// stable codes, as ordinary transient errors (cleared once synced).
func TestIssueForRepairedSyncState(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("%w: sync:x/db:cursor: bad", client.ErrSyncStateReset), "SYNC_STATE_RESET"},
		{fmt.Errorf("%w: relay x: diverged", client.ErrRelayDiverged), "RELAY_DIVERGED"},
	} {
		is := issueFor(tc.err, time.Now())
		if is == nil || is.code != tc.code || is.push || is.lasting {
			t.Errorf("issueFor(%v) = %+v, want code %s, not a push's, not lasting", tc.err, is, tc.code)
		}
	}
}
