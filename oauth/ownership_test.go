package oauth_test

import (
	"context"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestAnotherBrowserCannotTouchAConnection: a tab's requests name
// connections by id, and ids are not secrets (they are in logs and the
// admin API): a tab of another browser that names one can neither see it,
// forget it, nor change its scope (docs/security.md, "a malicious tab").
func TestAnotherBrowserCannotTouchAConnection(t *testing.T) {
	h := newHarness(t)
	client := h.register("Owned Client", testCB)
	w := h.startConnect(client, testCB)
	ctx := context.Background()
	info, err := h.as.Approve(ctx, testPairing, testAddr, w.code, []protocol.ScopeEntry{{Tool: "whoami"}})
	if err != nil {
		t.Fatal(err)
	}
	const other = "pair_other"
	if err := h.as.Forget(ctx, other, info.ID); requestErrCode(err) != protocol.ErrCodeNotFound {
		t.Errorf("Forget from another browser = %v, want %s", err, protocol.ErrCodeNotFound)
	}
	if _, err := h.as.SetScope(ctx, other, info.ID, []protocol.ScopeEntry{{Tool: "counter"}}); requestErrCode(err) != protocol.ErrCodeNotFound {
		t.Errorf("SetScope from another browser = %v, want %s", err, protocol.ErrCodeNotFound)
	}
	if list, err := h.as.Connections(ctx, other); err != nil || len(list) != 0 {
		t.Errorf("another browser's connections: %v %v", list, err)
	}
	scope, err := h.as.ResolvedScope(ctx, info.ID)
	if err != nil || !protocol.Allows(scope, "whoami", "") || protocol.NamesTool(scope, "counter") {
		t.Errorf("the connection's scope after the other browser's tries: %v %v", scope, err)
	}
	if list, err := h.as.Connections(ctx, testPairing); err != nil || len(list) != 1 {
		t.Errorf("its own browser's connections: %v %v", list, err)
	}
}
