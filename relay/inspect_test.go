//go:build !js

package relay

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/replica-sync/replica/wire"
)

// TestInspect: with Config.Inspect, GET /inspect/{database} shows a
// sealed database's newest log entries as stored (the envelope, no
// plaintext), refuses a plain database (403) and one not open (404), and
// does not exist without the option.
func TestInspect(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock, Inspect: true})
	kr := testKeyring(t, 7)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	sets := sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 7)...))
	if res := a.apply("apply-1", sets); res.Applied != len(sets) {
		t.Fatalf("apply_result %+v", res.ApplyResult)
	}
	p := dial(t, r, nil)
	p.handshake("plain", "")

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(r.url(path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/inspect/vault")
	if code != http.StatusOK {
		t.Fatalf("GET /inspect/vault: %d %s", code, body)
	}
	var entries []InspectEntry
	if err := json.Unmarshal([]byte(body), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != inspectEntries || entries[0].Cursor != uint64(len(sets)) || entries[1].Cursor != uint64(len(sets)-1) {
		t.Fatalf("entries %+v, want the newest %d, newest first", entries, inspectEntries)
	}
	last := sets[len(sets)-1]
	if want := base64.StdEncoding.EncodeToString(last.Envelope); !strings.Contains(entries[0].Stored, want[:40]) {
		t.Errorf("the newest entry %s lacks its envelope", entries[0].Stored)
	}
	for _, s := range []string{"stops", "trips", "t1"} {
		if strings.Contains(body, `"`+s+`"`) || strings.Contains(body, `\"`+s+`\"`) {
			t.Errorf("inspect shows plaintext %q: %s", s, body)
		}
	}
	if _, err := wire.UnmarshalChangeSet([]byte(entries[0].Stored)); err != nil && entries[0].Bytes <= inspectMaxJSON {
		t.Errorf("stored entry is not a ChangeSet's wire form: %v", err)
	}
	if code, _ := get("/inspect/plain"); code != http.StatusForbidden {
		t.Errorf("a plain database: %d, want 403", code)
	}
	if code, _ := get("/inspect/nowhere"); code != http.StatusNotFound {
		t.Errorf("a database not open: %d, want 404", code)
	}
	if code, _ := get("/inspect/bad%20id"); code != http.StatusBadRequest {
		t.Errorf("a bad id: %d, want 400", code)
	}
	r2 := startRelay(t, Config{})
	resp, err := http.Get(r2.url("/inspect/vault"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("without Inspect: %d, want 404", resp.StatusCode)
	}
}
