package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestMethodsAreServedInTheirErasOnly: every row of serverMethods answers
// in the eras it names and is not found in the others (404 with -32601 in
// the modern era, a JSON-RPC -32601 in the handshake era), as is a method
// no row names.
func TestMethodsAreServedInTheirErasOnly(t *testing.T) {
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(),
		Caller: stubCaller{&[]protocol.CallRequest{}}, Verifier: acceptAll{}})
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]eras{"no/such/method": 0}
	for name, m := range serverMethods {
		methods[name] = m.eras
	}
	for name, served := range methods {
		for _, e := range []era{{version: LatestLegacy}, {modern: true, version: ModernVersion}} {
			notFound := notFoundIn(t, srv, name, e)
			if notFound == served.serve(e) {
				t.Errorf("%s in era %s: not found %v, served by its row %v", name, e.version, notFound, served.serve(e))
			}
		}
	}
}

// notFoundIn posts method in era e and says whether it was not found.
func notFoundIn(t *testing.T, srv http.Handler, method string, e era) bool {
	t.Helper()
	meta := `{}`
	if e.modern {
		meta = `{"io.modelcontextprotocol/protocolVersion":"` + e.version + `","io.modelcontextprotocol/clientCapabilities":{}}`
	}
	params := `{"protocolVersion":"` + e.version + `","name":"counter","uri":"ui://probe/view","arguments":{"action":"get"},"_meta":` + meta + `}`
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	ctx, cancel := context.WithCancel(context.Background())
	if method == "subscriptions/listen" {
		cancel() // the stream ends at once: its acknowledgement is enough
	}
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tra_x")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", e.version)
	req.Header.Set("Mcp-Method", method)
	if want, named := nameOf(method, paramsMeta{Name: "counter", URI: "ui://probe/view"}); named {
		req.Header.Set("Mcp-Name", want)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	found := !strings.Contains(w.Body.String(), `"code":-32601`)
	if e.modern && found == (w.Code == http.StatusNotFound) {
		t.Errorf("%s in the modern era: status %d with %.200s", method, w.Code, w.Body.String())
	}
	return !found
}
