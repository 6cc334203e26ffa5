package model

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestHLCEncodingOrder: the byte order of the 30-byte encoding is the HLC
// order, and encoding round-trips.
func TestHLCEncodingOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	gen := func() HLC {
		var h HLC
		h.Wall = uint64(rng.IntN(4))
		if rng.IntN(4) == 0 {
			h.Wall = rng.Uint64()
		}
		h.Counter = uint16(rng.IntN(3))
		h.Site[rng.IntN(16)] = byte(rng.IntN(3))
		h.OpSeq = uint32(rng.IntN(3))
		if rng.IntN(4) == 0 {
			h.OpSeq = rng.Uint32()
		}
		return h
	}
	for i := 0; i < 20000; i++ {
		a, b := gen(), gen()
		if got, want := bytes.Compare(a.Bytes(), b.Bytes()), a.Compare(b); got != want {
			t.Fatalf("%s vs %s: bytes %d, Compare %d", a, b, got, want)
		}
		d, err := HLCFromBytes(a.Bytes())
		if err != nil || d != a {
			t.Fatalf("round trip %s: %s %v", a, d, err)
		}
	}
	if len((HLC{}).Bytes()) != HLCSize {
		t.Fatal("encoding is not 30 bytes")
	}
}

func TestSiteIDText(t *testing.T) {
	s := SiteID{0xfb, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0xff}
	text := s.String()
	if len(text) != 22 {
		t.Fatalf("%q is not 22 characters", text)
	}
	back, err := ParseSiteID(text)
	if err != nil || back != s {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for _, bad := range []string{"", text + "A", text[:21], "+/" + text[2:], text[:20] + "=="} {
		if _, err := ParseSiteID(bad); err == nil {
			t.Errorf("ParseSiteID(%q) accepted", bad)
		}
	}
}

func TestIDsMarshalAsText(t *testing.T) {
	site := SiteID{155, 58, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 255}
	h := HLC{Wall: 1764547200123, Counter: 7, Site: site, OpSeq: 3}
	b, err := json.Marshal(map[string]any{"site": site, "hlc": h})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hlc":"1764547200123.7@` + site.String() + `/3","site":"` + site.String() + `"}`
	if string(b) != want {
		t.Fatalf("json.Marshal: %s, want %s", b, want)
	}
	var back struct {
		Site SiteID
		HLC  HLC
	}
	if err := json.Unmarshal([]byte(`{"Site":"`+site.String()+`","HLC":"`+h.String()+`"}`), &back); err != nil || back.Site != site || back.HLC != h {
		t.Fatalf("json.Unmarshal: %+v, %v", back, err)
	}
	for _, bad := range []string{"", "1.2", "1.2@x/3", "1.70000@" + site.String() + "/0", "x.1@" + site.String() + "/0"} {
		if err := back.HLC.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("HLC.UnmarshalText(%q) succeeded", bad)
		}
	}
	var js, txt strings.Builder
	slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "site", site, "hlc", h)
	slog.New(slog.NewTextHandler(&txt, nil)).Info("m", "site", site, "hlc", h)
	var rec map[string]any
	if err := json.Unmarshal([]byte(js.String()), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["site"] != site.String() || rec["hlc"] != h.String() {
		t.Fatalf("slog JSON: %s", js.String())
	}
	if !strings.Contains(txt.String(), "site="+site.String()) || !strings.Contains(txt.String(), "hlc="+h.String()) {
		t.Fatalf("slog text: %s", txt.String())
	}
}
