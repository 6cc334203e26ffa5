package client

import (
	"fmt"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Repair pushes (wire's "Repair pushes"). A relay that lost history may
// lack facts that only a replica other than their author still holds: a
// tombstone its author pruned at a mark the relay lost, the writes of a
// device that is gone. After such a loss the client pushes every fact of
// other sites it holds (engine.PeerFacts), page by page, in apply_changes
// frames marked repair, once its first pull caught up; the relay appends
// those that change its merged replica, under this replica's name, and
// every other replica (their authors included) pulls them.
//
// The progress is stored (repairKey) so that a repair resumes where it
// stopped; a new loss starts it again from the beginning.

// startRepair decides, at the handshake, whether the relay log ns lost
// history this replica may hold facts of: its cursor there diverged or
// could not be verified (diverged), the relay holds fewer of this
// replica's transactions than it acknowledged (lowered), or this replica
// holds no cursor in the log while it last synced with another one (or
// with none: a relay wiped, replaced or new, a replica that received
// facts by other means). It stores a repair from the beginning then;
// otherwise a stored repair resumes.
func (s *session) startRepair(ns string, st *syncState, diverged, lowered bool) error {
	lost := diverged || lowered || (!st.haveCursor && s.lastLog != ns)
	if !lost {
		return nil
	}
	if s.c.sealed() {
		// A sealed database has no repair pushes: the relay cannot merge
		// envelopes (wire's "Repair pushes").
		return nil
	}
	if sets, _, err := s.db.PeerFacts(nil, 1); err != nil || len(sets) == 0 {
		// Nothing of other sites here (a new replica): no repair. A
		// pending one ends.
		if err == nil && st.repairing {
			err = s.db.SetState(repairKey(ns), nil)
		}
		st.repairing, st.repairPos = false, nil
		return err
	}
	st.repairing, st.repairPos = true, nil
	return s.db.SetState(repairKey(ns), encodeRepair(nil))
}

// sendRepair sends the next repair push: the rest of the page read last,
// or the next page of facts of other sites (PeerFacts, PushLimit facts),
// split to fit MaxMessageSize. A ChangeSet too large alone is skipped and
// reported (it cannot be pushed; its facts stay here). When no page is
// left, the repair ends and its stored progress is deleted.
func (s *session) sendRepair() {
	for {
		if len(s.repairPage) == 0 {
			if s.repairRead {
				// The page read last is done: resume after it.
				if err := s.advanceRepair(); err != nil {
					s.pushFailed(err)
					return
				}
				if !s.repairing {
					return
				}
			}
			sets, next, err := s.db.PeerFacts(s.repairPos, s.c.opts.PushLimit)
			if err != nil {
				s.pushFailed(fmt.Errorf("client: reading facts to repair the relay's log: %w", err))
				return
			}
			s.repairPage, s.repairNext, s.repairRead = sets, next, true
			if len(sets) == 0 {
				continue // an empty page: the end (next is nil)
			}
		}
		id := s.c.peekRequestID()
		batch := s.repairPage
		if s.repairMax > 0 && len(batch) > s.repairMax {
			batch = batch[:s.repairMax]
		}
		var b []byte
		var err error
		for {
			b, err = wire.EncodeClient(&wire.ApplyChanges{RequestID: id, Repair: true, ChangeSets: batch})
			if (err == nil && int64(len(b)) <= s.c.opts.MaxMessageSize) || len(batch) == 1 {
				break
			}
			batch = batch[:len(batch)/2]
		}
		if err != nil || int64(len(b)) > s.c.opts.MaxMessageSize {
			cs := &s.repairPage[0]
			if err == nil {
				err = fmt.Errorf("%w: it encodes to %d bytes, above the message size limit of %d (Options.MaxMessageSize)", ErrTooLarge, len(b), s.c.opts.MaxMessageSize)
			}
			s.skipRepair(cs, "", err.Error(), err)
			s.repairPage = s.repairPage[1:]
			continue
		}
		s.c.takeRequestID()
		s.push = &inflight{id: id, sets: batch, repair: true, at: s.c.clock.Now()}
		s.sendFrame(b)
		return
	}
}

// advanceRepair stores the position after the page read last, or ends the
// repair when it was the last page.
func (s *session) advanceRepair() error {
	s.repairRead = false
	if s.repairNext == nil {
		s.repairing, s.repairPos = false, nil
		s.othersInLog = nil // kept for a pending repair only (keepOthers)
		s.c.log.Debug("replica sync: repair push done", "database", s.t.databaseID)
		return s.db.SetState(repairKey(s.ns), nil)
	}
	s.repairPos, s.repairNext = s.repairNext, nil
	return s.db.SetState(repairKey(s.ns), encodeRepair(s.repairPos))
}

// restartRepair starts a pending repair again from the beginning, after
// a mark kept facts of other sites (pruneTo, keepOthers). The relay
// applies them after its pruning only if they reach it after the mark,
// and the repair may have pushed them before it: on a page before the
// stored position, or in an earlier session, whose pulls of the log
// (othersInLog) this one does not know, while the relay held them and
// pruned them at the mark (the simulator's seed 7143: a relay wiped, a
// repair cut after its first page, a mark at the relay's head, the
// repair resumed after the page; the replica kept the row's facts alone,
// for good). Pushed again, the relay appends those its pruning dropped,
// and merges the others as no-ops. A repair push in flight is answered
// as before; the next one reads the first page again.
func (s *session) restartRepair() error {
	if s.repairPos == nil && !s.repairRead {
		return nil // nothing pushed yet
	}
	s.repairPos, s.repairPage, s.repairNext, s.repairRead, s.repairMax = nil, nil, nil, false, 0
	s.c.log.Debug("replica sync: a horizon mark kept facts of other sites; the repair push starts again", "database", s.t.databaseID)
	if err := s.db.SetState(repairKey(s.ns), encodeRepair(nil)); err != nil {
		return fmt.Errorf("client: storing the repair's position: %w", err)
	}
	return nil
}

// repairAcked drops the acknowledged batch p from the page and goes on.
func (s *session) repairAcked(p *inflight) {
	s.repairPage = s.repairPage[min(len(p.sets), len(s.repairPage)):]
}

// repairRefused handles a refused repair push: a batch of several
// ChangeSets is split, the first half sent again; a single one is
// skipped and reported, and the repair goes on.
func (s *session) repairRefused(p *inflight, m *wire.Error) {
	if len(p.sets) > 1 {
		// Halve until the refused ChangeSet goes alone.
		s.repairMax = len(p.sets) / 2
	} else {
		s.repairMax = 0
		var cause error = m
		if m.Code == wire.CodeMessageTooLarge {
			cause = fmt.Errorf("%w: %w", ErrTooLarge, m)
		}
		s.skipRepair(&p.sets[0], m.Code, m.Message, cause)
		s.repairPage = s.repairPage[min(1, len(s.repairPage)):]
	}
}

// skipRepair reports a ChangeSet of another site this replica cannot push
// in a repair; its facts stay in this replica.
func (s *session) skipRepair(cs *model.ChangeSet, code wire.ErrorCode, msg string, cause error) {
	err := &RefusedError{TransactionID: cs.TransactionID, HLC: cs.HLC, Code: code, Message: "repair push of another site's facts: " + msg, Err: cause}
	s.c.log.Warn("replica sync: facts of another site will not be pushed back to the relay", "site", cs.SiteID, "transaction", cs.TransactionID, "err", err)
	s.c.report(err)
}

// noteInLog records the facts that sets, just merged from the relay's
// log, carry. Those of this replica's own go in s.ownInLog: a repair
// entry of another replica gives back facts of this one's the log then
// holds, though its siteHlc, which counts this replica's own pushes only,
// does not say so; a mark after them prunes them as the relay did
// (pruneTo). While a repair is pending, those of other sites go in
// s.othersInLog: a mark keeps the facts of other sites this replica
// holds but not those (keepOthers).
func (s *session) noteInLog(sets []model.ChangeSet) {
	own := s.db.SiteID()
	for i := range sets {
		var m *map[model.HLC]struct{}
		switch {
		case sets[i].SiteID == own:
			m = &s.ownInLog
		case s.repairing:
			m = &s.othersInLog
		default:
			continue
		}
		if *m == nil {
			*m = map[model.HLC]struct{}{}
		}
		for _, c := range sets[i].Changes {
			(*m)[c.HLC] = struct{}{}
		}
	}
}

// keepOthers reports whether a mark keeps h, a fact of another site, while
// a repair is pending: unless this session pulled it from the log, the
// relay did not hold it when it pruned (this replica kept it from before
// the loss of history), and the repair push gives it to the relay after
// the mark, which applies it there as every replica pulling its repair
// entry does (wire's "Repair pushes"). A fact kept though the relay held
// it (pulled in an earlier session) is pushed again all the same, the
// repair started again from the beginning (restartRepair): the relay
// appends it if its pruning dropped it, so replicas agree either way.
func (s *session) keepOthers(h model.HLC) bool {
	_, ok := s.othersInLog[h]
	return !ok
}

// heldInLog reports whether h, a fact of this replica's own, reached this
// session's pulls from the relay's log (noteOwnInLog).
func (s *session) heldInLog(h model.HLC) bool {
	_, ok := s.ownInLog[h]
	return ok
}

// pushOwnMergedBack flushes when sets, just merged (MergeOwn), carry facts
// of this replica's own above its sent watermark: another replica's
// repair push gave back facts this one had pruned or lost (its own
// tombstone, say), so they count as pending here again. Pushing them is
// harmless (the relay holds them: it merges them as no-ops and appends
// them as this replica's own), and moves the sent watermark past them;
// left alone, they would stay pending until the next local write.
func (s *session) pushOwnMergedBack(sets []model.ChangeSet) {
	own := s.db.SiteID()
	for i := range sets {
		if sets[i].SiteID == own && s.sent.Less(sets[i].HLC) {
			s.flush() // or deferred while a push is in flight
			return
		}
	}
}
