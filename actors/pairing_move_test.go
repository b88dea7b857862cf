package actors

import (
	"sort"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/tabrelay/tabrelay/actors/wire"
)

// moveRule is what a pairing that moved does with a message of the wire:
// whether it passes it on to the actor that holds the pairing now, and
// whether it tells the one that sent it (or the tab it names) where that
// is, and whether it stops at it.
type moveRule struct {
	passed, noted, stops bool
	why                  string
}

// notInAUnion lists every message of the wire that is neither a
// wire.FromTab nor a wire.FromCaller (those are passed on, and their
// sender told), with what a moved pairing does with it and why. A new
// message of the wire fails TestAMovedPairingPassesEveryMessageOn until
// it is in a union or here.
var notInAUnion = map[string]moveRule{
	"TabRegister":        {true, true, false, "its sender is a future: the tab it names is told"},
	"SnapshotRequest":    {true, false, false, "a request, once: the new actor answers it, and the next one finds it"},
	"PermissionsRequest": {true, false, false, "a request, once: the new actor answers it, and the next one finds it"},
	"Superseded":         {false, false, true, "it names the old actor, not the new one, which stops now"},
	"MoveDone":           {false, false, false, "it names the old actor, not the new one"},

	// Never sent to a pairing: passed on like everything of the wire.
	"CallAccepted":      {true, false, false, "pairing → waiter"},
	"CallProbeReply":    {true, false, false, "pairing → waiter"},
	"CallEvent":         {true, false, false, "pairing → waiter"},
	"CallDone":          {true, false, false, "pairing → waiter"},
	"TabRegistered":     {true, false, false, "pairing → tab"},
	"ToTab":             {true, false, false, "pairing → tab"},
	"CloseTab":          {true, false, false, "pairing → tab"},
	"PairingMoved":      {true, false, false, "pairing → tabs and waiters"},
	"Snapshot":          {true, false, false, "an answer of the pairing's"},
	"PermissionsAnswer": {true, false, false, "an answer of the pairing's"},
	"Activate":          {true, false, false, "placement → another node's activator"},
	"Activated":         {true, false, false, "an activator's answer"},
	"Adopt":             {true, false, false, "a moving pairing → another node's activator"},
	"TabConfirm":        {true, false, false, "a node's confirms → another node's confirms"},
	"TabConfirmed":      {true, false, false, "a node's confirms' answer"},
	"ConfirmedTab":      {true, false, false, "a part of TabConfirm"},
	"Connection":        {true, false, false, "a part of other messages"},
	"Event":             {true, false, false, "a part of other messages"},
	"Call":              {true, false, false, "a part of other messages"},
	"PairingState":      {true, false, false, "a part of Adopt"},
	"TurnState":         {true, false, false, "a part of Adopt"},
	"QueryState":        {true, false, false, "a part of Adopt"},
	"TabState":          {true, false, false, "a part of Adopt"},
	"CallState":         {true, false, false, "a part of Adopt"},
}

// TestAMovedPairingPassesEveryMessageOn sends a pairing that moved one
// message of every type of the wire, each from an actor of its own: the
// actor that holds the pairing now gets what the old one passes on, and
// whoever sent a wire.FromTab or a wire.FromCaller (a tab actor, a waiter:
// they go on talking to the pairing) hears where it is now; else it would
// talk to a stopped actor once the old one's linger is over.
func TestAMovedPairingPassesEveryMessageOn(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.call("p1", "c1", "whoami") // a pairing with a call in flight moves
	a.nextCall()
	m := &moved{r: r, reached: make(chan proto.Message, 16)}
	m.old, _ = r.hub.router.(*LocalRouter).Active("p1")
	m.now = r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if msg, ok := ctx.Message().(proto.Message); ok {
			m.reached <- msg
		}
	}))
	adopter := r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wire.Adopt); ok {
			ctx.Respond(&wire.Activated{Address: m.now.Address, Id: m.now.Id})
		}
	}))
	r.handOff(adopter)
	r.movesDone(1)

	var names []string
	for i, all := 0, wire.File_wire_proto.Messages(); i < all.Len(); i++ {
		names = append(names, string(all.Get(i).FullName()))
	}
	sort.Strings(names)
	// A Superseded stops the old actor: it goes last.
	for i, n := range names {
		if n == "tabrelay.wire.v1.Superseded" {
			names = append(append(names[:i:i], names[i+1:]...), n)
			break
		}
	}
	for _, full := range names {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(full))
		if err != nil {
			t.Fatalf("%s: %v", full, err)
		}
		msg := mt.New().Interface()
		name := string(mt.Descriptor().Name())
		rule, listed := notInAUnion[name]
		_, fromTab := msg.(wire.FromTab)
		_, fromCaller := msg.(wire.FromCaller)
		switch {
		case (fromTab || fromCaller) && listed:
			t.Errorf("%s is in a union of the wire and in notInAUnion: take it out of notInAUnion", name)
			continue
		case fromTab || fromCaller:
			rule = moveRule{passed: true, noted: true}
		case !listed:
			t.Errorf("%s is neither a wire.FromTab nor a wire.FromCaller: say in notInAUnion what a moved pairing does with it, and why", name)
			continue
		}
		t.Run(name, func(t *testing.T) { m.check(t, msg, rule) })
	}
}

// moved is a pairing's actor that moved (old) and the actor that holds the
// pairing now (now), which puts what reaches it in reached.
type moved struct {
	r        *rig
	old, now *actor.PID
	reached  chan proto.Message
}

// check sends msg to the old actor from an actor of its own, then a marker
// from nobody, and checks that what reaches the new actor before the
// marker, and what the sender hears, follows rule.
func (m *moved) check(t *testing.T, msg proto.Message, rule moveRule) {
	heard := make(chan *wire.PairingMoved, 2)
	marker := &wire.TabStep{By: "marker"}
	sender := m.r.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch n := ctx.Message().(type) {
		case *wire.PairingMoved:
			heard <- n
		case *actor.Started:
			if reg, ok := msg.(*wire.TabRegister); ok {
				reg.TabAddress, reg.TabActor = ctx.Self().Address, ctx.Self().Id
			}
			ctx.Request(m.old, msg)
			ctx.Send(m.old, marker) // no sender: nobody to tell
		}
	}))
	defer m.r.system.Root.Stop(sender)
	if rule.stops {
		// The old actor stops at it, and what it had is passed on by
		// then: what reaches the new actor after its stop comes after
		// anything the old one passed on.
		m.r.eventually(func() bool { _, ok := m.r.hub.router.(*LocalRouter).Active("p1"); return !ok }, "the old actor stops")
		m.r.system.Root.Send(m.now, marker)
	}
	got := m.before(t, marker)
	switch {
	case rule.passed && (len(got) != 1 || !proto.Equal(got[0], msg)):
		t.Fatalf("the new actor got %v, want the message passed on", got)
	case !rule.passed && len(got) != 0:
		t.Fatalf("the new actor got %v; the old one must keep it: %s", got, rule.why)
	}
	if !rule.noted {
		return
	}
	select {
	case n := <-heard:
		if to := actor.NewPID(n.GetAddress(), n.GetId()); !to.Equal(m.now) {
			t.Fatalf("its sender heard that the pairing is at %v, not %v", to, m.now)
		}
	case <-time.After(patience):
		t.Fatal("its sender did not hear where the pairing is now: it would go on talking to the old actor, which stops")
	}
}

// before returns what reaches the new actor before marker does.
func (m *moved) before(t *testing.T, marker proto.Message) []proto.Message {
	t.Helper()
	var got []proto.Message
	for {
		select {
		case n := <-m.reached:
			if proto.Equal(n, marker) {
				return got
			}
			got = append(got, n)
		case <-time.After(patience):
			t.Fatal("the marker sent after the message did not reach the new actor")
			return nil
		}
	}
}
