package node

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWhileTheStoreIsAwayRequestsGetOneSentence: 503 with Retry-After and
// one sentence; an MCP request gets a JSON-RPC error carrying its own id;
// liveness and readiness still answer.
func TestWhileTheStoreIsAwayRequestsGetOneSentence(t *testing.T) {
	reached := 0
	h := guardStore(func() bool { return false }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`)))
	var rpc struct {
		ID    json.RawMessage
		Error struct{ Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &rpc); err != nil || rec.Code != http.StatusServiceUnavailable ||
		string(rpc.ID) != "7" || rpc.Error.Message != StoreUnreachable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("MCP while the store is away: %d %s", rec.Code, rec.Body.String())
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/token", strings.NewReader("grant_type=refresh_token")))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), StoreUnreachable) {
		t.Fatalf("token while the store is away: %d %s", rec.Code, rec.Body.String())
	}
	for _, path := range []string{"/health", "/ready"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	if reached != 2 {
		t.Fatalf("%d requests reached the routes, want /health and /ready only", reached)
	}
}
