package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/internal/testwait"
)

// mailboxActor runs f for each message it receives (nil: nothing).
type mailboxActor struct{ f func(ctx actor.Context) }

func (a *mailboxActor) Receive(ctx actor.Context) {
	if a.f != nil {
		a.f(ctx)
	}
}

// spawnOnPairingMailbox spawns an actor on a pairingMailbox, and returns
// once the mailbox is idle (Started is handled in a goroutine of its own).
func spawnOnPairingMailbox(t *testing.T, f func(ctx actor.Context)) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	system := NewSystem(nil)
	t.Cleanup(system.Shutdown)
	var mb *pairingMailbox
	props := actor.PropsFromProducer(func() actor.Actor { return &mailboxActor{f} },
		actor.WithMailbox(func() actor.Mailbox { mb = &pairingMailbox{}; return mb }))
	pid := system.Root.Spawn(props)
	testwait.Eventually(t, func() bool { return !mb.running.Load() }, "the mailbox idle after Started")
	return system, pid
}

type mark struct{ n int }

// A user message to an idle pairing is handled before its send returns,
// in the sender's goroutine: no goroutine is woken (protoactor's default
// mailbox handles it later, in one of its own).
func TestAUserMessageToAnIdlePairingRunsInItsSendersGoroutine(t *testing.T) {
	var handled atomic.Int32
	system, pid := spawnOnPairingMailbox(t, func(ctx actor.Context) {
		if _, ok := ctx.Message().(*mark); ok {
			handled.Add(1)
		}
	})
	for i := 1; i <= 100; i++ {
		system.Root.Send(pid, &mark{i})
		if got := handled.Load(); got != int32(i) {
			t.Fatalf("after send %d, %d handled; want each handled before its send returns", i, got)
		}
	}
}

// A system message (here a stop) never runs the pairing's handling in the
// sender's goroutine, which may hold a lock (the switchboard's unwatch,
// the activations' stop of a replaced actor).
func TestASystemMessageNeverRunsInItsSendersGoroutine(t *testing.T) {
	release := make(chan struct{})
	system, pid := spawnOnPairingMailbox(t, func(ctx actor.Context) {
		if _, ok := ctx.Message().(*actor.Stopping); ok {
			<-release
		}
	})
	returned := make(chan struct{})
	go func() { system.Root.Stop(pid); close(returned) }()
	select {
	case <-returned:
	case <-time.After(patience):
		t.Fatal("Stop waited for the pairing's handling of it")
	}
	close(release)
}

// The goroutine that found the pairing idle handles at most inlineBudget
// user messages, however many arrive meanwhile: the rest go on in a
// goroutine of the mailbox's own (a socket's or remote's reader is never
// held by a busy pairing).
func TestASendersGoroutineHandlesAtMostTheInlineBudget(t *testing.T) {
	first, beyond := make(chan struct{}), make(chan struct{})
	inFirst := make(chan struct{})
	var count atomic.Int32
	system, pid := spawnOnPairingMailbox(t, func(ctx actor.Context) {
		m, ok := ctx.Message().(*mark)
		if !ok {
			return
		}
		count.Add(1)
		switch m.n {
		case 0:
			close(inFirst)
			<-first // the others queue meanwhile
		case inlineBudget:
			<-beyond // the first message's sender must not get here
		}
	})
	returned := make(chan struct{})
	go func() { system.Root.Send(pid, &mark{0}); close(returned) }()
	<-inFirst
	for i := 1; i <= 2*inlineBudget; i++ {
		system.Root.Send(pid, &mark{i}) // the mailbox is held: queued
	}
	close(first)
	select {
	case <-returned:
	case <-time.After(patience):
		t.Fatal("the first sender went on past the inline budget")
	}
	close(beyond)
	testwait.Eventually(t, func() bool { return count.Load() == 2*inlineBudget+1 }, "%d messages handled", 2*inlineBudget+1)
}

// Many senders at once, with system messages among them: every message is
// handled once, one at a time, each sender's in the order it sent them.
func TestThePairingMailboxLosesNothingUnderConcurrentSenders(t *testing.T) {
	const senders, each = 8, 2000
	var mu sync.Mutex
	last := make([]int, senders)
	var busy atomic.Int32
	var total atomic.Int32
	type seq struct{ from, n int }
	system, pid := spawnOnPairingMailbox(t, func(ctx actor.Context) {
		m, ok := ctx.Message().(*seq)
		if !ok {
			return
		}
		if busy.Add(1) != 1 {
			t.Error("two messages handled at once")
		}
		mu.Lock()
		if m.n != last[m.from]+1 {
			t.Errorf("sender %d: message %d after %d", m.from, m.n, last[m.from])
		}
		last[m.from] = m.n
		mu.Unlock()
		total.Add(1)
		busy.Add(-1)
	})
	watcher := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	process, _ := system.ProcessRegistry.Get(pid)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= each; i++ {
				system.Root.Send(pid, &seq{s, i})
				if i%100 == 0 {
					process.SendSystemMessage(pid, &actor.Watch{Watcher: watcher})
				}
			}
		}()
	}
	wg.Wait()
	testwait.Eventually(t, func() bool { return total.Load() == senders*each }, "%d messages handled", senders*each)
}

// A queue that never empties (a busy pairing fed as fast as it handles)
// keeps an array the size of what waits, not of everything handled.
func TestAQueueThatNeverEmptiesStaysSmall(t *testing.T) {
	var q queue
	q.push(0)
	for i := 1; i <= 100_000; i++ {
		q.push(i)
		if m, ok := q.pop(); !ok || m.(int) != i-1 {
			t.Fatalf("pop %d: %v %v", i, m, ok)
		}
	}
	if c := cap(q.items); c > 4*compactAfter {
		t.Fatalf("after 100,000 messages with one waiting, the array holds %d", c)
	}
	if m, ok := q.pop(); !ok || m.(int) != 100_000 {
		t.Fatalf("last pop: %v %v", m, ok)
	}
}
