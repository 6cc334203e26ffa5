//go:build js && wasm

package jsbridge

// sync serves db.sync.connect, disconnect and requestSnapshot. The sync
// client (package client) is not part of this build yet, so they reject with
// NOT_AVAILABLE and db.sync.state stays {status: "disconnected"}; the leader
// election it will use (Web Locks, db.isLeader) and the sibling-tab change
// notices it will push from are in place.
func (d *db) sync(c *call) {
	method := map[int]string{opSyncConnect: "db.sync.connect", opSyncDisconnect: "db.sync.disconnect",
		opSyncSnapshot: "db.sync.requestSnapshot", opSyncState: "db.sync.state"}[c.op]
	d.b.reply(c.id, fail(&bridgeError{code: codeNotAvailable,
		msg: "the sync client is not part of this build yet; the replica works offline"}, method, ""))
}
