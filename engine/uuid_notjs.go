//go:build !js

package engine

import "github.com/google/uuid"

// newKey returns a generated key: a UUIDv7 in canonical text form, from
// github.com/google/uuid (the browser build makes the same with uuidV7).
func newKey() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return u.String(), nil
}
