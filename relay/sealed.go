//go:build !js

package relay

import (
	"fmt"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// A sealed database's envelopes are stored, sequenced and fanned out
// without being read (docs/design.md § Sealed databases): mergeGroup
// appends them in one kv transaction, leaving out (as skipped, one change
// per envelope: the relay cannot count the facts inside) the transactions
// the log holds already, after checkSealed.

// checkSealed checks what the relay can see of a sealed database's
// envelopes: each visible HLC is the sender's and names the
// transactionId (else model.ErrMalformed), and is not more than
// model.MaxDrift ms ahead of nowMs (*model.DriftError, the clock-drift
// gate of plain databases).
func checkSealed(sets []model.ChangeSet, nowMs uint64) error {
	for i := range sets {
		cs := &sets[i]
		if cs.HLC.Site != cs.SiteID || cs.HLC.TransactionID() != cs.TransactionID {
			return fmt.Errorf("%w: sealed ChangeSet %d: transactionId %s and hlc %s do not name the same transaction of site %s",
				model.ErrMalformed, i, cs.TransactionID, wire.FormatHLC(cs.HLC), cs.SiteID)
		}
		if cs.HLC.Wall > nowMs && cs.HLC.Wall-nowMs > model.MaxDrift {
			return &model.DriftError{Remote: cs.HLC, Now: nowMs}
		}
	}
	return nil
}
