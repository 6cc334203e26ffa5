//go:build !js

package relay

import (
	"fmt"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// applySealed stores the envelopes of a sealed database's batch (sets and
// pend, without the transactions the log holds already, whose counts are
// held) in the arrival log, without reading them, and sends them to the
// database's other connections. It checks what the relay can see: each
// visible HLC is the sender's and names the transactionId, and is not
// more than model.MaxDrift ms ahead of nowMs (*model.DriftError, the
// clock-drift gate of plain databases). Under applyMu.
//
// The result counts each envelope stored as applied and each held one as
// skipped, one change per envelope (the relay cannot count the facts
// inside).
func (d *database) applySealed(sender *conn, sets []model.ChangeSet, pend []pendingSet, nowMs uint64) (model.ApplyResult, stored, error) {
	for i := range sets {
		cs := &sets[i]
		if cs.HLC.Site != cs.SiteID || cs.HLC.TransactionID() != cs.TransactionID {
			return model.ApplyResult{}, stored{}, fmt.Errorf("%w: sealed ChangeSet %d: transactionId %s and hlc %s do not name the same transaction of site %s",
				model.ErrMalformed, i, cs.TransactionID, wire.FormatHLC(cs.HLC), cs.SiteID)
		}
		if cs.HLC.Wall > nowMs && cs.HLC.Wall-nowMs > model.MaxDrift {
			return model.ApplyResult{}, stored{}, &model.DriftError{Remote: cs.HLC, Now: nowMs}
		}
	}
	var added []arrival
	var marks []wire.Horizon
	var last uint64
	err := d.store.Update(func(tx kv.Tx) error {
		if p, ok := tx.(kv.Prefetcher); ok {
			if err := p.Prefetch(d.appendKeys(pend)); err != nil {
				return err
			}
		}
		var err error
		added, marks, last, err = d.appendArrivals(tx, pend, nowMs)
		return err
	})
	if err != nil {
		return model.ApplyResult{}, stored{}, err
	}
	d.publish(sender, added, marks, last)
	// appendArrivals skips the transactions the log holds (a resend,
	// sealed anew, cannot be compared): one change per envelope.
	res := model.ApplyResult{Applied: len(added), Skipped: len(sets) - len(added), Transactions: len(sets)}
	return res, d.storedOf(sender, added, marks), nil
}
