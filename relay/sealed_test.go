//go:build !js

package relay

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/seal"
	"github.com/replica-sync/replica/wire"
)

// sealedHandshake completes a handshake saying sealed for database db.
func (c *client) sealedHandshake(db string) *wire.HandshakeAck {
	c.t.Helper()
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: db, SiteID: c.site, Sealed: true})
	ack := recvType[*wire.HandshakeAck](c)
	if ack.DatabaseID != db || !ack.Sealed {
		c.t.Fatalf("bad handshake_ack for a sealed database: %+v", ack)
	}
	c.ack = ack
	return ack
}

func testKeyring(t testing.TB, b byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKey(bytes.Repeat([]byte{b}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sealAll(t testing.TB, kr seal.Sealer, db string, sets []model.ChangeSet) []model.ChangeSet {
	t.Helper()
	out := make([]model.ChangeSet, len(sets))
	for i := range sets {
		var err error
		if out[i], err = seal.SealChangeSet(kr, db, &sets[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestSealedRelayStoresAndForwards: a sealed database's relay stores the
// envelopes it is pushed (in a gap-free log), serves them to pulls and
// fans them out byte for byte, deduplicates a resend by transaction id
// (re-sealed with another nonce), answers get_snapshot with an empty
// snapshot at cursor 0, and keeps its log whole at maintenance.
func TestSealedRelayStoresAndForwards(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	kr := testKeyring(t, 7)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	b := dial(t, r, nil)
	b.sealedHandshake("vault")

	sets := sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 3)...))
	res := a.apply("apply-1", sets)
	if res.Transactions != len(sets) || res.Applied != len(sets) {
		t.Fatalf("apply_result %+v, want %d transactions applied", res.ApplyResult, len(sets))
	}
	if res.First != 1 || res.Cursor != uint64(len(sets)) || res.Chain.IsZero() {
		t.Fatalf("apply_result position first %d cursor %d chain %s, want 1 … %d with a chain (wire version 9)", res.First, res.Cursor, res.Chain, len(sets))
	}
	push := recvType[*wire.PushChanges](b)
	if push.Cursor != uint64(len(sets)) || len(push.ChangeSets) != len(sets) {
		t.Fatalf("push_changes cursor %d with %d ChangeSets, want %d", push.Cursor, len(push.ChangeSets), len(sets))
	}
	got, cur, _ := b.pullAll(0)
	if cur != uint64(len(sets)) || len(got) != len(sets) {
		t.Fatalf("pulled %d ChangeSets to cursor %d, want %d", len(got), cur, len(sets))
	}
	for i := range got {
		if !bytes.Equal(got[i].Envelope, sets[i].Envelope) || !bytes.Equal(push.ChangeSets[i].Envelope, sets[i].Envelope) {
			t.Fatalf("ChangeSet %d: the relay changed the envelope", i)
		}
		if _, err := seal.OpenChangeSet(kr, "vault", &got[i]); err != nil {
			t.Fatalf("ChangeSet %d does not open after the relay: %v", i, err)
		}
	}

	// A resend (a lost ack): sealed again, with other nonces. Nothing
	// is appended.
	again := sealAll(t, kr, "vault", append(localSets(t, e)[:0:0], localSets(t, e)...))
	if bytes.Equal(again[0].Envelope, sets[0].Envelope) {
		t.Fatal("two sealings gave the same envelope: the nonce is not random")
	}
	res = a.apply("apply-2", again)
	if res.Applied != 0 || res.Skipped != len(sets) {
		t.Fatalf("resend: apply_result %+v, want every one skipped", res.ApplyResult)
	}
	if res.Cursor != 0 {
		t.Fatalf("resend: apply_result tells cursor %d, want none (nothing appended)", res.Cursor)
	}
	if ch := b.getChanges(0); ch.Cursor != uint64(len(sets)) {
		t.Fatalf("after the resend the cursor is %d, want %d", ch.Cursor, len(sets))
	}

	// Bootstrap: the relay holds no replica of a sealed database.
	b.send(&wire.GetSnapshot{})
	h := recvType[*wire.SnapshotChunk](b)
	if h.Chunk.Type != model.ChunkHeader || h.Chunk.Header.Cursor != 0 || h.Chunk.Header.Rows != 0 {
		t.Fatalf("sealed snapshot header %+v, want an empty snapshot at cursor 0", h.Chunk.Header)
	}
	for {
		if _, ok := b.recv().(*wire.SnapshotComplete); ok {
			break
		}
	}

	// Retention does not prune a sealed log (no sealed checkpoints).
	clock.Advance(engine.DefaultRetention + 24*time.Hour)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := b.pullAll(0); len(got) != len(sets) {
		t.Fatalf("after maintenance past the retention the log serves %d ChangeSets from 0, want %d", len(got), len(sets))
	}
}

// TestSealedRelayRefusals: the mode is fixed when a database is created; a
// handshake of the other mode is refused with SEALED_MISMATCH (fatal,
// 4005), a plaintext push to a sealed database with ENVELOPE_REQUIRED, an
// envelope to a plain one with ENVELOPE_REFUSED, a repair push to a sealed
// one with APPLY_CHANGES_REFUSED, a visible HLC too far ahead with
// CLOCK_DRIFT; nothing of a refused batch is stored.
func TestSealedRelayRefusals(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	kr := testKeyring(t, 9)
	e := newReplica(t, clock)
	plain := localSets(t, e)
	sealed := sealAll(t, kr, "vault", plain)

	s := dial(t, r, nil)
	s.site = e.SiteID()
	s.sealedHandshake("vault") // creates it sealed
	p := dial(t, r, nil)
	p.site = e.SiteID()
	p.handshake("plain", "") // creates it plain

	// The other mode's handshakes.
	x := dial(t, r, nil)
	x.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "vault", SiteID: x.site})
	x.expectError(wire.CodeSealedMismatch)
	x.expectClose(websocket.StatusCode(wire.CloseSealedMismatch))
	y := dial(t, r, nil)
	y.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "plain", SiteID: y.site, Sealed: true})
	y.expectError(wire.CodeSealedMismatch)
	y.expectClose(websocket.StatusCode(wire.CloseSealedMismatch))

	// Plaintext to the sealed database, an envelope to the plain one.
	s.send(&wire.ApplyChanges{RequestID: "a-1", ChangeSets: plain})
	if e := s.expectError(wire.CodeEnvelopeRequired); e.RequestID != "a-1" {
		t.Fatalf("ENVELOPE_REQUIRED without the requestId: %+v", e)
	}
	p.send(&wire.ApplyChanges{RequestID: "a-2", ChangeSets: sealed})
	if e := p.expectError(wire.CodeEnvelopeRefused); e.RequestID != "a-2" {
		t.Fatalf("ENVELOPE_REFUSED without the requestId: %+v", e)
	}
	// A sealed batch mixing both is refused whole.
	s.send(&wire.ApplyChanges{RequestID: "a-3", ChangeSets: append(append([]model.ChangeSet(nil), sealed...), plain...)})
	s.expectError(wire.CodeEnvelopeRequired)
	// Repair pushes are plain databases' only.
	other := newReplica(t, clock)
	s.send(&wire.ApplyChanges{RequestID: "a-r", Repair: true, ChangeSets: sealAll(t, kr, "vault", localSets(t, other))})
	s.expectError(wire.CodeApplyChangesRefused)
	// The visible HLC passes the drift gate.
	ahead := sealed[0]
	ahead.HLC.Wall = clock.Now() + 2*model.MaxDrift
	ahead.TransactionID = ahead.HLC.TransactionID()
	s.send(&wire.ApplyChanges{RequestID: "a-4", ChangeSets: []model.ChangeSet{ahead}})
	s.expectError(wire.CodeClockDrift)
	for _, c := range []*client{s, p} {
		if ch := c.getChanges(0); ch.Cursor != 0 || len(ch.ChangeSets) != 0 {
			t.Fatalf("a refused batch was stored: cursor %d", ch.Cursor)
		}
	}
	// The mode survives a restart of the relay.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := startRelay(t, Config{Clock: clock, DataDir: r.dir})
	z := dial(t, r2, nil)
	z.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "vault", SiteID: z.site})
	z.expectError(wire.CodeSealedMismatch)
	w := dial(t, r2, nil)
	w.site = e.SiteID()
	w.sealedHandshake("vault")
	if res := w.apply("a-5", sealed); res.Applied != len(sealed) {
		t.Fatalf("apply_result %+v after the restart", res.ApplyResult)
	}
}

// TestSealedCheckpointUpload: the relay stores a sealed checkpoint a device
// uploads part by part (answering each with checkpoint_result, the last
// stored), announces it in handshake_ack, streams it back to get_snapshot
// byte for byte, and refuses an upload to a plain database, one at a
// cursor above the log's head or not above the newest checkpoint's, and a
// part out of order (CHECKPOINT_REFUSED).
func TestSealedCheckpointUpload(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	kr := testKeyring(t, 5)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	sets := sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 3)...))
	a.apply("apply-1", sets) // cursor 4
	h, err := e.Now()
	if err != nil {
		t.Fatal(err)
	}
	env := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, wire.EnvelopeOverhead+10) }
	part := func(id string, cursor uint64, n uint32, last bool) *wire.PutCheckpoint {
		return &wire.PutCheckpoint{CheckpointPart: wire.CheckpointPart{CheckpointID: id, SiteID: a.site, HLC: h, Cursor: cursor, Part: n, Last: last, Envelope: env(int(n))}}
	}
	a.send(part("ahead", 5, 0, false))
	a.expectError(wire.CodeCheckpointRefused)
	a.send(part("skip", 4, 1, false))
	a.expectError(wire.CodeCheckpointRefused)
	for n := uint32(0); n < 3; n++ {
		a.send(part("c4", 4, n, n == 2))
		res := recvType[*wire.CheckpointResult](a)
		if res.CheckpointID != "c4" || res.Part != n || res.Stored != (n == 2) {
			t.Fatalf("checkpoint_result %+v for part %d", res, n)
		}
	}
	a.send(part("again", 4, 0, false))
	a.expectError(wire.CodeCheckpointRefused)

	b := dial(t, r, nil)
	if ack := b.sealedHandshake("vault"); ack.CheckpointCursor != 4 || ack.CheckpointAt == 0 {
		t.Fatalf("handshake_ack announces checkpoint cursor %d at %d, want 4", ack.CheckpointCursor, ack.CheckpointAt)
	}
	b.send(&wire.GetSnapshot{})
	for n := uint32(0); n < 3; n++ {
		p := recvType[*wire.CheckpointPartMessage](b)
		if p.CheckpointID != "c4" || p.Cursor != 4 || p.Part != n || p.Last != (n == 2) || p.SiteID != a.site || p.HLC != h || !bytes.Equal(p.Envelope, env(int(n))) {
			t.Fatalf("checkpoint_part %d: %+v", n, p.CheckpointPart)
		}
	}
	recvType[*wire.SnapshotComplete](b)

	p := dial(t, r, nil)
	p.site = a.site
	p.handshake("plain", "")
	p.send(part("plain", 0, 0, true))
	p.expectError(wire.CodeCheckpointRefused)
}
