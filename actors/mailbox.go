package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// A pairing's mailbox. protoactor's default mailbox runs an actor's
// messages in a goroutine it starts whenever the mailbox was idle; every
// message to an idle pairing then wakes a goroutine, and on an idle
// machine that goroutine often wakes a thread of another core (issue 27's
// latency, docs/BENCHMARKS.md "A call without a hand-off").
//
// This one runs a user message posted to an idle pairing in the goroutine
// that posted it — a host's call in its HTTP handler's, a tab's result in
// its socket reader's — for at most inlineBudget messages; what is left
// then, and every run a system message (a watch, a stop, a Terminated)
// starts, goes on in a goroutine of its own as before. So:
//
//   - nothing may send a pairing a user message while holding a lock the
//     pairing's handling takes (the Tab's state lock: Tab.sends orders the
//     tab's sends instead);
//   - a system message never runs a pairing's handling in its sender's
//     goroutine: a watch, an unwatch or a stop may be sent under a lock
//     (the switchboard's, the activations');
//   - the goroutine that posted handles at most inlineBudget user messages,
//     whatever else keeps arriving (remote's reader, a socket's reader);
//     system messages that arrive meanwhile it handles too, and a pairing
//     its handling sends to that is idle runs nested, on a budget of its
//     own.
type pairingMailbox struct {
	mu     sync.Mutex // guards the queues
	user   queue
	system queue

	running   atomic.Bool // a goroutine runs the mailbox
	suspended atomic.Bool // a failure suspended it until resumed
	invoker   actor.MessageInvoker
}

// inlineBudget is how many user messages a sender's goroutine runs before
// the rest goes to a goroutine of the mailbox's own.
const inlineBudget = 16

// yieldEvery is how many messages a mailbox's own goroutine runs before it
// lets others run (protoactor's default throughput).
const yieldEvery = 300

func newPairingMailbox() actor.Mailbox { return &pairingMailbox{} }

// queue is a FIFO of messages.
type queue struct {
	items []any
	head  int
}

func (q *queue) push(m any) { q.items = append(q.items, m) }

func (q *queue) pop() (any, bool) {
	if q.head == len(q.items) {
		return nil, false
	}
	m := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= compactAfter && q.head*2 >= len(q.items):
		// A queue that never empties (a busy pairing) moves what waits
		// down, or its array would keep every message handled since.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return m, true
}

// compactAfter is how many handled messages a queue's array may hold
// before what still waits is moved down.
const compactAfter = 64

func (q *queue) empty() bool { return q.head == len(q.items) }

func (m *pairingMailbox) PostUserMessage(msg any) {
	m.post(&m.user, msg)
	if m.running.CompareAndSwap(false, true) {
		m.process(inlineBudget)
	}
}

func (m *pairingMailbox) PostSystemMessage(msg any) {
	m.post(&m.system, msg)
	if m.running.CompareAndSwap(false, true) {
		go m.process(-1)
	}
}

func (m *pairingMailbox) post(q *queue, msg any) {
	m.mu.Lock()
	q.push(msg)
	m.mu.Unlock()
}

func (m *pairingMailbox) take(q *queue) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return q.pop()
}

// pending reports whether a message waits that a run would take.
func (m *pairingMailbox) pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.system.empty() || (!m.suspended.Load() && !m.user.empty())
}

func (m *pairingMailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.invoker = invoker
}

func (m *pairingMailbox) Start() {}

func (m *pairingMailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.user.items) - m.user.head
}

// process runs the mailbox, which this goroutine holds (running is set):
// at most budget user messages (below zero: no limit), then the rest, if
// any, in a goroutine of its own. It lets the mailbox go once nothing is left, and
// takes it back when a message came meanwhile (a post that found it
// running left the message to this run).
func (m *pairingMailbox) process(budget int) {
	for {
		if !m.run(&budget) {
			go m.process(-1) // the budget is spent: the mailbox stays held
			return
		}
		m.running.Store(false)
		if !m.pending() || !m.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// run handles system messages first, then user messages unless
// suspended, until none is left (true) or the budget is spent (false:
// what may be left goes on elsewhere). A panic of the actor is its supervisor's to
// handle (EscalateFailure), as in protoactor's own mailbox.
func (m *pairingMailbox) run(budget *int) (done bool) {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
			done = true
		}
	}()
	for n := 1; ; n++ {
		if *budget < 0 && n%yieldEvery == 0 {
			runtime.Gosched()
		}
		var ok bool
		if msg, ok = m.take(&m.system); ok {
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(true)
			case *actor.ResumeMailbox:
				m.suspended.Store(false)
			default:
				m.invoker.InvokeSystemMessage(msg)
			}
			continue
		}
		if m.suspended.Load() {
			return true
		}
		if *budget == 0 {
			return false
		}
		if msg, ok = m.take(&m.user); !ok {
			return true
		}
		if *budget > 0 {
			*budget--
		}
		m.invoker.InvokeUserMessage(msg)
	}
}
