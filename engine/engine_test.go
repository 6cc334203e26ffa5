//go:build !js

package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/kv/memkv"
)

func TestEngineMemkv(t *testing.T) {
	enginetest.Run(t, func(t testing.TB) kv.Store { return memkv.New(engine.Buckets...) }, enginetest.Options{})
}

func TestEngineBoltkv(t *testing.T) {
	n := 0
	enginetest.Run(t, func(t testing.TB) kv.Store {
		n++
		st, err := boltkv.Open(filepath.Join(t.TempDir(), "replica.db"), engine.Buckets, &boltkv.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}, enginetest.Options{Short: true})
}
