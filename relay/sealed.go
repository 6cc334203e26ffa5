//go:build !js

package relay

import (
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
func (d *database) applySealed(sender *conn, sets []model.ChangeSet, pend []pendingSet, held model.ApplyResult, nowMs uint64) (model.ApplyResult, stored, error) {
	if err := checkSealed(sets, nowMs); err != nil {
		return model.ApplyResult{}, stored{}, err
	}
	var added []arrival
	var marks []wire.Horizon
	var last uint64
	err := d.store.Update(func(tx kv.Tx) error {
		var err error
		added, marks, last, err = d.appendArrivals(tx, pend, nowMs)
		return err
	})
	if err != nil {
		return model.ApplyResult{}, stored{}, err
	}
	d.s.metrics.applyCommits.Inc()
	d.publish(sender, added, marks, last)
	res := model.ApplyResult{Applied: len(added), Skipped: held.Skipped + len(sets) - len(added), Transactions: held.Transactions + len(sets)}
	return res, d.storedOf(sender, added, marks), nil
}
