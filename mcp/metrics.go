package mcp

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the MCP front end's metrics (SPEC §9).
type Metrics struct {
	ScopeRefusals prometheus.Counter
}

// NewMetrics makes the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{ScopeRefusals: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabrelay_scope_refusals_total", Help: "Tool calls refused because the connection's scope does not grant them."})}
	if reg != nil {
		reg.MustRegister(m.ScopeRefusals)
	}
	return m
}
