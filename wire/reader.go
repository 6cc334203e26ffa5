package wire

import (
	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// reader is the wire's strict pull parser over one JSON text: a
// jsontext.Reader (RFC 8259 exactly, unpaired surrogate escapes refused,
// nesting at most MaxDepth) whose errors are *pathError. Callers reject
// unknown and duplicate keys. The input must already be valid UTF-8
// (checkUTF8).
type reader struct {
	jsontext.Reader
	// errSentinel is the sentinel the reader's errors wrap: ErrMalformed for
	// frames, model.ErrSchema for ParseSchema.
	errSentinel error
	// arena, when not nil, holds the bytes of the text values read
	// (model.ArenaText): set while reading the rows of a snapshot chunk.
	arena []byte
	// bin, when not nil, is the binary tail of a binary frame (version
	// 14), from which the frame's ChangeSets are read; binUsed records
	// that they were.
	bin     *binDecoder
	binUsed bool
}

// arenaBlock is the size of a text arena block (model.ArenaText).
const arenaBlock = model.ArenaBlock

func newReader(data []byte) *reader {
	r := &reader{errSentinel: ErrMalformed}
	r.Data, r.MaxDepth, r.Errors = data, MaxDepth, r
	return r
}

// NewError makes the jsontext.Reader's errors: a malformed-input error at
// byte offset off.
//
//go:noinline
func (r *reader) NewError(msg string, off int) error {
	return &pathError{sentinel: r.errSentinel, msg: msg, offset: off}
}

func checkUTF8(r *reader) error { return r.CheckUTF8() }

// elements iterates over an array, calling fn at each element with its
// index; fn must consume the element. An error's path gets the index.
//
//go:noinline
func (r *reader) elements(fn func(i int) error) error {
	return r.Elements(func(i int) error {
		if err := fn(i); err != nil {
			return atIndex(err, i)
		}
		return nil
	})
}

// smallInt parses an integer literal of magnitude at most 2^53
// (jsontext.SafeInt).
func smallInt(lit []byte) (int64, bool) { return jsontext.SafeInt(lit) }

// uint reads a non-negative integer literal no larger than max (at most
// MaxCursor). Fractions, exponents and "-0" are rejected.
func (r *reader) uint(max uint64) (uint64, error) {
	start := r.Pos
	lit, isInt, err := r.Number()
	if err != nil {
		return 0, err
	}
	if !isInt || lit[0] == '-' {
		return 0, r.FailAt(start, "want a non-negative integer, got %s", lit)
	}
	v, ok := smallInt(lit)
	if !ok || uint64(v) > max {
		return 0, r.FailAt(start, "%s is above the limit %d", lit, max)
	}
	return uint64(v), nil
}

// integer reads an integer literal in [-MaxCursor, MaxCursor].
func (r *reader) integer() (int64, error) {
	start := r.Pos
	lit, isInt, err := r.Number()
	if err != nil {
		return 0, err
	}
	v, ok := smallInt(lit)
	if !isInt || !ok {
		return 0, r.FailAt(start, "want an integer within ±2^53, got %s", lit)
	}
	return v, nil
}

// fields tracks which members of a struct-like object were seen
// (jsontext.Fields).
type fields = jsontext.Fields
