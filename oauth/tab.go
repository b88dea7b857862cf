package oauth

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/tabrelay/tabrelay/internal/limit"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// The person's side of the authorization server, called for a proven tab
// of pairing (the tab socket checked its secret) from address addr.

// Approve grants the connect request of a typed code to pairing, with
// the scope the person chose (SPEC §5, §8): ApproveVia of ViaTyped, for
// callers that never open a relay window.
func (s *Server) Approve(ctx context.Context, pairing, addr, code string, scope []protocol.ScopeEntry) (protocol.ConnectionInfo, error) {
	info, _, err := s.ApproveVia(ctx, pairing, addr, code, scope, protocol.ViaTyped)
	return info, err
}

// ApproveVia is the person's yes to code, which reached the tab via link
// or typed (protocol.ViaLink, ViaTyped; "" is typed). The code is single
// use either way.
//
// A link approval makes no connection yet: the request waits
// (RequestConfirming) until the approving browser opens the relay page
// of the returned URL and proves there that it holds the waiting page's
// cookie (confirm); without the cookie it is declined. A typed code may
// come from another device (the relay cannot tell): it connects at once,
// unless the operator turned that off (Config.NoCrossDevice).
func (s *Server) ApproveVia(ctx context.Context, pairing, addr, code string, scope []protocol.ScopeEntry, via string) (protocol.ConnectionInfo, string, error) {
	entries, err := protocol.CheckScope(s.cfg.Bundle, scope, false)
	if err != nil {
		return protocol.ConnectionInfo{}, "", err
	}
	if via != protocol.ViaLink && s.cfg.NoCrossDevice {
		// Before the code is looked up: the answer tells a guesser nothing.
		s.cfg.Metrics.Decisions.WithLabelValues("cross_device_off").Inc()
		return protocol.ConnectionInfo{}, "", protocol.ErrCrossDeviceOff
	}
	req, err := s.pendingRequest(ctx, addr, code)
	if err != nil {
		return protocol.ConnectionInfo{}, "", err
	}
	if via == protocol.ViaLink {
		confirm, err := s.awaitProof(ctx, req, pairing, entries)
		return protocol.ConnectionInfo{}, confirm, err
	}
	info, err := s.grant(ctx, req, pairing, entries, RequestPending)
	return info, "", err
}

// grant makes the connection req asks for, for pairing with entries, and
// moves req from status from to approved. The connection and its scope
// are stored first and the request marked approved last, so the waiting
// page never hands out a code for a connection that is not there yet.
func (s *Server) grant(ctx context.Context, req ConnectRequest, pairing string, entries []protocol.ScopeEntry, from string) (protocol.ConnectionInfo, error) {
	now := s.cfg.Clock.Now().UTC()
	c := Connection{ID: randomID("conn_"), Kind: "connector", PairingID: pairing, ClientID: req.ClientID,
		ClientName: req.ClientName, Host: asciiHost(req.RedirectURI), CreatedAt: now, LastUsed: now,
		ExpiresAt: now.Add(ConnectionTTL)}
	err := s.cfg.Store.PutScope(ctx, c.ID, Scope{Version: ScopeVersion, Entries: entries, UpdatedAt: now, UpdatedBy: "tab"})
	if err == nil {
		err = s.cfg.Store.PutConnection(ctx, c)
	}
	if err != nil {
		s.cfg.Logger.Error("store connection", "connection", c.ID, "err", err)
		return protocol.ConnectionInfo{}, protocol.ErrUnavailable
	}
	err = s.mark(ctx, req.ID, from, func(r *ConnectRequest) {
		r.Status, r.PairingID, r.DecidedAt, r.ConnectionID = RequestApproved, pairing, now, c.ID
	})
	if err != nil {
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

// awaitProof records a link approval of req by pairing with entries, and
// returns the relay page where the approving browser proves it opened
// the waiting page. The page's handle (single use, as long-lived as the
// code) is in the URL's fragment, which the browser never sends; the
// page posts it.
func (s *Server) awaitProof(ctx context.Context, req ConnectRequest, pairing string, entries []protocol.ScopeEntry) (string, error) {
	handle := randomToken("")
	now := s.cfg.Clock.Now().UTC()
	err := s.mark(ctx, req.ID, RequestPending, func(r *ConnectRequest) {
		r.Status, r.PairingID, r.DecidedAt = RequestConfirming, pairing, now
		r.ApprovedScope, r.ConfirmHash = entries, s.cfg.Hasher.Hash(purposeConfirm, handle)
	})
	if err != nil {
		return "", err
	}
	s.cfg.Metrics.Decisions.WithLabelValues("confirming").Inc()
	return s.confirmPath(req.ID) + "#" + handle, nil
}

func (s *Server) confirmPath(id string) string {
	return s.cfg.Issuer + "/authorize/status/" + url.PathEscape(id) + "/confirm"
}

// Decline refuses the connect request of code: the waiting page returns
// access_denied to the client.
func (s *Server) Decline(ctx context.Context, pairing, addr, code string) error {
	req, err := s.pendingRequest(ctx, addr, code)
	if err == nil {
		now := s.cfg.Clock.Now().UTC()
		err = s.mark(ctx, req.ID, RequestPending, func(r *ConnectRequest) {
			r.Status, r.PairingID, r.DecidedAt = RequestDeclined, pairing, now
		})
	}
	if err != nil {
		return err
	}
	s.cfg.Metrics.Decisions.WithLabelValues("declined").Inc()
	return nil
}

// ConnectInfo tells a tab of pairing who waits behind code, before the
// person approves (SPEC §5: the person sees who asks), and what the relay
// knows of where the request started. It counts against the same
// wrong-code limits as an approval, and uses nothing up. For a request
// this browser decided already it says where that stands (State), which
// is how the Connect panel learns the outcome of a link approval.
func (s *Server) ConnectInfo(ctx context.Context, pairing, addr, code string) (protocol.ConnectInfo, error) {
	req, err := s.pendingRequest(ctx, addr, code)
	state := RequestPending
	if err != nil {
		var ok bool
		if state, ok = decidedBy(req, pairing, s.cfg.Clock.Now()); !ok {
			return protocol.ConnectInfo{}, err
		}
	}
	host, mixed := displayHost(redirectHost(req.RedirectURI))
	info := protocol.ConnectInfo{Client: req.ClientName, ClientKind: protocol.ClientRegistered,
		RedirectHost: host, RedirectHostMixedScript: mixed, RequestedScope: req.RequestedScope, ExpiresAt: req.ExpiresAt.UnixMilli(),
		StartedAt: req.CreatedAt.UnixMilli(), Device: req.Device, SameAddress: s.matches(purposeAddress, addr, req.AddrHash),
		CrossDevice: !s.cfg.NoCrossDevice, State: state, Reason: req.DeclineReason}
	if cimd.IsClientID(req.ClientID) {
		info.ClientKind, info.ClientURL = protocol.ClientMetadataDocument, req.ClientID
	}
	if state == RequestApproved {
		info.Connection = s.madeFor(ctx, req)
	}
	return info, nil
}

// madeFor is the live connection an approved request made, or nil.
func (s *Server) madeFor(ctx context.Context, req ConnectRequest) *protocol.ConnectionInfo {
	c, err := s.liveConnection(ctx, req.ConnectionID)
	if err != nil {
		return nil
	}
	scope, err := s.ResolvedScope(ctx, c.ID)
	if err != nil {
		return nil
	}
	info := connectionInfo(c, scope)
	return &info
}

// decidedBy is where req stands, when pairing decided it.
func decidedBy(req ConnectRequest, pairing string, now time.Time) (string, bool) {
	if req.PairingID == "" || req.PairingID != pairing {
		return "", false
	}
	switch req.Status {
	case RequestConfirming:
		if now.After(req.ExpiresAt) {
			return RequestExpired, true
		}
		return RequestConfirming, true
	case RequestApproved, RequestExchanged:
		return RequestApproved, true
	case RequestDeclined:
		return RequestDeclined, true
	}
	return "", false
}

// pendingRequest finds the request of a connect code that still waits.
// Wrong codes are limited in the store, on every node alike, whatever
// tab secret the tab made (issue 15, defect 7): per address and network
// first, then for the whole relay. A code of a request started from the
// tab's own network needs only the first two: guessers elsewhere who
// spend the relay's budget cannot keep a person from approving the host
// she just started (issue 23). Every code looked up spends a wrong code
// of the address and network unless it is such a request's; it spends
// one of the relay when it was looked up for every request, which is when
// the relay's budget was not spent.
func (s *Server) pendingRequest(ctx context.Context, addr, code string) (ConnectRequest, error) {
	if code == "" {
		return ConnectRequest{}, protocol.ErrBadRequest.With("The request names no connect code.")
	}
	own, relay := codeBuckets(addr)
	if err := s.codeTriesLeft(ctx, "limited", own...); err != nil {
		return ConnectRequest{}, err
	}
	req, err := s.requestByCode(ctx, normalizeConnectCode(code))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return ConnectRequest{}, protocol.ErrUnavailable
	}
	if err == nil && req.Network != "" && req.Network == limit.Network(addr) {
		return req, stillPending(&req, s.cfg.Clock.Now())
	}
	// A wrong code, or one of another network's request: looked up for
	// the relay too, if it has a wrong code left.
	if err := s.codeTriesLeft(ctx, "limited_relay", relay); err != nil {
		s.countWrongCode(ctx, own...) // it was tried against this network's requests
		return ConnectRequest{}, err
	}
	if errors.Is(err, ErrNotFound) {
		s.countWrongCode(ctx, append(own, relay)...)
		s.cfg.Metrics.Decisions.WithLabelValues("wrong_code").Inc()
		return ConnectRequest{}, protocol.ErrWrongCode
	}
	return req, stillPending(&req, s.cfg.Clock.Now())
}

// codeTriesLeft refuses any code, the right one too, once one of buckets
// has no wrong code left (counted under label): a guesser must not learn
// that a code was right by its answer.
func (s *Server) codeTriesLeft(ctx context.Context, label string, buckets ...limit.Bucket) error {
	wait, _, err := limit.Check(ctx, s.cfg.Store, s.cfg.Clock.Now(), buckets...)
	if err != nil {
		s.cfg.Logger.Error("read the wrong-code limit", "err", err)
		return protocol.ErrUnavailable
	}
	if wait > 0 {
		s.cfg.Metrics.Decisions.WithLabelValues(label).Inc()
		return protocol.ErrLimited
	}
	return nil
}

func stillPending(r *ConnectRequest, now time.Time) error {
	return stillAt(r, RequestPending, now)
}

// stillAt is nil while r is at status and its code has not expired.
func stillAt(r *ConnectRequest, status string, now time.Time) error {
	switch {
	case r.Status != status:
		return protocol.ErrUsedCode
	case now.After(r.ExpiresAt):
		return protocol.ErrExpiredCode
	}
	return nil
}

// mark moves a request from status from, once, atomically: set says to
// what.
func (s *Server) mark(ctx context.Context, id, from string, set func(*ConnectRequest)) error {
	now := s.cfg.Clock.Now().UTC()
	_, err := s.cfg.Store.UpdateConnectRequest(ctx, id, func(r *ConnectRequest) error {
		if err := stillAt(r, from, now); err != nil {
			return err
		}
		set(r)
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
	s.revokeDerived(ctx, connection)
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

// revokeDerived marks every connection derived from id, however deep,
// revoked: they ended with it (every check walks to the root), and now
// they leave the lists and the counts of Derivations too. The walk follows
// the children's index, bounded by Derivations.PerRoot.
func (s *Server) revokeDerived(ctx context.Context, id string) {
	now := s.cfg.Clock.Now()
	next := []string{id}
	for seen := 0; len(next) > 0 && seen <= Derivations.PerRoot; {
		kids, err := s.cfg.Store.DerivedChildren(ctx, next[0], now)
		if err != nil {
			s.cfg.Logger.Error("list derived connections", "connection", next[0], "err", err)
		}
		next = append(next[1:], kids...)
		for _, k := range kids {
			seen++
			if _, err := s.cfg.Store.UpdateConnection(ctx, k, func(c *Connection) error { c.Revoked = true; return nil }); err != nil &&
				!errors.Is(err, ErrNotFound) {
				s.cfg.Logger.Error("revoke a derived connection", "connection", k, "err", err)
			}
		}
	}
}

// endDerivedToken ends the derived connection whose one access token was
// revoked (RFC 7009): it has no other, and it leaves the counts of
// Derivations at once. A connection a person approved stays: its host
// refreshes.
func (s *Server) endDerivedToken(ctx context.Context, connection string) {
	c, err := s.cfg.Store.UpdateConnection(ctx, connection, func(c *Connection) error {
		if c.ParentID == "" || c.Revoked {
			return ErrNotFound
		}
		c.Revoked = true
		return nil
	})
	if err != nil {
		return
	}
	s.revokeDerived(ctx, connection)
	s.connectionsChanged(c.PairingID)
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
		CreatedAt: c.CreatedAt.UnixMilli(), LastUsedAt: c.LastUsed.UnixMilli(), Scope: scope, ParentID: c.ParentID}
}
