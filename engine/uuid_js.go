//go:build js

package engine

// newKey returns a generated key: a UUIDv7 in canonical text form (uuidV7,
// whose doc says why the browser build does not use google/uuid).
func newKey() (string, error) { return uuidV7() }
