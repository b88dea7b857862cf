package oauth

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// The person's side of the authorization server, called for a proven tab
// of pairing (the tab socket checked its secret) from address addr.

// Approve grants the connect request of code to pairing, with the scope
// the person chose (SPEC §5, §8). The code is single use. The connection
// and its scope are stored first and the request marked approved last, so
// the waiting page never hands out a code for a connection that is not
// there yet.
func (s *Server) Approve(ctx context.Context, pairing, addr, code string, scope []protocol.ScopeEntry) (protocol.ConnectionInfo, error) {
	entries, err := protocol.CheckScope(s.cfg.Bundle, scope, false)
	if err != nil {
		return protocol.ConnectionInfo{}, err
	}
	req, err := s.pendingRequest(ctx, addr, code)
	if err != nil {
		return protocol.ConnectionInfo{}, err
	}
	now := s.cfg.Clock.Now().UTC()
	c := Connection{ID: randomID("conn_"), Kind: "connector", PairingID: pairing, ClientID: req.ClientID,
		ClientName: req.ClientName, Host: redirectHost(req.RedirectURI), CreatedAt: now, LastUsed: now,
		ExpiresAt: now.Add(ConnectionTTL)}
	err = s.cfg.Store.PutScope(ctx, c.ID, Scope{Version: ScopeVersion, Entries: entries, UpdatedAt: now, UpdatedBy: "tab"})
	if err == nil {
		err = s.cfg.Store.PutConnection(ctx, c)
	}
	if err != nil {
		s.cfg.Logger.Error("store connection", "connection", c.ID, "err", err)
		return protocol.ConnectionInfo{}, protocol.ErrUnavailable
	}
	if err := s.mark(ctx, req.ID, pairing, RequestApproved, c.ID); err != nil {
		// Another tab decided first, or the code expired: the connection
		// made for it is never handed out.
		_, _ = s.cfg.Store.UpdateConnection(ctx, c.ID, func(c *Connection) error { c.Revoked = true; return nil })
		_ = s.cfg.Store.PutScope(ctx, c.ID, Scope{Version: ScopeVersion, UpdatedAt: now, UpdatedBy: "tab:approve-lost"})
		return protocol.ConnectionInfo{}, err
	}
	s.cfg.Metrics.Decisions.WithLabelValues("approved").Inc()
	s.connectionsChanged(pairing)
	s.cfg.Logger.Info("connection approved", "pairing", pairing, "connection", c.ID, "client", c.ClientName)
	return connectionInfo(c, entries), nil
}

// Decline refuses the connect request of code: the waiting page returns
// access_denied to the client.
func (s *Server) Decline(ctx context.Context, pairing, addr, code string) error {
	req, err := s.pendingRequest(ctx, addr, code)
	if err == nil {
		err = s.mark(ctx, req.ID, pairing, RequestDeclined, "")
	}
	if err != nil {
		return err
	}
	s.cfg.Metrics.Decisions.WithLabelValues("declined").Inc()
	return nil
}

// ConnectInfo tells a tab of pairing who waits behind code, before the
// person approves (SPEC §5: the person sees who asks). It counts against
// the same wrong-code limits as an approval, and uses nothing up.
func (s *Server) ConnectInfo(ctx context.Context, pairing, addr, code string) (protocol.ConnectInfo, error) {
	req, err := s.pendingRequest(ctx, addr, code)
	if err != nil {
		return protocol.ConnectInfo{}, err
	}
	info := protocol.ConnectInfo{Client: req.ClientName, ClientKind: protocol.ClientRegistered,
		RedirectHost: redirectHost(req.RedirectURI), RequestedScope: req.RequestedScope, ExpiresAt: req.ExpiresAt.UnixMilli()}
	if cimd.IsClientID(req.ClientID) {
		info.ClientKind, info.ClientURL = protocol.ClientMetadataDocument, req.ClientID
	}
	return info, nil
}

func redirectHost(redirectURI string) string {
	if u, err := url.Parse(redirectURI); err == nil {
		return u.Host
	}
	return ""
}

// pendingRequest finds the request of a connect code that still waits.
// Wrong codes are limited per address and for the whole relay, in the
// store (issue 15, defect 7): on every node alike, whatever tab secret
// the tab made.
func (s *Server) pendingRequest(ctx context.Context, addr, code string) (ConnectRequest, error) {
	if code == "" {
		return ConnectRequest{}, protocol.ErrBadRequest.With("The request names no connect code.")
	}
	if err := s.codeTriesLeft(ctx, addr); err != nil {
		return ConnectRequest{}, err
	}
	req, err := s.requestByCode(ctx, normalizeConnectCode(code))
	if errors.Is(err, ErrNotFound) {
		s.countWrongCode(ctx, addr)
		s.cfg.Metrics.Decisions.WithLabelValues("wrong_code").Inc()
		return ConnectRequest{}, protocol.ErrWrongCode
	}
	if err != nil {
		return ConnectRequest{}, protocol.ErrUnavailable
	}
	return req, stillPending(&req, s.cfg.Clock.Now())
}

// codeLimit is one of the wrong-code limits, with the decision label a
// code it refuses counts under.
type codeLimit struct {
	key, label string
	rate       Rate
}

func codeLimits(addr string) []codeLimit {
	return []codeLimit{
		{"wrong-code:" + addr, "limited", wrongCodesPerAddress},
		{"wrong-code", "limited_relay", wrongCodesRelayWide},
	}
}

// codeTriesLeft refuses any code, the right one too, once the address or
// the relay has no wrong code left: a guesser must not learn that a code
// was right by its answer.
func (s *Server) codeTriesLeft(ctx context.Context, addr string) error {
	now := s.cfg.Clock.Now()
	for _, l := range codeLimits(addr) {
		left, err := s.cfg.Store.AttemptLeft(ctx, l.key, l.rate, now)
		if err != nil {
			s.cfg.Logger.Error("read the wrong-code limit", "err", err)
			return protocol.ErrUnavailable
		}
		if !left {
			s.cfg.Metrics.Decisions.WithLabelValues(l.label).Inc()
			return protocol.ErrLimited
		}
	}
	return nil
}

// countWrongCode spends a wrong code of the address and of the relay. One
// that cannot be counted (the store failed) is not: the tab still hears
// the code was wrong.
func (s *Server) countWrongCode(ctx context.Context, addr string) {
	now := s.cfg.Clock.Now()
	for _, l := range codeLimits(addr) {
		if _, err := s.cfg.Store.TakeAttempt(ctx, l.key, l.rate, now); err != nil {
			s.cfg.Logger.Error("count a wrong code", "err", err)
		}
	}
}

func stillPending(r *ConnectRequest, now time.Time) error {
	switch {
	case r.Status != RequestPending:
		return protocol.ErrUsedCode
	case now.After(r.ExpiresAt):
		return protocol.ErrExpiredCode
	}
	return nil
}

// mark moves a request from pending to status, once, atomically.
func (s *Server) mark(ctx context.Context, id, pairing, status, connection string) error {
	now := s.cfg.Clock.Now().UTC()
	_, err := s.cfg.Store.UpdateConnectRequest(ctx, id, func(r *ConnectRequest) error {
		if err := stillPending(r, now); err != nil {
			return err
		}
		r.Status, r.PairingID, r.DecidedAt, r.ConnectionID = status, pairing, now, connection
		return nil
	})
	var rerr *protocol.RelayError
	if err != nil && !errors.As(err, &rerr) {
		s.cfg.Logger.Error("decide connect request", "err", err)
		return protocol.ErrUnavailable
	}
	return err
}

func (s *Server) requestByCode(ctx context.Context, code string) (ConnectRequest, error) {
	req, _, err := lookup(ctx, s.cfg.Hasher, purposeConnect, code, s.cfg.Store.ConnectRequestByCode)
	return req, err
}

// Connections lists the browser's live connections.
func (s *Server) Connections(ctx context.Context, pairing string) ([]protocol.ConnectionInfo, error) {
	cs, err := s.cfg.Store.ConnectionsOfPairing(ctx, pairing)
	if err != nil {
		return nil, protocol.ErrUnavailable
	}
	out := make([]protocol.ConnectionInfo, 0, len(cs))
	for _, c := range cs {
		if _, err := s.liveConnection(ctx, c.ID); err != nil {
			continue // forgotten, or derived from a forgotten one
		}
		// What it may use now: a derived connection's comes from its parent.
		resolved, err := s.ResolvedScope(ctx, c.ID)
		if err != nil {
			return nil, protocol.ErrUnavailable
		}
		out = append(out, connectionInfo(c, resolved))
	}
	return out, nil
}

// Forget ends one connection of the browser: its tokens stop working at
// once (every check reads the connection).
func (s *Server) Forget(ctx context.Context, pairing, connection string) error {
	_, err := s.cfg.Store.UpdateConnection(ctx, connection, func(c *Connection) error {
		if c.PairingID != pairing || c.Revoked {
			return ErrNotFound
		}
		c.Revoked = true
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return protocol.ErrNotFound
	}
	if err != nil {
		return protocol.ErrUnavailable
	}
	s.revokeFamilies(ctx, connection)
	// A forgotten connection grants nothing, and the reverse index says so.
	if err := s.cfg.Store.PutScope(ctx, connection, Scope{Version: ScopeVersion, UpdatedAt: s.cfg.Clock.Now().UTC(), UpdatedBy: "tab:forget"}); err != nil {
		s.cfg.Logger.Error("clear the scope of a forgotten connection", "connection", connection, "err", err)
	}
	s.revoked(pairing)
	s.connectionsChanged(pairing)
	s.cfg.Logger.Info("connection forgotten", "pairing", pairing, "connection", connection)
	return nil
}

// SetScope replaces one connection's scope with the person's choice, from
// a tab of the connection's browser (SPEC §8).
func (s *Server) SetScope(ctx context.Context, pairing, connection string, scope []protocol.ScopeEntry) (protocol.ConnectionInfo, error) {
	c, err := s.cfg.Store.Connection(ctx, connection)
	if err != nil || c.PairingID != pairing || c.Revoked {
		return protocol.ConnectionInfo{}, protocol.ErrNotFound
	}
	sc, err := s.WriteScope(ctx, connection, scope, false, "tab")
	var rerr *protocol.RelayError
	if errors.As(err, &rerr) {
		return protocol.ConnectionInfo{}, err
	}
	if err != nil {
		return protocol.ConnectionInfo{}, protocol.ErrUnavailable
	}
	return connectionInfo(c, sc.Entries), nil
}

func (s *Server) revokeFamilies(ctx context.Context, connection string) {
	fams, err := s.cfg.Store.FamiliesOfConnection(ctx, connection)
	if err != nil {
		s.cfg.Logger.Error("families of connection", "connection", connection, "err", err)
		return
	}
	for _, f := range fams {
		s.revokeFamily(ctx, f.ID)
	}
}

func connectionInfo(c Connection, scope []protocol.ScopeEntry) protocol.ConnectionInfo {
	if scope == nil {
		scope = []protocol.ScopeEntry{}
	}
	return protocol.ConnectionInfo{ID: c.ID, Client: c.ClientName, Host: c.Host,
		CreatedAt: c.CreatedAt.UnixMilli(), LastUsedAt: c.LastUsed.UnixMilli(), Scope: scope}
}
