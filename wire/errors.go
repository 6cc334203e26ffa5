package wire

import (
	"errors"
	"fmt"

	"github.com/replica-sync/replica/internal/jsontext"
	"github.com/replica-sync/replica/model"
)

// Sentinel errors. Every error Decode, ParseSchema and the Unmarshal
// functions return matches one of them with errors.Is, and its message names
// the offending field by its JSON path ("changeSets[2].changes[0].pk: …").
var (
	// ErrMalformed is returned when input is not a valid frame of this
	// protocol: bad JSON, invalid UTF-8, a missing required field, an
	// unknown field, a duplicate key, a wrong type, null where a value is
	// required, or an encoding that does not parse (an HLC of the wrong
	// length, a site id in the wrong alphabet). It is model.ErrMalformed,
	// so errors.Is(err, model.ErrMalformed) holds as well. The relay
	// answers MESSAGE_ERROR.
	ErrMalformed = model.ErrMalformed

	// ErrUnknownType is returned by Decode for a well-formed frame whose
	// "type" this version of the protocol does not know. Such errors also
	// match ErrMalformed. The relay answers UNKNOWN_MESSAGE.
	ErrUnknownType = errors.New("unknown message type")

	// ErrInvalidMessage is returned by Encode and the Marshal functions for
	// a message that cannot be represented on the wire: a NaN or infinite
	// real, text that is not valid UTF-8, an empty primary key, a cursor
	// above MaxCursor, an unknown change type, a required field left
	// empty. Nothing is written.
	// It is model.ErrUnencodable, the error of model's JSON codec, which
	// writes the values and migrations of frames.
	ErrInvalidMessage = model.ErrUnencodable
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
	sentinel error    // ErrMalformed, ErrInvalidMessage, model.ErrSchema
	unknown  bool     // also ErrUnknownType
	rev      []string // path segments, innermost first: "pk", "[3]", "changes"
	msg      string
	offset   int // byte offset in the input, -1 when not decoding
}

func (e *pathError) Error() string {
	// jsontext.PathError's text: "<sentinel>: <path>: <msg> (at byte N)".
	return "wire: " + (&jsontext.PathError{Sentinel: e.sentinel, Rev: e.rev, Msg: e.msg, Offset: e.offset}).Error()
}

// PrependPath implements jsontext.PathPrepender: model's JSON codec, which
// reads the values and migrations of frames, names the path below them.
func (e *pathError) PrependPath(segment string) { e.rev = append(e.rev, segment) }

// wireErr makes an encode error of model's JSON codec (a
// *jsontext.PathError matching ErrInvalidMessage) a *pathError; other
// errors (and nil) are returned unchanged.
//
//go:noinline
func wireErr(err error) error {
	if pe, ok := err.(*jsontext.PathError); ok {
		return &pathError{sentinel: pe.Sentinel, rev: pe.Rev, msg: pe.Msg, offset: pe.Offset}
	}
	return err
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

// at prefixes err's path with the field name (jsontext.At); err must carry
// a path (this package's errors, and those model's JSON codec makes with
// them; anything else is returned unchanged). A nil err stays nil.
//
//go:noinline
func at(err error, field string) error { return jsontext.At(err, field) }

// atIndex prefixes err's path with an array index.
func atIndex(err error, i int) error { return jsontext.AtIndex(err, i) }

// atKey prefixes err's path with an object key of a map-like object.
//
//go:noinline
func atKey(err error, key string) error { return jsontext.AtKey(err, key) }

// invalid returns an ErrInvalidMessage for Encode.
//
//go:noinline
func invalid(format string, args ...any) error {
	return &pathError{sentinel: ErrInvalidMessage, msg: fmt.Sprintf(format, args...), offset: -1}
}

// ErrorAt returns the JSON path and the message of a decode error of this
// package (a schema or frame that does not decode), without the package's
// prefix, the sentinel's text and the byte offset: what a caller that did
// not write the JSON itself (the JavaScript API, whose objects it
// serialized) can show in its own terms. ok is false for other errors.
func ErrorAt(err error) (path, msg string, ok bool) {
	var pe *pathError
	if !errors.As(err, &pe) {
		return "", "", false
	}
	return jsontext.FormatPath(pe.rev), pe.msg, true
}
