//go:build !race

package tests

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestInProcessALiveTabOutlivesAPeerRestartedOnItsAddress is issue 17's
// item 4: a node died (kill -9) and came back on the same cluster
// address, and a tab on it registered with its pairing on another node;
// when the dead member's lease was purged, protoactor on the pairing's
// node ended every watch at that address, the live tab's among them, and
// calls heard "no tab" until the tab's 20 s confirm. Here the dead member
// is a lease in Redis ("ghost") at the address of node b, which holds the
// tab; the pairing lives on node a. The purge drops the tab; the pairing
// asks it whether it lives and takes it back after a few asks, 0.5 s of
// a's clock apart, not the confirm's 20 s (b's clock, which runs the tab's
// confirm, never moves).
func TestInProcessALiveTabOutlivesAPeerRestartedOnItsAddress(t *testing.T) {
	srv := redistest.Start(t)
	nodes := startMembers(t, srv, 2)
	a, b := nodes[0], nodes[1]
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node a:\n%s\nnode b:\n%s", a.logs.String(), b.logs.String())
		}
	})

	// The pairing on a (its first tab was there), its only tab now on b.
	br := newBrowser(t)
	first := br.startTab(a.url, "on-a")
	br.waitSecret()
	pairing := br.pairing(a.key)
	a.waitTabs(pairing, 1)
	first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.exited
	a.waitTabs(pairing, 0)
	br.startTab(b.url, "on-b")
	a.waitTabs(pairing, 1)
	if got := relayGauge(t, a, "tabrelay_pairings_active"); got != 1 {
		t.Fatalf("node a holds %v pairings, want 1 (the tab's pairing)", got)
	}

	// A dead member with b's address: it joins the member list, its lease
	// runs out, and it is purged.
	rdb := srv.Client()
	ctx := context.Background()
	bAddr := addressBesides(t, srv, pairing)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	rdb.ZAdd(ctx, "t:{members}:leases", goredis.Z{Score: float64(now.Add(2 * time.Second).UnixMilli()), Member: "ghost"})
	rdb.HSet(ctx, "t:{members}:addr", "ghost", bAddr)
	rdb.Publish(ctx, "t:members:changed", "joined ghost")
	eventually(t, func() bool { return relayGauge(t, a, "tabrelay_cluster_members") == 3 }, "node a lists the ghost")
	eventually(t, func() bool { return relayGauge(t, a, "tabrelay_cluster_members") == 2 }, "the ghost purged")

	// protoactor took the purge for b's actors stopping: the pairing
	// dropped its live tab, and asks it whether it lives. protoactor goes
	// on cutting a's link to b's address for a while (up to 2.5 s under
	// load): an ask it cuts does not count, and a cut that ends the
	// pairing's watch of the tab once it is back drops the tab again, to
	// be asked again. A call made now reaches the tab.
	a.waitTabs(pairing, 0)
	done := make(chan callResult, 1)
	go func() { done <- a.call(ctx, pairing, "conn-1", "whoami", map[string]any{}) }()
	var res callResult
	for answered := false; !answered; {
		askUntilBack(t, a, pairing)
		eventually(t, func() bool {
			select {
			case res = <-done:
				answered = true
				return true
			default:
				return !holds(a, pairing)
			}
		}, "the call answered, or the tab dropped again")
	}
	if res.outcome.Kind != protocol.Answered {
		t.Fatalf("a call after the purge ended %v: %+v", res.outcome.Kind, res.result)
	}
	if got := res.data(t)["tab"]; got != "on-b" {
		t.Fatalf("answered by %v, want on-b", got)
	}
	if n := counterValue(t, a, "tabrelay_tabs_taken_back_total"); n < 1 {
		t.Fatalf("tabs taken back %v, want at least 1", n)
	}
}

// askUntilBack moves a's clock to the pairing's next ask of its lost tab
// (they are 0.5 s apart), one ask at a time, until the pairing holds the
// tab again: each time once the pairing heard what became of the ask
// (the tab answered and was taken back, or the link cut it), as a real
// clock would have moved only by then. protoactor can also lose an ask
// without a word (a cut that races the ask's watch: the watch reaches an
// endpoint watcher that has just stopped); the pairing counts such an
// ask, and the clock moves on after askSilence with no word of it. The
// pairing forgets the tab after three such asks in a row, and stops
// asking after 20 s of its clock.
func askUntilBack(t *testing.T, a *relay, pairing string) {
	t.Helper()
	for asks := 0; !holds(a, pairing); asks++ {
		if asks == 40 {
			t.Fatalf("the tab not back after %d asks", asks)
		}
		cuts := counterValue(t, a, "tabrelay_tab_asks_cut_total")
		back := counterValue(t, a, "tabrelay_tabs_taken_back_total")
		a.clock.Advance(500 * time.Millisecond)
		testwait.Within(askSilence, func() bool {
			return counterValue(t, a, "tabrelay_tab_asks_cut_total") > cuts ||
				counterValue(t, a, "tabrelay_tabs_taken_back_total") > back
		})
	}
}

// askSilence is how long askUntilBack waits on the real clock for word of
// an ask before it takes the ask as unanswered.
const askSilence = 2 * time.Second

// holds reports whether the pairing on a holds a tab.
func holds(a *relay, pairing string) bool {
	s, err := a.node.Inspect(context.Background(), pairing)
	return err == nil && len(s.Tabs) == 1
}

// addressBesides returns the cluster address of the member that the
// pairing's record does not name.
func addressBesides(t *testing.T, srv *redistest.Server, pairing string) string {
	t.Helper()
	ctx := context.Background()
	rdb := srv.Client()
	rec, err := rdb.Get(ctx, "t:{placement}:at:"+pairing).Result()
	if err != nil {
		t.Fatalf("the pairing's record: %v", err)
	}
	home := strings.Fields(rec)[0]
	addrs, err := rdb.HGetAll(ctx, "t:{members}:addr").Result()
	if err != nil || len(addrs) != 2 {
		t.Fatalf("member addresses %v: %v", addrs, err)
	}
	for id, addr := range addrs {
		if id != home {
			return addr
		}
	}
	t.Fatal("no other member")
	return ""
}

func relayGauge(t *testing.T, r *relay, name string) float64 {
	t.Helper()
	mfs, err := r.node.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
