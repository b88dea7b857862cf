package wire

import "google.golang.org/protobuf/proto"

// The unions below say who sends a message to a pairing actor, and with
// that what a pairing that moved to another node does with it
// (actors/pairing_move.go): it passes every message on to the new actor,
// and tells the sender of a FromTab or FromCaller, which goes on talking to
// the pairing, where the pairing is now. Every other message of this
// package is listed, with why its sender need not hear, in the actors
// test of the move (TestAMovedPairingPassesEveryMessageOn): a new message
// fails there until it is in a union or in that list.

// FromTab is what a tab tells its pairing: what the tab said. The sender
// is the tab (actors.Tab, a protoactor process).
type FromTab interface {
	proto.Message
	fromTab()
}

func (*TabFocus) fromTab()       {}
func (*TabResult) fromTab()      {}
func (*TabAsking) fromTab()      {}
func (*TabStep) fromTab()        {}
func (*TabEvent) fromTab()       {}
func (*TabPermissions) fromTab() {}
func (*TabMessage) fromTab()     {}

// FromCaller is what the caller of a tool call (its waiter) tells the
// pairing about the call. The sender is the waiter, where the call's
// answer goes.
type FromCaller interface {
	proto.Message
	fromCaller()
}

func (*CallRequest) fromCaller() {}
func (*CallProbe) fromCaller()   {}
func (*CancelCall) fromCaller()  {}
