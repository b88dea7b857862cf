package oauth

import (
	"context"
	"errors"

	"github.com/tabrelay/tabrelay/protocol"
)

// ErrInvalidToken is Verify's refusal: unknown, expired, revoked,
// forgotten, or for another resource. Hosts get a 401 either way.
var ErrInvalidToken = protocol.ErrInvalidToken

func notFoundAsInvalid(err error) error {
	if err == nil || errors.Is(err, ErrNotFound) {
		return ErrInvalidToken
	}
	return err
}

// RefreshIsCurrent reports whether token is the live member of a live
// family: the one token of its family that refreshes. For tests and the
// consistency check; it changes nothing.
func (s *Server) RefreshIsCurrent(ctx context.Context, token string) bool {
	fam, h, err := lookup(ctx, s.cfg.Hasher, purposeRefresh, token, s.cfg.Store.FamilyByRefresh)
	return err == nil && !fam.Revoked && equalHash(fam.Current, h)
}

// liveConnection reads a connection that is not revoked and, for a derived
// one, whose parents are not either: forgetting a parent ends its
// children at once (SPEC §8).
func (s *Server) liveConnection(ctx context.Context, id string) (Connection, error) {
	conn, err := s.cfg.Store.Connection(ctx, id)
	if err != nil {
		return Connection{}, err
	}
	c := conn
	now := s.cfg.Clock.Now()
	for depth := 0; ; depth++ {
		if c.Revoked || depth > maxDerivation || now.After(c.End()) {
			return Connection{}, ErrNotFound
		}
		if c.ParentID == "" {
			return conn, nil
		}
		if c, err = s.cfg.Store.Connection(ctx, c.ParentID); err != nil {
			return Connection{}, err
		}
	}
}
