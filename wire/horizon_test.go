package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

// TestHorizonsRoundTrip: changes and push_changes carrying horizon marks,
// and a snapshot header carrying a horizon, decode to what was encoded;
// empty marks and a zero header horizon are omitted.
func TestHorizonsRoundTrip(t *testing.T) {
	c1, c2 := sampleChain(1), sampleChain(2)
	msgs := []Message{
		&Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 0, Wall: 1, Chain: c2}, {Cursor: 0, Wall: 2, Chain: c2}, {Cursor: 5, Wall: MaxCursor, Chain: c1}}},
		&Changes{Cursor: MaxCursor, More: true, Chain: c1, Horizons: []Horizon{{Cursor: MaxCursor, Wall: 7, Chain: c1}}},
		&PushChanges{Cursor: 9, Chain: c1, ChangeSets: sampleChangeSets(t)[:2], Horizons: []Horizon{{Cursor: 7, Wall: 3, Chain: c2}, {Cursor: 9, Wall: 4, Chain: c1}}},
		&PushChanges{Cursor: 3, Chain: c1, Horizons: []Horizon{{Cursor: 3, Wall: 3, Chain: c1}}},
		// siteHlc (version 4): stated, stated as the zero HLC (the log
		// held none of the site's), and absent.
		&Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{
			{Cursor: 1, Wall: 1, Chain: c2, SiteHLC: hlcAt(1764374500000, 3, 0), SiteHLCStated: true},
			{Cursor: 2, Wall: 2, Chain: c2, SiteHLCStated: true},
			{Cursor: 3, Wall: 3, Chain: c1}}},
	}
	for _, m := range msgs {
		roundTrip(t, m)
	}
	b := mustEncode(t, &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
		Format: model.SnapshotFormat, SnapshotID: "s", SiteID: siteB, Cursor: 4, Horizon: 1764374500000}}})
	if m, err := Decode(b); err != nil || m.(*SnapshotChunk).Chunk.Header.Horizon != 1764374500000 {
		t.Errorf("Decode(%s) = %+v, %v; want header horizon 1764374500000", b, m, err)
	}
	for _, m := range []Message{&Changes{Cursor: 1, Chain: c1}, &PushChanges{Cursor: 1, Chain: c1}} {
		if b := mustEncode(t, m); strings.Contains(string(b), "horizons") {
			t.Errorf("%s: empty horizons encoded", b)
		}
	}
	hdr := &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
		Format: model.SnapshotFormat, SnapshotID: "s", SiteID: siteB, Tables: []string{}, Cursor: 4}}}
	if b := mustEncode(t, hdr); strings.Contains(string(b), "horizon") {
		t.Errorf("%s: zero horizon encoded", b)
	}
}

// TestHorizonsHostile: marks out of order, with wall 0, above 2^53,
// outside the message's range, missing or unknown members, or of the
// wrong type are refused by Decode (ErrMalformed, naming horizons) and by
// Encode (ErrInvalidMessage).
func TestHorizonsHostile(t *testing.T) {
	ch := sampleChain(1).String()
	mark := func(c, w string) string { return `{"cursor":` + c + `,"wall":` + w + `,"chain":"` + ch + `"}` }
	changes := func(cursor, marks string) string {
		return `{"type":"changes","cursor":` + cursor + `,"chain":"` + ch + `","more":false,"horizons":[` + marks + `],"changeSets":[]}`
	}
	push := func(cursor, marks string, sets int) string {
		cs := strings.TrimSuffix(strings.Repeat(`{"siteId":"`+siteA.String()+`","transactionId":"t`+`X","hlc":"`+FormatHLC(hlcAt(0, 0, 0))+`","changes":[]},`, sets), ",")
		return `{"type":"push_changes","cursor":` + cursor + `,"horizons":[` + marks + `],"changeSets":[` + cs + `]}`
	}
	cases := []struct{ name, frame, want string }{
		{"wall 0", changes("5", mark("1", "0")), "wall must not be 0"},
		{"wall above 2^53", changes("5", mark("1", "9007199254740993")), "above the limit"},
		{"cursor above 2^53", changes("5", mark("9007199254740993", "1")), "above the limit"},
		{"cursor above the message's", changes("5", mark("6", "1")), "outside the message's range"},
		{"cursors out of order", changes("5", mark("3", "1")+","+mark("2", "2")), "out of order"},
		{"walls out of order", changes("5", mark("2", "2")+","+mark("3", "2")), "out of order"},
		{"missing chain", changes("5", `{"cursor":1,"wall":1}`), `missing required field "chain"`},
		{"missing wall", changes("5", `{"cursor":1,"chain":"`+ch+`"}`), `missing required field "wall"`},
		{"unknown member", changes("5", `{"cursor":1,"wall":1,"chain":"`+ch+`","x":1}`), `unknown field "x"`},
		{"siteHlc not an HLC", changes("5", `{"cursor":1,"wall":1,"chain":"`+ch+`","siteHlc":"x"}`), "siteHlc"},
		{"siteHlc twice", changes("5", `{"cursor":1,"wall":1,"chain":"`+ch+`","siteHlc":"`+FormatHLC(hlcAt(0, 0, 0))+`","siteHlc":"`+FormatHLC(hlcAt(0, 0, 0))+`"}`), "duplicate"},
		{"negative wall", changes("5", mark("1", "-1")), "non-negative"},
		{"wall a string", changes("5", mark("1", `"1"`)), ""},
		{"horizons not an array", `{"type":"changes","cursor":5,"chain":"` + ch + `","more":false,"horizons":{},"changeSets":[]}`, ""},
		{"horizons null", `{"type":"changes","cursor":5,"chain":"` + ch + `","more":false,"horizons":null,"changeSets":[]}`, ""},
		{"duplicate horizons", `{"type":"changes","cursor":5,"chain":"` + ch + `","more":false,"horizons":[],"horizons":[],"changeSets":[]}`, "duplicate"},
		{"push mark before its first ChangeSet's predecessor", push("9", mark("6", "1"), 2), "outside the message's range"},
		{"push mark above its cursor", push("9", mark("10", "1"), 2), "outside the message's range"},
		{"push mark below an empty push's cursor", push("9", mark("8", "1"), 0), "outside the message's range"},
		{"header horizon negative", `{"type":"snapshot_chunk","chunk":{"type":"header","format":1,"snapshotId":"s","siteId":"` + siteB.String() + `","hlc":"` + FormatHLC(hlcAt(0, 0, 0)) + `","tables":[],"rowCount":0,"cursor":1,"horizon":-5}}`, "horizon"},
		{"header horizon above 2^53", `{"type":"snapshot_chunk","chunk":{"type":"header","format":1,"snapshotId":"s","siteId":"` + siteB.String() + `","hlc":"` + FormatHLC(hlcAt(0, 0, 0)) + `","tables":[],"rowCount":0,"cursor":1,"horizon":9007199254740993}}`, "horizon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.frame))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode(%s) = %+v, %v; want ErrMalformed", tc.frame, m, err)
			}
			if !strings.Contains(err.Error(), "horizon") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want it to name horizon and say %q", err, tc.want)
			}
		})
	}

	c1 := sampleChain(1)
	bad := []struct {
		name string
		m    Message
	}{
		{"wall 0", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 1, Chain: c1}}}},
		{"no chain", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 1, Wall: 1}}}},
		{"above cursor", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 6, Wall: 1, Chain: c1}}}},
		{"wall above 2^53", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 1, Wall: MaxCursor + 1, Chain: c1}}}},
		{"out of order", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 2, Wall: 2, Chain: c1}, {Cursor: 1, Wall: 3, Chain: c1}}}},
		{"same wall twice", &Changes{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 1, Wall: 2, Chain: c1}, {Cursor: 2, Wall: 2, Chain: c1}}}},
		{"push below range", &PushChanges{Cursor: 5, Chain: c1, Horizons: []Horizon{{Cursor: 4, Wall: 2, Chain: c1}}}},
		{"header horizon above 2^53", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
			Format: model.SnapshotFormat, SnapshotID: "s", SiteID: siteB, Cursor: 4, Horizon: MaxCursor + 1}}}},
	}
	for _, tc := range bad {
		if b, err := Encode(tc.m); !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), "horizon") {
			t.Errorf("%s: Encode = %s, %v; want ErrInvalidMessage naming horizon", tc.name, b, err)
		}
	}
}

// TestAppendHorizons: the relay's frame assembly writes marks as Encode
// does.
func TestAppendHorizons(t *testing.T) {
	hs := []Horizon{{Cursor: 3, Wall: 10, Chain: sampleChain(3)}, {Cursor: 4, Wall: 11, Chain: sampleChain(4), SiteHLC: hlcAt(9, 1, 0), SiteHLCStated: true}}
	b := mustEncode(t, &Changes{Cursor: 4, Chain: sampleChain(4), Horizons: hs})
	if want := `"horizons":` + string(AppendHorizons(nil, hs)) + `,`; !strings.Contains(string(b), want) {
		t.Errorf("Encode: %s\nwant it to contain %s", b, want)
	}
}
