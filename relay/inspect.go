//go:build !js

package relay

import (
	"encoding/binary"
	"encoding/json"
	"net/http"

	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/wire"
)

// inspectEntries is how many of a sealed database's newest log entries
// GET /inspect/{database} shows.
const inspectEntries = 5

// inspectMaxJSON bounds each entry's stored bytes shown (the rest is cut).
const inspectMaxJSON = 1024

// InspectEntry is one entry of GET /inspect/{database} (Config.Inspect):
// an arrival record of a sealed database's log as the relay stores it.
type InspectEntry struct {
	// Cursor is the entry's arrival cursor.
	Cursor uint64 `json:"cursor"`
	// ArrivedMs is when it arrived, ms since the Unix epoch.
	ArrivedMs uint64 `json:"arrivedMs"`
	// Stored is the ChangeSet's wire JSON exactly as the relay stores and
	// serves it (site id, transactionId, HLC, the envelope in base64),
	// cut at 1,024 bytes; Bytes is its whole length.
	Stored string `json:"stored"`
	Bytes  int    `json:"bytes"`
}

// serveInspect serves GET /inspect/{database} when Config.Inspect is set:
// the newest entries (at most 5) of a sealed database's arrival log, as
// stored, so that a demo can show that the relay holds only ciphertext
// and the metadata docs/SECURITY.md lists. It answers 404 for a database
// that is not open on this relay (it never opens or creates one: a
// database is open while a device is connected, and a while after) and
// 403 for a plain database (whose entries are plaintext). No auth: it
// shows what anyone holding the relay's disk sees of a sealed database;
// leave Config.Inspect off in production.
func (s *Server) serveInspect(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("database")
	if !wire.ValidDatabaseID(id) {
		http.Error(w, "invalid database id", http.StatusBadRequest)
		return
	}
	// A reference keeps the database open while its log is read.
	s.dbMu.Lock()
	d := s.dbs[id]
	if d != nil && !d.closing {
		d.refs++
	} else {
		d = nil
	}
	s.dbMu.Unlock()
	if d != nil {
		defer s.release(d)
		<-d.ready
	}
	if d == nil || d.openErr != nil {
		http.Error(w, "database not open on this relay (connect a device first)", http.StatusNotFound)
		return
	}
	if !d.sealed {
		http.Error(w, "not a sealed database: only sealed databases' logs are shown", http.StatusForbidden)
		return
	}
	var out []InspectEntry
	err := d.store.View(func(tx kv.Tx) error {
		var perr error
		err := tx.Scan(bucketArrivals, kv.Range{Reverse: true, Limit: inspectEntries}, func(k, v []byte) bool {
			rec, err := decodeRecord(v)
			if err != nil || len(k) != 8 {
				perr = errCorrupt
				return false
			}
			e := InspectEntry{Cursor: binary.BigEndian.Uint64(k), ArrivedMs: rec.arrivedMs, Bytes: len(rec.json)}
			js := rec.json
			if len(js) > inspectMaxJSON {
				js = js[:inspectMaxJSON]
			}
			e.Stored = string(js)
			out = append(out, e)
			return true
		})
		if err != nil {
			return err
		}
		return perr
	})
	if err != nil {
		http.Error(w, "reading the log failed", http.StatusServiceUnavailable)
		return
	}
	if out == nil {
		out = []InspectEntry{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}
