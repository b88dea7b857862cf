package actors

import (
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
)

// A pairing on another node may drop one of this node's tabs while the tab
// hears nothing: protoactor reports a broken link between two nodes as
// every actor at the other end stopping (AddressTerminated), and a link
// can break one way only (pairing_tabs.go, askLostAfter). So the tabs
// whose pairing is on another node confirm their registrations, every
// Config.ConfirmEvery, and the confirms are one process per actor system
// under a fixed name (as the switchboard is; not an actor: no mailbox, no
// goroutine) with both ends of that:
//
//   - on the tabs' node, one schedule (one timer, armed while any tab has a
//     registration to confirm) sends each node that holds pairings of its
//     tabs one TabConfirm listing them all (in chunks of confirmChunk),
//     instead of a timer and a request per tab (issue 13 item 4);
//   - on the pairings' node, the confirms hand each registration to its
//     pairing as a TabRegister without a sender (a pairing that dropped the
//     tab takes it back, or closes it when it holds as many tabs as it
//     may), and answer in one TabConfirmed which pairing actors are gone.
//
// A tab of a gone pairing looks it up again past that actor, as a tab
// whose registration came back as a dead letter does. A TabConfirm still
// unanswered at the next tick (the node is gone, or the answer was lost)
// makes its tabs look their pairings up again as a new tab does: the
// router says whether the actor still holds the pairing, and the tab's
// registration is answered, or not, by itself. A pairing of a build before
// the confirms (its TabRegistered says nothing of node_confirms), or one
// that has just moved (its build is not known yet), is confirmed with a
// TabRegister of its own from the same schedule, as before. An older
// build cannot decode a TabConfirm: protoactor's reader there ends the
// link on it, dropping what else came in that batch, and every actor
// behind the link looks gone to both ends. A node restarted on the same
// address with an older build is sent none in the normal course: the
// old process's link broke first, which reached its tabs here as their
// pairings' Terminated, and they leave the confirms until a registration
// with the new process answers again whether it takes them. Should one
// still reach it (a confirm written in the moment between), the link
// ends as any lost link does, and the tabs look their pairings up again.

// confirmsName is the confirms' actor id on every node.
const confirmsName = "tabrelay-confirms"

// confirmChunk bounds the registrations one TabConfirm lists (~120 bytes
// each: a chunk stays far under gRPC's 4 MB message limit).
const confirmChunk = 1000

type confirms struct {
	system  *actor.ActorSystem
	every   time.Duration
	clock   clock.Clock
	log     *slog.Logger
	metrics *Metrics

	mu      sync.Mutex              // guards the fields below
	tabs    map[*Tab]struct{}       // tabs with a registration to confirm
	pending map[uint64]*sentConfirm // TabConfirms sent and not answered yet, by seq
	seq     uint64
	timer   clock.Timer // the schedule's next tick; nil when none is armed
}

// sentConfirm is one TabConfirm on its way: to whom, and for which tabs.
type sentConfirm struct {
	address string
	tabs    []confirmedTab
}

// confirmedTab is a tab, the pairing actor its confirm names, and its
// registration as the pairing takes it.
type confirmedTab struct {
	tab     *Tab
	pairing *actor.PID
	reg     *wire.TabRegister
}

// confirmsOf returns system's confirms, registering them on first use
// (the hub and the activations of a node share them; so do several of
// either in tests, with the first one's config).
func confirmsOf(system *actor.ActorSystem, cfg Config) *confirms {
	return namedProcess(system, confirmsName, func() *confirms {
		return &confirms{system: system, every: cfg.ConfirmEvery, clock: cfg.Clock, log: cfg.Logger, metrics: cfg.Metrics,
			tabs: map[*Tab]struct{}{}, pending: map[uint64]*sentConfirm{}}
	})
}

// add puts t on the schedule (its registration is with a pairing to
// confirm); the tab calls it under its lock.
func (c *confirms) add(t *Tab) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tabs[t] = struct{}{}
	if c.timer == nil {
		c.timer = c.clock.AfterFunc(c.every, c.tick)
	}
}

// remove takes t off the schedule; the tab calls it under its lock.
func (c *confirms) remove(t *Tab) {
	c.mu.Lock()
	delete(c.tabs, t)
	c.mu.Unlock()
}

// tick makes the tabs of TabConfirms still unanswered look their pairings
// up again, sends this round's TabConfirms (and a TabRegister for each tab
// whose pairing's node does not take them), and arms the next tick while
// any tab is on the schedule.
func (c *confirms) tick() {
	c.mu.Lock()
	c.timer = nil
	unanswered := c.pending
	c.pending = map[uint64]*sentConfirm{}
	tabs := make([]*Tab, 0, len(c.tabs))
	for t := range c.tabs {
		tabs = append(tabs, t)
	}
	c.mu.Unlock()

	for _, s := range unanswered {
		c.log.Warn("tab confirm unanswered: its tabs look their pairings up again", "node", s.address, "tabs", len(s.tabs))
		for _, e := range s.tabs {
			e.tab.confirmUnanswered(e.pairing)
		}
	}
	byNode := map[string][]confirmedTab{}
	for _, t := range tabs {
		pid, reg, node := t.confirmation()
		switch {
		case pid == nil: // it closed, or looks its pairing up
		case !node:
			c.metrics.Confirms.WithLabelValues("tab").Inc()
			go t.confirmNow(pid)
		default:
			byNode[pid.Address] = append(byNode[pid.Address], confirmedTab{t, pid, reg})
		}
	}
	for address, all := range byNode {
		for i := 0; i < len(all); i += confirmChunk {
			c.send(address, all[i:min(i+confirmChunk, len(all))])
		}
	}
	c.mu.Lock()
	if c.timer == nil && (len(c.tabs) > 0 || len(c.pending) > 0) {
		c.timer = c.clock.AfterFunc(c.every, c.tick)
	}
	c.mu.Unlock()
}

// send sends address's confirms one TabConfirm of tabs. It is noted as
// pending first: a node's own confirms (tests confirm local pairings too)
// answer in this goroutine.
func (c *confirms) send(address string, tabs []confirmedTab) {
	regs := make([]*wire.ConfirmedTab, len(tabs))
	for i, e := range tabs {
		regs[i] = &wire.ConfirmedTab{Pairing: e.pairing.Id, Tab: e.reg}
	}
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.pending[seq] = &sentConfirm{address: address, tabs: tabs}
	c.mu.Unlock()
	c.metrics.Confirms.WithLabelValues("node").Inc()
	self := actor.NewPID(c.system.Address(), confirmsName)
	c.system.Root.RequestWithCustomSender(actor.NewPID(address, confirmsName), &wire.TabConfirm{Seq: seq, Tabs: regs}, self)
}

// SendUserMessage takes a TabConfirm from another node, or the answer to
// one of this node's (actor.Process). It runs in the sender's goroutine
// (remote's reader, or the tick's): it never blocks.
func (c *confirms) SendUserMessage(_ *actor.PID, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	switch m := msg.(type) {
	case *wire.TabConfirm:
		c.confirmHere(m, sender)
	case *wire.TabConfirmed:
		c.answered(m)
	}
}

// confirmHere hands each registration m lists to its pairing here, and
// answers which pairing actors are gone.
func (c *confirms) confirmHere(m *wire.TabConfirm, sender *actor.PID) {
	var gone []string
	var listed map[string]bool
	for _, e := range m.GetTabs() {
		id := e.GetPairing()
		p, ok := c.system.ProcessRegistry.GetLocal(id)
		if ok {
			p.SendUserMessage(actor.NewPID(c.system.Address(), id), e.GetTab())
			continue
		}
		if listed == nil {
			listed = map[string]bool{}
		}
		if !listed[id] { // a pairing with several tabs is named once
			listed[id] = true
			gone = append(gone, id)
		}
	}
	if sender != nil {
		c.system.Root.Send(sender, &wire.TabConfirmed{Seq: m.GetSeq(), Gone: gone})
	}
}

// answered takes the answer to a TabConfirm: the tabs of the pairings it
// names gone look them up again.
func (c *confirms) answered(m *wire.TabConfirmed) {
	c.mu.Lock()
	s := c.pending[m.GetSeq()]
	delete(c.pending, m.GetSeq())
	c.mu.Unlock()
	if s == nil || len(m.GetGone()) == 0 {
		return // a late answer (its tabs looked up again), or all is well
	}
	gone := make(map[string]bool, len(m.GetGone()))
	for _, id := range m.GetGone() {
		gone[id] = true
	}
	for _, e := range s.tabs {
		if gone[e.pairing.Id] {
			e.tab.pairingGone(e.pairing)
		}
	}
}

// SendSystemMessage does nothing: nobody watches the confirms, which live
// as long as their actor system (actor.Process).
func (c *confirms) SendSystemMessage(*actor.PID, any) {}

// Stop does nothing (actor.Process).
func (c *confirms) Stop(*actor.PID) {}

// scheduled reports how many tabs are on the schedule, and how many
// TabConfirms wait for their answer (tests).
func (c *confirms) scheduled() (tabs, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tabs), len(c.pending)
}
