package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tabrelay/tabrelay/protocol"
)

// stubCaller answers every call at once and remembers what reached it:
// the fuzz test is about the front end's decoding and guard, not the path
// behind it.
type stubCaller struct{ got *[]protocol.CallRequest }

func (c stubCaller) Call(_ context.Context, call protocol.CallRequest, _ func(protocol.CallEvent)) protocol.Outcome {
	*c.got = append(*c.got, call)
	return protocol.Outcome{Kind: protocol.Answered, Result: protocol.TabResult{Data: json.RawMessage(`"ok"`)}}
}

func (stubCaller) Permissions(context.Context, string, protocol.Connection, []string) (map[string]string, bool) {
	return nil, false
}

// acceptAll takes every token for connection c1, whose scope grants
// counter's get.
type acceptAll struct{}

func (acceptAll) Verify(context.Context, string) (protocol.Grant, error) {
	return protocol.Grant{ConnectionID: "c1", PairingID: "p1", Scope: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}, nil
}

// FuzzServeHTTP sends arbitrary bodies and headers of both eras (the
// stateless era's Mcp-Method and Mcp-Name, the protocol version, the
// content type): the front end must
// answer every one with a status of its own (never panic, never 5xx) and
// never let a call past the guard that the scope does not grant, nor
// arguments a browser's socket would refuse (bytes that are no UTF-8).
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"counter","arguments":{"action":"reset","ACTION":"get"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"ui://demo/view"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"counter","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get","action":"reset"}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"counter\",\"arguments\":{\"action\":\"get\",\"note\":\"a\xffb\xed\xa0\x80\"}}}",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add(seed, "2026-07-28", "tools/call", "counter", "application/json")
		f.Add(seed, "2025-06-18", "", "", "application/json; charset=utf-8")
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter"}}`, "2026-07-28", "tools/list", "notes", "text/plain")
	var got []protocol.CallRequest
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{&got},
		Verifier: acceptAll{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body, version, method, name, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tra_x")
		req.Header.Set("Accept", "application/json")
		if validHeader(version) && validHeader(method) && validHeader(name) && validHeader(contentType) {
			req.Header.Set("MCP-Protocol-Version", version)
			req.Header.Set("Mcp-Method", method)
			req.Header.Set("Mcp-Name", name)
			req.Header.Set("Content-Type", contentType)
		}
		got = got[:0]
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("status %d for %q", w.Code, body)
		}
		g, _ := acceptAll{}.Verify(context.Background(), "")
		scope := g.Scope
		for _, call := range got {
			// What reaches the tab is what the tab reads: its exact keys.
			var args map[string]json.RawMessage
			var action string
			if json.Unmarshal(call.Arguments, &args) != nil || json.Unmarshal(args["action"], &action) != nil {
				action = ""
			}
			if !protocol.Allows(scope, call.Tool, action) {
				t.Fatalf("a call outside the scope reached the tab: %s %s from %q", call.Tool, call.Arguments, body)
			}
			if !utf8.Valid(call.Arguments) {
				t.Fatalf("arguments that are no UTF-8 reached the tab: %q from %q", call.Arguments, body)
			}
		}
	})
}

func validHeader(v string) bool {
	for _, r := range v {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}
