package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/replica-sync/replica/engine"
)

// Sentinel errors. Every error Decode, ParseSchema and the Unmarshal
// functions return matches one of them with errors.Is, and its message names
// the offending field by its JSON path ("changeSets[2].changes[0].pk: …").
var (
	// ErrMalformed is returned when input is not a valid frame of this
	// protocol: bad JSON, invalid UTF-8, a missing required field, an
	// unknown field, a duplicate key, a wrong type, null where a value is
	// required, or an encoding that does not parse (an HLC of the wrong
	// length, a site id in the wrong alphabet). It is engine.ErrMalformed,
	// so errors.Is(err, engine.ErrMalformed) holds as well. The relay
	// answers MESSAGE_ERROR.
	ErrMalformed = engine.ErrMalformed

	// ErrUnknownType is returned by Decode for a well-formed frame whose
	// "type" this version of the protocol does not know. Such errors also
	// match ErrMalformed. The relay answers UNKNOWN_MESSAGE.
	ErrUnknownType = errors.New("unknown message type")

	// ErrInvalidMessage is returned by Encode and the Marshal functions for
	// a message that cannot be represented on the wire: a NaN or infinite
	// real, text that is not valid UTF-8, an empty primary key, a cursor
	// above MaxCursor, an unknown change type, a required field left
	// empty. Nothing is written.
	ErrInvalidMessage = errors.New("message cannot be encoded")
)

// DecodeErrorCode returns the error code a receiver answers a frame with when
// Decode failed with err: UNKNOWN_MESSAGE for ErrUnknownType, MESSAGE_ERROR
// for everything else.
func DecodeErrorCode(err error) ErrorCode {
	if errors.Is(err, ErrUnknownType) {
		return CodeUnknownMessage
	}
	return CodeMessageError
}

// pathError is a decode or encode failure at a JSON path. The path is built
// while the error bubbles up, so building it costs nothing on success.
type pathError struct {
	sentinel error    // ErrMalformed, ErrInvalidMessage, engine.ErrSchema
	unknown  bool     // also ErrUnknownType
	rev      []string // path segments, innermost first: "pk", "[3]", "changes"
	msg      string
	offset   int // byte offset in the input, -1 when not decoding
}

func (e *pathError) Error() string {
	var b strings.Builder
	b.WriteString("wire: ")
	b.WriteString(e.sentinel.Error())
	b.WriteString(": ")
	if p := e.path(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	if e.offset >= 0 {
		b.WriteString(" (at byte ")
		b.WriteString(strconv.Itoa(e.offset))
		b.WriteString(")")
	}
	return b.String()
}

func (e *pathError) path() string {
	var b strings.Builder
	for i := len(e.rev) - 1; i >= 0; i-- {
		s := e.rev[i]
		if b.Len() > 0 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (e *pathError) Unwrap() []error {
	if e.unknown {
		return []error{e.sentinel, ErrUnknownType}
	}
	return []error{e.sentinel}
}

// The error helpers below run only on failures, so their bodies are kept
// out of line (//go:noinline): inlined, each of their hundreds of call
// sites carried a copy, about 85 KB of the browser build.

// at prefixes err's path with the field name; err must come from this
// package (anything else is returned unchanged). A nil err stays nil.
func at(err error, field string) error {
	if err == nil {
		return nil
	}
	return atPath(err, field)
}

//go:noinline
func atPath(err error, field string) error {
	if pe, ok := err.(*pathError); ok && field != "" {
		pe.rev = append(pe.rev, field)
	}
	return err
}

// atIndex prefixes err's path with an array index.
//
//go:noinline
func atIndex(err error, i int) error {
	if pe, ok := err.(*pathError); ok {
		pe.rev = append(pe.rev, "["+strconv.Itoa(i)+"]")
	}
	return err
}

// atKey prefixes err's path with an object key of a map-like object.
//
//go:noinline
func atKey(err error, key string) error {
	if pe, ok := err.(*pathError); ok {
		pe.rev = append(pe.rev, "["+strconv.Quote(key)+"]")
	}
	return err
}

// invalid returns an ErrInvalidMessage for Encode.
//
//go:noinline
func invalid(format string, args ...any) error {
	return &pathError{sentinel: ErrInvalidMessage, msg: fmt.Sprintf(format, args...), offset: -1}
}
