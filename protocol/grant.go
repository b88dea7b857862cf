package protocol

import "errors"

// Grant is who a request comes from, as its bearer token says (SPEC §5):
// the connection the token was issued to, its client, the browser
// (pairing) that approved it, and what it may use, its resolved scope
// (SPEC §8), read in the same walk of the records. The authorization
// server makes it; the MCP front end acts on it.
type Grant struct {
	ConnectionID string
	ClientName   string
	Host         string
	PairingID    string
	Scope        []ScopeEntry
}

// Connection is the grant's connection as a tab is told of it.
func (g Grant) Connection() Connection {
	return Connection{ID: g.ConnectionID, Kind: "connector", Client: g.ClientName, Host: g.Host}
}

// ErrInvalidToken is the refusal of a bearer token that does not open
// this resource: unknown, expired, revoked, forgotten, or for another
// resource. Hosts get a 401 either way.
var ErrInvalidToken = errors.New("the access token is not valid")
