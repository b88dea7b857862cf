package node

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

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
