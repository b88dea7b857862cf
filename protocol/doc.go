// Package protocol is tabrelay's vocabulary: the tab wire protocol (its
// messages, as two unions: FromTab, what a tab sends, and ToTab, what the
// relay sends; the version, the disconnect codes), the bundle (catalogue)
// format and its loader, the scope rule (scope.go: what a connection's
// entries grant, how scopes combine, their text form), the relay's one
// error table (errors.go: each error with its HTTP status, JSON-RPC and
// OAuth codes and sentence), how a tool call can end (Outcome) and the
// relay's sentences for it, and the pure functions that turn a call's end
// into MCP content (data tags, the text cut, the image rules).
//
// Every other package may import protocol; protocol imports nothing of ours
// and holds no state, no I/O beyond decoding, and no clock.
//
// The SDK's close codes (web/sdk/src/close-codes.ts, from closeTable) and
// its types of the messages (web/sdk/src/wire.ts, from the message types
// and structs) are generated from this package: go generate ./protocol.
package protocol

//go:generate go test . -run ^TestSDK(CloseCodes|WireTypes)AreGenerated$ -update
