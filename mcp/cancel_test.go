package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/protocol"
)

// blockingCaller runs each call until its context ends, and says so; it
// hands each call's context to started, when set.
type blockingCaller struct {
	ended   chan string
	started chan context.Context
}

func (c blockingCaller) Call(ctx context.Context, call protocol.CallRequest, _ func(protocol.CallEvent)) protocol.Outcome {
	if c.started != nil {
		c.started <- ctx
	}
	<-ctx.Done()
	c.ended <- call.Connection.ID
	return protocol.Outcome{Kind: protocol.Cancelled}
}

func (blockingCaller) Permissions(context.Context, string, protocol.Connection, []string) (map[string]string, bool) {
	return nil, false
}

// tokenConnections verifies token "c1" as connection c1, "c2" as c2.
type tokenConnections struct{}

func (tokenConnections) Verify(_ context.Context, token string) (protocol.Grant, error) {
	if token != "c1" && token != "c2" {
		return protocol.Grant{}, protocol.ErrInvalidToken
	}
	return protocol.Grant{ConnectionID: token, PairingID: "p1", Scope: []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}}}, nil
}

// TestNotificationsCancelledEndTheCall: a host's notifications/cancelled
// naming its call's request id ends that call (the caller's context, which
// tells the tab); one from another connection, or naming another id, ends
// nothing; on a cluster, a call that runs elsewhere is hinted to the
// other nodes.
func TestNotificationsCancelledEndTheCall(t *testing.T) {
	c := blockingCaller{ended: make(chan string, 1), started: make(chan context.Context, 1)}
	bus := &hints{}
	ts := httptest.NewUnstartedServer(nil)
	srv, err := NewServer(Config{PublicURL: "http://" + ts.Listener.Addr().String(), Bundle: protocol.ProbeBundle(),
		Caller: c, Verifier: tokenConnections{}, Events: events.New(bus)})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	defer ts.Close()
	post := func(token, body string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body) // a call's stream ends with its result
		resp.Body.Close()
		return resp.StatusCode
	}
	done := make(chan int, 1)
	go func() {
		done <- post("c1", `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`)
	}()
	// Wait until the call runs, then cancel as others would first.
	var call context.Context
	select {
	case call = <-c.started:
	case <-time.After(testwait.Patience):
		t.Fatal("the call did not start")
	}
	cancel := func(token, id string) int {
		return post(token, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"stop"}}`)
	}
	if s := cancel("c2", `"call-7"`); s != http.StatusAccepted {
		t.Fatalf("another connection's cancel: %d, want 202", s)
	}
	if s := cancel("c1", `"call-8"`); s != http.StatusAccepted {
		t.Fatalf("a cancel naming another id: %d, want 202", s)
	}
	if s := cancel("c1", `{"x":1}`); s != http.StatusAccepted {
		t.Fatalf("a cancel naming no id: %d, want 202", s)
	}
	// A cancel is acted on before it is answered 202: one that ended the
	// call has ended its context by now.
	if call.Err() != nil {
		t.Fatal("the call ended on a cancel that did not name it")
	}
	elsewhere := bus.cancelled()
	if len(elsewhere) != 2 || elsewhere[0] != `c2 "call-7"` || elsewhere[1] != `c1 "call-8"` {
		t.Fatalf("hinted to the cluster: %q; want the two well-formed cancels that matched nothing here", elsewhere)
	}
	if s := cancel("c1", `"call-7"`); s != http.StatusAccepted {
		t.Fatalf("the host's cancel: %d, want 202", s)
	}
	select {
	case who := <-c.ended:
		if who != "c1" {
			t.Fatalf("the call of %s ended", who)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host's notifications/cancelled did not end its call")
	}
	<-done
	if n := srv.calls.count(); n != 0 {
		t.Fatalf("%d calls still registered after they ended", n)
	}
}

// TestACancelNamingTwoCallsEndsNeither: two sessions of one connection
// run calls of the same request id; a cancel naming it is ambiguous and
// ends neither, and once one ended, it names the other.
func TestACancelNamingTwoCallsEndsNeither(t *testing.T) {
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(),
		Caller: blockingCaller{}, Verifier: tokenConnections{}})
	if err != nil {
		t.Fatal(err)
	}
	id := []byte(`7`)
	first, _, doneFirst := srv.calls.start(context.Background(), "c1", id)
	second, _, doneSecond := srv.calls.start(context.Background(), "c1", id)
	defer doneSecond()
	srv.cancelled(protocol.Grant{ConnectionID: "c1"}, []byte(`{"requestId":7}`))
	if first.Err() != nil || second.Err() != nil {
		t.Fatal("an ambiguous cancel ended a call")
	}
	doneFirst()
	srv.cancelled(protocol.Grant{ConnectionID: "c1"}, []byte(`{"requestId":7}`))
	if second.Err() == nil {
		t.Fatal("the cancel naming the one call left did not end it")
	}
}

// hints is a cluster's bus as one node sees it: what it told the others.
type hints struct {
	mu   sync.Mutex
	sent []string
	kind []events.Kind
}

func (h *hints) Publish(kind events.Kind, subject string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent, h.kind = append(h.sent, subject), append(h.kind, kind)
}

// cancelled is the keys of the calls it hinted cancelled.
func (h *hints) cancelled() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []string
	for i, k := range h.kind {
		if k == events.CallCancelled {
			keys = append(keys, h.sent[i])
		}
	}
	return keys
}
