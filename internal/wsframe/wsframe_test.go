//go:build !js

package wsframe

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/wire"
)

// TestTypeAndFits: a binary frame travels as a binary message and a JSON
// frame as text; a frame in the other kind of message does not fit.
func TestTypeAndFits(t *testing.T) {
	bin := wire.BinaryFrame([]byte(`{"type":"push_changes","count":0}`), nil)
	text := []byte(`{"type":"ping"}`)
	if Type(bin) != websocket.MessageBinary || Type(text) != websocket.MessageText {
		t.Errorf("Type: binary frame %v, JSON frame %v", Type(bin), Type(text))
	}
	for _, c := range []struct {
		typ   websocket.MessageType
		frame []byte
		want  bool
	}{
		{websocket.MessageBinary, bin, true},
		{websocket.MessageText, text, true},
		{websocket.MessageText, bin, false},
		{websocket.MessageBinary, text, false},
		{websocket.MessageBinary, nil, false},
	} {
		if got := Fits(c.typ, c.frame); got != c.want {
			t.Errorf("Fits(%v, %q) = %v, want %v", c.typ, c.frame, got, c.want)
		}
	}
}
