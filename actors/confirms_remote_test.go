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
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// remoteSystem starts an actor system with remote on a free loopback port.
func remoteSystem(t *testing.T) *actor.ActorSystem {
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

// TestInProcessNodesConfirmTheirTabsInOneMessage: node b holds twelve
// tabs of four pairings on node a, over protoactor's remote. Every
// ConfirmEvery, b sends a one TabConfirm for all of them, which a
// answers; a tab that its pairing dropped unseen is back after the
// first.
func TestInProcessNodesConfirmTheirTabsInOneMessage(t *testing.T) {
	a, b := remoteSystem(t), remoteSystem(t)
	acfg := Config{Clock: clock.NewFake(epoch), Metrics: NewMetrics(nil)}.withDefaults()
	counted := &countedConfirms{confirms: &confirms{system: a}}
	if _, ok := a.ProcessRegistry.Add(counted, confirmsName); !ok {
		t.Fatal("a's confirms registered already")
	}
	pairings := NewLocalRouter(a, acfg)
	caller := NewCaller(a, pairings, acfg)
	bclock := clock.NewFake(epoch)
	bcfg := Config{Clock: bclock, Metrics: NewMetrics(nil)}.withDefaults()
	hub := NewHub(b, remoteRouter{pairings}, bcfg)
	r := &rig{t: t, clock: bclock, caller: caller, hub: hub, cfg: bcfg, system: b}

	tabs := map[string]*testTab{}
	for i := 0; i < 12; i++ {
		pairing, id := fmt.Sprintf("p%d", i%4), fmt.Sprintf("tab-%d", i)
		tt := &testTab{t: t, id: id, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}
		tt.tab = hub.Accept(TabInfo{Pairing: pairing, TabID: id}, tt)
		tabs[id] = tt
	}
	for i := 0; i < 4; i++ {
		p := fmt.Sprintf("p%d", i)
		r.eventually(func() bool { return len(r.inspect(p).Tabs) == 3 }, "%s holds its three tabs", p)
	}
	r.confirming(12)
	p0, _ := pairings.Active("p0")
	tab0 := tabs["tab-0"].tab.pid
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
