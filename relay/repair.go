//go:build !js

package relay

import (
	"strings"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// repairKey is the record key of a repair entry (wire's "Repair pushes"):
// the sender's site id, then "repair <author site id> <transactionId>". It
// names the sender first, as the log's chain input; unlike the sender's
// own ChangeSets, its pulls take the entry (readPage: isRepairKey), as do
// its author's; it is never an arrivals_tx key.
func repairKey(sender model.SiteID, cs *model.ChangeSet) []byte {
	k := make([]byte, 0, len(sender)+8+22+1+len(cs.TransactionID))
	k = append(k, sender[:]...)
	k = append(k, "repair "...)
	k = append(k, cs.SiteID.String()...)
	k = append(k, ' ')
	return append(k, cs.TransactionID...)
}

// isRepairKey reports whether key, an arrival record's key, is a repair
// entry's (repairKey).
func isRepairKey(key []byte) bool {
	return len(key) > len(model.SiteID{}) && strings.HasPrefix(string(key[len(model.SiteID{}):]), "repair ")
}

// applyRepair merges a repair push (prepared by prepareBatch) and appends,
// in the same kv transaction, the ChangeSets that changed the merged
// replica; the others carry nothing the log does not: every fact of theirs
// is held, or superseded, by the replica the log builds. Under applyMu.
func (d *database) applyRepair(sender *conn, sets []model.ChangeSet, pend []pendingSet, now uint64) (model.ApplyResult, stored, error) {
	var added []arrival
	var marks []wire.Horizon
	var last uint64
	res, err := d.eng.Apply(sets, engine.ApplyOptions{Prefetch: d.appendKeys(nil), ExtraSets: func(tx kv.Tx, _ model.ApplyResult, changed []bool) error {
		keep := make([]pendingSet, 0, len(pend))
		for i, p := range pend {
			if i < len(changed) && changed[i] {
				keep = append(keep, p)
			}
		}
		var err error
		added, marks, last, err = d.appendArrivals(tx, keep, now)
		return err
	}})
	if err != nil {
		return model.ApplyResult{}, stored{}, err
	}
	d.s.metrics.applyCommits.Inc()
	// The sender too: it merges its repair entries in their place in the
	// log, after the marks before them (wire's "Repair pushes"). So its
	// apply_result tells no position (wire version 9): the push_changes
	// moves its cursor.
	d.publish(nil, added, marks, last)
	return res, stored{n: len(added)}, nil
}
