package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tabrelay/tabrelay/protocol"
)

// ScopeVersion is the version of the scope record this relay writes and
// reads. A record of another version is not understood: no access.
const ScopeVersion = 1

// ErrScopeUnreadable says a stored scope record could not be read; the
// connection gets no access until the record is written anew (SPEC §8).
var ErrScopeUnreadable = errors.New("the stored scope record cannot be read")

// ParseScope reads a stored scope record. Anything but a well-formed
// record of ScopeVersion is an error: a scope that is not understood grants
// nothing.
func ParseScope(raw []byte) (Scope, error) {
	var s Scope
	if err := json.Unmarshal(raw, &s); err != nil {
		return Scope{}, fmt.Errorf("%w: %v", ErrScopeUnreadable, err)
	}
	if s.Version != ScopeVersion {
		return Scope{}, fmt.Errorf("%w: version %d", ErrScopeUnreadable, s.Version)
	}
	if !protocol.WellFormedScope(s.Entries) {
		return Scope{}, fmt.Errorf("%w: an entry without a tool or actions", ErrScopeUnreadable)
	}
	return s, nil
}

// maxDerivation bounds how deep derived connections may nest.
const maxDerivation = 4

// ResolvedScope is what connection may use now: its own record, and for a
// derived connection what its parent may use, intersected with its own
// entries when it has any. A record that cannot be read grants nothing and
// is logged with the connection it belongs to; a forgotten parent ends its
// children.
func (s *Server) ResolvedScope(ctx context.Context, connection string) ([]protocol.ScopeEntry, error) {
	return s.resolve(ctx, connection, 0)
}

func (s *Server) resolve(ctx context.Context, connection string, depth int) ([]protocol.ScopeEntry, error) {
	if depth > maxDerivation {
		return nil, nil
	}
	c, err := s.cfg.Store.Connection(ctx, connection)
	if err != nil || c.Revoked {
		return nil, notFoundAsNil(err)
	}
	own, hasOwn, err := s.ownScope(ctx, connection)
	if err != nil {
		return nil, err
	}
	if c.ParentID == "" {
		return own, nil
	}
	parent, err := s.resolve(ctx, c.ParentID, depth+1)
	if err != nil || !hasOwn {
		return parent, err
	}
	return protocol.Intersect(parent, own), nil
}

// ownScope reads a connection's own record (hasOwn false: none stored).
func (s *Server) ownScope(ctx context.Context, connection string) (entries []protocol.ScopeEntry, hasOwn bool, err error) {
	raw, err := s.cfg.Store.ScopeRecord(ctx, connection)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	entries, hasOwn = s.parseOwnScope(connection, raw)
	return entries, hasOwn, nil
}

// parseOwnScope reads a connection's own record as stored (nil: none). A
// record that does not parse grants nothing, loudly.
func (s *Server) parseOwnScope(connection string, raw []byte) (entries []protocol.ScopeEntry, hasOwn bool) {
	if raw == nil {
		return nil, false
	}
	sc, err := ParseScope(raw)
	if err != nil {
		s.cfg.Logger.Error("scope record unreadable: the connection gets no access", "connection", connection, "err", err)
		return nil, true
	}
	return sc.Entries, true
}

func notFoundAsNil(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Scope returns a connection's own scope record, as stored.
func (s *Server) Scope(ctx context.Context, connection string) (Scope, error) {
	raw, err := s.cfg.Store.ScopeRecord(ctx, connection)
	if err != nil {
		return Scope{}, err
	}
	return ParseScope(raw)
}

// WriteScope replaces (add false) or widens (add true) a connection's own
// scope, checked against the catalogue, by who ("tab" or "admin:<who>").
// Only the person (from a tab of the connection's browser) and the admin
// API call it: nothing an MCP request carries reaches it.
func (s *Server) WriteScope(ctx context.Context, connection string, entries []protocol.ScopeEntry, add bool, by string) (Scope, error) {
	c, err := s.cfg.Store.Connection(ctx, connection)
	if err != nil {
		return Scope{}, err
	}
	checked, err := protocol.CheckScope(s.cfg.Bundle, entries, true)
	if err != nil {
		return Scope{}, err
	}
	// The read of the record an add widens and the write are one
	// transaction: two adds at once both land.
	sc, err := s.cfg.Store.UpdateScope(ctx, connection, func(current []byte) (Scope, error) {
		entries := checked
		if add && current != nil {
			if cur, err := ParseScope(current); err == nil {
				entries = protocol.Widen(cur.Entries, checked)
			}
		}
		return Scope{Version: ScopeVersion, Entries: entries, UpdatedAt: s.cfg.Clock.Now().UTC(), UpdatedBy: by}, nil
	})
	if err != nil {
		return Scope{}, err
	}
	s.cfg.Logger.Info("scope written", "connection", connection, "by", by, "entries", len(sc.Entries))
	s.connectionsChanged(c.PairingID)
	return sc, nil
}

// ScopeHolders answers the reverse question from the index: which
// connections may call tool (and action, when not ""). The index names the
// connections whose own records grant it; a derived connection the index
// names is kept only when what it resolves to grants the tool too (its
// parent may not). Derived connections without a record of their own
// inherit their parent's resolved scope and are not in the index: they are
// found from the holders' pairings' connection lists (a browser's, short),
// never by a scan of every connection.
func (s *Server) ScopeHolders(ctx context.Context, tool, action string) ([]string, error) {
	ids, err := s.cfg.Store.ScopeHolders(ctx, tool, protocol.ActionsGranting(action))
	if err != nil {
		return nil, err
	}
	grants := func(id string) bool {
		resolved, rerr := s.ResolvedScope(ctx, id)
		return rerr == nil && (protocol.Allows(resolved, tool, action) || action == "" && protocol.NamesTool(resolved, tool))
	}
	var out []string
	pairings := map[string]bool{}
	for _, id := range ids {
		c, err := s.liveConnection(ctx, id)
		if err != nil {
			continue // forgotten, expired, or left behind in the index by a dropped record
		}
		if c.ParentID != "" && !grants(id) {
			continue
		}
		out = append(out, id)
		pairings[c.PairingID] = true
	}
	for pairing := range pairings {
		heirs, err := s.inheritingHolders(ctx, pairing, grants)
		if err != nil {
			return nil, err
		}
		out = append(out, heirs...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// inheritingHolders is the live derived connections of pairing without a
// scope record of their own whose resolved scope grants (grants(id)).
func (s *Server) inheritingHolders(ctx context.Context, pairing string, grants func(string) bool) ([]string, error) {
	conns, err := s.cfg.Store.ConnectionsOfPairing(ctx, pairing)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range conns {
		if c.ParentID == "" || c.Revoked {
			continue
		}
		if _, err := s.cfg.Store.ScopeRecord(ctx, c.ID); !errors.Is(err, ErrNotFound) {
			continue // its own record is in the index (or unreadable: no access)
		}
		if _, err := s.liveConnection(ctx, c.ID); err == nil && grants(c.ID) {
			out = append(out, c.ID)
		}
	}
	return out, nil
}
