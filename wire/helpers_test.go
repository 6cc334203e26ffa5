package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

var (
	siteA = model.SiteID{0x01, 0x8f, 0x3a, 0x5c, 0x7e, 0x11, 0x42, 0x9b, 0xa0, 0x0d, 0xc4, 0x55, 0x6e, 0x21, 0x90, 0xfe}
	siteB = model.SiteID{0xfb, 0xff, 0xbf, 0x00, 0x10, 0x83, 0x10, 0x51, 0x87, 0x20, 0x92, 0x8b, 0x30, 0xd3, 0x8f, 0x41}
)

// hlcAt returns an HLC of siteA at a fixed day plus ms.
func hlcAt(ms uint64, counter uint16, op uint32) model.HLC {
	return model.HLC{Wall: 1764374400000 + ms, Counter: counter, Site: siteA, OpSeq: op}
}

func mustJSON(t testing.TB, s string) model.Value {
	t.Helper()
	v, err := model.JSONValue([]byte(s))
	if err != nil {
		t.Fatalf("JSONValue(%s): %v", s, err)
	}
	return v
}

func mustEncode(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode(%T): %v", m, err)
	}
	return b
}

// roundTrip encodes m, decodes the frame, checks the result equals m, and
// checks re-encoding gives the same bytes. It returns the frame.
func roundTrip(t testing.TB, m Message) []byte {
	t.Helper()
	b := mustEncode(t, m)
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip of %T changed it:\nframe %s\ngot  %+v\nwant %+v", m, b, got, m)
	}
	b2 := mustEncode(t, got)
	if string(b2) != string(b) {
		t.Fatalf("re-encoding differs:\n%s\n%s", b, b2)
	}
	return b
}

// wantDecodeError checks that frame fails to decode with an error matching
// sentinel whose message contains every fragment.
func wantDecodeError(t testing.TB, frame string, sentinel error, fragments ...string) {
	t.Helper()
	m, err := Decode([]byte(frame))
	if err == nil {
		t.Fatalf("Decode(%s) = %+v, want an error", frame, m)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("Decode(%s): error %q does not match %v", frame, err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("Decode(%s): error %q does not mention %q", frame, err, f)
		}
	}
}
