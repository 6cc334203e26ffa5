//go:build !js

package relay

import (
	"bytes"
	"fmt"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// A transaction (site id and transactionId) may reach the relay more than
// once: a client resends a push whose ack it lost, possibly with fewer
// facts (newer local writes superseded some). Such a copy is a subset of
// the first: every fact of it is one of the first's, the same HLC (opSeq
// included) with the same content. A copy with a fact the first does not
// have, or with other content under the same HLC, is not a resend but a
// different transaction under a used id, and is refused: storing it would
// make the merged replica and the arrival log disagree.

// factPrints returns the facts of cs (migrations and changes) keyed by HLC,
// each as its canonical wire encoding without before-images (priorValue,
// priorHlc, priorRow: best-effort, replica-local lineage). ok is false when
// two facts share an HLC (the ChangeSet is malformed; the engine refuses
// it).
func factPrints(cs *model.ChangeSet) (prints map[model.HLC][]byte, ok bool, err error) {
	prints = make(map[model.HLC][]byte, len(cs.Migrations)+len(cs.Changes))
	one := model.ChangeSet{SiteID: cs.SiteID, TransactionID: cs.TransactionID}
	ok = true
	add := func(h model.HLC) error {
		one.HLC = h
		b, err := wire.MarshalChangeSet(&one)
		if err != nil {
			return err
		}
		if _, dup := prints[h]; dup {
			ok = false
		}
		prints[h] = b
		return nil
	}
	for i := range cs.Migrations {
		one.Migrations, one.Changes = cs.Migrations[i:i+1], nil
		if err := add(cs.Migrations[i].HLC); err != nil {
			return nil, false, err
		}
	}
	one.Migrations = nil
	for i := range cs.Changes {
		c := cs.Changes[i]
		c.HasPrior, c.PriorValue, c.PriorHLC, c.PriorRow = false, model.Value{}, model.HLC{}, nil
		one.Changes = []model.Change{c}
		if err := add(c.HLC); err != nil {
			return nil, false, err
		}
	}
	return prints, ok, nil
}

// coveredBy returns "" when every fact of cs is a fact of held (same HLC,
// same content), else what differs first, for an error message. Facts are
// compared in cs's order so the message is stable.
func coveredBy(cs, held *model.ChangeSet) (string, error) {
	mine, ok, err := factPrints(cs)
	if err != nil {
		return "", err
	}
	if !ok {
		return "two facts share an HLC", nil
	}
	theirs, _, err := factPrints(held)
	if err != nil {
		return "", err
	}
	check := func(h model.HLC, what string) string {
		t, found := theirs[h]
		switch {
		case !found:
			return fmt.Sprintf("%s with opSeq %d is not among the transaction's facts held", what, h.OpSeq)
		case !bytes.Equal(t, mine[h]):
			return fmt.Sprintf("%s with opSeq %d differs from the held fact of the same HLC (table, primary key, column or value)", what, h.OpSeq)
		}
		return ""
	}
	for i := range cs.Migrations {
		if d := check(cs.Migrations[i].HLC, "schema migration"); d != "" {
			return d, nil
		}
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if d := check(c.HLC, fmt.Sprintf("change of %s.%s", c.Table, c.Column)); d != "" {
			return d, nil
		}
	}
	return "", nil
}

// dedupBatch returns sets with each transaction (site id, transactionId)
// once: a copy that is a subset of another copy in the batch is dropped
// (the superset is kept, in its place), so the transaction is merged and
// counted once. Copies that are not subsets of one another refuse the
// batch (errRefused). sets is returned as is when nothing repeats.
func dedupBatch(sets []model.ChangeSet) ([]model.ChangeSet, error) {
	if len(sets) < 2 {
		return sets, nil
	}
	first := make(map[string]int, len(sets))
	var drop []bool
	for i := range sets {
		k := string(dedupKey(&sets[i]))
		j, dup := first[k]
		if !dup {
			first[k] = i
			continue
		}
		if drop == nil {
			drop = make([]bool, len(sets))
		}
		d, err := coveredBy(&sets[i], &sets[j])
		if err != nil {
			return nil, fmt.Errorf("%w: ChangeSet %d: %w", model.ErrMalformed, i, err)
		}
		if d == "" {
			drop[i] = true
			continue
		}
		if back, err := coveredBy(&sets[j], &sets[i]); err == nil && back == "" {
			drop[j] = true
			first[k] = i
			continue
		}
		return nil, fmt.Errorf("%w: ChangeSets %d and %d both carry transaction %s of site %s, with different facts: in ChangeSet %d, %s",
			errRefused, j, i, sets[i].TransactionID, sets[i].SiteID, i, d)
	}
	if drop == nil {
		return sets, nil
	}
	out := make([]model.ChangeSet, 0, len(sets))
	for i := range sets {
		if !drop[i] {
			out = append(out, sets[i])
		}
	}
	return out, nil
}
