//go:build !unix

package wire

// processCPU is unknown on this platform.
func processCPU() int64 { return 0 }
