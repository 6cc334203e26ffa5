//go:build !js

package relay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// database is one tenant: its bbolt file, the merged replica over it, its
// arrival log, and the connections using it.
type database struct {
	s    *Server
	id   string
	path string
	log  *slog.Logger

	// Set by open; read-only afterwards.
	store kv.Store
	eng   *engine.Engine
	site  model.SiteID
	// sealed is the database's mode (docs/design.md § Sealed databases;
	// wire's "Sealed databases"): its ChangeSets are envelopes the relay
	// stores, sequences and fans out without reading them. The merged
	// replica (eng) then stays empty: nothing is merged into it, and a
	// snapshot is empty at the start of the log.
	sealed bool
	// shared is Config.Storage when other relay processes share it (nil:
	// this process alone writes the database). See storage.go and
	// shared.go.
	shared SharedStorage

	// applyMu serializes apply: the merge, the arrival-log append and the
	// fan-out, so that pushes leave in cursor order.
	applyMu sync.Mutex
	// groupMu guards groupQ, the apply_changes waiting for the next
	// group (group.go), and leading: a goroutine leads (or is about to
	// lead) a group.
	groupMu sync.Mutex
	groupQ  []*applyReq
	leading bool
	// cursor is the last cursor committed (stored after each commit, under
	// applyMu); everything up to it is in the merged replica. With shared
	// storage it is the last cursor this process has fanned out to its
	// connections: other relays may have appended after it (see
	// catchUpLocked); the head itself is read from the store (head).
	cursor atomic.Uint64
	// notified is the head whose notification to the other relays the
	// last appending transaction carried (TxNotifier; 0: none), so that
	// publish does not send it again. Under applyMu.
	notified uint64

	// horizonMu guards horizon (the newest tombstone horizon mark, zero
	// Wall: none; written under applyMu too) and snapshots (the snapshot
	// streams of the database in progress: no mark is made while one
	// streams). See horizon.go.
	horizonMu sync.Mutex
	horizon   wire.Horizon
	snapshots int
	// pruneLeft (under applyMu): this process's pruning at its newest
	// mark failed, "horizonPending" is still stored (finishPruning).
	pruneLeft bool

	// ckptMu guards ckptReaders and ckptOrphans, and orders the reading
	// of the newest sealed checkpoint's record by a stream against its
	// replacement (checkpoint.go): ckptReaders counts the streams reading
	// each checkpoint's parts (by partPrefix), ckptOrphans holds the
	// replaced checkpoints whose parts are deleted when their last stream
	// ends.
	ckptMu      sync.Mutex
	ckptReaders map[string]int
	ckptOrphans map[string]bool

	connsMu sync.Mutex
	conns   map[*conn]struct{}

	// Registry state, guarded by Server.dbMu.
	refs     int
	lastUsed time.Time // when refs last dropped to 0
	closing  bool
	ready    chan struct{} // closed when open finished (openErr says how)
	openErr  error
	done     chan struct{} // closed when the database is closed
}

// errRefused marks a batch the relay refuses for its content (sending it
// again unchanged would be refused again): answered with
// APPLY_CHANGES_REFUSED.
var errRefused = errors.New("apply_changes refused")

// errEnvelopeRequired and errEnvelopeRefused mark a batch refused for its
// mode: a plaintext ChangeSet pushed to a sealed database
// (ENVELOPE_REQUIRED), an envelope pushed to a plain one
// (ENVELOPE_REFUSED). Both are refusals for content (refused).
var (
	errEnvelopeRequired = fmt.Errorf("%w: envelope required", errRefused)
	errEnvelopeRefused  = fmt.Errorf("%w: envelope refused", errRefused)
)

// errSnapshotRequired is returned by readChanges for a cursor the arrival log
// cannot serve.
type errSnapshotRequired struct{ since, pruned, current uint64 }

func (e *errSnapshotRequired) Error() string {
	if e.since > e.current {
		return fmt.Sprintf("cursor %d is ahead of this database's log (current cursor %d): it comes from another log; bootstrap from a snapshot", e.since, e.current)
	}
	return fmt.Sprintf("cursor %d is older than the retained log (entries up to %d were pruned); bootstrap from a snapshot", e.since, e.pruned)
}

// open opens (creating if needed) the database file and its replica. A file
// it creates is sealed when sealed is true; an existing one keeps the mode
// it was created with.
func (d *database) open(sealed bool) error {
	st, err := d.openStore()
	if err != nil {
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	var cur uint64
	err = st.Update(func(tx kv.Tx) error {
		f, err := tx.Get(bucketRelay, keyFormat)
		switch {
		case errors.Is(err, kv.ErrNotFound):
			if err := tx.Put(bucketRelay, keyFormat, []byte(relayFormat)); err != nil {
				return err
			}
			if sealed {
				if err := tx.Put(bucketRelay, keySealed, []byte("1")); err != nil {
					return err
				}
			}
		case err != nil:
			return err
		case string(f) == "1":
			d.log.Info("relay: upgrading the database file to format 2 (arrival log chain values)")
			if err := upgradeFormat1(tx); err != nil {
				return fmt.Errorf("upgrading format 1: %w", err)
			}
		case string(f) != relayFormat:
			return fmt.Errorf("%w: relay format %q, this version reads %s", errCorrupt, f, relayFormat)
		}
		switch v, err := tx.Get(bucketRelay, keySealed); {
		case err == nil && string(v) == "1":
			d.sealed = true
		case err == nil:
			return fmt.Errorf("%w: sealed flag %q", errCorrupt, v)
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		cur, err = getCounter(tx, keyCursor)
		return err
	})
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	eng, err := engine.Open(st, engine.Options{Clock: d.s.cfg.Clock, Retention: d.s.cfg.Retention, Logger: d.log, Rand: d.s.cfg.Rand})
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	d.store, d.eng, d.site = st, eng, eng.SiteID()
	d.cursor.Store(cur)
	// Under the writer lock: another relay on shared storage may be
	// appending, or finishing a pruning too.
	unlock, err := d.lock()
	if err != nil {
		_ = eng.Close()
		_ = st.Close()
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	defer unlock()
	if d.sealed && d.shared != nil {
		// Another relay's upload may be under way: stray parts stay
		// (relay/doc.go § Several relays).
	} else if d.sealed {
		// Nothing to merge: the relay cannot read envelopes. Parts of
		// checkpoint uploads a stop interrupted go.
		if err := d.dropStrayParts(); err != nil {
			_ = eng.Close()
			_ = st.Close()
			return fmt.Errorf("open database %q: %w", d.id, err)
		}
	} else if err := d.remerge(); err != nil {
		_ = eng.Close()
		_ = st.Close()
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	if err := d.loadHorizon(); err != nil {
		_ = eng.Close()
		_ = st.Close()
		return fmt.Errorf("open database %q: %w", d.id, err)
	}
	return nil
}

// openStore opens the database's store: Config.OpenStore's, or its bbolt
// file.
func (d *database) openStore() (kv.Store, error) {
	if d.s.cfg.Storage != nil {
		return d.s.cfg.Storage.Open(d.id)
	}
	if d.s.cfg.OpenStore != nil {
		return d.s.cfg.OpenStore(d.id)
	}
	return boltkv.Open(d.path, storeBuckets, &boltkv.Options{NoSync: d.s.cfg.NoSync, Mode: 0o600})
}

// close closes the replica and the file.
func (d *database) close() error {
	if d.store == nil {
		return nil
	}
	_ = d.eng.Close()
	return d.store.Close()
}

// getCounter reads an 8-byte counter of the relay bucket (0 when absent).
func getCounter(tx kv.Tx, key []byte) (uint64, error) {
	v, err := tx.Get(bucketRelay, key)
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return parseUint64(v)
}

// arrival is a ChangeSet just appended to the log.
type arrival struct {
	cursor uint64
	chain  wire.Chain // the log's chain value at cursor
	facts  int
	json   []byte
}

// pendingSet is a ChangeSet of a batch to apply, encoded for the arrival
// log: its dedup key, its wire JSON and what the log records of it.
type pendingSet struct {
	key   []byte
	json  []byte
	facts int
	site  model.SiteID
	hlc   model.HLC
	// repair: of a repair push (wire's "Repair pushes"): key is
	// repairKey's, and the entry neither enters the dedup index nor
	// raises its author's siteHlc.
	repair bool
	// fresh: the log was found not to hold key under the writer lock
	// that the append holds, and no other pendingSet of the append has
	// it (a group's, group.go): appendArrivals does not look it up
	// again.
	fresh bool
}

// stored is what an apply_changes appended to the log: n ChangeSets, and,
// for the sender's apply_result (wire version 9, "Acknowledged position"),
// their position: the cursors first … last (consecutive: appended under
// applyMu), the chain value at last and the horizon marks at first-1 …
// last with the sender's siteHlc. first is 0 when the position is not
// told: nothing appended, or a repair push (its entries reach the sender
// as push_changes).
type stored struct {
	n           int
	first, last uint64
	chain       wire.Chain
	marks       []wire.Horizon
}

// position returns s as an apply_result's members.
func (s stored) position(m *wire.ApplyResult) {
	if s.first == 0 {
		return
	}
	m.First, m.Cursor, m.Chain, m.Horizons = s.first, s.last, s.chain, s.marks
}

// storedOf returns what sender is told of added (and the marks in their
// range, marks: those at the cursor before the first): their position,
// the marks with sender's siteHlc. A failure to read the marks' site
// table leaves the position out (the sender pulls as before version 9).
func (d *database) storedOf(sender *conn, added []arrival, marks []wire.Horizon) stored {
	st := stored{n: len(added)}
	if len(added) == 0 {
		return st
	}
	if len(marks) > 0 {
		ms, err := d.marksTo(marks, sender.site)
		if err != nil {
			sender.log.Warn("relay: reading a horizon mark's site table failed; the apply_result says no position", "err", err)
			return st
		}
		st.marks = ms
	}
	st.first, st.last, st.chain = added[0].cursor, added[len(added)-1].cursor, added[len(added)-1].chain
	return st
}

// apply merges sets into the replica and appends the ChangeSets the log does
// not hold yet, in one kv transaction, then sends them as push_changes to
// every other connection of the database. It returns the engine's result
// for sets, what it appended (stored), and whether the apply_result
// (requestId requestID) was queued to sender already (answered: see
// group.go; else the caller sends it). Nothing of sets is stored when it
// fails: errors satisfy refused for a batch refused for its content,
// model.ErrClockDrift for one too far ahead, or are storage errors.
//
// The apply_changes of a database's connections are merged in groups, one
// kv transaction each (group.go), each answered with its own counts and
// position. A repair push (repair; wire's "Repair pushes") carries other
// sites' ChangeSets and is merged alone: each is merged, and appended only
// if it changed the merged replica (applyRepair).
func (d *database) apply(sender *conn, requestID string, sets []model.ChangeSet, repair bool) (res model.ApplyResult, st stored, answered bool, err error) {
	sets, pend, err := d.prepareBatch(sender, sets, repair)
	if err != nil {
		return model.ApplyResult{}, stored{}, false, err
	}
	if !repair {
		r := &applyReq{sender: sender, requestID: requestID, sets: sets, pend: pend}
		for _, p := range pend {
			r.facts += p.facts
		}
		d.applyGrouped(r)
		return r.res, r.st, r.answered, r.err
	}
	now := d.s.cfg.Clock.Now()
	unlock, err := d.lock()
	if err != nil {
		return model.ApplyResult{}, stored{}, false, err
	}
	defer unlock()
	if err := d.finishPruning(); err != nil {
		return model.ApplyResult{}, stored{}, false, err
	}
	res, st, err = d.applyRepair(sender, sets, pend, now)
	return res, st, false, err
}

// applyLocked is apply of one prepared batch that is not a repair push,
// under the writer lock, arrived at now: a group of one (mergeGroup). A
// resend of a transaction the log holds is not merged again: after a
// horizon mark pruned the row it wrote, merging it would revive the row
// in the merged replica (and every later snapshot) with no log entry, so
// no replica pulling the log would ever see it. The transactions the log
// holds are left out and counted as skipped, the rest merged (or, sealed,
// stored) and appended in one kv transaction, and published.
func (d *database) applyLocked(sender *conn, sets []model.ChangeSet, pend []pendingSet, now uint64) (model.ApplyResult, stored, error) {
	r := &applyReq{sender: sender, sets: sets, pend: pend}
	last, err := d.mergeGroup([]*applyReq{r}, now)
	switch {
	case r.failed:
		return model.ApplyResult{}, stored{}, r.err
	case errors.Is(err, errAllHeld):
		return r.res, stored{}, nil
	case err != nil:
		return model.ApplyResult{}, stored{}, err
	}
	d.s.metrics.applyCommits.Inc()
	d.publish(sender, r.added, r.marks, last)
	return r.res, d.storedOf(sender, r.added, r.marks), nil
}

// errAllHeld aborts the merge's transaction of a batch (or group) whose
// every transaction the log holds already (or was refused): nothing to
// merge or append.
var errAllHeld = errors.New("relay: every transaction of the batch is held")

// heldIn tells, in transaction tx (under the writer lock), which
// transactions of sets (and pend) the log does not hold yet (keep),
// checking that each held one is a resend (checkResend; not a sealed
// database's envelope: resent, it is sealed anew, with another nonce, and
// cannot be compared, the first copy stays), and counts the held ones as
// skipped (every change of theirs; one change per envelope).
func (d *database) heldIn(tx kv.Tx, sets []model.ChangeSet, pend []pendingSet) ([]bool, model.ApplyResult, error) {
	keep := make([]bool, len(pend))
	var held model.ApplyResult
	for i, p := range pend {
		v, err := tx.Get(bucketArrivalsTx, p.key)
		switch {
		case errors.Is(err, kv.ErrNotFound):
			keep[i] = true
			continue
		case err != nil:
			return nil, held, err
		}
		if d.sealed {
			held.Skipped++ // one change per envelope
		} else {
			if err := checkResend(tx, v, p.json, i); err != nil {
				return nil, held, err
			}
			held.Skipped += len(sets[i].Changes)
		}
		held.Transactions++
	}
	return keep, held, nil
}

// prepareBatch checks a batch pushed by sender before anything is merged
// and encodes it for the arrival log: it returns the batch without its
// repeated transactions (dedupBatch) and a pendingSet per ChangeSet of it.
func (d *database) prepareBatch(sender *conn, sets []model.ChangeSet, repair bool) ([]model.ChangeSet, []pendingSet, error) {
	if repair && d.sealed {
		// The relay cannot merge envelopes to tell which facts it lacks
		// (wire's "Repair pushes").
		return nil, nil, fmt.Errorf("%w: database %q is sealed: the relay cannot merge a repair push's envelopes", errRefused, d.id)
	}
	// A connection pushes its own site's transactions only: a ChangeSet of
	// another site would reach every device but that one (its pulls leave
	// its own site out), and they would diverge for good. A repair push
	// carries other sites' only (its entries are the sender's, which
	// every replica pulls, the sender and the authors included).
	for i := range sets {
		cs := &sets[i]
		switch {
		case !repair && cs.SiteID != sender.site:
			return nil, nil, fmt.Errorf("%w: ChangeSet %d (%s) is of site %s, but this connection's handshake declared site %s: a client pushes only its own transactions",
				errRefused, i, cs.TransactionID, cs.SiteID, sender.site)
		case repair && cs.SiteID == sender.site:
			return nil, nil, fmt.Errorf("%w: repair push: ChangeSet %d (%s) is of the sender's own site %s: a repair push carries other sites' facts, a client's own go in a plain apply_changes",
				errRefused, i, cs.TransactionID, cs.SiteID)
		}
		switch cs := &sets[i]; {
		case d.sealed && !cs.Sealed():
			return nil, nil, fmt.Errorf("%w: ChangeSet %d (%s) is plaintext, and database %q is sealed: push envelopes", errEnvelopeRequired, i, cs.TransactionID, d.id)
		case !d.sealed && cs.Sealed():
			return nil, nil, fmt.Errorf("%w: ChangeSet %d (%s) is an envelope, and database %q is plain: it cannot be merged", errEnvelopeRefused, i, cs.TransactionID, d.id)
		}
	}
	var err error
	if !repair {
		// A repair push is merged whatever repeats: its entries are
		// appended only where they change the merged replica.
		if sets, err = dedupBatch(sets); err != nil {
			return nil, nil, err
		}
	}
	pend := make([]pendingSet, len(sets))
	for i := range sets {
		cs := &sets[i]
		if cs.SiteID == d.site {
			return nil, nil, fmt.Errorf("%w: ChangeSet %d (%s) claims the relay's own site id %s", errRefused, i, cs.TransactionID, d.site)
		}
		js, err := wire.MarshalChangeSet(cs)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: ChangeSet %d: %w", model.ErrMalformed, i, err)
		}
		pend[i] = pendingSet{key: dedupKey(cs), json: js, facts: facts(cs), site: cs.SiteID, hlc: cs.HLC}
		if repair {
			pend[i].key, pend[i].repair = repairKey(sender.site, cs), true
		}
	}
	return sets, pend, nil
}

// appendArrivals appends, in the merge's kv transaction tx (under applyMu),
// the ChangeSets of pend the log does not hold yet, arrived at arrivedMs, and
// moves the log's head (cursor and chain value) past them. It returns the
// arrivals appended, the horizon marks that fall in their push's range,
// and the cursor after them.
func (d *database) appendArrivals(tx kv.Tx, pend []pendingSet, arrivedMs uint64) ([]arrival, []wire.Horizon, uint64, error) {
	cur, err := getCounter(tx, keyCursor)
	if err != nil {
		return nil, nil, 0, err
	}
	// Marks are made at the head under applyMu: only one at cur,
	// before the first ChangeSet appended here, can fall in the
	// push's range (wire's push_changes: first-1 … last).
	var marks []wire.Horizon
	switch m, ok, err := markAt(tx, cur); {
	case err != nil:
		return nil, nil, 0, err
	case ok:
		marks = []wire.Horizon{m}
	}
	chain, _, err := getChain(tx, bucketRelay, keyChain, wire.GenesisChain)
	if err != nil {
		return nil, nil, 0, err
	}
	var added []arrival
	for i, p := range pend {
		if p.repair || p.fresh {
			// Not deduplicated: applyRepair passes only the
			// ChangeSets that changed the merged replica, a group
			// those it checked.
			cur, chain, added, err = d.appendOne(tx, cur, chain, arrivedMs, p, added)
			if err != nil {
				return nil, nil, 0, err
			}
			continue
		}
		v, err := tx.Get(bucketArrivalsTx, p.key)
		switch {
		case err == nil:
			// Held already: a resend adds nothing to the log, if
			// it is one (see checkResend; an envelope resent is
			// sealed anew, with another nonce, and cannot be
			// compared: the first copy stays).
			if !d.sealed {
				if err := checkResend(tx, v, p.json, i); err != nil {
					return nil, nil, 0, err
				}
			}
			continue
		case !errors.Is(err, kv.ErrNotFound):
			return nil, nil, 0, err
		}
		if cur, chain, added, err = d.appendOne(tx, cur, chain, arrivedMs, p, added); err != nil {
			return nil, nil, 0, err
		}
	}
	if len(added) == 0 {
		return nil, marks, cur, nil
	}
	if err := tx.Put(bucketRelay, keyChain, chain[:]); err != nil {
		return nil, nil, 0, err
	}
	if err := tx.Put(bucketRelay, keyCursor, cursorKey(cur)); err != nil {
		return nil, nil, 0, err
	}
	d.notifyIn(tx, cur)
	return added, marks, cur, nil
}

// appendKeys returns the keys appendArrivals (and heldIn, pendingIn) will
// read for pend, to prefetch (engine.ApplyOptions.Prefetch, kv.Prefetcher)
// with the transaction's first read: the head, the horizon mark at the
// head this process knows (another relay's append since costs a read of
// its own), a pruning left pending when pendingIn reads it, and per
// ChangeSet its dedup entry and its site's highest hlc.
func (d *database) appendKeys(pend []pendingSet) []kv.BucketKey {
	keys := make([]kv.BucketKey, 0, 4+2*len(pend))
	keys = append(keys,
		kv.BucketKey{Bucket: bucketRelay, Key: keyCursor},
		kv.BucketKey{Bucket: bucketRelay, Key: keyChain},
		kv.BucketKey{Bucket: bucketHorizons, Key: cursorKey(d.cursor.Load())})
	if d.checksPending() {
		keys = append(keys, kv.BucketKey{Bucket: bucketRelay, Key: keyHorizonPending})
	}
	for _, p := range pend {
		if !p.repair {
			keys = append(keys,
				kv.BucketKey{Bucket: bucketArrivalsTx, Key: p.key},
				kv.BucketKey{Bucket: bucketSites, Key: p.site[:]})
		}
	}
	return keys
}

// appendOne appends p after cursor cur (chain value chain) and returns the
// new head and added with p's arrival.
func (d *database) appendOne(tx kv.Tx, cur uint64, chain wire.Chain, arrivedMs uint64, p pendingSet, added []arrival) (uint64, wire.Chain, []arrival, error) {
	if cur >= wire.MaxCursor {
		return cur, chain, added, fmt.Errorf("relay: arrival log of %q is full (cursor %d)", d.id, cur)
	}
	cur++
	chain = nextChain(chain, p.key)
	if err := putArrival(tx, cur, chain, arrivedMs, p); err != nil {
		return cur, chain, added, err
	}
	return cur, chain, append(added, arrival{cursor: cur, chain: chain, facts: p.facts, json: p.json}), nil
}

// putArrival stores p as the log's entry at cursor cur, with chain value
// chain: its record, its dedup entry (arrivals_tx), its chain value, and
// its site's highest appended HLC; a repair entry only its record and
// chain value.
func putArrival(tx kv.Tx, cur uint64, chain wire.Chain, arrivedMs uint64, p pendingSet) error {
	if err := tx.Put(bucketArrivals, cursorKey(cur), encodeRecord(arrivedMs, p.facts, p.key, p.json)); err != nil {
		return err
	}
	if err := tx.Put(bucketChain, cursorKey(cur), chain[:]); err != nil {
		return err
	}
	if p.repair {
		return nil
	}
	idx := binary.BigEndian.AppendUint32(cursorKey(cur), uint32(p.facts))
	if err := tx.Put(bucketArrivalsTx, p.key, idx); err != nil {
		return err
	}
	return raiseSiteHLC(tx, p.site, p.hlc)
}

// checkResend checks a ChangeSet (its wire JSON js, index i in the batch)
// whose transaction the log holds already (idx: its arrivals_tx entry):
// every fact of it must be a fact of the held copy, the same HLC with the
// same content. A client resending a push whose ack it lost sends the same
// facts, or fewer (newer local writes superseded some), never others. A
// copy with other facts is refused (errRefused): the merged replica would
// take them while the log, which does not append a held transaction again,
// kept the first copy, and pulling and bootstrapping devices would
// diverge.
func checkResend(tx kv.Tx, idx, js []byte, i int) error {
	if len(idx) != 12 {
		return fmt.Errorf("%w: %d-byte dedup entry", errCorrupt, len(idx))
	}
	cur := binary.BigEndian.Uint64(idx)
	v, err := tx.Get(bucketArrivals, cursorKey(cur))
	if err != nil {
		return fmt.Errorf("%w: dedup entry names cursor %d: %w", errCorrupt, cur, err)
	}
	r, err := decodeRecord(v)
	if err != nil {
		return err
	}
	if bytes.Equal(r.json, js) {
		return nil // the common resend: the very same ChangeSet
	}
	held, err := wire.UnmarshalChangeSet(r.json)
	if err != nil {
		return fmt.Errorf("%w: record %d: %w", errCorrupt, cur, err)
	}
	cs, err := wire.UnmarshalChangeSet(js)
	if err != nil {
		return fmt.Errorf("relay: re-reading ChangeSet %d: %w", i, err)
	}
	diff, err := coveredBy(&cs, &held)
	if err != nil {
		return fmt.Errorf("relay: comparing ChangeSet %d with cursor %d: %w", i, cur, err)
	}
	if diff != "" {
		return fmt.Errorf("%w: ChangeSet %d resends transaction %s of site %s (stored at cursor %d) with other facts: its %s; a resend may carry the transaction's facts or fewer of them, never others",
			errRefused, i, cs.TransactionID, cs.SiteID, cur, diff)
	}
	return nil
}

// broadcast queues push_changes frames carrying added to every connection of
// the database but sender. It never blocks: see conn.push.
func (d *database) broadcast(sender *conn, added []arrival, marks []wire.Horizon) {
	if len(added) == 0 {
		return
	}
	d.connsMu.Lock()
	targets := make([]*conn, 0, len(d.conns))
	for c := range d.conns {
		if c != sender {
			targets = append(targets, c)
		}
	}
	d.connsMu.Unlock()
	if len(targets) == 0 {
		return
	}
	var frames [][]byte
	if len(marks) == 0 {
		frames = d.pushFrames(added, nil)
	}
	for _, c := range targets {
		fs := frames
		if len(marks) > 0 {
			// A mark carries each site its own siteHlc: frames per
			// connection (once per mark: only the first append after
			// it carries it).
			ms, err := d.marksTo(marks, c.site)
			if err != nil {
				// Closed, the client reconnects and pulls what it missed.
				c.log.Warn("relay: reading a horizon mark's site table failed; closing the connection so that the client re-pulls", "err", err)
				c.closeWith(websocket.StatusTryAgainLater, "storage error", false)
				continue
			}
			fs = d.pushFrames(added, ms)
		}
		for _, f := range fs {
			if !c.push(f) {
				break
			}
		}
	}
}

// marksTo returns marks as sent to a connection of site: each with its
// siteHlc (markSiteHLC).
func (d *database) marksTo(marks []wire.Horizon, site model.SiteID) ([]wire.Horizon, error) {
	ms := slices.Clone(marks)
	err := d.store.View(func(tx kv.Tx) error { return fillSiteHLC(tx, ms, site) })
	return ms, err
}

// pushFrames splits added into push_changes frames bounded by PageChanges
// and the frame size, each carrying consecutive cursors ending at its own
// and the marks (ascending) with first-1 ≤ cursor ≤ last of its
// sequences first … last.
func (d *database) pushFrames(added []arrival, marks []wire.Horizon) [][]byte {
	var frames [][]byte
	limit := int(d.s.cfg.MaxMessageSize) - frameOverhead
	for start := 0; start < len(added); {
		end, n, size := start, 0, 0
		for end < len(added) {
			a := added[end]
			if end > start && (n+a.facts > d.s.cfg.PageChanges || size+len(a.json)+1 > limit) {
				break
			}
			n += a.facts
			size += len(a.json) + 1
			end++
		}
		page := make([][]byte, 0, end-start)
		for _, a := range added[start:end] {
			page = append(page, a.json)
		}
		lo, hi := added[start].cursor-1, added[end-1].cursor
		var hs []wire.Horizon
		for _, h := range marks {
			if h.Cursor >= lo && h.Cursor <= hi {
				hs = append(hs, h)
			}
		}
		frames = append(frames, changeSetsFrame(wire.TypePushChanges, hi, added[end-1].chain, false, hs, page))
		start = end
	}
	return frames
}

// changeSetsFrame assembles a changes or push_changes frame from stored
// ChangeSet JSON, as wire.Encode would write it (type, cursor, chain, more
// for changes, horizons when any, changeSets).
func changeSetsFrame(t wire.MessageType, cursor uint64, chain wire.Chain, more bool, marks []wire.Horizon, sets [][]byte) []byte {
	n := 64 + 80*len(marks)
	for _, s := range sets {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"type":"`...)
	b = append(b, t...)
	b = append(b, `","cursor":`...)
	b = strconv.AppendUint(b, cursor, 10)
	b = append(b, `,"chain":"`...)
	b = append(b, chain.String()...)
	b = append(b, '"')
	if t == wire.TypeChanges {
		b = append(b, `,"more":`...)
		b = strconv.AppendBool(b, more)
	}
	if len(marks) > 0 {
		b = append(b, `,"horizons":`...)
		b = wire.AppendHorizons(b, marks)
	}
	if len(sets) > 0 {
		// Version 14: a binary frame, its ChangeSets transcoded from the
		// stored JSON (which stays the storage form, so that data
		// directories of earlier versions are served as they are).
		head := append(b, `,"changeSets":`...)
		head = strconv.AppendInt(head, int64(len(sets)), 10)
		head = append(head, '}')
		tail := make([]byte, 0, n/2)
		var err error
		for _, s := range sets {
			if tail, err = wire.AppendTranscodedItem(tail, s); err != nil {
				break
			}
		}
		if err == nil {
			return wire.BinaryFrame(head, tail)
		}
		// Stored JSON that does not decode (it never should: the relay
		// wrote it): send the JSON form, which a receiver of version 14
		// reads as well, and let it refuse what it cannot read.
		b = head[:len(b)]
	}
	b = append(b, `,"changeSets":[`...)
	for i, s := range sets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return append(b, "]}"...)
}

// readChanges returns the changes frame answering get_changes{since} for a
// client of site own: the ChangeSets after since in cursor order, without
// those of site own (the client has them; its engine would skip them as its
// own echo) but those in echo (get_changes' ownAbove and ownUpTo: wire's
// "Own ChangeSets after a mark"), bounded by PageChanges and the frame size
// at ChangeSet granularity (a larger ChangeSet goes alone). It returns
// *errSnapshotRequired when since is older than the retained log or ahead
// of it.
func (d *database) readChanges(since uint64, own model.SiteID, echo ownRange) ([]byte, error) {
	var frame []byte
	err := d.store.View(func(tx kv.Tx) error {
		cur, err := getCounter(tx, keyCursor)
		if err != nil {
			return err
		}
		pruned, err := getCounter(tx, keyPruned)
		if err != nil {
			return err
		}
		if since > cur || since < pruned {
			return &errSnapshotRequired{since: since, pruned: pruned, current: cur}
		}
		// A page ends at the first horizon mark after since (wire's
		// "Tombstone horizon"): its ChangeSets are applied before the
		// mark's pruning, the next page's after it.
		end := cur
		if ms, err := marksIn(tx, since+1, cur); err != nil {
			return err
		} else if len(ms) > 0 {
			end = ms[0].Cursor
		}
		p, err := d.readPage(tx, since, end, own, echo)
		if err != nil {
			return err
		}
		switch {
		case p.more:
		case end < cur:
			// Stopped at a mark: the page covers up to it.
			p.last, p.more = end, true
			if p.lastKey != nil && !bytes.Equal(p.lastKey, cursorKey(end)) {
				p.lastKey = nil
			}
		default:
			p.last = cur
		}
		var chain wire.Chain
		var ok bool
		if p.last == cur || p.lastKey == nil {
			chain, ok, err = chainAt(tx, p.last)
		} else {
			chain, ok, err = getChain(tx, bucketChain, p.lastKey, wire.Chain{})
		}
		if err == nil && !ok {
			err = fmt.Errorf("%w: no chain value for cursor %d", errCorrupt, p.last)
		}
		if err != nil {
			return err
		}
		// Every mark with since ≤ cursor ≤ last (wire's changes), with
		// the requester's siteHlc.
		marks, err := marksFor(tx, since, p.last, own)
		if err != nil {
			return err
		}
		// The page aliases the transaction's memory: assemble it here.
		frame = changeSetsFrame(wire.TypeChanges, p.last, chain, p.more, marks, p.sets)
		return nil
	})
	return frame, err
}

// changesPage is what readPage read of the arrival log.
type changesPage struct {
	sets    [][]byte // the ChangeSets' JSON, aliasing the transaction's memory
	last    uint64   // the last cursor read (since when none)
	lastKey []byte   // the record key at last, when one was read
	more    bool     // the page stopped before end: it is full
}

// ownRange is the range of a client's own ChangeSets it asks for again
// (get_changes' ownAbove and ownUpTo), by transaction: those whose base is
// above above's and at most upTo's. set false: none.
type ownRange struct {
	above, upTo model.HLC
	set         bool
}

// has reports whether the ChangeSet of the arrival record whose dedup key
// is key (site ‖ transactionId "wall:counter:site") lies in the range.
func (o ownRange) has(key []byte) bool {
	var site model.SiteID
	if !o.set || len(key) <= len(site) {
		return false
	}
	copy(site[:], key)
	parts := strings.SplitN(string(key[len(model.SiteID{}):]), ":", 3)
	if len(parts) != 3 {
		return false
	}
	wall, err1 := strconv.ParseUint(parts[0], 10, 64)
	counter, err2 := strconv.ParseUint(parts[1], 10, 16)
	if err1 != nil || err2 != nil {
		return false
	}
	base := model.HLC{Wall: wall, Counter: uint16(counter), Site: site}
	return o.above.Base().Less(base) && !o.upTo.Base().Less(base)
}

// readPage reads the arrival log's records after since up to end in tx,
// leaving out those of site own but those in echo and its repair entries
// (wire's "Repair pushes": the sender merges them in their place too),
// until the page is full
// (PageChanges facts or the frame size, at ChangeSet granularity: the
// first one goes in whatever its size).
func (d *database) readPage(tx kv.Tx, since, end uint64, own model.SiteID, echo ownRange) (changesPage, error) {
	p := changesPage{last: since}
	if since >= end {
		return p, nil
	}
	pageChanges := d.s.cfg.PageChanges
	limit := int(d.s.cfg.MaxMessageSize) - frameOverhead
	n, size := 0, 0
	var derr error
	err := tx.Scan(bucketArrivals, kv.Range{Start: cursorKey(since + 1), End: cursorKey(end + 1)}, func(k, v []byte) bool {
		c, err := parseUint64(k)
		if err == nil {
			var r record
			r, err = decodeRecord(v)
			if err == nil {
				if s, ok := r.site(); ok && s == own && !isRepairKey(r.key) && !echo.has(r.key) {
					p.last, p.lastKey = c, k
					return true
				}
				if len(p.sets) > 0 && (n+r.facts > pageChanges || size+len(r.json)+1 > limit) {
					p.more = true
					return false
				}
				p.sets = append(p.sets, r.json)
				n += r.facts
				size += len(r.json) + 1
				p.last, p.lastKey = c, k
				return true
			}
		}
		derr = err
		return false
	})
	if err == nil {
		err = derr
	}
	return p, err
}

// pruneArrivals removes the arrival records that arrived before cutoffMs,
// oldest first, stopping at the first newer one, in transactions of at most
// pruneBatch records, and moves the pruned counter past them. It returns the
// number removed.
func (d *database) pruneArrivals(cutoffMs uint64) (int, error) {
	// A sealed database has no merged replica: below its newest sealed
	// checkpoint the log may go, above it it is the only copy the relay
	// can serve a new device.
	var capCursor uint64 = wire.MaxCursor
	if d.sealed {
		ck, _, err := d.checkpointInfo()
		if err != nil {
			return 0, err
		}
		capCursor = ck
	}
	total := 0
	for {
		var n int
		done := false
		err := d.store.Update(func(tx kv.Tx) error {
			n, done = 0, false
			pruned, err := getCounter(tx, keyPruned)
			if err != nil {
				return err
			}
			type victim struct {
				cursor uint64
				key    []byte
			}
			var vs []victim
			var derr error
			err = tx.Scan(bucketArrivals, kv.Range{Start: cursorKey(pruned + 1), Limit: pruneBatch}, func(k, v []byte) bool {
				c, err := parseUint64(k)
				if err != nil {
					derr = err
					return false
				}
				r, err := decodeRecord(v)
				if err != nil {
					derr = err
					return false
				}
				if r.arrivedMs >= cutoffMs || c > capCursor {
					done = true
					return false
				}
				vs = append(vs, victim{c, bytes.Clone(r.key)})
				return true
			})
			if err == nil {
				err = derr
			}
			if err != nil {
				return err
			}
			if len(vs) < pruneBatch {
				done = true
			}
			if len(vs) > 0 {
				// The compaction point keeps its chain value, so that a
				// client at it can still be checked.
				last := cursorKey(vs[len(vs)-1].cursor)
				ch, ok, err := getChain(tx, bucketChain, last, wire.Chain{})
				if err == nil && !ok {
					err = fmt.Errorf("%w: no chain value for cursor %d", errCorrupt, vs[len(vs)-1].cursor)
				}
				if err != nil {
					return err
				}
				if err := tx.Put(bucketRelay, keyPrunedChain, ch[:]); err != nil {
					return err
				}
			}
			for _, v := range vs {
				if err := tx.Delete(bucketArrivals, cursorKey(v.cursor)); err != nil {
					return err
				}
				if err := tx.Delete(bucketChain, cursorKey(v.cursor)); err != nil {
					return err
				}
				idx, err := tx.Get(bucketArrivalsTx, v.key)
				switch {
				case err == nil && len(idx) >= 8 && binary.BigEndian.Uint64(idx) == v.cursor:
					if err := tx.Delete(bucketArrivalsTx, v.key); err != nil {
						return err
					}
				case err != nil && !errors.Is(err, kv.ErrNotFound):
					return err
				}
			}
			if len(vs) > 0 {
				if err := tx.Put(bucketRelay, keyPruned, cursorKey(vs[len(vs)-1].cursor)); err != nil {
					return err
				}
			}
			n = len(vs)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if done || n == 0 {
			return total, nil
		}
	}
}

// pruneBatch bounds the arrival records removed per kv transaction.
const pruneBatch = 1000

// addConn and removeConn maintain the set of connections pushes go to.
func (d *database) addConn(c *conn) {
	d.connsMu.Lock()
	if d.conns == nil {
		d.conns = make(map[*conn]struct{})
	}
	d.conns[c] = struct{}{}
	d.connsMu.Unlock()
}

func (d *database) removeConn(c *conn) {
	d.connsMu.Lock()
	delete(d.conns, c)
	d.connsMu.Unlock()
}

// dbPath returns the file of database id in dir.
func dbPath(dir, id string) string { return filepath.Join(dir, dbFileName(id)) }

// logPosition is the relay's answer to the log position a handshake
// presented, and what it holds of the handshaking site.
type logPosition struct {
	history wire.History
	siteHLC model.HLC // zero: the log never appended a ChangeSet of the site
}

// checkPosition answers a handshake of site that presented cursor, chain
// and the tombstone horizon it applied (0: none) in the log named by
// logSite (zero: none presented): whether this log continues that history
// (wire.HistoryContinues), is not a continuation of it
// (wire.HistoryDiverged: its head is below cursor, its chain value at
// cursor differs, or it lost a horizon mark the client applied: see
// lostMark), holds cursor but was given no chain value to check it
// against (wire.HistoryUnverified, wire version 10; cursor 0 names no
// entry and is not judged), or cannot tell ("": no position, another
// log's, or a cursor below the retained log), and the highest hlc of the
// site's appended ChangeSets (wire's "Verifying the relay's log").
func (d *database) checkPosition(site, logSite model.SiteID, cursor uint64, chain wire.Chain, horizon uint64) (logPosition, error) {
	var p logPosition
	err := d.store.View(func(tx kv.Tx) error {
		h, _, err := siteHLC(tx, site)
		if err != nil {
			return err
		}
		p.siteHLC = h
		if logSite != d.site {
			return nil // another log's position, or none
		}
		cur, err := getCounter(tx, keyCursor)
		if err != nil {
			return err
		}
		if cursor > cur {
			p.history = wire.HistoryDiverged
			return nil
		}
		if lost, err := lostMark(tx, cursor, horizon); err != nil {
			return err
		} else if lost {
			p.history = wire.HistoryDiverged
			return nil
		}
		held, ok, err := chainAt(tx, cursor)
		switch {
		case err != nil:
			return err
		case !ok:
			// Below the retained log: get_changes answers
			// SNAPSHOT_REQUIRED.
		case chain.IsZero() && cursor == 0:
			// No entry to skip.
		case chain.IsZero():
			// Held, but nothing to check it against (a snapshot's
			// cursor before the client's first pull): a copy
			// restored from before it may have grown past it again
			// with other entries (the simulator's seed 4297).
			p.history = wire.HistoryUnverified
		case held == chain:
			p.history = wire.HistoryContinues
		default:
			p.history = wire.HistoryDiverged
		}
		return nil
	})
	return p, err
}
