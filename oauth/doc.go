// Package oauth is the relay's own OAuth 2.1 authorization server (SPEC §5)
// and the check of the tokens it issues. The person's tab is the consent
// screen: /authorize shows a waiting page with a short connect code, the tab
// approves or declines that code over its socket, and the page then sends
// the browser back to the client.
//
// It owns clients (dynamic registration and client metadata documents),
// connect requests, authorization codes, connections, refresh-token
// families with rotation and reuse detection, and access tokens. Every
// token, code and secret is kept only as an HMAC under the signing key.
// Storage is the Store interface declared here; the embedded and Redis
// stores implement it. Its errors are the relay's error table's
// (protocol/errors.go), in the OAuth shape (RFC 6749 §5.2). The package
// knows nothing of actors or MCP.
package oauth
