package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// Expirer is a store whose test can move it in time: ExpireAsOf leaves
// the store as it will be at now, every record deleted that its rules
// delete by then. The embedded store sweeps (a Sweeper is an Expirer
// too); the Redis store's test deletes each key whose TTL, counted from
// the store's clock, runs out by now, as Redis will (its own clock
// cannot be moved).
type Expirer interface {
	ExpireAsOf(ctx context.Context, now time.Time) error
}

// AsOf moves store s to now, skipping the test when s can be neither
// swept nor expired. The pairing store's suite uses it too.
func AsOf(t *testing.T, s any, now time.Time) {
	t.Helper()
	switch e := s.(type) {
	case Expirer:
		must(t, e.ExpireAsOf(ctx, now))
	case Sweeper:
		_, err := e.Sweep(ctx, now)
		must(t, err)
	default:
		t.Skip("the store can be neither swept nor expired")
	}
}

// testLifetimes: every record the authorization server stores has an end,
// and its index entries go with it (issue 15, defect 6). Each record is
// still there just before its end and gone just after.
func testLifetimes(t *testing.T, s oauth.Store) {
	const margin = 10 * time.Minute // less than the time between any two ends below
	before := func(end time.Time) time.Time { return end.Add(-margin) }
	after := func(end time.Time) time.Time { return end.Add(margin) }

	// A client nobody got a token for goes ClientUnusedTTL after its
	// registration; one whose tokens renew it, ClientIdleTTL after the last.
	unused := oauth.Client{ID: "unused", Name: "App", Kind: "dcr", CreatedAt: now}
	used := oauth.Client{ID: "used", Name: "App", Kind: "dcr", CreatedAt: now}
	must(t, s.PutClient(ctx, unused))
	must(t, s.PutClient(ctx, used))
	lastToken := now.Add(5 * 24 * time.Hour)
	must(t, s.TouchClient(ctx, "used", now.Add(24*time.Hour)))
	must(t, s.TouchClient(ctx, "used", lastToken))
	used.LastUsed = lastToken
	if used.End() != lastToken.Add(oauth.ClientIdleTTL) {
		t.Fatalf("a used client ends at %v", used.End())
	}

	// A connect request with its codes.
	req := request("r1")
	putWithAuthCode(t, s, withAuthCode(req, "auth-r1", now.Add(oauth.ConnectCodeTTL)))
	reqEnd := req.ExpiresAt.Add(oauth.AuthCodeTTL)

	// A person's connection with its scope, and its family; a connection
	// derived from it, scoped, ending with its token.
	conn := connection("conn-a", "p1")
	conn.ExpiresAt = now.Add(oauth.ConnectionTTL)
	must(t, s.PutScope(ctx, conn.ID, grant("counter")))
	must(t, s.PutConnection(ctx, conn))
	fam := family("f1", conn.ID, "refresh-f1")
	must(t, s.PutFamily(ctx, fam))
	famEnd := now.Add(oauth.FamilyIdleTTL) // never refreshed: idle first
	child := connection("conn-d", "p1")
	child.ParentID, child.ExpiresAt = conn.ID, now.Add(oauth.AccessTokenTTL)
	must(t, s.PutScope(ctx, child.ID, grant("counter")))
	must(t, s.PutConnection(ctx, child))
	token := accessToken("a1", now.Add(oauth.AccessTokenTTL))
	must(t, s.PutAccessToken(ctx, token))

	type check struct {
		name string
		end  time.Time
		live func() bool
	}
	found := func(err error) bool {
		if err != nil && !errors.Is(err, oauth.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	holds := func(tool, conn string) bool {
		ids, err := s.ScopeHolders(ctx, tool, nil)
		must(t, err)
		return slices.Contains(ids, conn)
	}
	listed := func(conn string) bool {
		conns, err := s.ConnectionsOfPairing(ctx, "p1")
		must(t, err)
		return slices.ContainsFunc(conns, func(c oauth.Connection) bool { return c.ID == conn })
	}
	checks := []check{
		{"access token", token.ExpiresAt, func() bool { _, err := s.AccessToken(ctx, token.Hash); return found(err) }},
		{"derived connection", child.ExpiresAt, func() bool { _, err := s.Connection(ctx, child.ID); return found(err) }},
		{"derived connection's scope", child.ExpiresAt, func() bool { _, err := s.ScopeRecord(ctx, child.ID); return found(err) }},
		{"derived connection in the scope index", child.ExpiresAt, func() bool { return holds("counter", child.ID) }},
		{"derived connection in its pairing's list", child.ExpiresAt, func() bool { return listed(child.ID) }},
		{"connect request", reqEnd, func() bool { _, err := s.ConnectRequest(ctx, req.ID); return found(err) }},
		{"connect request by code", reqEnd, func() bool { _, err := s.ConnectRequestByCode(ctx, req.CodeHash); return found(err) }},
		{"connect request by auth code", reqEnd, func() bool {
			_, err := s.ConnectRequestByAuthCode(ctx, hash("auth-r1"))
			return found(err)
		}},
		{"unused client", unused.End(), func() bool { _, err := s.Client(ctx, unused.ID); return found(err) }},
		{"family", famEnd, func() bool { _, err := s.Family(ctx, fam.ID); return found(err) }},
		{"family by refresh", famEnd, func() bool { _, err := s.FamilyByRefresh(ctx, fam.Current); return found(err) }},
		{"family of its connection", famEnd, func() bool {
			fams, err := s.FamiliesOfConnection(ctx, conn.ID)
			must(t, err)
			return len(fams) == 1
		}},
		{"connection", conn.ExpiresAt, func() bool { _, err := s.Connection(ctx, conn.ID); return found(err) }},
		{"connection's scope", conn.ExpiresAt, func() bool { _, err := s.ScopeRecord(ctx, conn.ID); return found(err) }},
		{"connection in the scope index", conn.ExpiresAt, func() bool { return holds("counter", conn.ID) }},
		{"connection in its pairing's list", conn.ExpiresAt, func() bool { return listed(conn.ID) }},
		{"used client", used.End(), func() bool { _, err := s.Client(ctx, used.ID); return found(err) }},
	}
	// Time moves forward only: to just before each end, where everything
	// ending then or later is still there, then just after it, where what
	// ended is gone.
	slices.SortStableFunc(checks, func(a, b check) int { return a.end.Compare(b.end) })
	for i := 0; i < len(checks); {
		end := checks[i].end
		AsOf(t, s, before(end))
		for _, later := range checks[i:] {
			if !later.live() {
				t.Fatalf("%v before its end, the %s is gone", margin, later.name)
			}
		}
		AsOf(t, s, after(end))
		for ; i < len(checks) && checks[i].end.Equal(end); i++ {
			if checks[i].live() {
				t.Fatalf("%v after its end, the %s is still there", margin, checks[i].name)
			}
		}
	}
	// A client gone is not renewed into being by a late token.
	if err := s.TouchClient(ctx, unused.ID, after(used.End())); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("renewing a client that is gone: %v, want ErrNotFound", err)
	}
}

// withAuthCode is r approved, with an authorization code until expires.
func withAuthCode(r oauth.ConnectRequest, code string, expires time.Time) oauth.ConnectRequest {
	r.Status, r.AuthCodeHash, r.AuthCodeExpiresAt = oauth.RequestApproved, hash(code), expires
	return r
}

// grant is a scope of every action of tool.
func grant(tool string) oauth.Scope {
	return oauth.Scope{Version: 1, Entries: []protocol.ScopeEntry{{Tool: tool, Actions: []string{"*"}}}, UpdatedAt: now, UpdatedBy: "tab"}
}
