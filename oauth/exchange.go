package oauth

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
	"github.com/tabrelay/tabrelay/protocol"
)

// Token exchange (RFC 8693): a host mints a token for a sub-agent from one
// of its connection's access tokens, optionally narrower. The sub-agent
// gets a derived connection of its own (Connection.ParentID), whose scope
// is the parent's resolved scope, or the intersection of what it asked for
// with it, at every check (ResolvedScope): it never exceeds its parent and
// follows it, narrowed or forgotten, at once.
const (
	grantTokenExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
)

// exchanged is an RFC 8693 §2.2.1 token response. There is no refresh
// token: the sub-agent asks its host again, which holds the parent's.
type exchanged struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int    `json:"expires_in"`
	Scope           string `json:"scope"`
}

func invalidRequest(desc string) *protocol.RelayError { return protocol.ErrBadRequest.With(desc) }

// exchangeToken is the token-exchange grant for a public client.
//
// The child's access token carries the family of the subject token (the
// parent's refresh family) and the child's connection. Verify then needs
// no change: it reads that family (a refresh reuse or a code reuse that
// revokes the parent's family ends every token derived from it, however
// deep) and walks the child's connection to its root (forgetting any
// ancestor ends it). A family of its own would need a refresh hash no one
// holds and would not die with the parent's; the child's connection has
// no family, which is right: it has nothing to refresh.
func (s *Server) exchangeToken(ctx context.Context, clientID string, f url.Values) (exchanged, error) {
	switch {
	case f.Get("subject_token") == "":
		return exchanged{}, invalidRequest("subject_token is required.")
	case f.Get("subject_token_type") != tokenTypeAccessToken:
		return exchanged{}, invalidRequest("subject_token_type must be " + tokenTypeAccessToken + ".")
	case f.Has("requested_token_type") && f.Get("requested_token_type") != tokenTypeAccessToken:
		return exchanged{}, invalidRequest("requested_token_type may only be " + tokenTypeAccessToken + ".")
	case f.Has("actor_token") || f.Has("actor_token_type"):
		return exchanged{}, invalidRequest("actor_token is not supported.")
	case f.Has("audience") && !s.isResource(f.Get("audience")):
		return exchanged{}, s.notThisResource("audience")
	}
	var asked []protocol.ScopeEntry
	hasScope := strings.TrimSpace(f.Get("scope")) != ""
	if hasScope {
		var err error
		if asked, err = s.parseScopeParam(f.Get("scope")); err != nil {
			return exchanged{}, err
		}
	}

	// The subject token, by the same checks as every MCP request: live
	// connection chain, family not revoked, not expired, this resource.
	subject := f.Get("subject_token")
	grant, err := s.Verify(ctx, subject)
	if errors.Is(err, ErrInvalidToken) {
		return exchanged{}, invalidGrant("The subject token is unknown, expired or revoked.")
	}
	if err != nil {
		return exchanged{}, err
	}
	t, err := s.accessTokenRecord(ctx, subject)
	if errors.Is(err, ErrNotFound) {
		return exchanged{}, invalidGrant("The subject token is unknown, expired or revoked.")
	}
	if err != nil {
		return exchanged{}, err
	}
	if t.ClientID != clientID {
		return exchanged{}, invalidGrant("The subject token was issued to another client.")
	}
	parent, err := s.cfg.Store.Connection(ctx, grant.ConnectionID)
	if err != nil {
		return exchanged{}, notFoundAsGrant(err)
	}
	root, depth, err := s.lineage(ctx, parent)
	if err != nil {
		return exchanged{}, notFoundAsGrant(err)
	}
	if depth >= maxDerivation {
		return exchanged{}, invalidGrant("The subject token is derived too deeply to be exchanged again.")
	}
	now := s.cfg.Clock.Now().UTC()
	if wait, err := s.limited(ctx, limitedExchangeTree, limit.Bucket{Key: "exchange:" + root, Rate: ExchangeRate}); err != nil {
		return exchanged{}, err
	} else if wait > 0 {
		return exchanged{}, protocol.ErrLimited.Withf("Too many token exchanges from this connection's tree: "+
			"%d at once, then one every %d seconds; try again in %s seconds.", ExchangeRate.Burst, int(ExchangeRate.Every/time.Second), seconds(wait))
	}

	expires := now.Add(AccessTokenTTL)
	if t.ExpiresAt.Before(expires) {
		expires = t.ExpiresAt
	}
	// The child lives as long as its one token: no record outlives it.
	child := Connection{ID: randomID("conn_"), Kind: "connector", PairingID: parent.PairingID, ClientID: clientID,
		ClientName: parent.ClientName, Host: parent.Host, CreatedAt: now, LastUsed: now, ParentID: parent.ID, RootID: root,
		ExpiresAt: expires}
	// The child's own record comes with it: a child stored without it
	// would inherit the parent's whole scope. None asked: no record, it
	// inherits.
	var sc *Scope
	if hasScope {
		sc = &Scope{Version: ScopeVersion, Entries: asked, UpdatedAt: now, UpdatedBy: "exchange"}
	}
	var full *DerivedFull
	if err := s.cfg.Store.PutDerivedConnection(ctx, child, sc, Derivations, now); errors.As(err, &full) {
		return exchanged{}, derivedFull(full)
	} else if err != nil {
		return exchanged{}, err
	}
	s.cfg.Logger.Info("connection derived", "pairing", child.PairingID, "connection", child.ID, "parent", parent.ID,
		"scoped", hasScope, "entries", len(asked))

	access := randomToken(prefixAccess)
	if err := s.cfg.Store.PutAccessToken(ctx, AccessToken{Hash: s.cfg.Hasher.Hash(purposeAccess, access), FamilyID: t.FamilyID,
		ConnectionID: child.ID, PairingID: child.PairingID, ClientID: clientID, Resource: s.resource, ExpiresAt: expires}); err != nil {
		return exchanged{}, err
	}
	s.clientUsed(ctx, clientID, now)
	s.connectionsChanged(child.PairingID)
	resolved, err := s.ResolvedScope(ctx, child.ID)
	if err != nil {
		return exchanged{}, err
	}
	return exchanged{AccessToken: access, IssuedTokenType: tokenTypeAccessToken, TokenType: "Bearer",
		ExpiresIn: int(expires.Sub(now) / time.Second), Scope: protocol.FormatScopeText(resolved)}, nil
}

// Derivations are the relay's bounds on derived connections (issue 23 §2;
// docs/security.md says why): 16 children of one connection, as issue 15
// item 13 had it (a host's sub-agents at once); 64 in the tree under one
// connection a person approved (its sub-agents' own sub-agents
// included); 256 in one browser (a few hosts' full trees). With
// ExchangeRate they bound what one approval can mint in an hour to 64
// live and 32 + 360 minted, where 16 children four deep made 69,904.
var Derivations = DerivedLimits{PerParent: MaxDerivedPerConnection, PerRoot: 64, PerPairing: 256}

// MaxDerivedPerConnection bounds the live connections derived from one
// connection at once (token exchange): a host's sub-agents, not a way to
// mint connections without end (issue 15 item 13).
const MaxDerivedPerConnection = 16

// ExchangeRate bounds the token exchanges of one tree (all the nodes
// together, in the store): 32 at once, then one every 10 s.
var ExchangeRate = Rate{Burst: 32, Every: 10 * time.Second}

// derivedFull is the OAuth error of an exchange over one of Derivations.
func derivedFull(f *DerivedFull) error {
	const after = "; revoke one of their tokens (POST /revoke), or wait until one expires (each lives at most an hour)."
	switch f.Limit {
	case LimitRoot:
		return protocol.ErrBadRequest.Withf("The connection the person approved already has %d live derived connections "+
			"in its tree (sub-agents' tokens, however deep), the most the relay allows"+after, f.Live)
	case LimitPairing:
		return protocol.ErrBadRequest.Withf("This browser already has %d live derived connections, the most the relay allows"+after, f.Live)
	}
	return protocol.ErrBadRequest.Withf("This connection already has %d live derived connections (sub-agent tokens), "+
		"the most the relay allows"+after, f.Live)
}

func notFoundAsGrant(err error) error {
	if errors.Is(err, ErrNotFound) {
		return invalidGrant("The subject token's connection was forgotten in the app.")
	}
	return err
}

// accessTokenRecord reads the stored record of an access token.
func (s *Server) accessTokenRecord(ctx context.Context, token string) (AccessToken, error) {
	t, _, err := lookup(ctx, s.cfg.Hasher, purposeAccess, token, s.cfg.Store.AccessToken)
	return t, err
}

// lineage returns the root of c's tree (the connection a person
// approved; c itself when it is one) and c's depth under it: 0 for a
// connection a person approved. It stops one past maxDerivation.
func (s *Server) lineage(ctx context.Context, c Connection) (string, int, error) {
	depth := 0
	for c.ParentID != "" && depth <= maxDerivation {
		var err error
		if c, err = s.cfg.Store.Connection(ctx, c.ParentID); err != nil {
			return "", 0, err
		}
		depth++
	}
	return c.ID, depth, nil
}

// parseScopeParam reads the scope parameter in the relay's words
// (protocol.ParseScopeText), checked against the catalogue.
func (s *Server) parseScopeParam(raw string) ([]protocol.ScopeEntry, error) {
	entries, err := protocol.ParseScopeText(raw)
	if err != nil {
		return nil, protocol.ErrInvalidScope.With("Each scope entry is tool or tool:action1,action2.")
	}
	checked, err := protocol.CheckScope(s.cfg.Bundle, entries, true)
	var rerr *protocol.RelayError
	if errors.As(err, &rerr) {
		// Not CheckScope's sentence: it quotes the caller's words, and an
		// error_description is plain ASCII without quotes (RFC 6749 §5.2).
		return nil, protocol.ErrInvalidScope
	}
	return checked, err
}

// requestedScope reads an authorization request's scope parameter for the
// person's picker: the entries in the relay's words that name the
// catalogue's tools and actions, each tool once. Words of other
// vocabularies (openid, offline_access…) are no error here: hosts send
// them, and the person decides anyway. At most maxRequestedWords are read,
// so the stored request stays small whatever the URL holds.
func (s *Server) requestedScope(raw string) []protocol.ScopeEntry {
	var out []protocol.ScopeEntry
	seen := map[string]bool{}
	for i, word := range strings.Fields(raw) {
		if i == maxRequestedWords {
			break
		}
		e, err := protocol.ParseScopeWord(word)
		if err != nil || seen[e.Tool] {
			continue
		}
		if checked, err := protocol.CheckScope(s.cfg.Bundle, []protocol.ScopeEntry{e}, false); err == nil {
			seen[e.Tool] = true
			out = append(out, checked...)
		}
	}
	return out
}

const maxRequestedWords = 64
