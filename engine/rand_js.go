//go:build js

package engine

import (
	"io"
	"math/rand/v2"
)

// defaultRand is the source of site ids, snapshot ids and generated keys
// when Options.Rand is nil. In the browser build it is the Go runtime's
// random generator (through math/rand/v2's top-level functions): ChaCha8,
// a cryptographically strong generator, which the runtime seeds at startup
// from crypto.getRandomValues, the same entropy crypto/rand reads there.
// crypto/rand itself would link its FIPS 140 machinery (a DRBG, AES,
// SHA-2, SHA-3, HMAC and their self-tests): about 160 KB of replica.wasm
// (50 KB gzipped) for ids that are unique, not secret.
var defaultRand io.Reader = runtimeRand{}

type runtimeRand struct{}

func (runtimeRand) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := rand.Uint64()
		for j := i; j < len(p) && j < i+8; j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return len(p), nil
}
