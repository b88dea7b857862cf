package actors

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabrelay/tabrelay/protocol"
)

// Metrics are the pairing actors' and tabs' metrics (SPEC §9): no
// per-browser or per-connection label.
type Metrics struct {
	TabsConnected  prometheus.Gauge
	PairingsActive prometheus.Gauge
	Calls          *prometheus.CounterVec // by outcome
	CallSeconds    prometheus.Histogram
	Detaches       prometheus.Counter
	LateAnswers    prometheus.Counter
	Redeliveries   prometheus.Counter
	TabsTakenBack  prometheus.Counter
	TabAsksCut     prometheus.Counter
	Moves          *prometheus.CounterVec // by result: moved, stayed
	Confirms       *prometheus.CounterVec // by way: node, tab

	callsBy [protocol.TabClosed + 1]prometheus.Counter // Calls of each outcome, looked up once
}

// Ended counts a call that ended as kind (Calls), without a label lookup
// per call.
func (m *Metrics) Ended(kind protocol.OutcomeKind) { m.callsBy[kind].Inc() }

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered, as in tests that make many relays).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		TabsConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tabrelay_tabs_connected", Help: "Tabs registered with a pairing actor on this node."}),
		PairingsActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tabrelay_pairings_active", Help: "Pairing actors active on this node."}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_calls_total", Help: "Tool calls ended by a pairing actor, by outcome."}, []string{"outcome"}),
		CallSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tabrelay_call_duration_seconds", Help: "From a call reaching its pairing to its end.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 120, 225, 300}}),
		Detaches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_call_detaches_total", Help: "Calls answered with the detach sentence while the person was asked."}),
		LateAnswers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_call_late_answers_total", Help: "Results that arrived after their call ended (dropped)."}),
		Redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_call_redeliveries_total", Help: "Calls sent again to a tab after the tab they were on went away."}),
		TabsTakenBack: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_tabs_taken_back_total",
			Help: "Tabs a pairing dropped because protoactor reported the link to their node lost, and took back when they answered that they live."}),
		TabAsksCut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_tab_asks_cut_total",
			Help: "Times the link to a tab's node was cut again while the pairing asked the tab whether it lives (after a lost link took it away): the asks until then did not count against the tab."}),
		Moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_pairing_moves_total",
			Help: "Pairings with calls in flight that a draining node moved to another (moved), or kept because no other took them (stayed)."},
			[]string{"result"}),
		Confirms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_tab_confirms_total",
			Help: "Confirms of this node's tabs' registrations with pairings on other nodes sent: one message per node for all its tabs (node), or one per tab, to a node of an older build or a pairing that has just moved (tab)."},
			[]string{"way"}),
	}
	m.Moves.WithLabelValues("moved")
	m.Moves.WithLabelValues("stayed")
	m.Confirms.WithLabelValues("node")
	m.Confirms.WithLabelValues("tab")
	for k := protocol.Answered; k <= protocol.TabClosed; k++ {
		m.callsBy[k] = m.Calls.WithLabelValues(k.String())
	}
	if reg != nil {
		reg.MustRegister(m.TabsConnected, m.PairingsActive, m.Calls, m.CallSeconds, m.Detaches, m.LateAnswers, m.Redeliveries, m.TabsTakenBack, m.TabAsksCut, m.Moves, m.Confirms)
	}
	return m
}
