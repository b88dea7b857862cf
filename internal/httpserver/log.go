// Package httpserver is what the relay puts around its routes on both of
// its listeners: the servers' timeouts and error log, request counting,
// Connection: close while the node drains, the guard that answers 503
// while the store is away, and the probes /health and /ready. It holds no
// route of a front end; the node decides what is served where.
package httpserver

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// New returns the server of one listener, named for its log lines.
// Requests must arrive within 30 s, headers within 10; idle keep-alive
// connections go after 2 min. Responses get no write timeout: a call
// waits up to TAB_CALL_WAIT and listen streams last.
func New(listener string, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, ErrorLog: serverLog(logger, listener)}
}

// serverLog is an http.Server's ErrorLog: its lines become JSON records of
// the node's logger, named by listener. Accept errors ("too many open
// files") and recovered handler panics are errors an operator must see at
// the default level; anything else net/http says (a client's malformed
// request, a query with semicolons) is a warning.
func serverLog(logger *slog.Logger, listener string) *log.Logger {
	return log.New(serverLogWriter{log: logger.With("listener", listener)}, "", 0)
}

type serverLogWriter struct{ log *slog.Logger }

func (w serverLogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\n"))
	msg, detail, _ := strings.Cut(line, "\n") // a panic's stack follows its line
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: Accept error") || strings.HasPrefix(msg, "http: panic serving") {
		level = slog.LevelError
	}
	attrs := []any{"http_server", msg}
	if detail != "" {
		attrs = append(attrs, "stack", detail)
	}
	w.log.Log(context.Background(), level, "http server error", attrs...)
	return len(p), nil
}
