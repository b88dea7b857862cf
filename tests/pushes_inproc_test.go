//go:build !race

package tests

import (
	"testing"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestInProcessConnectionsArePushedAcrossNodes: a tab of the browser on
// another node than the one whose tab approved hears the new connection
// too (over the cluster's event bus).
func TestInProcessConnectionsArePushedAcrossNodes(t *testing.T) {
	nodes := startMembers(t, redistest.Start(t), 2)
	secret := randomString()[:43]
	onA, onB := openPushedTab(t, nodes[0].url, secret), openPushedTab(t, nodes[1].url, secret)
	h := newHost(t, nodes[0].url)
	h.register()
	f := h.authorize()
	onA.send(map[string]any{"type": protocol.TypeApprove, "ref": "a1", "code": f.code, "scope": []map[string]any{{"tool": "whoami"}}})
	conn := onA.next(protocol.TypeDone, "a1")["connection"].(map[string]any)["id"].(string)
	if ids := pushedIDs(onB.next(protocol.TypeConnections, "")); len(ids) != 1 || ids[0] != conn {
		t.Fatalf("the tab on the other node was pushed %v, want [%s]", ids, conn)
	}
}
