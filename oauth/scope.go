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
	for _, e := range s.Entries {
		if e.Tool == "" || len(e.Actions) == 0 {
			return Scope{}, fmt.Errorf("%w: an entry without a tool or actions", ErrScopeUnreadable)
		}
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
	sc, err := ParseScope(raw)
	if err != nil {
		s.cfg.Logger.Error("scope record unreadable: the connection gets no access", "connection", connection, "err", err)
		return nil, true, nil
	}
	return sc.Entries, true, nil
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
	checked, err := s.checkEntries(entries, true)
	if err != nil {
		return Scope{}, err
	}
	if add {
		if cur, err := s.Scope(ctx, connection); err == nil {
			checked = mergeEntries(cur.Entries, checked)
		}
	}
	sc := Scope{Version: ScopeVersion, Entries: checked, UpdatedAt: s.cfg.Clock.Now().UTC(), UpdatedBy: by}
	if err := s.cfg.Store.PutScope(ctx, connection, sc); err != nil {
		return Scope{}, err
	}
	s.cfg.Logger.Info("scope written", "connection", connection, "by", by, "entries", len(sc.Entries))
	s.connectionsChanged(c.PairingID)
	return sc, nil
}

// mergeEntries adds more to have: a tool's actions are joined ("*" wins).
func mergeEntries(have, more []protocol.ScopeEntry) []protocol.ScopeEntry {
	out := slices.Clone(have)
	for _, m := range more {
		i := slices.IndexFunc(out, func(e protocol.ScopeEntry) bool { return e.Tool == m.Tool })
		if i < 0 {
			out = append(out, m)
			continue
		}
		switch {
		case slices.Contains(out[i].Actions, "*") || slices.Contains(m.Actions, "*"):
			out[i].Actions = []string{"*"}
		default:
			for _, a := range m.Actions {
				if !slices.Contains(out[i].Actions, a) {
					out[i].Actions = append(out[i].Actions, a)
				}
			}
		}
	}
	return out
}

// ScopeHolders answers the reverse question from the index: which
// connections' own records grant tool (and action, when not ""). A
// derived connection the index names is kept only when what it resolves to
// grants the tool too (its parent may not); derived connections without
// a record of their own inherit and are not in the index.
func (s *Server) ScopeHolders(ctx context.Context, tool, action string) ([]string, error) {
	ids, err := s.cfg.Store.ScopeHolders(ctx, tool, action)
	if err != nil {
		return nil, err
	}
	out := ids[:0]
	for _, id := range ids {
		c, err := s.liveConnection(ctx, id)
		if err != nil {
			continue // forgotten, expired, or left behind in the index by a dropped record
		}
		if c.ParentID != "" {
			resolved, rerr := s.ResolvedScope(ctx, id)
			if rerr != nil || !protocol.Allows(resolved, tool, action) && !(action == "" && protocol.NamesTool(resolved, tool)) {
				continue
			}
		}
		out = append(out, id)
	}
	return out, nil
}
