package node

import "github.com/tabrelay/tabrelay/mcp"

// newMCP builds the MCP front end over this node's call path and tokens.
func (n *Node) newMCP() (*mcp.Server, error) {
	return mcp.NewServer(mcp.Config{
		PublicURL: n.cfg.PublicURL, ResourceMetadataURL: n.oauth.ResourceMetadataURL(), Version: n.cfg.Version,
		Bundle: n.cfg.Bundle, Verifier: n.oauth, Caller: n.caller, Events: n.events, JSONWait: n.cfg.JSONWait,
		KeepAlive:      n.cfg.KeepAlive,
		Metrics:        mcp.NewMetrics(n.registry),
		AllowedOrigins: n.cfg.AllowedOrigins, Logger: n.log,
	})
}
