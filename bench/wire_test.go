//go:build !js

package main

import (
	"strings"
	"testing"
)

// goTestOutput is two BenchmarkWireBytes samples of one mode and size as
// `go test -bench` prints them, amid other lines.
const goTestOutput = `goos: linux
pkg: github.com/replica-sync/replica/relay
BenchmarkWireBytes/deflate=off/tx=1-2         	       1	 863478996 ns/op	       162.4 ack-B/row	       139.4 json-B/row	      1409 live-B/row	      1326 pull-B/row	      1389 push-B/row	       199.7 snapshot-B/row
BenchmarkWireBytes/deflate=off/tx=1-2         	       1	 863478996 ns/op	       162.4 ack-B/row	       139.4 json-B/row	      1409 live-B/row	      1326 pull-B/row	      1391 push-B/row	       199.7 snapshot-B/row
BenchmarkWireBytes/deflate=off/tx=1000-2      	       1	1436504715 ns/op	         0.3157 ack-B/row	       141.0 json-B/row	      1169 live-B/row	      1170 pull-B/row	      1169 push-B/row	       160.3 snapshot-B/row
BenchmarkWireBytes/deflate=nocontext/tx=1-2   	       1	20007533075 ns/op	       162.4 ack-B/row	       139.4 json-B/row	       373.8 live-B/row	       123.4 pull-B/row	       350.4 push-B/row	        67.93 snapshot-B/row
BenchmarkWireBytes/deflate=nocontext/tx=1000-2         	       1	3195418116 ns/op	         0.3497 ack-B/row	       141.0 json-B/row	        97.10 live-B/row	        97.35 pull-B/row	        97.23 push-B/row	        59.13 snapshot-B/row
BenchmarkPushLatency-2   	     100	   1000 ns/op	 1.0 p50-ms
ok  	github.com/replica-sync/replica/relay	64.305s
`

// TestWireReport reads BenchmarkWireBytes lines into W11's cells: medians
// per mode, size and direction, their ratios to the compact JSON of the
// same run, and the target judged on the default mode.
func TestWireReport(t *testing.T) {
	r := &results{wire: parseWireBytes(goTestOutput)}
	if got := r.wire[wireKey{"off", 1, "push"}]; len(got) != 2 || got[0] != 1389 || got[1] != 1391 {
		t.Fatalf("off/tx=1 push samples %v", got)
	}
	if len(r.wire) != 4*6 {
		t.Fatalf("%d figures, want 24", len(r.wire))
	}
	cell := r.wireCell("push")(&system{name: "replica"})
	for _, want := range []string{
		"1-row transactions, each pushed alone: deflate off 1390 B (9.97×), deflate (the relay's default) 350 B (2.51×)",
		"1,000-row transactions: deflate off 1169 B (8.29×), deflate (the relay's default) 97 B (0.69×)",
	} {
		if !strings.Contains(cell, want) {
			t.Errorf("push cell %q lacks %q", cell, want)
		}
	}
	if got := r.wireCell("push")(&system{name: "raw"}); got != "compact JSON of the rows: 140 B (the baseline)" {
		t.Errorf("raw's cell %q", got)
	}
	if got := r.wireTarget("push"); !strings.HasSuffix(got, "**missed**") {
		t.Errorf("push target %q: 350 B is above 2 × 139.4", got)
	}
	if got := r.wireTarget("snapshot"); !strings.HasSuffix(got, ": met") {
		t.Errorf("snapshot target %q", got)
	}
}
