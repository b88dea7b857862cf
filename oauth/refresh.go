package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// maxSuperseded bounds the old refresh hashes a family remembers for reuse
// detection; older ones are merely unknown.
const maxSuperseded = 32

// refresh rotates a refresh token (SPEC §5). Rotation is one atomic update
// of the family, so two concurrent refreshes cannot both mint a live
// member. The token just rotated out (Previous) may be presented again
// within RefreshGrace, RefreshRetries times, as long as its successor was
// never used: the client lost the response. Anything else that is not the
// current token revokes the family: it is reuse. That includes a rotated
// token presented more than RefreshRetries times within the grace, so a
// thief racing the client for a stolen token cannot keep trying quietly.
func (s *Server) refresh(ctx context.Context, clientID, token string) (issued, error) {
	if !strings.HasPrefix(token, prefixRefresh) {
		return issued{}, invalidGrant("The refresh token is unknown.")
	}
	fam, presented, err := lookup(ctx, s.cfg.Hasher, purposeRefresh, token, s.cfg.Store.FamilyByRefresh)
	if errors.Is(err, ErrNotFound) {
		return issued{}, invalidGrant("The refresh token is unknown, expired or revoked.")
	}
	if err != nil {
		return issued{}, err
	}
	now := s.cfg.Clock.Now().UTC()
	next := randomToken(prefixRefresh)
	nextHash := s.cfg.Hasher.Hash(purposeRefresh, next)
	updated, err := s.cfg.Store.UpdateFamily(ctx, fam.ID, func(f *Family) error {
		switch {
		case f.Revoked:
			return invalidGrant("The refresh token was revoked.")
		case f.ClientID != clientID:
			return invalidGrant("The refresh token was issued to another client.")
		case now.After(f.AbsoluteExpiry) || now.Sub(f.LastUsed) > FamilyIdleTTL:
			return invalidGrant("The refresh token expired; connect again.")
		case equalHash(f.Current, presented):
			f.Superseded = appendBounded(f.Superseded, f.Previous)
			f.Previous, f.RotatedAt, f.GraceRetries = f.Current, now, 0
		case equalHash(f.Previous, presented) && now.Sub(f.RotatedAt) <= RefreshGrace:
			if f.GraceRetries >= RefreshRetries {
				return &reused{invalidGrant("The refresh token was presented again too often; the connection's tokens are revoked."), f.ID}
			}
			f.GraceRetries++
			f.Superseded = appendBounded(f.Superseded, f.Current) // never delivered: it dies
		default:
			return &reused{invalidGrant("The refresh token was used already; the connection's tokens are revoked."), f.ID}
		}
		f.Current, f.LastUsed = nextHash, now
		return nil
	})
	var again *reused
	if errors.As(err, &again) {
		s.cfg.Metrics.RefreshReuse.Inc()
		s.cfg.Logger.Warn("refresh token reuse: family revoked", "family", fam.ID, "connection", fam.ConnectionID)
	}
	if err != nil {
		return issued{}, err
	}
	// A refresh is the host's sign of life (hourly at most): the
	// Connections panel shows it as the connection's last use.
	conn, err := s.cfg.Store.UpdateConnection(ctx, updated.ConnectionID, func(c *Connection) error {
		if c.Revoked {
			return ErrNotFound
		}
		c.LastUsed = now
		return nil
	})
	if errors.Is(err, ErrNotFound) || (err == nil && conn.Revoked) {
		return issued{}, invalidGrant("The connection was forgotten in the app.")
	}
	if err != nil {
		// The store: 503, not invalid_grant, which would make the host
		// drop its tokens. The token it presented is the family's
		// previous one now, which the grace takes again.
		return issued{}, err
	}
	return s.issue(ctx, updated, next)
}

func appendBounded(list [][]byte, h []byte) [][]byte {
	if h == nil {
		return list
	}
	list = append(list, h)
	if len(list) > maxSuperseded {
		list = list[len(list)-maxSuperseded:]
	}
	return list
}

// revokeFamily ends a family: its refresh tokens stop working, and so do
// its access tokens (every check reads the family).
func (s *Server) revokeFamily(ctx context.Context, id string) {
	if id == "" {
		return
	}
	f, err := s.cfg.Store.UpdateFamily(ctx, id, func(f *Family) error {
		f.Revoked = true
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.cfg.Logger.Error("revoke family", "family", id, "err", err)
	}
	if err == nil {
		s.revoked(f.PairingID)
	}
}

func (s *Server) connectionsChanged(pairing string) {
	s.verified.drop(pairing)
	if s.cfg.ConnectionsChanged != nil && pairing != "" {
		s.cfg.ConnectionsChanged(pairing)
	}
}

func (s *Server) revoked(pairing string) {
	s.verified.drop(pairing)
	if s.cfg.Revoked != nil && pairing != "" {
		s.cfg.Revoked(pairing)
	}
}

// revoke is RFC 7009 token revocation: a refresh token ends its family, an
// access token itself. Unknown tokens are answered 200 all the same.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenForm)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		httpx.WriteOAuthError(w, protocol.ErrBadRequest.With("token is required, in a form body."))
		return
	}
	token, clientID := r.PostForm.Get("token"), r.PostForm.Get("client_id")
	switch {
	case strings.HasPrefix(token, prefixRefresh):
		fam, _, err := lookup(r.Context(), s.cfg.Hasher, purposeRefresh, token, s.cfg.Store.FamilyByRefresh)
		if err == nil && (clientID == "" || fam.ClientID == clientID) {
			s.revokeFamily(r.Context(), fam.ID)
		}
	case strings.HasPrefix(token, prefixAccess):
		if t, h, err := lookup(r.Context(), s.cfg.Hasher, purposeAccess, token, s.cfg.Store.AccessToken); err == nil && (clientID == "" || t.ClientID == clientID) {
			_ = s.cfg.Store.DeleteAccessToken(r.Context(), h)
			s.endDerivedToken(r.Context(), t.ConnectionID)
			s.revoked(t.PairingID)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
