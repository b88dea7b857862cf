package placement

import "github.com/prometheus/client_golang/prometheus"

// Metrics are placement's figures (no per-pairing labels).
type Metrics struct {
	Members     prometheus.Gauge
	Lookups     *prometheus.CounterVec // by result: local, remote, activated, failed
	Activations prometheus.Counter
	RedisErrors prometheus.Counter
	// RedisMasterChanges counts the node's watch finding another master
	// answering (node's watchRedis; issue 16).
	RedisMasterChanges prometheus.Counter
}

// NewMetrics registers placement's metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tabrelay_cluster_members",
			Help: "Cluster members this node sees (itself included)."}),
		Lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tabrelay_placement_lookups_total",
			Help: "Pairing lookups by result: local (active here), remote (active on another node, or started there for this draining one), activated (started here), raced (another node activated it first), failed."}, []string{"result"}),
		Activations: prometheus.NewCounter(prometheus.CounterOpts{Name: "tabrelay_placement_activations_total",
			Help: "Pairing actors this node started for placement."}),
		RedisErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "tabrelay_redis_errors_total",
			Help: "Redis commands of placement and membership that failed."}),
		RedisMasterChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "tabrelay_redis_master_changes_total",
			Help: "Times this node found another Redis master answering than before (by its run id): a failover, or a restart of the server."}),
	}
	for _, r := range []string{"local", "remote", "activated", "raced", "failed"} {
		m.Lookups.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.Members, m.Lookups, m.Activations, m.RedisErrors, m.RedisMasterChanges)
	}
	return m
}
