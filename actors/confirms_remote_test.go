//go:build !race

// Two actor systems in one process, each with protoactor's remote:
// starting a remote sets grpc's process-wide logger, a data race of the
// library (reference/protoactor.md), so these run without the race
// detector (make test runs them in its second pass, with
// tests/cluster_inproc_test.go).

package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// remoteSystem starts an actor system with remote on a free loopback port.
func remoteSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	system := NewSystem(slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false); system.Shutdown() })
	return system
}

// countedConfirms stands where a node's confirms are reached, keeps the
// TabConfirms that arrive and hands them to the node's confirms.
type countedConfirms struct {
	*confirms
	confirmLog
}

func (c *countedConfirms) SendUserMessage(pid *actor.PID, message any) {
	c.record(message)
	c.confirms.SendUserMessage(pid, message)
}

// remoteRouter finds the pairings on the other node (placement's job in a
// cluster). It answers a pid of its own, as one read off the wire is: a
// pid caches the process it reached, and one shared by two actor systems
// would take the other system's way to its actor.
type remoteRouter struct{ there *LocalRouter }

func (r remoteRouter) Pairing(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error) {
	pid, err := r.there.Pairing(ctx, id, stale)
	if err != nil {
		return nil, err
	}
	return actor.NewPID(pid.Address, pid.Id), nil
}

// twoNodes is node a with pairings and node b with their tabs, in one
// process, over protoactor's remote; rig is b's (its caller inspects a's
// pairings).
type twoNodes struct {
	a        *actor.ActorSystem
	acfg     Config // the pairings' (their clock, their metrics)
	pairings *LocalRouter
	counted  *countedConfirms
	rig      *rig
	tabs     []*testTab
}

// startTwoNodes starts the two nodes and nTabs tabs on b of nPairings
// pairings on a, and waits until the tabs are registered and on b's
// confirms.
func startTwoNodes(t testing.TB, nTabs, nPairings int) *twoNodes {
	t.Helper()
	a, b := remoteSystem(t), remoteSystem(t)
	acfg := Config{Clock: clock.NewFake(epoch), Metrics: NewMetrics(nil)}.withDefaults()
	n := &twoNodes{a: a, acfg: acfg, counted: &countedConfirms{confirms: &confirms{system: a}}}
	if _, ok := a.ProcessRegistry.Add(n.counted, confirmsName); !ok {
		t.Fatal("a's confirms registered already")
	}
	n.pairings = NewLocalRouter(a, acfg)
	bcfg := Config{Clock: clock.NewFake(epoch), Metrics: NewMetrics(nil)}.withDefaults()
	n.rig = &rig{t: t, clock: bcfg.Clock.(*clock.Fake), caller: NewCaller(a, n.pairings, acfg),
		hub: NewHub(b, remoteRouter{n.pairings}, bcfg), cfg: bcfg, system: b}
	for i := 0; i < nTabs; i++ {
		pairing, id := fmt.Sprintf("p%d", i%nPairings), fmt.Sprintf("tab-%d", i)
		tt := &testTab{t: t, id: id, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}
		tt.tab = n.rig.hub.Accept(TabInfo{Pairing: pairing, TabID: id}, tt)
		n.tabs = append(n.tabs, tt)
	}
	for i := 0; i < nPairings; i++ {
		p, want := fmt.Sprintf("p%d", i), nTabs/nPairings
		n.rig.eventually(func() bool { return len(n.rig.inspect(p).Tabs) == want }, "%s holds its %d tabs", p, want)
	}
	n.rig.confirming(nTabs)
	return n
}

// TestInProcessNodesConfirmTheirTabsInOneMessage: node b holds twelve
// tabs of four pairings on node a, over protoactor's remote. Every
// ConfirmEvery, b sends one TabConfirm for all of them, which a
// answers; a tab that its pairing dropped unseen is back after the
// first.
func TestInProcessNodesConfirmTheirTabsInOneMessage(t *testing.T) {
	n := startTwoNodes(t, 12, 4)
	r, pairings, counted := n.rig, n.pairings, n.counted
	bclock, hub, a, tabs := n.rig.clock, n.rig.hub, n.a, n.tabs
	p0, _ := pairings.Active("p0")
	tab0 := tabs[0].tab.pid
	a.Root.Send(p0, &actor.Terminated{Who: actor.NewPID(tab0.Address, tab0.Id)}) // as a lost link between a and b says
	r.eventually(func() bool { return len(r.inspect("p0").Tabs) == 2 }, "p0 dropped tab-0")

	for round := 1; round <= 2; round++ {
		bclock.Advance(DefaultConfirmEvery)
		r.eventually(func() bool { _, pending := hub.confirms.scheduled(); return pending == 0 }, "round %d answered", round)
		got := counted.received()
		if len(got) != round || len(got[round-1].GetTabs()) != 12 {
			t.Fatalf("round %d: a received %d TabConfirms, want %d listing the 12 tabs", round, len(got), round)
		}
		if node, tab := r.confirmsSent(); node != float64(round) || tab != 0 {
			t.Fatalf("round %d: b sent %v TabConfirms and %v TabRegisters, want %d and none", round, node, tab, round)
		}
		r.eventually(func() bool { return len(r.inspect("p0").Tabs) == 3 }, "round %d: p0 holds tab-0 again", round)
	}
}

// BenchmarkInProcessConfirmRound is one round of confirms of 1,000 tabs
// on node b of 500 pairings on node a, over protoactor's remote: one
// TabConfirm for b's tabs (node), or a TabRegister per tab as before
// (tab). It reports the CPU both nodes spent per tab confirmed, and the
// size of the TabConfirm.
func BenchmarkInProcessConfirmRound(b *testing.B) {
	const tabs = confirmChunk
	n := startTwoNodes(b, tabs, tabs/2)
	r := n.rig
	b.Run("node", func(b *testing.B) {
		cpu := cpuTime()
		for i := 0; i < b.N; i++ {
			r.clock.Advance(DefaultConfirmEvery)
			for _, pending := r.hub.confirms.scheduled(); pending > 0; _, pending = r.hub.confirms.scheduled() {
				time.Sleep(20 * time.Microsecond)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*tabs), "cpu-ns/tab")
		msgs := n.counted.received()
		b.ReportMetric(float64(proto.Size(msgs[len(msgs)-1])), "bytes/confirm")
	})
	b.Run("tab", func(b *testing.B) {
		cpu := cpuTime()
		for i := 0; i < b.N; i++ {
			futures := make([]*actor.Future, 0, tabs)
			for _, tt := range n.tabs {
				pid, reg, _ := tt.tab.confirmation()
				futures = append(futures, r.system.Root.RequestFuture(pid, reg, registerWait))
			}
			for _, f := range futures {
				if _, err := f.Result(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*tabs), "cpu-ns/tab")
	})
}

// cpuTime is the CPU the process has spent, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
