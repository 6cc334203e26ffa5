package engine

import (
	"io"
	"sync"
	"time"
)

// newUUIDv7 returns a new UUIDv7 (RFC 9562 § 5.7) in its text form,
// lowercase, as github.com/google/uuid's NewV7 makes it (the engine used it
// before; its MD5 and SHA-1 name-based UUIDs cost the browser build ~40 KB):
// 48 bits of Unix milliseconds, 12 bits of sub-millisecond time that count
// up when the clock does not advance (so the ids of one process sort in
// generation order), the version and variant, and 62 random bits from
// defaultRand (crypto/rand natively).
func newUUIDv7() (string, error) {
	var u [16]byte
	if _, err := io.ReadFull(defaultRand, u[:]); err != nil {
		return "", err
	}
	ms, seq := uuidV7Time()
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = 0x70 | byte(seq>>8)&0x0F // version 7
	u[7] = byte(seq)
	u[8] = 0x80 | u[8]&0x3F // variant 10
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0xF])
	}
	return string(b), nil
}

var uuidV7 struct {
	sync.Mutex
	last int64 // ms<<12 | seq of the last id
}

// uuidV7Time returns the milliseconds and the 12-bit sequence of the next
// id: the sub-millisecond time in units of 256 ns (0 to 3906), or one past
// the last id's when time has not moved past it.
func uuidV7Time() (ms, seq int64) {
	uuidV7.Lock()
	defer uuidV7.Unlock()
	nano := time.Now().UnixNano()
	ms = nano / 1e6
	now := ms<<12 + (nano-ms*1e6)>>8
	if now <= uuidV7.last {
		now = uuidV7.last + 1
	}
	uuidV7.last = now
	return now >> 12, now & 0xFFF
}
