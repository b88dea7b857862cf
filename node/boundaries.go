package node

import (
	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/placement"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// The boundaries between the parts node wires, held at compile time
// rather than by comments: the MCP front end calls the actors directly
// (mcp.Caller is actors.Caller, drain rule and all); the tab endpoint
// declares what it needs of the actors (tabsocket.Tabs, Tab, Outbox) and
// imports none of them; placement's lookup is the cluster's router.
var (
	_ mcp.Caller    = (*actors.Caller)(nil)
	_ tabsocket.Tab = (*actors.Tab)(nil)
	_ actors.Outbox = tabsocket.Outbox(nil)
	_ actors.Router = (*placement.Lookup)(nil)
)

// TabHub hands the tab endpoint's proven sockets to hub.
func TabHub(hub *actors.Hub) tabsocket.Tabs { return tabHub{hub} }

type tabHub struct{ hub *actors.Hub }

func (h tabHub) Accept(info tabsocket.TabInfo, out tabsocket.Outbox) tabsocket.Tab {
	return h.hub.Accept(actors.TabInfo(info), out)
}
