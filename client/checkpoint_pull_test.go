package client

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

// TestCheckpointPullChunks: pullChunks runs the sequence one step per
// next (never ahead of it), reports the end once and then stays ended,
// and stop ends an iteration midway (the sequence's yield returns false)
// without leaving its goroutine behind.
func TestCheckpointPullChunks(t *testing.T) {
	var steps atomic.Int32
	seq := func(yield func(model.SnapshotChunk, error) bool) {
		for _, typ := range []model.ChunkType{model.ChunkHeader, model.ChunkSchema, model.ChunkFooter} {
			steps.Add(1)
			var err error
			if typ == model.ChunkSchema {
				err = errors.New("schema")
			}
			if !yield(model.SnapshotChunk{Type: typ}, err) {
				steps.Store(-steps.Load()) // stopped
				return
			}
		}
	}
	next, stop := pullChunks(seq)
	if n := steps.Load(); n != 0 {
		t.Fatalf("the sequence ran before next: %d steps", n)
	}
	for i, want := range []model.ChunkType{model.ChunkHeader, model.ChunkSchema, model.ChunkFooter} {
		c, err, ok := next()
		if !ok || c.Type != want || (err != nil) != (want == model.ChunkSchema) {
			t.Fatalf("next %d = %s, %v, %v; want %s", i, c.Type, err, ok, want)
		}
		if n := steps.Load(); n != int32(i+1) {
			t.Fatalf("after next %d the sequence made %d steps", i, n)
		}
	}
	for range 2 {
		if _, _, ok := next(); ok {
			t.Fatal("next after the end reported a chunk")
		}
	}
	stop()
	stop()

	base := runtime.NumGoroutine()
	steps.Store(0)
	next, stop = pullChunks(seq)
	if _, _, ok := next(); !ok {
		t.Fatal("no first chunk")
	}
	stop()
	if _, _, ok := next(); ok {
		t.Fatal("next after stop reported a chunk")
	}
	for end := time.Now().Add(5 * time.Second); steps.Load() != -1 || runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after stop: steps %d (want -1: yield returned false), goroutines %d (base %d)", steps.Load(), runtime.NumGoroutine(), base)
		}
	}
	// stop before any next starts nothing.
	_, stop = pullChunks(seq)
	stop()
}
