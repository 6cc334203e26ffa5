//go:build js

package wire

// sha256Sum returns the SHA-256 digest of the concatenated parts
// (sha256Small: importing crypto/sha256 would link the FIPS 140 module,
// about 100 KB of code, into the browser build, which computes chain
// values only in tests).
func sha256Sum(parts ...[]byte) [32]byte { return sha256Small(parts...) }
