package kvtest

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/replica-sync/replica/kv"
)

// Benchmark shapes: 16-byte keys, 100-byte values, and a working set of at
// most benchKeys keys so long runs do not grow without bound.
const (
	benchKeys      = 100_000
	benchValueSize = 100
)

// benchKey writes the 16-byte key number i into dst: a fixed prefix and a
// scrambled 64-bit number, so consecutive i land all over the key space (the
// worst case for copy-on-write trees; engine row keys are UUIDv7-ordered and
// kinder).
func benchKey(dst []byte, i int) []byte {
	dst = append(dst[:0], "bench/k:"...)
	return binary.BigEndian.AppendUint64(dst, uint64(i%benchKeys)*0x9E3779B97F4A7C15)
}

// benchFill commits keys 0..n-1 (in 1,000-key transactions) into bucketA.
func benchFill(b *testing.B, st kv.Store, n int) {
	b.Helper()
	val := pattern(benchValueSize, 1)
	var key []byte
	for lo := 0; lo < n; lo += 1000 {
		if err := st.Update(func(tx kv.Tx) error {
			for i := lo; i < min(lo+1000, n); i++ {
				key = benchKey(key, i)
				if err := tx.Put(bucketA, key, val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
}

// Bench runs the kv benchmarks against stores from open. Each sub-benchmark
// opens its own store with the suite's buckets:
//
//   - PutSingle: one Update with one 100-byte Put per op.
//   - Put1000: one Update with 1,000 Puts per op (also reported as ns/put).
//   - ReadModifyWrite100: one Update with 100 Get+Put pairs over a 100,000-key
//     bucket per op, the shape of the engine's apply path.
//   - Get: one View with one Get per op.
//   - GetMany100: one View with a GetMany of 100 keys (90 present) per op.
//   - Scan10000: one View scanning 10,000 entries per op.
func Bench(b *testing.B, open Opener) {
	s := &suite{open: open}
	val := pattern(benchValueSize, 2)

	b.Run("PutSingle", func(b *testing.B) {
		st := s.store(b)
		var key []byte
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			key = benchKey(key, i)
			i++
			if err := st.Update(func(tx kv.Tx) error { return tx.Put(bucketA, key, val) }); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("Put1000", func(b *testing.B) {
		st := s.store(b)
		var key []byte
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := st.Update(func(tx kv.Tx) error {
				for range 1000 {
					key = benchKey(key, i)
					i++
					if err := tx.Put(bucketA, key, val); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/put")
	})

	b.Run("ReadModifyWrite100", func(b *testing.B) {
		st := s.store(b)
		benchFill(b, st, benchKeys)
		var key []byte
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := st.Update(func(tx kv.Tx) error {
				for range 100 {
					key = benchKey(key, i)
					i += 7
					if _, err := tx.Get(bucketA, key); err != nil {
						return err
					}
					if err := tx.Put(bucketA, key, val); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/rmw")
	})

	b.Run("Get", func(b *testing.B) {
		st := s.store(b)
		benchFill(b, st, 10_000)
		var key []byte
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			key = benchKey(key, i%10_000)
			i++
			if err := st.View(func(tx kv.Tx) error {
				_, err := tx.Get(bucketA, key)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("GetMany100", func(b *testing.B) {
		st := s.store(b)
		benchFill(b, st, 10_000)
		keys := make([][]byte, 100)
		for j := range keys {
			// Every tenth key is absent (beyond the filled range).
			n := j * 97
			if j%10 == 9 {
				n = 20_000 + j
			}
			keys[j] = benchKey(nil, n)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := st.View(func(tx kv.Tx) error {
				vs, err := tx.GetMany(bucketA, keys)
				if err == nil && (len(vs) != 100 || vs[9] != nil || vs[0] == nil) {
					return errors.New("GetMany returned wrong values")
				}
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("Scan10000", func(b *testing.B) {
		st := s.store(b)
		benchFill(b, st, 10_000)
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			if err := st.View(func(tx kv.Tx) error {
				return tx.Scan(bucketA, kv.Range{}, func(_, v []byte) bool {
					n += len(v)
					return true
				})
			}); err != nil {
				b.Fatal(err)
			}
			if n != 10_000*benchValueSize {
				b.Fatalf("Scan read %d value bytes, want %d", n, 10_000*benchValueSize)
			}
		}
	})
}
