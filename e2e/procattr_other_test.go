//go:build !js && !linux

package e2e

import "os/exec"

// dieWithTest: elsewhere than Linux, browsers a dead test binary leaves
// behind stay.
func dieWithTest(cmd *exec.Cmd) {}
