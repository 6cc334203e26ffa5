package engine

import (
	"io"
	"sync"
	"time"

	"github.com/replica-sync/replica/internal/sysrand"
)

// uuidV7 returns a UUIDv7 in its canonical text form, made as
// github.com/google/uuid's NewV7 makes it, for the browser build's
// generated keys (newKey in uuid_js.go): google/uuid imports crypto/rand,
// which links the FIPS 140 module there (AES, HMAC, SHA-2/3, the DRBG and
// their self-tests, about 70 KB of the gzipped download), besides
// crypto/md5, crypto/sha1 and encoding/json. Native builds use google/uuid
// (uuid_notjs.go); TestNewUUIDv7 checks this one against its parser: 16 bytes from the system's random
// source with the version 4 and RFC 4122 variant bits set, then the first
// 8 bytes replaced by the Unix time in milliseconds, the version 7 and 12
// bits of sub-millisecond time, kept strictly increasing within the
// process.
func uuidV7() (string, error) {
	var u [16]byte
	if _, err := io.ReadFull(sysrand.Reader, u[:]); err != nil {
		return "", err
	}
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // variant 10
	t, s := v7Time()
	u[0] = byte(t >> 40)
	u[1] = byte(t >> 32)
	u[2] = byte(t >> 24)
	u[3] = byte(t >> 16)
	u[4] = byte(t >> 8)
	u[5] = byte(t)
	u[6] = 0x70 | (0x0F & byte(s>>8))
	u[7] = byte(s)

	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
	return string(b[:]), nil
}

var (
	v7Mu   sync.Mutex
	lastV7 int64 // milliseconds<<12 | sequence of the last UUIDv7
)

// v7Time returns the Unix time in milliseconds and a 12-bit sequence (the
// sub-millisecond nanoseconds >> 8), advanced past the last one returned.
func v7Time() (milli, seq int64) {
	v7Mu.Lock()
	defer v7Mu.Unlock()
	nano := time.Now().UnixNano()
	milli = nano / 1e6
	seq = (nano - milli*1e6) >> 8
	now := milli<<12 + seq
	if now <= lastV7 {
		now = lastV7 + 1
		milli = now >> 12
		seq = now & 0xfff
	}
	lastV7 = now
	return milli, seq
}
