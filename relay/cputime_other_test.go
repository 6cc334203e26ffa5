//go:build !unix && !js

package relay

// processCPU is unknown on this platform.
func processCPU() int64 { return 0 }
