package wire

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/model"
)

// TestErrorAt: a schema that does not decode names its path and what is
// wrong apart from the prefix and byte offset of its text.
func TestErrorAt(t *testing.T) {
	_, err := ParseSchema([]byte(`{"tables":{"t":{"columns":{"a":5}}}}`))
	if !errors.Is(err, model.ErrSchema) {
		t.Fatalf("ParseSchema: %v, want ErrSchema", err)
	}
	path, msg, ok := ErrorAt(err)
	if !ok || path != `tables["t"].columns["a"]` || msg != "want an object, got a number" {
		t.Errorf("ErrorAt(%q) = %q, %q, %v", err, path, msg, ok)
	}
	if _, _, ok := ErrorAt(errors.New("other")); ok {
		t.Errorf("ErrorAt of another error: ok")
	}
}
