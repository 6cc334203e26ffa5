//go:build !js

package client_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// remoteArrivals returns a channel that receives every RemoteChange
// ChangeSet applied on db (buffered for n).
func remoteArrivals(db *engine.Engine, n int) (<-chan *model.ChangeSet, func()) {
	ch := make(chan *model.ChangeSet, n)
	unsub := db.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.RemoteChange && ev.ChangeSet != nil {
			select {
			case ch <- ev.ChangeSet:
			default:
			}
		}
	})
	return ch, unsub
}

// BenchmarkPushThroughRelay measures how fast one replica's local
// transactions reach a second replica through a relay (in-process,
// bbolt without fsync) over loopback WebSockets: the writer commits b.N
// rows offline, then connects; the clock stops when the reader has
// applied the last one. Reported: changes/s (column facts) and rows/s.
func BenchmarkPushThroughRelay(b *testing.B) {
	for _, rowsPerTx := range []int{1, 100} {
		b.Run(fmt.Sprintf("rowsPerTx=%d", rowsPerTx), func(b *testing.B) {
			rl := startRelay(b, b.TempDir(), nil)
			w := newReplica(b, "writer", notesSchema(), engine.Options{}, client.Options{})
			r := newReplica(b, "reader", notesSchema(), engine.Options{}, client.Options{})
			r.connect(b, rl.url, "bench", "")
			waitState(b, r, client.Synced)
			txs := (b.N + rowsPerTx - 1) / rowsPerTx
			for i := 0; i < b.N; i += rowsPerTx {
				_, err := w.db.Transact(func(tx *engine.Tx) error {
					for j := i; j < min(i+rowsPerTx, b.N); j++ {
						if _, err := tx.Insert("notes", map[string]any{"id": fmt.Sprintf("r%08d", j), "title": "a title of some length", "n": j}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			arrived, unsub := remoteArrivals(r.db, txs+16)
			defer unsub()
			b.ResetTimer()
			start := time.Now()
			w.connect(b, rl.url, "bench", "")
			timeout := time.After(5 * time.Minute)
			for got := 0; got < txs; {
				select {
				case cs := <-arrived:
					if len(cs.Changes) > 0 {
						got++
					}
				case <-timeout:
					b.Fatalf("only %d of %d transactions arrived", got, txs)
				}
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(3*b.N)/el.Seconds(), "changes/s")
			b.ReportMetric(float64(b.N)/el.Seconds(), "rows/s")
		})
	}
}

// BenchmarkCommitToApply measures the latency from a local commit on one
// replica to its arrival, applied, on another, both online through a
// relay on loopback. Each sample is a change after a quiet period, so it
// takes the debounce's leading edge (pushed at once): the window is
// shortened to 1 ms so that samples 3 ms apart are quiet (with the default
// 50 ms window they would have to be 50 ms apart; the path measured is the
// same). Reported: p50 and p99 in ms; ns/op is the mean.
func BenchmarkCommitToApply(b *testing.B) {
	rl := startRelay(b, b.TempDir(), nil)
	opts := client.Options{DebounceWindow: time.Millisecond, MaxWait: 5 * time.Millisecond}
	w := newReplica(b, "writer", notesSchema(), engine.Options{}, opts)
	r := newReplica(b, "reader", notesSchema(), engine.Options{}, opts)
	for _, x := range []*replica{w, r} {
		x.connect(b, rl.url, "latency", "")
		waitState(b, x, client.Synced)
	}
	arrived, unsub := remoteArrivals(r.db, 1024)
	defer unsub()
	// Warm up: the first push carries the schema migrations.
	if _, err := w.db.Insert("notes", map[string]any{"id": "warm", "title": "x"}); err != nil {
		b.Fatal(err)
	}
	for cs := range arrived {
		if len(cs.Changes) > 0 {
			break
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		time.Sleep(3 * time.Millisecond) // quiet: past the window
		b.StartTimer()
		start := time.Now()
		if _, err := w.db.Insert("notes", map[string]any{"id": fmt.Sprintf("l%08d", i), "title": "x"}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			b.Fatalf("sample %d did not arrive", i)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
