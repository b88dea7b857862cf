// Package actors holds the pairing actor (one per browser: its tabs in focus
// order, its calls in flight, the call wait and its detach, turns), the tab
// (one per tab socket, on the node that holds the socket) and the
// switchboard (one per node, where its calls wait for their end), on
// protoactor-go (SPEC §3). Only the pairing is an actor: the tab and the
// switchboard are protoactor processes that hand what reaches them on in
// the sender's goroutine (issue 13), so that a call passes one mailbox.
//
// The front end reaches a pairing only through Caller.Call; the tab socket
// only through Hub.Accept. Where a pairing's actor lives is the Router's
// business: a local registry on a single node, placement in Redis later.
// The package knows nothing of HTTP, WebSockets, OAuth or MCP, and keeps no
// state that its tabs cannot rebuild.
package actors
