package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestClusterSigningKeyRotation is issue 15's defect 8 on real processes:
// the signing key of a running cluster of two nodes on Redis is rotated as
// docs/security.md §7 and the runbook say. The nodes restart one by one
// with the new key, the old one in RELAY_SIGNING_KEY_PREVIOUS; the
// person's tab reconnects by itself each time, and the connection approved
// before the rotation goes on calling it with the token it had, which
// refreshes. Then the previous key is dropped, node by node again: the
// tab, re-keyed by its hellos, is still the pairing it was and the
// refreshed token reaches it; what was left under the old key only ends:
// the token issued before the rotation, and the refresh token of a host
// that did not refresh meanwhile, are refused, and a browser that said no
// hello during the rotation comes back as a new pairing.
func TestClusterSigningKeyRotation(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 2})
	entry := c.nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The person's browser with its tab through the balancer, connected
	// to a host; and a browser whose tab closes before the rotation.
	b, _, h, tok := connectedBrowser(t, c, "tab")
	away, awayTab, awayHost, awayTok := connectedBrowser(t, c, "away")
	awayTab.cmd.Process.Signal(syscall.SIGTERM)
	<-awayTab.exited

	oldKey, _ := base64.StdEncoding.DecodeString(c.key)
	pairing, awayPairing := b.pairing(oldKey), away.pairing(oldKey)
	whoami := func(what, access string) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			a, err := entry.callTool(ctx, access, "whoami", nil)
			if err == nil && a.data()["tab"] == "tab" {
				return
			}
			last = a.String()
			if err != nil {
				last = err.Error()
			}
		}
		t.Fatalf("whoami %s: not answered by the tab; last: %s", what, last)
	}
	// rolling restarts the nodes one by one with the cluster's keys as they
	// are now; after each, the tab is back and access reaches it.
	rolling := func(what, access string) {
		t.Helper()
		for _, n := range c.nodes {
			if _, err := n.terminate(c.opts.grace + 5*time.Second); err != nil {
				t.Errorf("node %d exited with %v after SIGTERM", n.i, err)
			}
			n.restart(30 * time.Second)
			c.waitMembers(len(c.nodes), 20*time.Second)
			whoami(fmt.Sprintf("%s, node %d restarted", what, n.i), access)
		}
	}
	whoami("before the rotation", tok.Access)

	// The rotation: the new key first, the old one still kept.
	newKey := make([]byte, 32)
	rand.Read(newKey)
	c.key, c.previous = base64.StdEncoding.EncodeToString(newKey), base64.StdEncoding.EncodeToString(oldKey)
	rolling("with the new key and the old one as previous", tok.Access)
	if n, _ := c.sumMetric("tabrelay_tab_pairings_rekeyed_total"); n < 1 {
		t.Fatalf("pairings re-keyed: %v, want the tab's at least (per node: %s)", n, c.perNode("tabrelay_tab_pairings_rekeyed_total"))
	}
	if node := c.recordOf(pairing); node < 0 {
		t.Fatalf("no placement record of pairing %s (got %d): the tab is not the pairing it was", pairing, node)
	}
	if node := c.recordOf(b.pairing(newKey)); node != -1 {
		t.Fatalf("a pairing under the new key's id is placed on node %d: the tab became a new pairing", node)
	}
	refreshed, err := h.refreshVia(entry.http, tok.Refresh)
	if err != nil || refreshed.status != http.StatusOK || refreshed.access() == "" {
		t.Fatalf("refresh of a token issued under the old key: %v %+v", err, refreshed)
	}
	whoami("with the refreshed token", refreshed.access())

	// The old key dropped.
	c.previous = ""
	rolling("with the old key dropped, by the refreshed token", refreshed.access())
	if a, err := entry.callTool(ctx, tok.Access, "whoami", nil); err != nil || a.status != http.StatusUnauthorized {
		t.Fatalf("the access token issued under the dropped key: %v %s, want 401", err, a)
	}
	if r, err := awayHost.refreshVia(entry.http, awayTok.Refresh); err != nil || r.status != http.StatusBadRequest {
		t.Fatalf("a refresh token under the dropped key: %v %+v, want 400", err, r)
	}
	away.startTab(c.public, "away")
	eventually(t, func() bool { return c.recordOf(away.pairing(newKey)) >= 0 }, "the away browser's tab placed under its new pairing")
	if node := c.recordOf(awayPairing); node >= 0 {
		t.Fatalf("the away browser's old pairing is placed on node %d", node)
	}
}
