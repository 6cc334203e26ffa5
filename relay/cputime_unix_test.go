//go:build unix && !js

package relay

import "syscall"

// processCPU returns the CPU time the process has used, user and system, in
// nanoseconds, or 0 when unknown. Benchmarks report it per frame because a
// shared machine's wall time says little.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
