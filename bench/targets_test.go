//go:build !js

package main

import "testing"

// TestTargets: the target cells judge Replica (the "replica" system) by
// issue 17's targets against the same run's raw IndexedDB and Dexie, and
// say nothing when the run lacks a figure.
func TestTargets(t *testing.T) {
	r := &results{Samples: map[string]map[string][]float64{
		"raw":     {"W1": {1000}, "W2": {1000}, "W5": {1000}},
		"replica": {"W1": {1150}, "W2": {850}, "W4": {90}, "W6cold": {140}, "W6warm": {60}, "W5": {1000}},
		"dexie":   {"W1": {1100}, "W4": {100}},
	}}
	want := map[string]string{
		"W1":     "≤ 1.2× raw and below Dexie: **missed**", // 1.15× raw, but above Dexie
		"W2":     "≤ 0.8× raw: **missed**",
		"W3":     "≤ 1.2× raw", // not measured
		"W4":     "≤ Dexie: met",
		"W5":     "≤ 1.0× raw bulk put: met",
		"W6cold": "≤ 150 ms: met",
		"W6warm": "≤ 50 ms: **missed**",
	}
	for _, w := range timedWorkloads {
		if got := r.targetCell(w); got != want[w.key] {
			t.Errorf("%s: %q, want %q", w.key, got, want[w.key])
		}
	}
	r.Samples["dexie"]["W1"] = []float64{1200}
	if got := r.targetCell(timedWorkloads[0]); got != "≤ 1.2× raw and below Dexie: met" {
		t.Errorf("W1 below Dexie and within 1.2× raw: %q", got)
	}
}
