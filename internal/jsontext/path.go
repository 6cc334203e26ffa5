package jsontext

import (
	"strconv"
	"strings"
)

// Paths. A decoder or encoder built on this package names where a value
// went wrong by its JSON path ("changeSets[2].changes[0].pk"). The path is
// built while the error bubbles up, innermost segment first, so building
// it costs nothing on success: each level that knows its field calls At,
// AtIndex or AtKey on the error it got.
//
// Any error type can carry a path by implementing PathPrepender (the
// wire's errors do); PathError is the one this package provides, for
// callers with no error type of their own.

// PathPrepender is an error that records its JSON path. PrependPath adds
// one segment in front of the path: a member name ("pk"), "[3]" for an
// array index or `["k"]` for a key of a map-like object.
type PathPrepender interface {
	error
	PrependPath(segment string)
}

// At prefixes err's path with the member name field; err without a path
// (not a PathPrepender), a nil err and an empty field are left unchanged.
func At(err error, field string) error {
	if err == nil {
		return nil
	}
	return atSegment(err, field)
}

// AtIndex prefixes err's path with an array index: "[i]". (Out of line,
// as are AtKey and the body of At: they run on failures only, and inlined
// each of their hundreds of call sites would carry a copy.)
//
//go:noinline
func AtIndex(err error, i int) error {
	if err == nil {
		return nil
	}
	return atSegment(err, "["+strconv.Itoa(i)+"]")
}

// AtKey prefixes err's path with a key of a map-like object: `["key"]`.
//
//go:noinline
func AtKey(err error, key string) error {
	if err == nil {
		return nil
	}
	return atSegment(err, "["+strconv.Quote(key)+"]")
}

//go:noinline
func atSegment(err error, seg string) error {
	if p, ok := err.(PathPrepender); ok && seg != "" {
		p.PrependPath(seg)
	}
	return err
}

// FormatPath joins path segments given innermost first (as PrependPath
// collects them) into a path: "changes", "[3]", "pk" reversed is
// "pk[3]"… — member names are separated by dots, index and key segments
// follow directly.
func FormatPath(rev []string) string {
	var b strings.Builder
	for i := len(rev) - 1; i >= 0; i-- {
		s := rev[i]
		if b.Len() > 0 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// PathError is a decode or encode failure at a JSON path: Sentinel (which
// errors.Is matches), the path segments innermost first (Rev), a message,
// and the byte offset in the input (-1 when encoding). Its text is
// "<sentinel>: <path>: <msg> (at byte <offset>)", without the parts that
// are empty.
type PathError struct {
	Sentinel error
	Rev      []string
	Msg      string
	Offset   int
}

func (e *PathError) Error() string {
	var b strings.Builder
	if e.Sentinel != nil {
		b.WriteString(e.Sentinel.Error())
		b.WriteString(": ")
	}
	if p := FormatPath(e.Rev); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Offset >= 0 {
		b.WriteString(" (at byte ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteString(")")
	}
	return b.String()
}

// PrependPath implements PathPrepender.
func (e *PathError) PrependPath(segment string) { e.Rev = append(e.Rev, segment) }

// Unwrap returns Sentinel.
func (e *PathError) Unwrap() error { return e.Sentinel }

// PathErrors is an ErrorMaker whose errors are *PathError wrapping
// Sentinel: set as a Reader's Errors, the Reader's errors carry paths.
type PathErrors struct{ Sentinel error }

// NewError implements ErrorMaker.
//
//go:noinline
func (p PathErrors) NewError(msg string, offset int) error {
	return &PathError{Sentinel: p.Sentinel, Msg: msg, Offset: offset}
}

// SafeInt parses a JSON integer literal (as Number returns it with isInt)
// of magnitude at most 2^53, the integers a JavaScript number holds
// exactly. ok is false for a larger magnitude (the literal is then still
// a valid number).
func SafeInt(lit []byte) (v int64, ok bool) {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) > 16 {
		return 0, false
	}
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if v > 1<<53 {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
