package tests

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestClusterALiveTabOutlivesItsNodesRestart is issue 17's item 4 with
// real processes: a tab's node is killed (kill -9) and started again on
// the same cluster address, the tab comes back to it and registers with
// its pairing on the other node; when the dead process's lease is purged,
// protoactor on the pairing's node ends every watch at that address, the
// live tab's among them. Calls through the pairing's node go on reaching
// the tab (before the fix they heard "no tab" from the tab grace's end
// until the tab's 20 s confirm).
func TestClusterALiveTabOutlivesItsNodesRestart(t *testing.T) {
	// Leases long enough that the restarted node is up, and its tab back,
	// before the dead process's lease runs out.
	c := startCluster(t, clusterOptions{nodes: 2, env: []string{"RELAY_LEASE_TTL=6s"}})
	home, peer := c.nodes[0], c.nodes[1]
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	// The pairing on home (its first tab was there), its only tab on the
	// peer, which it reaches directly: it waits for that node and comes
	// back to it.
	b := newBrowser(t)
	first := b.startTab(home.url, "tab")
	b.waitSecret()
	tok, err := h.connect(approveByProcess(b, home.url))
	if err != nil {
		t.Fatal(err)
	}
	first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.exited
	eventually(t, func() bool { return home.metric("tabrelay_tabs_connected") == 0 }, "the first tab gone")
	b.startTab(peer.url, "tab")
	eventually(t, func() bool { return home.metric("tabrelay_tabs_connected") == 1 }, "the tab on the peer registered on home (%s)",
		c.perNode("tabrelay_tabs_connected"))
	if got := peer.metric("tabrelay_pairings_active"); got != 0 {
		t.Fatalf("the peer holds %v pairings, want 0 (the pairing is on home)", got)
	}
	whoami := func(what string) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		start := time.Now()
		a, err := home.callTool(ctx, tok.Access, "whoami", nil)
		took := time.Since(start)
		if err != nil || a.data()["tab"] != "tab" {
			t.Fatalf("whoami %s: %v %v (after %v)", what, err, a, took.Round(time.Millisecond))
		}
		return took
	}
	whoami("before the kill")

	peer.kill9()
	peer.restart(20 * time.Second)
	eventually(t, func() bool { return home.metric("tabrelay_cluster_members") == 3 }, "home lists the dead process and the new one")
	eventually(t, func() bool { return home.metric("tabrelay_tabs_connected") == 1 }, "the tab back on the restarted peer, registered on home")
	whoami("after the restart")

	deadline := time.Now().Add(15 * time.Second)
	for home.metric("tabrelay_cluster_members") != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the dead process's lease was not purged: members %s", c.perNode("tabrelay_cluster_members"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	var longest time.Duration
	for purged := time.Now(); time.Since(purged) < 4*time.Second; time.Sleep(100 * time.Millisecond) {
		longest = max(longest, whoami("after the dead process's lease was purged"))
	}
	t.Logf("after the purge, the longest call took %v", longest.Round(time.Millisecond))
	if n := home.metric("tabrelay_tabs_taken_back_total"); n < 1 {
		t.Fatalf("tabs taken back on home: %v, want at least 1 (the purge dropped the live tab)", n)
	}
}
