package tests

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHandshakeHostHearsListChangesOnACallStream (issue 24 item 12): a
// handshake-era host has no stream of its own (GET / is 405), so the
// relay says list changes on the stream of a call the host waits for.
// The official Go client, initialized at 2025-11-25, is promised
// tools.listChanged and no resource subscriptions (no channel ever
// carries a resource update); while its wait call runs, the tab's
// permissions-changed reaches its tools/list_changed handler.
func TestHandshakeHostHearsListChangesOnACallStream(t *testing.T) {
	r := startRelay(t, nil)
	b := newBrowser(t)
	tab := b.startTab(r.url, "a", "--focus")
	b.waitSecret()
	r.waitTabs(b.pairing(r.key), 1)
	_, tokens := connect(t, r, b, newHost(t, r.url), "wait", "echo")
	auth := &bearer{token: tokens["access_token"].(string)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()

	toolsChanged := make(chan struct{}, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "tabrelay-e2e-listchanged", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
	})
	transport := &mcp.StreamableClientTransport{Endpoint: r.url + "/", HTTPClient: &http.Client{Transport: auth}, MaxRetries: -1}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("tools capability %+v: a handshake-era host is not promised list changes", caps.Tools)
	}
	if caps.Resources == nil || caps.Resources.Subscribe {
		t.Fatalf("resources capability %+v: subscribe is offered, though no channel carries a resource update", caps.Resources)
	}

	callCtx, stopCall := context.WithCancel(ctx)
	defer stopCall()
	ended := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ms": 600_000}})
		ended <- err
	}()
	// The tab's permissions-changed, until one reaches the handler: the
	// first may come before the call reached the relay.
	eventually(t, func() bool {
		if err := tab.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		select {
		case <-toolsChanged:
			return true
		case err := <-ended:
			t.Fatalf("the wait call ended before any list change reached the host: %v", err)
		case <-time.After(time.Second):
		}
		return false
	}, "notifications/tools/list_changed on the wait call's stream")
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the change: %v", err)
	}
	stopCall()
	<-ended
}
