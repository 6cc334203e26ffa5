//go:build !js

package engine

import "crypto/rand"

// defaultRand is the source of site ids, snapshot ids and generated keys
// when Options.Rand is nil: crypto/rand. (rand_js.go says why the browser
// build differs.)
var defaultRand = rand.Reader
