package wire

import (
	"github.com/replica-sync/replica/model"
)

// The tags of wrapped values (model.TagBin, …).
const (
	tagBin    = model.TagBin
	tagBigint = model.TagBigint
	tagJSON   = model.TagJSON
)

// MarshalValue returns the wire form of v (see "Values" in the package
// documentation). A NaN or infinite real, and text that is not valid UTF-8,
// are errors matching ErrInvalidMessage.
func MarshalValue(v model.Value) ([]byte, error) {
	return appendValue(nil, v)
}

// UnmarshalValue decodes the wire form of one value, without a schema: an
// integer literal within ±2^53 is an Integer, any other number a Real,
// a string Text, and so on (see "Values" in the package documentation).
// Errors match ErrMalformed.
func UnmarshalValue(data []byte) (model.Value, error) {
	r := newReader(data)
	if err := checkUTF8(r); err != nil {
		return model.Null, err
	}
	v, err := r.value()
	if err == nil {
		err = r.End()
	}
	return v, err
}

// appendValue appends the wire form of v (model.AppendValueJSON).
func appendValue(b []byte, v model.Value) ([]byte, error) {
	b, err := model.AppendValueJSON(b, v)
	return b, wireErr(err)
}

// appendInt writes an integer as a JSON number when its magnitude is at
// most 2^53, else as {"__bigint":"<decimal>"}.
func appendInt(b []byte, i int64) []byte { return model.AppendIntJSON(b, i) }

// appendString writes s as a JSON string, escaping only '"', '\' and the
// control characters below U+0020; text that is not valid UTF-8 is an
// error: the wire refuses it rather than change it (model.AppendTextJSON).
func appendString(b []byte, s string) ([]byte, error) {
	b, err := model.AppendTextJSON(b, s)
	return b, wireErr(err)
}

// value reads one value without a schema (model.ReadValueJSON); while
// r.arena is set, short texts share its blocks.
func (r *reader) value() (model.Value, error) { return model.ReadValueJSON(&r.Reader, &r.arena) }
