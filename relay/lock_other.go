//go:build !unix

package relay

// lockDir does nothing where flock is not available: the database files'
// own locks still keep two relays from opening the same database.
func lockDir(string) (func() error, error) { return func() error { return nil }, nil }

// CheckDataDir cannot tell where flock is not available: it returns nil.
func CheckDataDir(string) error { return nil }
