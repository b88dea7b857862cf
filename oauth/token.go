package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// maxTokenForm bounds a token or revocation request's body.
const maxTokenForm = 16 << 10

// reused is the invalid_grant of a code or refresh token presented again:
// the token endpoint revokes family, what the first use issued.
type reused struct {
	*protocol.RelayError
	family string
}

func (e *reused) Unwrap() error { return e.RelayError }

func invalidGrant(desc string) *protocol.RelayError { return protocol.ErrInvalidGrant.With(desc) }

// issued is a token response.
type issued struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

// token is the token endpoint: the authorization-code, refresh and
// token-exchange grants.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenForm)
	if err := r.ParseForm(); err != nil {
		httpx.WriteOAuthError(w, protocol.ErrBadRequest.With("The request body must be a form of at most 16 KiB."))
		return
	}
	f := r.PostForm
	if f.Get("client_id") == "" {
		httpx.WriteOAuthError(w, protocol.ErrInvalidClient)
		return
	}
	if f.Has("resource") && !s.isResource(f.Get("resource")) {
		httpx.WriteOAuthError(w, s.notThisResource("resource"))
		return
	}
	var out any
	var err error
	grant := f.Get("grant_type")
	switch grant {
	case "authorization_code":
		out, err = s.exchangeCode(r.Context(), f.Get("client_id"), f.Get("code"), f.Get("redirect_uri"), f.Get("code_verifier"))
	case "refresh_token":
		out, err = s.refresh(r.Context(), f.Get("client_id"), f.Get("refresh_token"))
	case grantTokenExchange:
		out, err = s.exchangeToken(r.Context(), f.Get("client_id"), f)
	default:
		httpx.WriteOAuthError(w, protocol.ErrUnsupportedGrantType.With("grant_type must be authorization_code, refresh_token or "+grantTokenExchange+"."))
		return
	}
	var again *reused
	if errors.As(err, &again) {
		s.revokeFamily(r.Context(), again.family)
	}
	var rerr *protocol.RelayError
	switch {
	case errors.As(err, &rerr):
		httpx.WriteOAuthError(w, rerr)
	case err != nil:
		s.cfg.Logger.Error("token grant", "grant", grant, "err", err)
		WriteUnavailable(w, "The relay could not issue tokens now; retry in a few seconds.")
	default:
		s.cfg.Metrics.TokensIssued.WithLabelValues(grant).Inc()
		httpx.WriteJSON(w, http.StatusOK, out)
	}
}

// exchangeCode redeems an authorization code, once (SPEC §5): a second use
// revokes what the first issued.
func (s *Server) exchangeCode(ctx context.Context, clientID, code, redirectURI, verifier string) (issued, error) {
	if code == "" || verifier == "" {
		return issued{}, protocol.ErrBadRequest.With("code and code_verifier are required.")
	}
	req, err := s.requestByAuthCode(ctx, code)
	if errors.Is(err, ErrNotFound) {
		return issued{}, invalidGrant("The authorization code is unknown or expired.")
	}
	if err != nil {
		return issued{}, err
	}
	now := s.cfg.Clock.Now().UTC()
	check := func(cr *ConnectRequest) error {
		switch {
		case cr.Status == RequestExchanged:
			return &reused{invalidGrant("The authorization code was used already; what it issued is revoked."), cr.FamilyID}
		case cr.Status != RequestApproved || now.After(cr.AuthCodeExpiresAt):
			return invalidGrant("The authorization code is unknown or expired.")
		case cr.ClientID != clientID:
			return invalidGrant("The authorization code was issued to another client.")
		case cr.RedirectURI != redirectURI:
			return invalidGrant("redirect_uri does not match the authorization request.")
		case !pkceMatches(verifier, cr.CodeChallenge):
			return invalidGrant("code_verifier does not match the code_challenge.")
		}
		return nil
	}
	if err := check(&req); err != nil {
		return issued{}, err
	}
	conn, err := s.liveConnection(ctx, req.ConnectionID)
	if errors.Is(err, ErrNotFound) {
		return issued{}, invalidGrant("The connection was forgotten in the app.")
	}
	if err != nil {
		return issued{}, err // the store: 503, and the code still works
	}
	// The family exists before the code is marked used: a second use that
	// races this one then always finds the family it must revoke. If this
	// use loses the race, the family it made is revoked unseen.
	refresh := randomToken(prefixRefresh)
	fam := Family{ID: randomID("fam_"), ConnectionID: conn.ID, PairingID: conn.PairingID, ClientID: clientID, Resource: s.resource,
		CreatedAt: now, LastUsed: now, AbsoluteExpiry: now.Add(FamilyAbsoluteTTL), Current: s.cfg.Hasher.Hash(purposeRefresh, refresh)}
	if end := conn.End(); end.Before(fam.AbsoluteExpiry) {
		fam.AbsoluteExpiry = end // a family never outlives its connection
	}
	if err := s.cfg.Store.PutFamily(ctx, fam); err != nil {
		return issued{}, err
	}
	_, err = s.cfg.Store.UpdateConnectRequest(ctx, req.ID, func(cr *ConnectRequest) error {
		if err := check(cr); err != nil {
			return err
		}
		cr.Status, cr.FamilyID = RequestExchanged, fam.ID
		return nil
	})
	if err != nil {
		s.revokeFamily(ctx, fam.ID)
		return issued{}, err
	}
	return s.issue(ctx, fam, refresh)
}

// pkceMatches checks an S256 verifier against its challenge (RFC 7636).
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:]) == challenge
}

func (s *Server) requestByAuthCode(ctx context.Context, code string) (ConnectRequest, error) {
	if !strings.HasPrefix(code, prefixAuthCode) {
		return ConnectRequest{}, ErrNotFound
	}
	req, _, err := lookup(ctx, s.cfg.Hasher, purposeAuthCode, code, s.cfg.Store.ConnectRequestByAuthCode)
	return req, err
}

// issue mints an access token for fam and answers with it and refresh.
func (s *Server) issue(ctx context.Context, fam Family, refresh string) (issued, error) {
	access := randomToken(prefixAccess)
	now := s.cfg.Clock.Now().UTC()
	t := AccessToken{Hash: s.cfg.Hasher.Hash(purposeAccess, access), FamilyID: fam.ID, ConnectionID: fam.ConnectionID,
		PairingID: fam.PairingID, ClientID: fam.ClientID, Resource: fam.Resource, ExpiresAt: now.Add(AccessTokenTTL)}
	if err := s.cfg.Store.PutAccessToken(ctx, t); err != nil {
		return issued{}, err
	}
	s.clientUsed(ctx, fam.ClientID, now)
	return issued{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(AccessTokenTTL / time.Second), RefreshToken: refresh}, nil
}

// clientUsed renews a registered client: a token was issued to it
// (issue 15, defect 6). A client known by its metadata document is not
// stored. The token stands if the renewal fails: the client outlives its
// tokens by far (ClientIdleTTL), and the next one renews it.
func (s *Server) clientUsed(ctx context.Context, id string, now time.Time) {
	if cimd.IsClientID(id) {
		return
	}
	if err := s.cfg.Store.TouchClient(ctx, id, now); err != nil && !errors.Is(err, ErrNotFound) {
		s.cfg.Logger.Warn("renew client", "client", protocol.Clip(id, 200), "err", err)
	}
}
