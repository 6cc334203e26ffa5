//go:build linux

package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd when the test binary dies (a panic,
// a timeout), so that no browser, driver or X server outlives it.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
