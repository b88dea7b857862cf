package node

import (
	"context"
	"errors"
	"time"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// newMCP builds the MCP front end over this node's call path and tokens.
func (n *Node) newMCP() (*mcp.Server, error) {
	return mcp.NewServer(mcp.Config{
		PublicURL: n.cfg.PublicURL, ResourceMetadataURL: n.oauth.ResourceMetadataURL(), Version: n.cfg.Version,
		Bundle: n.cfg.Bundle, Verifier: verifier{n.oauth}, Caller: caller{n}, Guard: guard{n.oauth}, Events: n.events,
		Metrics:        mcp.NewMetrics(n.registry),
		AllowedOrigins: n.cfg.AllowedOrigins, Logger: n.log,
		CancelElsewhere: n.cancelElsewhere(),
	})
}

// verifier adapts the authorization server to the MCP front end.
type verifier struct{ s *oauth.Server }

func (v verifier) Verify(ctx context.Context, token string) (mcp.Grant, error) {
	g, err := v.s.VerifyScoped(ctx, token) // one walk of the records, or none (issue 13)
	if errors.Is(err, oauth.ErrInvalidToken) {
		return mcp.Grant{}, mcp.ErrInvalidToken
	}
	if err != nil {
		return mcp.Grant{}, err
	}
	return mcp.Grant{ConnectionID: g.ConnectionID, ClientName: g.ClientName, Host: g.Host, PairingID: g.PairingID,
		Scope: g.Scope, ScopeRead: true}, nil
}

// caller adapts the node's call path to the MCP front end.
type caller struct{ n *Node }

func (c caller) CallTool(ctx context.Context, call mcp.ToolCall, sink func(mcp.Event)) protocol.Outcome {
	var events func(actors.Event)
	if sink != nil {
		events = func(e actors.Event) { sink(mcpEvent(e)) }
	}
	return c.n.Call(ctx, actors.CallRequest{Pairing: call.Pairing, Tool: call.Tool, Arguments: call.Arguments,
		Connection: call.Connection}, events)
}

func mcpEvent(e actors.Event) mcp.Event {
	switch e.Kind {
	case actors.EventProgress:
		return mcp.Event{Kind: "progress", Progress: e.Progress, Total: e.Total, Message: e.Message}
	case actors.EventLog:
		return mcp.Event{Kind: "log", Level: e.Level, Data: e.Data}
	}
	if e.Asking {
		return mcp.Event{Kind: "asking"}
	}
	return mcp.Event{Kind: "answered"}
}

// permissionsWait bounds how long a tool list waits for the tab (SPEC §4:
// a short timeout, then the bundled catalogue).
const permissionsWait = 1500 * time.Millisecond

func (c caller) Permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string) (map[string]string, bool) {
	return c.n.caller.Permissions(ctx, pairing, conn, tools, permissionsWait)
}

// guard adapts the authorization server's scopes to the MCP front end.
type guard struct{ s *oauth.Server }

func (g guard) Scope(ctx context.Context, gr mcp.Grant) ([]protocol.ScopeEntry, error) {
	return g.s.ResolvedScope(ctx, gr.ConnectionID)
}

// cancelHint is the bus kind of a host's cancellation of a call that runs
// on another node: its payload is the call's key (mcp.Server.CancelLocal),
// not a pairing. The events' kinds are bits below it.
const cancelHint uint8 = 0x80

// cancelElsewhere tells the other nodes of a cancelled call, or is nil on
// a single node.
func (n *Node) cancelElsewhere() func(key string) {
	if n.cluster == nil {
		return nil
	}
	return func(key string) { n.cluster.Bus.Publish(cancelHint, key) }
}
