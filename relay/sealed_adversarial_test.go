//go:build !js

package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// Adversarial and racy uses of sealed checkpoints on the relay.

// ckptUploader uploads sealed checkpoints for connection c (its site),
// parts of random bytes (the relay cannot tell them from envelopes).
type ckptUploader struct {
	c *client
	h model.HLC
}

func (u *ckptUploader) upload(t *testing.T, id string, cursor uint64, parts [][]byte) {
	t.Helper()
	for n, env := range parts {
		last := n == len(parts)-1
		u.c.send(&wire.PutCheckpoint{CheckpointPart: wire.CheckpointPart{CheckpointID: id, SiteID: u.c.site, HLC: u.h,
			Cursor: cursor, Part: uint32(n), Last: last, Envelope: env}})
		res := recvType[*wire.CheckpointResult](u.c)
		if res.CheckpointID != id || res.Part != uint32(n) || res.Stored != last {
			t.Fatalf("checkpoint_result %+v for part %d of %s", res, n, id)
		}
	}
}

func randomParts(t *testing.T, n, size int) [][]byte {
	t.Helper()
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = make([]byte, size)
		if _, err := rand.Read(parts[i]); err != nil {
			t.Fatal(err)
		}
	}
	return parts
}

// TestSealedCheckpointIDReuse: an upload reusing the checkpoint id of the
// database's newest checkpoint (the same site) is refused at its part 0,
// and the newest checkpoint's parts stay as stored. (Parts are keyed by
// site and id: such an upload used to overwrite the newest checkpoint's
// parts in place, and, abandoned, left it corrupt for every device
// bootstrapping from it.)
func TestSealedCheckpointIDReuse(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	kr := testKeyring(t, 3)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	a.apply("apply-1", sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 3)...))) // cursor 4
	h, err := e.Now()
	if err != nil {
		t.Fatal(err)
	}
	u := &ckptUploader{c: a, h: h}
	orig := randomParts(t, 3, wire.EnvelopeOverhead+64)
	u.upload(t, "c-same", 4, orig)

	a.apply("apply-2", sealAll(t, kr, "vault", insertStops(t, e, "t2", 2))) // cursor 6
	a.send(&wire.PutCheckpoint{CheckpointPart: wire.CheckpointPart{CheckpointID: "c-same", SiteID: a.site, HLC: h,
		Cursor: 6, Part: 0, Envelope: bytes.Repeat([]byte{0xee}, wire.EnvelopeOverhead+64)}})
	a.expectError(wire.CodeCheckpointRefused)
	a.ws.CloseNow() // abandons whatever upload the connection had

	b := dial(t, r, nil)
	if ack := b.sealedHandshake("vault"); ack.CheckpointCursor != 4 {
		t.Fatalf("newest checkpoint at cursor %d, want 4", ack.CheckpointCursor)
	}
	b.send(&wire.GetSnapshot{})
	for n := range orig {
		p := recvType[*wire.CheckpointPartMessage](b)
		if p.CheckpointID != "c-same" || p.Part != uint32(n) || !bytes.Equal(p.Envelope, orig[n]) {
			t.Fatalf("part %d of the newest checkpoint was altered by an upload reusing its id (%s part %d, %d bytes)", n, p.CheckpointID, p.Part, len(p.Envelope))
		}
	}
	recvType[*wire.SnapshotComplete](b)
}

// TestSealedCheckpointReplacedWhileStreaming: a device bootstrapping from
// the newest sealed checkpoint receives it whole even when another
// device's newer checkpoint is stored while the stream is under way (the
// old parts are kept until the streams reading them end). Otherwise a
// large checkpoint under regular uploads could never be streamed whole,
// and the relay reported a storage failure for a benign race.
func TestSealedCheckpointReplacedWhileStreaming(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock, SendQueue: 1})
	kr := testKeyring(t, 4)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	a.apply("apply-1", sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 3)...))) // cursor 4
	h, err := e.Now()
	if err != nil {
		t.Fatal(err)
	}
	u := &ckptUploader{c: a, h: h}
	// 24 MiB: far more than the loopback socket buffers hold, so the
	// relay's stream waits for b to read.
	old := randomParts(t, 24, 1<<20)
	u.upload(t, "c4", 4, old)

	b := dial(t, r, nil)
	b.sealedHandshake("vault")
	b.send(&wire.GetSnapshot{})
	if p := recvType[*wire.CheckpointPartMessage](b); p.Part != 0 || !bytes.Equal(p.Envelope, old[0]) {
		t.Fatalf("first part %d of %s", p.Part, p.CheckpointID)
	}
	// Meanwhile a newer checkpoint replaces it.
	a.apply("apply-2", sealAll(t, kr, "vault", insertStops(t, e, "t2", 2))) // cursor 6
	u.upload(t, "c6", 6, randomParts(t, 2, wire.EnvelopeOverhead+8))

	for n := 1; n < len(old); n++ {
		m := b.recv()
		p, ok := m.(*wire.CheckpointPartMessage)
		if !ok {
			t.Fatalf("part %d of the checkpoint being streamed: got %s %+v", n, m.Type(), describe(m))
		}
		if p.CheckpointID != "c4" || p.Part != uint32(n) || !bytes.Equal(p.Envelope, old[n]) {
			t.Fatalf("part %d: got part %d of %s", n, p.Part, p.CheckpointID)
		}
	}
	recvType[*wire.SnapshotComplete](b)

	// The replaced checkpoint's parts go once its stream ended: a new
	// bootstrap gets the newest, and the file keeps only its parts.
	c := dial(t, r, nil)
	c.sealedHandshake("vault")
	c.send(&wire.GetSnapshot{})
	for n := range 2 {
		if p := recvType[*wire.CheckpointPartMessage](c); p.CheckpointID != "c6" || p.Part != uint32(n) {
			t.Fatalf("after the stream: part %d of %s", p.Part, p.CheckpointID)
		}
	}
	recvType[*wire.SnapshotComplete](c)
	r.srv.mu.Lock()
	d := r.srv.dbs["vault"]
	r.srv.mu.Unlock()
	if d == nil {
		t.Fatal("vault not open")
	}
	// (b's stream ends just after its snapshot_complete is queued.)
	deadline := time.Now().Add(5 * time.Second)
	for n := countParts(t, d); n != 2; n = countParts(t, d) {
		if TestStorage != nil {
			// Shared storage: other relays may stream them; the
			// next maintenance pass that finds no stream deletes
			// them (sweepOrphans).
			if err := r.srv.Maintain(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay keeps %d checkpoint parts after the stream ended, want the newest's 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countParts counts the sealed checkpoint parts in d's file.
func countParts(t *testing.T, d *database) int {
	t.Helper()
	n := 0
	err := d.store.View(func(tx kv.Tx) error {
		return tx.Scan(bucketCheckpoint, kv.Range{KeysOnly: true}, func(_, _ []byte) bool { n++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSealedCheckpointBadUploads: uploads the relay must refuse
// (CHECKPOINT_REFUSED) leave nothing behind: above MaxCheckpointBytes,
// another site's, a part changing the upload's hlc or cursor midway, a
// clock too far ahead; and the database keeps no checkpoint.
func TestSealedCheckpointBadUploads(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock, MaxCheckpointBytes: 3 * (wire.EnvelopeOverhead + 100)})
	kr := testKeyring(t, 6)
	e := newReplica(t, clock)
	a := dial(t, r, nil)
	a.site = e.SiteID()
	a.sealedHandshake("vault")
	a.apply("apply-1", sealAll(t, kr, "vault", append(localSets(t, e), insertStops(t, e, "t1", 3)...))) // cursor 4
	h, err := e.Now()
	if err != nil {
		t.Fatal(err)
	}
	env := bytes.Repeat([]byte{0x5a}, wire.EnvelopeOverhead+100)
	put := func(id string, site model.SiteID, hh model.HLC, cursor uint64, n uint32, last bool) {
		a.send(&wire.PutCheckpoint{CheckpointPart: wire.CheckpointPart{CheckpointID: id, SiteID: site, HLC: hh, Cursor: cursor, Part: n, Last: last, Envelope: env}})
	}
	ok := func(id string, n uint32) {
		t.Helper()
		if res := recvType[*wire.CheckpointResult](a); res.CheckpointID != id || res.Part != n || res.Stored {
			t.Fatalf("checkpoint_result %+v", res)
		}
	}
	d := func() *database {
		r.srv.mu.Lock()
		defer r.srv.mu.Unlock()
		return r.srv.dbs["vault"]
	}()

	// Above the size limit at its fourth part.
	for n := range uint32(3) {
		put("big", a.site, h, 4, n, false)
		ok("big", n)
	}
	put("big", a.site, h, 4, 3, true)
	a.expectError(wire.CodeCheckpointRefused)
	if n := countParts(t, d); n != 0 {
		t.Fatalf("a refused oversize upload left %d parts", n)
	}

	// Another site's, by site id or by the hlc's site.
	other := model.SiteID{0xfe}
	put("x1", other, h, 4, 0, false)
	a.expectError(wire.CodeCheckpointRefused)
	hOther := h
	hOther.Site = other
	put("x2", a.site, hOther, 4, 0, false)
	a.expectError(wire.CodeCheckpointRefused)

	// An hlc or cursor changed midway.
	put("mid", a.site, h, 4, 0, false)
	ok("mid", 0)
	h2 := h
	h2.Counter++
	put("mid", a.site, h2, 4, 1, true)
	a.expectError(wire.CodeCheckpointRefused)
	put("mid2", a.site, h, 4, 0, false)
	ok("mid2", 0)
	put("mid2", a.site, h, 3, 1, true)
	a.expectError(wire.CodeCheckpointRefused)

	// A clock too far ahead.
	ahead := h
	ahead.Wall = clock.Now() + 2*model.MaxDrift
	put("ahead", a.site, ahead, 4, 0, true)
	a.expectError(wire.CodeCheckpointRefused)

	if n := countParts(t, d); n != 0 {
		t.Fatalf("refused uploads left %d parts", n)
	}
	b := dial(t, r, nil)
	if ack := b.sealedHandshake("vault"); ack.CheckpointCursor != 0 || ack.CheckpointAt != 0 {
		t.Fatalf("after refused uploads the relay announces a checkpoint at %d", ack.CheckpointCursor)
	}
}
