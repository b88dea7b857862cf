package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// storeDown answers every token check with the store's failure.
type storeDown struct{}

func (storeDown) Verify(context.Context, string) (protocol.Grant, error) {
	return protocol.Grant{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// TestATokenCheckThatFailsIsADocumented503 (issue 17, item 6): while the
// store cannot be read (the token's records or its connection's scope:
// one walk), before the node noticed the outage, a request is answered
// 503 with Retry-After and a JSON-RPC error carrying its id, not a
// plain-text body, and nothing runs (the issue 17 scenario got a 200 tool
// error).
func TestATokenCheckThatFailsIsADocumented503(t *testing.T) {
	calls := &[]protocol.CallRequest{}
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{calls},
		Verifier: storeDown{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, id string }{
		{"number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`, "7"},
		{"string id", `{"jsonrpc":"2.0","id":"call-1","method":"tools/list"}`, `"call-1"`},
		{"no JSON", `not json`, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer tra_x")
			req.Header.Set("Accept", "application/json, text/event-stream")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			var rpc struct {
				JSONRPC string
				ID      json.RawMessage
				Error   struct {
					Code    int
					Message string
				}
			}
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
				w.Header().Get("Content-Type") != "application/json" || json.Unmarshal(w.Body.Bytes(), &rpc) != nil ||
				rpc.JSONRPC != "2.0" || string(rpc.ID) != tc.id || rpc.Error.Code != protocol.ErrUnavailable.RPC || !strings.HasSuffix(rpc.Error.Message, ".") {
				t.Fatalf("%d Retry-After %q Content-Type %q: %s", w.Code, w.Header().Get("Retry-After"), w.Header().Get("Content-Type"), w.Body.String())
			}
			if strings.Contains(w.Body.String(), "6379") {
				t.Fatalf("the store's error reached the host: %s", w.Body.String())
			}
			if len(*calls) != 0 {
				t.Fatalf("a call ran: %v", *calls)
			}
		})
	}
}
