//go:build !js

package wire

import "crypto/sha256"

// sha256Sum returns the SHA-256 digest of the concatenated parts.
func sha256Sum(parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
