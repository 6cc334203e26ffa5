//go:build !js

package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/wire"
)

// versionProxy forwards WebSocket frames between clients and a relay,
// rewriting "protocolVersion":wire.ProtocolVersion to the next version in the first frame of one direction
// (the handshake, or the handshake_ack), and passing close statuses on.
type versionProxy struct {
	url   string
	conns atomic.Int64
}

func startVersionProxy(t *testing.T, upstream string, rewriteAck bool) *versionProxy {
	t.Helper()
	vp := &versionProxy{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vp.conns.Add(1)
		down, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer down.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		up, _, err := websocket.Dial(ctx, upstream, nil)
		if err != nil {
			return
		}
		defer up.CloseNow()
		pipe := func(from, to *websocket.Conn, rewrite bool) {
			defer cancel()
			first := true
			for {
				typ, b, err := from.Read(ctx)
				if err != nil {
					if st := websocket.CloseStatus(err); st != -1 {
						to.Close(st, "")
					}
					return
				}
				if first && rewrite {
					b = []byte(strings.Replace(string(b), fmt.Sprintf(`"protocolVersion":%d`, wire.ProtocolVersion), fmt.Sprintf(`"protocolVersion":%d`, wire.ProtocolVersion+1), 1))
				}
				first = false
				if to.Write(ctx, typ, b) != nil {
					return
				}
			}
		}
		go pipe(up, down, rewriteAck)
		pipe(down, up, !rewriteAck)
	}))
	t.Cleanup(hs.Close)
	vp.url = "ws" + strings.TrimPrefix(hs.URL, "http")
	return vp
}

// stopped checks that a client is in a lasting Error state with the relay
// error code (or err), and that it does not reconnect: opened counts the
// connections it made, which must stay at one past the first backoff
// step.
func stopped(t *testing.T, r *replica, opened func() int64, check func(error) bool) {
	t.Helper()
	waitState(t, r, client.Error)
	if err := r.c.State().Err; !check(err) {
		t.Fatalf("error state with %v", err)
	}
	time.Sleep(client.BackoffBase + client.BackoffBase/2) // past the first retry a reconnect would make
	if n := opened(); n != 1 {
		t.Fatalf("%d connections, want 1 (no reconnect)", n)
	}
	if st := r.c.State(); st.State != client.Error || !st.Retry.IsZero() {
		t.Fatalf("state moved on: %+v", st)
	}
}

// TestE2EVersionMismatch: a handshake with another protocolVersion is
// refused by the real relay (PROTOCOL_VERSION_MISMATCH, close 4003), and
// an ack with another version is refused by the client; either way the
// client stays in the Error state and never reconnects.
func TestE2EVersionMismatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rewriteAck bool
		check      func(error) bool
	}{
		{"relay refuses", false, func(err error) bool {
			re := client.RelayError(err)
			return re != nil && re.Code == wire.CodeProtocolVersionMismatch && re.Fatal
		}},
		{"client refuses", true, func(err error) bool { return errorsIs(err, client.ErrProtocolVersion) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			rl := startRelay(t, t.TempDir(), nil)
			vp := startVersionProxy(t, rl.url, tc.rewriteAck)
			r := newReplica(t, "r", notesSchema(), engine.Options{}, client.Options{})
			r.connect(t, vp.url, "db1", "")
			stopped(t, r, vp.conns.Load, tc.check)
		})
	}
}

// TestE2EBadToken: a token the relay's token file does not grant is
// AUTH_FAILED (close 4001): a lasting error, no reconnect. The right token
// syncs.
func TestE2EBadToken(t *testing.T) {
	checkNoLeaks(t)
	tokens, err := relay.NewTokens(map[string]string{"db1": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	rl := startRelay(t, t.TempDir(), tokens)
	bad := newReplica(t, "bad", notesSchema(), engine.Options{}, client.Options{})
	bad.connect(t, rl.url, "db1", "wrong")
	stopped(t, bad, rl.conns.Load, func(err error) bool {
		re := client.RelayError(err)
		return re != nil && re.Code == wire.CodeAuthFailed && re.Fatal
	})
	good := newReplica(t, "good", notesSchema(), engine.Options{}, client.Options{})
	good.connect(t, rl.url, "db1", "s3cret")
	waitState(t, good, client.Synced)
	// Connect again after fixing the token: the Error state is left.
	bad.connect(t, rl.url, "db1", "s3cret")
	waitState(t, bad, client.Synced)
}
