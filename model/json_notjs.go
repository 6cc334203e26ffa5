//go:build !js

package model

import (
	"bytes"
	"encoding/json"
)

// marshalJSONFallback marshals v with encoding/json, without HTML escaping
// and without the encoder's newline: the values marshalJSON leaves to it
// (structs, MarshalJSON and MarshalText methods).
func marshalJSONFallback(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
