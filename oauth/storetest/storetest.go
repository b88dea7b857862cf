// Package storetest is the contract every oauth.Store must keep, as one set
// of tests, which the embedded and the Redis store both run. It only
// tests; it must not be imported outside test files.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
)

// Sweeper is what a store offers to delete the records no one can use any
// more. Sweep deletes, as of now, with their index entries:
//
//   - an access token once now is past its ExpiresAt (Verify refuses it);
//   - a connect request once now is past its ExpiresAt by more than
//     oauth.AuthCodeTTL (the waiting page polls every few seconds: an
//     approval it has not fetched by then is abandoned) and past its
//     AuthCodeExpiresAt (no code of it can be exchanged any more);
//   - a refresh family, revoked or not, once now is past its
//     AbsoluteExpiry or its LastUsed by more than oauth.FamilyIdleTTL (it
//     can never refresh again, and Verify refuses its access tokens);
//   - a client once now is past its End (its tokens renew it);
//   - a connection, revoked or not, once now is past its End, with its
//     scope record.
//
// It keeps everything else. It returns how many records it deleted. A
// store that expires its records by itself (Redis) is held to the same
// rules by testLifetimes, through an Expirer.
type Sweeper interface {
	Sweep(ctx context.Context, now time.Time) (int, error)
}

var (
	ctx = context.Background()
	now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
)

// Run runs the suite on stores made by open (a new, empty store each call).
// A store that is a Sweeper is held to its rules too.
func Run(t *testing.T, open func(t *testing.T) oauth.Store) {
	t.Run("unknown ids are not found", func(t *testing.T) { testNotFound(t, open(t)) })
	t.Run("clients", func(t *testing.T) { testClients(t, open(t)) })
	t.Run("connect requests", func(t *testing.T) { testRequests(t, open(t)) })
	t.Run("an error from fn aborts the update", func(t *testing.T) { testRequestAbort(t, open(t)) })
	t.Run("the auth-code index follows AuthCodeHash", func(t *testing.T) { testAuthCodeIndex(t, open(t)) })
	t.Run("connections", func(t *testing.T) { testConnections(t, open(t)) })
	t.Run("families", func(t *testing.T) { testFamilies(t, open(t)) })
	t.Run("rotation keeps the refresh index in step", func(t *testing.T) { testRotation(t, open(t)) })
	t.Run("access tokens", func(t *testing.T) { testAccessTokens(t, open(t)) })
	t.Run("concurrent family updates are not lost", func(t *testing.T) { testFamilyAtomic(t, open(t)) })
	t.Run("one of racing decisions wins", func(t *testing.T) { testRequestAtomic(t, open(t)) })
	t.Run("scope records and the reverse index", func(t *testing.T) { testScopeIndex(t, open(t)) })
	t.Run("concurrent scope updates are not lost", func(t *testing.T) { testScopeAtomic(t, open(t)) })
	t.Run("derived connections are counted", func(t *testing.T) { testDerived(t, open(t)) })
	t.Run("racing derivations take the places once", func(t *testing.T) { testDerivedAtomic(t, open(t)) })
	t.Run("every record ends", func(t *testing.T) { testLifetimes(t, open(t)) })
	t.Run("attempt buckets", func(t *testing.T) { testAttempts(t, open(t)) })
	t.Run("racing attempts take the burst once", func(t *testing.T) { testAttemptsAtomic(t, open(t)) })
	t.Run("sweep", func(t *testing.T) {
		s := open(t)
		sw, ok := s.(Sweeper)
		if !ok {
			t.Skip("the store does not sweep")
		}
		testSweep(t, s, sw)
	})
}

func testNotFound(t *testing.T, s oauth.Store) {
	_, err := s.Client(ctx, "nope")
	notFound(t, "client", err)
	notFound(t, "client renewal", s.TouchClient(ctx, "nope", now))
	_, err = s.ConnectRequest(ctx, "nope")
	notFound(t, "request", err)
	_, err = s.ConnectRequestByCode(ctx, hash("nope"))
	notFound(t, "request by code", err)
	_, err = s.ConnectRequestByAuthCode(ctx, hash("nope"))
	notFound(t, "request by auth code", err)
	_, err = s.UpdateConnectRequest(ctx, "nope", func(*oauth.ConnectRequest) error { return nil })
	notFound(t, "request update", err)
	_, err = s.Connection(ctx, "nope")
	notFound(t, "connection", err)
	_, err = s.UpdateConnection(ctx, "nope", func(*oauth.Connection) error { return nil })
	notFound(t, "connection update", err)
	_, err = s.Family(ctx, "nope")
	notFound(t, "family", err)
	_, err = s.FamilyByRefresh(ctx, hash("nope"))
	notFound(t, "family by refresh", err)
	_, err = s.UpdateFamily(ctx, "nope", func(*oauth.Family) error { return nil })
	notFound(t, "family update", err)
	_, err = s.AccessToken(ctx, hash("nope"))
	notFound(t, "access token", err)
	conns, err := s.ConnectionsOfPairing(ctx, "nope")
	if err != nil || len(conns) != 0 {
		t.Fatalf("connections of an unknown pairing: %v, %v", conns, err)
	}
	fams, err := s.FamiliesOfConnection(ctx, "nope")
	if err != nil || len(fams) != 0 {
		t.Fatalf("families of an unknown connection: %v, %v", fams, err)
	}
}

func testClients(t *testing.T, s oauth.Store) {
	c := oauth.Client{ID: "https://app.example/client.json", Name: "App", RedirectURIs: []string{"https://app.example/cb"},
		Kind: "cimd", CreatedAt: now}
	must(t, s.PutClient(ctx, c))
	must(t, s.PutClient(ctx, oauth.Client{ID: "other", Name: "Other", Kind: "dcr", CreatedAt: now}))
	expect(t, "client", c)(s.Client(ctx, c.ID))
}

func testRequests(t *testing.T, s oauth.Store) {
	r := request("r1")
	must(t, s.PutConnectRequest(ctx, r))
	must(t, s.PutConnectRequest(ctx, request("r2")))
	expect(t, "request", r)(s.ConnectRequest(ctx, "r1"))
	expect(t, "request by code", r)(s.ConnectRequestByCode(ctx, r.CodeHash))

	want := r
	want.Status, want.PairingID, want.ConnectionID, want.DecidedAt = oauth.RequestApproved, "p1", "conn1", now.Add(time.Minute)
	expect(t, "update's result", want)(s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
		r.Status, r.PairingID, r.ConnectionID, r.DecidedAt = want.Status, want.PairingID, want.ConnectionID, want.DecidedAt
		return nil
	}))
	expect(t, "updated request", want)(s.ConnectRequest(ctx, "r1"))
	expect(t, "updated request by code", want)(s.ConnectRequestByCode(ctx, r.CodeHash))
	expect(t, "other request", request("r2"))(s.ConnectRequest(ctx, "r2"))
}

func testRequestAbort(t *testing.T, s oauth.Store) {
	r := request("r1")
	must(t, s.PutConnectRequest(ctx, r))
	errStop := errors.New("stop")
	_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
		r.Status, r.AuthCodeHash = oauth.RequestApproved, hash("auth-r1")
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("update answered %v, want fn's error", err)
	}
	expect(t, "request after a failed update", r)(s.ConnectRequest(ctx, "r1"))
	_, err = s.ConnectRequestByAuthCode(ctx, hash("auth-r1"))
	notFound(t, "auth code of a failed update", err)

	f := family("f1", "conn1", "refresh-1")
	must(t, s.PutFamily(ctx, f))
	_, err = s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
		f.Revoked, f.Current = true, hash("refresh-2")
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("family update answered %v, want fn's error", err)
	}
	expect(t, "family after a failed update", f)(s.Family(ctx, "f1"))
	_, err = s.FamilyByRefresh(ctx, hash("refresh-2"))
	notFound(t, "refresh hash of a failed update", err)
}

func testAuthCodeIndex(t *testing.T, s oauth.Store) {
	must(t, s.PutConnectRequest(ctx, request("r1")))
	setCode := func(code string) oauth.ConnectRequest {
		r, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
			r.Status, r.AuthCodeHash, r.AuthCodeExpiresAt = oauth.RequestApproved, hash(code), now.Add(oauth.AuthCodeTTL)
			return nil
		})
		must(t, err)
		return r
	}
	r := setCode("auth-1")
	expect(t, "request by its auth code", r)(s.ConnectRequestByAuthCode(ctx, hash("auth-1")))
	r = setCode("auth-2") // the waiting page lost the first code and asked again
	_, err := s.ConnectRequestByAuthCode(ctx, hash("auth-1"))
	notFound(t, "the replaced auth code", err)
	expect(t, "request by its new auth code", r)(s.ConnectRequestByAuthCode(ctx, hash("auth-2")))
	expect(t, "request by code after codes", r)(s.ConnectRequestByCode(ctx, hash("code-r1")))
}

func testConnections(t *testing.T, s oauth.Store) {
	a, b, other := connection("conn-a", "p1"), connection("conn-b", "p1"), connection("conn-c", "p2")
	for _, c := range []oauth.Connection{a, b, other} {
		must(t, s.PutConnection(ctx, c))
	}
	expect(t, "connection", a)(s.Connection(ctx, "conn-a"))
	b.Revoked, b.LastUsed = true, now.Add(time.Hour)
	expect(t, "update's result", b)(s.UpdateConnection(ctx, "conn-b", func(c *oauth.Connection) error {
		c.Revoked, c.LastUsed = true, now.Add(time.Hour)
		return nil
	}))
	expect(t, "updated connection", b)(s.Connection(ctx, "conn-b"))

	got, err := s.ConnectionsOfPairing(ctx, "p1")
	must(t, err)
	sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
	expect(t, "connections of p1, the revoked one too", []oauth.Connection{a, b})(got, nil)
	expect(t, "connections of p2", []oauth.Connection{other})(s.ConnectionsOfPairing(ctx, "p2"))
}

func testFamilies(t *testing.T, s oauth.Store) {
	f1, f2, other := family("f1", "conn-a", "r1"), family("f2", "conn-a", "r2"), family("f3", "conn-b", "r3")
	for _, f := range []oauth.Family{f1, f2, other} {
		must(t, s.PutFamily(ctx, f))
	}
	expect(t, "family", f1)(s.Family(ctx, "f1"))
	expect(t, "family by its current hash", f2)(s.FamilyByRefresh(ctx, hash("r2")))
	got, err := s.FamiliesOfConnection(ctx, "conn-a")
	must(t, err)
	sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
	expect(t, "families of conn-a", []oauth.Family{f1, f2})(got, nil)
	expect(t, "families of conn-b", []oauth.Family{other})(s.FamiliesOfConnection(ctx, "conn-b"))
}

func testRotation(t *testing.T, s oauth.Store) {
	must(t, s.PutFamily(ctx, family("f1", "conn-a", "t0")))
	var f oauth.Family
	for i := 1; i <= 3; i++ { // t0 → t1 → t2 → t3, as oauth's refresh rotates
		next := hash(fmt.Sprintf("t%d", i))
		var err error
		f, err = s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
			if f.Previous != nil {
				f.Superseded = append(f.Superseded, f.Previous)
			}
			f.Previous, f.Current, f.RotatedAt = f.Current, next, now.Add(time.Duration(i)*time.Minute)
			return nil
		})
		must(t, err)
	}
	if len(f.Hashes()) != 4 {
		t.Fatalf("the family answers for %d hashes, want t0..t3", len(f.Hashes()))
	}
	expect(t, "rotated family", f)(s.Family(ctx, "f1"))
	for _, h := range f.Hashes() {
		expect(t, "family by a hash of Hashes()", f)(s.FamilyByRefresh(ctx, h))
	}
	// Dropping the oldest (as the bound on Superseded does) forgets it.
	f.Superseded = f.Superseded[1:]
	expect(t, "update's result", f)(s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
		f.Superseded = f.Superseded[1:]
		return nil
	}))
	_, err := s.FamilyByRefresh(ctx, hash("t0"))
	notFound(t, "a hash dropped from the family", err)
	expect(t, "family by its current hash", f)(s.FamilyByRefresh(ctx, hash("t3")))
}

func testAccessTokens(t *testing.T, s oauth.Store) {
	a, b := accessToken("a1", now.Add(oauth.AccessTokenTTL)), accessToken("a2", now.Add(oauth.AccessTokenTTL))
	must(t, s.PutAccessToken(ctx, a))
	must(t, s.PutAccessToken(ctx, b))
	expect(t, "access token", a)(s.AccessToken(ctx, a.Hash))
	must(t, s.DeleteAccessToken(ctx, a.Hash))
	_, err := s.AccessToken(ctx, a.Hash)
	notFound(t, "a deleted access token", err)
	expect(t, "the other access token", b)(s.AccessToken(ctx, b.Hash))
}

const racers = 50

// testFamilyAtomic: every update reads what the one before it wrote, as two
// refreshes on two nodes must.
func testFamilyAtomic(t *testing.T, s oauth.Store) {
	must(t, s.PutFamily(ctx, family("f1", "conn-a", "r1")))
	race(t, func() error {
		_, err := s.UpdateFamily(ctx, "f1", func(f *oauth.Family) error {
			f.GraceRetries++
			return nil
		})
		return err
	})
	f, err := s.Family(ctx, "f1")
	must(t, err)
	if f.GraceRetries != racers {
		t.Fatalf("%d concurrent increments left %d: updates were lost", racers, f.GraceRetries)
	}
}

// testRequestAtomic: one connect code is decided once, however many tabs
// race to decide it.
func testRequestAtomic(t *testing.T, s oauth.Store) {
	must(t, s.PutConnectRequest(ctx, request("r1")))
	errDecided := errors.New("decided already")
	var mu sync.Mutex
	won, lost := 0, 0
	race(t, func() error {
		_, err := s.UpdateConnectRequest(ctx, "r1", func(r *oauth.ConnectRequest) error {
			if r.Status != oauth.RequestPending {
				return errDecided
			}
			r.Status = oauth.RequestApproved
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			won++
		case errors.Is(err, errDecided):
			lost++
		default:
			return err
		}
		return nil
	})
	if won != 1 || lost != racers-1 {
		t.Fatalf("%d decisions succeeded and %d were refused, want 1 and %d", won, lost, racers-1)
	}
	r, err := s.ConnectRequest(ctx, "r1")
	must(t, err)
	if r.Status != oauth.RequestApproved {
		t.Fatalf("status %q after the race", r.Status)
	}
}

// race runs fn in racers goroutines at once and fails on any error.
func race(t *testing.T, fn func() error) {
	t.Helper()
	start := make(chan struct{})
	errs := make(chan error, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			<-start
			errs <- fn()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
}

func testSweep(t *testing.T, s oauth.Store, sw Sweeper) {
	liveToken, deadToken := accessToken("live", now.Add(time.Minute)), accessToken("dead", now.Add(-time.Minute))
	liveReq, deadReq, codeReq := request("live"), request("dead"), request("code")
	deadReq.CreatedAt, deadReq.ExpiresAt = now.Add(-time.Hour), now.Add(-time.Hour+oauth.ConnectCodeTTL)
	deadReq.Status, deadReq.AuthCodeHash, deadReq.AuthCodeExpiresAt = oauth.RequestExchanged, hash("auth-dead"), deadReq.ExpiresAt
	// Approved just before its connect code expired, code fetched later:
	// the code still works.
	codeReq.ExpiresAt, codeReq.Status = now.Add(-time.Hour), oauth.RequestApproved
	codeReq.AuthCodeHash, codeReq.AuthCodeExpiresAt = hash("auth-code"), now.Add(30*time.Second)
	liveFam := family("live", "conn-a", "live-current")
	liveFam.Previous, liveFam.Superseded = hash("live-previous"), [][]byte{hash("live-old")}
	oldFam := family("old", "conn-a", "old-current")
	oldFam.CreatedAt, oldFam.LastUsed = now.Add(-oauth.FamilyAbsoluteTTL-time.Hour), now.Add(-time.Hour)
	oldFam.AbsoluteExpiry = oldFam.CreatedAt.Add(oauth.FamilyAbsoluteTTL)
	oldFam.Previous, oldFam.Superseded = hash("old-previous"), [][]byte{hash("old-old")}
	idleFam := family("idle", "conn-a", "idle-current")
	idleFam.LastUsed = now.Add(-oauth.FamilyIdleTTL - time.Minute)
	conn := connection("conn-a", "p1")
	conn.Revoked = true

	// A client a year old that the connection's tokens renewed stays; one
	// registered a week ago that never got a token goes.
	kept := oauth.Client{ID: "c1", Name: "App", Kind: "dcr", CreatedAt: now.Add(-365 * 24 * time.Hour), LastUsed: now.Add(-time.Hour)}
	must(t, s.PutClient(ctx, kept))
	must(t, s.PutClient(ctx, oauth.Client{ID: "c2", Name: "App", Kind: "dcr", CreatedAt: now.Add(-oauth.ClientUnusedTTL - time.Minute)}))
	must(t, s.PutConnection(ctx, conn))
	for _, tok := range []oauth.AccessToken{liveToken, deadToken} {
		must(t, s.PutAccessToken(ctx, tok))
	}
	must(t, s.PutConnectRequest(ctx, liveReq))
	putWithAuthCode(t, s, codeReq)
	putWithAuthCode(t, s, deadReq)
	for _, f := range []oauth.Family{liveFam, oldFam, idleFam} {
		must(t, s.PutFamily(ctx, f))
	}

	n, err := sw.Sweep(ctx, now)
	must(t, err)
	if n != 5 {
		t.Fatalf("sweep deleted %d records, want 5 (a token, a request, two families, a client)", n)
	}
	checkSwept(t, s, deadToken, deadReq, oldFam, idleFam)
	expect(t, "live access token", liveToken)(s.AccessToken(ctx, liveToken.Hash))
	expect(t, "live request by code", liveReq)(s.ConnectRequestByCode(ctx, liveReq.CodeHash))
	expect(t, "request with a live auth code", codeReq)(s.ConnectRequestByAuthCode(ctx, codeReq.AuthCodeHash))
	for _, h := range liveFam.Hashes() {
		expect(t, "live family by refresh", liveFam)(s.FamilyByRefresh(ctx, h))
	}
	expect(t, "families of the connection", []oauth.Family{liveFam})(s.FamiliesOfConnection(ctx, "conn-a"))
	expect(t, "the revoked connection", conn)(s.Connection(ctx, "conn-a"))
	expect(t, "the client its tokens renewed", kept)(s.Client(ctx, "c1"))
	_, err = s.Client(ctx, "c2")
	notFound(t, "the client no token renewed", err)

	if n, err := sw.Sweep(ctx, now); err != nil || n != 0 {
		t.Fatalf("a second sweep deleted %d, %v", n, err)
	}
}

// putWithAuthCode stores r and gives it its code as the waiting page does.
func putWithAuthCode(t *testing.T, s oauth.Store, r oauth.ConnectRequest) {
	t.Helper()
	withoutCode := r
	withoutCode.AuthCodeHash, withoutCode.AuthCodeExpiresAt = nil, time.Time{}
	must(t, s.PutConnectRequest(ctx, withoutCode))
	_, err := s.UpdateConnectRequest(ctx, r.ID, func(cr *oauth.ConnectRequest) error {
		*cr = r
		return nil
	})
	must(t, err)
}

func checkSwept(t *testing.T, s oauth.Store, tok oauth.AccessToken, r oauth.ConnectRequest, fams ...oauth.Family) {
	t.Helper()
	_, err := s.AccessToken(ctx, tok.Hash)
	notFound(t, "expired access token", err)
	_, err = s.ConnectRequest(ctx, r.ID)
	notFound(t, "expired request", err)
	_, err = s.ConnectRequestByCode(ctx, r.CodeHash)
	notFound(t, "expired request by code", err)
	_, err = s.ConnectRequestByAuthCode(ctx, r.AuthCodeHash)
	notFound(t, "expired request by auth code", err)
	for _, f := range fams {
		_, err = s.Family(ctx, f.ID)
		notFound(t, "expired family "+f.ID, err)
		for _, h := range f.Hashes() {
			_, err = s.FamilyByRefresh(ctx, h)
			notFound(t, "expired family "+f.ID+" by refresh", err)
		}
	}
}

func request(id string) oauth.ConnectRequest {
	return oauth.ConnectRequest{ID: id, WaitHash: hash("wait-" + id), CodeHash: hash("code-" + id), ClientID: "c1",
		ClientName: "App", RedirectURI: "https://app.example/cb", CodeChallenge: "challenge-" + id, State: "state-" + id,
		Resource: "https://relay.example", CreatedAt: now, ExpiresAt: now.Add(oauth.ConnectCodeTTL), Status: oauth.RequestPending}
}

func connection(id, pairing string) oauth.Connection {
	return oauth.Connection{ID: id, Kind: "connector", PairingID: pairing, ClientID: "c1", ClientName: "App",
		Host: "app.example", CreatedAt: now, LastUsed: now}
}

func family(id, conn, current string) oauth.Family {
	return oauth.Family{ID: id, ConnectionID: conn, PairingID: "p1", ClientID: "c1", Resource: "https://relay.example",
		CreatedAt: now, LastUsed: now, AbsoluteExpiry: now.Add(oauth.FamilyAbsoluteTTL), Current: hash(current)}
}

func accessToken(name string, expires time.Time) oauth.AccessToken {
	return oauth.AccessToken{Hash: hash("access-" + name), FamilyID: "f1", ConnectionID: "conn-a", PairingID: "p1",
		ClientID: "c1", Resource: "https://relay.example", ExpiresAt: expires}
}

// hash stands for the HMAC of a secret: 32 bytes, distinct per name.
func hash(name string) []byte {
	sum := sha256.Sum256([]byte(name))
	return sum[:]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("%s: got %v, want ErrNotFound", what, err)
	}
}

// expect returns a check of a store answer against want, compared in the
// records' JSON encoding (times to the nanosecond, whatever their zone
// pointer).
func expect[T any](t *testing.T, what string, want T) func(T, error) {
	t.Helper()
	return func(got T, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
		}
	}
}
