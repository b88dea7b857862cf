// Package httpx holds what the relay's HTTP front ends (MCP, OAuth, the
// admin API, the node's probes) do alike: one JSON writer and one reader
// of a bearer token. It knows no route, and what an error says is the
// error table's (protocol/errors.go), not this package's.
package httpx

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tabrelay/tabrelay/protocol"
)

// WriteJSON answers v as JSON with status. No JSON answer of the relay may
// be kept by a cache: Cache-Control no-store, and Pragma no-cache for
// HTTP/1.0 caches (RFC 6749 §5.1 asks both of a token response).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteOAuthError answers e as an OAuth error object (RFC 6749 §5.2, RFC
// 6750 §3): the authorization server's routes, and the MCP route's 401.
func WriteOAuthError(w http.ResponseWriter, e *protocol.RelayError) {
	WriteJSON(w, e.Status, map[string]string{"error": e.OAuth, "error_description": e.Message})
}

// Bearer reads the token of an Authorization: Bearer header, the scheme
// in any case (RFC 6750 §2.1, RFC 9110 §11.1); false when there is none.
func Bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
