//go:build !js

package relay

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// logRecorder is a slog.Handler keeping every record's level and message
// (and passing them on to the test logger).
type logRecorder struct {
	next slog.Handler
	mu   *sync.Mutex
	recs *[]slog.Record
}

func newLogRecorder(t testing.TB) (*slog.Logger, func() []slog.Record) {
	r := logRecorder{next: testLogger(t).Handler(), mu: new(sync.Mutex), recs: new([]slog.Record)}
	return slog.New(r), func() []slog.Record {
		r.mu.Lock()
		defer r.mu.Unlock()
		return append([]slog.Record(nil), *r.recs...)
	}
}

func (r logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	*r.recs = append(*r.recs, rec.Clone())
	r.mu.Unlock()
	if r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}

func (r logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return logRecorder{next: r.next.WithAttrs(as), mu: r.mu, recs: r.recs}
}

func (r logRecorder) WithGroup(name string) slog.Handler {
	return logRecorder{next: r.next.WithGroup(name), mu: r.mu, recs: r.recs}
}

// logged returns the records of level at least min whose message contains
// sub.
func logged(recs []slog.Record, min slog.Level, sub string) []slog.Record {
	var out []slog.Record
	for _, r := range recs {
		if r.Level >= min && strings.Contains(r.Message, sub) {
			out = append(out, r)
		}
	}
	return out
}

// A batch the relay will never store (here: a row too large) is refused
// with APPLY_CHANGES_REFUSED, not "retry later", and logged as a warning
// about the client's batch, not as the relay's error.
func TestPermanentRefusalIsNotRetryLater(t *testing.T) {
	log, records := newLogRecorder(t)
	r := startRelay(t, Config{Logger: log})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", localSets(t, rep)) // the DDL: cursor 1

	// Two transactions on one row, each with a 5 MiB value: each
	// ChangeSet fits the frame and the arrival log, the merged row (10
	// MiB) exceeds what a row may hold.
	ins := insertStops(t, rep, "t", 1)[0]
	pk := ins.Changes[0].PK
	upd, err := rep.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("stops", engine.Key{pk[0].Text()}, map[string]any{"trip": "u"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 5<<20)
	for _, cs := range []*model.ChangeSet{&ins, upd} {
		for i := range cs.Changes {
			if c := &cs.Changes[i]; c.Column == "name" || c.Column == "trip" && cs == upd {
				c.Value = model.Text(big)
			}
		}
	}
	a.send(&wire.ApplyChanges{RequestID: "apply-2", ChangeSets: []model.ChangeSet{ins, *upd}})
	e := a.expectError(wire.CodeApplyChangesRefused)
	if e.RequestID != "apply-2" || !strings.Contains(e.Message, "too large") || strings.Contains(e.Message, "retry later") {
		t.Fatalf("error %+v, want requestId apply-2 and a message saying the row is too large, not retry later", *e)
	}
	if ch := a.getChanges(0); ch.Cursor != 1 {
		t.Fatalf("cursor %d after a refused batch, want 1 (nothing stored)", ch.Cursor)
	}
	recs := records()
	if errs := logged(recs, slog.LevelError, ""); len(errs) != 0 {
		t.Fatalf("a client's refused batch was logged at ERROR: %q", errs[0].Message)
	}
	if len(logged(recs, slog.LevelWarn, "refused")) != 1 {
		t.Fatal("the refused batch was not logged as a warning")
	}
}

// A handshake with the all-zero site id is refused, fatally, before
// anything is stored.
func TestZeroSiteIDHandshake(t *testing.T) {
	r := startRelay(t, Config{})
	c := dial(t, r, nil)
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "acme", SiteID: model.SiteID{}})
	e := recvType[*wire.Error](c)
	if e.Code != wire.CodeMessageError || !e.Fatal || !strings.Contains(e.Message, "siteId") {
		t.Fatalf("error %+v, want a fatal MESSAGE_ERROR about the siteId", *e)
	}
	c.expectClose(websocket.StatusProtocolError)
	if files := r.dbFiles(); len(files) != 0 {
		t.Fatalf("a refused handshake created %v", files)
	}
}

// The same ChangeSet twice in one apply_changes is stored, merged and
// counted once; a copy that is a subset of the other is dropped the same
// way.
func TestDuplicateInOneBatchCountedOnce(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "acme")
	sets := localSets(t, rep)
	cs := insertStops(t, rep, "t", 1)[0]
	n := len(cs.Changes)
	res := a.apply("apply-1", append(sets, cs, cs))
	if res.Transactions != len(sets)+1 || res.Applied != facts(&sets[0])+n || res.Skipped != 0 {
		t.Fatalf("apply_result %+v, want %d transactions, %d applied, 0 skipped", res.ApplyResult, len(sets)+1, facts(&sets[0])+n)
	}
	if p := recvType[*wire.PushChanges](b); len(p.ChangeSets) != len(sets)+1 {
		t.Fatalf("push carries %d ChangeSets, want %d", len(p.ChangeSets), len(sets)+1)
	}

	cs2 := insertStops(t, rep, "t", 1)[0]
	sub := cs2
	sub.Changes = cs2.Changes[1:]
	res = a.apply("apply-2", []model.ChangeSet{sub, cs2, sub})
	if res.Transactions != 1 || res.Applied != len(cs2.Changes) {
		t.Fatalf("apply_result %+v, want 1 transaction, %d applied", res.ApplyResult, len(cs2.Changes))
	}
	if p := recvType[*wire.PushChanges](b); len(p.ChangeSets) != 1 || len(p.ChangeSets[0].Changes) != len(cs2.Changes) {
		t.Fatalf("push after a batch with a subset copy: %d ChangeSets, want the whole transaction once", len(p.ChangeSets))
	}
}

// A connection may push only ChangeSets of the site its handshake declared:
// a ChangeSet claiming another device's site would reach everyone but that
// device.
func TestChangeSetOfAnotherSiteRefused(t *testing.T) {
	r := startRelay(t, Config{})
	victim := newReplica(t, nil)
	attacker := newReplica(t, nil)
	v := connectAs(t, r, "acme", victim)
	a := connectAs(t, r, "acme", attacker)
	forged := insertStops(t, victim, "forged", 1) // site ids are public
	own := localSets(t, attacker)
	for i, batch := range [][]model.ChangeSet{forged, append(slices.Clone(own), forged...)} {
		a.send(&wire.ApplyChanges{RequestID: "apply-1", ChangeSets: batch})
		e := a.expectError(wire.CodeApplyChangesRefused)
		if e.RequestID != "apply-1" || !strings.Contains(e.Message, victim.SiteID().String()) || !strings.Contains(e.Message, attacker.SiteID().String()) {
			t.Fatalf("batch %d: error %+v, want requestId apply-1 and a message naming both site ids", i, *e)
		}
	}
	v.ping() // nothing was pushed to the victim's connection
	if ch := v.getChanges(0); ch.Cursor != 0 {
		t.Fatalf("cursor %d after refused batches, want 0: something was stored", ch.Cursor)
	}
	if s := collectSnapshot(t, v, &wire.GetSnapshot{}); len(s.tables) != 0 {
		t.Fatalf("the merged replica holds %v after refused batches", s.tables)
	}
	// Its own ChangeSets pass.
	a.apply("apply-2", own)
	recvType[*wire.PushChanges](v)
}

// snapshotCell returns the value of one cell in a relay snapshot.
func snapshotCell(t testing.TB, c *client, table, pk, column string) (model.Value, bool) {
	t.Helper()
	s := collectSnapshot(t, c, &wire.GetSnapshot{})
	for _, ch := range s.chunks {
		if ch.Type != model.ChunkRows || ch.Table != table {
			continue
		}
		for _, row := range ch.Rows {
			if len(row.PK) == 1 && row.PK[0].Equal(model.Text(pk)) {
				for _, cell := range row.Cells {
					if cell.Column == column {
						return cell.Value, true
					}
				}
			}
		}
	}
	return model.Value{}, false
}

// A transactionId the log holds, resent with facts the held copy does not
// have (or other content under the same HLC), is refused whole: the merged
// replica would take it while the log kept the first copy. A resend with
// the same facts or a subset stays a no-op.
func TestResendWithOtherFactsRefused(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	b := connect(t, r, "acme")
	if _, err := rep.Insert("trips", map[string]any{"id": "t1", "title": "start"}); err != nil {
		t.Fatal(err)
	}
	a.apply("apply-1", localSets(t, rep)) // the DDL and the insert
	recvType[*wire.PushChanges](b)
	// T: one fact, title "A" at opSeq 0.
	cs, err := rep.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("trips", engine.Key{"t1"}, map[string]any{"title": "A", "budget": 5.0})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Changes) != 2 {
		t.Fatalf("the update made %d changes, want 2", len(cs.Changes))
	}
	title := slices.IndexFunc(cs.Changes, func(c model.Change) bool { return c.Column == "title" })
	orig := *cs
	orig.Changes = []model.Change{cs.Changes[title]}
	orig.HLC = cs.Changes[title].HLC
	a.apply("apply-2", []model.ChangeSet{orig})
	recvType[*wire.PushChanges](b)
	const cursor = 3

	// T again with one fact, title "B", at another opSeq; then at the same
	// opSeq; then with the original fact and one more.
	other := orig
	other.Changes = []model.Change{orig.Changes[0]}
	other.Changes[0].Value = model.Text("B")
	other.Changes[0].HLC.OpSeq++
	other.HLC = other.Changes[0].HLC
	sameHLC := orig
	sameHLC.Changes = []model.Change{orig.Changes[0]}
	sameHLC.Changes[0].Value = model.Text("B")
	more := *cs
	for i, forged := range []model.ChangeSet{other, sameHLC, more} {
		a.send(&wire.ApplyChanges{RequestID: "apply-3", ChangeSets: []model.ChangeSet{forged}})
		e := a.expectError(wire.CodeApplyChangesRefused)
		if e.RequestID != "apply-3" || !strings.Contains(e.Message, cs.TransactionID) || !strings.Contains(e.Message, "other facts") {
			t.Fatalf("resend %d: error %+v, want requestId apply-3 and a message naming the transaction", i, *e)
		}
	}
	b.ping() // nothing pushed
	if ch := b.getChanges(0); ch.Cursor != cursor {
		t.Fatalf("cursor %d after refused resends, want %d", ch.Cursor, cursor)
	}
	// The merged replica (what bootstrapping devices get) and the log
	// (what pulling devices get) agree: title "A".
	if v, ok := snapshotCell(t, b, "trips", "t1", "title"); !ok || !v.Equal(model.Text("A")) {
		t.Fatalf("the relay's merged replica has title %v (found %v), want \"A\"", v, ok)
	}
	all, _, _ := b.pullAll(0)
	if last := all[len(all)-1]; last.TransactionID != cs.TransactionID || len(last.Changes) != 1 || !last.Changes[0].Value.Equal(model.Text("A")) {
		t.Fatalf("the log's copy of T: %+v", last)
	}

	// Legitimate resends: the same ChangeSet, and (a later write
	// superseded a fact) a subset, in a batch with a new transaction.
	if res := a.apply("apply-4", []model.ChangeSet{orig}); res.Applied != 0 || res.Skipped != 1 {
		t.Fatalf("exact resend: %+v, want 1 skipped", res.ApplyResult)
	}
	next := insertStops(t, rep, "n", 1)
	// A four-fact transaction held whole, then resent with its last fact
	// (the ChangeSet's hlc) only.
	a.apply("apply-5", next)
	recvType[*wire.PushChanges](b)
	sub := next[0]
	sub.Changes = sub.Changes[len(sub.Changes)-1:]
	if res := a.apply("apply-6", []model.ChangeSet{sub}); res.Applied != 0 || res.Skipped != 1 {
		t.Fatalf("subset resend: %+v, want 1 skipped", res.ApplyResult)
	}
	b.ping()
	if ch := b.getChanges(0); ch.Cursor != cursor+1 {
		t.Fatalf("cursor %d after resends, want %d", ch.Cursor, cursor+1)
	}
}

// An apply_changes frame that is valid JSON but whose changes do not decode
// is answered with APPLY_CHANGES_REFUSED carrying its requestId (the client
// ends its push in flight on it), not MESSAGE_ERROR without one.
func TestMalformedApplyChangesKeepsRequestID(t *testing.T) {
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	c := connectAs(t, r, "acme", rep)
	site := rep.SiteID().String()
	cs := func(hlc string) string {
		return `{"siteId":"` + site + `","transactionId":"1:0:` + site + `","hlc":"` + hlc + `","changes":[]}`
	}
	for _, tc := range []struct {
		frame, requestID string
		code             wire.ErrorCode
	}{
		{`{"type":"apply_changes","requestId":"apply-7","changes":[` + cs("AAAA") + `]}`, "apply-7", wire.CodeApplyChangesRefused},                  // HLC too short
		{`{"type":"apply_changes","changes":[` + cs(strings.Repeat("*", 40)) + `],"requestId":"apply-8"}`, "apply-8", wire.CodeApplyChangesRefused}, // not base64
		{`{"type":"apply_changes","requestId":"apply-9","changes":[],"extra":1}`, "apply-9", wire.CodeApplyChangesRefused},
		{`{"type":"apply_changes","changes":[` + cs("AAAA") + `]}`, "", wire.CodeApplyChangesRefused},
		{`{"type":"apply_changes","requestId":9,"changes":[]}`, "", wire.CodeApplyChangesRefused},
		{`{"type":"apply_changes","requestId":"apply-10","changes":[]`, "", wire.CodeMessageError}, // not JSON
		{`{"type":"get_changes","since":"x"}`, "", wire.CodeMessageError},
	} {
		c.sendRaw([]byte(tc.frame))
		e := c.expectError(tc.code)
		if e.RequestID != tc.requestID {
			t.Fatalf("%s: error %+v, want requestId %q", tc.frame, *e, tc.requestID)
		}
		c.ping()
	}
	if ch := c.getChanges(0); ch.Cursor != 0 {
		t.Fatalf("cursor %d, want 0", ch.Cursor)
	}
	// Before the handshake it stays a MESSAGE_ERROR.
	d := dial(t, r, nil)
	d.sendRaw([]byte(`{"type":"apply_changes","requestId":"apply-1","changes":[` + cs("AAAA") + `]}`))
	if e := d.expectError(wire.CodeMessageError); e.RequestID != "" {
		t.Fatalf("error before the handshake: %+v", *e)
	}
}

// metricsText returns the relay's /metrics page.
func metricsText(t testing.TB, r *testRelay) string {
	t.Helper()
	resp, err := http.Get(r.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readAllBody(t, resp.Body)
}

// pingFrame returns a ping frame of n bytes (an extra member pads it).
func pingFrame(n int) []byte {
	const head, tail = `{"type":"ping","pad":"`, `"}`
	return []byte(head + strings.Repeat("p", n-len(head)-len(tail)) + tail)
}

// Before the handshake the relay reads frames of HandshakeFrameLimit bytes
// at most; after it, MaxMessageSize.
func TestFrameLimitBeforeHandshake(t *testing.T) {
	r := startRelay(t, Config{})
	c := dial(t, r, nil)
	c.sendRaw(pingFrame(HandshakeFrameLimit + 1))
	if e := c.expectError(wire.CodeMessageTooLarge); !strings.Contains(e.Message, "65536") || !strings.Contains(e.Message, "before the handshake") {
		t.Fatalf("message %q does not name the limit before the handshake", e.Message)
	}
	c.handshake("acme", "")
	// Now the configured limit applies: a 1 MiB frame is read (and is not a
	// valid message).
	c.sendRaw(pingFrame(1 << 20))
	c.expectError(wire.CodeMessageError)
	c.ping()

	// More than twice the limit before the handshake: the error, then 1009.
	d := dial(t, r, nil)
	frames := d.readAll()
	d.sendRaw(pingFrame(3 * HandshakeFrameLimit))
	f := <-frames
	if m, err := wire.Decode(f.frame); f.err != nil || err != nil || m.(*wire.Error).Code != wire.CodeMessageTooLarge {
		t.Fatalf("got %q, %v; want MESSAGE_TOO_LARGE", f.frame, f.err)
	}
	if f = <-frames; websocket.CloseStatus(f.err) != websocket.StatusMessageTooBig {
		t.Fatalf("after the error: %q, %v; want close status 1009", f.frame, f.err)
	}
}

// A connection without a valid handshake is closed after HandshakeTimeout,
// even while it pings.
func TestHandshakeTimeout(t *testing.T) {
	r := startRelay(t, Config{HandshakeTimeout: 300 * time.Millisecond})
	ok := connect(t, r, "acme")
	c := dial(t, r, nil)
	frames := c.readAll()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var timedOut *wire.Error // pings answered meanwhile may follow it
	for done := false; !done; {
		select {
		case <-tick.C:
			if time.Since(start) > 5*time.Second {
				t.Fatal("the connection without a handshake is still open after 5 s")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`))
			cancel()
		case f := <-frames:
			if f.err != nil {
				if st := websocket.CloseStatus(f.err); st != websocket.StatusPolicyViolation {
					t.Fatalf("connection ended with %v, want close status 1008", f.err)
				}
				done = true
				continue
			}
			if e, isErr := decodeOrNil(f.frame).(*wire.Error); isErr && strings.Contains(e.Message, "no valid handshake") {
				timedOut = e
			}
		}
	}
	if timedOut == nil || timedOut.Code != wire.CodeNotAuthenticated {
		t.Fatalf("error before the close: %+v, want NOT_AUTHENTICATED saying no valid handshake", timedOut)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("closed after %v, before the handshake timeout", d)
	}
	ok.ping() // a connection that handshook in time stays
	if m := metricsText(t, r); !strings.Contains(m, `replica_relay_connections_refused_total{reason="handshake_timeout"} 1`) {
		t.Fatalf("/metrics does not count the handshake timeout:\n%s", m)
	}
}

func decodeOrNil(b []byte) wire.Message {
	m, _ := wire.Decode(b)
	return m
}

// Upgrades beyond MaxConnections are answered with HTTP 503.
func TestConnectionLimit(t *testing.T) {
	r := startRelay(t, Config{MaxConnections: 2})
	a := connect(t, r, "acme")
	b := dial(t, r, nil) // no handshake yet: it counts as well
	tryDial := func() (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
		defer cancel()
		return websocket.Dial(ctx, "ws://"+r.addr+"/sync", nil)
	}
	ws, resp, err := tryDial()
	if err == nil {
		ws.CloseNow()
		t.Fatal("a third connection was accepted with MaxConnections 2")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third dial: %v, response %+v; want HTTP 503", err, resp)
	}
	a.ping()
	// A slot frees when a connection ends.
	b.ws.CloseNow()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ws, _, err = tryDial()
		if err == nil {
			ws.CloseNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection accepted after one closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := metricsText(t, r); !strings.Contains(m, `replica_relay_connections_refused_total{reason="limit"}`) {
		t.Fatalf("/metrics does not count refused upgrades:\n%s", m)
	}
}
