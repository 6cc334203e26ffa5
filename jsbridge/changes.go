//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// The transport-agnostic API (replica.d.ts: db.changesSince and
// db.applyChanges; seeds' sync.md "Transport Agnostic"): an app moves
// ChangeSets over a channel of its own (WebRTC, postMessage, a file) in
// the sync protocol's JSON form (wire.MarshalChangeSet), and gets what the
// relay path gets: engine.ChangesSince's whole transactions in HLC order,
// engine.ApplyChanges' atomic, order-independent, drift-gated apply that
// holds what it cannot apply yet.

// maxChangesLimit bounds db.changesSince's limit (changes and migrations
// per page): a page is one result text crossing into JavaScript.
const maxChangesLimit = 100_000

// changesSinceOp answers db.changesSince: a = the watermark (a ChangeSet's
// wire HLC, 40 base64 characters; "" for the beginning), b = options JSON
// {limit?}. The result is the JSON object {changeSets: [wire ChangeSets],
// next: the last one's HLC (the watermark when none), more: whether a call
// from next may return more}. A browser replica's change log holds only
// its own transactions (engine.Options.LocalChangeLogOnly, set in
// openDB), so these are all it returns.
func changesSinceOp(d *db, c *call) (result, error) {
	var since model.HLC
	if s := c.str(0); s != "" {
		h, err := wire.ParseHLC(s)
		if err != nil {
			return result{}, argError("since must be a ChangeSet's hlc (40 base64 characters, as in page.next), got %q", s)
		}
		since = h
	}
	var limitOpt *float64
	if text := c.str(1); text != "" {
		r := newReader([]byte(text), nil)
		err := r.object(func(key string) error {
			if key != "limit" {
				return argError("unknown option %q (known: limit)", key)
			}
			return r.optNumber(&limitOpt, "options.limit")
		})
		if err == nil {
			err = r.End()
		}
		if errors.Is(err, errSyntax) {
			return result{}, argError("options must be an object {limit?}")
		}
		if err != nil {
			return result{}, err
		}
	}
	limit := engine.DefaultChangesLimit
	if limitOpt != nil {
		n := *limitOpt
		if n != float64(int(n)) || n < 1 || n > maxChangesLimit {
			return result{}, argError("options.limit must be an integer from 1 to %d, got %v", maxChangesLimit, n)
		}
		limit = int(n)
	}
	f := engine.ChangesFilter{OnlyLocal: true}
	sets, err := d.eng.ChangesSince(since, limit, f)
	if err != nil {
		return result{}, err
	}
	b := []byte(`{"changeSets":[`)
	facts := 0
	next := since
	for i := range sets {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendWireChangeSet(b, &sets[i]); err != nil {
			return result{}, err
		}
		facts += len(sets[i].Changes) + len(sets[i].Migrations)
		next = sets[i].HLC
	}
	b = append(b, `],"next":`...)
	b = strconv.AppendQuote(b, wire.FormatHLC(next))
	b = append(b, `,"more":`...)
	b = strconv.AppendBool(b, facts >= limit)
	b = append(b, '}')
	return result{kind: kindJSON, text: string(b)}, nil
}

func appendWireChangeSet(b []byte, cs *model.ChangeSet) ([]byte, error) {
	w, err := wire.MarshalChangeSet(cs)
	if err != nil {
		return b, fmt.Errorf("encoding ChangeSet %s: %w", cs.TransactionID, err)
	}
	return append(b, w...), nil
}

// applyChangesOp answers db.applyChanges: a = a JSON array of ChangeSets in
// the wire form (what db.changesSince returns). The whole array applies in
// one IndexedDB transaction (engine.ApplyChanges), or nothing of it does.
// The result is {applied, skipped, conflicts, held, transactions}
// (model.ApplyResult). A ChangeSet that is not well formed is
// INVALID_ARGUMENT naming its index; an HLC too far ahead of this
// device's clock is CLOCK_DRIFT; nothing is written in either case.
func applyChangesOp(d *db, c *call) (result, error) {
	text := []byte(c.str(0))
	var sets []model.ChangeSet
	r := newReader(text, nil)
	if r.Peek() != '[' {
		return result{}, argError("changeSets must be an array of ChangeSets (as db.changesSince returns them) or its JSON text")
	}
	err := r.Elements(func(i int) error {
		start, end, err := r.Skip()
		if err != nil {
			return err
		}
		cs, err := wire.UnmarshalChangeSet(text[start:end])
		if err != nil {
			// The path and reason, without the decoder's package and its
			// byte offset in one element's text.
			if path, msg, ok := wire.ErrorAt(err); ok {
				if path != "" {
					msg = path + ": " + msg
				}
				return argError("changeSets[%d] is not a ChangeSet: %s", i, msg)
			}
			return argError("changeSets[%d] is not a ChangeSet: %v", i, err)
		}
		sets = append(sets, cs)
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, errSyntax) {
		return result{}, argError("changeSets must be an array of ChangeSets (as db.changesSince returns them) or its JSON text: %v", err)
	}
	if err != nil {
		return result{}, err
	}
	res, err := d.eng.ApplyChanges(sets)
	if errors.Is(err, model.ErrMalformed) {
		return result{}, argError("%v", err)
	}
	if err != nil {
		return result{}, err
	}
	var o jsonObject
	o.int("applied", int64(res.Applied))
	o.int("skipped", int64(res.Skipped))
	o.int("conflicts", int64(res.Conflicts))
	o.int("held", int64(res.Held))
	o.int("transactions", int64(res.Transactions))
	return o.result(), nil
}
