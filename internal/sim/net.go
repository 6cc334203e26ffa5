//go:build !js

package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/internal/wsframe"
	"github.com/replica-sync/replica/relay"
)

// netFaults are the per-frame fault rates of the network, per mille; zero
// once faults stop.
type netFaults struct {
	drop, dup, delay, reorder int
}

// frame is one WebSocket message in flight, or a close (close set).
type frame struct {
	data   []byte
	close  bool
	code   int // close status; -1: the connection dropped (no close frame)
	reason string
}

// handshakePrefix starts every handshake frame (wire encodes the type
// first).
var handshakePrefix = []byte(`{"type":"handshake"`)

// link is one connection between a replica and a relay: two directions
// (0: replica to relay, 1: relay to replica), each with its own sequence
// and random source, so that what one direction does never depends on the
// other's goroutines.
type link struct {
	sim  *Sim
	id   uint64
	name string
	ends [2]*endpoint
	dirs [2]struct {
		mu   sync.Mutex
		seq  uint64
		last time.Duration
		rng  *rand.Rand
	}
}

// endpoint is one side of a link: ends[0] is the replica's, read by the
// client; ends[1] the relay's.
type endpoint struct {
	l     *link
	side  int
	mu    sync.Mutex
	inbox []frame
	err   error // set when closed; reads fail with it once inbox is empty
	limit int64
	sig   chan struct{}
}

func (s *Sim) newLink(id uint64, name string) *link {
	l := &link{sim: s, id: id, name: name}
	for i := range l.ends {
		l.ends[i] = &endpoint{l: l, side: i, sig: make(chan struct{}, 1), limit: 1 << 30}
		l.dirs[i].rng = rand.New(rand.NewPCG(s.seed, id<<1|uint64(i)))
	}
	return l
}

// send puts f in flight from side to the other side: latency 1–20 ms,
// order kept, unless a fault drops, duplicates, delays or reorders it.
func (l *link) send(side int, f frame) {
	d := &l.dirs[side]
	d.mu.Lock()
	defer d.mu.Unlock()
	nf := l.sim.netFaults()
	lat := time.Duration(1+d.rng.IntN(20)) * time.Millisecond
	copies := 1
	if !f.close {
		switch r := d.rng.IntN(1000); {
		case r < nf.drop:
			l.sim.count("net.drop")
			return
		case r < nf.drop+nf.dup && !bytes.HasPrefix(f.data, handshakePrefix):
			// Not a handshake: a second one on a connection is fatal by
			// the protocol (ALREADY_AUTHENTICATED), as it must be.
			l.sim.count("net.duplicate")
			copies = 2
		case r < nf.drop+nf.dup+nf.delay:
			l.sim.count("net.delay")
			lat += time.Duration(d.rng.IntN(5000)) * time.Millisecond
		case r < nf.drop+nf.dup+nf.delay+nf.reorder:
			l.sim.count("net.reorder")
			lat = 0 // may overtake frames in flight
		}
	}
	at := l.sim.sched.Now() + lat
	if lat > 0 {
		at = max(at, d.last)
		d.last = at
	}
	to := l.ends[1-side]
	for range copies {
		d.seq++
		l.sim.sched.at(key{at: at, kind: kindNet, owner: l.id<<1 | uint64(side), seq: d.seq}, func() {
			l.sim.traceNet(l, side, f)
			to.deliver(f)
		})
	}
}

// deliver queues f for the endpoint's reader.
func (e *endpoint) deliver(f frame) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	e.inbox = append(e.inbox, f)
	select {
	case e.sig <- struct{}{}:
	default:
	}
}

// closeLocal ends the endpoint for its own side with err.
func (e *endpoint) closeLocal(err error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return false
	}
	e.err = err
	e.inbox = nil
	select {
	case e.sig <- struct{}{}:
	default:
	}
	return true
}

var errLocalClose = errors.New("sim: connection closed locally")

// next returns the next frame's payload; a close frame ends the endpoint
// with the peer's status.
func (e *endpoint) next(ctx context.Context) ([]byte, error) {
	for {
		e.mu.Lock()
		if e.err != nil {
			err := e.err
			e.mu.Unlock()
			return nil, err
		}
		if len(e.inbox) > 0 {
			f := e.inbox[0]
			e.inbox = e.inbox[1:]
			e.mu.Unlock()
			if f.close {
				err := e.peerClosed(f)
				e.closeLocal(err)
				if f.code != -1 {
					e.l.send(e.side, frame{close: true, code: f.code, reason: "echo"}) // close handshake reply
				}
				return nil, err
			}
			if int64(len(f.data)) > e.limit {
				return f.data, e.tooBig()
			}
			return f.data, nil
		}
		e.mu.Unlock()
		select {
		case <-e.sig:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// peerClosed is the error of a read after the peer's close, in the
// conventions of the side's library.
func (e *endpoint) peerClosed(f frame) error {
	if f.code == -1 {
		return fmt.Errorf("sim: connection dropped: %w", io.ErrUnexpectedEOF)
	}
	if e.side == 0 {
		return &client.CloseError{Code: f.code, Reason: f.reason}
	}
	return websocket.CloseError{Code: websocket.StatusCode(f.code), Reason: f.reason}
}

// tooBig closes the endpoint as a WebSocket library does for a message
// beyond the read limit: status 1009 to the peer.
func (e *endpoint) tooBig() error {
	e.l.sim.count("limit.frame_too_big")
	e.close(int(websocket.StatusMessageTooBig), "message too big")
	if e.side == 1 {
		return fmt.Errorf("sim: %w", websocket.ErrMessageTooBig)
	}
	return errors.New("sim: read limited: message too big")
}

// close sends a close frame (code -1: the connection drops) and ends the
// endpoint locally.
func (e *endpoint) close(code int, reason string) error {
	if e.closeLocal(errLocalClose) {
		e.l.send(e.side, frame{close: true, code: code, reason: reason})
	}
	return nil
}

func (e *endpoint) write(b []byte) error {
	e.mu.Lock()
	err := e.err
	e.mu.Unlock()
	if err != nil {
		return err
	}
	e.l.send(e.side, frame{data: bytes.Clone(b)})
	return nil
}

// cut drops the connection under both sides at once, frames in flight
// lost (a connection cut mid-frame).
func (l *link) cut() {
	for _, e := range l.ends {
		e.closeLocal(fmt.Errorf("sim: connection cut: %w", io.ErrUnexpectedEOF))
	}
}

// clientSocket is the replica's end as a client.Socket.
type clientSocket struct{ e *endpoint }

func (c clientSocket) Read(ctx context.Context) (bool, []byte, error) {
	b, err := c.e.next(ctx)
	if err != nil {
		return false, nil, err
	}
	return true, b, nil
}
func (c clientSocket) Write(_ context.Context, b []byte) error { return c.e.write(b) }
func (c clientSocket) Close(code int, reason string) error     { return c.e.close(code, reason) }
func (c clientSocket) CloseNow() error                         { return c.e.close(-1, "") }

// relayConn is the relay's end as a relay.Conn.
type relayConn struct{ e *endpoint }

var _ relay.Conn = relayConn{}

func (c relayConn) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	b, err := c.e.next(ctx)
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return wsframe.Type(b), io.MultiReader(bytes.NewReader(b[:c.e.limit]), errReader{err}), nil
	}
	if err != nil {
		return 0, nil, err
	}
	return wsframe.Type(b), bytes.NewReader(b), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func (c relayConn) Write(_ context.Context, _ websocket.MessageType, p []byte) error {
	return c.e.write(p)
}
func (c relayConn) Close(code websocket.StatusCode, reason string) error {
	return c.e.close(int(code), reason)
}
func (c relayConn) CloseNow() error { return c.e.close(-1, "") }
func (c relayConn) SetReadLimit(n int64) {
	c.e.mu.Lock()
	c.e.limit = n
	c.e.mu.Unlock()
}
