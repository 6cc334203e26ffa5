//go:build !js

package relay

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Storage operations whose failures /healthz reports, per database.
const (
	opOpen  = "open"  // opening the database file (acquire)
	opWrite = "write" // apply_changes
	opPrune = "prune" // retention (maintain): a pass with nothing to remove proves no write works
	opRead  = "read"  // get_changes, snapshots
)

// storageKey names one kind of storage operation on one database.
type storageKey struct{ db, op string }

// storageFailure is the last failure of one kind of operation on one
// database, until an operation of that kind succeeds there.
type storageFailure struct {
	err   string
	since time.Time // the first failure since the last success
	count int
}

// storageFailed records that op failed on database db with err: /healthz
// answers 503 until storageOK(db, op).
func (s *Server) storageFailed(db, op string, err error) {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	k := storageKey{db, op}
	f, ok := s.storageFails[k]
	if !ok {
		f.since = time.Now()
	}
	f.err = err.Error()
	f.count++
	s.storageFails[k] = f
	s.failing.Store(int32(len(s.storageFails)))
	s.metrics.storageErrors.WithLabelValues(op).Inc()
	s.metrics.storageFailing.Set(float64(len(s.storageFails)))
}

// storageOK records that op succeeded on database db, clearing its failure.
func (s *Server) storageOK(db, op string) {
	if s.failing.Load() == 0 {
		return // the common case, without the lock
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	k := storageKey{db, op}
	if f, ok := s.storageFails[k]; ok {
		delete(s.storageFails, k)
		s.failing.Store(int32(len(s.storageFails)))
		s.metrics.storageFailing.Set(float64(len(s.storageFails)))
		s.log.Info("relay: storage works again", "database", db, "op", op, "failures", f.count, "failingFor", time.Since(f.since).Round(time.Millisecond))
	}
}

// storageReport describes the storage failures /healthz reports, one line
// each (at most maxHealthLines, then a count), or "" when there are none.
func (s *Server) storageReport() string {
	s.healthMu.Lock()
	keys := make([]storageKey, 0, len(s.storageFails))
	for k := range s.storageFails {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b storageKey) int { return strings.Compare(a.db+"\x00"+a.op, b.db+"\x00"+b.op) })
	var b strings.Builder
	for i, k := range keys {
		if i == maxHealthLines {
			fmt.Fprintf(&b, "... and %d more\n", len(keys)-i)
			break
		}
		f := s.storageFails[k]
		fmt.Fprintf(&b, "storage failing: database %q: %s failed %d times since %s: %s\n", k.db, k.op, f.count, f.since.UTC().Format(time.RFC3339), f.err)
	}
	s.healthMu.Unlock()
	return b.String()
}

const maxHealthLines = 20
