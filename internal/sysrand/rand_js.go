//go:build js

package sysrand

import "io"

// Reader reads from crypto.getRandomValues, as crypto/rand.Reader does in
// the browser build. Its Read never fails.
var Reader io.Reader = reader{}

type reader struct{}

// maxGetRandomRead is the most crypto.getRandomValues fills at once.
const maxGetRandomRead = 64 << 10

// getRandomValues is wasm_exec.js's runtime.getRandomData, which calls
// crypto.getRandomValues; crypto/internal/sysrand declares it the same way.
//
//go:wasmimport gojs runtime.getRandomData
//go:noescape
func getRandomValues(r []byte)

func (reader) Read(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		size := min(len(b), maxGetRandomRead)
		getRandomValues(b[:size])
		b = b[size:]
	}
	return n, nil
}
