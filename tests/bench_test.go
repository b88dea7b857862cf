package tests

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/protocol"
)

// BenchmarkCallRoundTrip measures one tool call through node.Call, the
// pairing actor, the tab socket, a headless tab over a real WebSocket and back,
// encoded as the host would read it.
func BenchmarkCallRoundTrip(b *testing.B) {
	r, pairing := benchTab(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := r.call(ctx, pairing, "c1", "echo", map[string]any{"value": i}); res.outcome.Kind != protocol.Answered {
			b.Fatalf("outcome %v", res.outcome.Kind)
		}
	}
}

// BenchmarkCallRoundTripParallel is the same with concurrent callers on
// one browser's tab.
func BenchmarkCallRoundTripParallel(b *testing.B) {
	r, pairing := benchTab(b)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := r.call(ctx, pairing, "c1", "echo", map[string]any{"value": 1}); res.outcome.Kind != protocol.Answered {
				b.Fatalf("outcome %v", res.outcome.Kind)
			}
		}
	})
}

// benchTab connects a headless tab in this process over a real socket. It
// keeps its secret in memory: a tab process with a secret file claims each
// call id in a file (about 2 ms of disk per call here), which would measure
// the disk, not the relay.
func benchTab(b *testing.B) (*relay, string) {
	r, tab := benchHeadless(b)
	return r, tab.Pairing()
}

func benchHeadless(b *testing.B) (*relay, *headless.Tab) {
	r := startRelay(b, nil)
	tab := runHeadless(b, headless.Options{Relay: r.url, Name: "bench"})
	r.waitTabs(tab.Pairing(), 1)
	return r, tab
}

// runHeadless runs a quiet headless tab in this process (its secret in
// memory) until the test ends, and returns once it is connected.
func runHeadless(b testing.TB, opts headless.Options) *headless.Tab {
	b.Helper()
	opts.Origin = origin
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	tab, err := headless.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tab.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	if err := tab.WaitConnected(ctx); err != nil {
		b.Fatal(err)
	}
	return tab
}

// BenchmarkMCPToolsCall measures a host's tools/call over HTTP (JSON
// answer): the bearer check, the pairing actor, the tab's socket and back.
func BenchmarkMCPToolsCall(b *testing.B) {
	r, tab := benchHeadless(b)
	benchMCPToolsCall(b, r, tab)
}

// benchMCPToolsCall connects a host to tab's browser through r and times
// its tools/call requests.
func benchMCPToolsCall(b *testing.B, r *relay, tab *headless.Tab) {
	h := newHost(b, r.url)
	h.register()
	f := h.authorize()
	approve := protocol.Approve{Envelope: protocol.Envelope{Type: protocol.TypeApprove, Ref: "a1"}, Code: f.code,
		Scope: []protocol.ScopeEntry{{Tool: "echo", Actions: []string{"*"}}}}
	if _, err := tab.Ask(context.Background(), approve, "a1"); err != nil {
		b.Fatal(err)
	}
	st := h.status(f)
	_, tokens := h.exchange(f, h.codeFrom(f, st["redirect"]))
	c := &mcpClient{t: b, url: r.url + "/", token: tokens["access_token"].(string)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": i}}, false, nil)
		if rep.result == nil {
			b.Fatalf("%d %v", rep.status, rep.err)
		}
	}
}
