//go:build js

package model

import "fmt"

// marshalJSONFallback refuses the values marshalJSON leaves to
// encoding/json (structs, MarshalJSON and MarshalText methods): the browser
// build leaves encoding/json out (see json.go). The JavaScript API never
// produces them: it passes objects and arrays as json.RawMessage.
func marshalJSONFallback(v any) ([]byte, error) {
	return nil, fmt.Errorf("a %T needs encoding/json, which the browser build leaves out; pass its JSON as json.RawMessage", v)
}
