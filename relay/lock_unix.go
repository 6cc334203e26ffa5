//go:build unix

package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the name of the lock file in the data directory.
const lockFile = "relay.lock"

// lockDir takes an exclusive, non-blocking flock on DataDir/relay.lock so
// that two relays never share a data directory. The lock is released by the
// returned function (or when the process exits).
func lockDir(dir string) (func() error, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("relay: lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("relay: data directory %s is in use by another relay (%s is locked)", dir, path)
		}
		return nil, fmt.Errorf("relay: lock data directory: %w", err)
	}
	return f.Close, nil
}
