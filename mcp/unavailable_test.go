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

func (storeDown) Verify(context.Context, string) (Grant, error) {
	return Grant{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// TestATokenCheckThatFailsIsADocumented503 (issue 17, item 6): while the
// store cannot be read, before the node noticed the outage, a request is
// answered 503 with Retry-After and a JSON-RPC error carrying its id, not
// a plain-text body.
func TestATokenCheckThatFailsIsADocumented503(t *testing.T) {
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{&[]protocol.CallRequest{}},
		Guard: allowAll{}, Verifier: storeDown{}, Logger: slog.New(slog.DiscardHandler)})
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
				rpc.JSONRPC != "2.0" || string(rpc.ID) != tc.id || rpc.Error.Code != CodeUnavailable || !strings.HasSuffix(rpc.Error.Message, ".") {
				t.Fatalf("%d Retry-After %q Content-Type %q: %s", w.Code, w.Header().Get("Retry-After"), w.Header().Get("Content-Type"), w.Body.String())
			}
			if strings.Contains(w.Body.String(), "6379") {
				t.Fatalf("the store's error reached the host: %s", w.Body.String())
			}
		})
	}
}

// scopeDown answers every scope read with the store's failure.
type scopeDown struct{}

func (scopeDown) Scope(context.Context, Grant) ([]protocol.ScopeEntry, error) {
	return nil, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// TestAScopeCheckThatFailsIsADocumented503: the token was checked (from
// before the outage, say) but the connection's scope cannot be read: the
// call is answered as every outage is — 503, Retry-After, its id — and
// nothing runs (the issue 17 scenario got a 200 tool error here).
func TestAScopeCheckThatFailsIsADocumented503(t *testing.T) {
	calls := &[]protocol.CallRequest{}
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{calls},
		Guard: scopeDown{}, Verifier: acceptAll{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`))
	req.Header.Set("Authorization", "Bearer tra_x")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	var rpc struct {
		ID    json.RawMessage
		Error struct{ Code int }
	}
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || json.Unmarshal(w.Body.Bytes(), &rpc) != nil ||
		string(rpc.ID) != "9" || rpc.Error.Code != CodeUnavailable || strings.Contains(w.Body.String(), "6379") {
		t.Fatalf("%d Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	if len(*calls) != 0 {
		t.Fatalf("the call ran: %v", *calls)
	}
}
