//go:build js

package client

// maybeCheckpoint does nothing in the browser build: see
// checkpoint_upload.go.
func (s *session) maybeCheckpoint() {}

// sendCheckpointPart is never called in the browser build (no upload
// starts).
func (s *session) sendCheckpointPart() {}
