package engine

import (
	"testing"
)

// TestHLCClock walks the clock through tables of steps: (wall time, tick or
// receive, input, expected state), in the manner of cockroachdb's
// TestHLCClock.
func TestHLCClock(t *testing.T) {
	site := SiteID{1}
	type step struct {
		wall   uint64
		recv   *HLC // nil: a local tick
		want   clockState
		errDft bool
	}
	remote := func(wall uint64, counter uint16) *HLC { return &HLC{Wall: wall, Counter: counter, Site: SiteID{2}} }
	cases := []struct {
		name  string
		steps []step
	}{
		{"tick advances with the wall clock", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1005, want: clockState{1005, 0}},
		}},
		{"tick within a millisecond counts", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1000, want: clockState{1000, 1}},
			{wall: 1000, want: clockState{1000, 2}},
		}},
		{"backward wall clock never goes back", []step{
			{wall: 5000, want: clockState{5000, 0}},
			{wall: 4000, want: clockState{5000, 1}},
			{wall: 1, want: clockState{5000, 2}},
			{wall: 5001, want: clockState{5001, 0}},
		}},
		{"receive max-merges", []step{
			{wall: 1000, want: clockState{1000, 0}},
			{wall: 1000, recv: remote(1500, 7), want: clockState{1500, 7}},
			{wall: 1000, want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1200, 3), want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1500, 8), want: clockState{1500, 8}},
			{wall: 1000, recv: remote(1500, 9), want: clockState{1500, 9}},
		}},
		{"drift edge: exactly 60 000 ms accepted, 60 001 refused", []step{
			{wall: 10_000, recv: remote(70_000, 0), want: clockState{70_000, 0}},
			{wall: 10_000, recv: remote(70_001, 0), want: clockState{70_000, 0}, errDft: true},
		}},
		{"drift is measured against the wall clock, not the HLC", []step{
			{wall: 10_000, recv: remote(69_000, 0), want: clockState{69_000, 0}},
			{wall: 10_000, recv: remote(71_000, 0), want: clockState{69_000, 0}, errDft: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s clockState
			for i, st := range c.steps {
				if st.recv == nil {
					s = s.tick(st.wall)
				} else {
					err := checkDrift(*st.recv, st.wall)
					if (err != nil) != st.errDft {
						t.Fatalf("step %d: drift error %v, want error=%v", i, err, st.errDft)
					}
					if err == nil {
						s = s.receive(*st.recv)
					}
				}
				if s != st.want {
					t.Fatalf("step %d: state %+v, want %+v", i, s, st.want)
				}
				_ = site
			}
		})
	}
}

func TestHLCCounterRollover(t *testing.T) {
	s := clockState{Wall: 1000, Counter: 0xFFFE}
	s = s.tick(1000)
	if s != (clockState{1000, 0xFFFF}) {
		t.Fatalf("got %+v", s)
	}
	s = s.tick(1000)
	if s != (clockState{1001, 0}) {
		t.Fatalf("past 0xFFFF: got %+v, want the next millisecond", s)
	}
	// And the wall clock catching up does not move it back.
	if s = s.tick(1001); s != (clockState{1001, 1}) {
		t.Fatalf("got %+v", s)
	}
}
