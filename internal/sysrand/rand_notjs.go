//go:build !js

package sysrand

import (
	"crypto/rand"
	"io"
)

// Reader is crypto/rand.Reader.
var Reader io.Reader = rand.Reader
