//go:build !js

package relay

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the relay's Prometheus metrics, registered in a registry of
// the Server's own (so several Servers in one process do not collide), with
// the Go runtime and process collectors.
type metrics struct {
	reg *prometheus.Registry

	connections      prometheus.Gauge
	connectionsTotal prometheus.Counter
	connsRefused     *prometheus.CounterVec
	databasesOpen    prometheus.Gauge
	messagesIn       *prometheus.CounterVec
	messagesOut      *prometheus.CounterVec
	bytesIn          prometheus.Counter
	bytesOut         prometheus.Counter
	errors           *prometheus.CounterVec
	changesApplied   prometheus.Counter
	changesSkipped   prometheus.Counter
	changeSetsStored prometheus.Counter
	checkpoints      *prometheus.CounterVec
	applyDuration    prometheus.Histogram
	applyCommits     prometheus.Counter
	pushesDropped    *prometheus.CounterVec
	arrivalsPruned   prometheus.Counter
	horizonMarks     prometheus.Counter
	rateLimited      *prometheus.CounterVec
	storageErrors    *prometheus.CounterVec
	storageFailing   prometheus.Gauge
}

func newMetrics() *metrics {
	const ns = "replica_relay"
	m := &metrics{reg: prometheus.NewRegistry()}
	m.connections = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "connections",
		Help: "WebSocket connections open now (handshake done or not)."})
	m.connectionsTotal = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "connections_total",
		Help: "WebSocket connections accepted."})
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "connections_refused_total",
		Help: "Connections refused: limit (upgrade answered with HTTP 503 at MaxConnections) or handshake_timeout (closed without a valid handshake in time)."}, []string{"reason"})
	m.databasesOpen = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "databases_open",
		Help: "Database files open now."})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "messages_received_total",
		Help: "Frames received, by message type (\"invalid\" for frames that did not decode)."}, []string{"type"})
	m.messagesOut = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "messages_sent_total",
		Help: "Frames written, by message type."}, []string{"type"})
	m.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "received_bytes_total",
		Help: "Bytes of frame payloads received."})
	m.bytesOut = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "sent_bytes_total",
		Help: "Bytes of frame payloads written."})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "errors_total",
		Help: "Error frames sent, by code."}, []string{"code"})
	m.changesApplied = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "changes_applied_total",
		Help: "Changes and schema migrations that changed a database's merged replica."})
	m.changesSkipped = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "changes_skipped_total",
		Help: "Changes received that did not change the merged replica (older, equal, duplicate)."})
	m.changeSetsStored = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "changesets_stored_total",
		Help: "ChangeSets appended to arrival logs (each got a new cursor)."})
	m.checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sealed_checkpoints_total",
		Help: "Sealed checkpoints: stored (an upload became a sealed database's newest), refused (CHECKPOINT_REFUSED), served (streamed to a bootstrapping device)."}, []string{"result"})
	m.applyDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "apply_duration_seconds",
		Help:    "Time to merge one apply_changes and append it to the arrival log, commit included.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12)})
	m.applyCommits = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "apply_commits_total",
		Help: "Storage transactions that merged and appended apply_changes: one per group of apply_changes merged together (group commit), so apply_duration_seconds_count over it is the mean group size."})
	m.pushesDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pushes_dropped_total",
		Help: "push_changes frames not delivered: queue_full (the connection was closed) or snapshot (the connection was streaming a snapshot)."}, []string{"reason"})
	m.arrivalsPruned = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "arrivals_pruned_total",
		Help: "Arrival-log entries removed by retention."})
	m.horizonMarks = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "horizon_marks_total",
		Help: "Tombstone horizon marks made (each followed by pruning the merged replica's tombstones deleted before it)."})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rate_limited_total",
		Help: "Connections over their rate limit (FrameRate, ByteRate): slowed (a connection's frames started waiting for the limit) or closed (with RATE_LIMITED, after RateLimitGrace over it)."}, []string{"action"})
	m.storageErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "storage_errors_total",
		Help: "Storage operations that failed on the relay (a full disk, an I/O error), by op: open, write (apply_changes), prune (retention), read (get_changes, snapshots)."}, []string{"op"})
	m.storageFailing = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "storage_failing",
		Help: "Operations (open, write, read) of databases whose last attempt failed; /healthz answers 503 while it is above 0."})
	m.reg.MustRegister(m.rateLimited, m.storageErrors, m.storageFailing, m.connections, m.connectionsTotal, m.connsRefused, m.databasesOpen, m.messagesIn, m.messagesOut,
		m.bytesIn, m.bytesOut, m.errors, m.changesApplied, m.changesSkipped, m.changeSetsStored, m.checkpoints,
		m.applyDuration, m.applyCommits, m.pushesDropped, m.arrivalsPruned, m.horizonMarks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
