// Package mcp is the relay's MCP front end (SPEC §4): Streamable HTTP on
// POST /, one JSON-RPC message per request, serving hosts of both protocol
// eras on one endpoint — the handshake era (initialize; 2025-06-18,
// 2025-11-25) and the stateless 2026-07-28 era (per-request _meta and
// headers) — with no session ids and nothing a request needs kept in one
// node's memory.
//
// It owns the transport rules (headers, status codes, JSON or SSE), the
// methods, the bearer check (through a Verifier), and the one call path's
// front half: a tools/call goes to a Caller, and how it ended comes back
// and is encoded for the host here (protocol.EncodeOutcome). Its errors
// are the relay's error table's (protocol/errors.go), written as JSON-RPC
// error objects. It knows nothing of actors, OAuth storage or WebSockets.
package mcp
