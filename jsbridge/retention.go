//go:build js && wasm

package jsbridge

import (
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/replica-sync/replica/engine"
)

// Retention. engine.Prune drops held changes older than the
// retention horizon (engine.DefaultRetention, 30 days) and tidies
// superseded own change-log entries past it, in bounded kv transactions.
// It does not drop tombstones (docs/design.md § Retention): those go only
// through engine.PruneTombstones, which the sync client calls at its
// relay's horizon marks; a replica that never syncs keeps them.
// Every tab shares one IndexedDB database, so one tab is enough: the
// leader runs it, on a goroutine of its own (never in a js.FuncOf
// callback), pruneFirst after it becomes leader, then every pruneEvery
// while it leads. Losing leadership or closing stops the loop (and waits
// for a Prune that runs). A failure is logged and retried at the next
// interval; a panic is recovered and logged.
var (
	pruneFirst = 30 * time.Second
	pruneEvery = 6 * time.Hour

	// Tests only: engineOptionsHook adjusts the options a replica's
	// engine is opened with (a short Retention); pruneHook sees every
	// Prune's outcome.
	engineOptionsHook func(*engine.Options)
	pruneHook         func(d *db, res engine.PruneResult, err error)
)

// pruner is a replica's retention loop.
type pruner struct {
	mu     sync.Mutex
	stop   chan struct{} // non-nil while a loop runs
	done   chan struct{} // closed when that loop returned
	closed bool          // the replica is closing: no new loop
}

// startPruning starts the retention loop unless one runs or the replica
// is closing. Runs on the worker (leaderChanged).
func (d *db) startPruning() {
	d.pr.mu.Lock()
	defer d.pr.mu.Unlock()
	if d.pr.stop != nil || d.pr.closed {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	d.pr.stop, d.pr.done = stop, done
	go d.pruneLoop(stop, done, pruneFirst, pruneEvery)
}

// stopPruning ends the retention loop, if any, and waits for it; closing
// also forbids a new one. Runs on the worker (leaderChanged, close).
func (d *db) stopPruning(closing bool) {
	d.pr.mu.Lock()
	stop, done := d.pr.stop, d.pr.done
	d.pr.stop, d.pr.done = nil, nil
	d.pr.closed = d.pr.closed || closing
	d.pr.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (d *db) pruneLoop(stop, done chan struct{}, first, every time.Duration) {
	defer close(done)
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d.pruneOnce()
		t.Reset(every)
	}
}

// pruneOnce runs engine.Prune once, logging a failure or a panic.
func (d *db) pruneOnce() {
	var res engine.PruneResult
	var err error
	defer func() {
		if p := recover(); p != nil {
			err = panicError("retention (engine.Prune)", p)
		}
		if err != nil {
			logWarn("replica: retention (pruning held changes and the change log) failed; retrying in "+pruneEvery.String(), "replica", d.name, "err", err)
		}
		if pruneHook != nil {
			pruneHook(d, res, err)
		}
	}()
	res, err = d.eng.Prune()
	if err == nil {
		_, err = d.pruneJournals(time.Now())
	}
}

// logWarn logs a warning as the engine's and the client's default loggers
// do (the standard log package: the browser console).
func logWarn(msg string, args ...any) {
	for i := 0; i+1 < len(args); i += 2 {
		msg += fmt.Sprintf(" %v=%v", args[i], args[i+1])
	}
	log.Print("WARN " + msg)
}
