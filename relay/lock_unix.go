//go:build unix

package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the name of the lock file in the data directory.
const lockFile = "relay.lock"

// lockDir takes an exclusive, non-blocking flock on DataDir/relay.lock so
// that two relays never share a data directory, and writes this process's
// id into the file (for the error another relay reports). The lock is
// released by the returned function (or when the process exits).
func lockDir(dir string) (func() error, error) {
	f, err := tryLock(dir)
	if err != nil {
		return nil, err
	}
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f.Close, nil
}

// tryLock opens and locks dir's lock file; the error says which process
// holds it when another relay does (ErrDataDirInUse).
func tryLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("relay: lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := ""
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					who = " (process " + strconv.Itoa(pid) + ")"
				}
			}
			return nil, fmt.Errorf("relay: data directory %s is %w%s", dir, ErrDataDirInUse, who)
		}
		return nil, fmt.Errorf("relay: lock data directory: %w", err)
	}
	return f, nil
}

// CheckDataDir reports whether a relay could use dir as its data
// directory now: nil when dir does not exist yet or no relay holds it, an
// error matching ErrDataDirInUse (naming the process) when one runs on
// it. It touches nothing a running relay uses (its lock file is only
// opened, never written).
func CheckDataDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, lockFile)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := tryLock(dir)
	if err != nil {
		return err
	}
	return f.Close()
}
