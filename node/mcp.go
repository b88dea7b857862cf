package node

import (
	"context"
	"time"

	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/protocol"
)

// newMCP builds the MCP front end over this node's call path and tokens.
func (n *Node) newMCP() (*mcp.Server, error) {
	return mcp.NewServer(mcp.Config{
		PublicURL: n.cfg.PublicURL, ResourceMetadataURL: n.oauth.ResourceMetadataURL(), Version: n.cfg.Version,
		Bundle: n.cfg.Bundle, Verifier: n.oauth, Caller: n, Events: n.events, JSONWait: n.cfg.JSONWait,
		KeepAlive:      n.cfg.KeepAlive,
		Metrics:        mcp.NewMetrics(n.registry),
		AllowedOrigins: n.cfg.AllowedOrigins, Logger: n.log,
	})
}

// permissionsWait bounds how long a tool list waits for the tab (SPEC §4:
// a short timeout, then the bundled catalogue).
const permissionsWait = 1500 * time.Millisecond

// Permissions asks the browser's tab what the person's settings make of
// tools for conn (mcp.Caller), waiting at most permissionsWait.
func (n *Node) Permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string) (map[string]string, bool) {
	return n.caller.Permissions(ctx, pairing, conn, tools, permissionsWait)
}
