package client

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0, 1 * s}, {1, 0, 2 * s}, {2, 0, 4 * s}, {5, 0, 32 * s},
		{6, 0, 60 * s}, {7, 0, 60 * s}, {100, 0, 60 * s}, {1000, 0, 60 * s},
		{0, 0.5, 1*s + s/8}, {6, 0.999, 60*s + time.Duration(float64(60*s)*0.25*0.999)},
		{3, -1, 8 * s}, {3, 1, 8 * s}, // out-of-range jitter is ignored
	} {
		if got := backoff(tc.n, BackoffBase, BackoffMax, tc.r); got != tc.want {
			t.Errorf("backoff(%d, r=%v) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

// TestDebouncer walks the debouncer through a script of changes and timer
// firings: t is ms since start, "c" a change, "f" the timer firing at the
// deadline the previous step returned.
func TestDebouncer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		at    int  // ms
		fire  bool // a timer firing rather than a change
		flush bool // expected
		next  int  // expected next deadline in ms; -1: none
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first change after quiet goes at once", []step{
			{0, false, true, 50},
			{50, true, false, -1}, // quiet window passed with nothing held: idle
			{500, false, true, 550},
		}},
		{"changes inside the window coalesce into one flush", []step{
			{0, false, true, 50},
			{10, false, false, 60},
			{20, false, false, 70},
			{30, false, false, 80},
			{60, true, false, 80}, // a stale timer: nothing due yet
			{80, true, true, 130}, // the trailing flush opens a new window
			{130, true, false, -1},
		}},
		{"max-wait bounds a steady stream", []step{
			{0, false, true, 50},
			{10, false, false, 60},
			{40, false, false, 90}, {80, false, false, 130}, {120, false, false, 170},
			{160, false, false, 210}, {200, false, false, 250}, {240, false, false, 260}, // 10+250
			{260, true, true, 310},
			{270, false, false, 320},
			{300, false, false, 350}, {340, false, false, 390},
		}},
		{"a change right after the window closes goes at once", []step{
			{0, false, true, 50},
			{50, false, true, 100}, // the timer not handled yet: the window is over
		}},
		{"a change after an unhandled deadline joins the flush", []step{
			{0, false, true, 50},
			{10, false, false, 60},
			{70, false, true, 120}, // deadline passed, timer not yet handled: all go now
			{70, true, false, 120}, // the stale timer finds nothing held
			{120, true, false, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := debouncer{window: 50 * time.Millisecond, maxWait: 250 * time.Millisecond}
			for i, st := range tc.steps {
				var flush bool
				var next time.Time
				if st.fire {
					flush, next = d.fire(ms(st.at))
				} else {
					flush, next = d.change(ms(st.at))
				}
				want := time.Time{}
				if st.next >= 0 {
					want = ms(st.next)
				}
				if flush != st.flush || !next.Equal(want) {
					t.Fatalf("step %d (%+v): flush=%v next=%v, want flush=%v next=%v", i, st, flush, next.Sub(t0), st.flush, want.Sub(t0))
				}
			}
		})
	}
}
