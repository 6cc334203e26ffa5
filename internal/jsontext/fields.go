package jsontext

// Fields tracks which members of a struct-like object were seen (bit i for
// the i-th member the caller defines), to refuse a repeated key and name a
// missing required member.
type Fields uint32

// See marks bit as seen; a second sighting is an error ("duplicate key").
func (f *Fields) See(r *Reader, bit Fields, key []byte) error {
	if *f&bit != 0 {
		return r.duplicateKey(key)
	}
	*f |= bit
	return nil
}

// duplicateKey is See's error, out of line so that See's hundreds of
// inlined call sites carry a call rather than the formatting.
//
//go:noinline
func (r *Reader) duplicateKey(key []byte) error {
	return r.Fail("duplicate key %q", key)
}

// Require returns an error naming the first member of need not seen
// ("missing required field"); names[i] is the JSON name of bit 1<<i.
func (f Fields) Require(r *Reader, need Fields, names ...string) error {
	for i, n := range names {
		if need&(1<<i) != 0 && f&(1<<i) == 0 {
			return r.Fail("missing required field %q", n)
		}
	}
	return nil
}

// UnknownKey returns the error for a member an object does not have.
//
//go:noinline
func (r *Reader) UnknownKey(key []byte) error {
	return r.Fail("unknown field %q", key)
}
