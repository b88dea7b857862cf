package httpserver

import (
	"bufio"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// NewRequests counts requests by route (the pattern that served them)
// and status code (SPEC §9). Both label sets are bounded: the routes are
// the mux's patterns.
func NewRequests(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabrelay_http_requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"})
	reg.MustRegister(c)
	return c
}

// Counted wraps a mux so that every request is counted once it is done.
//
// h serves the request (mux, or mux behind a guard); a request that h
// answered without reaching mux is counted under the route mux would
// have chosen.
func Counted(mux *http.ServeMux, h http.Handler, requests *prometheus.CounterVec) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			_, route = mux.Handler(r)
		}
		if route == "" {
			route = "unmatched"
		}
		requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
	})
}

// statusWriter remembers the status code; it keeps flushing (SSE) and
// hijacking (the tab's WebSocket) working.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.status = http.StatusSwitchingProtocols
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
