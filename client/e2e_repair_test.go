//go:build !js

package client_test

import (
	"path/filepath"
	"testing"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
)

// TestE2ERepairAfterWipeDeviceGone (wire's "Repair pushes"): a and b sync
// 100 rows, then a is gone for good (lost phone), and the relay's data
// directory is wiped. b reconnects to the new log: pushing its own rows
// back is not enough, a's 50 rows live on b alone; b's repair push brings
// them back, and a fresh device gets all 100 (without it, 50).
func TestE2ERepairAfterWipeDeviceGone(t *testing.T) {
	bin := buildRelay(t)
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "data")
	url := "ws://" + addr + "/sync"
	proc := startRelayProcess(t, bin, addr, dir)

	a := newReplica(t, "a", notesSchema(), engine.Options{}, client.Options{})
	b := newReplica(t, "b", notesSchema(), engine.Options{}, client.Options{})
	for _, r := range []*replica{a, b} {
		r.connect(t, url, "gone", "")
		waitState(t, r, client.Synced)
	}
	var want []string
	want = append(want, writeNotes(t, a, "a", 0, 50)...)
	want = append(want, writeNotes(t, b, "b", 0, 50)...)
	holdEvery(t, want, a, b)
	a.c.Disconnect()

	proc.stop(t)
	replaceDir(t, dir, "")
	startRelayProcess(t, bin, addr, dir)
	holdEvery(t, want, b)

	d := newReplica(t, "d", notesSchema(), engine.Options{}, client.Options{})
	d.connect(t, url, "gone", "")
	holdEvery(t, want, d)
}
