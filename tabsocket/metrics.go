package tabsocket

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tabrelay/tabrelay/protocol"
)

// Metrics are the tab endpoint's metrics (SPEC §9).
type Metrics struct {
	Tabs        prometheus.Gauge       // proven tab sockets open
	Disconnects *prometheus.CounterVec // by close code name
	Refused     *prometheus.CounterVec // upgrades refused, by reason
	Reconnects  prometheus.Counter     // hellos of tabs that were connected before
	Open        prometheus.Gauge       // upgraded sockets, proven or not, whose connection is not closed yet
	Ends        *prometheus.CounterVec // sockets closed, by how they ended (endHow)
	Rekeyed     prometheus.Counter     // pairings found under a previous signing key and moved under the current one
	// NewPairingsRefused counts the hellos of new browsers refused by
	// their address's new-pairing limit.
	NewPairingsRefused prometheus.Counter
}

// NewMetrics makes the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Tabs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tabrelay_tab_sockets", Help: "Proven tab sockets open on this node."}),
		Disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_tab_disconnects_total", Help: "Tab sockets ended, by close code."}, []string{"code"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_tab_refused_total", Help: "Tab upgrades refused before the socket opened, by reason."}, []string{"reason"}),
		Reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_tab_reconnects_total", Help: "Hellos of tabs that had been connected before."}),
		Open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tabrelay_tab_sockets_open", Help: "Upgraded tab sockets, proven or not, whose connection is not closed yet."}),
		Ends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_tab_socket_ends_total", Help: "Tab sockets closed, by how they ended."}, []string{"how"}),
		Rekeyed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_tab_pairings_rekeyed_total", Help: "Pairings whose hello found them under a previous signing key (RELAY_SIGNING_KEY_PREVIOUS), moved under the current one."}),
		NewPairingsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_tab_new_pairings_refused_total", Help: "Hellos of browsers the relay did not know, refused because their address made its new pairings for now (RELAY_NEW_PAIRINGS_BURST, RELAY_NEW_PAIRINGS_PER_HOUR): closed 4007 with the wait."}),
	}
	for _, h := range endHows() {
		m.Ends.WithLabelValues(string(h))
	}
	for _, c := range protocol.CloseCodes() {
		m.Disconnects.WithLabelValues(c.String())
	}
	m.Disconnects.WithLabelValues("tab_closed")
	m.Refused.WithLabelValues("origin")
	m.Refused.WithLabelValues("draining")
	m.Refused.WithLabelValues("busy")
	if reg != nil {
		reg.MustRegister(m.Tabs, m.Disconnects, m.Refused, m.Reconnects, m.Open, m.Ends, m.Rekeyed, m.NewPairingsRefused)
	}
	return m
}
