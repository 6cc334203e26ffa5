//go:build deps

// Package deps pins the project's third-party modules in go.mod while the
// packages that import them are being written. It is never built.
package deps

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/coder/websocket"
	_ "github.com/google/btree"
	_ "github.com/google/uuid"
	_ "github.com/hack-pad/go-indexeddb/idb"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.etcd.io/bbolt"
)
