//go:build !js

package relay

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/wire"
)

func TestHandshake(t *testing.T) {
	r := startRelay(t, Config{})
	a := dial(t, r, nil)
	ack := a.handshake("acme:trips", "")
	b := dial(t, r, nil)
	ack2 := b.handshake("acme:trips", "")
	if ack.ServerSiteID != ack2.ServerSiteID {
		t.Fatalf("two connections to one database got serverSiteIds %s and %s", ack.ServerSiteID, ack2.ServerSiteID)
	}
	if ack.ConnectionID == ack2.ConnectionID {
		t.Fatalf("two connections share connectionId %q", ack.ConnectionID)
	}
	other := dial(t, r, nil).handshake("acme:other", "")
	if other.ServerSiteID == ack.ServerSiteID {
		t.Fatalf("two databases share serverSiteId %s: their cursors would be confused", ack.ServerSiteID)
	}
	a.ping()
	if got := r.dbFiles(); len(got) != 2 && TestStorage == nil {
		t.Fatalf("database files %v, want one per database", got)
	}
}

func TestProtocolVersionMismatch(t *testing.T) {
	r := startRelay(t, Config{})
	for name, frame := range map[string]string{
		"older": `{"type":"handshake","protocolVersion":1,"databaseId":"acme","siteId":"AY86XH4RQpugDcRVbiGQ_g"}`,
		// Version 13, the last with JSON ChangeSets only (version 14 sends
		// them in binary frames, which a version 13 peer refuses).
		"v13":     `{"type":"handshake","protocolVersion":13,"databaseId":"acme","siteId":"AY86XH4RQpugDcRVbiGQ_g","token":"tok","serverSiteId":"-_-_ABCDEFGHIJKLMNOPQQ","cursor":41,"chain":"I-zgrM9zk1Rcq6zDbIfU6Q"}`,
		"newer":   `{"type":"handshake","protocolVersion":1000,"databaseId":"acme","siteId":"AAAAAAAAAAAAAAAAAAAAAA","future":{"x":1}}`,
		"missing": `{"type":"handshake","databaseId":"acme","siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		"zero":    `{"type":"handshake","protocolVersion":0,"databaseId":"acme","siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, r, nil)
			c.sendRaw([]byte(frame))
			e := c.expectError(wire.CodeProtocolVersionMismatch)
			if !strings.Contains(e.Message, strconv.Itoa(wire.ProtocolVersion)) {
				t.Errorf("message %q does not name the relay's version", e.Message)
			}
			c.expectClose(wire.CloseProtocolVersionMismatch)
		})
	}
	if f := r.dbFiles(); len(f) != 0 {
		t.Fatalf("a refused handshake created database files %v", f)
	}
}

func TestMissingDatabaseID(t *testing.T) {
	r := startRelay(t, Config{})
	for name, frame := range map[string]string{
		"absent":  `{"type":"handshake","protocolVersion":` + curVersion + `,"siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		"empty":   `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"","siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		"slash":   `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"../etc","siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		"toolong": `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"` + strings.Repeat("a", 129) + `","siteId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, r, nil)
			c.sendRaw([]byte(frame))
			c.expectError(wire.CodeMissingDatabaseID)
			c.expectClose(wire.CloseMissingDatabaseID)
		})
	}
	if f := r.dbFiles(); len(f) != 0 {
		t.Fatalf("a refused handshake created database files %v", f)
	}
}

func TestTokenAuth(t *testing.T) {
	tokens, err := NewTokens(map[string]string{"alpha": "tok-a", "beta": "tok-b"})
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, Config{Auth: tokens})
	for name, tc := range map[string]struct{ db, token string }{
		"wrong token":        {"alpha", "tok-b"},
		"no token":           {"alpha", ""},
		"prefix of token":    {"alpha", "tok-"},
		"database w/o token": {"gamma", "tok-a"},
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, r, nil)
			c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: tc.db, SiteID: c.site, Token: tc.token})
			c.expectError(wire.CodeAuthFailed)
			c.expectClose(wire.CloseAuthFailed)
		})
	}
	if f := r.dbFiles(); len(f) != 0 {
		t.Fatalf("refused handshakes created database files %v", f)
	}
	c := dial(t, r, nil)
	c.handshake("alpha", "tok-a")
	c.ping()
}

func TestCustomAuthenticator(t *testing.T) {
	auth := AuthFunc(func(ctx context.Context, req AuthRequest) error {
		if req.Header.Get("X-User") == "ana" && strings.HasPrefix(req.DatabaseID, "ana:") && req.RemoteAddr != "" {
			return nil
		}
		return errors.New("not ana's")
	})
	r := startRelay(t, Config{Auth: auth})
	ok := dial(t, r, http.Header{"X-User": {"ana"}})
	ok.handshake("ana:notes", "")
	bad := dial(t, r, http.Header{"X-User": {"ana"}})
	bad.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "bob:notes", SiteID: bad.site})
	bad.expectError(wire.CodeAuthFailed)
	bad.expectClose(wire.CloseAuthFailed)
}

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := dir + "/tokens.json"
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok, err := LoadTokenFile(write(`{"acme:trips":"s3cret"}`))
	if err != nil || tok.Len() != 1 {
		t.Fatalf("LoadTokenFile: %v, %v", tok, err)
	}
	if err := tok.Authenticate(context.Background(), AuthRequest{DatabaseID: "acme:trips", Token: "s3cret"}); err != nil {
		t.Fatalf("the configured token was refused: %v", err)
	}
	if err := tok.Authenticate(context.Background(), AuthRequest{DatabaseID: "acme:trips", Token: "s3cret "}); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("a different token: %v, want ErrAuthFailed", err)
	}
	for _, bad := range []string{`[]`, `{"a/b":"x"}`, `{"a":""}`, `{"a":1}`} {
		if _, err := LoadTokenFile(write(bad)); err == nil {
			t.Errorf("token file %s accepted", bad)
		}
	}
}

func TestAlreadyAuthenticated(t *testing.T) {
	r := startRelay(t, Config{})
	c := connect(t, r, "acme")
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "acme", SiteID: c.site})
	c.expectError(wire.CodeAlreadyAuthenticated)
	c.expectClose(wire.CloseAlreadyAuthenticated)
}

func TestNotAuthenticated(t *testing.T) {
	r := startRelay(t, Config{})
	c := dial(t, r, nil)
	for _, m := range []wire.Message{&wire.GetChanges{Since: 3}, &wire.Ping{}, &wire.GetSnapshot{}, &wire.ApplyChanges{RequestID: "apply-1"}} {
		c.send(m)
		c.expectError(wire.CodeNotAuthenticated)
	}
	if f := r.dbFiles(); len(f) != 0 {
		t.Fatalf("requests before the handshake created database files %v", f)
	}
	c.handshake("acme", "")
	c.ping()
}

func TestMalformedFrames(t *testing.T) {
	r := startRelay(t, Config{})
	c := connect(t, r, "acme")
	for _, tc := range []struct {
		frame string
		code  wire.ErrorCode
	}{
		{`{not json`, wire.CodeMessageError},
		{`{"type":"get_changes","since":-1}`, wire.CodeMessageError},
		{`{"type":"get_changes","since":1,"extra":true}`, wire.CodeMessageError},
		{`{"type":"ping"} trailing`, wire.CodeMessageError},
		{"\xff\xfe", wire.CodeMessageError},
		{`{"type":"teleport"}`, wire.CodeUnknownMessage},
		{`{"type":"changes","cursor":1,"more":false,"changeSets":[]}`, wire.CodeUnknownMessage},
		{`{"type":"handshake_ack","protocolVersion":` + curVersion + `,"databaseId":"x","serverSiteId":"AAAAAAAAAAAAAAAAAAAAAA","connectionId":"c"}`, wire.CodeUnknownMessage},
	} {
		c.sendRaw([]byte(tc.frame))
		c.expectError(tc.code)
		c.ping() // the connection is still usable
	}
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	c.expectError(wire.CodeMessageError)
	c.ping()
	// A client's pong and error need no answer.
	c.send(&wire.Pong{})
	c.send(wire.NewError(wire.CodeMessageError, "client-side trouble"))
	c.ping()
}

func TestMessageTooLarge(t *testing.T) {
	const limit = 64 << 10
	r := startRelay(t, Config{MaxMessageSize: limit})
	c := connect(t, r, "acme")
	// A frame at the limit is read (and found malformed); one byte more is
	// too large.
	at := append([]byte(`"`), bytes.Repeat([]byte("x"), limit-2)...)
	c.sendRaw(append(at, '"'))
	c.expectError(wire.CodeMessageError)
	big := bytes.Repeat([]byte("y"), limit+1)
	c.sendRaw(big)
	e := c.expectError(wire.CodeMessageTooLarge)
	if !strings.Contains(e.Message, "65536") {
		t.Errorf("message %q does not name the limit", e.Message)
	}
	c.ping()
	// A binary frame (version 14) one byte above the limit, sent as a
	// binary message, is too large as well; at the limit it is read (and
	// found malformed).
	head := []byte(`{"type":"apply_changes","requestId":"r","changes":1}`)
	c.sendRaw(wire.BinaryFrame(head, bytes.Repeat([]byte{0xff}, limit+1-len(head)-2)))
	if e := c.expectError(wire.CodeMessageTooLarge); !strings.Contains(e.Message, "65536") {
		t.Errorf("binary frame: message %q does not name the limit", e.Message)
	}
	c.sendRaw(wire.BinaryFrame(head, bytes.Repeat([]byte{0xff}, limit-len(head)-2)))
	c.expectError(wire.CodeApplyChangesRefused)
	c.ping()
	// Far beyond the limit, the relay still answers first, then the
	// WebSocket library closes with 1009.
	c.sendRaw(bytes.Repeat([]byte("z"), 3*limit))
	c.expectError(wire.CodeMessageTooLarge)
	c.expectClose(websocket.StatusMessageTooBig)
	// Other connections do not notice.
	connect(t, r, "acme").ping()
}

func TestDatabaseThatCannotOpen(t *testing.T) {
	needFiles(t)
	r := startRelay(t, Config{})
	// A directory where the database file belongs: bbolt cannot open it.
	if err := os.Mkdir(dbPath(r.dir, "broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := dial(t, r, nil)
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "broken", SiteID: c.site})
	e := recvType[*wire.Error](c)
	if e.Code != codeInternal || e.Fatal {
		t.Fatalf("error %+v, want transient %s", *e, codeInternal)
	}
	c.expectClose(websocket.StatusInternalError)
	// Other databases are unaffected, and the broken one is retried.
	connect(t, r, "fine").ping()
	c = dial(t, r, nil)
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "broken", SiteID: c.site})
	if e := recvType[*wire.Error](c); e.Code != codeInternal {
		t.Fatalf("second try: %+v", *e)
	}
}

func TestDatabaseFileNames(t *testing.T) {
	for id, want := range map[string]string{
		"trips":      "trips.db",
		"acme:Trips": "acme%3A%54rips.db",
		"a.b_c-d":    "a.b_c-d.db",
		"..":         "...db",
		"Z":          "%5A.db",
	} {
		if got := dbFileName(id); got != want {
			t.Errorf("dbFileName(%q) = %q, want %q", id, got, want)
		}
	}
	if dbFileName("A") == dbFileName("a") {
		t.Fatal("ids differing in case share a file name")
	}
}

// curVersion is wire.ProtocolVersion as frames spell it.
var curVersion = strconv.Itoa(wire.ProtocolVersion)
