package oauth

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// verified keeps bearer checks in memory by token hash, until the token
// or a connection of its chain expires, Config.VerifiedFor passes (when
// set), or an event of a browser drops them: a revocation, a Forget, a
// scope written, a connection derived (Server.DropVerified, which this
// server calls for its own changes and the node for those the bus brings
// from the other nodes). The bus is a hint that Redis may lose, so a node
// sharing its store sets VerifiedFor to 1 s: SPEC §5's revocation counts
// within 1 s on every node even if every hint is lost.
type verified struct {
	maxAge    time.Duration // 0: no bound but the expiries
	mu        sync.Mutex    // guards the fields below
	byHash    map[[32]byte]*checkedEntry
	byPairing map[string]map[[32]byte]struct{}
	gen       uint64 // counts drops: a check read before a drop is not kept
}

type checkedEntry struct {
	c        protocol.Grant
	until    time.Time // the earliest expiry of the token and its connections
	pairings []string  // the browsers of its connections, whose events drop it
}

// maxVerified bounds the checks kept; past it they are all dropped.
const maxVerified = 200_000

func newVerified(maxAge time.Duration) *verified {
	return &verified{maxAge: maxAge, byHash: map[[32]byte]*checkedEntry{}, byPairing: map[string]map[[32]byte]struct{}{}}
}

func (v *verified) get(h [32]byte, now time.Time) (protocol.Grant, bool, uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e := v.byHash[h]
	if e == nil || !now.Before(e.until) {
		return protocol.Grant{}, false, v.gen
	}
	return e.c, true, v.gen
}

func (v *verified) put(h [32]byte, gen uint64, e *checkedEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen != v.gen {
		return // dropped meanwhile: what was read may be stale
	}
	if len(v.byHash) >= maxVerified {
		v.dropAllLocked()
	}
	v.byHash[h] = e
	for _, p := range e.pairings {
		if v.byPairing[p] == nil {
			v.byPairing[p] = map[[32]byte]struct{}{}
		}
		v.byPairing[p][h] = struct{}{}
	}
}

func (v *verified) drop(pairing string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	for h := range v.byPairing[pairing] {
		if e := v.byHash[h]; e != nil {
			delete(v.byHash, h)
			for _, p := range e.pairings {
				if p != pairing {
					delete(v.byPairing[p], h)
					if len(v.byPairing[p]) == 0 {
						delete(v.byPairing, p)
					}
				}
			}
		}
	}
	delete(v.byPairing, pairing)
}

func (v *verified) dropAllLocked() {
	v.gen++
	clear(v.byHash)
	clear(v.byPairing)
}

// DropVerified forgets the checks of pairing's tokens (an event of the
// browser, on this node or another).
func (s *Server) DropVerified(pairing string) { s.verified.drop(pairing) }

// Verify checks a bearer token for the MCP front end (SPEC §5): the
// token, its family, its connection's chain and their scope records, read
// in one walk (issue 13), the grant carrying the connection's resolved
// scope. A check is then kept in memory until something of its browser
// changes, so a Forget or a revocation counts at once on this node, and
// within Config.VerifiedFor on the others.
func (s *Server) Verify(ctx context.Context, token string) (protocol.Grant, error) {
	if !strings.HasPrefix(token, prefixAccess) {
		return protocol.Grant{}, ErrInvalidToken
	}
	h := sha256.Sum256([]byte(token))
	now := s.cfg.Clock.Now()
	if c, ok, _ := s.verified.get(h, now); ok {
		return c, nil
	}
	_, _, gen := s.verified.get(h, now)
	c, e, err := s.check(ctx, token)
	if err != nil {
		return protocol.Grant{}, err
	}
	s.verified.put(h, gen, e)
	return c, nil
}

// check reads a token, its family, its connection's chain and their
// scope records, from what the store read ahead in one round trip when it
// is a CheckReader (the Redis store), else record by record.
func (s *Server) check(ctx context.Context, token string) (protocol.Grant, *checkedEntry, error) {
	hashes := s.cfg.Hasher.Candidates(purposeAccess, token)
	var rs CheckRecords = s.cfg.Store
	if cr, ok := s.cfg.Store.(CheckReader); ok {
		var err error
		if rs, err = cr.ReadCheck(ctx, hashes, maxDerivation+2); err != nil {
			return protocol.Grant{}, nil, err
		}
	}
	t, _, err := lookupHashes(ctx, hashes, rs.AccessToken)
	if err != nil {
		return protocol.Grant{}, nil, notFoundAsInvalid(err)
	}
	now := s.cfg.Clock.Now()
	if now.After(t.ExpiresAt) || t.Resource != s.resource {
		return protocol.Grant{}, nil, ErrInvalidToken
	}
	first, err := checkRecords(ctx, rs, t.FamilyID, t.ConnectionID)
	if err != nil || first.Family.Revoked {
		return protocol.Grant{}, nil, notFoundAsInvalid(err)
	}
	e := &checkedEntry{until: t.ExpiresAt, pairings: []string{first.Family.PairingID}}
	if age := s.verified.maxAge; age > 0 && now.Add(age).Before(e.until) {
		e.until = now.Add(age)
	}
	var chain []checked
	for rec := first; ; {
		c := rec.Connection
		if c.Revoked || len(chain) > maxDerivation || now.After(c.End()) {
			return protocol.Grant{}, nil, ErrInvalidToken
		}
		if c.End().Before(e.until) {
			e.until = c.End()
		}
		e.pairings = appendNew(e.pairings, c.PairingID)
		chain = append(chain, rec)
		if c.ParentID == "" {
			break
		}
		if rec, err = checkRecords(ctx, rs, "", c.ParentID); err != nil {
			return protocol.Grant{}, nil, notFoundAsInvalid(err)
		}
	}
	// The resolved scope, from the root down (ResolvedScope's rule): the
	// root's own entries, each derived connection's intersected with its
	// own when it has any.
	var scope []protocol.ScopeEntry
	for i := len(chain) - 1; i >= 0; i-- {
		own, hasOwn := s.parseOwnScope(chain[i].Connection.ID, chain[i].Scope)
		switch {
		case i == len(chain)-1:
			scope = own
		case hasOwn:
			scope = protocol.Intersect(scope, own)
		}
	}
	conn := chain[0].Connection
	e.c = protocol.Grant{ConnectionID: conn.ID, ClientName: conn.ClientName, Host: conn.Host, PairingID: conn.PairingID, Scope: scope}
	return e.c, e, nil
}

// CheckReader is a Store that reads ahead, in one round trip, what a
// bearer check may read (issue 13): the access token under the first of
// hashes it holds, the token's family, its connection and that
// connection's ancestors, up to connections of them, and their own scope
// records. The embedded store reads in memory and need not be one.
type CheckReader interface {
	ReadCheck(ctx context.Context, hashes [][]byte, connections int) (CheckRecords, error)
}

// CheckRecords answers a bearer check's reads as the Store's methods of
// the same names do: from what a CheckReader read ahead, and for anything
// else from the store. A Store is one.
type CheckRecords interface {
	AccessToken(ctx context.Context, hash []byte) (AccessToken, error)
	Family(ctx context.Context, id string) (Family, error)
	Connection(ctx context.Context, id string) (Connection, error)
	ScopeRecord(ctx context.Context, connection string) ([]byte, error)
}

// checked is what a bearer check read of one connection.
type checked struct {
	Family     Family // when asked for
	Connection Connection
	Scope      []byte // the connection's own scope record as stored; nil: none
}

// checkRecords reads family familyID (when not empty), a connection and
// its own scope record.
func checkRecords(ctx context.Context, rs CheckRecords, familyID, connectionID string) (checked, error) {
	var r checked
	var err error
	if familyID != "" {
		if r.Family, err = rs.Family(ctx, familyID); err != nil {
			return r, err
		}
	}
	if r.Connection, err = rs.Connection(ctx, connectionID); err != nil {
		return r, err
	}
	r.Scope, err = rs.ScopeRecord(ctx, connectionID)
	return r, notFoundAsNil(err)
}

func appendNew(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
