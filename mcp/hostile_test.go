package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// rpcReply is a JSON-RPC error answer as a host reads it.
type rpcReply struct {
	JSONRPC string
	ID      json.RawMessage
	Error   struct {
		Code    int
		Message string
	}
}

func post(t *testing.T, srv http.Handler, body string) (*httptest.ResponseRecorder, rpcReply) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tra_x")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	var rep rpcReply
	_ = json.Unmarshal(w.Body.Bytes(), &rep)
	return w, rep
}

// TestAScopeRefusalLogsNoArgument (issue 15, item 1): a refused call's
// log line names the action only when the tool declares it; any other
// value of the argument, of any length, stays out of the log (SPEC §9).
func TestAScopeRefusalLogsNoArgument(t *testing.T) {
	var logs bytes.Buffer
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{&[]protocol.CallRequest{}},
		Verifier: acceptAll{}, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	secret := "someone.else@example.com" + strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, action, logged string
	}{
		{"declared action", `"reset"`, `"action":"reset"`},
		{"undeclared action", fmt.Sprintf("%q", secret), `"action":"(not one the tool declares)"`},
		{"not a string", `{"v":"` + secret + `"}`, `"action":"(none named)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			w, _ := post(t, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":{"action":`+tc.action+`}}}`)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"isError":true`) {
				t.Fatalf("not refused: %d %s", w.Code, w.Body.String())
			}
			line := logs.String()
			if !strings.Contains(line, `"outcome":"refused"`) || !strings.Contains(line, tc.logged) {
				t.Fatalf("the refusal's log line does not say %s: %.300s", tc.logged, line)
			}
			if strings.Contains(line, "someone.else") {
				t.Fatalf("the argument's value reached the log: %.300s", line)
			}
		})
	}
}

// TestJSONRPCWrongTypes (issue 15, item 13): an id JSON-RPC does not allow
// is answered with a null id, never echoed; valid JSON that is not a
// request is an invalid request (-32600), only bytes that are not JSON a
// parse error (-32700).
func TestJSONRPCWrongTypes(t *testing.T) {
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{&[]protocol.CallRequest{}},
		Verifier: acceptAll{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		id         string
	}{
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, protocol.ErrBadRequest.RPC, "null"},
		{"array id", `{"jsonrpc":"2.0","id":[1,2],"method":"tools/list"}`, protocol.ErrBadRequest.RPC, "null"},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, protocol.ErrBadRequest.RPC, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, protocol.ErrBadRequest.RPC, "null"},
		{"jsonrpc a number", `{"jsonrpc":2,"id":3,"method":"tools/list"}`, protocol.ErrBadRequest.RPC, "3"},
		{"method a number", `{"jsonrpc":"2.0","id":"a","method":42}`, protocol.ErrBadRequest.RPC, `"a"`},
		{"params a string", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":"x"}`, protocol.ErrInvalidParams.RPC, "4"},
		{"not an object", `42`, protocol.ErrBadRequest.RPC, "null"},
		{"truncated", `{"jsonrpc":"2.0","id":1,`, protocol.ErrParse.RPC, "null"},
		{"not JSON", `not json`, protocol.ErrParse.RPC, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, rep := post(t, srv, tc.body)
			if w.Code != http.StatusBadRequest || rep.JSONRPC != "2.0" || rep.Error.Code != tc.code || string(rep.ID) != tc.id {
				t.Fatalf("%d %s, want 400 code %d id %s", w.Code, w.Body.String(), tc.code, tc.id)
			}
		})
	}
}

// TestABodyThatStopsArrivingIsATimeout (issue 15, item 13): a body that
// stops arriving until the server's read deadline is answered 408 as the
// timeout it is, not 413; a body over the limit is still 413.
func TestABodyThatStopsArrivingIsATimeout(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	srv, err := NewServer(Config{PublicURL: "http://" + ts.Listener.Addr().String(), Bundle: protocol.ProbeBundle(),
		Caller: stubCaller{&[]protocol.CallRequest{}}, Verifier: acceptAll{}, MaxBody: 1024,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Config.ReadTimeout = 300 * time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		name   string
		length int    // the Content-Length announced
		sent   string // what of the body is sent before the client stalls
		status int
		says   string
	}{
		{"stalled body", 200, `{"jsonrpc":"2.0","id":1,`, http.StatusRequestTimeout, "timeout"},
		{"oversized body", 4096, strings.Repeat(" ", 2048), http.StatusRequestEntityTooLarge, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer tra_x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				ts.Listener.Addr(), tc.length, tc.sent)
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var rep rpcReply
			if resp.StatusCode != tc.status || json.Unmarshal(raw, &rep) != nil || rep.Error.Code != protocol.ErrBadRequest.RPC ||
				string(rep.ID) != "null" || !strings.Contains(rep.Error.Message, tc.says) {
				t.Fatalf("%d %s, want %d saying %q", resp.StatusCode, raw, tc.status, tc.says)
			}
		})
	}
}
