package wire

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// TestChainMembersStrict: the version 2 members of handshake,
// handshake_ack, changes and push_changes decode strictly.
func TestChainMembersStrict(t *testing.T) {
	site := siteA.String()
	ch := sampleChain(1).String()
	zero := Chain{}.String()
	hs := `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"d","siteId":"` + site + `"`
	ack := `{"type":"handshake_ack","protocolVersion":` + curVersion + `,"databaseId":"d","serverSiteId":"` + site + `","connectionId":"c"`
	for _, tt := range []struct{ name, frame, want string }{
		{"cursor without serverSiteId", hs + `,"cursor":4}`, `missing required field "serverSiteId"`},
		{"serverSiteId without cursor", hs + `,"serverSiteId":"` + site + `"}`, `missing required field "cursor"`},
		{"chain without cursor", hs + `,"chain":"` + ch + `"}`, `missing required field "serverSiteId"`},
		{"zero chain", hs + `,"serverSiteId":"` + site + `","cursor":4,"chain":"` + zero + `"}`, "all zeros"},
		{"short chain", hs + `,"serverSiteId":"` + site + `","cursor":4,"chain":"AAAA"}`, "chain value"},
		{"unknown history", ack + `,"history":"maybe"}`, `history "maybe"`},
		{"siteHlc not an HLC", ack + `,"siteHlc":"x"}`, "HLC"},
		{"changes chain null", `{"type":"changes","cursor":1,"more":false,"changeSets":[],"chain":null}`, "chain"},
		{"push_changes chain twice", `{"type":"push_changes","cursor":1,"changeSets":[],"chain":"` + ch + `","chain":"` + ch + `"}`, "duplicate"},
	} {
		_, err := Decode([]byte(tt.frame))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Decode(%s) = %v, want ErrMalformed containing %q", tt.name, tt.frame, err, tt.want)
		}
	}
	if _, err := Encode(&Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "d", SiteID: siteA, Cursor: 3}); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("Encode(handshake with a cursor and no serverSiteId) = %v, want ErrInvalidMessage", err)
	}
	if _, err := Encode(&HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "d", ConnectionID: "c", History: "maybe"}); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("Encode(ack with history maybe) = %v, want ErrInvalidMessage", err)
	}
	if got, err := ParseChain(ch); err != nil || got != sampleChain(1) {
		t.Errorf("ParseChain(%s) = %v, %v", ch, got, err)
	}
}

// TestChainNext pins the chain function: a change to it would make every
// stored chain value disagree with relays of another build.
func TestChainNext(t *testing.T) {
	if got, want := GenesisChain.String(), "dcG3DbjpxGn45FWgMjjZ_A"; got != want {
		t.Errorf("GenesisChain = %s, want %s", got, want)
	}
	a := GenesisChain.Next(siteA, "1764374400000:0:"+siteA.String())
	b := GenesisChain.Next(siteA, "1764374400000:1:"+siteA.String())
	if got, want := a.String(), "y-eOOx6OF2CNajR2OSdtlQ"; got != want {
		t.Errorf("GenesisChain.Next(siteA, …:0:…) = %s, want %s", got, want)
	}
	if got, want := a.Next(siteA, "x").String(), "pnjP0vZKYT3hX4QBK5In5A"; got != want {
		t.Errorf("….Next(siteA, x) = %s, want %s", got, want)
	}
	if a == b || a == GenesisChain || a.Next(siteA, "x") == b.Next(siteA, "x") {
		t.Errorf("chain values collide: %s %s", a, b)
	}
}

// TestGenesisChain: GenesisChain, written out in chain.go, is the first 16
// bytes of SHA-256("replica arrival log").
func TestGenesisChain(t *testing.T) {
	sum := sha256.Sum256([]byte("replica arrival log"))
	if want := Chain(sum[:ChainSize]); GenesisChain != want {
		t.Fatalf("GenesisChain = %x, want %x", GenesisChain, want)
	}
}
