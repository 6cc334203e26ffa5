// Package sysrand is the module's source of random bytes: crypto/rand's
// Reader in a native build, and in the browser build the same
// crypto.getRandomValues that crypto/rand calls there, without crypto/rand.
//
// In a js/wasm build crypto/rand.Reader reads through the FIPS 140-3 DRBG
// package, which (FIPS mode being unsupported on Wasm) always passes the
// read to crypto/internal/sysrand; but its code for FIPS mode (AES-CTR,
// HMAC, SHA-2, SHA-3 and their self-tests) stays linked, about 100 KB of
// code. This package makes the call crypto/internal/sysrand makes: the
// runtime.getRandomData import of wasm_exec.js, in chunks of at most
// 65536 bytes, the limit of crypto.getRandomValues.
package sysrand
